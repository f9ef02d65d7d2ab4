/* Fuzz target for simulation files: any bytes go through simfile_load as a file, and every map
 * of the parsed document through pod_from_tree and node_from_tree, so the object model is
 * reached even when the file as a whole is refused. What loads must obey the documented rules. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "fuzz.h"
#include "model.h"
#include "simfile.h"
#include "tree.h"

/* Pods and nodes a file may expand to before simfile_load is skipped: count may legally reach a
 * million per entry, which is slow rather than wrong, and would drown the fuzzer in timeouts. */
#define MAX_EXPANDED 2000
/* Objects kept from the walk to try the predicates on, pairwise. */
#define MAX_KEPT 8

/* ---- invariants of what the model builds ---- */

static void check_kv_list(const struct kv_list *list, const char *what)
{
    for (uint32_t i = 0; i < list->count; i++) {
        fuzz_check(list->items[i].key != NULL && list->items[i].value != NULL, what, "NULL text");
        fuzz_check(i == 0 || strcmp(list->items[i - 1].key, list->items[i].key) < 0, what,
                   "keys not sorted and unique");
    }
}

static void check_res_list(const struct res_list *list, const char *what)
{
    for (uint32_t i = 0; i < list->count; i++) {
        const struct res_amount *r = &list->items[i];
        fuzz_check(r->id >= 0 && r->id < KC_RESOURCE_MAX, what, "resource id out of range");
        fuzz_check(r->value > 0, what, "a zero or negative amount");
        fuzz_check(i == 0 || list->items[i - 1].id < r->id, what, "ids not sorted and unique");
    }
}

static void check_pod(const struct pod *pod)
{
    fuzz_check(pod->name != NULL && pod->name[0] != '\0', "pod", "empty name");
    fuzz_check(pod->namespace != NULL && pod->namespace[0] != '\0', "pod", "empty namespace");
    fuzz_check(pod->uid != NULL && pod->uid[0] != '\0', "pod", "empty uid");
    fuzz_check(pod->scheduler_name != NULL && pod->scheduler_name[0] != '\0', "pod",
               "empty scheduler name");
    fuzz_check(pod->node_name == NULL || pod->node_name[0] != '\0', "pod", "empty node name");
    check_kv_list(&pod->labels, "pod labels");
    check_kv_list(&pod->annotations, "pod annotations");
    check_kv_list(&pod->node_selector, "pod nodeSelector");
    check_res_list(&pod->request, "pod request");
    check_res_list(&pod->overhead, "pod overhead");
    for (uint32_t i = 0; i < pod->container_count; i++)
        check_res_list(&pod->containers[i].requests, "container requests");
    for (uint32_t i = 0; i < pod->init_container_count; i++)
        check_res_list(&pod->init_containers[i].requests, "init container requests");
    for (uint32_t i = 0; i < pod->affinity.preferred_count; i++) {
        int32_t weight = pod->affinity.preferred[i].weight;
        fuzz_check(weight >= 1 && weight <= 100, "pod", "preferred weight out of range");
    }
}

static void check_node(const struct node *node)
{
    fuzz_check(node->name != NULL && node->name[0] != '\0', "node", "empty name");
    fuzz_check(node->uid != NULL, "node", "no uid");
    check_kv_list(&node->labels, "node labels");
    check_kv_list(&node->annotations, "node annotations");
    check_res_list(&node->allocatable, "node allocatable");
    for (uint32_t i = 0; i < node->taint_count; i++)
        fuzz_check(node->taints[i].key != NULL && node->taints[i].value != NULL, "node",
                   "taint without key or value");
}

/* The predicates read what the model built; they must hold up on whatever it accepted. */
static void try_predicates(const struct pod *pod, const struct node *node)
{
    (void)pod_matches_node_selector_and_affinity(pod, node);
    int64_t weight = pod_preferred_affinity_weight(pod, node);
    fuzz_check(weight >= 0 && weight <= 100 * (int64_t)pod->affinity.preferred_count,
               "pod_preferred_affinity_weight", "out of range");
    for (uint32_t i = 0; i < node->taint_count; i++) {
        const struct taint *taint = &node->taints[i];
        (void)pod_tolerates(pod, taint->key, taint->value, taint->effect);
    }
}

