/* gpushare: whole GPUs, fractions of a card's memory and compute, and MIG instances, with a
 * per-card ledger kept from cluster events and a fragmentation-aware score. It reads the nodes
 * the way HAMi's scheduler does and writes HAMi's decision annotations, so HAMi's device plugin
 * on the nodes takes kcycle's decisions unchanged. The phases are here; the model is in
 * gpushare.h and its files (inventory, request, fit, ledger, codec, mig). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "gpushare.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "gpushare"
#define STATE_KEY "gpushare/request"
#define NRT_KIND "NodeResourceTopology"
#define EINVAL_CODE (-22)
#define ENOMEM_CODE (-12)
#define NRT_BUCKETS 1024u
#define ANNOTATION_SIZE 8192

#define HAMI_REGISTER "hami.io/node-nvidia-register"
#define HAMI_HANDSHAKE "hami.io/node-handshake-nvidia"
#define HAMI_HANDSHAKE_LEGACY "hami.io/node-handshake"
#define HAMI_TO_ALLOCATE "hami.io/vgpu-devices-to-allocate"
#define HAMI_ALLOCATED "hami.io/vgpu-devices-allocated"
#define KCYCLE_GPUS "kcycle.io/gpus"
#define KCYCLE_ASSIGNMENT "kcycle.io/gpu-assignment"
#define NUMA_ZONES_KEY "kcycle.io/numa-zones" /* numaalign's cycle state (see README) */

/* A NodeResourceTopology seen before or after its node: zones and GPUs per zone. */
struct nrt_entry {
    char name[GPU_NAME_LEN];
    struct zone_cpus zones;
    int32_t gpus_per_zone[GPU_MAX_ZONES];
    struct nrt_entry *next;
};

struct plugin {
    struct ledger ledger;
    struct demand_mix mix;
    bool learn_demand;
    enum gpu_policy card_policy;
    enum gpu_policy node_policy;
    int64_t handshake_timeout_ms;
    bool hami_annotations;
    kc_resource gpu_count; /* nvidia.com/gpu */
    /* HAMi's handshake carries calendar times: the scheduler clock (kc_now_ms) is monotonic */
    int64_t (*calendar_ms)(void);
    struct nrt_entry *nrt[NRT_BUCKETS];
};

static int64_t realtime_ms(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
log_line(kc_log_level level, const char *format, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof(message), format, ap);
    va_end(ap);
    kc_log(level, PLUGIN_NAME, message);
}

/* Args ---------------------------------------------------------------------------------- */

static int parse_policy(const json_t *value, const char *key, bool allow_first_fit,
                        enum gpu_policy *out)
{
    const char *text = json_string_value(value);
    if (value == NULL)
        return 0;
    if (text != NULL && strcmp(text, "Binpack") == 0)
        *out = POLICY_BINPACK;
    else if (text != NULL && strcmp(text, "Spread") == 0)
        *out = POLICY_SPREAD;
    else if (allow_first_fit && text != NULL && strcmp(text, "FirstFit") == 0)
        *out = POLICY_FIRST_FIT;
    else {
        log_line(KC_LOG_ERROR, "args: %s is \"%s\"; expected Binpack or Spread%s", key,
                 text != NULL ? text : "(not a string)",
                 allow_first_fit ? " (or FirstFit, the baseline without fragmentation)" : "");
        return EINVAL_CODE;
    }
    return 0;
}

