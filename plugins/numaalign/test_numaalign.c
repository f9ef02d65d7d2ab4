/* numaalign: the topology manager's hint merging for every policy and scope (hints.c driven
 * directly, one case per row), and the plugin on the fake host: which pods it aligns,
 * NodeResourceTopology parsing, Filter, and the zone accounting across reserve, unreserve,
 * forget, bound pods and agent reports that arrive late. The policies and scopes end to end
 * (Filter, the zones Reserve writes) and the scoring strategies run on the harness in both
 * modes (test_numaalign_harness.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"
#include "hints.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define GI (1024LL * 1024 * 1024)

/* ---- hint merging: table-driven ------------------------------------------------------------ */

enum { R_CPU, R_MEMORY, R_HUGEPAGES, R_GPU, R_COUNT };

struct merge_case {
    const char *name;
    uint32_t zones;
    int64_t cpu_per_zone;     /* total CPUs per zone (reserved included) */
    int64_t cpu_free[4];      /* free exclusive CPUs per zone */
    int64_t memory_free[4];   /* GiB; total = 64 GiB per zone */
    int64_t hugepages_free[4];/* GiB; total = hugepages_total per zone */
    int64_t hugepages_total;
    int64_t gpu[4];           /* GPUs per zone (total = free) */
    int64_t want[R_COUNT];    /* cpu, memory GiB, hugepages GiB, gpu */
    numa_policy policy;
    bool admitted;
    uint32_t mask; /* expected merged mask when admitted */
    bool preferred;
};

#define FREE2(a, b) {a, b, 0, 0}
#define FREE4(a, b, c, d) {a, b, c, d}
#define ALL16_2 FREE2(16, 16)
#define ALL16_4 FREE4(16, 16, 16, 16)
#define MEM2 FREE2(64, 64)
#define MEM4 FREE4(64, 64, 64, 64)

