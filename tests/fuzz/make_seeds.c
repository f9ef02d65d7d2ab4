/* Writes the seed corpora of the proto, sched, host and kube fuzz targets from the example
 * simulation files: real nodes, pods and objects, as the scheduler, the bridge, a plugin host
 * and the API server would send them. Run by hand when a message changes (README.md):
 *
 *   build/tests/fuzz/fuzz-seeds tests/fuzz/corpus examples/sim/small.yaml ...
 *
 * Frames for the targets that read several messages follow fuzz.h: a 2-byte little-endian
 * length, then the message. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge.pb-c.h"
#include "host.h"
#include "kcycle/version.h"
#include "log.h"
#include "plugin.pb-c.h"
#include "proto_convert.h"
#include "resource_table.h"
#include "simfile.h"

/* The plugins a seeded host loads: the ones that read pods, nodes and objects in the host. */
static const char *const host_plugins[] = {"noderesources", "tainttoleration", "nodeaffinity",
                                           "volumebinding", "podtopologyspread", "defaultbinder"};
#define HOST_PLUGIN_COUNT (sizeof(host_plugins) / sizeof(host_plugins[0]))

struct buf {
    uint8_t *data;
    size_t len;
};

static void die(const char *what)
{
    fprintf(stderr, "fuzz-seeds: %s\n", what);
    exit(1);
}

static void append(struct buf *b, const void *data, size_t len)
{
    uint8_t *grown = realloc(b->data, b->len + len + 1);
    if (grown == NULL)
        die("out of memory");
    b->data = grown;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static void append_frame(struct buf *b, const void *data, size_t len)
{
    if (len > 0xffff)
        die("a message over 64 KiB: use a smaller example");
    uint8_t head[2] = {(uint8_t)len, (uint8_t)(len >> 8)};
    append(b, head, 2);
    append(b, data, len);
}

static void write_file(const char *dir, const char *target, const char *name, const void *data,
                       size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        die(path);
}

static struct buf pack(const ProtobufCMessage *m)
{
    struct buf b = {.len = protobuf_c_message_get_packed_size(m)};
    b.data = malloc(b.len + 1);
    if (b.data == NULL)
        die("out of memory");
    protobuf_c_message_pack(m, b.data);
    return b;
}

/* corpus/proto: the kind's index (fuzz_proto.c) then the message */
static void write_proto(const char *dir, const char *prefix, unsigned kind, const char *what,
                        const ProtobufCMessage *m)
{
    struct buf b = pack(m);
    struct buf seed = {0};
    uint8_t k = (uint8_t)kind;
    append(&seed, &k, 1);
    append(&seed, b.data, b.len);
    char name[256];
    snprintf(name, sizeof(name), "%u-%s-%s", kind, prefix, what);
    write_file(dir, "proto", name, seed.data, seed.len);
    free(b.data);
    free(seed.data);
}

/* ---- kube JSON of the model's objects, as the API server would list them ---- */

static json_t *resources_json(const struct res_list *list)
{
    json_t *o = json_object();
    for (uint32_t i = 0; i < list->count; i++) {
        char value[32];
        int64_t v = list->items[i].value;
        if (list->items[i].id == KC_RESOURCE_CPU)
            snprintf(value, sizeof(value), "%lldm", (long long)v);
        else
            snprintf(value, sizeof(value), "%lld", (long long)v);
        json_object_set_new(o, resource_name(list->items[i].id), json_string(value));
    }
    return o;
}

static json_t *labels_json(const struct kv_list *list)
{
    json_t *o = json_object();
    for (uint32_t i = 0; i < list->count; i++)
        json_object_set_new(o, list->items[i].key, json_string(list->items[i].value));
    return o;
}

static json_t *pod_json(const struct pod *pod, unsigned rv)
{
    char version[16];
    snprintf(version, sizeof(version), "%u", rv);
    json_t *containers = json_array();
    for (uint32_t i = 0; i < pod->container_count; i++)
        json_array_append_new(
            containers,
            json_pack("{s:s, s:s, s:{s:o}}", "name",
                      pod->containers[i].name != NULL ? pod->containers[i].name : "main", "image",
                      "registry.k8s.io/pause:3.10", "resources", "requests",
                      resources_json(&pod->containers[i].requests)));
    json_t *spec = json_pack("{s:s, s:o, s:i}", "schedulerName", pod->scheduler_name, "containers",
                             containers, "priority", (int)pod->priority);
    if (pod->node_name != NULL)
        json_object_set_new(spec, "nodeName", json_string(pod->node_name));
    if (pod->node_selector.count > 0)
        json_object_set_new(spec, "nodeSelector", labels_json(&pod->node_selector));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:o}, s:o, s:{s:s}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", "name", pod->name, "namespace", pod->namespace,
                     "uid", pod->uid, "resourceVersion", version, "labels",
                     labels_json(&pod->labels), "spec", spec, "status", "phase",
                     pod->node_name != NULL ? "Running" : "Pending");
}

