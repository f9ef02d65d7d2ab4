/* The simulation file: nodes, existing pods, a workload of pod arrivals and custom objects,
 * in Kubernetes shape or a shorter shorthand (docs/simulation.md). */
#include "simfile.h"

#include <inttypes.h>
#include <stdio.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tree.h"

#define HOSTNAME_LABEL "kubernetes.io/hostname"
#define MAX_COUNT 1000000
#define DEFAULT_POD_CAPACITY 110
#define SYNTH_MAX 16
#define POD_GROUP_API "scheduling.x-k8s.io/v1alpha1"
#define POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"

static int no_memory(const struct tree *t, struct kc_error *err)
{
    return tree_error(t, err, -ENOMEM, "simulation file", "out of memory");
}

/* A field, or NULL when absent or null. */
static const struct tree *field(const struct tree *map, const char *key)
{
    const struct tree *v = tree_get(map, key);
    return v == NULL || tree_is_null(v) ? NULL : v;
}

/* Grow a dynamic array, and optionally a parallel one (b may be NULL), so one more fits. The
 * capacity moves only when both grew, so a failure leaves both usable for freeing. */
static int grow(void **a, size_t a_size, void **b, size_t b_size, uint32_t count,
                uint32_t *capacity)
{
    if (count < *capacity)
        return 0;
    uint32_t next = *capacity == 0 ? 16 : *capacity * 2;
    void *grown = realloc(*a, (size_t)next * a_size);
    if (grown == NULL)
        return -ENOMEM;
    *a = grown;
    if (b != NULL) {
        grown = realloc(*b, (size_t)next * b_size);
        if (grown == NULL)
            return -ENOMEM;
        *b = grown;
    }
    *capacity = next;
    return 0;
}

/* ---- shorthand as a Kubernetes-shaped tree ------------------------------------------------ */

/* Shorthand entries are rewritten into {metadata, spec, status} maps that borrow the entry's
 * own subtrees, so one parser (model.c) reads both shapes and errors keep their positions. */
struct synth_map {
    struct tree node;
    struct tree *keys[SYNTH_MAX];
    struct tree *items[SYNTH_MAX];
    struct tree key_nodes[SYNTH_MAX];
};

static void synth_init(struct synth_map *m, const struct tree *at)
{
    memset(&m->node, 0, sizeof(m->node));
    m->node.type = TREE_MAP;
    m->node.line = at->line;
    m->node.column = at->column;
    m->node.file = at->file;
    m->node.keys = m->keys;
    m->node.items = m->items;
}

static void synth_put(struct synth_map *m, const char *key, const struct tree *value)
{
    if (value == NULL || m->node.count == SYNTH_MAX)
        return;
    struct tree *k = &m->key_nodes[m->node.count];
    *k = (struct tree){.type = TREE_SCALAR,
                       .line = value->line,
                       .column = value->column,
                       .file = value->file,
                       .scalar = (char *)key,
                       .quoted = true};
    m->keys[m->node.count] = k;
    m->items[m->node.count] = (struct tree *)value;
    m->node.count++;
}

static void synth_copy(struct synth_map *m, const struct tree *entry, const char *key)
{
    synth_put(m, key, tree_get(entry, key));
}

struct pod_synth {
    struct synth_map root, metadata, spec, container, resources;
    struct tree containers;
    struct tree *container_items[1];
    struct tree main_name;
};

static const char *const pod_keys[] = {
    "name",        "namespace",  "labels",          "annotations",   "priority", "requests",
    "limits",      "containers", "initContainers",  "overhead",      "nodeName", "nodeSelector",
    "tolerations", "affinity",   "schedulingGates", "schedulerName", "ports",    "hostNetwork",
    "volumes",     "preemptionPolicy", NULL,
};

static const char *const workload_keys[] = {
    "name",          "namespace",  "labels",
    "annotations",   "priority",   "requests",
    "limits",        "containers", "initContainers",
    "overhead",      "nodeName",   "nodeSelector",
    "tolerations",   "affinity",   "schedulingGates",
    "schedulerName", "count",      "at",
    "interval",      "gang",       "ports",
    "hostNetwork",   "volumes",    "preemptionPolicy",
    NULL,
};

/* requests/limits (and ports, the container's port list) become one container named "main". */
static void synth_main_container(struct pod_synth *s, const struct tree *entry)
{
    synth_init(&s->resources, entry);
    synth_copy(&s->resources, entry, "requests");
    synth_copy(&s->resources, entry, "limits");
    s->main_name = (struct tree){.type = TREE_SCALAR,
                                 .line = entry->line,
                                 .column = entry->column,
                                 .file = entry->file,
                                 .scalar = (char *)"main",
                                 .quoted = true};
    synth_init(&s->container, entry);
    synth_put(&s->container, "name", &s->main_name);
    synth_put(&s->container, "resources", &s->resources.node);
    synth_copy(&s->container, entry, "ports");
    s->container_items[0] = &s->container.node;
    s->containers = (struct tree){.type = TREE_SEQ,
                                  .line = entry->line,
                                  .column = entry->column,
                                  .file = entry->file,
                                  .items = s->container_items,
                                  .count = 1};
}

static void synth_pod_spec(struct pod_synth *s, const struct tree *entry)
{
    static const char *const copied[] = {
        "priority",        "nodeName",      "nodeSelector", "tolerations",    "affinity",
        "schedulingGates", "schedulerName", "overhead",     "initContainers", "hostNetwork",
        "volumes",         "preemptionPolicy",
    };
    synth_init(&s->spec, entry);
    for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
        synth_copy(&s->spec, entry, copied[i]);
    if (field(entry, "requests") == NULL && field(entry, "limits") == NULL &&
        field(entry, "ports") == NULL) {
        synth_copy(&s->spec, entry, "containers");
        return;
    }
    synth_main_container(s, entry);
    synth_put(&s->spec, "containers", &s->containers);
}

static int synth_pod(struct pod_synth *s, const struct tree *entry, bool workload,
                     struct kc_error *err)
{
    const char *what = workload ? "workload entry" : "pod entry";
    int rc = tree_check_keys(entry, what, workload ? workload_keys : pod_keys, err);
    if (rc < 0)
        return rc;
    if (field(entry, "name") == NULL)
        return tree_error(entry, err, -EINVAL, what, "name is required");
    const struct tree *containers = field(entry, "containers");
    if (containers != NULL && (field(entry, "requests") != NULL || field(entry, "limits") != NULL ||
                               field(entry, "ports") != NULL))
        return tree_error(containers, err, -EINVAL, what,
                          "give either requests/limits/ports (one "
                          "container) or containers, not both");
    synth_init(&s->metadata, entry);
    synth_copy(&s->metadata, entry, "name");
    synth_copy(&s->metadata, entry, "namespace");
    synth_copy(&s->metadata, entry, "labels");
    synth_copy(&s->metadata, entry, "annotations");
    synth_pod_spec(s, entry);
    synth_init(&s->root, entry);
    synth_put(&s->root, "metadata", &s->metadata.node);
    synth_put(&s->root, "spec", &s->spec.node);
    return 0;
}