static const struct merge_case merge_cases[] = {
    {"single_small_cpu_takes_zone_0", 2, 16, ALL16_2, MEM2, {0}, 0, {0}, {4, 0, 0, 0},
     NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x1, true},
    {"single_cpu_larger_than_a_zone_is_rejected", 2, 16, ALL16_2, MEM2, {0}, 0, {0},
     {20, 0, 0, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, false, 0, false},
    {"restricted_cpu_larger_than_a_zone_spans_two_preferred", 2, 16, ALL16_2, MEM2, {0}, 0, {0},
     {20, 0, 0, 0}, NUMA_POLICY_RESTRICTED, true, 0x3, true},
    {"best_effort_cpu_larger_than_a_zone_spans_two_preferred", 2, 16, ALL16_2, MEM2, {0}, 0,
     {0}, {20, 0, 0, 0}, NUMA_POLICY_BEST_EFFORT, true, 0x3, true},
    {"single_skips_a_full_zone", 2, 16, FREE2(2, 16), MEM2, {0}, 0, {0}, {4, 0, 0, 0},
     NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x2, true},
    {"single_split_free_cpus_rejected", 2, 16, FREE2(8, 8), MEM2, {0}, 0, {0}, {10, 0, 0, 0},
     NUMA_POLICY_SINGLE_NUMA_NODE, false, 0, false},
    {"restricted_split_free_cpus_rejected_non_preferred", 2, 16, FREE2(8, 8), MEM2, {0}, 0, {0},
     {10, 0, 0, 0}, NUMA_POLICY_RESTRICTED, false, 0, false},
    {"best_effort_split_free_cpus_admitted_non_preferred", 2, 16, FREE2(8, 8), MEM2, {0}, 0,
     {0}, {10, 0, 0, 0}, NUMA_POLICY_BEST_EFFORT, true, 0x3, false},
    {"single_cpu_follows_the_gpu_zone", 2, 16, ALL16_2, MEM2, {0}, 0, FREE2(0, 1), {4, 0, 0, 1},
     NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x2, true},
    {"single_gpu_zone_without_cpus_rejected", 2, 16, FREE2(16, 2), MEM2, {0}, 0, FREE2(0, 1),
     {4, 0, 0, 1}, NUMA_POLICY_SINGLE_NUMA_NODE, false, 0, false},
    {"restricted_gpu_zone_without_cpus_rejected", 2, 16, FREE2(16, 2), MEM2, {0}, 0,
     FREE2(0, 1), {4, 0, 0, 1}, NUMA_POLICY_RESTRICTED, false, 0, false},
    {"best_effort_gpu_zone_without_cpus_narrowest_non_preferred", 2, 16, FREE2(16, 2), MEM2,
     {0}, 0, FREE2(0, 1), {4, 0, 0, 1}, NUMA_POLICY_BEST_EFFORT, true, 0x1, false},
    {"single_memory_and_hugepages_merge_jointly", 2, 16, ALL16_2, MEM2, FREE2(0, 4), 4, {0},
     {2, 8, 2, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x2, true},
    {"single_memory_on_one_zone_hugepages_on_other_rejected", 2, 16, ALL16_2, FREE2(64, 4),
     FREE2(0, 4), 4, {0}, {2, 8, 2, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, false, 0, false},
    {"single_nothing_aligned_is_any_zone_preferred", 2, 16, ALL16_2, MEM2, {0}, 0, {0},
     {0, 0, 0, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x3, true},
    {"single_gpu_pair_on_one_zone", 2, 16, ALL16_2, MEM2, {0}, 0, FREE2(0, 2), {2, 0, 0, 2},
     NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x2, true},
    {"restricted_four_zones_needs_three_lowest_first", 4, 16, ALL16_4, MEM4, {0}, 0, {0},
     {40, 0, 0, 0}, NUMA_POLICY_RESTRICTED, true, 0x7, true},
    {"restricted_four_zones_skips_full_zone_0", 4, 16, FREE4(0, 16, 16, 16), MEM4, {0}, 0, {0},
     {40, 0, 0, 0}, NUMA_POLICY_RESTRICTED, true, 0xe, true},
    {"single_four_zones_first_free_zone", 4, 16, FREE4(0, 3, 16, 16), MEM4, {0}, 0, {0},
     {8, 0, 0, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x4, true},
    {"single_four_zones_ties_go_to_lowest_zone", 4, 16, ALL16_4, MEM4, {0}, 0, {0},
     {4, 0, 0, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x1, true},
    {"single_one_zone_node_admits_what_fits", 1, 16, {16}, {64}, {0}, 0, {0}, {8, 0, 0, 0},
     NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x1, true},
    {"restricted_more_gpus_than_the_node_has_rejected", 2, 16, ALL16_2, MEM2, {0}, 0,
     FREE2(1, 0), {2, 0, 0, 2}, NUMA_POLICY_RESTRICTED, false, 0, false},
    {"best_effort_more_gpus_than_the_node_has_admitted", 2, 16, ALL16_2, MEM2, {0}, 0,
     FREE2(1, 0), {2, 0, 0, 2}, NUMA_POLICY_BEST_EFFORT, true, 0x1, false},
    /* the CPU manager measures the narrowest mask on all CPUs, reserved ones included: 15 CPUs
     * "could" fit one zone of 16, so the two-zone hint is not preferred */
    {"restricted_reserved_cpus_make_two_zones_non_preferred", 2, 16, FREE2(14, 14), MEM2, {0},
     0, {0}, {15, 0, 0, 0}, NUMA_POLICY_RESTRICTED, false, 0, false},
    /* a merged hint is preferred only when the providers' preferred masks are equal: {0,1}
     * and {0,2} AND to {0}, but that permutation is not preferred; {0,1} twice is */
    {"restricted_two_zone_hints_of_two_providers_meet_on_an_equal_mask", 4, 16, ALL16_4, MEM4,
     {0}, 0, FREE4(1, 1, 1, 1), {20, 0, 0, 2}, NUMA_POLICY_RESTRICTED, true, 0x3, true},
    {"single_cpu_and_gpu_and_memory_all_on_zone_1", 2, 16, FREE2(1, 16), FREE2(2, 64), {0}, 0,
     FREE2(1, 1), {4, 16, 0, 1}, NUMA_POLICY_SINGLE_NUMA_NODE, true, 0x2, true},
    {"none_policy_admits_anything", 2, 16, FREE2(0, 0), MEM2, {0}, 0, {0}, {4, 0, 0, 0},
     NUMA_POLICY_NONE, true, 0x3, false},
    /* memory's preferred {0,1} and the CPUs' preferred {0} AND to {0}, not preferred: the
     * kubelet finds no preferred permutation and rejects with TopologyAffinityError */
    {"restricted_memory_larger_than_a_zone_and_cpus_of_one_zone_rejected", 2, 16, ALL16_2, MEM2,
     {0}, 0, {0}, {2, 100, 0, 0}, NUMA_POLICY_RESTRICTED, false, 0, false},
    /* best-effort: among non-preferred masks the one with as many zones as the widest
     * provider's narrowest hint (memory's two), not the narrowest */
    {"best_effort_non_preferred_takes_the_widest_providers_zone_count", 2, 16, ALL16_2, MEM2,
     {0}, 0, {0}, {2, 100, 0, 0}, NUMA_POLICY_BEST_EFFORT, true, 0x3, false},
    /* four zones: 20 CPUs prefer two zones, the one GPU is in zone 0 and prefers {0}; no
     * permutation is preferred; {0} and two-zone masks are reached ({0,1} from CPUs {0,1,2}
     * and the GPU's {0,1}), and two zones (the CPUs' narrowest) is the count to aim for: the
     * lowest two-zone mask {0,1}, not the narrower {0} */
    {"best_effort_non_preferred_prefers_the_target_count_over_fewer_zones", 4, 16,
     FREE4(4, 4, 16, 16), MEM4, {0}, 0, FREE4(1, 0, 0, 0), {20, 0, 0, 1},
     NUMA_POLICY_BEST_EFFORT, true, 0x3, false},
    {"restricted_memory_alone_larger_than_a_zone_spans_two", 2, 16, ALL16_2, MEM2, {0}, 0, {0},
     {0, 100, 0, 0}, NUMA_POLICY_RESTRICTED, true, 0x3, true},
    {"single_memory_alone_larger_than_a_zone_rejected", 2, 16, ALL16_2, MEM2, {0}, 0, {0},
     {0, 100, 0, 0}, NUMA_POLICY_SINGLE_NUMA_NODE, false, 0, false},
};

static void build_zones(const struct merge_case *c, struct numa_zones *z)
{
    memset(z, 0, sizeof(*z));
    z->zone_count = c->zones;
    z->resource_count = R_COUNT;
    z->kind[R_CPU] = NUMA_KIND_CPU;
    z->kind[R_MEMORY] = NUMA_KIND_MEMORY;
    z->kind[R_HUGEPAGES] = NUMA_KIND_MEMORY;
    z->kind[R_GPU] = NUMA_KIND_DEVICE;
    for (uint32_t i = 0; i < c->zones; i++) {
        z->total[R_CPU][i] = c->cpu_per_zone;
        z->free[R_CPU][i] = c->cpu_free[i];
        z->total[R_MEMORY][i] = 64 * GI;
        z->free[R_MEMORY][i] = c->memory_free[i] * GI;
        z->total[R_HUGEPAGES][i] = c->hugepages_total * GI;
        z->free[R_HUGEPAGES][i] = c->hugepages_free[i] * GI;
        z->total[R_GPU][i] = z->free[R_GPU][i] = c->gpu[i];
    }
}

static void merge_case_runs(void **state)
{
    const struct merge_case *c = *state;
    struct numa_zones z;
    build_zones(c, &z);
    int64_t amount[NUMA_MAX_RESOURCES] = {c->want[R_CPU], c->want[R_MEMORY] * GI,
                                          c->want[R_HUGEPAGES] * GI, c->want[R_GPU]};
    struct numa_hint hint = numa_merge(&z, amount, c->policy);
    assert_int_equal(numa_admits(c->policy, hint), c->admitted);
    if (c->admitted && c->policy != NUMA_POLICY_NONE) {
        assert_int_equal(hint.mask, c->mask);
        assert_int_equal(hint.preferred, c->preferred);
    }
}

static void take_fills_hint_zones_lowest_first_then_others(void **state)
{
    struct merge_case c = {.zones = 4, .cpu_per_zone = 16, .cpu_free = {16, 4, 16, 16}};
    struct numa_zones z;
    build_zones(&c, &z);
    int64_t amount[NUMA_MAX_RESOURCES] = {10};
    int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES] = {{0}};
    /* hint {1,3}: zone 1 gives its 4, zone 3 the other 6 */
    assert_int_equal(numa_take(&z, amount, 0xa, charge), 0xa);
    assert_int_equal(charge[R_CPU][1], 4);
    assert_int_equal(charge[R_CPU][3], 6);
    assert_int_equal(z.free[R_CPU][3], 10);
    /* best-effort overflow: hint {1} is empty now, the rest comes from zone 0 */
    int64_t more[NUMA_MAX_RESOURCES] = {3};
    int64_t charge2[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES] = {{0}};
    assert_int_equal(numa_take(&z, more, 0x2, charge2), 0x1);
    assert_int_equal(charge2[R_CPU][0], 3);
}

/* The one-pass single-numa-node merge equals the general walk on random nodes and requests. */
static void single_numa_node_fast_path_equals_the_general_merge(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 5000; round++) {
        struct numa_zones z;
        memset(&z, 0, sizeof(z));
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        z.zone_count = 1 + (uint32_t)(seed >> 60) % 4;
        z.resource_count = R_COUNT;
        z.kind[R_CPU] = NUMA_KIND_CPU;
        z.kind[R_MEMORY] = z.kind[R_HUGEPAGES] = NUMA_KIND_MEMORY;
        z.kind[R_GPU] = NUMA_KIND_DEVICE;
        int64_t amount[NUMA_MAX_RESOURCES] = {0};
        for (uint32_t r = 0; r < R_COUNT; r++) {
            for (uint32_t i = 0; i < z.zone_count; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                z.total[r][i] = (int64_t)(seed >> 59);      /* 0..31 */
                z.free[r][i] = (int64_t)((seed >> 40) % 33) % (z.total[r][i] + 1);
            }
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            amount[r] = (seed >> 62) == 0 ? 0 : (int64_t)(seed >> 58) % 24;
        }
        struct numa_hint fast = numa_merge(&z, amount, NUMA_POLICY_SINGLE_NUMA_NODE);
        struct numa_hint slow = numa_merge_permutations(&z, amount, NUMA_POLICY_SINGLE_NUMA_NODE);
        assert_int_equal(fast.preferred, slow.preferred);
        if (fast.preferred)
            assert_int_equal(fast.mask, slow.mask);
    }
}

/* ---- an independent kubelet walk: explicit hint lists and every permutation --------------- */

struct walk_hint {
    uint32_t mask; /* 0: no affinity (nil) */
    bool preferred;
};

struct walk_list {
    uint32_t count;
    struct walk_hint hints[256];
};

/* One provider's hints written out as the managers list them, for the resources in slots. */
static void walk_generate(const struct numa_zones *z, const int64_t *amount, const uint32_t *slots,
                          uint32_t n, struct walk_list *out)
{
    uint32_t limit = 1u << z->zone_count, min_count = z->zone_count;
    out->count = 0;
    for (uint32_t mask = 1; mask < limit; mask++) {
        bool holds = true;
        for (uint32_t i = 0; i < n; i++) {
            int64_t total = 0;
            for (uint32_t zone = 0; zone < z->zone_count; zone++)
                total += mask >> zone & 1 ? z->total[slots[i]][zone] : 0;
            holds = holds && total >= amount[slots[i]];
        }
        if (holds && (uint32_t)__builtin_popcount(mask) < min_count)
            min_count = (uint32_t)__builtin_popcount(mask);
    }
    for (uint32_t mask = 1; mask < limit; mask++) {
        bool fits = true;
        for (uint32_t i = 0; i < n; i++) {
            int64_t free_amount = 0;
            for (uint32_t zone = 0; zone < z->zone_count; zone++)
                free_amount += mask >> zone & 1 ? z->free[slots[i]][zone] : 0;
            fits = fits && free_amount >= amount[slots[i]];
        }
        if (fits)
            out->hints[out->count++] =
                (struct walk_hint){mask, (uint32_t)__builtin_popcount(mask) == min_count};
    }
    if (out->count == 0)
        out->hints[out->count++] = (struct walk_hint){0, false}; /* no possible affinity */
}

struct walk {
    struct walk_list lists[NUMA_MAX_RESOURCES];
    uint32_t list_count, all, best_count;
    struct walk_hint chosen[NUMA_MAX_RESOURCES];
    bool have_best;
    struct walk_hint best;
};

static bool walk_narrower(uint32_t a, uint32_t b)
{
    int ca = __builtin_popcount(a), cb = __builtin_popcount(b);
    return ca != cb ? ca < cb : a < b;
}

/* HintMerger.compare, case by case. */
static struct walk_hint walk_compare(const struct walk *w, struct walk_hint current,
                                     struct walk_hint candidate)
{
    uint32_t cur = (uint32_t)__builtin_popcount(current.mask);
    uint32_t cand = (uint32_t)__builtin_popcount(candidate.mask), b = w->best_count;
    if (current.preferred != candidate.preferred)
        return current.preferred ? current : candidate;
    bool fitter = candidate.mask != current.mask && walk_narrower(candidate.mask, current.mask);
    if (current.preferred || cur > b)
        return fitter ? candidate : current;
    if (cur == b)
        return cand == b && fitter ? candidate : current;
    if (cand > b)
        return current;
    if (cand == b)
        return candidate;
    if (cand != cur)
        return cand > cur ? candidate : current;
    return fitter ? candidate : current;
}

static void walk_permutations(struct walk *w, uint32_t i)
{
    if (i == w->list_count) {
        struct walk_hint merged = {w->all, true};
        uint32_t first = 0;
        for (uint32_t k = 0; k < w->list_count; k++) {
            struct walk_hint h = w->chosen[k];
            if (h.mask != 0) {
                merged.mask &= h.mask;
                if (first == 0)
                    first = h.mask;
                merged.preferred = merged.preferred && h.mask == first;
            }
            merged.preferred = merged.preferred && h.preferred;
        }
        if (merged.mask == 0)
            return;
        w->best = w->have_best ? walk_compare(w, w->best, merged) : merged;
        w->have_best = true;
        return;
    }
    for (uint32_t j = 0; j < w->lists[i].count; j++) {
        w->chosen[i] = w->lists[i].hints[j];
        walk_permutations(w, i + 1);
    }
}

static struct numa_hint kubelet_walk(const struct numa_zones *z, const int64_t *amount,
                                     numa_policy policy)
{
    static struct walk w;
    memset(&w, 0, sizeof(w));
    w.all = (1u << z->zone_count) - 1;
    uint32_t memory[NUMA_MAX_RESOURCES], memory_count = 0;
    for (uint32_t r = 0; r < z->resource_count; r++)
        if (z->kind[r] == NUMA_KIND_MEMORY && amount[r] > 0)
            memory[memory_count++] = r;
    for (uint32_t r = 0; r < z->resource_count; r++) {
        if (amount[r] <= 0)
            continue;
        if (z->kind[r] == NUMA_KIND_MEMORY)
            walk_generate(z, amount, memory, memory_count, &w.lists[w.list_count++]);
        else
            walk_generate(z, amount, &r, 1, &w.lists[w.list_count++]);
    }
    for (uint32_t i = 0; policy == NUMA_POLICY_SINGLE_NUMA_NODE && i < w.list_count; i++) {
        struct walk_list *l = &w.lists[i];
        uint32_t kept = 0;
        for (uint32_t j = 0; j < l->count; j++)
            if (l->hints[j].preferred && __builtin_popcount(l->hints[j].mask) <= 1)
                l->hints[kept++] = l->hints[j];
        l->count = kept;
    }
    for (uint32_t i = 0; i < w.list_count; i++) {
        uint32_t narrowest = 0;
        for (uint32_t j = 0; j < w.lists[i].count; j++)
            if (w.lists[i].hints[j].mask != 0 &&
                (narrowest == 0 || walk_narrower(w.lists[i].hints[j].mask, narrowest)))
                narrowest = w.lists[i].hints[j].mask;
        if ((uint32_t)__builtin_popcount(narrowest) > w.best_count)
            w.best_count = (uint32_t)__builtin_popcount(narrowest);
    }
    walk_permutations(&w, 0);
    if (!w.have_best)
        return (struct numa_hint){w.all, false};
    return (struct numa_hint){w.best.mask, w.best.preferred};
}

/* numa_merge equals the kubelet's walk over every permutation, for every policy, on random
 * nodes and requests (the walk is written here from the kubelet's policy.go, not from
 * hints.c). */
static void merge_equals_the_kubelet_walk(void **state)
{
    uint64_t seed = 0x2545f4914f6cdd1dull;
    static const numa_policy policies[] = {NUMA_POLICY_BEST_EFFORT, NUMA_POLICY_RESTRICTED,
                                           NUMA_POLICY_SINGLE_NUMA_NODE};
    for (int round = 0; round < 3000; round++) {
        struct numa_zones z;
        memset(&z, 0, sizeof(z));
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        z.zone_count = 1 + (uint32_t)(seed >> 60) % 4;
        z.resource_count = R_COUNT;
        z.kind[R_CPU] = NUMA_KIND_CPU;
        z.kind[R_MEMORY] = z.kind[R_HUGEPAGES] = NUMA_KIND_MEMORY;
        z.kind[R_GPU] = NUMA_KIND_DEVICE;
        int64_t amount[NUMA_MAX_RESOURCES] = {0};
        for (uint32_t r = 0; r < R_COUNT; r++) {
            for (uint32_t i = 0; i < z.zone_count; i++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                z.total[r][i] = (int64_t)(seed >> 59);
                z.free[r][i] = (int64_t)((seed >> 40) % 33) % (z.total[r][i] + 1);
            }
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            amount[r] = (seed >> 62) == 0 ? 0 : (int64_t)(seed >> 58) % 40;
        }
        numa_policy policy = policies[round % 3];
        struct numa_hint got = numa_merge(&z, amount, policy);
        struct numa_hint want = kubelet_walk(&z, amount, policy);
        if (got.mask != want.mask || got.preferred != want.preferred)
            fail_msg("round %d policy %d: numaalign {%#x, %d}, kubelet {%#x, %d}", round,
                     (int)policy, got.mask, got.preferred, want.mask, want.preferred);
    }
}

/* ---- the plugin on the fake host ------------------------------------------------------------ */

static const kc_plugin_ops *ops;
static void *self;
static kc_node nodes[3];
static kc_resource gpu;

static int open_plugin(const char *args)
{
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    return ops->init(fake_host_api(), args, &self);
}

static int setup(void **state)
{
    fake_host_reset();
    assert_int_equal(open_plugin("{}"), 0);
    gpu = fake_host_api()->resource_id("nvidia.com/gpu");
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%d", i);
        fake_node_init(&nodes[i], i == 0 ? "n0" : i == 1 ? "n1" : "n2");
        fake_host_add_node(&nodes[i]);
    }
    return 0;
}

static int teardown(void **state)
{
    ops->fini(self);
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

static void object_event(kc_event_type type, const char *name, const char *json)
{
    kc_event ev = {.struct_size = sizeof(ev),
                   .type = type,
                   .object_kind = "NodeResourceTopology",
                   .object_name = name,
                   .object_json = json};
    ops->on_event(self, &ev);
}

static void pod_event(kc_event_type type, const kc_pod *pod)
{
    kc_event ev = {.struct_size = sizeof(ev), .type = type, .pod = pod};
    ops->on_event(self, &ev);
}

/* An NRT with two zones of 16 CPUs (cpu_free[] available), 64 GiB and gpus[] GPUs each. */
static void report(const char *node, const char *policy, const char *scope, int cpu0, int cpu1,
                   int gpu0, int gpu1, const char *accounted)
{
    char json[2048];
    char annotations[256] = "";
    if (accounted != NULL)
        snprintf(annotations, sizeof(annotations),
                 ", \"annotations\": {\"kcycle.io/accounted-pods\": \"%s\"}", accounted);
    snprintf(json, sizeof(json),
             "{\"apiVersion\": \"topology.node.k8s.io/v1alpha2\", \"kind\": "
             "\"NodeResourceTopology\", \"metadata\": {\"name\": \"%s\"%s},"
             " \"attributes\": [{\"name\": \"topologyManagerPolicy\", \"value\": \"%s\"},"
             "  {\"name\": \"topologyManagerScope\", \"value\": \"%s\"}],"
             " \"zones\": ["
             "  {\"name\": \"node-1\", \"type\": \"Node\", \"resources\": ["
             "   {\"name\": \"cpu\", \"capacity\": \"16\", \"allocatable\": \"16\", \"available\": \"%d\"},"
             "   {\"name\": \"memory\", \"capacity\": \"64Gi\", \"allocatable\": \"64Gi\", \"available\": \"64Gi\"},"
             "   {\"name\": \"nvidia.com/gpu\", \"capacity\": 2, \"allocatable\": 2, \"available\": %d}]},"
             "  {\"name\": \"node-0\", \"type\": \"Node\", \"resources\": ["
             "   {\"name\": \"cpu\", \"capacity\": \"16\", \"allocatable\": \"16\", \"available\": \"%d\"},"
             "   {\"name\": \"memory\", \"capacity\": \"64Gi\", \"allocatable\": \"64Gi\", \"available\": \"64Gi\"},"
             "   {\"name\": \"nvidia.com/gpu\", \"capacity\": 2, \"allocatable\": 2, \"available\": %d}]}]}",
             node, annotations, policy, scope, cpu1, gpu1, cpu0, gpu0);
    object_event(KC_EVENT_OBJECT_UPDATE, node, json);
}

/* A container requesting cpu (milli) and memory with limits equal (Guaranteed when both set). */
static void add_container(kc_pod *pod, const char *name, int64_t cpu_milli, int64_t memory,
                          bool limits, int64_t gpus)
{
    struct fake_container *c = &pod->containers[pod->container_count++];
    c->name = name;
    c->request[KC_RESOURCE_CPU] = cpu_milli;
    c->request[KC_RESOURCE_MEMORY] = memory;
    if (limits) {
        c->limit[KC_RESOURCE_CPU] = cpu_milli;
        c->limit[KC_RESOURCE_MEMORY] = memory;
    }
    c->request[gpu] = c->limit[gpu] = gpus;
    pod->request[KC_RESOURCE_CPU] += cpu_milli;
    pod->request[KC_RESOURCE_MEMORY] += memory;
    pod->request[gpu] += gpus;
}

static void guaranteed_pod(kc_pod *pod, const char *name, int cpus)
{
    fake_pod_init(pod, "default", name);
    add_container(pod, "main", cpus * 1000, 4 * GI, true, 0);
}

/* Run PreFilter and Filter on node; returns the Filter status (KC_SKIP from PreFilter). */
static kc_status filter(kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    kc_status st = ops->pre_filter(self, cycle, pod);
    if (st != KC_SUCCESS)
        return st;
    return ops->filter(self, cycle, pod, node);
}

/* PreFilter, Filter and Reserve on n0; the annotation written, or "" when none. */
static kc_status place(const kc_pod *pod, char *zones, size_t size)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status st = filter(&cycle, pod, &nodes[0]);
    if (st == KC_SUCCESS)
        st = ops->reserve(self, &cycle, pod, &nodes[0]);
    snprintf(zones, size, "%s", "");
    for (uint32_t i = 0; i < cycle.annotation_count; i++)
        if (strcmp(cycle.annotations[i].key, "kcycle.io/numa-zones") == 0)
            snprintf(zones, size, "%s", cycle.annotations[i].value);
    /* the cycle state carries the same zones for the plugins after numaalign (gpushare) */
    const char *shared = kc_host->cycle_get(&cycle, "kcycle.io/numa-zones");
    if (zones[0] != '\0')
        assert_string_equal(shared, zones);
    else
        assert_null(shared);
    fake_cycle_clear(&cycle);
    return st;
}

static void restricted_container_scope_aligns_each_container(void **state)
{
    report("n0", "restricted", "container", 16, 16, 0, 0, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "pair");
    add_container(&pod, "a", 12000, 4 * GI, true, 0);
    add_container(&pod, "b", 12000, 4 * GI, true, 0); /* 24 CPUs: one zone each */
    char zones[32];
    assert_int_equal(place(&pod, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0,1");
    kc_pod third;
    guaranteed_pod(&third, "third", 6); /* 4 + 4 left, split: restricted refuses */
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &third, &nodes[0]), KC_UNSCHEDULABLE);
    assert_int_equal(fake_cycle_reason_count(&cycle, "cannot align container"), 1);
    fake_cycle_clear(&cycle);
}

static void best_effort_pod_scope_admits_a_split_pod(void **state)
{
    report("n0", "best-effort", "pod", 8, 8, 0, 0, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "split");
    add_container(&pod, "a", 5000, GI, true, 0);
    add_container(&pod, "b", 5000, GI, true, 0); /* 10 CPUs as one pod, 8 + 8 free */
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &pod, &nodes[0]), KC_SUCCESS);
    assert_int_equal(ops->reserve(self, &cycle, &pod, &nodes[0]), KC_SUCCESS);
    const char *zones = NULL, *aligned = NULL;
    for (uint32_t i = 0; i < cycle.annotation_count; i++) {
        if (strcmp(cycle.annotations[i].key, "kcycle.io/numa-zones") == 0)
            zones = cycle.annotations[i].value;
        if (strcmp(cycle.annotations[i].key, "kcycle.io/numa-aligned") == 0)
            aligned = cycle.annotations[i].value;
    }
    assert_non_null(zones);
    assert_string_equal(zones, "0,1");
    assert_non_null(aligned);
    assert_string_equal(aligned, "false");
    fake_cycle_clear(&cycle);
}

static void burstable_pod_without_devices_is_skipped(void **state)
{
    report("n0", "single-numa-node", "container", 0, 0, 0, 0, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "burst");
    add_container(&pod, "main", 4000, 4 * GI, false, 0);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_SKIP);
    assert_int_equal(ops->pre_score(self, &cycle, &pod), KC_SKIP);
    fake_cycle_clear(&cycle);
}

