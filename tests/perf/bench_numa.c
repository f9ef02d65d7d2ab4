/* kcycle-bench --shape numa: 5,000 nodes of 2 and 4 NUMA zones (hwloc synthetic, their
 * NodeResourceTopology built by the topology agent's code) under single-numa-node, Guaranteed
 * pods of 1 to 6 whole CPUs, scheduled with numaalign. Besides throughput it counts misaligned
 * placements with a ledger of its own: a placement is misaligned when its binding names no
 * zone, more than one zone, or a zone whose CPUs the placements before it already used up.
 * SchedulingBasic runs in the same invocation (child processes between the rounds) for the
 * ratio. */
#include "bench_numa.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "model.h"
#include "topology.h"

#define NUMA_SHAPES 2
#define MAX_ZONES 4

static const char *const synthetic[NUMA_SHAPES] = {
    "pack:2 numa:1(memory=64GiB) core:8 pu:2", /* 2 zones of 16 CPUs */
    "pack:2 numa:2(memory=32GiB) core:4 pu:2", /* 4 zones of 8 CPUs */
};

struct numa_bench {
    uint32_t nodes, pods;
    int64_t start_us;
    uint64_t bound, misaligned, annotated;
    int64_t (*zone_used)[MAX_ZONES];     /* per node: CPUs placed per zone */
    int64_t zone_cpus[NUMA_SHAPES][MAX_ZONES];
    uint32_t zone_count[NUMA_SHAPES];
};

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The ledger: charge the pod's CPUs to the one zone its binding names. */
static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    struct numa_bench *b = ctx;
    uint32_t index = (uint32_t)strtoul(node + 5, NULL, 10); /* "node-<i>" */
    uint32_t shape = index % NUMA_SHAPES;
    const char *zones = kv_list_get(annotations, "kcycle.io/numa-zones");
    int64_t cpus = res_list_get(&pod->request, KC_RESOURCE_CPU) / 1000;
    char *end = NULL;
    long zone = zones != NULL ? strtol(zones, &end, 10) : -1;
    b->annotated += zones != NULL;
    if (zones == NULL || end == zones || *end != '\0' || zone < 0 ||
        zone >= (long)b->zone_count[shape] || index >= b->nodes) {
        b->misaligned++;
        return 0;
    }
    b->zone_used[index][zone] += cpus;
    if (b->zone_used[index][zone] > b->zone_cpus[shape][zone])
        b->misaligned++;
    return 0;
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    ((struct numa_bench *)ctx)->bound++;
}

static struct pod *guaranteed_pod(uint32_t i)
{
    static const int cpus[] = {1, 2, 4, 6, 2, 1, 3, 4};
    struct pod *p = pod_new();
    char name[48];
    snprintf(name, sizeof(name), "numa-%u", i);
    p->name = strdup(name);
    p->namespace = strdup("bench");
    p->uid = strdup(name);
    p->scheduler_name = strdup("kcycle");
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("c");
    int64_t cpu = cpus[i % 8] * 1000LL, memory = cpus[i % 8] * (2LL << 30);
    for (int limits = 0; limits <= 1; limits++) {
        struct res_list *list = limits ? &p->containers[0].limits : &p->containers[0].requests;
        res_list_set(list, KC_RESOURCE_CPU, cpu);
        res_list_set(list, KC_RESOURCE_MEMORY, memory);
    }
    pod_finish(p);
    return p;
}

static int add_nodes(struct scheduler *s, struct numa_bench *b)
{
    struct topology_machine *machines = calloc(NUMA_SHAPES, sizeof(*machines));
    char error[256];
    for (uint32_t k = 0; k < NUMA_SHAPES; k++) {
        if (machines == NULL ||
            topology_discover(synthetic[k], NULL, NULL, 0, &machines[k], error, sizeof(error)) <
                0) {
            fprintf(stderr, "kcycle-bench: %s\n", machines == NULL ? "out of memory" : error);
            free(machines);
            return -1;
        }
        b->zone_count[k] = machines[k].zone_count;
        for (uint32_t z = 0; z < machines[k].zone_count && z < MAX_ZONES; z++)
            b->zone_cpus[k][z] = machines[k].zones[z].cpu_count;
    }
    for (uint32_t i = 0; i < b->nodes; i++) {
        const struct topology_machine *m = &machines[i % NUMA_SHAPES];
        struct topology_totals totals;
        topology_totals(m, NULL, &totals);
        struct node *n = node_new();
        char name[32];
        snprintf(name, sizeof(name), "node-%u", i);
        n->name = strdup(name);
        n->uid = strdup(name);
        res_list_set(&n->allocatable, KC_RESOURCE_CPU, totals.cpu_milli);
        res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, totals.memory);
        res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
        scheduler_node_add(s, n);
        /* an empty accounted list, as the simulator publishes: charges last the whole run */
        struct topology_options opt = {.node_name = name, .policy = "single-numa-node",
                                       .scope = "container", .accounted_pods = ""};
        json_t *nrt = topology_nrt(m, &opt);
        char *json = json_dumps(nrt, JSON_COMPACT);
        scheduler_object_event(s, KC_EVENT_OBJECT_ADD, "NodeResourceTopology", NULL, name, json);
        free(json);
        json_decref(nrt);
    }
    free(machines);
    return 0;
}

/* SchedulingBasic's average pods/s from a child run of this same binary, with the same
 * --parallelism. */
