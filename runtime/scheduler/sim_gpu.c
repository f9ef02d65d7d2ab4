/* GPU use in a simulation: memory allocated and unallocated, whole cards free, cards partly
 * used, and the GPU pods left unschedulable with their reasons. Cards are read from each
 * node's hami.io/node-nvidia-register or kcycle.io/gpus annotation, its NodeResourceTopology or
 * GPU feature discovery's labels (gpushare's sources, in its order), usage from the
 * kcycle.io/gpu-assignment annotation of each binding, so the figures are the binder's view,
 * independent of the plugin's ledger. */
#include "sim_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "resource_table.h"
#include "simulator.h"

#define SIM_GPU_MAX_CARDS 16

struct card_use {
    int32_t index;
    int64_t memory_mib;
    int64_t used_mib;
    uint32_t users;
};

struct node_cards {
    uint32_t count;
    struct card_use cards[SIM_GPU_MAX_CARDS];
};

struct gpu_use {
    uint32_t nodes, cards, whole_free, partly_used;
    int64_t memory_mib, allocated_mib;
    uint32_t pods, bound, unschedulable;
};

void sim_gpu_note_pod(struct sim_record *r, const struct pod *pod)
{
    for (uint32_t i = 0; i < pod->request.count; i++) {
        const char *name = resource_name(pod->request.items[i].id);
        if (name != NULL && pod->request.items[i].value > 0 &&
            (strncmp(name, "nvidia.com/gpu", 14) == 0 ||
             strncmp(name, "nvidia.com/mig-", 15) == 0 || strncmp(name, "kcycle.io/gpu-", 14) == 0))
            r->gpu = true;
    }
}

void sim_gpu_record(struct sim_record *r, const struct kv_list *annotations)
{
    const char *decision =
        annotations != NULL ? kv_list_get(annotations, "kcycle.io/gpu-assignment") : NULL;
    if (decision == NULL)
        return;
    free(r->gpu_assignment);
    r->gpu_assignment = strdup(decision);
}

static void add_card(struct node_cards *out, int32_t index, int64_t memory_mib)
{
    if (out->count < SIM_GPU_MAX_CARDS && memory_mib > 0)
        out->cards[out->count++] = (struct card_use){index, memory_mib, 0, 0};
}

/* kcycle.io/gpus: a list of {memory, count, index}; memory in MiB or "80Gi". */
static void cards_from_kcycle(const char *text, struct node_cards *out)
{
    json_t *root = json_loads(text, 0, NULL);
    size_t i;
    json_t *entry;
    json_array_foreach(root, i, entry)
    {
        const json_t *memory = json_object_get(entry, "memory");
        int64_t mib = json_integer_value(memory);
        const char *quantity = json_string_value(memory);
        if (quantity != NULL) {
            char *end;
            mib = strtoll(quantity, &end, 10);
            mib = strcmp(end, "Gi") == 0 ? mib * 1024 : strcmp(end, "Ti") == 0 ? mib << 20 : mib;
        }
        const json_t *count = json_object_get(entry, "count");
        const json_t *index = json_object_get(entry, "index");
        int32_t first = index != NULL ? (int32_t)json_integer_value(index) : (int32_t)out->count;
        for (json_int_t k = 0; k < (count != NULL ? json_integer_value(count) : 1); k++)
            add_card(out, first + (int32_t)k, mib);
    }
    json_decref(root);
}

/* HAMi: "UUID,count,devmem,devcore,type,numa,health[,index,mode]:" per device. */
static void cards_from_hami(const char *text, struct node_cards *out)
{
    int32_t position = 0;
    while (*text != '\0') {
        size_t length = strcspn(text, ":");
        const char *field = text;
        int64_t mib = -1, index = position;
        for (int f = 0; f < 8 && field < text + length; f++) {
            if (f == 2)
                mib = strtoll(field, NULL, 10);
            if (f == 7)
                index = strtoll(field, NULL, 10);
            const char *comma = memchr(field, ',', (size_t)(text + length - field));
            if (comma == NULL)
                break;
            field = comma + 1;
        }
        if (length > 0)
            add_card(out, (int32_t)index, mib), position++;
        text += length;
        if (*text == ':')
            text++;
    }
}

/* The whole cards gpushare reads from a NodeResourceTopology: nvidia.com/gpu capacity per
 * zone, numbered zone by zone; memory from GPU feature discovery's label (1 MiB without it,
 * as gpushare has it). */