struct node_synth {
    struct synth_map root, metadata, spec, status;
};

static const char *const node_keys[] = {
    "name",          "count",        "allocatable",           "labels",
    "annotations",   "taints",       "unschedulable",         "numa",
    "numaXml",       "reservedCpus", "topologyManagerPolicy", "topologyManagerScope",
    NULL,
};

static int synth_node(struct node_synth *s, const struct tree *entry, struct kc_error *err)
{
    int rc = tree_check_keys(entry, "node entry", node_keys, err);
    if (rc < 0)
        return rc;
    if (field(entry, "name") == NULL)
        return tree_error(entry, err, -EINVAL, "node entry", "name is required");
    synth_init(&s->metadata, entry);
    synth_copy(&s->metadata, entry, "name");
    synth_copy(&s->metadata, entry, "labels");
    synth_copy(&s->metadata, entry, "annotations");
    synth_init(&s->spec, entry);
    synth_copy(&s->spec, entry, "unschedulable");
    synth_copy(&s->spec, entry, "taints");
    synth_init(&s->status, entry);
    synth_copy(&s->status, entry, "allocatable");
    synth_init(&s->root, entry);
    synth_put(&s->root, "metadata", &s->metadata.node);
    synth_put(&s->root, "spec", &s->spec.node);
    synth_put(&s->root, "status", &s->status.node);
    return 0;
}

/* ---- shared entry helpers ----------------------------------------------------------------- */

static int read_count(const struct tree *entry, bool *has_count, int64_t *count,
                      struct kc_error *err)
{
    const struct tree *t = field(entry, "count");
    *has_count = t != NULL;
    *count = 1;
    if (t == NULL)
        return 0;
    int rc = tree_int64(t, "count", count, err);
    if (rc == 0 && (*count < 0 || *count > MAX_COUNT))
        rc = tree_error(t, err, -EINVAL, "count", "%" PRId64 " is out of range 0..%d", *count,
                        MAX_COUNT);
    return rc;
}

static int read_duration(const struct tree *entry, const char *key, int64_t *ms,
                         struct kc_error *err)
{
    const struct tree *t = field(entry, key);
    *ms = 0;
    if (t == NULL)
        return 0;
    int rc = tree_duration_ms(t, key, ms, err);
    if (rc == 0 && *ms < 0)
        rc = tree_error(t, err, -EINVAL, key, "must not be negative");
    return rc;
}

/* The name of copy i of a counted entry: <name>-<i>. */
static int indexed(const char *base, int64_t i, char **out)
{
    char *s;
    if (asprintf(&s, "%s-%" PRId64, base, i) < 0)
        return -ENOMEM;
    free(*out);
    *out = s;
    return 0;
}

/* ---- nodes -------------------------------------------------------------------------------- */

struct loader {
    struct sim_spec *spec;
    const char *scheduler_name;
    struct kc_error *err;
    uint32_t node_capacity, pod_capacity, arrival_capacity, object_capacity, topology_capacity;
    const struct tree **node_at; /* entry of each node, for duplicate messages */
    const struct tree **pod_at;  /* entry of each existing pod */
    const struct tree **arrival_at;
    const struct tree **object_at;
};

static bool has_key(const struct tree *map, const char *key)
{
    return map != NULL && map->type == TREE_MAP && tree_get(map, key) != NULL;
}

/* Where the node's allocatable came from, to see whether it names `pods`. */
static const struct tree *allocatable_source(const struct tree *entry, bool kube)
{
    if (!kube)
        return field(entry, "allocatable");
    const struct tree *status = field(entry, "status");
    if (status == NULL)
        return NULL;
    const struct tree *allocatable = field(status, "allocatable");
    return allocatable != NULL ? allocatable : field(status, "capacity");
}

static int push_node(struct loader *l, const struct tree *entry, struct node *node)
{
    struct sim_spec *spec = l->spec;
    if (grow((void **)&spec->nodes, sizeof(*spec->nodes), (void **)&l->node_at, sizeof(*l->node_at),
             spec->node_count, &l->node_capacity) < 0) {
        node_free(node);
        return no_memory(entry, l->err);
    }
    spec->nodes[spec->node_count] = node;
    l->node_at[spec->node_count++] = entry;
    return 0;
}

static int rename_node(struct node *node, bool had_uid, int64_t i)
{
    char *name = NULL, *uid = NULL;
    if (indexed(node->name, i, &name) < 0)
        return -ENOMEM;
    if (had_uid)
        indexed(node->uid, i, &uid);
    else
        uid = strdup(name);
    if (uid == NULL) {
        free(name);
        return -ENOMEM;
    }
    free(node->name);
    free(node->uid);
    node->name = name;
    node->uid = uid;
    return 0;
}

/* The kubelet labels every node kubernetes.io/hostname=<name>; spreading over nodes
 * (topologyKey kubernetes.io/hostname) needs it, so a simulated node gets it unless the file
 * gives its own. 0 or -ENOMEM. */
static int default_hostname_label(struct node *node)
{
    if (kv_list_get(&node->labels, HOSTNAME_LABEL) != NULL)
        return 0;
    return kv_list_set(&node->labels, HOSTNAME_LABEL, node->name) < 0 ? -ENOMEM : 0;
}

static int make_node(struct loader *l, const struct tree *entry, const struct tree *tree, bool kube,
                     int64_t index, bool has_count)
{
    struct node *node;
    int rc = node_from_tree(tree, &node, l->err);
    if (rc < 0)
        return rc;
    const struct tree *meta = kube ? field(entry, "metadata") : NULL;
    if (has_count && rename_node(node, has_key(meta, "uid"), index) < 0)
        rc = -ENOMEM;
    if (rc == 0 && !has_key(allocatable_source(entry, kube), "pods"))
        rc = res_list_set(&node->allocatable, KC_RESOURCE_PODS, DEFAULT_POD_CAPACITY);
    if (rc == 0)
        rc = default_hostname_label(node);
    if (rc < 0) {
        node_free(node);
        return no_memory(entry, l->err);
    }
    return push_node(l, entry, node);
}

