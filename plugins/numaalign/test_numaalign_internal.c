/* numaalign's internal functions, called directly: the topology manager's hint merging
 * (hints.c) for every policy, one case per row, numa_take's fill order, the single-numa-node
 * fast path against the general merge, and the merge against an independent walk of the
 * kubelet's permutations. No host: hints.c is pure. The plugin through its phases runs on the
 * harness in both modes (test_numaalign_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hints.h"

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

#define MERGE_CASE(i) {merge_cases[i].name, merge_case_runs, NULL, NULL, (void *)&merge_cases[i]}

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
    return _cmocka_run_group_tests("numaalign_hints", merge_tests, count + 3, NULL, NULL);
}
