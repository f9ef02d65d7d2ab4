/* Where a pod's GPU containers go on one node: which cards, how much of each, and at what cost
 * to the cards left free. The cost is fragmentation-aware in the spirit of FGD (USENIX ATC'23):
 * a card's fragmentation is the memory it has free but that the workload's typical requests
 * could not use there; a placement is judged by how much fragmentation it adds. Runs in Filter
 * and Score on several threads at once: everything lives on the stack. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "gpushare.h"

#define COST_NONE INT64_MAX

enum miss {
    MISS_UNHEALTHY,
    MISS_SELECTION,
    MISS_MODE,
    MISS_SHARING,
    MISS_EXCLUSIVE,
    MISS_MEMORY,
    MISS_CORES,
    MISS_MIG,
    MISS_ZONE,
    MISS_COUNT
};

static const char *const miss_reasons[MISS_COUNT] = {
    "GPU unhealthy",
    "no GPU of the requested type or UUID",
    "GPU mode does not match the request (whole, shared or MIG)",
    "GPU sharing limit reached",
    "GPU held exclusively",
    "Insufficient GPU memory",
    "Insufficient GPU cores",
    "no free MIG placement",
    "GPUs not in the NUMA zone",
};

int64_t request_memory_on(const struct container_request *request, const struct card *card)
{
    if (request->memory_mib > 0)
        return request->memory_mib;
    return card->memory_mib * request->memory_percent / 100;
}

static int64_t type_memory_on(const struct demand_type *type, const struct card *card)
{
    if (type->memory_mib > 0)
        return type->memory_mib;
    return card->memory_mib * type->memory_percent / 100;
}

/* HAMi's rules for a shared card: a request of all the card's cores holds it alone, a card
 * someone holds alone takes nobody else, and a request of no cores cannot go where every core
 * is taken. */
bool card_takes(const struct card *card, const struct card_usage *usage, int64_t memory_mib,
                int32_t cores)
{
    if (!card->healthy || card->overcommitted || card->mode == CARD_MIG)
        return false;
    if (card->mode == CARD_WHOLE)
        return usage->users == 0 && memory_mib >= card->memory_mib;
    if (usage->users >= card->split || usage->exclusive)
        return false;
    /* a card that reports no cores (devcore 0) is shared by memory alone */
    if (card->cores > 0 && cores >= card->cores && usage->users > 0)
        return false;
    if (card->cores > 0 && cores == 0 && usage->cores >= card->cores)
        return false;
    return card->memory_mib - usage->memory_mib >= memory_mib &&
           card->cores - usage->cores >= cores;
}

bool text_contains_nocase(const char *text, const char *needle, size_t length)
{
    for (; *text != '\0'; text++) {
        size_t i = 0;
        while (i < length && text[i] != '\0' &&
               toupper((unsigned char)text[i]) == toupper((unsigned char)needle[i]))
            i++;
        if (i == length)
            return true;
    }
    return false;
}

static bool list_has(const char *list, const char *value, bool substring)
{
    char item[GPU_UUID_LEN];
    const char *cursor = list;
    while (*cursor != '\0') {
        size_t length = strcspn(cursor, ",");
        size_t start = 0;
        while (start < length && isspace((unsigned char)cursor[start]))
            start++;
        size_t end = length;
        while (end > start && isspace((unsigned char)cursor[end - 1]))
            end--;
        size_t size = end - start < sizeof(item) - 1 ? end - start : sizeof(item) - 1;
        memcpy(item, cursor + start, size);
        item[size] = '\0';
        if (size > 0) {
            if (!substring && strcmp(item, value) == 0)
                return true;
            if (substring && text_contains_nocase(value, item, size))
                return true;
        }
        cursor += length;
        if (*cursor == ',')
            cursor++;
    }
    return false;
}

bool card_selected(const struct pod_request *request, const struct card *card)
{
    if (request->use_type[0] != '\0' && !list_has(request->use_type, card->model, true))
        return false;
    if (request->nouse_type[0] != '\0' && list_has(request->nouse_type, card->model, true))
        return false;
    if (request->use_uuid[0] != '\0' && !list_has(request->use_uuid, card->uuid, false))
        return false;
    if (request->nouse_uuid[0] != '\0' && list_has(request->nouse_uuid, card->uuid, false))
        return false;
    return true;
}

static int popcount8(uint8_t value)
{
    int count = 0;
    for (; value != 0; value &= (uint8_t)(value - 1))
        count++;
    return count;
}

