/* Topology manager hint generation and merging over zone masks. The kubelet merges the cross
 * product of every provider's hint list; here each step keeps only the set of distinct masks
 * reached so far and the set still preferred (256-bit sets), which gives the same best hint
 * without the exponential walk: two zones cost a handful of operations, eight a few thousand. */
#include "hints.h"

#include <string.h>

/* A set of masks over at most NUMA_MAX_ZONES zones (256 values). */
struct mask_set {
    uint64_t bits[4];
};

static void set_add(struct mask_set *s, uint32_t mask)
{
    s->bits[mask >> 6] |= 1ull << (mask & 63);
}

static bool set_has(const struct mask_set *s, uint32_t mask)
{
    return (s->bits[mask >> 6] >> (mask & 63)) & 1;
}

static bool set_empty(const struct mask_set *s)
{
    return (s->bits[0] | s->bits[1] | s->bits[2] | s->bits[3]) == 0;
}

/* Every AND of a member of a with a member of b, zero dropped (a zero mask never recovers). */
static void set_and_into(struct mask_set *out, const struct mask_set *a, const struct mask_set *b,
                         uint32_t limit)
{
    for (uint32_t x = 1; x < limit; x++) {
        if (!set_has(a, x))
            continue;
        for (uint32_t y = 1; y < limit; y++)
            if (set_has(b, y) && (x & y) != 0)
                set_add(out, x & y);
    }
}

static uint32_t popcount(uint32_t x)
{
    return (uint32_t)__builtin_popcount(x);
}

/* The kubelet's bitmask order: fewer zones first, then the numerically lower mask. */
static bool narrower(uint32_t a, uint32_t b)
{
    return popcount(a) != popcount(b) ? popcount(a) < popcount(b) : a < b;
}

/* One provider's hint list as sets: feasible masks and the preferred ones among them. */
struct hint_list {
    struct mask_set feasible, preferred;
};

/* Hints for the resources of slots[0..count): a mask is feasible when every one of them fits in
 * the mask's free amounts; preferred when it has as few zones as the narrowest mask whose totals
 * could ever hold the request (the managers' minAffinitySize). */
static void generate(const struct numa_zones *z, const int64_t *amount, const uint32_t *slots,
                     uint32_t count, struct hint_list *out)
{
    memset(out, 0, sizeof(*out));
    uint32_t limit = numa_all_zones(z) + 1, min_size = z->zone_count;
    for (uint32_t mask = 1; mask < limit; mask++) {
        bool holds = true, fits = true;
        for (uint32_t i = 0; i < count; i++) {
            uint32_t r = slots[i];
            int64_t total = 0, free_amount = 0;
            for (uint32_t zone = 0; zone < z->zone_count; zone++)
                if (mask & (1u << zone)) {
                    total += z->total[r][zone];
                    free_amount += z->free[r][zone];
                }
            holds = holds && total >= amount[r];
            fits = fits && free_amount >= amount[r];
        }
        if (holds && popcount(mask) < min_size)
            min_size = popcount(mask);
        if (fits)
            set_add(&out->feasible, mask);
    }
    for (uint32_t mask = 1; mask < limit; mask++)
        if (set_has(&out->feasible, mask) && popcount(mask) == min_size)
            set_add(&out->preferred, mask);
}

/* single-numa-node keeps only preferred one-zone hints (and "don't care"). */
static void keep_single_zone(struct hint_list *list, uint32_t limit)
{
    struct mask_set single = {{0}};
    for (uint32_t mask = 1; mask < limit; mask++)
        if (set_has(&list->preferred, mask) && popcount(mask) == 1)
            set_add(&single, mask);
    list->preferred = single;
    list->feasible = single;
}

/* The permutations crossed so far. The kubelet marks a permutation preferred only when every
 * hint in it is preferred and all their masks are equal (a provider with no preference has no
 * mask), so the preferred results are the masks every provider so far lists as preferred. */
struct merge_state {
    bool open;                 /* no provider has given a mask yet: "don't care" */
    struct mask_set preferred; /* masks every provider so far prefers (when !open) */
    struct mask_set reached;   /* every non-zero AND of one hint per provider */
    uint32_t best_count;       /* BestNonPreferredAffinityCount: max of each list's narrowest */
    uint32_t limit;
};

