/* kcycle-bench: scheduler_perf shapes built in memory and scheduled with the shipped plugins
 * and an instant binder. Prints one JSON object (or a short text summary). Shapes:
 * scheduling-basic (kube's SchedulingBasic), gang (pod groups placed by the group cycle),
 * node-affinity (SchedulingNodeAffinity), taints (tainted nodes, half the pods tolerating),
 * preemption (kube's PreemptionBasic: high-priority pods preempting on a full cluster),
 * preemption-async (kube's PreemptionAsync: ordinary pods measured while high-priority pods
 * arrive and preempt, one every 200 ms); pod-anti-affinity, pod-affinity, topology-spreading
 * and preferred-topology-spreading (scheduler_perf's SchedulingPodAntiAffinity,
 * SchedulingPodAffinity, TopologySpreading and PreferredTopologySpreading). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_ipc.h"
#include "bench_numa.h"
#include "config.h"
#include "bench_gpu.h"
#include "bench_queues.h"
#include "log.h"
#include "bench_machine.h"
#include "metrics.h"
#include "model.h"
#include "resource_table.h"
#include "sched_metrics.h"
#include "scheduler.h"

struct bench {
    uint32_t nodes, existing, pods;
    uint32_t groups, group_size, min_member; /* --shape gang */
    /* --shape preemption: victims the sink was asked to evict, deleted before the next cycle
     * as an API server would (instantly: no grace period) */
    char **evicted;
    uint32_t evicted_count, evicted_capacity;
    uint64_t evictions;
    /* --shape preemption-async: a preemptor every churn_us of wall time while measuring; only
     * pods named measured-* count as bound */
    int64_t churn_us, next_churn_us;
    uint32_t churned;
    bool count_measured_only;
    int32_t parallelism;
    bool process; /* --isolation process */
    const char *plugin_dir;
    bool json;
    uint64_t seed;
    /* measurement */
    bool measuring;
    int64_t start_us;
    uint64_t bound;
    uint32_t *bins; /* bound pods per interval */
    /* when the last counted pod was bound, from start_us: a run too short for two intervals
     * is averaged up to there, not up to the end of the drain (preemption-async's preemptors
     * back off a second before they bind, after the measured pods) */
    int64_t last_bound_us;
    uint32_t bin_count, bin_capacity;
    int64_t interval_us;
    uint32_t *latency_us;
    uint32_t latency_count;
    /* gang: per group cycle, from taking the member off the queue to its group bound */
    uint32_t *group_us, *decision_us;
    uint32_t group_count;
    /* node-affinity and taints (node_shapes below) */
    int node_shape;
    bool minimal_profile; /* --profile minimal: the three plugins of SDK 1.1's default */
    uint64_t violations;  /* taints: pods bound where a taint they do not tolerate forbids */
};

/* ---- node-affinity and taints ------------------------------------------------------------- *
 * node-affinity copies scheduler_perf's SchedulingNodeAffinity (affinity/performance-config.yaml,
 * 5000Nodes_10000Pods): every node labelled topology.kubernetes.io/zone=zone1, 5,000 existing
 * and 10,000 measured pods, all requiring zone In [zone1, zone2]. taints uses scheduler_perf's
 * node-with-taint template (taint foo:NoSchedule, no value) on every second node and a
 * PreferNoSchedule taint on every fourth, with SchedulingBasic's pod counts; every second
 * measured pod tolerates foo. */

enum {
    SHAPE_PLAIN = 0,
    SHAPE_NODE_AFFINITY = 1,
    SHAPE_TAINTS = 2,
    SHAPE_POD_ANTI_AFFINITY = 3,
    SHAPE_POD_AFFINITY = 4,
    SHAPE_SPREAD = 5,
    SHAPE_PREFERRED_SPREAD = 6
};

/* ---- pod-level shapes (scheduler_perf affinity/ and topology_spreading/ configs) ---------- *
 * pod-anti-affinity (5000Nodes_2000Pods): 1,000 existing and 2,000 measured pods labelled
 * color=green with required anti-affinity to color=green over kubernetes.io/hostname.
 * pod-affinity (5000Nodes_5000Pods): every node in zone1, 5,000 + 5,000 pods labelled foo=""
 * with required affinity to foo="" over topology.kubernetes.io/zone. topology-spreading and
 * preferred-topology-spreading (5000Nodes_5000Pods): nodes in zones moon-1..3, 5,000 plain
 * existing pods, 5,000 measured pods color=blue spread with maxSkew 5 over the zone
 * (DoNotSchedule, ScheduleAnyway). scheduler_perf puts the two pod sets in namespaces sched-0
 * and sched-1 and lists both in the terms; here both are in one namespace, which the terms
 * then select by default. Nodes carry kubernetes.io/hostname as the kubelet sets it. */

static char *copy_text(const char *text);

#define SPREAD_JSON(when) \
    "{\"topologySpreadConstraints\":[{\"maxSkew\":5,\"topologyKey\":" \
    "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"" when "\"," \
    "\"labelSelector\":{\"matchLabels\":{\"color\":\"blue\"}}}]}"

static void shape_pod_level_node(const struct bench *b, struct node *n, uint32_t i)
{
    if (b->node_shape < SHAPE_POD_ANTI_AFFINITY)
        return;
    static const char *const moons[] = {"moon-1", "moon-2", "moon-3"};
    kv_list_set(&n->labels, "kubernetes.io/hostname", n->name);
    kv_list_set(&n->labels, "topology.kubernetes.io/zone",
                b->node_shape == SHAPE_POD_AFFINITY ? "zone1" : moons[i % 3]);
}

