/* kcycle-bench --shape gpu: the fragmentation trace of gpushare's tests (200 nodes of eight
 * 80 GB cards, whole, half, quarter and small pods that also finish) through the real
 * scheduler with the shipped plugins, once with gpushare's fragmentation-aware score and once
 * with its first-fit baseline (first node, first card). Each pod is scheduled as it arrives
 * until the first one fits nowhere; the figures come from the decision annotations on the
 * bindings, counted here card by card, not from the plugin. */
#include "bench_gpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "gpu_trace.h"
#include "model.h"
#include "resource_table.h"
#include "scheduler.h"
#include "sim_gpu.h"

#define MAX_PODS 40000

struct card_account {
    int64_t memory_mib;
    int32_t cores;
    int32_t users;
};

struct gpu_run {
    const char *label;
    uint32_t placed, departed;
    int64_t unallocated_mib;
    uint32_t whole_free, partly_used;
    const char *failed_kind;
    char failed_reason[512];
    double schedule_seconds;
    bool overcommitted;
    struct card_account cards[GPU_TRACE_NODES][GPU_TRACE_CARDS];
    char *decisions[MAX_PODS];
    int decision_node[MAX_PODS];
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct account_step {
    struct gpu_run *run;
    int node;
    int sign;
};

static void account_card(void *ctx, int index, int64_t memory_mib, int cores)
{
    const struct account_step *step = ctx;
    struct gpu_run *run = step->run;
    if (index < 0 || index >= GPU_TRACE_CARDS) {
        run->overcommitted = true; /* a card the node does not have */
        return;
    }
    struct card_account *a = &run->cards[step->node][index];
    a->memory_mib += step->sign * memory_mib;
    a->cores += step->sign * cores;
    a->users += step->sign;
    if (a->memory_mib > GPU_TRACE_CARD_MIB || a->cores > 100 || a->users > GPU_TRACE_SPLIT ||
        a->memory_mib < 0 || a->users < 0)
        run->overcommitted = true;
}

static void account(struct gpu_run *run, int node, const char *assignment, int sign)
{
    struct account_step step = {run, node, sign};
    if (sim_gpu_assignment_cards(assignment, account_card, &step) != 0)
        run->overcommitted = true;
}

/* The binding: charge the cards its decision names. */
static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    struct gpu_run *run = ctx;
    const char *decision = kv_list_get(annotations, "kcycle.io/gpu-assignment");
    unsigned index = 0, node_index = 0;
    if (decision == NULL || sscanf(pod->name, "gpu-pod-%u", &index) != 1 ||
        sscanf(node, "gpu-%u", &node_index) != 1 || index >= MAX_PODS ||
        node_index >= GPU_TRACE_NODES) {
        run->overcommitted = true; /* a GPU pod bound without its decision */
        return 0;
    }
    account(run, (int)node_index, decision, 1);
    run->decisions[index] = strdup(decision);
    run->decision_node[index] = (int)node_index;
    return 0;
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    (void)ctx, (void)pod, (void)node;
}

static struct node *make_node(uint32_t i, const char *inventory)
{
    struct node *n = node_new();
    char name[32];
    snprintf(name, sizeof(name), "gpu-%03u", i);
    n->name = strdup(name);
    res_list_set(&n->allocatable, KC_RESOURCE_CPU, GPU_TRACE_NODE_CPU);
    res_list_set(&n->allocatable, KC_RESOURCE_MEMORY, 1024ll << 30);
    res_list_set(&n->allocatable, KC_RESOURCE_PODS, 110);
    /* what HAMi's device plugin advertises: cards times the sharing count */
    res_list_set(&n->allocatable, resource_intern("nvidia.com/gpu"),
                 GPU_TRACE_CARDS * GPU_TRACE_SPLIT);
    kv_list_set(&n->annotations, "kcycle.io/gpus", inventory);
    return n;
}

