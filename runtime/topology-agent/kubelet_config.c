/* Reads the four settings the topology agent reports from a KubeletConfiguration file; every
 * other key is the kubelet's business and is ignored. */
#include "kubelet_config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tree.h"

static int read_string(const struct tree *root, const char *key, char **out,
                       struct kc_error *err)
{
    const struct tree *t = tree_get(root, key);
    const char *s;
    if (t == NULL || tree_is_null(t))
        return 0;
    int rc = tree_string(t, key, &s, err);
    if (rc == 0 && (*out = strdup(s)) == NULL)
        rc = kc_error_set(err, -ENOMEM, "out of memory");
    return rc;
}

/* The file's keys and where each goes. */
static const struct {
    const char *key;
    size_t offset;
} keys[] = {
    {"topologyManagerPolicy", offsetof(struct kubelet_config, topology_manager_policy)},
    {"topologyManagerScope", offsetof(struct kubelet_config, topology_manager_scope)},
    {"reservedSystemCPUs", offsetof(struct kubelet_config, reserved_cpus)},
    {"memoryManagerPolicy", offsetof(struct kubelet_config, memory_manager_policy)},
};

static char **field_of(struct kubelet_config *c, size_t i)
{
    return (char **)((char *)c + keys[i].offset);
}

int kubelet_config_read(const char *path, struct kubelet_config *out, struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    struct tree *root;
    int rc = tree_parse_file(path, &root, err);
    if (rc < 0)
        return rc;
    if (root->type != TREE_MAP)
        rc = tree_error(root, err, -EINVAL, "kubelet configuration", "expected a map");
    for (size_t i = 0; rc == 0 && i < sizeof(keys) / sizeof(keys[0]); i++)
        rc = read_string(root, keys[i].key, field_of(out, i), err);
    tree_free(root);
    if (rc < 0)
        kubelet_config_free(out);
    return rc;
}

void kubelet_config_free(struct kubelet_config *c)
{
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        free(*field_of(c, i));
    memset(c, 0, sizeof(*c));
}