static void guaranteed_fractional_cpu_aligns_memory_only(void **state)
{
    /* no free CPUs in any zone, but 1500m is not exclusive: only memory is aligned */
    report("n0", "single-numa-node", "container", 0, 0, 0, 0, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "frac");
    add_container(&pod, "main", 1500, 4 * GI, true, 0);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &pod, &nodes[0]), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

static void burstable_pod_with_gpu_aligns_the_gpu(void **state)
{
    report("n0", "single-numa-node", "container", 16, 16, 0, 1, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "gpu");
    add_container(&pod, "main", 500, GI, false, 1);
    char zones[32];
    assert_int_equal(place(&pod, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1");
    kc_pod second;
    fake_pod_init(&second, "default", "gpu2");
    add_container(&second, "main", 500, GI, false, 1);
    assert_int_equal(place(&second, zones, sizeof(zones)), KC_UNSCHEDULABLE);
}

/* PreFilter's verdict; reason_out receives the first reason (or ""). */
static kc_status pre_filter_reason(const kc_pod *pod, char *reason_out, size_t size)
{
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_status st = ops->pre_filter(self, &cycle, pod);
    snprintf(reason_out, size, "%s", cycle.reason_count > 0 ? cycle.reasons[0] : "");
    fake_cycle_clear(&cycle);
    return st;
}

static void pod_with_more_containers_than_it_aligns_is_unresolvable(void **state)
{
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, NULL);
    kc_pod pod;
    fake_pod_init(&pod, "default", "many");
    static const char *const names[] = {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"};
    for (int i = 0; i < 8; i++)
        add_container(&pod, names[i], 1000, GI, true, 0);
    char reason[256];
    assert_int_equal(pre_filter_reason(&pod, reason, sizeof(reason)), KC_SUCCESS); /* 8 fit */
    struct fake_container *setup = &pod.init_containers[pod.init_container_count++];
    *setup = (struct fake_container){.name = "setup"};
    setup->request[KC_RESOURCE_CPU] = setup->limit[KC_RESOURCE_CPU] = 1000;
    setup->request[KC_RESOURCE_MEMORY] = setup->limit[KC_RESOURCE_MEMORY] = GI;
    /* a ninth container would not be checked: the pod is refused, not half aligned */
    assert_int_equal(pre_filter_reason(&pod, reason, sizeof(reason)), KC_UNRESOLVABLE);
    assert_string_equal(reason, "9 containers (init and app together) with aligned resources: "
                                "numaalign aligns at most 8");
    /* the same pod without anything aligned is not this plugin's: skipped, not refused */
    kc_pod burst;
    fake_pod_init(&burst, "default", "many-burst");
    for (int i = 0; i < 8; i++)
        add_container(&burst, names[i], 1000, GI, false, 0);
    burst.init_containers[0] = (struct fake_container){.name = "setup"};
    burst.init_container_count = 1;
    assert_int_equal(pre_filter_reason(&burst, reason, sizeof(reason)), KC_SKIP);
}

static void pod_with_more_resources_than_it_aligns_is_unresolvable(void **state)
{
    kc_pod pod;
    fake_pod_init(&pod, "default", "devices");
    add_container(&pod, "main", 1000, GI, true, 0); /* cpu and memory: two */
    char name[32], reason[256];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof(name), "example.com/dev%d", i);
        kc_resource id = fake_host_api()->resource_id(name);
        pod.containers[0].request[id] = pod.containers[0].limit[id] = 1;
        pod.request[id] = 1;
        /* up to 8 aligned resources are read; the ninth is refused, not dropped */
        assert_int_equal(pre_filter_reason(&pod, reason, sizeof(reason)),
                         i < 6 ? KC_SUCCESS : KC_UNRESOLVABLE);
    }
    assert_string_equal(reason, "more than 8 aligned resources (cpu, memory, hugepages, devices) "
                                "in one pod: numaalign aligns at most that many");
}