static int parse_demand(struct plugin *plugin, const json_t *list)
{
    if (list == NULL)
        return 0;
    if (!json_is_array(list) || json_array_size(list) == 0 ||
        json_array_size(list) > GPU_MAX_TYPES) {
        log_line(KC_LOG_ERROR, "args: demand must be a list of 1 to %d request shapes",
                 GPU_MAX_TYPES);
        return EINVAL_CODE;
    }
    plugin->mix.count = 0;
    plugin->learn_demand = false;
    size_t i;
    const json_t *entry;
    json_array_foreach(list, i, entry)
    {
        struct demand_type *type = &plugin->mix.types[plugin->mix.count++];
        type->memory_mib = json_integer_value(json_object_get(entry, "memory"));
        type->memory_percent = (int32_t)json_integer_value(json_object_get(entry, "memoryPercent"));
        type->cores = (int32_t)json_integer_value(json_object_get(entry, "cores"));
        const json_t *cpu = json_object_get(entry, "cpu");
        type->cpu_milli = cpu != NULL ? (int64_t)(json_number_value(cpu) * 1000.0) : 0;
        const json_t *weight = json_object_get(entry, "weight");
        type->weight = weight != NULL ? json_number_value(weight) : 1.0;
        if ((type->memory_mib <= 0 && (type->memory_percent <= 0 || type->memory_percent > 100)) ||
            type->cores < 0 || type->cores > 100 || type->weight <= 0.0 || type->cpu_milli < 0) {
            log_line(KC_LOG_ERROR,
                     "args: demand[%zu] needs memory (MiB) or memoryPercent (1-100), cores "
                     "0-100, a positive weight and cpu (cores) not negative",
                     i);
            return EINVAL_CODE;
        }
    }
    return 0;
}

static int parse_args(struct plugin *plugin, const char *args_json)
{
    static const char *const known[] = {
        "cardPolicy",      "nodePolicy", "fragmentationWeight", "demand", "handshakeTimeoutSeconds",
        "hamiAnnotations", NULL};
    json_error_t error;
    json_t *root =
        json_loads(args_json != NULL && args_json[0] != '\0' ? args_json : "{}", 0, &error);
    if (!json_is_object(root)) {
        log_line(KC_LOG_ERROR,
                 "args: expected a JSON object such as {\"cardPolicy\": "
                 "\"Binpack\"}%s%s",
                 root == NULL ? ": " : "", root == NULL ? error.text : "");
        json_decref(root);
        return EINVAL_CODE;
    }
    const char *key;
    const json_t *value;
    int rc = 0;
    json_object_foreach(root, key, value)
    {
        bool found = false;
        for (size_t i = 0; known[i] != NULL && !found; i++)
            found = strcmp(known[i], key) == 0;
        if (!found) {
            log_line(KC_LOG_ERROR, "args: unknown key \"%s\"", key);
            rc = EINVAL_CODE;
        }
    }
    const json_t *weight = json_object_get(root, "fragmentationWeight");
    const json_t *timeout = json_object_get(root, "handshakeTimeoutSeconds");
    const json_t *hami = json_object_get(root, "hamiAnnotations");
    if (rc == 0 && weight != NULL &&
        (!json_is_integer(weight) || json_integer_value(weight) < 0 ||
         json_integer_value(weight) > 1000)) {
        log_line(KC_LOG_ERROR, "args: fragmentationWeight must be an integer 0-1000");
        rc = EINVAL_CODE;
    }
    if (rc == 0 && timeout != NULL &&
        (!json_is_integer(timeout) || json_integer_value(timeout) <= 0)) {
        log_line(KC_LOG_ERROR, "args: handshakeTimeoutSeconds must be a positive integer");
        rc = EINVAL_CODE;
    }
    if (rc == 0 && hami != NULL && !json_is_boolean(hami)) {
        log_line(KC_LOG_ERROR, "args: hamiAnnotations must be true or false");
        rc = EINVAL_CODE;
    }
    if (rc == 0)
        rc = parse_policy(json_object_get(root, "cardPolicy"), "cardPolicy", true,
                          &plugin->card_policy);
    if (rc == 0)
        rc = parse_policy(json_object_get(root, "nodePolicy"), "nodePolicy", false,
                          &plugin->node_policy);
    if (rc == 0)
        rc = parse_demand(plugin, json_object_get(root, "demand"));
    if (rc == 0) {
        if (weight != NULL)
            plugin->mix.fragmentation_weight = json_integer_value(weight);
        if (timeout != NULL)
            plugin->handshake_timeout_ms = json_integer_value(timeout) * 1000;
        if (hami != NULL)
            plugin->hami_annotations = json_is_true(hami);
    }
    json_decref(root);
    return rc;
}

