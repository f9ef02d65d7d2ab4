/* gpushare's internal functions that need a pod or the plugin's ledger, on the fake host of
 * tests/support: request_parse taking the longest selection value whole (it reads the pod
 * through the host API; the refusals are PreFilter's, on the harness), and the ledger's
 * invariants under 10,000 random Reserve, Unreserve, assume, forget, delete and update
 * operations and for MIG items outside a card (gpushare_ledger
 * exposes the ledger only to tests). The pure parsers and tables run without a host in
 * test_gpushare_internal.c; the plugin through its phases runs on the harness in both modes
 * (test_gpushare_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "gpushare.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static const kc_plugin_ops *ops;
static void *self;

static int open_plugin(const char *args)
{
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    return ops->init(fake_host_api(), args, &self);
}

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    assert_int_equal(open_plugin("{}"), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

static void node_with(kc_node *node, const char *name, const char *key, const char *value)
{
    fake_node_init(node, name);
    node->annotations[0].key = key;
    node->annotations[0].value = value;
    node->annotation_count = 1;
}

static void node_event(kc_event_type type, const kc_node *node)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .node = node};
    ops->on_event(self, &ev);
}

static void pod_event(kc_event_type type, const kc_pod *pod)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod};
    ops->on_event(self, &ev);
}

static void set_limit(kc_pod *pod, uint32_t container, const char *resource, int64_t value)
{
    kc_resource id = kc_host->resource_id(resource);
    pod->containers[container].limit[id] = value;
    pod->request[id] += value;
    if (pod->container_count <= container)
        pod->container_count = container + 1;
    if (pod->containers[container].name == NULL)
        pod->containers[container].name = container == 0 ? "main" : "side";
}

/* One container asking for cards, MiB per card (or a percentage), and cores. */
static void gpu_pod(kc_pod *pod, const char *name, int64_t cards, int64_t memory, int64_t percent,
                    int64_t cores)
{
    fake_pod_init(pod, "ml", name);
    pod->containers[0].name = "main";
    pod->container_count = 1;
    if (cards > 0)
        set_limit(pod, 0, "nvidia.com/gpu", cards);
    if (memory > 0)
        set_limit(pod, 0, "nvidia.com/gpumem", memory);
    if (percent > 0)
        set_limit(pod, 0, "nvidia.com/gpumem-percentage", percent);
    if (cores > 0)
        set_limit(pod, 0, "nvidia.com/gpucores", cores);
}

static void add_annotation(kc_pod *pod, const char *key, const char *value)
{
    pod->annotations[pod->annotation_count].key = key;
    pod->annotations[pod->annotation_count++].value = value;
}


static const char *annotation_of(const kc_cycle *cycle, const char *key)
{
    for (uint32_t i = 0; i < cycle->annotation_count; i++) {
        if (strcmp(cycle->annotations[i].key, key) == 0)
            return cycle->annotations[i].value;
    }
    return NULL;
}

/* PreFilter, Filter and Reserve on one node; the cycle keeps the reasons and annotations. */
static kc_status place(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    fake_cycle_init(cycle);
    kc_status status = ops->pre_filter(self, cycle, pod);
    if (status != KC_SUCCESS)
        return status;
    status = ops->filter(self, cycle, pod, node);
    if (status != KC_SUCCESS)
        return status;
    return ops->reserve(self, cycle, pod, node);
}

/* Requests ------------------------------------------------------------------------------ */

/* request_parse holds a selection list whole or refuses it (the refusals, whole reasons and
 * all, are PreFilter's on the harness: test_gpushare_harness.c); what only a direct call shows
 * is that the longest value that fits is taken whole, not cut. */
static void the_longest_selection_value_is_taken_whole(void **state)
{
    (void)state;
    static char longest[512];
    memset(longest, 'x', sizeof(longest) - 1);
    kc_pod pod;
    gpu_pod(&pod, "p", 1, 1024, 0, 0);
    add_annotation(&pod, "nvidia.com/nouse-gpuuuid", longest);
    struct pod_request request;
    char reason[GPU_REASON_LEN] = "";
    assert_int_equal(request_parse(&pod, POLICY_BINPACK, &request, reason, sizeof(reason)), 0);
    assert_int_equal(strlen(request.nouse_uuid), 511);
    assert_string_equal(request.nouse_uuid, longest);
}

/* Ledger -------------------------------------------------------------------------------- */

/* Whether a charge on node holding card is recorded but not counted. */
static bool charge_left_out(const struct ledger *ledger, const char *node, const char *card)
{
    for (uint32_t c = 0; c < ledger->charge_buckets; c++) {
        for (const struct charge *charge = ledger->charges[c]; charge != NULL;
             charge = charge->next) {
            if (charge->applied || strcmp(charge->node, node) != 0)
                continue;
            for (uint32_t k = 0; k < charge->count; k++) {
                if (strcmp(charge->items[k].uuid, card) == 0)
                    return true;
            }
        }
    }
    return false;
}