static void pod_with_a_sidecar_is_refused_naming_it(void **state)
{
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, NULL);
    kc_pod pod;
    guaranteed_pod(&pod, "meshed", 2);
    struct fake_container *init = &pod.init_containers[pod.init_container_count++];
    *init = (struct fake_container){.name = "proxy", .restartable = true};
    init->request[KC_RESOURCE_CPU] = init->limit[KC_RESOURCE_CPU] = 1000;
    init->request[KC_RESOURCE_MEMORY] = init->limit[KC_RESOURCE_MEMORY] = GI;
    char reason[256];
    assert_int_equal(pre_filter_reason(&pod, reason, sizeof(reason)), KC_UNRESOLVABLE);
    assert_string_equal(reason, "init container proxy is a sidecar (restartPolicy Always): "
                                "numaalign does not align pods with sidecars");
    /* an ordinary init container is modelled: the pod is aligned */
    init->restartable = false;
    assert_int_equal(pre_filter_reason(&pod, reason, sizeof(reason)), KC_SUCCESS);
    char zones[32];
    assert_int_equal(place(&pod, zones, sizeof(zones)), KC_SUCCESS);
    /* a Burstable pod with a sidecar aligns nothing: not this plugin's pod */
    kc_pod burst;
    fake_pod_init(&burst, "default", "burst-meshed");
    add_container(&burst, "main", 1000, GI, false, 0);
    burst.init_containers[0] = (struct fake_container){.name = "proxy", .restartable = true};
    burst.init_container_count = 1;
    assert_int_equal(pre_filter_reason(&burst, reason, sizeof(reason)), KC_SKIP);
}