/* ---- NUMA topology of a node -------------------------------------------------------------- */

static void topology_free(struct sim_topology *t)
{
    free(t->node);
    free(t->synthetic);
    free(t->xml);
    free(t->policy);
    free(t->scope);
    free(t->reserved_cpus);
}

/* A string field copied, or NULL when absent; one of the allowed values when allowed is set. */
static int topology_string(const struct tree *entry, const char *key,
                           const char *const *allowed, const char *allowed_text, char **out,
                           struct kc_error *err)
{
    const struct tree *t = field(entry, key);
    const char *s;
    *out = NULL;
    if (t == NULL)
        return 0;
    int rc = tree_string(t, key, &s, err);
    if (rc < 0)
        return rc;
    bool ok = allowed == NULL;
    for (uint32_t i = 0; !ok && allowed[i] != NULL; i++)
        ok = strcmp(s, allowed[i]) == 0;
    if (!ok)
        return tree_error(t, err, -EINVAL, key, "\"%s\" is not one of %s", s, allowed_text);
    return (*out = strdup(s)) != NULL ? 0 : no_memory(t, err);
}

/* numaXml relative to the simulation file's folder. */
static int resolve_xml(const char *file, char **xml)
{
    if (*xml == NULL || (*xml)[0] == '/')
        return 0;
    const char *slash = strrchr(file, '/');
    if (slash == NULL)
        return 0;
    char *path;
    if (asprintf(&path, "%.*s/%s", (int)(slash - file), file, *xml) < 0)
        return -ENOMEM;
    free(*xml);
    *xml = path;
    return 0;
}

static int load_topology(struct loader *l, const struct tree *entry, const char *node_name)
{
    static const char *const policies[] = {"none", "best-effort", "restricted",
                                           "single-numa-node", NULL};
    static const char *const scopes[] = {"container", "pod", NULL};
    if (field(entry, "numa") == NULL && field(entry, "numaXml") == NULL)
        return 0;
    if (field(entry, "numa") != NULL && field(entry, "numaXml") != NULL)
        return tree_error(entry, l->err, -EINVAL, "node entry",
                          "numa (hwloc synthetic) and numaXml exclude each other");
    struct sim_topology t = {0};
    int rc = topology_string(entry, "numa", NULL, NULL, &t.synthetic, l->err);
    if (rc == 0)
        rc = topology_string(entry, "numaXml", NULL, NULL, &t.xml, l->err);
    if (rc == 0)
        rc = topology_string(entry, "topologyManagerPolicy", policies,
                             "none, best-effort, restricted, single-numa-node", &t.policy, l->err);
    if (rc == 0)
        rc = topology_string(entry, "topologyManagerScope", scopes, "container, pod", &t.scope, l->err);
    if (rc == 0)
        rc = topology_string(entry, "reservedCpus", NULL, NULL, &t.reserved_cpus, l->err);
    if (rc == 0 && ((t.node = strdup(node_name)) == NULL || resolve_xml(l->spec->file, &t.xml) < 0))
        rc = no_memory(entry, l->err);
    struct sim_spec *spec = l->spec;
    if (rc == 0 && grow((void **)&spec->topologies, sizeof(*spec->topologies), NULL, 0,
                        spec->topology_count, &l->topology_capacity) < 0)
        rc = no_memory(entry, l->err);
    if (rc < 0) {
        topology_free(&t);
        return rc;
    }
    spec->topologies[spec->topology_count++] = t;
    return 0;
}

static int load_node(struct loader *l, const struct tree *entry)
{
    if (entry->type != TREE_MAP)
        return tree_error(entry, l->err, -EINVAL, "nodes", "each entry must be a map");
    bool kube = tree_get(entry, "metadata") != NULL;
    struct node_synth synth;
    const struct tree *tree = entry;
    if (!kube) {
        int rc = synth_node(&synth, entry, l->err);
        if (rc < 0)
            return rc;
        tree = &synth.root.node;
    }
    bool has_count;
    int64_t count;
    int rc = read_count(entry, &has_count, &count, l->err);
    for (int64_t i = 0; rc == 0 && i < count; i++) {
        rc = make_node(l, entry, tree, kube, i, has_count);
        if (rc == 0 && !kube)
            rc = load_topology(l, entry, l->spec->nodes[l->spec->node_count - 1]->name);
    }
    return rc;
}

/* ---- pods --------------------------------------------------------------------------------- */

static bool is_kube_pod(const struct tree *entry)
{
    return tree_get(entry, "metadata") != NULL || tree_get(entry, "spec") != NULL;
}

/* Turn an entry into a Kubernetes-shaped tree, rewriting shorthand into synth. */
static int pod_tree(const struct tree *entry, bool workload, struct pod_synth *synth,
                    const struct tree **out, struct kc_error *err)
{
    const char *what = workload ? "workload" : "pods";
    if (entry->type != TREE_MAP)
        return tree_error(entry, err, -EINVAL, what, "each entry must be a map");
    *out = entry;
    if (is_kube_pod(entry))
        return 0;
    int rc = synth_pod(synth, entry, workload, err);
    if (rc == 0)
        *out = &synth->root.node;
    return rc;
}

static int rename_pod(struct pod *pod, const struct tree *tree, int64_t i)
{
    const struct tree *meta = field(tree, "metadata");
    bool had_uid = meta != NULL && field(meta, "uid") != NULL;
    char *name = NULL, *uid = NULL;
    if (indexed(pod->name, i, &name) < 0)
        return -ENOMEM;
    if (had_uid)
        indexed(pod->uid, i, &uid);
    else if (asprintf(&uid, "%s/%s", pod->namespace, name) < 0)
        uid = NULL;
    if (uid == NULL) {
        free(name);
        return -ENOMEM;
    }
    free(pod->name);
    free(pod->uid);
    pod->name = name;
    pod->uid = uid;
    return pod_finish_volumes(pod); /* ephemeral claims are named after the pod */
}

/* Build one pod from a Kubernetes-shaped tree: copy i of a counted entry (i < 0: uncounted). */
static int make_pod(struct loader *l, const struct tree *entry, const struct tree *tree, int64_t i,
                    struct pod **out)
{
    struct pod *pod;
    int rc = pod_from_tree(tree, &pod, l->err);
    if (rc < 0)
        return rc;
    if (i >= 0)
        rc = rename_pod(pod, tree, i);
    const struct tree *spec = field(tree, "spec");
    bool named = spec != NULL && field(spec, "schedulerName") != NULL;
    if (rc == 0 && !named) {
        char *name = strdup(l->scheduler_name);
        rc = name == NULL ? -ENOMEM : 0;
        if (rc == 0) {
            free(pod->scheduler_name);
            pod->scheduler_name = name;
        }
    }
    if (rc < 0) {
        pod_free(pod);
        return no_memory(entry, l->err);
    }
    *out = pod;
    return 0;
}

