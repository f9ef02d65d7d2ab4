/* A plugin that uses what SDK 1.2 added for plugin authors, for the harness's own tests
 * (tests/plugintest): typed args, kc_logf, kc_cycle_delete, kc_node_id and the handle-taking
 * snapshot functions. Filter keeps nodes labelled label=value (and, with gpuFit, those with the
 * pod's GPUs free, nominated pods counted); Score prefers free GPUs. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define SEEN "authoring/seen"
#define RESERVED "authoring/reserved"
#define BLOB "authoring/blob"
#define BLOB_SIZE 5000

struct authoring {
    const char *label, *value; /* owned copies */
    int64_t weight;
    int strict, gpu_fit;
    int64_t memory_floor;
    kc_resource gpu;
    /* rendezvousMs: the first Filter call waits up to this long for a second one running at
     * the same time (Filter on threads), else refuses its node "filter ran alone" */
    int64_t rendezvous_ms;
    atomic_int in_filter, rendezvous_done;
};

static int authoring_init(const kc_host_api *host, const char *args_json, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -22;
    char error[256];
    kc_args *args = kc_args_parse(args_json, error, sizeof(error));
    if (args == NULL) {
        kc_logf(KC_LOG_ERROR, "%s", error);
        return -22;
    }
    const char *label, *value;
    int64_t weight, floor, rendezvous;
    int strict, gpu_fit;
    kc_args_string(args, "label", "pool", &label);
    kc_args_string(args, "value", "gpu", &value);
    kc_args_int(args, "weight", 10, &weight);
    kc_args_bool(args, "strict", 1, &strict);
    kc_args_bool(args, "gpuFit", 0, &gpu_fit);
    kc_args_int(args, "rendezvousMs", 0, &rendezvous);
    kc_args_quantity(args, "memoryFloor", 0, 0, &floor);
    struct authoring *a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->label = strdup(label);
        a->value = strdup(value);
    }
    /* finish after copying: the strings live until then */
    if (kc_args_finish(args, error, sizeof(error)) != 0 || a == NULL || a->label == NULL ||
        a->value == NULL) {
        kc_logf(KC_LOG_ERROR, "%s", a == NULL ? "out of memory" : error);
        if (a != NULL) {
            free((char *)a->label);
            free((char *)a->value);
        }
        free(a);
        return -22;
    }
    a->weight = weight;
    a->strict = strict;
    a->gpu_fit = gpu_fit;
    a->rendezvous_ms = rendezvous;
    a->memory_floor = floor;
    a->gpu = kc_resource_id("nvidia.com/gpu");
    kc_logf(KC_LOG_INFO, "init: %s=%s weight %lld strict %d memoryFloor %lld", a->label, a->value,
            (long long)weight, strict, (long long)floor);
    *self = a;
    return 0;
}

static void authoring_fini(void *self)
{
    struct authoring *a = self;
    free((char *)a->label);
    free((char *)a->value);
    free(a);
}

static kc_status authoring_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)self;
    if (kc_cycle_node_count(cycle) == 0 || kc_cycle_node_at(cycle, 0) == NULL) {
        kc_cycle_reject(cycle, "no nodes");
        return KC_UNSCHEDULABLE;
    }
    kc_logf(KC_LOG_DEBUG, "prefilter %s: %u nodes, %u waiting, now %lld", kc_pod_name(pod),
            kc_cycle_node_count(cycle), kc_cycle_waiting_pod_count(cycle),
            (long long)kc_cycle_now_ms(cycle));
    return kc_cycle_set(cycle, SEEN, (void *)SEEN, NULL) == 0 ? KC_SUCCESS : KC_ERROR;
}

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 when another Filter call ran while this one waited (polling, up to a deadline). */
static int met_another_filter(struct authoring *a)
{
    int met = 0;
    atomic_fetch_add(&a->in_filter, 1);
    for (int64_t end = monotonic_ms() + a->rendezvous_ms;
         !atomic_load(&a->rendezvous_done) && monotonic_ms() < end;) {
        if (atomic_load(&a->in_filter) >= 2) {
            met = 1;
            break;
        }
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    int first = !atomic_exchange(&a->rendezvous_done, 1);
    atomic_fetch_sub(&a->in_filter, 1);
    return met || !first;
}

static kc_status authoring_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    struct authoring *a = self;
    if (a->rendezvous_ms > 0 && !atomic_load(&a->rendezvous_done) && !met_another_filter(a)) {
        kc_cycle_reject(cycle, "filter ran alone");
        return KC_UNSCHEDULABLE;
    }
    if (a->gpu_fit && kc_pod_request(pod, a->gpu) >
                          kc_node_allocatable(node, a->gpu) - kc_node_requested(node, a->gpu)) {
        kc_cycle_reject(cycle, "node(s) lack free GPUs");
        return KC_UNSCHEDULABLE;
    }
    const char *got = kc_node_label(node, a->label);
    if (got != NULL && strcmp(got, a->value) == 0)
        return KC_SUCCESS;
    if (!a->strict)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, "node(s) lack the pool label");
    return KC_UNSCHEDULABLE;
}