static void cards_from_nrt(const struct simulator *sim, const struct node *node,
                           struct node_cards *out)
{
    const char *label = kv_list_get(&node->labels, "nvidia.com/gpu.memory");
    int64_t mib = label != NULL && atoll(label) > 0 ? atoll(label) : 1;
    for (uint32_t i = 0; i < sim->spec.object_count; i++) {
        const struct sim_object *o = &sim->spec.objects[i];
        if (strcmp(o->kind, "NodeResourceTopology") != 0 || strcmp(o->name, node->name) != 0)
            continue;
        json_t *root = json_loads(o->json, 0, NULL), *zone, *entry;
        size_t z, r;
        json_array_foreach(json_object_get(root, "zones"), z, zone)
        {
            json_array_foreach(json_object_get(zone, "resources"), r, entry)
            {
                const char *name = json_string_value(json_object_get(entry, "name"));
                const char *capacity = json_string_value(json_object_get(entry, "capacity"));
                if (name == NULL || capacity == NULL || strcmp(name, "nvidia.com/gpu") != 0)
                    continue;
                for (long long k = atoll(capacity); k > 0; k--)
                    add_card(out, (int32_t)out->count, mib);
            }
        }
        json_decref(root);
        return;
    }
}

/* GPU feature discovery's labels: whole cards, unless mig-parted cut them. */
static void cards_from_gfd(const struct node *node, struct node_cards *out)
{
    const char *product = kv_list_get(&node->labels, "nvidia.com/gpu.product");
    const char *memory = kv_list_get(&node->labels, "nvidia.com/gpu.memory");
    const char *count = kv_list_get(&node->labels, "nvidia.com/gpu.count");
    const char *mig = kv_list_get(&node->labels, "nvidia.com/mig.config");
    if (product == NULL || memory == NULL || count == NULL ||
        (mig != NULL && strcmp(mig, "all-disabled") != 0))
        return;
    for (long long k = atoll(count); k > 0; k--)
        add_card(out, (int32_t)out->count, atoll(memory));
}

/* gpushare's sources in its order: HAMi's registration, kcycle.io/gpus, the node's
 * NodeResourceTopology, GPU feature discovery's labels. */
static void node_inventory(const struct simulator *sim, const struct node *node,
                           struct node_cards *out)
{
    memset(out, 0, sizeof(*out));
    const char *hami = kv_list_get(&node->annotations, "hami.io/node-nvidia-register");
    const char *own = kv_list_get(&node->annotations, "kcycle.io/gpus");
    if (hami != NULL && hami[0] != '[')
        cards_from_hami(hami, out);
    if (out->count == 0 && own != NULL)
        cards_from_kcycle(own, out);
    if (out->count == 0)
        cards_from_nrt(sim, node, out);
    if (out->count == 0)
        cards_from_gfd(node, out);
}

int sim_gpu_assignment_cards(const char *decision,
                             void (*card)(void *ctx, int index, int64_t memory_mib, int cores),
                             void *ctx)
{
    json_t *root = json_loads(decision, 0, NULL);
    const json_t *containers = json_object_get(root, "containers");
    size_t c, i;
    json_t *container, *entry;
    json_array_foreach(containers, c, container)
    {
        json_array_foreach(json_object_get(container, "cards"), i, entry)
            card(ctx, (int)json_integer_value(json_object_get(entry, "index")),
                 json_integer_value(json_object_get(entry, "memory")),
                 (int)json_integer_value(json_object_get(entry, "cores")));
    }
    int rc = json_is_array(containers) ? 0 : -22;
    json_decref(root);
    return rc;
}

static void charge_card(void *ctx, int index, int64_t memory_mib, int cores)
{
    (void)cores;
    struct node_cards *node = ctx;
    for (uint32_t k = 0; k < node->count; k++) {
        if (node->cards[k].index == index) {
            node->cards[k].used_mib += memory_mib;
            node->cards[k].users++;
            return;
        }
    }
}

/* The nodes as the scheduler's cache holds them (the file's are handed over at start). */
static int node_of(const struct cache *cache, const char *name)
{
    for (uint32_t n = 0; n < cache->node_count; n++) {
        if (strcmp(cache->nodes[n].node->name, name) == 0)
            return (int)n;
    }
    return -1;
}