static void shape_pod_level_pod(const struct bench *b, struct pod *p, bool measured)
{
    const char *json = NULL;
    switch (b->node_shape) {
    case SHAPE_POD_ANTI_AFFINITY:
        kv_list_set(&p->labels, "color", "green");
        p->fields |= POD_FIELD_POD_ANTI_AFFINITY;
        json = "{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
               "{\"labelSelector\":{\"matchLabels\":{\"color\":\"green\"}},"
               "\"topologyKey\":\"kubernetes.io/hostname\"}]}}";
        break;
    case SHAPE_POD_AFFINITY:
        kv_list_set(&p->labels, "foo", "");
        p->fields |= POD_FIELD_POD_AFFINITY;
        json = "{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":["
               "{\"labelSelector\":{\"matchLabels\":{\"foo\":\"\"}},"
               "\"topologyKey\":\"topology.kubernetes.io/zone\"}]}}";
        break;
    case SHAPE_SPREAD:
    case SHAPE_PREFERRED_SPREAD:
        if (!measured)
            return;
        kv_list_set(&p->labels, "color", "blue");
        p->fields |= POD_FIELD_TOPOLOGY_SPREAD;
        json = b->node_shape == SHAPE_SPREAD ? SPREAD_JSON("DoNotSchedule")
                                             : SPREAD_JSON("ScheduleAnyway");
        break;
    default: return;
    }
    p->constraints_json = copy_text(json);
}

/* scheduler_perf's sizes for the pod-level shapes, unless given on the command line. */
static int pod_level_shape_of(const char *name, struct bench *b)
{
    static const struct {
        const char *name;
        int shape;
        uint32_t existing, pods;
    } shapes[] = {
        {"pod-anti-affinity", SHAPE_POD_ANTI_AFFINITY, 1000, 2000},
        {"pod-affinity", SHAPE_POD_AFFINITY, 5000, 5000},
        {"topology-spreading", SHAPE_SPREAD, 5000, 5000},
        {"preferred-topology-spreading", SHAPE_PREFERRED_SPREAD, 5000, 5000},
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (strcmp(name, shapes[i].name) != 0)
            continue;
        b->node_shape = shapes[i].shape;
        if (b->existing == 1000 && b->pods == 10000) { /* the defaults: not given */
            b->existing = shapes[i].existing;
            b->pods = shapes[i].pods;
        }
        return 0;
    }
    return -1;
}

static char *copy_text(const char *text)
{
    char *copy = strdup(text);
    if (copy == NULL) {
        fprintf(stderr, "kcycle-bench: out of memory\n");
        exit(1);
    }
    return copy;
}

static void shape_node(const struct bench *b, struct node *n, uint32_t i)
{
    shape_pod_level_node(b, n, i);
    if (b->node_shape == SHAPE_NODE_AFFINITY)
        kv_list_set(&n->labels, "topology.kubernetes.io/zone", "zone1");
    if (b->node_shape != SHAPE_TAINTS || i % 2 != 0)
        return;
    n->taint_count = i % 4 == 0 ? 2 : 1;
    n->taints = calloc(n->taint_count, sizeof(*n->taints));
    n->taints[0] = (struct taint){copy_text("foo"), copy_text(""), KC_TAINT_NO_SCHEDULE};
    if (n->taint_count == 2)
        n->taints[1] = (struct taint){copy_text("bar"), copy_text("x"), KC_TAINT_PREFER_NO_SCHEDULE};
}

static void shape_pod(const struct bench *b, struct pod *p, uint32_t i, bool measured)
{
    shape_pod_level_pod(b, p, measured);
    if (b->node_shape == SHAPE_NODE_AFFINITY) {
        struct node_affinity *a = &p->affinity;
        a->has_required = true;
        a->required_count = 1;
        a->required = calloc(1, sizeof(*a->required));
        struct selector_requirement *r = calloc(1, sizeof(*r));
        r->key = copy_text("topology.kubernetes.io/zone");
        r->op = SELECTOR_IN;
        r->value_count = 2;
        r->values = calloc(2, sizeof(*r->values));
        r->values[0] = copy_text("zone1");
        r->values[1] = copy_text("zone2");
        a->required[0].expressions = r;
        a->required[0].expression_count = 1;
    }
    if (b->node_shape == SHAPE_TAINTS && measured && i % 2 == 0) {
        p->toleration_count = 1;
        p->tolerations = calloc(1, sizeof(*p->tolerations));
        p->tolerations[0] = (struct toleration){.key = copy_text("foo"), .value = copy_text(""),
                                                .op = TOLERATION_EXISTS,
                                                .effect = KC_TAINT_NO_SCHEDULE};
    }
}

/* taints: a pod without the toleration bound to a node with foo:NoSchedule (even index). */
static void count_violation(struct bench *b, const struct pod *pod, const char *node)
{
    unsigned index;
    if (b->node_shape != SHAPE_TAINTS || pod->toleration_count > 0 ||
        sscanf(node, "node-%u", &index) != 1)
        return;
    if (index % 2 == 0)
        b->violations++;
}

static int shape_of(const char *name, struct bench *b)
{
    if (strcmp(name, "node-affinity") == 0) {
        b->node_shape = SHAPE_NODE_AFFINITY;
        if (b->existing == 1000) /* scheduler_perf's 5000Nodes_10000Pods */
            b->existing = 5000;
        return 0;
    }
    if (strcmp(name, "taints") == 0) {
        b->node_shape = SHAPE_TAINTS;
        return 0;
    }
    if (pod_level_shape_of(name, b) == 0)
        return 0;
    return strcmp(name, "scheduling-basic") == 0 || strcmp(name, "gang") == 0 ? 0 : -1;
}

/* The three plugins SDK 1.1's default profile had: the baseline the full profile is compared
 * with (docs/benchmarks.md). */
static struct plugin_config minimal_plugins[3] = {
    {.name = "prioritysort", .weight = 1, .required = true, .args_json = "{}"},
    {.name = "noderesources", .weight = 1, .required = true, .args_json = "{}"},
    {.name = "defaultbinder", .weight = 1, .required = true, .args_json = "{}"},
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    (void)ctx, (void)pod, (void)node, (void)annotations;
    return 0;
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    struct bench *b = ctx;
    count_violation(b, pod, node);
    if (!b->measuring)
        return;
    if (b->count_measured_only && strncmp(pod->name, "measured-", 9) != 0)
        return;
    b->bound++;
    /* bins of 10 ms; folded into 1 s (or 100 ms) intervals afterwards */
    uint32_t bin = (uint32_t)((now_us() - b->start_us) / 10000);
    if (bin >= b->bin_capacity) {
        uint32_t capacity = bin * 2 + 64;
        uint32_t *grown = realloc(b->bins, capacity * sizeof(*grown));
        if (grown == NULL)
            return;
        memset(grown + b->bin_capacity, 0, (capacity - b->bin_capacity) * sizeof(*grown));
        b->bins = grown;
        b->bin_capacity = capacity;
    }
    b->bins[bin]++;
    if (bin + 1 > b->bin_count)
        b->bin_count = bin + 1;
    b->last_bound_us = now_us() - b->start_us;
}

static struct node *make_node(const struct bench *b, uint32_t i)
{
    struct node *n = node_new();
    char name[32];
    snprintf(name, sizeof(name), "node-%u", i);
    n->name = strdup(name);
    res_list_set(&n->allocatable, KC_RESOURCE_CPU, 4000);
    res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 32ll << 30);
    res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
    shape_node(b, n, i);
    return n;
}