static void node_without_topology_or_policy_passes(void **state)
{
    kc_pod pod;
    guaranteed_pod(&pod, "any", 64);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &pod, &nodes[1]), KC_SUCCESS); /* no object at all */
    report("n2", "none", "container", 0, 0, 0, 0, NULL);
    assert_int_equal(ops->filter(self, &cycle, &pod, &nodes[2]), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

static void v1alpha1_topology_policies_are_understood(void **state)
{
    object_event(KC_EVENT_OBJECT_ADD, "n0",
                 "{\"metadata\": {\"name\": \"n0\"}, \"topologyPolicies\": "
                 "[\"SingleNUMANodePodLevel\"], \"zones\": ["
                 "{\"name\": \"node-0\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\","
                 " \"capacity\": \"8\", \"allocatable\": \"8\", \"available\": \"8\"}]},"
                 "{\"name\": \"node-1\", \"type\": \"Node\", \"resources\": [{\"name\": \"cpu\","
                 " \"capacity\": \"8\", \"allocatable\": \"8\", \"available\": \"8\"}]}]}");
    kc_pod pod;
    fake_pod_init(&pod, "default", "pair");
    add_container(&pod, "a", 5000, GI, true, 0);
    add_container(&pod, "b", 5000, GI, true, 0); /* 10 CPUs as one pod: no zone has them */
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &pod, &nodes[0]), KC_UNSCHEDULABLE);
    assert_int_equal(fake_cycle_reason_count(&cycle, "cannot align pod"), 1);
    fake_cycle_clear(&cycle);
}