/* The whole picture; NULL when out of memory. */
static struct node_cards *measure(const struct simulator *sim, struct gpu_use *use)
{
    memset(use, 0, sizeof(*use));
    const struct cache *cache = &sim->sched.cache;
    struct node_cards *nodes = calloc(cache->node_count + 1, sizeof(*nodes));
    if (nodes == NULL)
        return NULL;
    for (uint32_t n = 0; n < cache->node_count; n++)
        node_inventory(sim, cache->nodes[n].node, &nodes[n]);
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        use->pods += r->gpu;
        use->bound += r->gpu && r->node != NULL;
        use->unschedulable += r->gpu && r->node == NULL;
        int n = r->gpu_assignment != NULL && r->node != NULL ? node_of(cache, r->node) : -1;
        if (n >= 0)
            sim_gpu_assignment_cards(r->gpu_assignment, charge_card, &nodes[n]);
    }
    for (uint32_t n = 0; n < cache->node_count; n++) {
        use->nodes += nodes[n].count > 0;
        for (uint32_t k = 0; k < nodes[n].count; k++) {
            const struct card_use *card = &nodes[n].cards[k];
            use->cards++;
            use->memory_mib += card->memory_mib;
            use->allocated_mib += card->used_mib;
            use->whole_free += card->users == 0;
            use->partly_used += card->users > 0 && card->used_mib < card->memory_mib;
        }
    }
    return nodes;
}

void sim_gpu_print(const struct simulator *sim, FILE *out)
{
    struct gpu_use use;
    struct node_cards *nodes = measure(sim, &use);
    free(nodes);
    if (use.cards == 0 && use.pods == 0)
        return;
    double total = (double)use.memory_mib;
    fprintf(out,
            "  GPUs: %u cards on %u nodes, %.1f GiB: allocated %.1f GiB (%.1f%%), unallocated "
            "%.1f GiB; whole cards free %u, cards partly used %u\n",
            use.cards, use.nodes, total / 1024.0, (double)use.allocated_mib / 1024.0,
            total > 0 ? 100.0 * (double)use.allocated_mib / total : 0.0,
            (double)(use.memory_mib - use.allocated_mib) / 1024.0, use.whole_free, use.partly_used);
    fprintf(out, "  GPU pods: %u bound, %u unschedulable\n", use.bound, use.unschedulable);
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        if (r->gpu && r->node == NULL)
            fprintf(out, "    %s/%s: %s\n", r->namespace, r->name, report_record_reason(sim, r));
    }
}

/* Each card: node, index, memory, allocated, users. */
static json_t *cards_json(const struct simulator *sim, const struct node_cards *nodes)
{
    json_t *cards = json_array();
    for (uint32_t n = 0; nodes != NULL && n < sim->sched.cache.node_count; n++) {
        for (uint32_t k = 0; k < nodes[n].count; k++) {
            const struct card_use *card = &nodes[n].cards[k];
            json_array_append_new(
                cards,
                json_pack("{s:s, s:i, s:I, s:I, s:i}", "node", sim->sched.cache.nodes[n].node->name,
                          "index", card->index, "memory_mib", (json_int_t)card->memory_mib,
                          "allocated_mib", (json_int_t)card->used_mib, "users", (int)card->users));
        }
    }
    return cards;
}

json_t *sim_gpu_json(const struct simulator *sim)
{
    struct gpu_use use;
    struct node_cards *nodes = measure(sim, &use);
    json_t *cards = cards_json(sim, nodes);
    free(nodes);
    if (use.cards == 0 && use.pods == 0) {
        json_decref(cards);
        return NULL;
    }
    json_t *unschedulable = json_array();
    for (uint32_t i = 0; i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        if (r->gpu && r->node == NULL)
            json_array_append_new(unschedulable,
                                  json_pack("{s:s, s:s, s:s}", "namespace", r->namespace, "name",
                                            r->name, "reason", report_record_reason(sim, r)));
    }
    json_t *gpu =
        json_pack("{s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:o}", "cards", use.cards, "nodes",
                  use.nodes, "memory_mib", (json_int_t)use.memory_mib, "allocated_mib",
                  (json_int_t)use.allocated_mib, "unallocated_mib",
                  (json_int_t)(use.memory_mib - use.allocated_mib), "whole_cards_free",
                  use.whole_free, "cards_partly_used", use.partly_used, "pods_bound", use.bound,
                  "pods_unschedulable", use.unschedulable, "unschedulable", unschedulable);
    if (gpu != NULL)
        json_object_set_new(gpu, "card_list", cards);
    else
        json_decref(cards);
    return gpu;
}

uint32_t sim_gpu_cards(const struct simulator *sim, sim_gpu_card_fn card, void *ctx)
{
    struct gpu_use use;
    struct node_cards *nodes = measure(sim, &use);
    uint32_t count = 0;
    for (uint32_t n = 0; nodes != NULL && n < sim->sched.cache.node_count; n++)
        for (uint32_t k = 0; k < nodes[n].count; k++, count++) {
            const struct card_use *c = &nodes[n].cards[k];
            card(ctx, sim->sched.cache.nodes[n].node->name, c->index, c->memory_mib, c->used_mib,
                 c->users);
        }
    free(nodes);
    return count;
}