const struct ledger *gpushare_ledger(const void *self)
{
    return &((const struct plugin *)self)->ledger;
}

void gpushare_set_calendar(void *self, int64_t (*calendar_ms)(void))
{
    ((struct plugin *)self)->calendar_ms = calendar_ms;
}

/* Lifecycle ----------------------------------------------------------------------------- */

static void gpushare_fini(void *self)
{
    struct plugin *plugin = self;
    if (plugin == NULL)
        return;
    ledger_fini(&plugin->ledger);
    for (uint32_t b = 0; b < NRT_BUCKETS; b++) {
        struct nrt_entry *entry = plugin->nrt[b];
        while (entry != NULL) {
            struct nrt_entry *next = entry->next;
            free(entry);
            entry = next;
        }
    }
    free(plugin);
}

static int gpushare_init(const kc_host_api *host, const char *args_json, void **self)
{
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    struct plugin *plugin = calloc(1, sizeof(*plugin));
    if (plugin == NULL || ledger_init(&plugin->ledger) != 0) {
        free(plugin);
        return ENOMEM_CODE;
    }
    demand_mix_default(&plugin->mix);
    plugin->mix.fragmentation_weight = 1;
    plugin->learn_demand = true;
    plugin->card_policy = POLICY_BINPACK;
    plugin->node_policy = POLICY_BINPACK;
    plugin->handshake_timeout_ms = 60000; /* HAMi's protocol: 60 s (five minutes before) */
    plugin->hami_annotations = true;
    plugin->calendar_ms = realtime_ms;
    plugin->gpu_count = kc_resource_id("nvidia.com/gpu");
    if ((rc = parse_args(plugin, args_json)) != 0) {
        gpushare_fini(plugin);
        return rc;
    }
    *self = plugin;
    return 0;
}

static uint32_t gpushare_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE) | KC_EVENT_MASK(KC_EVENT_POD_DELETE) |
           KC_EVENT_MASK(KC_EVENT_POD_FORGET) | KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) |
           KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE);
}

/* Inventory ----------------------------------------------------------------------------- */

static uint32_t nrt_bucket(const char *name)
{
    uint32_t hash = 5381;
    for (; *name != '\0'; name++)
        hash = hash * 33 + (uint8_t)*name;
    return hash % NRT_BUCKETS;
}

static struct nrt_entry *nrt_find(struct plugin *plugin, const char *name)
{
    struct nrt_entry *entry = plugin->nrt[nrt_bucket(name)];
    while (entry != NULL && strcmp(entry->name, name) != 0)
        entry = entry->next;
    return entry;
}

/* Cards from the NodeResourceTopology zones: whole cards, memory from GFD's label. */
static void inventory_from_zones(const struct nrt_entry *nrt, const kc_node *node,
                                 struct gpu_node *out)
{
    const char *memory = kc_node_label(node, "nvidia.com/gpu.memory");
    const char *product = kc_node_label(node, "nvidia.com/gpu.product");
    memset(out, 0, sizeof(*out));
    for (uint32_t z = 0; z < nrt->zones.count; z++) {
        for (int32_t g = 0; g < nrt->gpus_per_zone[z] && out->card_count < GPU_MAX_CARDS; g++) {
            struct card *card = &out->cards[out->card_count];
            memset(card, 0, sizeof(*card));
            card->index = (int32_t)out->card_count;
            snprintf(card->uuid, sizeof(card->uuid), "%s-gpu%u", kc_node_name(node),
                     out->card_count);
            snprintf(card->model, sizeof(card->model), "%s", product != NULL ? product : "NVIDIA");
            card->numa = nrt->zones.id[z];
            card->healthy = true;
            card->mode = CARD_WHOLE;
            card->memory_mib = memory != NULL ? atoll(memory) : 1;
            card->cores = 100;
            card->split = 1;
            out->card_count++;
        }
    }
    out->source = out->card_count > 0 ? SOURCE_NRT : SOURCE_NONE;
}