/* Cross one more provider list into the reached masks. An empty list has no permutation at all
 * under single-numa-node (its hints were filtered away); otherwise the kubelet replaces it by
 * one non-preferred "any zone" hint, which keeps every mask but no preference. */
static void merge_list(struct merge_state *st, const struct hint_list *list, bool single)
{
    if (set_empty(&list->feasible)) {
        memset(&st->preferred, 0, sizeof(st->preferred));
        st->open = false;
        if (single)
            memset(&st->reached, 0, sizeof(st->reached));
        return;
    }
    uint32_t narrowest_count = 32;
    for (uint32_t mask = 1; mask < st->limit; mask++)
        if (set_has(&list->feasible, mask) && popcount(mask) < narrowest_count)
            narrowest_count = popcount(mask);
    if (narrowest_count > st->best_count)
        st->best_count = narrowest_count;
    if (st->open) {
        st->preferred = list->preferred;
    } else {
        for (int i = 0; i < 4; i++)
            st->preferred.bits[i] &= list->preferred.bits[i];
    }
    st->open = false;
    struct mask_set next = {{0}};
    set_and_into(&next, &st->reached, &list->feasible, st->limit);
    st->reached = next;
}

static uint32_t narrowest(const struct mask_set *s, uint32_t limit)
{
    uint32_t best = 0;
    for (uint32_t mask = 1; mask < limit; mask++)
        if (set_has(s, mask) && (best == 0 || narrower(mask, best)))
            best = mask;
    return best;
}

/* The kubelet's choice among non-preferred results (HintMerger.compare): a mask of exactly
 * best_count zones first, then the widest below it, then the narrowest above it; equal counts
 * go to the numerically lower mask. Its pairwise rules form this total order, so the order in
 * which permutations are visited does not matter. */
static bool closer(uint32_t a, uint32_t b, uint32_t best_count)
{
    uint32_t ca = popcount(a), cb = popcount(b);
    int rank_a = ca == best_count ? 0 : ca < best_count ? 1 : 2;
    int rank_b = cb == best_count ? 0 : cb < best_count ? 1 : 2;
    if (rank_a != rank_b)
        return rank_a < rank_b;
    if (ca != cb)
        return rank_a == 1 ? ca > cb : ca < cb;
    return a < b;
}

static uint32_t closest(const struct mask_set *s, uint32_t limit, uint32_t best_count)
{
    uint32_t best = 0;
    for (uint32_t mask = 1; mask < limit; mask++)
        if (set_has(s, mask) && (best == 0 || closer(mask, best, best_count)))
            best = mask;
    return best;
}

/* single-numa-node in one pass. Its filter keeps, per resource, the one-zone masks that are
 * preferred, i.e. the zones with room when some single zone's total could hold the request
 * (otherwise nothing, and the pod is rejected); one-zone masks AND to non-zero only when they
 * are the same zone, so the best hint is the lowest zone that every requested resource keeps.
 * Memory and hugepages need one zone that holds all of them together, as in their joint list.
 * The result equals numa_merge_permutations() for this policy; test_numaalign checks that on
 * random nodes. */
static struct numa_hint merge_single_zone(const struct numa_zones *z, const int64_t *amount)
{
    uint32_t candidates = numa_all_zones(z), memory_holders = candidates;
    bool requested = false, memory_requested = false;
    for (uint32_t r = 0; r < z->resource_count; r++) {
        if (amount[r] <= 0)
            continue;
        bool memory = z->kind[r] == NUMA_KIND_MEMORY;
        requested = true;
        memory_requested = memory_requested || memory;
        uint32_t fits = 0, holds = 0;
        /* zone_count never exceeds NUMA_MAX_ZONES; the bound says so to the compiler */
        uint32_t zones = z->zone_count < NUMA_MAX_ZONES ? z->zone_count : NUMA_MAX_ZONES;
        for (uint32_t zone = 0; zone < zones; zone++) {
            fits |= (uint32_t)(z->free[r][zone] >= amount[r]) << zone;
            holds |= (uint32_t)(z->total[r][zone] >= amount[r]) << zone;
        }
        if (memory) {
            /* the joint list's narrowest size is one zone only when one zone holds them all */
            candidates &= fits;
            memory_holders &= holds;
            continue;
        }
        if (holds == 0)
            return (struct numa_hint){numa_all_zones(z), false};
        candidates &= fits;
    }
    if (!requested)
        return (struct numa_hint){numa_all_zones(z), true}; /* no provider has a preference */
    if ((memory_requested && memory_holders == 0) || candidates == 0)
        return (struct numa_hint){numa_all_zones(z), false};
    return (struct numa_hint){candidates & -candidates, true};
}