static json_t *node_json(const struct node *node, unsigned rv)
{
    static const char *const effects[] = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
    char version[16];
    snprintf(version, sizeof(version), "%u", rv);
    json_t *taints = json_array();
    for (uint32_t i = 0; i < node->taint_count; i++)
        json_array_append_new(taints, json_pack("{s:s, s:s, s:s}", "key", node->taints[i].key,
                                                "value", node->taints[i].value, "effect",
                                                effects[(unsigned)node->taints[i].effect % 3]));
    return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:o}, s:{s:b, s:o}, s:{s:o, s:o}}",
                     "apiVersion", "v1", "kind", "Node", "metadata", "name", node->name, "uid",
                     node->uid != NULL && node->uid[0] ? node->uid : node->name,
                     "resourceVersion", version, "labels", labels_json(&node->labels), "spec",
                     "unschedulable", node->unschedulable, "taints", taints, "status",
                     "allocatable", resources_json(&node->allocatable), "capacity",
                     resources_json(&node->allocatable));
}

static json_t *object_json(const struct sim_object *o, unsigned rv)
{
    json_t *j = json_loads(o->json, 0, NULL);
    if (j == NULL)
        die("an example object that jansson does not read");
    json_t *meta = json_object_get(j, "metadata");
    char version[16];
    snprintf(version, sizeof(version), "%u", rv);
    if (json_is_object(meta)) {
        json_object_set_new(meta, "resourceVersion", json_string(version));
        if (json_object_get(meta, "uid") == NULL)
            json_object_set_new(meta, "uid", json_string(o->name));
    }
    return j;
}

/* A list page of the items, and a watch stream that modifies the first and deletes the last:
 * one seed with the list as frame 0 and the stream as frame 1; the first byte picks the
 * resource as fuzz_kube.c numbers them. */
static void write_kube(const char *dir, const char *prefix, unsigned resource, const char *what,
                       json_t *items)
{
    if (json_array_size(items) == 0) {
        json_decref(items);
        return;
    }
    json_t *list = json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", "v1", "kind", "List",
                             "metadata", "resourceVersion", "1000", "items", items);
    char *list_text = json_dumps(list, JSON_COMPACT);
    struct buf stream = {0};
    json_t *first = json_deep_copy(json_array_get(items, 0));
    json_object_set_new(json_object_get(first, "metadata"), "resourceVersion",
                        json_string("1001"));
    json_t *events[] = {
        json_pack("{s:s, s:o}", "type", "MODIFIED", "object", first),
        json_pack("{s:s, s:O}", "type", "DELETED", "object",
                  json_array_get(items, json_array_size(items) - 1)),
        json_pack("{s:s, s:{s:s, s:{s:s}}}", "type", "BOOKMARK", "object", "kind", "Bookmark",
                  "metadata", "resourceVersion", "1003"),
    };
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
        char *text = json_dumps(events[i], JSON_COMPACT);
        append(&stream, text, strlen(text));
        append(&stream, "\n", 1);
        free(text);
        json_decref(events[i]);
    }
    struct buf seed = {0};
    uint8_t k = (uint8_t)resource;
    append(&seed, &k, 1);
    append_frame(&seed, list_text, strlen(list_text));
    append_frame(&seed, stream.data, stream.len);
    char name[256];
    snprintf(name, sizeof(name), "%s-%s", prefix, what);
    write_file(dir, "kube", name, seed.data, seed.len);
    free(list_text);
    free(stream.data);
    free(seed.data);
    json_decref(list);
    json_decref(items);
}

/* fuzz_kube.c's resources, by kind: the index, or -1 for kinds it does not list */
static int kube_resource(const char *kind)
{
    static const char *const kinds[] = {"Pod", "Node", "PersistentVolume",
                                        "PersistentVolumeClaim", "StorageClass",
                                        "PodDisruptionBudget", "PodGroup", "CSINode"};
    for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(kinds[i], kind) == 0)
            return (int)i;
    return -1;
}