/* The first source present wins: HAMi's registration, kcycle.io/gpus, the topology's zones,
 * then GPU feature discovery's labels. A malformed source is logged and the next one tried. */
static void build_inventory(struct plugin *plugin, const kc_node *node, struct gpu_node *out)
{
    const char *name = kc_node_name(node);
    char why[GPU_REASON_LEN];
    const char *hami = kc_node_annotation(node, HAMI_REGISTER);
    const struct nrt_entry *nrt = nrt_find(plugin, name);
    out->card_count = 0;
    if (hami != NULL && inventory_from_hami(hami, out, why, sizeof(why)) != 0) {
        log_line(KC_LOG_WARN, "node %s: %s: %s; trying kcycle.io/gpus", name, HAMI_REGISTER, why);
        out->card_count = 0;
    }
    const char *own = kc_node_annotation(node, KCYCLE_GPUS);
    if (out->card_count == 0 && own != NULL &&
        inventory_from_kcycle(own, name, out, why, sizeof(why)) != 0) {
        log_line(KC_LOG_WARN, "node %s: %s: %s", name, KCYCLE_GPUS, why);
        out->card_count = 0;
    }
    if (out->card_count == 0 && nrt != NULL)
        inventory_from_zones(nrt, node, out);
    if (out->card_count == 0)
        inventory_from_gfd(kc_node_label(node, "nvidia.com/gpu.product"),
                           kc_node_label(node, "nvidia.com/gpu.memory"),
                           kc_node_label(node, "nvidia.com/gpu.count"),
                           kc_node_label(node, "nvidia.com/mig.config"), name, out);
    if (out->source == SOURCE_HAMI) {
        const char *handshake = kc_node_annotation(node, HAMI_HANDSHAKE);
        if (handshake == NULL)
            handshake = kc_node_annotation(node, HAMI_HANDSHAKE_LEGACY);
        inventory_handshake(handshake, out);
    }
    out->has_zones = nrt != NULL;
    if (nrt != NULL)
        out->zones = nrt->zones;
}

/* Field by field: struct padding must not make two equal inventories differ. */
static bool same_card(const struct card *x, const struct card *y)
{
    return strcmp(x->uuid, y->uuid) == 0 && strcmp(x->model, y->model) == 0 &&
           x->index == y->index && x->numa == y->numa && x->healthy == y->healthy &&
           x->mode == y->mode && x->memory_mib == y->memory_mib && x->cores == y->cores &&
           x->split == y->split && x->mig == y->mig;
}

static bool same_cards(const struct gpu_node *a, const struct gpu_node *b)
{
    if (a->card_count != b->card_count)
        return false;
    for (uint32_t i = 0; i < a->card_count; i++) {
        if (!same_card(&a->cards[i], &b->cards[i]))
            return false;
    }
    return true;
}

/* HAMi's device plugin rewrites its annotations every 30 s and topology reports come as often:
 * only changed cards are recounted; the handshake and the zones' free CPUs are copied. */
static void refresh_node(struct plugin *plugin, const kc_node *node)
{
    struct gpu_node fresh;
    memset(&fresh, 0, sizeof(fresh));
    build_inventory(plugin, node, &fresh);
    const char *name = kc_node_name(node);
    struct gpu_node *known = ledger_node(&plugin->ledger, name);
    if (known == NULL && fresh.card_count == 0)
        return;
    if (known != NULL && same_cards(known, &fresh)) {
        known->requesting_ms = fresh.requesting_ms;
        known->deleted = fresh.deleted;
        known->source = fresh.source;
        known->has_zones = fresh.has_zones;
        known->zones = fresh.zones;
        return;
    }
    snprintf(fresh.name, sizeof(fresh.name), "%s", name);
    if (ledger_set_node(&plugin->ledger, name, &fresh) == NULL)
        log_line(KC_LOG_ERROR, "node %s: out of memory recording its GPUs", name);
}