static int load_pod(struct loader *l, const struct tree *entry)
{
    struct pod_synth synth;
    const struct tree *tree;
    int rc = pod_tree(entry, false, &synth, &tree, l->err);
    struct pod *pod = NULL;
    if (rc == 0)
        rc = make_pod(l, entry, tree, -1, &pod);
    if (rc < 0)
        return rc;
    struct sim_spec *spec = l->spec;
    if (grow((void **)&spec->pods, sizeof(*spec->pods), (void **)&l->pod_at, sizeof(*l->pod_at),
             spec->pod_count, &l->pod_capacity) < 0) {
        pod_free(pod);
        return no_memory(entry, l->err);
    }
    spec->pods[spec->pod_count] = pod;
    l->pod_at[spec->pod_count++] = entry;
    return 0;
}

static int push_arrival(struct loader *l, const struct tree *entry, int64_t at_ms, struct pod *pod)
{
    struct sim_spec *spec = l->spec;
    if (grow((void **)&spec->arrivals, sizeof(*spec->arrivals), (void **)&l->arrival_at,
             sizeof(*l->arrival_at), spec->arrival_count, &l->arrival_capacity) < 0) {
        pod_free(pod);
        return no_memory(entry, l->err);
    }
    spec->arrivals[spec->arrival_count] = (struct sim_arrival){.at_ms = at_ms, .pod = pod};
    l->arrival_at[spec->arrival_count++] = entry;
    return 0;
}

static int workload_gang(struct loader *l, const struct tree *entry, const struct tree *tree,
                         uint32_t first, int64_t count);

static int load_workload(struct loader *l, const struct tree *entry)
{
    struct pod_synth synth;
    const struct tree *tree;
    int rc = pod_tree(entry, true, &synth, &tree, l->err);
    bool has_count = false;
    int64_t count = 0, at_ms = 0, interval_ms = 0;
    if (rc == 0)
        rc = read_count(entry, &has_count, &count, l->err);
    if (rc == 0)
        rc = read_duration(entry, "at", &at_ms, l->err);
    if (rc == 0)
        rc = read_duration(entry, "interval", &interval_ms, l->err);
    int64_t last;
    if (rc == 0 && count > 0 &&
        (__builtin_mul_overflow(count - 1, interval_ms, &last) ||
         __builtin_add_overflow(at_ms, last, &last)))
        rc = tree_error(entry, l->err, -EINVAL, "interval",
                        "the last arrival (at + (count-1) * interval) is beyond what the "
                        "simulated clock can hold; use a shorter at or interval");
    uint32_t first = l->spec->arrival_count;
    for (int64_t i = 0; rc == 0 && i < count; i++) {
        struct pod *pod;
        rc = make_pod(l, entry, tree, has_count ? i : -1, &pod);
        if (rc == 0)
            rc = push_arrival(l, entry, at_ms + i * interval_ms, pod);
    }
    if (rc == 0)
        rc = workload_gang(l, entry, tree, first, count);
    return rc;
}

/* ---- custom objects ----------------------------------------------------------------------- */

static int read_object_strings(const struct tree *entry, struct sim_object *obj,
                               struct kc_error *err)
{
    const struct tree *kind = field(entry, "kind"), *meta = field(entry, "metadata");
    if (kind == NULL)
        return tree_error(entry, err, -EINVAL, "objects", "kind is required");
    if (meta == NULL || meta->type != TREE_MAP)
        return tree_error(meta != NULL ? meta : entry, err, -EINVAL, "objects",
                          "metadata with a name is required");
    const struct tree *name = field(meta, "name"), *ns = field(meta, "namespace");
    if (name == NULL)
        return tree_error(meta, err, -EINVAL, "metadata.name", "is required");
    const char *s;
    int rc = tree_string(kind, "kind", &s, err);
    if (rc == 0 && (obj->kind = strdup(s)) == NULL)
        rc = no_memory(kind, err);
    if (rc == 0)
        rc = tree_string(name, "metadata.name", &s, err);
    if (rc == 0 && (obj->name = strdup(s)) == NULL)
        rc = no_memory(name, err);
    if (rc == 0 && ns != NULL)
        rc = tree_string(ns, "metadata.namespace", &s, err);
    if (rc == 0 && ns != NULL && (obj->namespace = strdup(s)) == NULL)
        rc = no_memory(ns, err);
    return rc;
}

static void object_free(struct sim_object *obj)
{
    free(obj->kind);
    free(obj->namespace);
    free(obj->name);
    free(obj->json);
}

/* Takes obj's strings, also on failure. */
static int push_object(struct loader *l, const struct tree *entry, struct sim_object *obj)
{
    struct sim_spec *spec = l->spec;
    if (grow((void **)&spec->objects, sizeof(*spec->objects), (void **)&l->object_at,
             sizeof(*l->object_at), spec->object_count, &l->object_capacity) < 0) {
        object_free(obj);
        return no_memory(entry, l->err);
    }
    l->object_at[spec->object_count] = entry;
    spec->objects[spec->object_count++] = *obj;
    return 0;
}

static int load_object(struct loader *l, const struct tree *entry)
{
    if (entry->type != TREE_MAP)
        return tree_error(entry, l->err, -EINVAL, "objects", "each entry must be a map");
    struct sim_object obj = {0};
    int rc = read_object_strings(entry, &obj, l->err);
    if (rc == 0 && (obj.json = tree_to_json(entry)) == NULL)
        rc = no_memory(entry, l->err);
    if (rc < 0) {
        object_free(&obj);
        return rc;
    }
    return push_object(l, entry, &obj);
}

/* ---- pod groups ----------------------------------------------------------------------------- */

static const char *const podgroup_keys[] = {
    "name",        "namespace",         "minMember", "minResources", "scheduleTimeoutSeconds",
    "annotations", "creationTimestamp", NULL,
};

static const char *const gang_keys[] = {
    "minMember", "minResources", "scheduleTimeoutSeconds", "annotations", NULL,
};