int64_t card_fragmentation(const struct card *card, const struct card_usage *usage,
                           const struct demand_mix *mix)
{
    if (!card->healthy || card->overcommitted)
        return 0;
    if (card->mode == CARD_MIG) {
        if (card->mig == NULL)
            return 0;
        /* free slices that one more instance of the largest free size could not cover */
        int free_slots = card->mig->slot_count - popcount8(usage->mig_mask);
        int64_t free_mib = card->memory_mib * free_slots / card->mig->slot_count;
        int64_t largest = mig_largest_free(card->mig, usage->mig_mask);
        return free_mib > largest ? (free_mib - largest) * 1000 : 0;
    }
    int64_t free_mib = card->memory_mib - usage->memory_mib;
    if (free_mib <= 0 || mix->count == 0)
        return 0;
    double total = 0.0, stranded = 0.0;
    for (uint32_t t = 0; t < mix->count; t++) {
        const struct demand_type *type = &mix->types[t];
        total += type->weight;
        if (!card_takes(card, usage, type_memory_on(type, card), type->cores))
            stranded += type->weight;
    }
    return total > 0.0 ? (int64_t)((double)free_mib * 1000.0 * stranded / total) : 0;
}

/* What one card strands for one request shape: all its free memory when the node cannot take
 * the shape at all (its CPUs are gone: FGD's node-level rule) or the card cannot. */
static double card_stranded(const struct card *card, const struct card_usage *usage,
                            const struct demand_type *type, bool cpu_blocked)
{
    int64_t free_mib = card->memory_mib - usage->memory_mib;
    if (free_mib <= 0 || !card->healthy || card->overcommitted)
        return 0.0;
    if (cpu_blocked || !card_takes(card, usage, type_memory_on(type, card), type->cores))
        return (double)free_mib;
    return 0.0;
}

/* How much fragmentation (expected stranded MiB x 1000) the node gains going from before to
 * after, its free CPUs from cpu_before to cpu_after (negative: unknown). Only the cards that
 * changed, and the shapes whose CPUs stop fitting, are looked at. */
static int64_t node_fragmentation_delta(const struct gpu_node *node,
                                        const struct card_usage *before,
                                        const struct card_usage *after, int64_t cpu_before,
                                        int64_t cpu_after, const struct demand_mix *mix)
{
    double total = 0.0, delta = 0.0;
    int64_t mig = 0;
    bool touched[GPU_MAX_CARDS];
    for (uint32_t i = 0; i < node->card_count; i++) {
        touched[i] = memcmp(&before[i], &after[i], sizeof(before[i])) != 0;
        if (touched[i] && node->cards[i].mode == CARD_MIG)
            mig += card_fragmentation(&node->cards[i], &after[i], mix) -
                   card_fragmentation(&node->cards[i], &before[i], mix);
    }
    for (uint32_t t = 0; t < mix->count; t++) {
        const struct demand_type *type = &mix->types[t];
        bool blocked_before = cpu_before >= 0 && type->cpu_milli > cpu_before;
        bool blocked_after = cpu_after >= 0 && type->cpu_milli > cpu_after;
        total += type->weight;
        for (uint32_t i = 0; i < node->card_count; i++) {
            const struct card *card = &node->cards[i];
            if (card->mode == CARD_MIG || (!touched[i] && blocked_before == blocked_after))
                continue;
            delta += type->weight * (card_stranded(card, &after[i], type, blocked_after) -
                                     card_stranded(card, &before[i], type, blocked_before));
        }
    }
    return mig + (total > 0.0 ? (int64_t)(delta * 1000.0 / total) : 0);
}

struct scratch {
    const struct gpu_node *node;
    const struct pod_request *request;
    const struct demand_mix *mix;
    struct card_usage usage[GPU_MAX_CARDS];
    int32_t zone;           /* -1: any */
    int64_t free_cpu_milli; /* negative: unknown */
    uint32_t misses[MISS_COUNT];
};