static void nrt_event(struct plugin *plugin, const kc_event *event)
{
    const char *name = event->object_name;
    if (name == NULL)
        return;
    struct nrt_entry *entry = nrt_find(plugin, name);
    if (event->type == KC_EVENT_OBJECT_DELETE) {
        struct nrt_entry **link = &plugin->nrt[nrt_bucket(name)];
        while (*link != NULL && *link != entry)
            link = &(*link)->next;
        if (*link != NULL) {
            *link = entry->next;
            free(entry);
        }
    } else {
        struct nrt_entry parsed;
        char why[GPU_REASON_LEN];
        memset(&parsed, 0, sizeof(parsed));
        if (event->object_json == NULL ||
            inventory_from_nrt(event->object_json, &parsed.zones, parsed.gpus_per_zone, why,
                               sizeof(why)) != 0) {
            log_line(KC_LOG_WARN, "NodeResourceTopology %s: %s", name,
                     event->object_json == NULL ? "no object" : why);
            return;
        }
        if (entry == NULL) {
            entry = malloc(sizeof(*entry));
            if (entry == NULL)
                return;
            uint32_t bucket = nrt_bucket(name);
            entry->next = plugin->nrt[bucket];
            plugin->nrt[bucket] = entry;
        }
        snprintf(entry->name, sizeof(entry->name), "%s", name);
        entry->zones = parsed.zones;
        memcpy(entry->gpus_per_zone, parsed.gpus_per_zone, sizeof(entry->gpus_per_zone));
    }
    const kc_node *node = kc_node_by_name(name);
    if (node != NULL)
        refresh_node(plugin, node);
}

/* Pods ---------------------------------------------------------------------------------- */

static const char *pod_key(const kc_pod *pod)
{
    const char *uid = kc_pod_uid(pod);
    return uid != NULL ? uid : "";
}

/* A bound pod the ledger does not know (a restart, another scheduler replica): charged from
 * its decision annotations, kcycle's first (it has MIG placements), then HAMi's. */
static void adopt_bound_pod(struct plugin *plugin, const kc_pod *pod)
{
    const char *node = kc_pod_node_name(pod);
    if (node == NULL || node[0] == '\0' || ledger_charge_of(&plugin->ledger, pod_key(pod)) != NULL)
        return;
    const char *own = kc_pod_annotation(pod, KCYCLE_ASSIGNMENT);
    const char *hami = kc_pod_annotation(pod, HAMI_ALLOCATED);
    if (hami == NULL)
        hami = kc_pod_annotation(pod, HAMI_TO_ALLOCATE);
    if (own == NULL && hami == NULL)
        return;
    struct charge *charge = calloc(1, sizeof(*charge));
    if (charge == NULL)
        return;
    snprintf(charge->uid, sizeof(charge->uid), "%s", pod_key(pod));
    snprintf(charge->node, sizeof(charge->node), "%s", node);
    int rc = own != NULL ? assignment_decode(own, charge) : hami_decode(hami, charge);
    if (rc != 0) {
        log_line(KC_LOG_WARN, "pod %s/%s: cannot read its GPU decision (%s); not counted",
                 kc_pod_namespace(pod), kc_pod_name(pod),
                 own != NULL ? KCYCLE_ASSIGNMENT : HAMI_ALLOCATED);
    } else if (charge->count > 0 && (rc = ledger_adopt(&plugin->ledger, charge)) != 0) {
        log_line(KC_LOG_WARN, "pod %s/%s on %s: its GPU decision cannot be recorded; not counted",
                 kc_pod_namespace(pod), kc_pod_name(pod), node);
    } else {
        const struct charge *stored = ledger_charge_of(&plugin->ledger, charge->uid);
        if (stored != NULL && !stored->applied && ledger_node(&plugin->ledger, node) != NULL)
            log_line(KC_LOG_WARN,
                     "pod %s/%s on %s: its GPU decision over-commits a card; the card takes no "
                     "new pod until enough of its pods leave",
                     kc_pod_namespace(pod), kc_pod_name(pod), node);
    }
    free(charge);
}