/* A map of strings (annotations) as JSON. */
static int string_map_json(const struct tree *t, const char *what, json_t **out,
                           struct kc_error *err)
{
    if (t->type != TREE_MAP)
        return tree_error(t, err, -EINVAL, what, "expected a map of strings");
    *out = json_object();
    for (uint32_t i = 0; *out != NULL && i < t->count; i++) {
        const char *value;
        int rc = tree_string(t->items[i], what, &value, err);
        if (rc < 0) {
            json_decref(*out);
            return rc;
        }
        json_object_set_new(*out, t->keys[i]->scalar, json_string(value));
    }
    return *out != NULL ? 0 : no_memory(t, err);
}

/* minResources: every value must be a quantity; the JSON keeps them as written. */
static int min_resources_json(const struct tree *t, json_t **out, struct kc_error *err)
{
    if (t->type != TREE_MAP)
        return tree_error(t, err, -EINVAL, "minResources",
                          "expected a map of resource to quantity");
    *out = json_object();
    for (uint32_t i = 0; *out != NULL && i < t->count; i++) {
        int64_t value;
        const char *text;
        int rc = tree_quantity(t->items[i], t->keys[i]->scalar, &value, err);
        if (rc == 0)
            rc = tree_string(t->items[i], t->keys[i]->scalar, &text, err);
        if (rc < 0) {
            json_decref(*out);
            return rc;
        }
        json_object_set_new(*out, t->keys[i]->scalar, json_string(text));
    }
    return *out != NULL ? 0 : no_memory(t, err);
}

/* The spec fields a podGroups entry or a workload's gang may give, into spec and metadata. */
static int podgroup_fields(const struct tree *entry, int64_t default_min, json_t *spec,
                           json_t *metadata, struct kc_error *err)
{
    int64_t min_member = default_min, timeout = 0;
    const struct tree *t = field(entry, "minMember");
    int rc = t != NULL ? tree_int64(t, "minMember", &min_member, err) : 0;
    if (rc == 0 && (min_member < 1 || min_member > MAX_COUNT))
        rc = tree_error(t != NULL ? t : entry, err, -EINVAL, "minMember",
                        "%" PRId64 " is out of range 1..%d", min_member, MAX_COUNT);
    if (rc == 0 && (t = field(entry, "scheduleTimeoutSeconds")) != NULL) {
        rc = tree_int64(t, "scheduleTimeoutSeconds", &timeout, err);
        if (rc == 0 && timeout < 0)
            rc = tree_error(t, err, -EINVAL, "scheduleTimeoutSeconds", "must not be negative");
        if (rc == 0)
            json_object_set_new(spec, "scheduleTimeoutSeconds", json_integer(timeout));
    }
    json_object_set_new(spec, "minMember", json_integer(min_member));
    json_t *sub = NULL;
    if (rc == 0 && (t = field(entry, "minResources")) != NULL &&
        (rc = min_resources_json(t, &sub, err)) == 0)
        json_object_set_new(spec, "minResources", sub);
    if (rc == 0 && (t = field(entry, "annotations")) != NULL &&
        (rc = string_map_json(t, "annotations", &sub, err)) == 0)
        json_object_set_new(metadata, "annotations", sub);
    return rc;
}

/* A PodGroup object (scheduling.x-k8s.io/v1alpha1) from shorthand fields. */
static int add_podgroup(struct loader *l, const struct tree *entry, const char *namespace_name,
                        const char *name, int64_t default_min)
{
    json_t *metadata = json_pack("{s:s, s:s}", "name", name, "namespace", namespace_name);
    json_t *spec = json_object();
    const struct tree *created = field(entry, "creationTimestamp");
    const char *text;
    int rc = metadata == NULL || spec == NULL ? no_memory(entry, l->err) : 0;
    if (rc == 0 && created != NULL &&
        (rc = tree_string(created, "creationTimestamp", &text, l->err)) == 0)
        json_object_set_new(metadata, "creationTimestamp", json_string(text));
    if (rc == 0)
        rc = podgroup_fields(entry, default_min, spec, metadata, l->err);
    json_t *root = rc == 0 ? json_pack("{s:s, s:s, s:O, s:O}", "apiVersion", POD_GROUP_API, "kind",
                                       "PodGroup", "metadata", metadata, "spec", spec)
                           : NULL;
    json_decref(metadata);
    json_decref(spec);
    if (rc < 0)
        return rc;
    struct sim_object obj = {
        .kind = strdup("PodGroup"),
        .namespace = strdup(namespace_name),
        .name = strdup(name),
        .json = root != NULL ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL,
    };
    json_decref(root);
    if (obj.kind == NULL || obj.namespace == NULL || obj.name == NULL || obj.json == NULL) {
        object_free(&obj);
        return no_memory(entry, l->err);
    }
    return push_object(l, entry, &obj);
}

/* podGroups: the shorthand, or a PodGroup object as the API server writes it. */
static int load_podgroup(struct loader *l, const struct tree *entry)
{
    if (entry->type != TREE_MAP)
        return tree_error(entry, l->err, -EINVAL, "podGroups", "each entry must be a map");
    if (tree_get(entry, "metadata") != NULL || tree_get(entry, "kind") != NULL) {
        const struct tree *kind = field(entry, "kind");
        if (kind != NULL && (kind->type != TREE_SCALAR || strcmp(kind->scalar, "PodGroup") != 0))
            return tree_error(kind, l->err, -EINVAL, "kind",
                              "podGroups holds PodGroups; put other objects under objects");
        return load_object(l, entry);
    }
    int rc = tree_check_keys(entry, "podGroups entry", podgroup_keys, l->err);
    const struct tree *name = field(entry, "name"), *ns = field(entry, "namespace");
    const char *name_text = NULL, *ns_text = "default";
    if (rc == 0 && name == NULL)
        rc = tree_error(entry, l->err, -EINVAL, "podGroups entry", "name is required");
    if (rc == 0)
        rc = tree_string(name, "name", &name_text, l->err);
    if (rc == 0 && ns != NULL)
        rc = tree_string(ns, "namespace", &ns_text, l->err);
    if (rc == 0)
        rc = add_podgroup(l, entry, ns_text, name_text, 1);
    return rc;
}

/* ---- capacityQueues: CapacityQueue objects for the capacityqueue plugin ------------------ */

/* The shorthand: the queue's name and its spec fields, as plugins/capacityqueue/README.md
 * lists them; the plugin checks their values and the rules of the tree. */
static const char *const capacity_queue_keys[] = {
    "name",           "parent",       "guaranteed", "limit", "weight", "reclaimable",
    "borrowingLimit", "lendingLimit", NULL};