static double basic_pods_per_second(const struct bench_numa_options *o)
{
    char command[2048];
    snprintf(command, sizeof(command), "'%s' --shape scheduling-basic --json --parallelism %d%s%s%s",
             o->self, (int)o->parallelism, o->plugin_dir != NULL ? " --plugin-dir '" : "",
             o->plugin_dir != NULL ? o->plugin_dir : "", o->plugin_dir != NULL ? "'" : "");
    FILE *child = popen(command, "r");
    char line[4096] = "";
    double rate = 0;
    if (child == NULL)
        return 0;
    if (fgets(line, sizeof(line), child) != NULL) {
        const char *at = strstr(line, "\"pods_per_second_avg\": ");
        if (at != NULL)
            rate = strtod(at + strlen("\"pods_per_second_avg\": "), NULL);
    }
    pclose(child);
    return rate;
}

/* One measured run: a fresh scheduler, the cluster, the pods, scheduled to the end. */
struct numa_round {
    double rate, seconds, basic, ratio;
    uint64_t bound, misaligned, annotated, parallel_filters;
};

static int run_round(const struct bench_numa_options *o, struct numa_round *out)
{
    static struct plugin_config plugins[] = {
        {.name = "prioritysort", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "noderesources", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "numaalign", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "defaultbinder", .weight = 1, .required = true, .args_json = "{}"},
    };
    struct config cfg = {
        .scheduler_name = "kcycle",
        .plugins = plugins,
        .plugin_count = 4,
        .seed = o->seed,
        .parallelism = o->parallelism,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
        .plugin_timeout_ms = 5000,
    };
    struct numa_bench b = {.nodes = o->nodes, .pods = o->pods};
    b.zone_used = calloc(b.nodes + 1, sizeof(*b.zone_used));
    struct scheduler s;
    struct scheduler_sink sink = {.ctx = &b, .bind = sink_bind, .bound = sink_bound};
    struct kc_error err = {{0}};
    if (b.zone_used == NULL || scheduler_open(&s, &cfg, o->plugin_dir, &sink, NULL, &err) < 0) {
        fprintf(stderr, "kcycle-bench: %s\n", err.message);
        free(b.zone_used);
        return -1;
    }
    if (add_nodes(&s, &b) < 0) {
        scheduler_close(&s);
        free(b.zone_used);
        return -1;
    }
    for (uint32_t i = 0; i < b.pods; i++)
        scheduler_pod_add(&s, guaranteed_pod(i));
    b.start_us = now_us();
    for (;;) {
        int rc = scheduler_schedule_one(&s);
        scheduler_tick(&s);
        if (rc <= 0 && !scheduler_busy(&s))
            break;
    }
    out->seconds = (now_us() - b.start_us) / 1e6;
    out->rate = out->seconds > 0 ? b.bound / out->seconds : 0;
    out->bound = b.bound;
    out->misaligned = b.misaligned;
    out->annotated = b.annotated;
    out->parallel_filters = s.stats.parallel_filters;
    scheduler_close(&s);
    free(b.zone_used);
    return 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const struct numa_round *rounds, uint32_t count, size_t offset)
{
    double values[BENCH_NUMA_MAX_ROUNDS];
    for (uint32_t i = 0; i < count; i++)
        values[i] = *(const double *)((const char *)&rounds[i] + offset);
    qsort(values, count, sizeof(values[0]), compare_double);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

/* Rounds of NUMA between runs of SchedulingBasic (B N B N B ...): each round's ratio is to the
 * mean of the two basic runs around it, and the medians are reported, because the load of a
 * shared machine drifts within seconds. */
int bench_numa(const struct bench_numa_options *o)
{
    uint32_t count = o->rounds < 1 ? 1 : o->rounds > BENCH_NUMA_MAX_ROUNDS ? BENCH_NUMA_MAX_ROUNDS
                                                                          : o->rounds;
    struct numa_round rounds[BENCH_NUMA_MAX_ROUNDS];
    double basic = basic_pods_per_second(o);
    uint64_t misaligned = 0, annotated = 0, bound = 0;
    for (uint32_t r = 0; r < count; r++) {
        if (run_round(o, &rounds[r]) < 0)
            return 1;
        double after = basic_pods_per_second(o);
        rounds[r].basic = (basic + after) / 2;
        rounds[r].ratio = rounds[r].basic > 0 ? rounds[r].rate / rounds[r].basic : 0;
        basic = after;
        misaligned += rounds[r].misaligned;
        annotated += rounds[r].annotated;
        bound += rounds[r].bound;
    }
    printf("{\"shape\": \"numa\", \"nodes\": %u, \"pods\": %u, \"rounds\": %u, "
           "\"scheduled\": %" PRIu64 ", \"pods_per_second_avg\": %.0f, \"misaligned\": %" PRIu64
           ", \"annotated\": %" PRIu64 ", \"scheduling_basic_pods_per_second_avg\": %.0f, "
           "\"ratio_to_scheduling_basic\": %.2f, \"per_round\": [",
           o->nodes, o->pods, count, bound, median(rounds, count, offsetof(struct numa_round, rate)),
           misaligned, annotated, median(rounds, count, offsetof(struct numa_round, basic)),
           median(rounds, count, offsetof(struct numa_round, ratio)));
    for (uint32_t r = 0; r < count; r++)
        printf("%s{\"pods_per_second\": %.0f, \"scheduling_basic\": %.0f, \"ratio\": %.2f, "
               "\"elapsed_seconds\": %.3f, \"parallel_filters\": %" PRIu64 "}",
               r > 0 ? ", " : "", rounds[r].rate, rounds[r].basic, rounds[r].ratio,
               rounds[r].seconds, rounds[r].parallel_filters);
    printf("]}\n");
    int rc = bound == (uint64_t)o->pods * count && misaligned == 0 ? 0 : 1;
    if (rc != 0)
        fprintf(stderr, "kcycle-bench: numa: %" PRIu64 " of %u scheduled, %" PRIu64
                " misaligned\n", bound, o->pods * count, misaligned);
    return rc;
}