static void gpushare_on_event(void *self, const kc_event *event)
{
    struct plugin *plugin = self;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
        if (event->node != NULL)
            refresh_node(plugin, event->node);
        break;
    case KC_EVENT_NODE_DELETE:
        if (event->node != NULL)
            ledger_remove_node(&plugin->ledger, kc_node_name(event->node));
        break;
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE: {
        const char *node = kc_pod_node_name(event->pod);
        if (node != NULL && node[0] != '\0')
            adopt_bound_pod(plugin, event->pod);
        break;
    }
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET: ledger_release(&plugin->ledger, pod_key(event->pod)); break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
    case KC_EVENT_OBJECT_DELETE:
        if (event->object_kind != NULL && strcmp(event->object_kind, NRT_KIND) == 0)
            nrt_event(plugin, event);
        break;
    default: break;
    }
}

/* PreFilter ----------------------------------------------------------------------------- */

static kc_status gpushare_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct plugin *plugin = self;
    struct pod_request *request = malloc(sizeof(*request));
    char reason[GPU_REASON_LEN + 64];
    if (request == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    char why[GPU_REASON_LEN];
    if (request_parse(pod, plugin->card_policy, request, why, sizeof(why)) != 0) {
        snprintf(reason, sizeof(reason), "pod %s/%s: %s", kc_pod_namespace(pod), kc_pod_name(pod),
                 why);
        kc_cycle_reject(cycle, reason);
        free(request);
        return KC_UNRESOLVABLE;
    }
    if (request->count == 0) {
        free(request);
        return KC_SKIP;
    }
    if (kc_pod_annotation(pod, "hami.io/node-scheduler-policy") == NULL)
        request->node_policy = plugin->node_policy; /* args, when the pod does not say */
    /* the demand the score weighs is what pods ask for, one observation per attempt: PreFilter
     * runs for every attempt in both isolation modes, where pod events reach a plugin host in
     * batches */
    for (uint32_t c = 0; plugin->learn_demand && c < request->count; c++)
        demand_mix_observe(&plugin->mix, &request->containers[c], request->cpu_milli);
    if (kc_cycle_set(cycle, STATE_KEY, request, free) != 0) {
        free(request);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

/* Filter -------------------------------------------------------------------------------- */

/* The node's cards when they may be used now; NULL with a reason when not. */
static const struct gpu_node *usable_node(const struct plugin *plugin, const kc_node *node,
                                          const char **reason)
{
    const struct gpu_node *gpus = ledger_node(&plugin->ledger, kc_node_name(node));
    if (gpus == NULL || gpus->card_count == 0) {
        *reason = "node has no GPUs";
        return NULL;
    }
    if (gpus->deleted) {
        *reason = "GPU devices unregistered (" HAMI_HANDSHAKE " is Deleted)";
        return NULL;
    }
    /* HAMi keeps a node whose kubelet still advertises the cards, whatever the handshake */
    if (gpus->requesting_ms > 0 &&
        plugin->calendar_ms() - gpus->requesting_ms > plugin->handshake_timeout_ms &&
        kc_node_allocatable(node, plugin->gpu_count) <= 0) {
        *reason = "GPU registration stale (HAMi's device plugin did not answer the handshake)";
        return NULL;
    }
    return gpus;
}

static kc_status gpushare_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node)
{
    (void)pod;
    const struct plugin *plugin = self;
    const struct pod_request *request = kc_cycle_get(cycle, STATE_KEY);
    if (request == NULL)
        return KC_SUCCESS; /* PreFilter answered Skip: the pod asks for no GPU */
    const char *why = NULL;
    const struct gpu_node *gpus = usable_node(plugin, node, &why);
    if (gpus == NULL) {
        kc_cycle_reject(cycle, why);
        return KC_UNSCHEDULABLE;
    }
    struct placement placement;
    char reason[GPU_REASON_LEN];
    if (!fit_pod(gpus, request, &plugin->mix, -1, &placement, reason, sizeof(reason))) {
        kc_cycle_reject(cycle, reason);
        return KC_UNSCHEDULABLE;
    }
    return KC_SUCCESS;
}

/* Score --------------------------------------------------------------------------------- */

static kc_status gpushare_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    (void)self, (void)pod;
    return kc_cycle_get(cycle, STATE_KEY) != NULL ? KC_SUCCESS : KC_SKIP;
}

