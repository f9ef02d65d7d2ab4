/* The per-card ledger: nodes by name, and one charge per pod (the cards, memory, cores and MIG
 * slices it holds). A card's usage is always the sum of the charges applied to it, so a node
 * whose inventory changes is recounted from its charges. A charge that would over-commit a
 * card is refused when the scheduler places a pod, and kept uncounted (its cards marked full)
 * when a bound pod is adopted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpushare.h"

#define NODE_BUCKETS 4096u
#define CHARGE_BUCKETS 16384u
#define ENOSPC_CODE (-28)
#define EEXIST_CODE (-17)
#define ENOMEM_CODE (-12)

static uint32_t hash_name(const char *text)
{
    uint32_t hash = 2166136261u; /* FNV-1a */
    for (; *text != '\0'; text++)
        hash = (hash ^ (uint8_t)*text) * 16777619u;
    return hash;
}

static void copy_text(char *out, size_t size, const char *text)
{
    snprintf(out, size, "%s", text != NULL ? text : "");
}

int ledger_init(struct ledger *ledger)
{
    memset(ledger, 0, sizeof(*ledger));
    ledger->nodes = calloc(NODE_BUCKETS, sizeof(*ledger->nodes));
    ledger->charges = calloc(CHARGE_BUCKETS, sizeof(*ledger->charges));
    if (ledger->nodes == NULL || ledger->charges == NULL) {
        ledger_fini(ledger);
        return ENOMEM_CODE;
    }
    ledger->node_buckets = NODE_BUCKETS;
    ledger->charge_buckets = CHARGE_BUCKETS;
    return 0;
}

void ledger_fini(struct ledger *ledger)
{
    for (uint32_t b = 0; ledger->nodes != NULL && b < ledger->node_buckets; b++) {
        struct gpu_node *node = ledger->nodes[b];
        while (node != NULL) {
            struct gpu_node *next = node->next;
            free(node);
            node = next;
        }
    }
    for (uint32_t b = 0; ledger->charges != NULL && b < ledger->charge_buckets; b++) {
        struct charge *charge = ledger->charges[b];
        while (charge != NULL) {
            struct charge *next = charge->next;
            free(charge);
            charge = next;
        }
    }
    free(ledger->nodes);
    free(ledger->charges);
    memset(ledger, 0, sizeof(*ledger));
}

struct gpu_node *ledger_node(const struct ledger *ledger, const char *name)
{
    struct gpu_node *node = ledger->nodes[hash_name(name) % ledger->node_buckets];
    while (node != NULL && strcmp(node->name, name) != 0)
        node = node->next;
    return node;
}

const struct charge *ledger_charge_of(const struct ledger *ledger, const char *uid)
{
    const struct charge *charge = ledger->charges[hash_name(uid) % ledger->charge_buckets];
    while (charge != NULL && strcmp(charge->uid, uid) != 0)
        charge = charge->next;
    return charge;
}

static int find_card(const struct gpu_node *node, const char *uuid)
{
    for (uint32_t i = 0; i < node->card_count; i++) {
        if (strcmp(node->cards[i].uuid, uuid) == 0)
            return (int)i;
    }
    return -1;
}

/* Whether one item may be added to a card in state usage. */
static bool item_fits(const struct card *card, const struct card_usage *usage,
                      const struct charge_item *item)
{
    if (item->mig_start >= 0) {
        /* bounds before the shift: 1u << 32 or more is undefined */
        if (item->mig_slots < 1 || item->mig_start + item->mig_slots > MIG_SLOTS)
            return false;
        uint8_t mask = (uint8_t)(((1u << item->mig_slots) - 1u) << item->mig_start);
        return card->mode == CARD_MIG && (usage->mig_mask & mask) == 0;
    }
    if (card->mode == CARD_MIG || usage->users + 1 > card->split || usage->exclusive)
        return false;
    if (item->exclusive && usage->users > 0)
        return false;
    return usage->memory_mib + item->memory_mib <= card->memory_mib &&
           usage->cores + item->cores <= card->cores;
}

