/* numaalign: NUMA-zone fit and scoring from NodeResourceTopology objects
 * (topology.node.k8s.io/v1alpha2, as kcycle-topology-agent, NFD and RTE write them). Filter
 * replays the kubelet topology manager's admission (hints.c) for the node's policy and scope,
 * so a pod is only sent where the kubelet will not reject it with TopologyAffinityError.
 * Reserve charges the chosen zones at once and keeps the charge until the node's next
 * topology report accounts for the pod, which closes the window in which back-to-back
 * placements would count the same free CPUs twice. The zones go on the Binding as
 * kcycle.io/numa-zones. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

KC_PLUGIN_DEFINE_HOST;

void numaalign_log(kc_log_level level, const char *format, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof(message), format, ap);
    va_end(ap);
    kc_log(level, PLUGIN_NAME, message);
}

/* ---- node index cache ---------------------------------------------------------------------- */

/* Room for count nodes; called from PreFilter, never while Filter runs. */
static int index_reserve(struct numaalign *self, uint32_t count)
{
    if (count <= self->by_index_capacity)
        return 0;
    struct index_entry *grown = realloc(self->by_index, count * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    memset(grown + self->by_index_capacity, 0,
           (count - self->by_index_capacity) * sizeof(*grown));
    self->by_index = grown;
    self->by_index_capacity = count;
    return 0;
}

static void index_clear(struct numaalign *self)
{
    if (self->by_index != NULL)
        memset(self->by_index, 0, self->by_index_capacity * sizeof(*self->by_index));
}

/* The node's entry, filled by name on first use; NULL when the index is out of range. */
static struct index_entry *index_entry_of(struct numaalign *self, const kc_node *node)
{
    uint32_t index = kc_node_index(node);
    if (index >= self->by_index_capacity)
        return NULL;
    struct index_entry *entry = &self->by_index[index];
    if (entry->handle != node) {
        struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
        entry->node = n;
        entry->cycle = 0;
        entry->handle = node;
        if (n != NULL) {
            entry->hot = n->hot;
            n->entry = index + 1;
        }
    }
    return entry;
}

/* The packed view of the node: its entry's copy, or the node's own out of range. */
static const struct numa_hot *hot_of(struct numaalign *self, const struct index_entry *entry,
                                     const kc_node *node)
{
    if (entry != NULL)
        return entry->node != NULL ? &entry->hot : NULL;
    const struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
    return n != NULL ? &n->hot : NULL;
}

/* ---- phases ------------------------------------------------------------------------------- */

static kc_status numaalign_pre_filter(void *self_, kc_cycle *cycle, const kc_pod *pod)
{
    struct pod_state *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return KC_ERROR;
    char reason[256];
    int aligned = request_read(pod, st, reason, sizeof(reason));
    if (aligned <= 0) {
        free(st);
        if (aligned == 0)
            return KC_SKIP; /* nothing the topology manager aligns: not this plugin's pod */
        kc_cycle_reject(cycle, reason); /* no node can change that */
        return KC_UNRESOLVABLE;
    }
    struct numaalign *self = self_;
    ledger_expire(self, NULL); /* charges whose grace ran out stop counting before Filter */
    st->cycle = ++self->cycles;
    if (index_reserve(self, kc_node_count()) < 0 || kc_cycle_set(cycle, STATE_KEY, st, free) < 0) {
        free(st);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static kc_status numaalign_filter(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                  const kc_node *node)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    if (st == NULL)
        return KC_SUCCESS;
    struct index_entry *entry = index_entry_of(self, node);
    const struct numa_hot *h = hot_of(self, entry, node);
    if (evaluate_skips(h))
        return KC_SUCCESS; /* no topology known, or no policy: the kubelet admits it */
    struct evaluation ev;
    evaluate_pod(h, st, false, &ev);
    if (entry != NULL) {
        entry->cycle = st->cycle;
        entry->preferred = ev.preferred;
        entry->zones = ev.zones;
    }
    if (ev.admitted)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, h->scope == NUMA_SCOPE_POD ? "cannot align pod"
                                                      : "cannot align container");
    return KC_UNSCHEDULABLE;
}

static kc_status numaalign_pre_score(void *self_, kc_cycle *cycle, const kc_pod *pod)
{
    return kc_cycle_get(cycle, STATE_KEY) != NULL ? KC_SUCCESS : KC_SKIP;
}

static int64_t zone_sum(const int64_t row[NUMA_MAX_ZONES], uint32_t zones)
{
    int64_t sum = 0;
    for (uint32_t z = 0; z < NUMA_MAX_ZONES; z++)
        if (zones & (1u << z))
            sum += row[z];
    return sum;
}

/* Allocation scores over the chosen zones, after the pod: the fraction of each requested
 * resource's allocatable in use, combined as the strategy says. */
static int64_t allocation_score(const struct numaalign *self, const struct numa_node *n,
                                const struct evaluation *ev)
{
    double fractions[NUMA_MAX_RESOURCES], sum = 0;
    uint32_t count = 0;
    for (uint32_t r = 0; r < n->hot.resource_count; r++) {
        int64_t taken = zone_sum(ev->charge[r], ev->zones);
        int64_t allocatable = zone_sum(n->allocatable[r], ev->zones);
        if (taken <= 0 || allocatable <= 0)
            continue;
        int64_t used = allocatable - zone_sum(n->available[r], ev->zones) +
                       zone_sum(n->charged[r], ev->zones) + taken;
        double f = (double)used / (double)allocatable;
        fractions[count++] = f > 1 ? 1 : f < 0 ? 0 : f;
        sum += fractions[count - 1];
    }
    if (count == 0)
        return 0;
    double mean = sum / count;
    if (self->strategy == SCORE_LEAST_ALLOCATED)
        return (int64_t)((1 - mean) * 100);
    if (self->strategy == SCORE_MOST_ALLOCATED)
        return (int64_t)(mean * 100);
    double variance = 0;
    for (uint32_t i = 0; i < count; i++)
        variance += (fractions[i] - mean) * (fractions[i] - mean);
    variance /= count;
    /* 1 - standard deviation, without libm: Newton's square root is enough at this precision */
    double root = variance;
    for (int i = 0; i < 30 && root > 0; i++)
        root = (root + variance / root) / 2;
    return (int64_t)((1 - root) * 100);
}

static kc_status numaalign_score(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node, int64_t *score)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    *score = 0;
    if (st == NULL)
        return KC_SUCCESS;
    struct index_entry *entry = index_entry_of(self, node);
    const struct numa_hot *h = hot_of(self, entry, node);
    if (evaluate_skips(h))
        return KC_SUCCESS;
    struct evaluation ev;
    if (self->strategy == SCORE_LEAST_NUMA_NODES && entry != NULL && entry->cycle == st->cycle) {
        ev.zones = entry->zones; /* what Filter found: nothing changed since */
        ev.preferred = entry->preferred;
    } else {
        evaluate_pod(h, st, self->strategy != SCORE_LEAST_NUMA_NODES, &ev);
    }
    if (self->strategy == SCORE_LEAST_NUMA_NODES) {
        /* fewest zones first, comparable across nodes of different sizes */
        uint32_t used = (uint32_t)__builtin_popcount(ev.zones);
        if (used == 0)
            used = 1;
        *score = 100 * (int64_t)(NUMA_MAX_ZONES - used) / (NUMA_MAX_ZONES - 1);
    } else {
        const struct numa_node *n = entry != NULL ? entry->node
                                                  : table_get(&self->nodes, kc_node_name(node));
        *score = allocation_score(self, n, &ev);
    }
    if (!ev.preferred)
        *score /= 2; /* best-effort admits it, but the zones are not the narrowest */
    return KC_SUCCESS;
}