/* What placing the memory and cores on card i costs; COST_NONE when it does not fit. */
static int64_t shared_cost(struct scratch *s, uint32_t i, int64_t memory, int32_t cores)
{
    const struct card *card = &s->node->cards[i];
    if (!card_takes(card, &s->usage[i], memory, cores)) {
        enum miss miss = MISS_MEMORY;
        if (!card->healthy || card->overcommitted)
            miss = MISS_UNHEALTHY;
        else if (card->mode == CARD_MIG || (card->mode == CARD_WHOLE && s->usage[i].users == 0))
            miss = MISS_MODE;
        else if (s->usage[i].exclusive ||
                 (card->cores > 0 && cores >= card->cores && s->usage[i].users > 0))
            miss = MISS_EXCLUSIVE;
        else if (s->usage[i].users >= card->split)
            miss = MISS_SHARING;
        else if (card->memory_mib - s->usage[i].memory_mib >= memory)
            miss = MISS_CORES;
        s->misses[miss]++;
        return COST_NONE;
    }
    if (s->request->card_policy == POLICY_FIRST_FIT)
        return i;
    struct card_usage after = s->usage[i];
    after.memory_mib += memory;
    after.cores += cores;
    after.users++;
    int64_t delta =
        card_fragmentation(card, &after, s->mix) - card_fragmentation(card, &s->usage[i], s->mix);
    int64_t free_after = card->memory_mib - after.memory_mib;
    if (s->request->card_policy == POLICY_SPREAD)
        return -free_after * 1000000 + delta * s->mix->fragmentation_weight;
    return delta * s->mix->fragmentation_weight + free_after;
}

static bool card_allowed(struct scratch *s, uint32_t i)
{
    const struct card *card = &s->node->cards[i];
    if (!card_selected(s->request, card)) {
        s->misses[MISS_SELECTION]++;
        return false;
    }
    if (s->zone >= 0 && card->numa != s->zone) {
        s->misses[MISS_ZONE]++;
        return false;
    }
    return true;
}

static void add_assignment(struct placement *out, uint32_t container, uint32_t card, int mig_start,
                           int64_t memory, int32_t cores, bool exclusive)
{
    struct assignment *a = &out->items[out->count++];
    a->container = (uint8_t)container;
    a->card = (uint8_t)card;
    a->mig_start = (int8_t)mig_start;
    a->memory_mib = memory;
    a->cores = cores;
    a->exclusive = exclusive;
}

/* N distinct cards for one container: the N cheapest, within one zone when numa-bind asks. */
static bool place_shared(struct scratch *s, uint32_t c, struct placement *out)
{
    const struct container_request *request = &s->request->containers[c];
    const struct gpu_node *node = s->node;
    int64_t costs[GPU_MAX_CARDS];
    for (uint32_t i = 0; i < node->card_count; i++) {
        costs[i] = COST_NONE;
        if (card_allowed(s, i))
            costs[i] =
                shared_cost(s, i, request_memory_on(request, &node->cards[i]), request->cores);
    }
    int32_t zones[GPU_MAX_CARDS + 1];
    uint32_t zone_count = 0;
    if (s->request->numa_bind) {
        for (uint32_t i = 0; i < node->card_count; i++) {
            bool seen = false;
            for (uint32_t z = 0; z < zone_count; z++)
                seen = seen || zones[z] == node->cards[i].numa;
            if (!seen)
                zones[zone_count++] = node->cards[i].numa;
        }
    } else {
        zones[zone_count++] = INT32_MIN; /* every card */
    }
    uint32_t best_pick[GPU_MAX_CARDS], pick[GPU_MAX_CARDS];
    int64_t best_sum = COST_NONE;
    for (uint32_t z = 0; z < zone_count; z++) {
        bool taken[GPU_MAX_CARDS] = {false};
        int64_t sum = 0;
        int32_t found = 0;
        for (; found < request->cards; found++) {
            int best = -1;
            for (uint32_t i = 0; i < node->card_count; i++) {
                bool in_zone = zones[z] == INT32_MIN || node->cards[i].numa == zones[z];
                if (!taken[i] && in_zone && costs[i] != COST_NONE &&
                    (best < 0 || costs[i] < costs[best]))
                    best = (int)i;
            }
            if (best < 0)
                break;
            taken[best] = true;
            pick[found] = (uint32_t)best;
            sum += costs[best];
        }
        if (found == request->cards && (best_sum == COST_NONE || sum < best_sum)) {
            best_sum = sum;
            memcpy(best_pick, pick, sizeof(uint32_t) * (size_t)found);
        }
    }
    if (best_sum == COST_NONE)
        return false;
    for (int32_t k = 0; k < request->cards; k++) {
        uint32_t i = best_pick[k];
        const struct card *card = &node->cards[i];
        int64_t memory = request_memory_on(request, card);
        bool exclusive =
            (card->cores > 0 && request->cores >= card->cores) || card->mode == CARD_WHOLE;
        add_assignment(out, c, i, -1, memory, request->cores, exclusive);
        s->usage[i].memory_mib += memory;
        s->usage[i].cores += request->cores;
        s->usage[i].users++;
        s->usage[i].exclusive = s->usage[i].exclusive || exclusive;
    }
    return true;
}