static kc_status authoring_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node, int64_t *score)
{
    struct authoring *a = self;
    (void)cycle;
    (void)pod;
    int64_t free_gpus = kc_node_allocatable(node, a->gpu) - kc_node_requested(node, a->gpu);
    *score = free_gpus * a->weight > KC_MAX_NODE_SCORE ? KC_MAX_NODE_SCORE : free_gpus * a->weight;
    return KC_SUCCESS;
}

static kc_status authoring_reserve(void *self, kc_cycle *cycle, const kc_pod *pod,
                                   const kc_node *node)
{
    (void)self;
    const char *node_name = kc_node_name(node);
    char *copy = strdup(node_name);
    if (copy == NULL || kc_cycle_set(cycle, RESERVED, copy, free) != 0) {
        free(copy);
        return KC_ERROR;
    }
    /* bytes with no NUL: what kc_harness_cycle_string must not read as a string */
    char *blob = malloc(BLOB_SIZE);
    if (blob != NULL) {
        memset(blob, 'x', BLOB_SIZE);
        if (kc_cycle_set(cycle, BLOB, blob, free) != 0)
            free(blob);
    }
    kc_cycle_annotate(cycle, "authoring/node", node_name);
    kc_logf(KC_LOG_INFO, "reserved %s on %s (node id %llu)", kc_pod_name(pod), node_name,
            (unsigned long long)kc_node_id(node));
    return KC_SUCCESS;
}

/* Idempotent through kc_cycle_delete: a second Unreserve finds nothing to undo. */
static void authoring_unreserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)self;
    (void)node;
    int rc = kc_cycle_delete(cycle, RESERVED);
    kc_logf(KC_LOG_INFO, "unreserve %s: %s", kc_pod_name(pod), rc == 0 ? "undone" : "nothing");
}

/* Permit drops the PreFilter marker: what a test sees with kc_harness_cycle_has. */
static kc_status authoring_permit(void *self, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node, uint32_t *timeout_ms)
{
    (void)self;
    (void)pod;
    (void)node;
    (void)timeout_ms;
    return kc_cycle_delete(cycle, SEEN) == 0 ? KC_SUCCESS : KC_ERROR;
}

/* ---- Added with the harness's events one at a time (kc_harness_assume, kc_harness_forget,
 * kc_harness_delete_object, kc_harness_update_pods_first): each event as a DEBUG line, so a
 * test sees which came and in what order ---- */
static void authoring_on_event(void *self, const kc_event *ev)
{
    (void)self;
    static const char *const types[] = {
        "NODE_ADD",   "NODE_UPDATE", "NODE_DELETE", "POD_ADD",    "POD_UPDATE",   "POD_DELETE",
        "POD_ASSUME", "POD_FORGET",  "OBJECT_ADD",  "OBJECT_UPDATE", "OBJECT_DELETE"};
    const char *type = (unsigned)ev->type < sizeof(types) / sizeof(types[0]) ? types[ev->type]
                                                                             : "?";
    const char *what = ev->pod != NULL    ? kc_pod_name(ev->pod)
                       : ev->node != NULL ? kc_node_name(ev->node)
                                          : ev->object_name;
    kc_logf(KC_LOG_DEBUG, "event %s %s", type, what != NULL ? what : "");
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = authoring_init,
    .fini = authoring_fini,
    .pre_filter = authoring_pre_filter,
    .filter = authoring_filter,
    .score = authoring_score,
    .reserve = authoring_reserve,
    .unreserve = authoring_unreserve,
    .permit = authoring_permit,
    .on_event = authoring_on_event,
};

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    static const kc_plugin_descriptor descriptor =
        KC_PLUGIN_DESCRIPTOR_INIT("authoring", "1.0.0", &ops);
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &descriptor;
}