static struct pod *make_pod(uint32_t i, const struct gpu_trace_pod *shape)
{
    struct pod *p = pod_new();
    char name[48];
    snprintf(name, sizeof(name), "gpu-pod-%u", i);
    p->name = strdup(name);
    p->namespace = strdup("bench");
    p->scheduler_name = strdup("kcycle");
    p->containers = calloc(1, sizeof(*p->containers));
    p->container_count = 1;
    p->containers[0].name = strdup("main");
    struct res_list *requests = &p->containers[0].requests;
    res_list_set(requests, KC_RESOURCE_CPU, shape->cpu_milli);
    if (shape->cards > 0)
        res_list_set(requests, resource_intern("nvidia.com/gpu"), shape->cards);
    if (shape->memory_mib > 0)
        res_list_set(requests, resource_intern("nvidia.com/gpumem"), shape->memory_mib);
    if (shape->percent > 0)
        res_list_set(requests, resource_intern("nvidia.com/gpumem-percentage"), shape->percent);
    if (shape->cores > 0)
        res_list_set(requests, resource_intern("nvidia.com/gpucores"), shape->cores);
    pod_finish(p);
    return p;
}

static void drain(struct scheduler *s)
{
    for (;;) {
        int rc = scheduler_schedule_one(s);
        scheduler_tick(s);
        if (rc <= 0 && !scheduler_busy(s))
            break;
    }
}

static int run_trace(struct gpu_run *run, const char *gpushare_args, const char *plugin_dir,
                     uint64_t seed)
{
    /* HAMi's memory and core resources are not node resources: NodeResourcesFit ignores
     * them, as HAMi's own scheduler configuration does */
    static struct plugin_config plugins[4] = {
        {.name = "prioritysort", .weight = 1, .required = true, .args_json = "{}"},
        {.name = "noderesources",
         .weight = 1,
         .required = true,
         .args_json = "{\"ignoredResources\": [\"nvidia.com/gpumem\", "
                      "\"nvidia.com/gpumem-percentage\", \"nvidia.com/gpucores\"]}"},
        {.name = "gpushare", .weight = 1000, .required = true},
        {.name = "defaultbinder", .weight = 1, .required = true, .args_json = "{}"},
    };
    static char args[256];
    snprintf(args, sizeof(args), "%s", gpushare_args);
    plugins[2].args_json = args;
    struct config cfg = {
        .scheduler_name = "kcycle",
        .plugins = plugins,
        .plugin_count = 4,
        .seed = seed,
        .pod_initial_backoff_ms = 1000,
        .pod_max_backoff_ms = 10000,
        .unschedulable_flush_ms = 300000,
        .plugin_timeout_ms = 5000,
    };
    struct scheduler s;
    struct scheduler_sink sink = {.ctx = run, .bind = sink_bind, .bound = sink_bound};
    struct kc_error err = {{0}};
    if (scheduler_open(&s, &cfg, plugin_dir, &sink, NULL, &err) < 0) {
        fprintf(stderr, "kcycle-bench: %s\n", err.message);
        return 1;
    }
    char inventory[160];
    snprintf(
        inventory, sizeof(inventory),
        "[{\"count\": %d, \"memory\": %d, \"split\": %d, \"model\": \"NVIDIA-A100-SXM4-80GB\"}]",
        GPU_TRACE_CARDS, GPU_TRACE_CARD_MIB, GPU_TRACE_SPLIT);
    for (uint32_t n = 0; n < GPU_TRACE_NODES; n++)
        scheduler_node_add(&s, make_node(n, inventory));
    static int32_t leaving_head[MAX_PODS + 1], leaving_next[MAX_PODS];
    for (uint32_t i = 0; i <= MAX_PODS; i++)
        leaving_head[i] = -1;
    struct gpu_trace trace;
    gpu_trace_init(&trace, GPU_TRACE_SEED);
    int64_t spent = 0;
    for (uint32_t i = 0; i < MAX_PODS; i++) {
        for (int32_t p = leaving_head[i]; p >= 0; p = leaving_next[p]) {
            char uid[64];
            snprintf(uid, sizeof(uid), "bench/gpu-pod-%d", p);
            scheduler_pod_delete(&s, uid);
            account(run, run->decision_node[p], run->decisions[p], -1);
            free(run->decisions[p]);
            run->decisions[p] = NULL;
            run->departed++;
        }
        struct gpu_trace_pod shape = gpu_trace_next(&trace);
        uint32_t lifetime = gpu_trace_next_u32(&trace, GPU_TRACE_LIFETIME);
        scheduler_pod_add(&s, make_pod(i, &shape));
        int64_t started = now_ns();
        drain(&s);
        spent += now_ns() - started;
        char uid[64];
        snprintf(uid, sizeof(uid), "bench/gpu-pod-%u", i);
        const char *node = NULL, *reason = NULL;
        if (scheduler_pod_status(&s, uid, &node, &reason) != 1) {
            run->failed_kind = shape.kind;
            snprintf(run->failed_reason, sizeof(run->failed_reason), "%s",
                     reason != NULL ? reason : "");
            break;
        }
        run->placed++;
        uint32_t leaves = i + 1 + lifetime;
        if (leaves < MAX_PODS) {
            leaving_next[i] = leaving_head[leaves];
            leaving_head[leaves] = (int32_t)i;
        }
    }
    run->schedule_seconds = (double)spent / 1e9;
    for (int n = 0; n < GPU_TRACE_NODES; n++) {
        for (int c = 0; c < GPU_TRACE_CARDS; c++) {
            const struct card_account *a = &run->cards[n][c];
            run->unallocated_mib += GPU_TRACE_CARD_MIB - a->memory_mib;
            run->whole_free += a->users == 0;
            run->partly_used += a->users > 0 && a->memory_mib < GPU_TRACE_CARD_MIB;
        }
    }
    for (uint32_t i = 0; i < MAX_PODS; i++)
        free(run->decisions[i]);
    scheduler_close(&s);
    return 0;
}