static struct pod *make_pod(const struct bench *b, const char *prefix, uint32_t i,
                            const char *group)
{
    struct pod *p = pod_new();
    char name[48];
    snprintf(name, sizeof(name), "%s-%u", prefix, i);
    p->name = strdup(name);
    p->namespace = strdup("bench");
    p->scheduler_name = strdup("kcycle");
    if (group != NULL)
        kv_list_set(&p->labels, "scheduling.x-k8s.io/pod-group", group);
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("c");
    res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, 100);
    res_list_set(&p->containers[0].requests, KC_RESOURCE_MEMORY, 500ll << 20);
    shape_pod(b, p, i, strcmp(prefix, "init") != 0);
    pod_finish(p);
    return p;
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double percentile(uint32_t *values, uint32_t count, double p)
{
    if (count == 0)
        return 0;
    qsort(values, count, sizeof(*values), compare_u32);
    uint32_t index = (uint32_t)(p / 100.0 * (count - 1) + 0.5);
    return values[index];
}

/* CPU time of the whole process (every thread), in microseconds: on a shared machine the
 * pods per CPU-second of a run say more than its wall-clock rate. */
static int64_t cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static uint64_t peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_maxrss * 1024;
}

/* ---- --shape preemption ---- */

static void sink_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                       const char *node)
{
    (void)preemptor, (void)node;
    struct bench *b = ctx;
    if (b->evicted_count == b->evicted_capacity) {
        uint32_t capacity = b->evicted_capacity * 2 + 64;
        char **grown = realloc(b->evicted, capacity * sizeof(*grown));
        if (grown == NULL)
            return;
        b->evicted = grown;
        b->evicted_capacity = capacity;
    }
    b->evicted[b->evicted_count++] = strdup(victim->uid);
    b->evictions++;
}

static void apply_evictions(struct scheduler *s, struct bench *b)
{
    for (uint32_t i = 0; i < b->evicted_count; i++) {
        if (b->evicted[i] != NULL)
            scheduler_pod_delete(s, b->evicted[i]);
        free(b->evicted[i]);
    }
    b->evicted_count = 0;
}

/* scheduler_perf's pod-low-priority and pod-high-priority templates. */
static struct pod *make_priority_pod(const struct bench *b, const char *prefix, uint32_t i,
                                     int64_t milli_cpu, int32_t priority)
{
    struct pod *p = make_pod(b, prefix, i, NULL);
    char uid[64];
    snprintf(uid, sizeof(uid), "%s-%u-uid", prefix, i);
    free(p->uid);
    p->uid = strdup(uid);
    p->priority = priority;
    res_list_set(&p->containers[0].requests, KC_RESOURCE_CPU, milli_cpu);
    res_list_set(&p->request, KC_RESOURCE_CPU, milli_cpu);
    return p;
}

/* preemption-async: scheduler_perf's churn op, one high-priority pod every 200 ms, until the
 * measured pods are all bound. */
static void churn(struct scheduler *s, struct bench *b)
{
    if (b->churn_us == 0 || !b->measuring || b->bound >= b->pods || now_us() < b->next_churn_us)
        return;
    b->next_churn_us += b->churn_us;
    scheduler_pod_add(s, make_priority_pod(b, "high", b->churned++, 3000, 10));
}

/* Preemptors back off (1 s, as in kube) before they bind on their nominated node: when only
 * timers are left, wait for the next one instead of stopping. */