static void back_to_back_reserves_never_double_count_a_zone(void **state)
{
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, NULL);
    kc_pod a, b, c;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 12);
    guaranteed_pod(&c, "c", 12);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1");
    assert_int_equal(place(&c, zones, sizeof(zones)), KC_UNSCHEDULABLE);
}

static void unreserve_releases_the_zone(void **state)
{
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, NULL);
    kc_pod a, b;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 12);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_UNSCHEDULABLE);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    ops->unreserve(self, &cycle, &a, &nodes[0]);
    ops->unreserve(self, &cycle, &a, &nodes[0]); /* idempotent */
    fake_cycle_clear(&cycle);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
}

static void forget_releases_the_zone(void **state)
{
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, NULL);
    kc_pod a, b;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 12);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    pod_event(KC_EVENT_POD_ASSUME, &a);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_UNSCHEDULABLE);
    pod_event(KC_EVENT_POD_FORGET, &a);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
}

static void late_report_without_the_pod_keeps_its_charge(void **state)
{
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, "");
    kc_pod a, b;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 12);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    /* the agent's report was taken before the kubelet admitted a: it still shows 16 free */
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, "kube-system/other");
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_UNSCHEDULABLE);
}

static void report_listing_the_pod_replaces_its_charge(void **state)
{
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, "");
    kc_pod a, b, c;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 4);
    guaranteed_pod(&c, "c", 1);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    /* the report accounts for a (4 left): the charge must not be subtracted a second time */
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, "default/a");
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_int_equal(place(&c, zones, sizeof(zones)), KC_UNSCHEDULABLE);
}