/* Usage recomputed from the live charges must equal the ledger's counters, no card may be
 * over its memory, cores, users or slices, and a card a charge left uncounted takes no pod. */
static void check_ledger(const struct ledger *ledger)
{
    char why[256];
    if (!ledger_consistent(ledger, why, sizeof(why)))
        fail_msg("over-committed: %s", why);
    for (uint32_t b = 0; b < ledger->node_buckets; b++) {
        for (const struct gpu_node *node = ledger->nodes[b]; node != NULL; node = node->next) {
            for (uint32_t i = 0; i < node->card_count; i++) {
                const struct card *card = &node->cards[i];
                int64_t memory = 0;
                int32_t users = 0;
                uint8_t mask = 0;
                for (uint32_t c = 0; c < ledger->charge_buckets; c++) {
                    for (const struct charge *charge = ledger->charges[c]; charge != NULL;
                         charge = charge->next) {
                        if (!charge->applied || strcmp(charge->node, node->name) != 0)
                            continue;
                        for (uint32_t k = 0; k < charge->count; k++) {
                            if (strcmp(charge->items[k].uuid, card->uuid) != 0)
                                continue;
                            memory += charge->items[k].memory_mib;
                            users++;
                            if (charge->items[k].mig_start >= 0) {
                                uint8_t bits = (uint8_t)(((1u << charge->items[k].mig_slots) - 1u)
                                                         << charge->items[k].mig_start);
                                assert_int_equal(mask & bits, 0);
                                mask |= bits;
                            }
                        }
                    }
                }
                assert_int_equal(memory, card->used.memory_mib);
                assert_int_equal(users, card->used.users);
                assert_int_equal(mask, card->used.mig_mask);
                if (charge_left_out(ledger, node->name, card->uuid))
                    assert_true(card->overcommitted);
            }
        }
    }
}

static uint64_t rng_state = 88172645463325252ULL;

static uint32_t rng(uint32_t bound)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % bound);
}

#define RANDOM_NODES 4
#define RANDOM_PODS 48
#define RANDOM_OPERATIONS 10000

static void ledger_never_overcommits_under_10000_random_operations(void **state)
{
    (void)state;
    static const char *const layouts[] = {
        "[{\"count\": 4, \"memory\": 40960, \"split\": 4}]",
        "[{\"count\": 2, \"memory\": 40960, \"split\": 4}, {\"memory\": 40960, \"mode\": \"mig\","
        " \"model\": \"A100-40GB\"}]",
        "[{\"count\": 3, \"memory\": 20480, \"split\": 2}]",
    };
    static char node_names[RANDOM_NODES][8], pod_names[RANDOM_PODS][8];
    kc_node nodes[RANDOM_NODES];
    for (int n = 0; n < RANDOM_NODES; n++) {
        snprintf(node_names[n], sizeof(node_names[n]), "n%d", n);
        node_with(&nodes[n], node_names[n], "kcycle.io/gpus", layouts[n % 2]);
        node_event(KC_EVENT_NODE_ADD, &nodes[n]);
    }
    static kc_pod pods[RANDOM_PODS];
    for (int p = 0; p < RANDOM_PODS; p++) {
        snprintf(pod_names[p], sizeof(pod_names[p]), "p%d", p);
        gpu_pod(&pods[p], pod_names[p], 1, 0, 0, 0);
    }
    /* decision annotations of earlier placements, replayed as bound pods (a restart, a stale
     * replica): one that conflicts with what is charged now is kept uncounted, its cards
     * marked over-committed */
    static char saved[RANDOM_PODS][1024];
    static char saved_node[RANDOM_PODS][8];
    uint32_t placed = 0, overcommitted = 0, adopted = 0;
    const struct ledger *ledger = gpushare_ledger(self);
    for (int op = 0; op < RANDOM_OPERATIONS; op++) {
        uint32_t p = rng(RANDOM_PODS), n = rng(RANDOM_NODES), what = rng(10);
        kc_pod *pod = &pods[p];
        snprintf(pod_names[p], sizeof(pod_names[p]), "p%u", p);
        if (what < 5) { /* assume: Reserve on a random node */
            switch (rng(4)) {
            case 0: gpu_pod(pod, pod_names[p], 1, 0, 0, 0); break;
            case 1: gpu_pod(pod, pod_names[p], 1 + rng(2), 1024 * (1 + rng(30)), 0, rng(60)); break;
            case 2: gpu_pod(pod, pod_names[p], 1, 0, 25 * (1 + rng(4)), 25); break;
            default:
                gpu_pod(pod, pod_names[p], 0, 0, 0, 0);
                set_limit(pod, 0, rng(2) ? "nvidia.com/mig-1g.5gb" : "nvidia.com/mig-3g.20gb", 1);
            }
            kc_cycle cycle;
            kc_status status = place(&cycle, pod, &nodes[n]);
            if (status == KC_SUCCESS) {
                placed++;
                snprintf(saved[p], sizeof(saved[p]), "%s",
                         annotation_of(&cycle, "kcycle.io/gpu-assignment"));
                snprintf(saved_node[p], sizeof(saved_node[p]), "%s", node_names[n]);
            }
            fake_cycle_clear(&cycle);
        } else if (what < 6) { /* forget (or unreserve) */
            kc_cycle cycle;
            fake_cycle_init(&cycle);
            if (rng(2))
                pod_event(KC_EVENT_POD_FORGET, pod);
            else
                ops->unreserve(self, &cycle, pod, &nodes[n]);
        } else if (what < 7) { /* delete */
            pod_event(KC_EVENT_POD_DELETE, pod);
        } else if (what < 9) { /* a bound pod seen with an old decision */
            if (saved[p][0] == '\0')
                continue;
            kc_pod bound;
            fake_pod_init(&bound, "ml", pod_names[p]);
            bound.node_name = saved_node[p];
            add_annotation(&bound, "kcycle.io/gpu-assignment", saved[p]);
            const struct charge *before = ledger_charge_of(ledger, pod_names[p]);
            pod_event(KC_EVENT_POD_UPDATE, &bound);
            const struct charge *after = ledger_charge_of(ledger, pod_names[p]);
            assert_true(before != NULL || after != NULL);
            adopted += before == NULL && after->applied;
            overcommitted += before == NULL && !after->applied;
        } else { /* the node's inventory changes (cards come and go) */
            nodes[n].annotations[0].value = layouts[rng(3)];
            node_event(KC_EVENT_NODE_UPDATE, &nodes[n]);
        }
        check_ledger(ledger);
    }
    print_message("random ledger: %u placements, %u adopted, %u adopted over-committed\n",
                  placed, adopted, overcommitted);
    assert_true(placed > 500);
    assert_true(adopted > 100);
    assert_true(overcommitted > 10);
}