static bool wait_for_timers(struct scheduler *s, struct bench *b)
{
    if (b->evictions == 0)
        return false;
    int64_t due = scheduler_next_due(s);
    if (due == INT64_MAX || queue_pending(&s->queue) == 0)
        return false;
    int64_t wait_ms = due - scheduler_now(s);
    if (wait_ms > 0) {
        struct timespec ts = {wait_ms / 1000, (wait_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* Run the scheduler until nothing is left to do. A group cycle's latency runs from taking
 * its first member off the queue to the tick that binds the members it committed. */
static void drain(struct scheduler *s, struct bench *b)
{
    for (;;) {
        apply_evictions(s, b);
        churn(s, b);
        uint64_t cycles = s->groups.cycles;
        int64_t started = now_us();
        int rc = scheduler_schedule_one(s);
        bool group_cycle = s->groups.cycles != cycles;
        if (rc > 0 && !group_cycle && b->measuring && b->latency_count < b->pods * 4)
            b->latency_us[b->latency_count++] = (uint32_t)s->last_attempt_us;
        scheduler_tick(s);
        if (group_cycle && b->measuring && b->group_count < b->groups * 4) {
            b->group_us[b->group_count] = (uint32_t)(now_us() - started);
            b->decision_us[b->group_count++] = (uint32_t)s->groups.last_cycle_us;
        }
        if (rc <= 0 && !scheduler_busy(s) && b->evicted_count == 0 && !wait_for_timers(s, b))
            break;
    }
}

/* The gang shape's groups: PodGroups as scheduler-plugins writes them, in arrival order. */
static void add_podgroups(struct scheduler *s, const struct bench *b)
{
    for (uint32_t g = 0; g < b->groups; g++) {
        char name[32], json[512];
        snprintf(name, sizeof(name), "group-%u", g);
        snprintf(json, sizeof(json),
                 "{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", \"kind\": \"PodGroup\", "
                 "\"metadata\": {\"name\": \"%s\", \"namespace\": \"bench\", "
                 "\"creationTimestamp\": \"2024-05-01T10:%02u:%02u:00Z\"}, "
                 "\"spec\": {\"minMember\": %u}}",
                 name, g / 60 % 60, g % 60, b->min_member);
        scheduler_object_event(s, KC_EVENT_OBJECT_ADD, "PodGroup", "bench", name, json);
    }
}

/* Groups with none of their members bound, and groups bound whole (at least minMember);
 * anything else breaks all-or-nothing. */
static bool groups_whole(const struct scheduler *s, const struct bench *b, uint32_t *placed,
                         uint32_t *empty)
{
    bool whole = true;
    *placed = *empty = 0;
    for (uint32_t g = 0; g < b->groups; g++) {
        uint32_t bound = 0;
        for (uint32_t i = 0; i < b->group_size; i++) {
            char uid[64];
            snprintf(uid, sizeof(uid), "bench/group-%u-member-%u", g, i);
            const struct cache_pod *cp = cache_pod(&s->cache, uid);
            bound += cp != NULL && !cp->assumed;
        }
        if (bound == 0)
            (*empty)++;
        else if (bound >= b->min_member)
            (*placed)++;
        else
            whole = false;
    }
    return whole;
}

static void usage(void)
{
    fprintf(stderr, "usage: kcycle-bench --shape "
                    "scheduling-basic|gang|node-affinity|taints|numa|gpu|queues|"
                    "preemption|preemption-async|"
                    "pod-anti-affinity|pod-affinity|topology-spreading|"
                    "preferred-topology-spreading "
                    "[--json] [--nodes N] "
                    "[--existing N] [--pods N] [--groups N] [--group-size N] [--min-member N] "
                    "[--plugin-dir DIR] [--seed N] [--parallelism N] "
                    "[--isolation inprocess|process] [--profile default|minimal] "
                    "[--rounds N (numa, --metrics compare)] [--metrics on|off|compare]\n");
}

static void bench_free(struct scheduler *s, struct bench *b)
{
    free(b->bins);
    free(b->latency_us);
    free(b->group_us);
    free(b->decision_us);
    free(b->evicted);
    scheduler_close(s);
}

/* --isolation process: the same run in process (a child run before this one) and the bare
 * transport's round trip, reported beside this run's figures. */
struct ipc_figures {
    bool measured;
    double raw_us, baseline_pods_per_second, baseline_group_ms;
    double cross_core_us, cross_core_spin_us; /* the echo on two cores: sleeping, spinning */
    char json[512];
};

static void ipc_measure(struct ipc_figures *ipc, int argc, char **argv)
{
    ipc->measured = true;
    if (bench_ipc_inprocess_baseline(argc, argv, &ipc->baseline_pods_per_second,
                                     &ipc->baseline_group_ms) < 0)
        fprintf(stderr, "kcycle-bench: the in-process baseline run gave no figure\n");
    if (bench_ipc_raw_round_trip_us(2000, &ipc->raw_us) < 0)
        fprintf(stderr, "kcycle-bench: the raw socketpair round trip could not be measured\n");
    /* one usable core: no cross-core figure (null in the JSON, not 0) */
    if (bench_ipc_cross_core_us(2000, false, &ipc->cross_core_us) < 0)
        ipc->cross_core_us = -1;
    if (bench_ipc_cross_core_us(2000, true, &ipc->cross_core_spin_us) < 0)
        ipc->cross_core_spin_us = -1;
}

static const char *ipc_json(struct ipc_figures *ipc, const struct scheduler *s,
                            double pods_per_second)
{
    if (!ipc->measured)
        return "";
    bench_ipc_json(ipc->json, sizeof(ipc->json), ipc->raw_us, ipc->baseline_pods_per_second,
                   pods_per_second, ipc->baseline_group_ms);
    size_t used = strlen(ipc->json);
    bench_ipc_cross_core_json(ipc->json + used, sizeof(ipc->json) - used, ipc->cross_core_us,
                              ipc->cross_core_spin_us);
    used = strlen(ipc->json);
    /* requests the evaluating host got on the cycle thread's CPU (remote_placement.c) */
    const struct remote_colocation *c = &s->remote.colocation;
    snprintf(ipc->json + used, sizeof(ipc->json) - used, ", \"colocated_round_trips\": %" PRIu64,
             c->round_trips);
    used = strlen(ipc->json);
    /* and spread, both polling; the last trials' paces (remote_placement.c) */
    snprintf(ipc->json + used, sizeof(ipc->json) - used,
             ", \"spread_round_trips\": %" PRIu64 ", \"placement_trials\": %" PRIu64
             ", \"placement_spread_chosen\": %" PRIu64
             ", \"placement_spread_us\": %.1f, \"placement_pinned_us\": %.1f",
             c->spread_round_trips, c->decisions, c->spread_decisions, c->spread_ns / 1000.0,
             c->pin_ns / 1000.0);
    used = strlen(ipc->json);
    /* bindings the hosts got as the short PodBound instead of the whole pod (remote_bound.c) */
    snprintf(ipc->json + used, sizeof(ipc->json) - used, ", \"pod_bound_deltas\": %" PRIu64,
             s->remote.bound.sent);
    return ipc->json;
}

/* ---- --metrics compare: the cost of the scheduler's metrics -------------------------------- *
 * Two schedulers in this process on the same cluster and pods, one recording metrics (as
 * kcycle-scheduler does) and one not, take turns of CHUNK attempts each until both have placed
 * every measured pod; each one's time is the sum of its turns. Turns of a few milliseconds put
 * the machine's load drift on both alike, which separate runs on a shared machine cannot. */

#define COMPARE_CHUNK 50

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Up to count attempts (with their ticks); false once nothing is left to do. */
static bool run_attempts(struct scheduler *s, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        int rc = scheduler_schedule_one(s);
        scheduler_tick(s);
        if (rc <= 0 && !scheduler_busy(s))
            return false;
    }
    return true;
}

struct compare_side {
    struct scheduler s;
    struct metrics *registry;
    uint64_t init_bound;
    double wall_us, cpu_us;
    bool busy;
};

static int compare_open(struct compare_side *side, struct bench *b, struct config *cfg, bool on)
{
    struct scheduler_sink sink = {.ctx = b, .bind = sink_bind, .bound = sink_bound};
    struct kc_error err = {{0}};
    if (scheduler_open(&side->s, cfg, b->plugin_dir, &sink, NULL, &err) < 0) {
        fprintf(stderr, "kcycle-bench: %s\n", err.message);
        return -1;
    }
    if (on &&
        (metrics_open(&side->registry) < 0 || sched_metrics_open(&side->s, side->registry) < 0))
        return -1;
    for (uint32_t i = 0; i < b->nodes; i++)
        scheduler_node_add(&side->s, make_node(b, i));
    for (uint32_t i = 0; i < b->existing; i++)
        scheduler_pod_add(&side->s, make_pod(b, "init", i, NULL));
    while (run_attempts(&side->s, 1000))
        ;
    side->init_bound = side->s.stats.scheduled;
    for (uint32_t i = 0; i < b->pods; i++)
        scheduler_pod_add(&side->s, make_pod(b, "measured", i, NULL));
    side->busy = true;
    return 0;
}

/* One turn; its wall time in us, or 0 when the side had nothing left to do. */
static double compare_turn(struct compare_side *side)
{
    if (!side->busy)
        return 0;
    double cpu = thread_cpu_us();
    int64_t wall = now_us();
    side->busy = run_attempts(&side->s, COMPARE_CHUNK);
    double took = (double)(now_us() - wall);
    side->wall_us += took;
    side->cpu_us += thread_cpu_us() - cpu;
    return took;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int compare_metrics_paired(struct bench *b, struct config *cfg, uint32_t rounds)
{
    double wall[2] = {0, 0}, cpu[2] = {0, 0};
    /* per pair of adjacent turns, off's time over on's: the median shrugs off the turns in
     * which the machine took the core away, which dominate a sum on a loaded machine */
    uint32_t pair_count = 0, pair_capacity = (rounds ? rounds : 1) * (b->pods / COMPARE_CHUNK + 8);
    double *pairs = calloc(pair_capacity, sizeof(*pairs));
    int rc = pairs == NULL;
    printf("{\"compare\": \"metrics\", \"nodes\": %u, \"existing_pods\": %u, \"pods\": %u, "
           "\"chunk\": %u, \"rounds\": [",
           b->nodes, b->existing, b->pods, COMPARE_CHUNK);
    for (uint32_t r = 0; r < (rounds ? rounds : 1) && rc == 0; r++) {
        struct compare_side sides[2] = {{.busy = false}, {.busy = false}}; /* [0] off, [1] on */
        if (compare_open(&sides[0], b, cfg, false) < 0 || compare_open(&sides[1], b, cfg, true) < 0)
            rc = 1;
        /* who goes first alternates between turns */
        for (uint32_t turn = 0; rc == 0 && (sides[0].busy || sides[1].busy); turn++) {
            double took[2];
            took[turn % 2] = compare_turn(&sides[turn % 2]);
            took[(turn + 1) % 2] = compare_turn(&sides[(turn + 1) % 2]);
            if (took[0] > 0 && took[1] > 0 && pair_count < pair_capacity)
                pairs[pair_count++] = took[0] / took[1];
        }
        for (int k = 0; k < 2 && rc == 0; k++) {
            uint64_t placed = sides[k].s.stats.scheduled - sides[k].init_bound;
            if (placed != b->pods) {
                fprintf(stderr, "kcycle-bench: metrics %s placed %" PRIu64 " of %u pods\n",
                        k ? "on" : "off", placed, b->pods);
                rc = 1;
            }
        }
        if (rc == 0) {
            printf("%s{\"pods_per_second_off\": %.0f, \"pods_per_second_on\": %.0f, "
                   "\"on_over_off\": %.3f}",
                   r ? ", " : "", b->pods * 1e6 / sides[0].wall_us,
                   b->pods * 1e6 / sides[1].wall_us, sides[0].wall_us / sides[1].wall_us);
            for (int k = 0; k < 2; k++) {
                wall[k] += sides[k].wall_us;
                cpu[k] += sides[k].cpu_us;
            }
        }
        if (sides[1].registry != NULL)
            free(metrics_render(sides[1].registry, NULL)); /* a scrape, as Prometheus would */
        for (int k = 0; k < 2; k++) {
            scheduler_close(&sides[k].s);
            metrics_close(sides[k].registry);
        }
    }
    qsort(pairs, pair_count, sizeof(*pairs), compare_double);
    printf("], \"on_over_off\": %.3f, \"cpu_on_over_off\": %.3f, \"pairs\": %u, "
           "\"pair_median_on_over_off\": %.3f}\n",
           wall[1] > 0 ? wall[0] / wall[1] : 0, cpu[1] > 0 ? cpu[0] / cpu[1] : 0, pair_count,
           pair_count > 0 ? pairs[pair_count / 2] : 0);
    free(pairs);
    return rc;
}

/* The gang shape's figures: per group cycle latency (to its members bound) and decision time,
 * pods/s over the whole run, and whether every group was placed whole or not at all. */
static int report_gang(struct scheduler *s, struct bench *b, uint64_t measured, int64_t elapsed_us,
                       double round_trip_us, struct ipc_figures *ipc)
{
    uint32_t placed, empty;
    bool whole = groups_whole(s, b, &placed, &empty);
    uint32_t cycles = b->group_count;
    double group_p50 = percentile(b->group_us, cycles, 50) / 1000.0;
    double group_p99 = percentile(b->group_us, cycles, 99) / 1000.0;
    double decision_p50 = percentile(b->decision_us, cycles, 50) / 1000.0;
    double decision_p99 = percentile(b->decision_us, cycles, 99) / 1000.0;
    double pods_per_second = elapsed_us > 0 ? (double)measured * 1e6 / (double)elapsed_us : 0;
    if (b->json) {
        printf("{\"shape\": \"gang\", \"nodes\": %u, \"groups\": %u, \"group_size\": %u, "
               "\"min_member\": %u, \"existing_pods\": %u, \"pods\": %u, "
               "\"scheduled\": %" PRIu64 ", \"groups_placed\": %u, \"groups_unplaced\": %u, "
               "\"all_or_nothing\": %s, \"group_cycles\": %u, \"group_rollbacks\": %" PRIu64
               ", \"group_latency_ms_p50\": %.1f, \"group_latency_ms_p99\": %.1f, "
               "\"group_decision_ms_p50\": %.1f, \"group_decision_ms_p99\": %.1f, "
               "\"pods_per_second\": %.0f, \"elapsed_seconds\": %.3f, "
               "\"peak_rss_bytes\": %" PRIu64 ", \"isolation\": \"%s\", "
               "\"ipc_round_trip_us_p50\": %.1f, \"host_group_requests\": %" PRIu64
               ", \"host_group_members_batched\": %" PRIu64 "%s}\n",
               b->nodes, b->groups, b->group_size, b->min_member, b->existing, b->pods, measured,
               placed, empty, whole ? "true" : "false", cycles, s->groups.rollbacks, group_p50,
               group_p99, decision_p50, decision_p99, pods_per_second, elapsed_us / 1e6,
               peak_rss_bytes(), b->process ? "process" : "inprocess", round_trip_us,
               s->remote.group_requests, s->remote.group_members_taken,
               ipc_json(ipc, s, pods_per_second));
    } else {
        printf("gang: %u groups of %u (minMember %u) on %u nodes, %u existing pods: %u placed "
               "whole, %u hold nothing%s\n"
               "  group latency (off the queue to bound) p50 %.1f ms p99 %.1f ms; decision p50 "
               "%.1f ms p99 %.1f ms\n"
               "  %" PRIu64 " pods in %.3f s: %.0f pods/s; peak RSS %.1f MiB\n",
               b->groups, b->group_size, b->min_member, b->nodes, b->existing, placed, empty,
               whole ? "" : " (SOME GROUP IS PARTIAL)", group_p50, group_p99, decision_p50,
               decision_p99, measured, elapsed_us / 1e6, pods_per_second,
               peak_rss_bytes() / 1048576.0);
    }
    bench_free(s, b);
    if (!whole)
        fprintf(stderr, "kcycle-bench: a group is partially bound\n");
    return whole ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"shape", required_argument, NULL, 's'},       {"json", no_argument, NULL, 'j'},
        {"nodes", required_argument, NULL, 'n'},       {"existing", required_argument, NULL, 'e'},
        {"pods", required_argument, NULL, 'p'},        {"plugin-dir", required_argument, NULL, 'd'},
        {"seed", required_argument, NULL, 'S'},        {"help", no_argument, NULL, 'h'},
        {"parallelism", required_argument, NULL, 'P'}, {"isolation", required_argument, NULL, 'I'},
        {"groups", required_argument, NULL, 'g'},      {"group-size", required_argument, NULL, 'z'},
        {"min-member", required_argument, NULL, 'm'},  {"profile", required_argument, NULL, 'r'},
        {"min-member", required_argument, NULL, 'm'},  {"rounds", required_argument, NULL, 'R'},
        {"metrics", required_argument, NULL, 'M'},     {NULL, 0, NULL, 0},
    };
    struct bench b = {.nodes = 5000,
                      .existing = 1000,
                      .pods = 10000,
                      .seed = 1,
                      .groups = 10,
                      .group_size = 1000};
    const char *shape = "scheduling-basic";
    uint32_t rounds = 3; /* --shape numa */
    bool sized_existing = false, sized_pods = false;
    bool with_metrics = false, compare_metrics = false; /* --metrics on|compare */
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 's': shape = optarg; break;
        case 'j': b.json = true; break;
        case 'n': b.nodes = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'e': b.existing = (uint32_t)strtoul(optarg, NULL, 10), sized_existing = true; break;
        case 'p': b.pods = (uint32_t)strtoul(optarg, NULL, 10), sized_pods = true; break;
        case 'd': b.plugin_dir = optarg; break;
        case 'S': b.seed = strtoull(optarg, NULL, 10); break;
        case 'P': b.parallelism = (int32_t)strtol(optarg, NULL, 10); break;
        case 'I':
            if (strcmp(optarg, "process") != 0 && strcmp(optarg, "inprocess") != 0) {
                fprintf(stderr, "kcycle-bench: --isolation inprocess|process\n");
                return 2;
            }
            b.process = strcmp(optarg, "process") == 0;
            break;
        case 'g': b.groups = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'z': b.group_size = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'm': b.min_member = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'r':
            if (strcmp(optarg, "default") != 0 && strcmp(optarg, "minimal") != 0) {
                fprintf(stderr, "kcycle-bench: --profile default|minimal\n");
                return 2;
            }
            b.minimal_profile = strcmp(optarg, "minimal") == 0;
            break;
        case 'R': rounds = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'M':
            if (strcmp(optarg, "on") == 0)
                with_metrics = true;
            else if (strcmp(optarg, "compare") == 0)
                compare_metrics = true;
            else if (strcmp(optarg, "off") != 0) {
                fprintf(stderr, "kcycle-bench: --metrics on|off|compare\n");
                return 2;
            }
            break;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (strcmp(shape, "numa") == 0) {
        struct bench_numa_options numa = {argv[0], b.plugin_dir, b.nodes, b.pods, b.seed,
                                          b.parallelism, rounds};
        return bench_numa(&numa);
    }
    /* GPU sharing (gpushare): its own trace, nodes and plugins */
    if (strcmp(shape, "gpu") == 0)
        return bench_gpu(b.plugin_dir, b.json, b.seed);
    /* capacity queues (capacityqueue): Kueue's baseline shape on a virtual clock */
    if (strcmp(shape, "queues") == 0)
        return bench_queues(b.plugin_dir, b.json, b.seed);
    bool gang = strcmp(shape, "gang") == 0;
    bool async = strcmp(shape, "preemption-async") == 0;
    bool preemption = strcmp(shape, "preemption") == 0 || async;
    struct ipc_figures ipc = {0};
    if (b.process && b.json)
        ipc_measure(&ipc, argc, argv);
    if (!preemption && shape_of(shape, &b) < 0) {
        fprintf(stderr, "kcycle-bench: unknown shape '%s' (known: scheduling-basic, gang, "
                        "node-affinity, taints, numa, gpu, queues, preemption, preemption-async, "
                        "pod-anti-affinity, pod-affinity, topology-spreading, "
                        "preferred-topology-spreading)\n",
                shape);
        return 2;
    }
    if (async) {
        /* PreemptionAsync 5000Nodes: the same full cluster, 5,000 measured ordinary pods */
        b.churn_us = 200000;
        b.count_measured_only = true;
    }
    if (preemption) {
        /* PreemptionBasic at 5000 nodes (scheduler_perf's sizes): 4 low-priority pods of 900m
         * fill each node, each high-priority pod of 3 CPUs evicts 3 of them */
        if (!sized_existing)
            b.existing = b.nodes * 4;
        if (!sized_pods)
            b.pods = b.nodes;
    }
    if (gang) {
        if (b.min_member == 0 || b.min_member > b.group_size)
            b.min_member = b.group_size;
        b.pods = b.groups * b.group_size;
    }
    /* The default profile (kube-scheduler's, docs/configuration.md) unless --profile minimal;
     * gang keeps the minimal list with coscheduling as its QueueSort. */
    struct config defaults;
    if (config_default(&defaults) != 0)
        return 1;
    struct plugin_config *plugins = defaults.plugins;
    uint32_t plugin_count = defaults.plugin_count;
    if (b.minimal_profile || gang) {
        plugins = minimal_plugins;
        plugin_count = 3;
    }
    if (gang)
        plugins[0].name = "coscheduling"; /* the QueueSort plugin that declares the groups */
    /* QueueSort runs for every queue operation and always stays in process. With the default
     * profile the Filter/Score plugins share one host and the binder has its own: two hosts,
     * as the three plugins have (noderesources, defaultbinder). */
    for (uint32_t i = 1; b.process && i < plugin_count; i++) {
        /* PostFilter without Filter needs the scheduler's view: it stays in process too, and
         * asks the hosts' Filter what-if (docs/architecture.md, "Preemption") */
        if (strcmp(plugins[i].name, "defaultpreemption") == 0)
            continue;
        plugins[i].isolation = ISOLATION_PROCESS;
        if (plugins == defaults.plugins && strcmp(plugins[i].name, "defaultbinder") != 0) {
            free(plugins[i].host);
            plugins[i].host = strdup("evaluate");
        }
    }
    struct config cfg = {
        .scheduler_name = "kcycle",
        .plugins = plugins,
        .plugin_count = plugin_count,
        .seed = b.seed,
        .parallelism = b.parallelism,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
        .plugin_timeout_ms = 5000,
    };
    if (compare_metrics)
        return compare_metrics_paired(&b, &cfg, rounds);
    struct scheduler s;
    struct scheduler_sink sink = {
        .ctx = &b, .bind = sink_bind, .bound = sink_bound, .evict = preemption ? sink_evict : NULL};
    struct kc_error err = {{0}};
    int opened = scheduler_open(&s, &cfg, b.plugin_dir, &sink, NULL, &err);
    config_free(&defaults); /* scheduler_open keeps its own copy of what it needs */
    if (opened < 0) {
        fprintf(stderr, "kcycle-bench: %s\n", err.message);
        return 1;
    }
    struct metrics *registry = NULL; /* --metrics on: recorded as the scheduler records them */
    if (with_metrics && (metrics_open(&registry) < 0 || sched_metrics_open(&s, registry) < 0))
        return 1;
    b.latency_us = calloc((size_t)b.pods * 4 + 1, sizeof(*b.latency_us));
    b.group_us = calloc((size_t)b.groups * 4 + 1, sizeof(*b.group_us));
    b.decision_us = calloc((size_t)b.groups * 4 + 1, sizeof(*b.decision_us));
    for (uint32_t i = 0; i < b.nodes; i++)
        scheduler_node_add(&s, make_node(&b, i));
    for (uint32_t i = 0; i < b.existing; i++)
        scheduler_pod_add(&s, preemption ? make_priority_pod(&b, "low", i, 900, 0)
                                         : make_pod(&b, "init", i, NULL));
    drain(&s, &b);
    uint64_t init_bound = s.stats.scheduled;

    if (gang) {
        /* every member arrives before measuring, as scheduler_perf creates its pods: a group's
         * members are held until its last one arrives */
        add_podgroups(&s, &b);
        for (uint32_t g = 0; g < b.groups; g++) {
            char prefix[32], group[32];
            snprintf(prefix, sizeof(prefix), "group-%u-member", g);
            snprintf(group, sizeof(group), "group-%u", g);
            for (uint32_t i = 0; i < b.group_size; i++)
                scheduler_pod_add(&s, make_pod(&b, prefix, i, group));
        }
    } else if (preemption && !async) {
        for (uint32_t i = 0; i < b.pods; i++)
            scheduler_pod_add(&s, make_priority_pod(&b, "high", i, 3000, 10));
    } else {
        for (uint32_t i = 0; i < b.pods; i++)
            scheduler_pod_add(&s, make_pod(&b, "measured", i, NULL));
    }
    b.measuring = true;
    int64_t cpu_start_us = cpu_us();
    b.start_us = now_us();
    b.next_churn_us = b.start_us;
    drain(&s, &b);
    int64_t elapsed_us = now_us() - b.start_us;
    int64_t cpu_used_us = cpu_us() - cpu_start_us;

    /* scheduler_perf: pods bound per interval, first interval dropped. Runs shorter than
     * 3 s use 100 ms intervals scaled to per-second rates so there is something to drop. */
    uint32_t bins_per_interval = elapsed_us >= 3000000 ? 100 : 10;
    uint32_t full = b.bin_count / bins_per_interval; /* complete intervals only */
    uint32_t *rates = calloc(full + 1, sizeof(*rates));
    uint32_t rate_count = 0;
    double scale = 100.0 / bins_per_interval;
    for (uint32_t k = 1; k < full; k++) {
        uint32_t sum = 0;
        for (uint32_t j = k * bins_per_interval; j < (k + 1) * bins_per_interval; j++)
            sum += b.bins[j];
        rates[rate_count++] = (uint32_t)(sum * scale);
    }
    double avg = 0;
    for (uint32_t k = 0; k < rate_count; k++)
        avg += rates[k];
    int64_t counted_us = b.last_bound_us > 0 ? b.last_bound_us : elapsed_us;
    avg = rate_count > 0 ? avg / rate_count : (counted_us > 0 ? b.bound * 1e6 / counted_us : 0);
    double p50 = percentile(rates, rate_count, 50), p99 = percentile(rates, rate_count, 99);
    if (rate_count == 0)
        p50 = p99 = avg;
    double lat50 = percentile(b.latency_us, b.latency_count, 50);
    double lat99 = percentile(b.latency_us, b.latency_count, 99);
    uint64_t measured = async ? b.bound : s.stats.scheduled - init_bound;
    double round_trip_us = 0;
    if (b.process)
        remote_round_trip_us(&s, 2000, &round_trip_us);
    if (gang) {
        free(rates);
        return report_gang(&s, &b, measured, elapsed_us, round_trip_us, &ipc);
    }
    if (b.json) {
        printf("{\"shape\": \"%s\", \"nodes\": %u, \"pods\": %u, \"existing_pods\": %u, "
               "\"scheduled\": %" PRIu64 ", \"pods_per_second_avg\": %.0f, "
               "\"pods_per_second_p50\": %.0f, \"pods_per_second_p99\": %.0f, "
               "\"interval_ms\": %u, \"elapsed_seconds\": %.3f, "
               "\"attempt_latency_us_p50\": %.0f, \"attempt_latency_us_p99\": %.0f, "
               "\"peak_rss_bytes\": %" PRIu64 ", \"parallel_filters\": %" PRIu64 ", "
               "\"isolation\": \"%s\", \"ipc_round_trip_us_p50\": %.1f, "
               "\"profile\": \"%s\", \"plugins\": %u, \"taint_violations\": %" PRIu64 ", "
               "\"pods_per_cpu_second\": %.0f, \"preemption_victims\": %" PRIu64 ", "
               "\"preemptors\": %u, \"attempts\": %" PRIu64 ", "
               "\"node_array_huge_page_bytes\": %" PRId64 ", \"filter_ns_per_node\": %" PRId64
               "%s}\n",
               shape, b.nodes, b.pods, b.existing, measured, avg, p50, p99, bins_per_interval * 10,
               elapsed_us / 1e6, lat50, lat99, peak_rss_bytes(), s.stats.parallel_filters,
               b.process ? "process" : "inprocess", round_trip_us,
               b.minimal_profile ? "minimal" : "default", plugin_count, b.violations,
               cpu_used_us > 0 ? (double)measured * 1e6 / (double)cpu_used_us : 0.0, b.evictions,
               async ? b.churned : (preemption ? b.pods : 0), s.stats.attempts,
               bench_huge_page_bytes(s.cache.nodes, s.cache.node_count * sizeof(*s.cache.nodes)),
               s.filter_ns_per_node, ipc_json(&ipc, &s, avg));
    } else {
        printf("%s: %u nodes, %u existing, %u measured pods: %" PRIu64 " scheduled in %.3f s\n"
               "  pods/s avg %.0f p50 %.0f p99 %.0f (%u ms intervals)\n"
               "  attempt latency p50 %.0f us p99 %.0f us; peak RSS %.1f MiB\n",
               shape, b.nodes, b.existing, b.pods, measured, elapsed_us / 1e6, avg, p50, p99,
               bins_per_interval * 10, lat50, lat99, peak_rss_bytes() / 1048576.0);
    }
    int rc = measured == b.pods && b.violations == 0 ? 0 : 1;
    if (measured != b.pods)
        fprintf(stderr, "kcycle-bench: only %" PRIu64 " of %u pods were scheduled\n", measured,
                b.pods);
    if (b.violations > 0)
        fprintf(stderr, "kcycle-bench: %" PRIu64 " pods bound to a node whose taint they do not "
                        "tolerate\n", b.violations);
    free(rates);
    if (registry != NULL)
        free(metrics_render(registry, NULL)); /* a scrape at the end, as Prometheus would */
    bench_free(&s, &b);
    metrics_close(registry);
    return rc;
}