static void zones_text(const struct numa_node *n, uint32_t zones, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t z = 0; z < n->hot.zone_count; z++)
        if (zones & (1u << z))
            used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%d",
                                     used > 0 ? "," : "", n->zone_id[z]);
}

static kc_status numaalign_reserve(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                   const kc_node *node)
{
    struct numaalign *self = self_;
    struct pod_state *st = kc_cycle_get(cycle, STATE_KEY);
    struct numa_node *n = table_get(&self->nodes, kc_node_name(node));
    if (st == NULL || n == NULL || evaluate_skips(&n->hot))
        return KC_SUCCESS;
    ledger_expire(self, n);
    struct evaluation ev;
    evaluate_pod(&n->hot, st, true, &ev);
    if (!ev.admitted) {
        kc_cycle_reject(cycle, "cannot align pod: the node's zones changed since Filter");
        return KC_UNSCHEDULABLE;
    }
    ledger_untrack(self, kc_pod_uid(pod)); /* a retried reserve replaces the earlier charge */
    if (ledger_track(self, pod, n, &ev) < 0)
        return KC_ERROR;
    char zones[64];
    zones_text(n, ev.zones, zones, sizeof(zones));
    if (zones[0] != '\0') {
        kc_cycle_annotate(cycle, ZONES_ANNOTATION, zones);
        /* the same text in the cycle, for plugins placed after this one that must use the
         * chosen zones (gpushare's cards under single-numa-node; plugins/numaalign/README.md) */
        char *copy = strdup(zones);
        if (copy == NULL || kc_cycle_set(cycle, ZONES_ANNOTATION, copy, free) < 0)
            free(copy);
    }
    if (!ev.preferred)
        kc_cycle_annotate(cycle, ALIGNED_ANNOTATION, "false");
    return KC_SUCCESS;
}