static int64_t mig_cost(struct scratch *s, uint32_t i, const struct mig_profile *profile, int start)
{
    const struct card *card = &s->node->cards[i];
    if (s->request->card_policy == POLICY_FIRST_FIT)
        return i * MIG_SLOTS + start;
    struct card_usage after = s->usage[i];
    after.mig_mask |= mig_mask(profile, start);
    int64_t delta =
        card_fragmentation(card, &after, s->mix) - card_fragmentation(card, &s->usage[i], s->mix);
    int64_t free_after = card->mig->slot_count - popcount8(after.mig_mask);
    if (s->request->card_policy == POLICY_SPREAD)
        return -free_after * 1000000000 + delta;
    return delta * (s->mix->fragmentation_weight > 0 ? s->mix->fragmentation_weight : 1) +
           free_after;
}

/* One instance at a time, each on the card and start that cost least. */
static bool place_mig(struct scratch *s, uint32_t c, struct placement *out)
{
    const struct container_request *request = &s->request->containers[c];
    const struct gpu_node *node = s->node;
    for (int32_t k = 0; k < request->cards; k++) {
        int best = -1, best_start = -1;
        int64_t best_cost = COST_NONE;
        for (uint32_t i = 0; i < node->card_count; i++) {
            const struct card *card = &node->cards[i];
            if (!card_allowed(s, i))
                continue;
            if (!card->healthy || card->overcommitted) {
                s->misses[MISS_UNHEALTHY]++;
                continue;
            }
            const struct mig_profile *profile = mig_profile_find(card->mig, request->mig_profile);
            if (card->mode != CARD_MIG || profile == NULL) {
                s->misses[MISS_MODE]++;
                continue;
            }
            int start = mig_place(card->mig, profile, s->usage[i].mig_mask);
            if (start < 0) {
                s->misses[MISS_MIG]++;
                continue;
            }
            int64_t cost = mig_cost(s, i, profile, start);
            if (best < 0 || cost < best_cost) {
                best = (int)i;
                best_start = start;
                best_cost = cost;
            }
        }
        if (best < 0)
            return false;
        const struct card *card = &node->cards[best];
        const struct mig_profile *profile = mig_profile_find(card->mig, request->mig_profile);
        int64_t memory = card->memory_mib * profile->slots / card->mig->slot_count;
        add_assignment(out, c, (uint32_t)best, best_start, memory, 0, false);
        s->usage[best].mig_mask |= mig_mask(profile, best_start);
        s->usage[best].memory_mib += memory;
        s->usage[best].users++;
    }
    return true;
}

static void miss_reason(const struct scratch *s, const struct container_request *request,
                        char *reason, size_t size)
{
    enum miss worst = MISS_MEMORY;
    uint32_t most = 0;
    for (int m = 0; m < MISS_COUNT; m++) {
        if (s->misses[m] > most) {
            most = s->misses[m];
            worst = (enum miss)m;
        }
    }
    if (request->mig_profile != NULL && s->misses[MISS_MIG] > 0)
        worst = MISS_MIG; /* a MIG card that is full says more than the other cards */
    if (most == 0) {
        snprintf(reason, size, "Insufficient GPUs");
    } else if (worst == MISS_MIG || (worst == MISS_MODE && request->mig_profile != NULL)) {
        snprintf(reason, size, "%s for nvidia.com/mig-%s", miss_reasons[worst],
                 request->mig_profile);
    } else {
        snprintf(reason, size, "%s", miss_reasons[worst]);
    }
}

static bool place_all(struct scratch *s, struct placement *out, char *reason, size_t size)
{
    out->count = 0;
    out->zone = s->zone;
    for (uint32_t c = 0; c < s->request->count; c++) {
        const struct container_request *request = &s->request->containers[c];
        memset(s->misses, 0, sizeof(s->misses));
        bool placed = request->mig_profile != NULL ? place_mig(s, c, out) : place_shared(s, c, out);
        if (!placed) {
            /* cards that each fit, but too few of them */
            miss_reason(s, request, reason, size);
            return false;
        }
    }
    struct card_usage before[GPU_MAX_CARDS];
    for (uint32_t i = 0; i < s->node->card_count; i++)
        before[i] = s->node->cards[i].used;
    int64_t cpu_after = s->free_cpu_milli;
    if (cpu_after >= 0)
        cpu_after = cpu_after > s->request->cpu_milli ? cpu_after - s->request->cpu_milli : 0;
    out->fragmentation_delta =
        node_fragmentation_delta(s->node, before, s->usage, s->free_cpu_milli, cpu_after, s->mix);
    return true;
}