/* A MIG item whose slices do not fit the card is refused before its mask is computed: a
 * shift of 32 or more is undefined in C (the sanitizer build catches it). */
static void ledger_refuses_mig_items_outside_the_card(void **state)
{
    (void)state;
    kc_node node;
    node_with(&node, "h100", "kcycle.io/gpus",
              "[{\"memory\": 81920, \"model\": \"NVIDIA-H100-80GB-HBM3\", \"mode\": \"mig\","
              " \"uuid\": \"GPU-h\"}]");
    node_event(KC_EVENT_NODE_ADD, &node);
    struct ledger *ledger = (struct ledger *)gpushare_ledger(self);
    static const struct {
        int8_t start;
        uint8_t slots;
    } outside[] = {{0, 40}, {0, 32}, {7, 2}, {0, 9}};
    struct charge charge;
    for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
        memset(&charge, 0, sizeof(charge));
        snprintf(charge.uid, sizeof(charge.uid), "mig-%zu", i);
        snprintf(charge.node, sizeof(charge.node), "h100");
        charge.count = 1;
        snprintf(charge.items[0].uuid, GPU_UUID_LEN, "GPU-h");
        charge.items[0].mig_start = outside[i].start;
        charge.items[0].mig_slots = outside[i].slots;
        assert_int_equal(ledger_charge(ledger, &charge), -28);
        assert_int_equal(ledger_node(ledger, "h100")->cards[0].used.mig_mask, 0);
    }
    memset(&charge, 0, sizeof(charge));
    snprintf(charge.uid, sizeof(charge.uid), "mig-ok");
    snprintf(charge.node, sizeof(charge.node), "h100");
    charge.count = 1;
    snprintf(charge.items[0].uuid, GPU_UUID_LEN, "GPU-h");
    charge.items[0].mig_start = 0;
    charge.items[0].mig_slots = 8;
    assert_int_equal(ledger_charge(ledger, &charge), 0);
    assert_int_equal(ledger_node(ledger, "h100")->cards[0].used.mig_mask, 0xff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_longest_selection_value_is_taken_whole, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(ledger_never_overcommits_under_10000_random_operations,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(ledger_refuses_mig_items_outside_the_card, setup,
                                        teardown),
    };
    return cmocka_run_group_tests_name("gpushare_requests_and_ledger", tests, NULL,
                                       group_teardown);
}