/* ---- every map of the document as a pod and as a node ---- */

struct kept {
    struct pod *pods[MAX_KEPT];
    uint32_t pod_count;
    struct node *nodes[MAX_KEPT];
    uint32_t node_count;
    int64_t expanded; /* what the counts in the file add up to, capped past the limit */
};

static void check_refused(int rc, const void *out, const struct kc_error *err, const char *what)
{
    fuzz_check(out == NULL, what, "failed but returned an object");
    fuzz_check(rc == -EINVAL || rc == -ENOMEM, what, "failed with an undocumented code");
    fuzz_check(err->message[0] != '\0', what, "failed without a message");
}

static void try_map(const struct tree *t, struct kept *kept)
{
    struct kc_error err = {{0}};
    struct pod *pod;
    int rc = pod_from_tree(t, &pod, &err);
    if (rc != 0) {
        check_refused(rc, pod, &err, "pod_from_tree");
    } else {
        check_pod(pod);
        if (kept->pod_count < MAX_KEPT)
            kept->pods[kept->pod_count++] = pod;
        else
            pod_free(pod);
    }
    err.message[0] = '\0';
    struct node *node;
    rc = node_from_tree(t, &node, &err);
    if (rc != 0) {
        check_refused(rc, node, &err, "node_from_tree");
    } else {
        check_node(node);
        if (kept->node_count < MAX_KEPT)
            kept->nodes[kept->node_count++] = node;
        else
            node_free(node);
    }
}

/* Adds up `count` the way simfile.c reads it. Entries without one add a single object each,
 * which the input's size already bounds. */
static void add_count(const struct tree *map, struct kept *kept)
{
    const struct tree *count = tree_get(map, "count");
    struct kc_error err;
    int64_t n = 0;
    if (count == NULL || tree_is_null(count) || tree_int64(count, "count", &n, &err) != 0)
        return;
    if (n > 0 && kept->expanded <= MAX_EXPANDED)
        kept->expanded += n > MAX_EXPANDED ? MAX_EXPANDED + 1 : n;
}

static void walk(const struct tree *t, struct kept *kept)
{
    if (t->type == TREE_MAP) {
        try_map(t, kept);
        add_count(t, kept);
    }
    if (t->type != TREE_SCALAR) {
        for (uint32_t i = 0; i < t->count; i++)
            walk(t->items[i], kept);
    }
}

static void walk_document(const struct tree *root, struct kept *kept)
{
    walk(root, kept);
    for (uint32_t p = 0; p < kept->pod_count; p++) {
        for (uint32_t n = 0; n < kept->node_count; n++)
            try_predicates(kept->pods[p], kept->nodes[n]);
    }
    for (uint32_t i = 0; i < kept->pod_count; i++)
        pod_free(kept->pods[i]);
    for (uint32_t i = 0; i < kept->node_count; i++)
        node_free(kept->nodes[i]);
}

/* ---- the whole file through simfile_load ---- */

/* simfile_load reads a path: one memfd, rewritten for each input, avoids the disk. */
static const char *input_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("kcycle-fuzz-sim", MFD_CLOEXEC);
        fuzz_check(fd >= 0, "memfd_create", strerror(errno));
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    fuzz_check(ftruncate(fd, 0) == 0, "ftruncate", strerror(errno));
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        fuzz_check(n > 0, "pwrite", strerror(errno));
        done += (size_t)n;
    }
    return path;
}

static const struct node *find_node(const struct sim_spec *spec, const char *name)
{
    for (uint32_t i = 0; i < spec->node_count; i++)
        if (strcmp(spec->nodes[i]->name, name) == 0)
            return spec->nodes[i];
    return NULL;
}

static void check_spec_pod(const struct sim_spec *spec, const struct pod *pod)
{
    fuzz_check(pod != NULL, "simfile_load", "an arrival without a pod");
    check_pod(pod);
    fuzz_check(pod->node_name == NULL || find_node(spec, pod->node_name) != NULL, "simfile_load",
               "a pod bound to a node the file does not define");
}