/* capacityQueues: the shorthand, or a CapacityQueue object as the API server holds it. */
static int load_capacity_queue(struct loader *l, const struct tree *entry)
{
    if (entry->type != TREE_MAP)
        return tree_error(entry, l->err, -EINVAL, "capacityQueues", "each entry must be a map");
    if (tree_get(entry, "metadata") != NULL || tree_get(entry, "kind") != NULL) {
        const struct tree *kind = field(entry, "kind");
        if (kind != NULL &&
            (kind->type != TREE_SCALAR || strcmp(kind->scalar, "CapacityQueue") != 0))
            return tree_error(kind, l->err, -EINVAL, "kind",
                              "capacityQueues holds CapacityQueues; put other objects under "
                              "objects");
        return load_object(l, entry);
    }
    int rc = tree_check_keys(entry, "capacityQueues entry", capacity_queue_keys, l->err);
    const struct tree *name = field(entry, "name");
    const char *name_text = NULL;
    if (rc == 0 && name == NULL)
        rc = tree_error(entry, l->err, -EINVAL, "capacityQueues entry", "name is required");
    if (rc == 0)
        rc = tree_string(name, "name", &name_text, l->err);
    if (rc < 0)
        return rc;
    char *fields = tree_to_json(entry);
    json_t *spec = fields != NULL ? json_loads(fields, 0, NULL) : NULL;
    free(fields);
    if (spec != NULL)
        json_object_del(spec, "name");
    json_t *root = spec != NULL ? json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion",
                                            "scheduling.kcycle.io/v1alpha1", "kind",
                                            "CapacityQueue", "metadata", "name", name_text,
                                            "spec", spec)
                                : NULL;
    struct sim_object obj = {
        .kind = strdup("CapacityQueue"),
        .name = strdup(name_text),
        .json = root != NULL ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL,
    };
    json_decref(root);
    if (obj.kind == NULL || obj.name == NULL || obj.json == NULL) {
        object_free(&obj);
        return no_memory(entry, l->err);
    }
    return push_object(l, entry, &obj);
}

/* A workload entry's gang: true (a PodGroup of all count pods) or the PodGroup's fields. The
 * PodGroup is named after the entry and its pods get the pod-group label. */
static int workload_gang(struct loader *l, const struct tree *entry, const struct tree *tree,
                         uint32_t first, int64_t count)
{
    const struct tree *gang = field(entry, "gang");
    bool on = true;
    if (gang == NULL)
        return 0;
    int rc = gang->type == TREE_MAP ? tree_check_keys(gang, "gang", gang_keys, l->err)
                                    : tree_bool(gang, "gang", &on, l->err);
    if (rc < 0 || !on || count == 0)
        return rc;
    const struct pod *pod = l->spec->arrivals[first].pod;
    const struct tree *meta = field(tree, "metadata");
    const struct tree *base = meta != NULL ? field(meta, "name") : NULL;
    const char *name = base != NULL && base->type == TREE_SCALAR ? base->scalar : pod->name;
    rc = add_podgroup(l, gang->type == TREE_MAP ? gang : entry, pod->namespace, name, count);
    for (uint32_t i = first; rc == 0 && i < l->spec->arrival_count; i++) {
        struct pod *member = l->spec->arrivals[i].pod;
        if (kv_list_set(&member->labels, POD_GROUP_LABEL, name) < 0 || pod_finish(member) < 0)
            rc = no_memory(entry, l->err);
    }
    return rc;
}

/* ---- checks across entries ---------------------------------------------------------------- */

struct named {
    const char *ns; /* "" for nodes */
    const char *name;
    const struct tree *at;
    uint32_t seq;
};

static int named_compare(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);
    if (c == 0)
        c = strcmp(x->name, y->name);
    if (c == 0)
        c = x->seq < y->seq ? -1 : x->seq > y->seq;
    return c;
}

static void position(const struct tree *t, char *buf, size_t size)
{
    snprintf(buf, size, "%s:%u:%u", t->file != NULL ? t->file : "<input>", t->line, t->column);
}

static int report_duplicate(const struct named *first, const struct named *again, const char *kind,
                            struct kc_error *err)
{
    char here[400], there[400], name[600];
    position(again->at, here, sizeof(here));
    position(first->at, there, sizeof(there));
    if (first->ns[0] == '\0')
        snprintf(name, sizeof(name), "%s", again->name);
    else
        snprintf(name, sizeof(name), "%s/%s", again->ns, again->name);
    return kc_error_set(err, -EINVAL,
                        "%s: %s \"%s\" is defined twice (first at %s); %s names "
                        "must be unique",
                        here, kind, name, there, kind);
}

/* Sorts the list (by name, then file order) and reports the first repeated name. */
static int check_unique(struct named *list, uint32_t count, const char *kind, struct kc_error *err)
{
    if (count > 1)
        qsort(list, count, sizeof(*list), named_compare);
    for (uint32_t i = 1; i < count; i++)
        if (strcmp(list[i - 1].ns, list[i].ns) == 0 && strcmp(list[i - 1].name, list[i].name) == 0)
            return report_duplicate(&list[i - 1], &list[i], kind, err);
    return 0;
}

static int node_names(struct loader *l, struct named **out)
{
    struct sim_spec *spec = l->spec;
    *out = calloc(spec->node_count + 1, sizeof(**out));
    if (*out == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < spec->node_count; i++)
        (*out)[i] = (struct named){"", spec->nodes[i]->name, l->node_at[i], i};
    return 0;
}

static int check_node_name(const struct named *nodes, uint32_t count, const struct pod *pod,
                           const struct tree *at, struct kc_error *err)
{
    if (pod->node_name == NULL)
        return 0;
    struct named key = {"", pod->node_name, NULL, 0};
    for (uint32_t lo = 0, hi = count; lo < hi;) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(nodes[mid].name, key.name);
        if (c == 0)
            return 0;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return tree_error(at, err, -EINVAL, "nodeName",
                      "pod \"%s/%s\" names node \"%s\", which this file "
                      "does not define",
                      pod->namespace, pod->name, pod->node_name);
}

static int check_pods(struct loader *l, const struct named *nodes)
{
    struct sim_spec *spec = l->spec;
    uint32_t total = spec->pod_count + spec->arrival_count, n = 0;
    struct named *pods = calloc(total + 1, sizeof(*pods));
    if (pods == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < spec->pod_count; i++, n++) {
        const struct pod *pod = spec->pods[i];
        pods[n] = (struct named){pod->namespace, pod->name, l->pod_at[i], n};
        rc = check_node_name(nodes, spec->node_count, pod, l->pod_at[i], l->err);
    }
    for (uint32_t i = 0; rc == 0 && i < spec->arrival_count; i++, n++) {
        const struct pod *pod = spec->arrivals[i].pod;
        pods[n] = (struct named){pod->namespace, pod->name, l->arrival_at[i], n};
        rc = check_node_name(nodes, spec->node_count, pod, l->arrival_at[i], l->err);
    }
    if (rc == 0)
        rc = check_unique(pods, total, "pod", l->err);
    free(pods);
    return rc;
}