static void report_without_list_settles_after_the_grace_period(void **state)
{
    fake_host.now_ms = 1000;
    report("n0", "single-numa-node", "container", 16, 0, 0, 0, NULL);
    kc_pod a, b;
    guaranteed_pod(&a, "a", 12);
    guaranteed_pod(&b, "b", 4);
    char zones[32];
    assert_int_equal(place(&a, zones, sizeof(zones)), KC_SUCCESS);
    fake_host.now_ms = 2000; /* an NFD-style report soon after: assumed not to include a */
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, NULL);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_UNSCHEDULABLE);
    fake_host.now_ms = 1000 + 61000; /* past unlistedPodGraceSeconds (60) */
    report("n0", "single-numa-node", "container", 4, 0, 0, 0, NULL);
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
}

static void bound_pod_with_annotation_is_charged(void **state)
{
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, "");
    kc_pod bound, b;
    guaranteed_pod(&bound, "earlier", 12);
    bound.node_name = "n0";
    bound.annotations[0] = (struct fake_kv){"kcycle.io/numa-zones", "0"};
    bound.annotation_count = 1;
    pod_event(KC_EVENT_POD_ADD, &bound);
    guaranteed_pod(&b, "b", 12);
    char zones[32];
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1"); /* zone 0 is taken by the bound pod */
    pod_event(KC_EVENT_POD_DELETE, &bound);
    kc_pod c;
    guaranteed_pod(&c, "c", 12);
    assert_int_equal(place(&c, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
}

/* A pod bound before a restart, as the pod event delivers it: 12 CPUs on zone 0. */
static void bound_pod_event(kc_pod *bound)
{
    guaranteed_pod(bound, "earlier", 12);
    bound->node_name = "n0";
    bound->annotations[0] = (struct fake_kv){"kcycle.io/numa-zones", "0"};
    bound->annotation_count = 1;
    pod_event(KC_EVENT_POD_ADD, bound);
}

static void report_listing_a_bound_pod_before_its_event_does_not_charge_it(void **state)
{
    /* after a restart the report comes first: it already takes the pod's 12 CPUs off zone 0 */
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, "default/earlier");
    kc_pod bound, b;
    bound_pod_event(&bound);
    guaranteed_pod(&b, "b", 4);
    char zones[32];
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0"); /* the 4 CPUs left, not 4 - 12 */
}

static void bound_pod_event_before_its_report_is_charged_unless_listed(void **state)
{
    /* the pod's event first, before any report of its node: kept until the report comes */
    kc_pod bound, b;
    bound_pod_event(&bound);
    /* a report taken before the kubelet admitted it (listing other pods): it is charged */
    report("n0", "single-numa-node", "container", 16, 16, 0, 0, "kube-system/other");
    guaranteed_pod(&b, "b", 8);
    char zones[32];
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1"); /* zone 0 has 16 - 12 */
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    ops->unreserve(self, &cycle, &b, &nodes[0]);
    fake_cycle_clear(&cycle);
    /* the next report lists it: its charge is replaced by what the report says */
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, "default/earlier");
    kc_pod c;
    guaranteed_pod(&c, "c", 4);
    assert_int_equal(place(&c, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
}

static void bound_pod_event_before_a_report_listing_it_is_not_charged(void **state)
{
    kc_pod bound, b;
    bound_pod_event(&bound);
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, "default/earlier");
    guaranteed_pod(&b, "b", 4);
    char zones[32];
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
    /* deleting a pod still waiting for its report forgets it */
    kc_pod gone;
    guaranteed_pod(&gone, "gone", 12);
    gone.node_name = "n1";
    gone.annotations[0] = (struct fake_kv){"kcycle.io/numa-zones", "0"};
    gone.annotation_count = 1;
    pod_event(KC_EVENT_POD_ADD, &gone);
    pod_event(KC_EVENT_POD_DELETE, &gone);
    report("n1", "single-numa-node", "container", 16, 16, 0, 0, "");
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    kc_pod big;
    guaranteed_pod(&big, "big", 16);
    assert_int_equal(filter(&cycle, &big, &nodes[1]), KC_SUCCESS); /* zone 0 whole again */
    fake_cycle_clear(&cycle);
}

