/* Reads the four settings the topology agent reports from a KubeletConfiguration file; every
 * other key is the kubelet's business and is ignored. */
#include "kubelet_config.h"

#include <errno.h>
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

int kubelet_config_read(const char *path, struct kubelet_config *out, struct kc_error *err)
{
    memset(out, 0, sizeof(*out));
    struct tree *root;
    int rc = tree_parse_file(path, &root, err);
    if (rc < 0)
        return rc;
    if (root->type != TREE_MAP)
        rc = tree_error(root, err, -EINVAL, "kubelet configuration", "expected a map");
    if (rc == 0)
        rc = read_string(root, "topologyManagerPolicy", &out->topology_manager_policy, err);
    if (rc == 0)
        rc = read_string(root, "topologyManagerScope", &out->topology_manager_scope, err);
    if (rc == 0)
        rc = read_string(root, "reservedSystemCPUs", &out->reserved_cpus, err);
    if (rc == 0)
        rc = read_string(root, "memoryManagerPolicy", &out->memory_manager_policy, err);
    tree_free(root);
    if (rc < 0)
        kubelet_config_free(out);
    return rc;
}

void kubelet_config_free(struct kubelet_config *c)
{
    free(c->topology_manager_policy);
    free(c->topology_manager_scope);
    free(c->reserved_cpus);
    free(c->memory_manager_policy);
    memset(c, 0, sizeof(*c));
}