static void seeds_kube(const char *dir, const char *prefix, const struct sim_spec *spec)
{
    unsigned rv = 1;
    json_t *pods = json_array(), *nodes = json_array();
    for (uint32_t i = 0; i < spec->pod_count; i++)
        json_array_append_new(pods, pod_json(spec->pods[i], rv++));
    for (uint32_t i = 0; i < spec->arrival_count && i < 4; i++)
        json_array_append_new(pods, pod_json(spec->arrivals[i].pod, rv++));
    for (uint32_t i = 0; i < spec->node_count && i < 4; i++)
        json_array_append_new(nodes, node_json(spec->nodes[i], rv++));
    write_kube(dir, prefix, 0, "pods", pods);
    write_kube(dir, prefix, 1, "nodes", nodes);
    for (int r = 2; r < 8; r++) {
        json_t *items = json_array();
        const char *kind = NULL;
        for (uint32_t i = 0; i < spec->object_count; i++) {
            if (kube_resource(spec->objects[i].kind) == r) {
                kind = spec->objects[i].kind;
                json_array_append_new(items, object_json(&spec->objects[i], rv++));
            }
        }
        write_kube(dir, prefix, (unsigned)r, kind != NULL ? kind : "none", items);
    }
}

/* ---- messages ---- */

static Kcycle__V1__CustomObject *object_proto(const struct sim_object *o)
{
    Kcycle__V1__CustomObject *m = custom_object_to_proto(o);
    if (m == NULL)
        die("custom_object_to_proto");
    return m;
}

/* What the bridge sends after a hello: the whole state in one sync, then a binding answered
 * and a pod deleted. */
static void seeds_bridge(const char *dir, const char *prefix, const struct sim_spec *spec)
{
    uint32_t pods = spec->pod_count + (spec->arrival_count < 16 ? spec->arrival_count : 16);
    uint32_t count = spec->node_count + pods + spec->object_count;
    Kcycle__V1__ClusterChange *changes = calloc(count, sizeof(*changes));
    Kcycle__V1__ClusterChange **list = calloc(count, sizeof(*list));
    if (changes == NULL || list == NULL)
        die("out of memory");
    uint32_t n = 0;
    for (uint32_t i = 0; i < spec->node_count; i++, n++) {
        kcycle__v1__cluster_change__init(&changes[n]);
        changes[n].change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT;
        changes[n].node_put = node_to_proto(spec->nodes[i]);
    }
    for (uint32_t i = 0; i < pods; i++, n++) {
        const struct pod *pod =
            i < spec->pod_count ? spec->pods[i] : spec->arrivals[i - spec->pod_count].pod;
        kcycle__v1__cluster_change__init(&changes[n]);
        changes[n].change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT;
        changes[n].pod_put = pod_to_proto(pod);
    }
    for (uint32_t i = 0; i < spec->object_count; i++, n++) {
        kcycle__v1__cluster_change__init(&changes[n]);
        changes[n].change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_PUT;
        changes[n].object_put = object_proto(&spec->objects[i]);
    }
    for (uint32_t i = 0; i < n; i++) {
        /* a oneof: node_put, pod_put and object_put share their place */
        if (changes[i].node_put == NULL)
            die("an example object that does not encode");
        list[i] = &changes[i];
    }
    Kcycle__V1__Leadership leader = KCYCLE__V1__LEADERSHIP__INIT;
    leader.leader = true;
    leader.identity = "replica-a";
    Kcycle__V1__ToScheduler sync = KCYCLE__V1__TO_SCHEDULER__INIT;
    sync.sync_begin = true;
    sync.sync_end = true;
    sync.leadership = &leader;
    sync.n_changes = n;
    sync.changes = list;
    struct buf sync_bytes = pack(&sync.base);

    /* the first pending pod bound (binding id 1, as fuzz_sched.c numbers them) and the last
     * pod deleted */
    Kcycle__V1__BindResult bound = KCYCLE__V1__BIND_RESULT__INIT;
    bound.id = 1;
    bound.uid = pods > spec->pod_count ? spec->arrivals[0].pod->uid : "";
    bound.code = 201;
    bound.message = "";
    Kcycle__V1__BindResult *results[] = {&bound};
    Kcycle__V1__ClusterChange gone = KCYCLE__V1__CLUSTER_CHANGE__INIT;
    gone.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_DELETE;
    gone.pod_delete = pods > 0 ? changes[spec->node_count + pods - 1].pod_put->uid : "";
    Kcycle__V1__ClusterChange *gone_list[] = {&gone};
    Kcycle__V1__EvictionResult evicted = KCYCLE__V1__EVICTION_RESULT__INIT;
    evicted.uid = bound.uid;
    evicted.code = 500;
    evicted.message = "the API server is unavailable";
    evicted.preemptor_uid = gone.pod_delete;
    Kcycle__V1__EvictionResult *evictions[] = {&evicted};
    Kcycle__V1__ToScheduler next = KCYCLE__V1__TO_SCHEDULER__INIT;
    next.n_bind_results = 1;
    next.bind_results = results;
    next.n_changes = 1;
    next.changes = gone_list;
    next.n_eviction_results = 1;
    next.eviction_results = evictions;
    struct buf next_bytes = pack(&next.base);

    struct buf seed = {0};
    append_frame(&seed, sync_bytes.data, sync_bytes.len);
    append_frame(&seed, next_bytes.data, next_bytes.len);
    char name[256];
    snprintf(name, sizeof(name), "%s-sync", prefix);
    write_file(dir, "sched", name, seed.data, seed.len);

    write_proto(dir, prefix, 5, "to-scheduler", &sync.base);
    write_proto(dir, prefix, 5, "to-scheduler-results", &next.base);
    if (n > 0)
        write_proto(dir, prefix, 4, "cluster-change", &changes[n - 1].base);
    /* one of each object kind as itself */
    if (spec->node_count > 0)
        write_proto(dir, prefix, 1, "node", &changes[0].node_put->base);
    if (pods > 0)
        write_proto(dir, prefix, 0, "pod", &changes[spec->node_count].pod_put->base);
    if (spec->object_count > 0)
        write_proto(dir, prefix, 2, "object", &changes[spec->node_count + pods].object_put->base);
    for (uint32_t i = 0; i < n; i++) {
        if (changes[i].change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT)
            node_proto_free(changes[i].node_put);
        else if (changes[i].change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT)
            pod_proto_free(changes[i].pod_put);
        else
            custom_object_proto_free(changes[i].object_put);
    }
    free(sync_bytes.data);
    free(next_bytes.data);
    free(seed.data);
    free(changes);
    free(list);
}