static void print_run(const struct gpu_run *run, bool json, bool last)
{
    double pods_per_second = run->schedule_seconds > 0 ? run->placed / run->schedule_seconds : 0;
    if (json) {
        json_t *reason = json_string(run->failed_reason);
        char *text = json_dumps(reason, JSON_ENCODE_ANY);
        printf("\"%s\": {\"pods_placed\": %u, \"pods_running\": %u, \"pods_per_second\": %.0f, "
               "\"gpu_memory_unallocated_mib\": %" PRId64 ", \"whole_cards_free\": %u, "
               "\"cards_partly_used\": %u, \"first_refused\": \"%s\", \"reason\": %s}%s",
               run->label, run->placed, run->placed - run->departed, pods_per_second,
               run->unallocated_mib, run->whole_free, run->partly_used,
               run->failed_kind != NULL ? run->failed_kind : "none", text, last ? "" : ", ");
        free(text);
        json_decref(reason);
    } else {
        printf("  %-10s %u pods placed (%u running) at %.0f pods/s; GPU memory unallocated "
               "%.1f GiB; whole cards free %u; cards partly used %u; first refused: %s (%s)\n",
               run->label, run->placed, run->placed - run->departed, pods_per_second,
               run->unallocated_mib / 1024.0, run->whole_free, run->partly_used,
               run->failed_kind != NULL ? run->failed_kind : "none", run->failed_reason);
    }
}

int bench_gpu(const char *plugin_dir, bool json, uint64_t seed)
{
    struct gpu_run *aware = calloc(1, sizeof(*aware));
    struct gpu_run *first = calloc(1, sizeof(*first));
    if (aware == NULL || first == NULL)
        return 1;
    aware->label = "kcycle";
    first->label = "first_fit";
    int rc = run_trace(aware, "{}", plugin_dir, seed);
    if (rc == 0)
        rc = run_trace(first, "{\"cardPolicy\": \"FirstFit\"}", plugin_dir, seed);
    if (rc == 0) {
        double ratio = first->unallocated_mib > 0
                           ? (double)aware->unallocated_mib / (double)first->unallocated_mib
                           : 0.0;
        if (json) {
            printf("{\"shape\": \"gpu\", \"nodes\": %d, \"cards_per_node\": %d, \"card_mib\": "
                   "%d, \"trace_seed\": %u, ",
                   GPU_TRACE_NODES, GPU_TRACE_CARDS, GPU_TRACE_CARD_MIB, GPU_TRACE_SEED);
            print_run(aware, true, false);
            print_run(first, true, false);
            printf("\"unallocated_ratio\": %.3f, \"overcommitted\": %s}\n", ratio,
                   aware->overcommitted || first->overcommitted ? "true" : "false");
        } else {
            printf("gpu: %d nodes x %d cards of %d MiB, pods until the first fits nowhere\n",
                   GPU_TRACE_NODES, GPU_TRACE_CARDS, GPU_TRACE_CARD_MIB);
            print_run(aware, false, false);
            print_run(first, false, true);
            printf("  kcycle leaves %.2f of first-fit's unallocated GPU memory\n", ratio);
        }
        if (aware->overcommitted || first->overcommitted) {
            fprintf(stderr, "kcycle-bench: a card was over-committed\n");
            rc = 1;
        }
    }
    free(aware);
    free(first);
    return rc;
}