static void scratch_reset(struct scratch *s)
{
    for (uint32_t i = 0; i < s->node->card_count; i++)
        s->usage[i] = s->node->cards[i].used;
}

/* Zones that could hold the pod's CPUs (single-numa-node), from the node's topology. */
static uint32_t candidate_zones(const struct gpu_node *node, const struct pod_request *request,
                                int32_t *zones)
{
    uint32_t count = 0;
    for (uint32_t z = 0; z < node->zones.count; z++) {
        int32_t id = node->zones.id[z];
        bool allowed = request->zone_mask == 0 ||
                       (id >= 0 && id < 32 && (request->zone_mask & (1u << id)) != 0);
        if (allowed && node->zones.available_milli[z] >= request->cpu_milli)
            zones[count++] = id;
    }
    return count;
}

bool fit_pod(const struct gpu_node *node, const struct pod_request *request,
             const struct demand_mix *mix, int64_t free_cpu_milli, struct placement *out,
             char *reason, size_t reason_size)
{
    struct scratch s;
    s.free_cpu_milli = free_cpu_milli;
    s.node = node;
    s.request = request;
    s.mix = mix;
    if (node->card_count == 0) {
        snprintf(reason, reason_size, "node has no GPUs");
        return false;
    }
    if (!request->single_numa_node) {
        s.zone = -1;
        scratch_reset(&s);
        return place_all(&s, out, reason, reason_size);
    }
    if (!node->has_zones) {
        snprintf(reason, reason_size,
                 "no NodeResourceTopology to put GPUs and CPUs in one NUMA zone");
        return false;
    }
    int32_t zones[GPU_MAX_ZONES];
    uint32_t zone_count = candidate_zones(node, request, zones);
    bool found = false;
    struct placement candidate;
    snprintf(reason, reason_size, "cannot put GPUs and CPUs in one NUMA zone");
    for (uint32_t z = 0; z < zone_count; z++) {
        char ignored[GPU_REASON_LEN];
        s.zone = zones[z];
        scratch_reset(&s);
        if (!place_all(&s, &candidate, ignored, sizeof(ignored)))
            continue;
        if (!found || candidate.fragmentation_delta < out->fragmentation_delta) {
            *out = candidate;
            found = true;
        }
    }
    return found;
}

/* Until the workload shows its own mix: whole cards, halves, quarters and small slices. */
void demand_mix_default(struct demand_mix *mix)
{
    static const struct demand_type defaults[] = {
        {0, 100, 100, 1.0, 0}, {0, 50, 50, 1.0, 0}, {0, 25, 25, 1.0, 0}, {4096, 0, 10, 1.0, 0}};
    mix->count = sizeof(defaults) / sizeof(defaults[0]);
    memcpy(mix->types, defaults, sizeof(defaults));
}

/* Old observations fade (x0.999 each) so the mix follows the workload of the last thousand
 * or so GPU containers; a new shape replaces the faintest one when the table is full. */
void demand_mix_observe(struct demand_mix *mix, const struct container_request *request,
                        int64_t cpu_milli)
{
    if (request->mig_profile != NULL)
        return;
    uint32_t faintest = 0;
    int found = -1;
    for (uint32_t t = 0; t < mix->count; t++) {
        struct demand_type *type = &mix->types[t];
        type->weight *= 0.999;
        if (type->memory_mib == request->memory_mib &&
            type->memory_percent == request->memory_percent && type->cores == request->cores &&
            type->cpu_milli == cpu_milli)
            found = (int)t;
        if (type->weight < mix->types[faintest].weight)
            faintest = t;
    }
    if (found < 0) {
        found = (int)(mix->count < GPU_MAX_TYPES ? mix->count++ : faintest);
        mix->types[found].memory_mib = request->memory_mib;
        mix->types[found].memory_percent = request->memory_percent;
        mix->types[found].cores = request->cores;
        mix->types[found].cpu_milli = cpu_milli;
        mix->types[found].weight = 0.0;
    }
    mix->types[found].weight += 1.0;
}