static void unlisted_charge_ends_after_the_grace_period_without_a_new_report(void **state)
{
    /* an agent without pod lists; its report already includes the bound pod, and re-PUTs of
     * the unchanged object produce no event */
    fake_host.now_ms = 1000;
    report("n0", "single-numa-node", "container", 4, 16, 0, 0, NULL);
    kc_pod bound, b;
    bound_pod_event(&bound);
    guaranteed_pod(&b, "b", 4);
    char zones[32];
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1"); /* within the grace period the charge holds */
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    ops->unreserve(self, &cycle, &b, &nodes[0]);
    fake_cycle_clear(&cycle);
    fake_host.now_ms = 1000 + 60000; /* unlistedPodGraceSeconds (60) later, no report since */
    assert_int_equal(place(&b, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "0");
}

static void deleting_the_topology_stops_filtering(void **state)
{
    report("n0", "single-numa-node", "container", 0, 0, 0, 0, NULL);
    kc_pod pod;
    guaranteed_pod(&pod, "p", 4);
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(filter(&cycle, &pod, &nodes[0]), KC_UNSCHEDULABLE);
    object_event(KC_EVENT_OBJECT_DELETE, "n0", NULL);
    assert_int_equal(ops->filter(self, &cycle, &pod, &nodes[0]), KC_SUCCESS);
    fake_cycle_clear(&cycle);
}

/* 8 zones of cpu, memory and GPUs: more than the packed view holds, read from the node. */
static void eight_zone_node_is_read_whole(void **state)
{
    char json[8192];
    size_t used = (size_t)snprintf(json, sizeof(json),
                                   "{\"metadata\": {\"name\": \"n0\"}, \"attributes\": [{\"name\": "
                                   "\"topologyManagerPolicy\", \"value\": \"single-numa-node\"}], "
                                   "\"zones\": [");
    for (int z = 0; z < 8; z++)
        used += (size_t)snprintf(json + used, sizeof(json) - used,
                                 "%s{\"name\": \"node-%d\", \"type\": \"Node\", \"resources\": ["
                                 "{\"name\": \"cpu\", \"capacity\": 8, \"available\": %d},"
                                 "{\"name\": \"memory\", \"capacity\": \"16Gi\"},"
                                 "{\"name\": \"nvidia.com/gpu\", \"capacity\": 1, "
                                 "\"available\": %d}]}",
                                 z > 0 ? "," : "", z, z == 6 ? 2 : 8, z >= 5 ? 1 : 0);
    snprintf(json + used, sizeof(json) - used, "]}");
    object_event(KC_EVENT_OBJECT_ADD, "n0", json);
    kc_pod pod;
    fake_pod_init(&pod, "default", "gpu");
    add_container(&pod, "main", 4000, 4 * GI, true, 1); /* zone 5 and 7 have room for all */
    char zones[32];
    assert_int_equal(place(&pod, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "5");
    kc_pod second, third;
    fake_pod_init(&second, "default", "gpu2");
    add_container(&second, "main", 4000, 4 * GI, true, 1);
    assert_int_equal(place(&second, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "7"); /* zone 6 has the GPU but only 2 CPUs */
    fake_pod_init(&third, "default", "gpu3");
    add_container(&third, "main", 4000, 4 * GI, true, 1);
    assert_int_equal(place(&third, zones, sizeof(zones)), KC_UNSCHEDULABLE);
}

static void zone_ids_come_from_zone_names(void **state)
{
    /* zones listed node-1 first: the annotation still names the kubelet's NUMA ids */
    report("n0", "single-numa-node", "container", 2, 16, 0, 0, NULL);
    kc_pod pod;
    guaranteed_pod(&pod, "p", 4);
    char zones[32];
    assert_int_equal(place(&pod, zones, sizeof(zones)), KC_SUCCESS);
    assert_string_equal(zones, "1");
}

#define MERGE_CASE(i) {merge_cases[i].name, merge_case_runs, NULL, NULL, (void *)&merge_cases[i]}
#define PLUGIN_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    struct CMUnitTest merge_tests[sizeof(merge_cases) / sizeof(merge_cases[0]) + 3];
    size_t count = sizeof(merge_cases) / sizeof(merge_cases[0]);
    for (size_t i = 0; i < count; i++)
        merge_tests[i] = (struct CMUnitTest)MERGE_CASE(i);
    merge_tests[count] =
        (struct CMUnitTest)cmocka_unit_test(take_fills_hint_zones_lowest_first_then_others);
    merge_tests[count + 1] =
        (struct CMUnitTest)cmocka_unit_test(single_numa_node_fast_path_equals_the_general_merge);
    merge_tests[count + 2] = (struct CMUnitTest)cmocka_unit_test(merge_equals_the_kubelet_walk);
    const struct CMUnitTest plugin_tests[] = {
        PLUGIN_TEST(restricted_container_scope_aligns_each_container),
        PLUGIN_TEST(best_effort_pod_scope_admits_a_split_pod),
        PLUGIN_TEST(burstable_pod_without_devices_is_skipped),
        PLUGIN_TEST(guaranteed_fractional_cpu_aligns_memory_only),
        PLUGIN_TEST(burstable_pod_with_gpu_aligns_the_gpu),
        PLUGIN_TEST(node_without_topology_or_policy_passes),
        PLUGIN_TEST(pod_with_more_containers_than_it_aligns_is_unresolvable),
        PLUGIN_TEST(pod_with_more_resources_than_it_aligns_is_unresolvable),
        PLUGIN_TEST(pod_with_a_sidecar_is_refused_naming_it),
        PLUGIN_TEST(v1alpha1_topology_policies_are_understood),
        PLUGIN_TEST(back_to_back_reserves_never_double_count_a_zone),
        PLUGIN_TEST(unreserve_releases_the_zone),
        PLUGIN_TEST(forget_releases_the_zone),
        PLUGIN_TEST(late_report_without_the_pod_keeps_its_charge),
        PLUGIN_TEST(report_listing_the_pod_replaces_its_charge),
        PLUGIN_TEST(report_without_list_settles_after_the_grace_period),
        PLUGIN_TEST(bound_pod_with_annotation_is_charged),
        PLUGIN_TEST(report_listing_a_bound_pod_before_its_event_does_not_charge_it),
        PLUGIN_TEST(bound_pod_event_before_its_report_is_charged_unless_listed),
        PLUGIN_TEST(bound_pod_event_before_a_report_listing_it_is_not_charged),
        PLUGIN_TEST(unlisted_charge_ends_after_the_grace_period_without_a_new_report),
        PLUGIN_TEST(deleting_the_topology_stops_filtering),
        PLUGIN_TEST(zone_ids_come_from_zone_names),
        PLUGIN_TEST(eight_zone_node_is_read_whole),
    };
    int failed = _cmocka_run_group_tests("numaalign_hints", merge_tests, count + 3, NULL, NULL);
    failed += cmocka_run_group_tests_name("numaalign_plugin", plugin_tests, NULL, group_teardown);
    return failed;
}
