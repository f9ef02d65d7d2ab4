/* Topology manager hint generation and merging over zone masks. The kubelet merges the cross
 * product of every provider's hint list; here each step keeps only the set of distinct masks
 * reached so far (a 256-bit set per preference), which gives the same best hint without the
 * exponential walk: two zones cost a handful of operations, eight a few thousand. */
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

static void set_union_into(struct mask_set *out, const struct mask_set *a)
{
    for (int i = 0; i < 4; i++)
        out->bits[i] |= a->bits[i];
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

struct merge_state {
    struct mask_set preferred;     /* masks reached with every hint preferred */
    struct mask_set not_preferred; /* masks reached with at least one non-preferred hint */
    uint32_t limit;
};

/* Cross one more provider list into the reached masks. An empty list has no permutation at all
 * under single-numa-node (its hints were filtered away); otherwise the kubelet replaces it by
 * one non-preferred "any zone" hint. */
static void merge_list(struct merge_state *st, const struct hint_list *list, bool single)
{
    struct merge_state next = {.limit = st->limit};
    if (set_empty(&list->feasible)) {
        if (!single) {
            next.not_preferred = st->preferred;
            set_union_into(&next.not_preferred, &st->not_preferred);
        }
        *st = next;
        return;
    }
    struct mask_set non_preferred = list->feasible;
    for (int i = 0; i < 4; i++)
        non_preferred.bits[i] &= ~list->preferred.bits[i];
    set_and_into(&next.preferred, &st->preferred, &list->preferred, st->limit);
    set_and_into(&next.not_preferred, &st->not_preferred, &list->feasible, st->limit);
    set_and_into(&next.not_preferred, &st->preferred, &non_preferred, st->limit);
    *st = next;
}

static uint32_t narrowest(const struct mask_set *s, uint32_t limit, uint32_t start)
{
    uint32_t best = start;
    for (uint32_t mask = 1; mask < limit; mask++)
        if (set_has(s, mask) && (best == 0 || narrower(mask, best)))
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
    struct merge_state st = {.limit = all + 1};
    set_add(&st.preferred, all); /* no provider yet: the "don't care" start */
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
    struct numa_hint best;
    if (!set_empty(&st.preferred))
        best = (struct numa_hint){narrowest(&st.preferred, st.limit, 0), true};
    else
        best = (struct numa_hint){narrowest(&st.not_preferred, st.limit, all), false};
    return best;
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