static void item_add(struct card_usage *usage, const struct charge_item *item)
{
    if (item->mig_start >= 0) {
        usage->mig_mask |= (uint8_t)(((1u << item->mig_slots) - 1u) << item->mig_start);
        usage->users++;
        usage->memory_mib += item->memory_mib;
        return;
    }
    usage->memory_mib += item->memory_mib;
    usage->cores += item->cores;
    usage->users++;
    usage->exclusive = usage->exclusive || item->exclusive;
}

/* Checks every item against a scratch copy first: a pod's charge is applied whole or not at
 * all. Returns true when applied. */
static bool apply_charge(struct gpu_node *node, const struct charge *charge)
{
    struct card_usage scratch[GPU_MAX_CARDS];
    for (uint32_t i = 0; i < node->card_count; i++)
        scratch[i] = node->cards[i].used;
    for (uint32_t i = 0; i < charge->count; i++) {
        int card = find_card(node, charge->items[i].uuid);
        if (card < 0 || !item_fits(&node->cards[card], &scratch[card], &charge->items[i]))
            return false;
        item_add(&scratch[card], &charge->items[i]);
    }
    for (uint32_t i = 0; i < node->card_count; i++)
        node->cards[i].used = scratch[i];
    return true;
}

static void mark_overcommitted(struct gpu_node *node, const struct charge *charge)
{
    for (uint32_t i = 0; i < charge->count; i++) {
        int card = find_card(node, charge->items[i].uuid);
        if (card >= 0)
            node->cards[card].overcommitted = true;
    }
}

/* Recount a node from scratch: its charges in table order. A charge that no longer fits
 * (the inventory shrank under running pods) leaves its cards marked full, never counted
 * twice. */
static void recount_node(struct ledger *ledger, struct gpu_node *node)
{
    uint32_t hash = hash_name(node->name);
    for (uint32_t i = 0; i < node->card_count; i++) {
        memset(&node->cards[i].used, 0, sizeof(node->cards[i].used));
        node->cards[i].overcommitted = false;
    }
    for (uint32_t b = 0; b < ledger->charge_buckets; b++) {
        for (struct charge *charge = ledger->charges[b]; charge != NULL; charge = charge->next) {
            if (charge->node_hash != hash || strcmp(charge->node, node->name) != 0)
                continue;
            charge->applied = apply_charge(node, charge);
            if (!charge->applied)
                mark_overcommitted(node, charge);
        }
    }
}

struct gpu_node *ledger_set_node(struct ledger *ledger, const char *name,
                                 const struct gpu_node *fresh)
{
    struct gpu_node *node = ledger_node(ledger, name);
    if (node == NULL) {
        node = malloc(sizeof(*node));
        if (node == NULL)
            return NULL;
        *node = *fresh;
        uint32_t bucket = hash_name(name) % ledger->node_buckets;
        node->next = ledger->nodes[bucket];
        ledger->nodes[bucket] = node;
        ledger->node_count++;
    } else {
        struct gpu_node *next = node->next;
        *node = *fresh;
        node->next = next;
    }
    copy_text(node->name, sizeof(node->name), name);
    recount_node(ledger, node);
    return node;
}

void ledger_remove_node(struct ledger *ledger, const char *name)
{
    struct gpu_node **link = &ledger->nodes[hash_name(name) % ledger->node_buckets];
    while (*link != NULL && strcmp((*link)->name, name) != 0)
        link = &(*link)->next;
    if (*link == NULL)
        return;
    struct gpu_node *node = *link;
    *link = node->next;
    free(node);
    ledger->node_count--;
    /* its charges stay: the pods are still bound there, and a node that comes back (a
     * kubelet re-registering) must find them counted */
    for (uint32_t b = 0; b < ledger->charge_buckets; b++) {
        for (struct charge *charge = ledger->charges[b]; charge != NULL; charge = charge->next) {
            if (strcmp(charge->node, name) == 0)
                charge->applied = false;
        }
    }
}

/* adopted: the pod is already bound, so a charge that does not fit is kept unapplied with its
 * cards marked over-committed, as a recount would leave it; refusing it would make the card's
 * count depend on whether the node or its pods arrived first. */