static void numaalign_unreserve(void *self_, kc_cycle *cycle, const kc_pod *pod,
                                const kc_node *node)
{
    ledger_untrack(self_, kc_pod_uid(pod));
}

/* ---- events ------------------------------------------------------------------------------- */

static void numaalign_on_event(void *self_, const kc_event *event)
{
    struct numaalign *self = self_;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_DELETE: index_clear(self); break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        if (event->object_kind != NULL && strcmp(event->object_kind, NRT_KIND) == 0 &&
            event->object_json != NULL && event->object_name != NULL) {
            topology_update(self, event->object_name, event->object_json);
            index_clear(self); /* the node may have a topology now */
        }
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (event->object_kind != NULL && strcmp(event->object_kind, NRT_KIND) == 0) {
            struct numa_node *n = table_get(&self->nodes, event->object_name);
            if (n != NULL)
                n->hot.has_topology = false;
            index_clear(self);
        }
        break;
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
        if (event->pod != NULL)
            ledger_adopt(self, event->pod);
        break;
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET:
        if (event->pod != NULL)
            ledger_untrack(self, kc_pod_uid(event->pod));
        break;
    default: break;
    }
}

/* Free capacity in a zone is what makes a parked pod fit again. */
static uint32_t numaalign_requeue_events(void *self_)
{
    return KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE);
}

/* ---- init --------------------------------------------------------------------------------- */

static int parse_args(struct numaalign *self, const char *args_json)
{
    static const char *const strategies[] = {"LeastNUMANodes", "LeastAllocated", "MostAllocated",
                                             "BalancedAllocation"};
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    if (!json_is_object(args)) {
        numaalign_log(KC_LOG_ERROR, "args are not a JSON object: %s", error.text);
        json_decref(args);
        return -EINVAL;
    }
    int rc = 0;
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value)
    {
        if (strcmp(key, "scoringStrategy") == 0) {
            const char *text = json_string_value(value);
            size_t i = 0;
            for (; text != NULL && i < 4 && strcmp(text, strategies[i]) != 0; i++)
                ;
            if (text == NULL || i == 4) {
                numaalign_log(KC_LOG_ERROR, "scoringStrategy must be one of LeastNUMANodes, "
                                          "LeastAllocated, MostAllocated, BalancedAllocation");
                rc = -EINVAL;
            } else {
                self->strategy = (score_strategy)i;
            }
        } else if (strcmp(key, "unlistedPodGraceSeconds") == 0) {
            if (!json_is_integer(value) || json_integer_value(value) < 0) {
                numaalign_log(KC_LOG_ERROR, "unlistedPodGraceSeconds must be an integer >= 0");
                rc = -EINVAL;
            } else {
                self->unlisted_grace_ms = json_integer_value(value) * 1000;
            }
        } else {
            numaalign_log(KC_LOG_ERROR, "unknown argument '%s' (known: scoringStrategy, "
                                      "unlistedPodGraceSeconds)", key);
            rc = -EINVAL;
        }
    }
    json_decref(args);
    return rc;
}

static void numaalign_fini(void *self_)
{
    struct numaalign *self = self_;
    if (self == NULL)
        return;
    for (uint32_t i = 0; i < self->pods.capacity; i++)
        if (self->pods.slots[i].entry != NULL)
            ledger_free(self->pods.slots[i].entry);
    for (uint32_t i = 0; i < self->nodes.capacity; i++) {
        topology_node_free(self->nodes.slots[i].entry);
    }
    ledger_free_pending(self);
    free(self->pods.slots);
    free(self->nodes.slots);
    free(self->by_index);
    free(self);
}

static int numaalign_init(const kc_host_api *host, const char *args_json, void **out)
{
    if (kc_plugin_attach(host) < 0)
        return -EINVAL;
    struct numaalign *self = calloc(1, sizeof(*self));
    if (self == NULL)
        return -ENOMEM;
    self->strategy = SCORE_LEAST_NUMA_NODES;
    self->unlisted_grace_ms = 60000;
    int rc = parse_args(self, args_json);
    if (rc < 0) {
        numaalign_fini(self);
        return rc;
    }
    *out = self;
    return 0;
}

static const kc_plugin_ops numaalign_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = numaalign_init,
    .fini = numaalign_fini,
    .requeue_events = numaalign_requeue_events,
    .pre_filter = numaalign_pre_filter,
    .filter = numaalign_filter,
    .pre_score = numaalign_pre_score,
    .score = numaalign_score,
    .reserve = numaalign_reserve,
    .unreserve = numaalign_unreserve,
    .on_event = numaalign_on_event,
};

static const kc_plugin_descriptor numaalign_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &numaalign_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &numaalign_descriptor;
}