static void check_spec(const struct sim_spec *spec)
{
    for (uint32_t i = 0; i < spec->node_count; i++) {
        check_node(spec->nodes[i]);
        fuzz_check(find_node(spec, spec->nodes[i]->name) == spec->nodes[i], "simfile_load",
                   "two nodes with one name");
    }
    for (uint32_t i = 0; i < spec->pod_count; i++)
        check_spec_pod(spec, spec->pods[i]);
    for (uint32_t i = 0; i < spec->arrival_count; i++) {
        const struct sim_arrival *a = &spec->arrivals[i];
        check_spec_pod(spec, a->pod);
        /* at and interval are checked not negative, so no pod may arrive before time 0. */
        fuzz_check(a->at_ms >= 0, "simfile_load", "an arrival before time 0");
        fuzz_check(i == 0 || spec->arrivals[i - 1].at_ms <= a->at_ms, "simfile_load",
                   "arrivals out of time order");
    }
    for (uint32_t i = 0; i < spec->object_count; i++) {
        const struct sim_object *obj = &spec->objects[i];
        fuzz_check(obj->kind != NULL && obj->name != NULL, "simfile_load", "object unnamed");
        json_error_t error;
        json_t *json = json_loads(obj->json, 0, &error);
        fuzz_check(json_is_object(json), "simfile_load: object JSON", obj->json);
        json_decref(json);
    }
    fuzz_check(spec->config.scheduler_name != NULL, "simfile_load", "no configuration");
}

static void check_containers(const struct pod *pod, const struct tree *listed)
{
    fuzz_check(pod->container_count == listed->count, "simfile_load",
               "a shorthand pod has other containers than it lists");
    for (uint32_t i = 0; i < listed->count; i++) {
        const struct tree *name = tree_get(listed->items[i], "name");
        const char *have = pod->containers[i].name;
        if (name != NULL && name->type == TREE_SCALAR && !tree_is_null(name))
            fuzz_check(have != NULL && strcmp(have, name->scalar) == 0, "simfile_load",
                       "a shorthand pod has other containers than it lists");
    }
}

/* A shorthand pod that lists `containers` (without requests/limits, or loading fails) runs
 * exactly those: nothing in the file may make the loader drop them silently. */
static void check_shorthand_pods(const struct sim_spec *spec, const struct tree *root)
{
    const struct tree *list = tree_get(root, "pods");
    if (list == NULL || list->type != TREE_SEQ)
        return;
    fuzz_check(list->count == spec->pod_count, "simfile_load", "not one pod per pods entry");
    for (uint32_t i = 0; i < list->count; i++) {
        const struct tree *entry = list->items[i];
        if (tree_get(entry, "metadata") != NULL || tree_get(entry, "spec") != NULL)
            continue;
        const struct tree *containers = tree_get(entry, "containers");
        if (containers != NULL && containers->type == TREE_SEQ)
            check_containers(spec->pods[i], containers);
    }
}

/* root is the document as tree_parse_buffer read it, or NULL when it did not parse. */
static void load_file(const uint8_t *data, size_t size, const struct tree *root)
{
    struct sim_spec spec;
    struct kc_error err = {{0}};
    int rc = simfile_load(input_path(data, size), "kcycle", &spec, &err);
    if (rc != 0) {
        fuzz_check(err.message[0] != '\0', "simfile_load failed without a message", NULL);
        return;
    }
    fuzz_check(root != NULL, "simfile_load", "loaded a document tree_parse_buffer refuses");
    check_spec(&spec);
    check_shorthand_pods(&spec, root);
    simfile_free(&spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tree *root;
    struct kc_error err = {{0}};
    struct kept kept = {.pod_count = 0};
    if (tree_parse_buffer("fuzz.yaml", (const char *)data, size, &root, &err) == 0) {
        walk_document(root, &kept);
        /* The root as a configuration too: simulation files carry one under `config:`. */
        struct config cfg;
        err.message[0] = '\0';
        if (config_load_tree(root, &cfg, &err) == 0)
            config_free(&cfg);
    }
    /* A document that does not parse still goes through simfile_load: its errors must hold. */
    if (kept.expanded <= MAX_EXPANDED)
        load_file(data, size, root);
    tree_free(root);
    return 0;
}