struct numa_hint numa_merge(const struct numa_zones *z, const int64_t *amount, numa_policy policy)
{
    if (policy == NUMA_POLICY_SINGLE_NUMA_NODE)
        return merge_single_zone(z, amount);
    return numa_merge_permutations(z, amount, policy);
}

struct numa_hint numa_merge_permutations(const struct numa_zones *z, const int64_t *amount,
                                         numa_policy policy)
{
    uint32_t all = numa_all_zones(z);
    struct merge_state st = {.open = true, .limit = all + 1};
    set_add(&st.reached, all); /* no provider yet: the "don't care" start */
    bool single = policy == NUMA_POLICY_SINGLE_NUMA_NODE;
    uint32_t memory_slots[NUMA_MAX_RESOURCES], memory_count = 0;
    for (uint32_t r = 0; r < z->resource_count; r++)
        if (z->kind[r] == NUMA_KIND_MEMORY && amount[r] > 0)
            memory_slots[memory_count++] = r;
    struct hint_list memory_list;
    if (memory_count > 0) {
        generate(z, amount, memory_slots, memory_count, &memory_list);
        if (single)
            keep_single_zone(&memory_list, st.limit);
    }
    for (uint32_t r = 0; r < z->resource_count; r++) {
        if (amount[r] <= 0)
            continue; /* not requested: that provider has no preference */
        struct hint_list list;
        if (z->kind[r] == NUMA_KIND_MEMORY) {
            list = memory_list; /* the same list under each memory resource's name */
        } else {
            generate(z, amount, &r, 1, &list);
            if (single)
                keep_single_zone(&list, st.limit);
        }
        merge_list(&st, &list, single);
    }
    if (st.open)
        return (struct numa_hint){all, true}; /* no provider has a preference */
    if (!set_empty(&st.preferred))
        return (struct numa_hint){narrowest(&st.preferred, st.limit), true};
    /* no preferred permutation: every reached mask came from a non-preferred one */
    uint32_t best = closest(&st.reached, st.limit, st.best_count);
    return (struct numa_hint){best != 0 ? best : all, false};
}

numa_kind numa_kind_of(const char *name)
{
    if (strcmp(name, "cpu") == 0)
        return NUMA_KIND_CPU;
    if (strcmp(name, "memory") == 0 || strncmp(name, "hugepages-", 10) == 0)
        return NUMA_KIND_MEMORY;
    return NUMA_KIND_DEVICE;
}

bool numa_admits(numa_policy policy, struct numa_hint hint)
{
    if (policy == NUMA_POLICY_RESTRICTED || policy == NUMA_POLICY_SINGLE_NUMA_NODE)
        return hint.preferred;
    return true;
}

static void take_from(struct numa_zones *z, uint32_t r, int64_t *left, uint32_t zones,
                      int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES], uint32_t *used)
{
    for (uint32_t zone = 0; zone < z->zone_count && *left > 0; zone++) {
        if (!(zones & (1u << zone)) || z->free[r][zone] <= 0)
            continue;
        int64_t part = z->free[r][zone] < *left ? z->free[r][zone] : *left;
        z->free[r][zone] -= part;
        charge[r][zone] += part;
        *left -= part;
        *used |= 1u << zone;
    }
}

uint32_t numa_take(struct numa_zones *z, const int64_t *amount, uint32_t mask,
                   int64_t charge[NUMA_MAX_RESOURCES][NUMA_MAX_ZONES])
{
    uint32_t used = 0, all = numa_all_zones(z);
    for (uint32_t r = 0; r < z->resource_count; r++) {
        int64_t left = amount[r];
        take_from(z, r, &left, mask, charge, &used);
        take_from(z, r, &left, all & ~mask, charge, &used);
    }
    return used;
}