/* PodGroups (from podGroups, gangs and objects) name one group each. */
static int check_podgroups(struct loader *l)
{
    struct sim_spec *spec = l->spec;
    struct named *groups = calloc(spec->object_count + 1, sizeof(*groups));
    if (groups == NULL)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < spec->object_count; i++) {
        const struct sim_object *o = &spec->objects[i];
        if (strcmp(o->kind, "PodGroup") == 0)
            groups[n++] = (struct named){o->namespace != NULL ? o->namespace : "default", o->name,
                                         l->object_at[i], i};
    }
    int rc = check_unique(groups, n, "PodGroup", l->err);
    free(groups);
    return rc;
}

static int check_names(struct loader *l)
{
    struct named *nodes;
    if (node_names(l, &nodes) < 0)
        return kc_error_set(l->err, -ENOMEM, "%s: out of memory", l->spec->file);
    int rc = check_unique(nodes, l->spec->node_count, "node", l->err);
    if (rc == 0)
        rc = check_pods(l, nodes);
    if (rc == 0)
        rc = check_podgroups(l);
    free(nodes);
    if (rc == -ENOMEM)
        return kc_error_set(l->err, rc, "%s: out of memory", l->spec->file);
    return rc;
}

/* ---- arrivals order ----------------------------------------------------------------------- */

struct ordered {
    struct sim_arrival arrival;
    uint32_t seq;
};