static int store_charge(struct ledger *ledger, const struct charge *charge, bool adopted)
{
    if (ledger_charge_of(ledger, charge->uid) != NULL)
        return EEXIST_CODE;
    struct gpu_node *node = ledger_node(ledger, charge->node);
    bool applied = false;
    if (node != NULL) {
        applied = apply_charge(node, charge);
        if (!applied && !adopted)
            return ENOSPC_CODE;
    }
    size_t size = offsetof(struct charge, items) + charge->count * sizeof(struct charge_item);
    struct charge *stored = malloc(size);
    if (stored == NULL) {
        if (applied)
            recount_node(ledger, node);
        return ENOMEM_CODE;
    }
    memcpy(stored, charge, size);
    stored->applied = applied;
    stored->node_hash = hash_name(charge->node);
    uint32_t bucket = hash_name(charge->uid) % ledger->charge_buckets;
    stored->next = ledger->charges[bucket];
    ledger->charges[bucket] = stored;
    ledger->charge_count++;
    if (node != NULL && !applied)
        mark_overcommitted(node, stored);
    return 0;
}

int ledger_charge(struct ledger *ledger, const struct charge *charge)
{
    return store_charge(ledger, charge, false);
}

int ledger_adopt(struct ledger *ledger, const struct charge *charge)
{
    return store_charge(ledger, charge, true);
}

int ledger_release(struct ledger *ledger, const char *uid)
{
    struct charge **link = &ledger->charges[hash_name(uid) % ledger->charge_buckets];
    while (*link != NULL && strcmp((*link)->uid, uid) != 0)
        link = &(*link)->next;
    if (*link == NULL)
        return 0;
    struct charge *charge = *link;
    *link = charge->next;
    ledger->charge_count--;
    struct gpu_node *node = ledger_node(ledger, charge->node);
    free(charge);
    /* subtracting would be faster, but a recount cannot drift and also retries charges
     * that did not fit before this one left */
    if (node != NULL)
        recount_node(ledger, node);
    return 1;
}

void charge_from_placement(struct charge *out, const char *uid, const struct gpu_node *node,
                           const struct pod_request *request, const struct placement *placement)
{
    memset(out, 0, offsetof(struct charge, items));
    copy_text(out->uid, sizeof(out->uid), uid);
    copy_text(out->node, sizeof(out->node), node->name);
    out->count = placement->count;
    for (uint32_t i = 0; i < placement->count; i++) {
        const struct assignment *a = &placement->items[i];
        const struct card *card = &node->cards[a->card];
        struct charge_item *item = &out->items[i];
        copy_text(item->uuid, sizeof(item->uuid), card->uuid);
        item->mig_start = a->mig_start;
        item->mig_slots = 0;
        if (a->mig_start >= 0) {
            const struct mig_profile *profile =
                mig_profile_find(card->mig, request->containers[a->container].mig_profile);
            item->mig_slots = profile != NULL ? profile->slots : 0;
        }
        item->memory_mib = a->memory_mib;
        item->cores = a->cores;
        item->exclusive = a->exclusive;
    }
}

bool ledger_consistent(const struct ledger *ledger, char *why, size_t why_size)
{
    for (uint32_t b = 0; b < ledger->node_buckets; b++) {
        for (const struct gpu_node *node = ledger->nodes[b]; node != NULL; node = node->next) {
            for (uint32_t i = 0; i < node->card_count; i++) {
                const struct card *card = &node->cards[i];
                const struct card_usage *u = &card->used;
                /* MIG instances are bounded by their slices, not by the memory sum */
                bool memory_over = card->mode != CARD_MIG && u->memory_mib > card->memory_mib;
                if (memory_over || u->cores > card->cores || u->users > card->split ||
                    u->memory_mib < 0 || u->cores < 0 || u->users < 0 ||
                    (u->exclusive && u->users > 1)) {
                    snprintf(why, why_size,
                             "node %s card %s: memory %lld/%lld, cores %d/%d, users %d/%d%s",
                             node->name, card->uuid, (long long)u->memory_mib,
                             (long long)card->memory_mib, u->cores, card->cores, u->users,
                             card->split, u->exclusive ? ", exclusive" : "");
                    return false;
                }
            }
        }
    }
    return true;
}