/* Raw score: the fragmentation the placement adds (expected stranded MiB x 1000, times the
 * weight) dominates; the node policy (GPU memory in use after, per mille) breaks ties. */
static kc_status gpushare_score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                                int64_t *score)
{
    (void)pod;
    const struct plugin *plugin = self;
    const struct pod_request *request = kc_cycle_get(cycle, STATE_KEY);
    *score = 0;
    if (request != NULL && request->card_policy == POLICY_FIRST_FIT) {
        /* the baseline: the first feasible node in the snapshot's order */
        *score = -(int64_t)kc_node_index(node);
        return KC_SUCCESS;
    }
    const char *why;
    const struct gpu_node *gpus = request != NULL ? usable_node(plugin, node, &why) : NULL;
    struct placement placement;
    char reason[GPU_REASON_LEN];
    int64_t cpus = kc_node_allocatable(node, KC_RESOURCE_CPU);
    int64_t free_cpu = cpus > 0 ? cpus - kc_node_requested(node, KC_RESOURCE_CPU) : -1;
    if (gpus == NULL ||
        !fit_pod(gpus, request, &plugin->mix, free_cpu < 0 && cpus > 0 ? 0 : free_cpu, &placement,
                 reason, sizeof(reason)))
        return KC_SUCCESS;
    int64_t total = 0, used = 0;
    for (uint32_t i = 0; i < gpus->card_count; i++) {
        total += gpus->cards[i].memory_mib;
        used += gpus->cards[i].used.memory_mib;
    }
    for (uint32_t i = 0; i < placement.count; i++)
        used += placement.items[i].memory_mib;
    int64_t permille = total > 0 ? used * 1000 / total : 0;
    int64_t policy = request->node_policy == POLICY_SPREAD ? 1000 - permille : permille;
    *score = -placement.fragmentation_delta * plugin->mix.fragmentation_weight + policy;
    return KC_SUCCESS;
}

static kc_status gpushare_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                          const kc_node *const *nodes, int64_t *scores,
                                          uint32_t count)
{
    (void)self, (void)cycle, (void)pod, (void)nodes;
    if (count == 0)
        return KC_SUCCESS;
    int64_t lowest = scores[0], highest = scores[0];
    for (uint32_t i = 1; i < count; i++) {
        lowest = scores[i] < lowest ? scores[i] : lowest;
        highest = scores[i] > highest ? scores[i] : highest;
    }
    for (uint32_t i = 0; i < count; i++)
        scores[i] = highest == lowest ? 0 : (scores[i] - lowest) * 100 / (highest - lowest);
    return KC_SUCCESS;
}

/* Reserve ------------------------------------------------------------------------------- */