static int ordered_compare(const void *a, const void *b)
{
    const struct ordered *x = a, *y = b;
    if (x->arrival.at_ms != y->arrival.at_ms)
        return x->arrival.at_ms < y->arrival.at_ms ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* qsort is not stable: the file order breaks ties explicitly. */
static int sort_arrivals(struct sim_spec *spec)
{
    uint32_t n = spec->arrival_count;
    if (n < 2)
        return 0;
    struct ordered *tmp = malloc(n * sizeof(*tmp));
    if (tmp == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        tmp[i] = (struct ordered){spec->arrivals[i], i};
    qsort(tmp, n, sizeof(*tmp), ordered_compare);
    for (uint32_t i = 0; i < n; i++)
        spec->arrivals[i] = tmp[i].arrival;
    free(tmp);
    return 0;
}

/* ---- node removals ------------------------------------------------------------------------ */

/* nodeRemovals: [{at: DURATION, node: NAME}] or {at, nodes: [NAME, ...]}: each named node
 * (one of the file's nodes) leaves the cluster at `at`. */
static int push_node_removal(struct loader *l, const struct tree *at, int64_t at_ms,
                             const struct tree *name_tree)
{
    const char *name;
    int rc = tree_string(name_tree, "node", &name, l->err);
    if (rc < 0)
        return rc;
    bool known = false;
    for (uint32_t i = 0; i < l->spec->node_count && !known; i++)
        known = strcmp(l->spec->nodes[i]->name, name) == 0;
    if (!known)
        return tree_error(name_tree, l->err, -EINVAL, "node",
                          "\"%s\" is not a node of this file (names of counted nodes end in "
                          "-0, -1, ...)",
                          name);
    struct sim_spec *spec = l->spec;
    struct sim_node_removal *grown =
        realloc(spec->node_removals, (spec->node_removal_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return no_memory(at, l->err);
    spec->node_removals = grown;
    struct sim_node_removal *r = &grown[spec->node_removal_count];
    r->at_ms = at_ms;
    if ((r->node = strdup(name)) == NULL)
        return no_memory(at, l->err);
    spec->node_removal_count++;
    return 0;
}

static int load_node_removal(struct loader *l, const struct tree *entry)
{
    static const char *const keys[] = {"at", "node", "nodes", NULL};
    if (entry->type != TREE_MAP)
        return tree_error(entry, l->err, -EINVAL, "nodeRemovals", "each entry must be a map");
    int rc = tree_check_keys(entry, "nodeRemovals entry", keys, l->err);
    int64_t at_ms = 0;
    if (rc == 0)
        rc = read_duration(entry, "at", &at_ms, l->err);
    const struct tree *one = field(entry, "node"), *many = field(entry, "nodes");
    if (rc == 0 && (one == NULL) == (many == NULL))
        rc = tree_error(entry, l->err, -EINVAL, "nodeRemovals",
                        "each entry names either node or nodes");
    if (rc == 0 && one != NULL)
        rc = push_node_removal(l, entry, at_ms, one);
    if (rc == 0 && many != NULL && many->type != TREE_SEQ)
        rc = tree_error(many, l->err, -EINVAL, "nodes", "expected a list of node names");
    for (uint32_t i = 0; rc == 0 && many != NULL && i < many->count; i++)
        rc = push_node_removal(l, entry, at_ms, many->items[i]);
    return rc;
}

static void sort_node_removals(struct sim_spec *spec)
{
    /* few entries: an insertion sort, stable */
    for (uint32_t i = 1; i < spec->node_removal_count; i++) {
        struct sim_node_removal r = spec->node_removals[i];
        uint32_t j = i;
        for (; j > 0 && spec->node_removals[j - 1].at_ms > r.at_ms; j--)
            spec->node_removals[j] = spec->node_removals[j - 1];
        spec->node_removals[j] = r;
    }
}

static void free_node_removals(struct sim_spec *spec)
{
    for (uint32_t i = 0; spec->node_removals != NULL && i < spec->node_removal_count; i++)
        free(spec->node_removals[i].node);
    free(spec->node_removals);
    spec->node_removals = NULL;
    spec->node_removal_count = 0;
}

/* ---- top level ---------------------------------------------------------------------------- */

static int load_list(struct loader *l, const struct tree *root, const char *key,
                     int (*load)(struct loader *, const struct tree *))
{
    const struct tree *list = field(root, key);
    if (list == NULL)
        return 0;
    if (list->type != TREE_SEQ)
        return tree_error(list, l->err, -EINVAL, key, "expected a list");
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < list->count; i++)
        rc = load(l, list->items[i]);
    return rc;
}

/* The config section, and the scheduler name pods without one get. */
static int load_config(struct loader *l, const struct tree *root, const char *scheduler_name)
{
    struct sim_spec *spec = l->spec;
    const struct tree *config = field(root, "config");
    l->scheduler_name = scheduler_name;
    if (config != NULL) {
        /* config_load_tree starts from the defaults itself and overwrites its output. */
        config_free(&spec->config);
        int rc = config_load_tree(config, &spec->config, l->err);
        if (rc < 0)
            return rc;
        spec->has_config = true;
        if (has_key(config, "schedulerName"))
            l->scheduler_name = spec->config.scheduler_name;
    }
    if (l->scheduler_name == NULL)
        l->scheduler_name = spec->config.scheduler_name;
    if (l->scheduler_name == NULL)
        l->scheduler_name = "kcycle";
    return 0;
}

/* ---- object budget ------------------------------------------------------------------------ */

/* The objects one entry of a top-level list makes: count copies where the entry may have a
 * count, plus the PodGroup of a workload's gang. A count the loader will refuse counts as one
 * here, so its own error (naming the key) is the one reported. */
static uint64_t entry_objects(const struct tree *entry, bool counted, bool may_gang)
{
    uint64_t n = 1;
    const struct tree *count = counted ? field(entry, "count") : NULL;
    struct kc_error ignored = {{0}};
    int64_t v;
    if (count != NULL && tree_int64(count, "count", &v, &ignored) == 0 && v >= 0 && v <= MAX_COUNT)
        n = (uint64_t)v;
    if (may_gang && field(entry, "gang") != NULL)
        n++;
    return n;
}

/* Add up what the file asks for before anything is built: a 2 KB file of large counts must
 * not reach the allocator with tens of millions of pods. */
static int check_budget(const struct tree *root, uint64_t max_objects, struct kc_error *err)
{
    static const struct {
        const char *key;
        bool counted, may_gang;
    } lists[] = {{"nodes", true, false},
                 {"pods", false, false},
                 {"workload", true, true},
                 {"podGroups", false, false},
                 {"objects", false, false}};
    uint64_t total = 0;
    for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++) {
        const struct tree *list = field(root, lists[k].key);
        if (list == NULL || list->type != TREE_SEQ)
            continue; /* the loader says what is wrong with it */
        for (uint32_t i = 0; i < list->count; i++) {
            const struct tree *entry = list->items[i];
            total += entry_objects(entry, lists[k].counted, lists[k].may_gang);
            if (total <= max_objects)
                continue;
            const struct tree *count = lists[k].counted ? field(entry, "count") : NULL;
            return tree_error(count != NULL ? count : entry, err, -E2BIG, lists[k].key,
                              "with this entry the file asks for more than %" PRIu64
                              " objects (nodes, pods, arrivals, groups); lower the counts or "
                              "raise kcycle-scheduler --max-objects",
                              max_objects);
        }
    }
    return 0;
}

static int load_root(struct loader *l, const struct tree *root, const char *scheduler_name)
{
    static const char *const top_keys[] = {"config",         "nodes",        "pods",
                                           "workload",       "objects",      "podGroups",
                                           "capacityQueues", "nodeRemovals", NULL};
    int rc = tree_check_keys(root, "simulation file", top_keys, l->err);
    if (rc == 0)
        rc = load_config(l, root, scheduler_name);
    if (rc == 0)
        rc = load_list(l, root, "nodes", load_node);
    if (rc == 0)
        rc = load_list(l, root, "pods", load_pod);
    if (rc == 0)
        rc = load_list(l, root, "workload", load_workload);
    if (rc == 0)
        rc = load_list(l, root, "podGroups", load_podgroup);
    if (rc == 0)
        rc = load_list(l, root, "capacityQueues", load_capacity_queue);
    if (rc == 0)
        rc = load_list(l, root, "objects", load_object);
    if (rc == 0)
        rc = load_list(l, root, "nodeRemovals", load_node_removal);
    if (rc == 0)
        sort_node_removals(l->spec);
    if (rc == 0)
        rc = check_names(l);
    if (rc == 0 && sort_arrivals(l->spec) < 0)
        rc = no_memory(root, l->err);
    return rc;
}

int simfile_load(const char *path, const char *scheduler_name, struct sim_spec *spec,
                 struct kc_error *err)
{
    return simfile_load_limited(path, scheduler_name, 0, spec, err);
}

int simfile_load_limited(const char *path, const char *scheduler_name, uint64_t max_objects,
                         struct sim_spec *spec, struct kc_error *err)
{
    memset(spec, 0, sizeof(*spec));
    spec->file = strdup(path);
    if (spec->file == NULL)
        return kc_error_set(err, -ENOMEM, "%s: out of memory", path);
    int rc = config_default(&spec->config);
    if (rc < 0) {
        simfile_free(spec);
        return kc_error_set(err, rc, "%s: cannot set up the default configuration: %s", path,
                            kc_strerror(rc));
    }
    struct tree *root;
    rc = tree_parse_file(path, &root, err);
    if (rc < 0) {
        simfile_free(spec);
        return rc;
    }
    struct loader l = {.spec = spec, .err = err};
    rc = check_budget(root, max_objects != 0 ? max_objects : SIMFILE_DEFAULT_MAX_OBJECTS, err);
    if (rc == 0)
        rc = load_root(&l, root, scheduler_name);
    free(l.node_at);
    free(l.pod_at);
    free(l.arrival_at);
    free(l.object_at);
    tree_free(root);
    if (rc < 0)
        simfile_free(spec);
    return rc;
}

void simfile_free(struct sim_spec *spec)
{
    if (spec == NULL)
        return;
    for (uint32_t i = 0; spec->nodes != NULL && i < spec->node_count; i++)
        node_free(spec->nodes[i]);
    free(spec->nodes);
    for (uint32_t i = 0; spec->pods != NULL && i < spec->pod_count; i++)
        pod_free(spec->pods[i]);
    free(spec->pods);
    for (uint32_t i = 0; spec->arrivals != NULL && i < spec->arrival_count; i++)
        pod_free(spec->arrivals[i].pod);
    free(spec->arrivals);
    for (uint32_t i = 0; spec->objects != NULL && i < spec->object_count; i++)
        object_free(&spec->objects[i]);
    free(spec->objects);
    for (uint32_t i = 0; spec->topologies != NULL && i < spec->topology_count; i++)
        topology_free(&spec->topologies[i]);
    free(spec->topologies);
    free_node_removals(spec);
    config_free(&spec->config);
    free(spec->file);
    memset(spec, 0, sizeof(*spec));
}