/* What the scheduler says to its bridge: a binding with an object write, a status, an
 * eviction. */
static void seeds_to_bridge(const char *dir, const char *prefix, const struct sim_spec *spec)
{
    if (spec->arrival_count == 0 || spec->node_count == 0)
        return;
    const struct pod *pod = spec->arrivals[0].pod;
    Kcycle__V1__ObjectWrite write = KCYCLE__V1__OBJECT_WRITE__INIT;
    write.kind = "PersistentVolumeClaim";
    write.namespace_ = pod->namespace;
    write.name = "data";
    write.patch = "{\"metadata\":{\"annotations\":{\"volume.kubernetes.io/selected-node\":\"n\"}}}";
    Kcycle__V1__Binding binding = KCYCLE__V1__BINDING__INIT;
    binding.id = 7;
    binding.namespace_ = pod->namespace;
    binding.name = pod->name;
    binding.uid = pod->uid;
    binding.node = spec->nodes[0]->name;
    Kcycle__V1__Binding *bindings[] = {&binding};
    Kcycle__V1__Unschedulable unsched = KCYCLE__V1__UNSCHEDULABLE__INIT;
    unsched.namespace_ = pod->namespace;
    unsched.name = pod->name;
    unsched.uid = pod->uid;
    unsched.reason = "Unschedulable";
    unsched.message = "0/6 nodes are available: 6 Insufficient cpu.";
    Kcycle__V1__Unschedulable *unschedulable[] = {&unsched};
    Kcycle__V1__ToBridge m = KCYCLE__V1__TO_BRIDGE__INIT;
    m.n_bindings = 1;
    m.bindings = bindings;
    m.n_unschedulable = 1;
    m.unschedulable = unschedulable;
    write_proto(dir, prefix, 6, "to-bridge", &m.base);
    write_proto(dir, prefix, 3, "object-write", &write.base);
}

/* The cluster of a simulation as a host's snapshot: a put per node (16 at most), per pod with a
 * node and per object. */
struct cluster_deltas {
    Kcycle__V1__Delta *items;
    Kcycle__V1__Delta **list;
    uint32_t count, nodes;
};