static void annotate(kc_cycle *cycle, const struct plugin *plugin, const kc_pod *pod,
                     const struct gpu_node *gpus, const struct pod_request *request,
                     const struct placement *placement)
{
    char *text = malloc(ANNOTATION_SIZE);
    if (text == NULL)
        return;
    if (assignment_encode(gpus, request, placement, text, ANNOTATION_SIZE) > 0)
        kc_cycle_annotate(cycle, KCYCLE_ASSIGNMENT, text);
    if (plugin->hami_annotations &&
        hami_encode(gpus, request, placement, kc_pod_container_count(pod, 0), text,
                    ANNOTATION_SIZE) >= 0) {
        char seconds[32];
        snprintf(seconds, sizeof(seconds), "%lld", (long long)(kc_now_ms() / 1000));
        kc_cycle_annotate(cycle, HAMI_TO_ALLOCATE, text);
        kc_cycle_annotate(cycle, HAMI_ALLOCATED, text);
        kc_cycle_annotate(cycle, "hami.io/vgpu-node", gpus->name);
        kc_cycle_annotate(cycle, "hami.io/vgpu-time", seconds);
        kc_cycle_annotate(cycle, "hami.io/bind-time", seconds);
        /* HAMi's device plugin looks for its pending pod in this phase */
        kc_cycle_annotate(cycle, "hami.io/bind-phase", "allocating");
    }
    free(text);
}

/* numaalign's choice, when it runs before gpushare: the zones it took the pod's CPUs from, as
 * it writes them on the Binding ("1", "0,1"), under the cycle-state key of that annotation. */
static uint32_t numaalign_zones(kc_cycle *cycle)
{
    const char *zones = kc_cycle_get(cycle, NUMA_ZONES_KEY);
    uint32_t mask = 0;
    for (const char *cursor = zones; cursor != NULL && *cursor != '\0';) {
        char *end;
        long id = strtol(cursor, &end, 10);
        if (end == cursor || id < 0 || id >= 32)
            return 0; /* unreadable: no constraint rather than a wrong one */
        mask |= 1u << id;
        cursor = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return 0;
    }
    return mask;
}

static kc_status gpushare_reserve(void *self, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    struct plugin *plugin = self;
    const struct pod_request *state = kc_cycle_get(cycle, STATE_KEY);
    if (state == NULL)
        return KC_SUCCESS;
    struct pod_request constrained;
    const struct pod_request *request = state;
    uint32_t zones = state->single_numa_node ? numaalign_zones(cycle) : 0;
    if (zones != 0) {
        constrained = *state;
        constrained.zone_mask = zones;
        request = &constrained;
    }
    const char *why = NULL;
    const struct gpu_node *gpus = usable_node(plugin, node, &why);
    struct placement placement;
    char reason[GPU_REASON_LEN];
    if (gpus == NULL ||
        !fit_pod(gpus, request, &plugin->mix, -1, &placement, reason, sizeof(reason))) {
        kc_cycle_reject(cycle, gpus == NULL ? why : reason);
        return KC_UNSCHEDULABLE;
    }
    struct charge *charge = malloc(sizeof(*charge));
    if (charge == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    ledger_release(&plugin->ledger, pod_key(pod)); /* a retry replaces its earlier charge */
    charge_from_placement(charge, pod_key(pod), gpus, request, &placement);
    int rc = ledger_charge(&plugin->ledger, charge);
    free(charge);
    if (rc != 0) {
        kc_cycle_reject(cycle, rc == -28 ? "GPUs taken meanwhile" : PLUGIN_NAME ": out of memory");
        return rc == -28 ? KC_UNSCHEDULABLE : KC_ERROR;
    }
    annotate(cycle, plugin, pod, gpus, request, &placement);
    return KC_SUCCESS;
}

static void gpushare_unreserve(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    (void)cycle, (void)node;
    struct plugin *plugin = self;
    ledger_release(&plugin->ledger, pod_key(pod));
}

static const kc_plugin_ops gpushare_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = gpushare_init,
    .fini = gpushare_fini,
    .requeue_events = gpushare_requeue_events,
    .pre_filter = gpushare_pre_filter,
    .filter = gpushare_filter,
    .pre_score = gpushare_pre_score,
    .score = gpushare_score,
    .normalize_score = gpushare_normalize_score,
    .reserve = gpushare_reserve,
    .unreserve = gpushare_unreserve,
    .on_event = gpushare_on_event,
};

static const kc_plugin_descriptor gpushare_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &gpushare_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &gpushare_descriptor;
}