static void cluster_deltas(const struct sim_spec *spec, struct cluster_deltas *cd)
{
    cd->nodes = spec->node_count < 16 ? spec->node_count : 16;
    uint32_t max = cd->nodes + spec->pod_count + spec->object_count;
    Kcycle__V1__Delta *deltas = cd->items = calloc(max + 1, sizeof(*deltas));
    cd->list = calloc(max + 1, sizeof(*cd->list));
    if (deltas == NULL || cd->list == NULL)
        die("out of memory");
    uint32_t n = 0;
    for (uint32_t i = 0; i < cd->nodes; i++, n++) {
        kcycle__v1__delta__init(&deltas[n]);
        deltas[n].change_case = KCYCLE__V1__DELTA__CHANGE_NODE_PUT;
        deltas[n].node_put = node_to_proto(spec->nodes[i]);
    }
    for (uint32_t i = 0; i < spec->pod_count; i++) {
        if (spec->pods[i]->node_name == NULL)
            continue;
        kcycle__v1__delta__init(&deltas[n]);
        deltas[n].change_case = KCYCLE__V1__DELTA__CHANGE_POD_PUT;
        deltas[n].pod_put = pod_to_proto(spec->pods[i]);
        n++;
    }
    for (uint32_t i = 0; i < spec->object_count; i++, n++) {
        kcycle__v1__delta__init(&deltas[n]);
        deltas[n].change_case = KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT;
        deltas[n].object_put = object_proto(&spec->objects[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        cd->list[i] = &deltas[i];
    cd->count = n;
}

static void cluster_deltas_free(struct cluster_deltas *cd)
{
    for (uint32_t i = 0; i < cd->count; i++) {
        if (cd->items[i].change_case == KCYCLE__V1__DELTA__CHANGE_NODE_PUT)
            node_proto_free(cd->items[i].node_put);
        else if (cd->items[i].change_case == KCYCLE__V1__DELTA__CHANGE_POD_PUT)
            pod_proto_free(cd->items[i].pod_put);
        else
            custom_object_proto_free(cd->items[i].object_put);
    }
    free(cd->items);
    free(cd->list);
}

/* Serve requests to a new host in order (each must succeed), and write them as the host
 * target's seed `name`, and each request and the host's real reply as proto seeds (named
 * "LABEL-request-N", or "request-N" when label is ""). */
static void host_session(const char *dir, const char *prefix, const char *name,
                         const char *label, Kcycle__V1__Request *requests, unsigned count)
{
    struct plugin_host_options opts = {.fd = 0};
    struct plugin_host *host;
    struct kc_error err = {{0}};
    if (plugin_host_open(&opts, &host, &err) != 0)
        die(err.message);
    struct buf seed = {0};
    for (unsigned i = 0; i < count; i++) {
        struct buf req = pack(&requests[i].base);
        append_frame(&seed, req.data, req.len);
        uint8_t *reply;
        size_t reply_len;
        if (plugin_host_handle(host, req.data, req.len, &reply, &reply_len) != 0)
            die("plugin_host_handle");
        Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, reply_len, reply);
        if (r == NULL)
            die("a reply that does not decode");
        if (r->error[0] != '\0') {
            fprintf(stderr, "fuzz-seeds: %s: request %u: %s\n", name, i + 1, r->error);
            die("the host refused a seed request");
        }
        char what[64];
        const char *dash = label[0] != '\0' ? "-" : "";
        snprintf(what, sizeof(what), "%s%srequest-%u", label, dash, i + 1);
        write_proto(dir, prefix, 8, what, &requests[i].base);
        snprintf(what, sizeof(what), "%s%sreply-%u", label, dash, i + 1);
        write_proto(dir, prefix, 9, what, &r->base);
        kcycle__v1__reply__free_unpacked(r, NULL);
        free(reply);
        free(req.data);
    }
    plugin_host_close(host);
    write_file(dir, "host", name, seed.data, seed.len);
    free(seed.data);
}

/* Preemption's what-if after the session's evaluation (requests 1 to 3 of seeds_host), as the
 * scheduler asks (plugin.proto's WhatIf): the evaluated pod on the first node without the pods
 * there and with the second arriving pod nominated on it, then on that node as it is (on a full
 * node a refusal, with its plugin and reasons). The evaluation before counts that nominated pod
 * on the node too (Evaluate.nominated). */
static void seeds_host_what_if(const char *dir, const char *prefix, const struct sim_spec *spec,
                               const Kcycle__V1__Request *session)
{
    const char *node = spec->nodes[0]->name;
    char **removed = calloc(spec->pod_count + 1, sizeof(*removed));
    if (removed == NULL)
        die("out of memory");
    size_t removed_count = 0;
    for (uint32_t i = 0; i < spec->pod_count; i++)
        if (spec->pods[i]->node_name != NULL && strcmp(spec->pods[i]->node_name, node) == 0)
            removed[removed_count++] = spec->pods[i]->uid;
    Kcycle__V1__Pod *nominated[] = {pod_to_proto(spec->arrivals[1].pod)};
    uint32_t added[] = {0};
    Kcycle__V1__WhatIfNode items[2];
    Kcycle__V1__WhatIfNode *item_list[2] = {&items[0], &items[1]};
    for (unsigned i = 0; i < 2; i++) {
        kcycle__v1__what_if_node__init(&items[i]);
        items[i].node = 0;
        items[i].n_removed = i == 0 ? removed_count : 0;
        items[i].removed = removed;
        items[i].n_added = i == 0 ? 1 : 0;
        items[i].added = added;
    }
    Kcycle__V1__WhatIf what_if = KCYCLE__V1__WHAT_IF__INIT;
    what_if.pod = session[2].evaluate->pod;
    what_if.n_nodes = 2;
    what_if.nodes = item_list;
    what_if.n_nominated = 1;
    what_if.nominated = nominated;
    /* the evaluation counts the same pod nominated on that node (Evaluate.nominated) */
    Kcycle__V1__NominatedPod nomination = KCYCLE__V1__NOMINATED_POD__INIT;
    nomination.pod = nominated[0];
    nomination.node = (char *)node;
    Kcycle__V1__NominatedPod *nomination_list[] = {&nomination};
    Kcycle__V1__Evaluate evaluate = *session[2].evaluate;
    evaluate.n_nominated = 1;
    evaluate.nominated = nomination_list;
    Kcycle__V1__Request requests[4] = {session[0], session[1], session[2], session[2]};
    requests[2].evaluate = &evaluate;
    requests[3].id = 4;
    requests[3].call_case = KCYCLE__V1__REQUEST__CALL_WHAT_IF;
    requests[3].what_if = &what_if;
    char name[256];
    snprintf(name, sizeof(name), "%s-what-if-session", prefix);
    host_session(dir, prefix, name, "what-if", requests, 4);
    pod_proto_free(nominated[0]);
    free(removed);
}

/* A plugin host's session: hello, a snapshot of the cluster, an evaluation, a reservation and
 * a binding cycle; the requests as the host target's frames, and each request and the host's
 * real reply as proto seeds. */
static void seeds_host(const char *dir, const char *prefix, const struct sim_spec *spec)
{
    if (spec->arrival_count == 0)
        return;
    Kcycle__V1__PluginSpec specs[HOST_PLUGIN_COUNT];
    Kcycle__V1__PluginSpec *spec_list[HOST_PLUGIN_COUNT];
    for (unsigned i = 0; i < HOST_PLUGIN_COUNT; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)host_plugins[i];
        specs[i].args_json = "";
        specs[i].path = "";
        spec_list[i] = &specs[i];
    }
    Kcycle__V1__Hello hello = KCYCLE__V1__HELLO__INIT;
    hello.abi_version = KC_ABI_VERSION;
    hello.parallelism = 2;
    hello.n_plugins = HOST_PLUGIN_COUNT;
    hello.plugins = spec_list;

    struct cluster_deltas cd;
    cluster_deltas(spec, &cd);
    uint32_t nodes = cd.nodes, n = cd.count;
    Kcycle__V1__Delta *deltas = cd.items;
    Kcycle__V1__Delta **delta_list = cd.list;

    const struct pod *pod = spec->arrivals[0].pod;
    Kcycle__V1__Evaluate eval = KCYCLE__V1__EVALUATE__INIT;
    eval.pod = pod_to_proto(pod);
    eval.all_nodes = true;
    eval.score = true;
    Kcycle__V1__PhaseCall reserve = KCYCLE__V1__PHASE_CALL__INIT;
    reserve.phase = KCYCLE__V1__PHASE__PHASE_RESERVE;
    reserve.pod_uid = pod->uid;
    reserve.node = nodes > 0 ? spec->nodes[0]->name : "";
    Kcycle__V1__PhaseCall bind = reserve;
    bind.phase = KCYCLE__V1__PHASE__PHASE_BIND;
    bind.binding_cycle = true;
    Kcycle__V1__PhaseCall *batch[] = {&bind};
    Kcycle__V1__Assume assume = KCYCLE__V1__ASSUME__INIT;
    assume.pod = eval.pod;
    assume.node = reserve.node;
    Kcycle__V1__Delta assume_delta = KCYCLE__V1__DELTA__INIT;
    assume_delta.change_case = KCYCLE__V1__DELTA__CHANGE_ASSUME;
    assume_delta.assume = &assume;
    Kcycle__V1__Delta *assume_list[] = {&assume_delta};

    /* a group cycle's members in one request (EvaluateGroup): the arrivals after the first */
    Kcycle__V1__Evaluate members[3];
    Kcycle__V1__Evaluate *member_list[3];
    int64_t weights[HOST_PLUGIN_COUNT];
    uint32_t member_count = 0;
    for (uint32_t i = 1; i < spec->arrival_count && member_count < 3; i++) {
        Kcycle__V1__Evaluate *m = &members[member_count];
        kcycle__v1__evaluate__init(m);
        m->pod = pod_to_proto(spec->arrivals[i].pod);
        m->all_nodes = true;
        m->want = nodes;
        m->score = true;
        m->pick = member_count == 1; /* one member answered picked (Evaluate.pick) */
        member_list[member_count++] = m;
    }
    for (uint32_t i = 0; i < HOST_PLUGIN_COUNT; i++)
        weights[i] = 1 + i % 3;
    Kcycle__V1__EvaluateGroup group = KCYCLE__V1__EVALUATE_GROUP__INIT;
    group.n_members = member_count;
    group.members = member_list;
    group.rng = 42;
    group.n_weights = HOST_PLUGIN_COUNT;
    group.weights = weights;
    group.keep_assumed = true; /* the host keeps the members' assumptions (closed with them) */

    /* the first pod bound where it was assumed: the short delta (Delta.pod_bound), after the
     * group's kept assumptions, which it undoes first */
    Kcycle__V1__PodBound bound = KCYCLE__V1__POD_BOUND__INIT;
    bound.uid = pod->uid;
    bound.node = reserve.node;
    Kcycle__V1__Delta bound_delta = KCYCLE__V1__DELTA__INIT;
    bound_delta.change_case = KCYCLE__V1__DELTA__CHANGE_POD_BOUND;
    bound_delta.pod_bound = &bound;
    Kcycle__V1__Delta *bound_list[] = {&bound_delta};

    Kcycle__V1__Request requests[7];
    for (unsigned i = 0; i < 7; i++) {
        kcycle__v1__request__init(&requests[i]);
        requests[i].id = i + 1;
        requests[i].generation = i < 2 ? 0 : n;
    }
    requests[0].call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    requests[0].hello = &hello;
    requests[1].snapshot = true;
    requests[1].n_deltas = n;
    requests[1].deltas = delta_list;
    requests[1].generation = n;
    requests[1].call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    requests[1].sync = true;
    requests[2].call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    requests[2].evaluate = &eval;
    requests[3].call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
    requests[3].phase = &reserve;
    requests[3].n_deltas = 1;
    requests[3].deltas = assume_list;
    requests[3].generation = n + 1;
    requests[4].generation = n + 1;
    requests[4].n_batch = 1;
    requests[4].batch = batch;
    requests[4].call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    requests[4].sync = true;
    requests[5].generation = n + 1;
    requests[5].call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP;
    requests[5].evaluate_group = &group;
    requests[6].generation = n + 3;
    requests[6].n_deltas = 1;
    requests[6].deltas = bound_list;
    requests[6].call_case = KCYCLE__V1__REQUEST__CALL_SYNC;
    requests[6].sync = true;

    char name[256];
    snprintf(name, sizeof(name), "%s-session", prefix);
    host_session(dir, prefix, name, "", requests, nodes > 0 ? 7 : 6);
    if (n > 0)
        write_proto(dir, prefix, 7, "delta", &deltas[n - 1].base);
    write_proto(dir, prefix, 7, "delta-assume", &assume_delta.base);
    if (nodes > 0)
        write_proto(dir, prefix, 7, "delta-pod-bound", &bound_delta.base);
    if (spec->arrival_count > 1 && nodes > 0)
        seeds_host_what_if(dir, prefix, spec, requests);
    cluster_deltas_free(&cd);
    pod_proto_free(eval.pod);
    for (uint32_t i = 0; i < member_count; i++)
        pod_proto_free(members[i].pod);
}

/* The plugin test harness's session with a host (docs/plugin-testing.md): a hello with
 * capture_logs and the cluster, QueueSort, PreEnqueue and group_of for the first pending pods,
 * an evaluation, and PostFilter on its cycle (a preemption's choice, object statuses). */
static void seeds_harness(const char *dir, const char *prefix, const struct sim_spec *spec,
                          const char *label, const char *const *plugins, unsigned plugin_count)
{
    if (spec->arrival_count == 0)
        return;
    Kcycle__V1__PluginSpec specs[8];
    Kcycle__V1__PluginSpec *spec_list[8];
    for (unsigned i = 0; i < plugin_count && i < 8; i++) {
        kcycle__v1__plugin_spec__init(&specs[i]);
        specs[i].name = (char *)plugins[i];
        spec_list[i] = &specs[i];
    }
    struct cluster_deltas cd;
    cluster_deltas(spec, &cd);
    Kcycle__V1__Hello hello = KCYCLE__V1__HELLO__INIT;
    hello.abi_version = KC_ABI_VERSION;
    hello.parallelism = 1;
    hello.n_plugins = plugin_count;
    hello.plugins = spec_list;
    hello.capture_logs = true;
    const struct pod *pod = spec->arrivals[0].pod;
    const struct pod *other = spec->arrivals[spec->arrival_count > 1 ? 1 : 0].pod;
    Kcycle__V1__QueueCall less = KCYCLE__V1__QUEUE_CALL__INIT;
    less.kind = KCYCLE__V1__QUEUE_CALL__KIND__KIND_LESS;
    less.pod = pod_to_proto(pod);
    less.other = pod_to_proto(other);
    Kcycle__V1__QueueCall enqueue = less, group = less;
    enqueue.kind = KCYCLE__V1__QUEUE_CALL__KIND__KIND_PRE_ENQUEUE;
    enqueue.other = NULL;
    group.kind = KCYCLE__V1__QUEUE_CALL__KIND__KIND_GROUP_OF;
    group.other = NULL;
    Kcycle__V1__Evaluate eval = KCYCLE__V1__EVALUATE__INIT;
    eval.pod = less.pod;
    eval.all_nodes = true;
    eval.score = true;
    Kcycle__V1__PhaseCall post_filter = KCYCLE__V1__PHASE_CALL__INIT;
    post_filter.phase = KCYCLE__V1__PHASE__PHASE_POST_FILTER;
    post_filter.pod_uid = pod->uid;

    enum { COUNT = 6 };
    Kcycle__V1__Request requests[COUNT];
    for (unsigned i = 0; i < COUNT; i++) {
        kcycle__v1__request__init(&requests[i]);
        requests[i].id = i + 1;
        requests[i].generation = 1;
        requests[i].adopt_generation = i > 0; /* the harness's privilege */
    }
    requests[0].call_case = KCYCLE__V1__REQUEST__CALL_HELLO;
    requests[0].hello = &hello;
    requests[0].snapshot = true;
    requests[0].n_deltas = cd.count;
    requests[0].deltas = cd.list;
    requests[1].call_case = KCYCLE__V1__REQUEST__CALL_QUEUE;
    requests[1].queue = &less;
    requests[2].call_case = KCYCLE__V1__REQUEST__CALL_QUEUE;
    requests[2].queue = &enqueue;
    requests[3].call_case = KCYCLE__V1__REQUEST__CALL_QUEUE;
    requests[3].queue = &group;
    requests[4].call_case = KCYCLE__V1__REQUEST__CALL_EVALUATE;
    requests[4].evaluate = &eval;
    requests[5].call_case = KCYCLE__V1__REQUEST__CALL_PHASE;
    requests[5].phase = &post_filter;
    requests[5].cycle_keys_of = pod->uid;
    char name[256];
    snprintf(name, sizeof(name), "%s-%s-session", prefix, label);
    host_session(dir, prefix, name, label, requests, COUNT);
    pod_proto_free(less.pod);
    pod_proto_free(less.other);
    cluster_deltas_free(&cd);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s [--harness] CORPUS_DIR SIMFILE...\n", argv[0]);
        return 2;
    }
    /* --harness: only the plugin test harness's sessions, with the plugins the scheduler runs
     * in process only (queue phases, preemption) */
    bool harness = strcmp(argv[1], "--harness") == 0;
    if (harness) {
        argv++;
        argc--;
    }
    log_set_level(KC_LOG_ERROR);
    for (int i = 2; i < argc; i++) {
        struct sim_spec spec;
        struct kc_error err = {{0}};
        if (simfile_load(argv[i], "kcycle", &spec, &err) != 0)
            die(err.message);
        const char *base = strrchr(argv[i], '/');
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%s", base != NULL ? base + 1 : argv[i]);
        char *dot = strrchr(prefix, '.');
        if (dot != NULL)
            *dot = '\0';
        if (harness) {
            static const char *const preemption[] = {"prioritysort", "nodeunschedulable",
                                                     "noderesources", "defaultpreemption"};
            static const char *const queues[] = {"capacityqueue", "noderesources"};
            seeds_harness(argv[1], prefix, &spec, "harness-preemption", preemption, 4);
            seeds_harness(argv[1], prefix, &spec, "harness-queues", queues, 2);
            simfile_free(&spec);
            continue;
        }
        seeds_kube(argv[1], prefix, &spec);
        seeds_bridge(argv[1], prefix, &spec);
        seeds_to_bridge(argv[1], prefix, &spec);
        seeds_host(argv[1], prefix, &spec);
        simfile_free(&spec);
    }
    return 0;
}
