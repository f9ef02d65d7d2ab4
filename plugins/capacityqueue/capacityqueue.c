/* capacityqueue: hierarchical team queues (CapacityQueue, scheduling.kcycle.io/v1alpha1) with
 * guarantees, limits at every level, borrowing of idle capacity, reclaim of borrowed capacity
 * across nodes (reclaim.c), and a QueueSort in weighted dominant-resource-share order. The
 * tree and the admission rule are in queues.c; plugins/capacityqueue/README.md says what a
 * user sees. */
#include "capacityqueue.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "capacityqueue"
#define KIND "CapacityQueue"
#define QUEUE_LABEL "kcycle.io/queue"
#define VOLCANO_QUEUE "scheduling.volcano.sh/queue-name"
#define DEFAULT_QUEUE "default"

static uint64_t hash_text(const char *text)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *text != '\0'; text++)
        h = (h ^ (unsigned char)*text) * 1099511628211ull;
    return h;
}

/* ---- the pods counted, by uid (chained buckets, doubled at load 1) --------------------------- */

struct cq_pod *cq_pod_find(const struct cq_plugin *pl, const char *uid)
{
    if (pl->pod_buckets == 0 || uid == NULL)
        return NULL;
    struct cq_pod *p = pl->pods[hash_text(uid) & (pl->pod_buckets - 1)];
    while (p != NULL && strcmp(p->uid, uid) != 0)
        p = p->next;
    return p;
}

static int pods_grow(struct cq_plugin *pl)
{
    uint32_t buckets = pl->pod_buckets == 0 ? 256 : pl->pod_buckets * 2;
    struct cq_pod **table = calloc(buckets, sizeof(*table));
    if (table == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < pl->pod_buckets; i++)
        for (struct cq_pod *p = pl->pods[i], *next; p != NULL; p = next) {
            next = p->next;
            uint64_t b = hash_text(p->uid) & (buckets - 1);
            p->next = table[b];
            table[b] = p;
        }
    free(pl->pods);
    pl->pods = table;
    pl->pod_buckets = buckets;
    return 0;
}

static void pod_free(struct cq_pod *p)
{
    free(p->uid);
    free(p->ns);
    free(p->queue);
    free(p->node);
    free(p->group);
    free(p->leaving_for);
    free(p);
}

void cq_pod_request(const struct cq_pod *p, int64_t *out)
{
    memset(out, 0, sizeof(int64_t) * KC_RESOURCE_MAX);
    for (uint32_t i = 0; i < p->count; i++)
        out[p->ids[i]] = p->values[i];
}

/* ---- namespaces: the default queue of their pods --------------------------------------------- */

static struct cq_namespace **namespace_slot(struct cq_plugin *pl, const char *name)
{
    struct cq_namespace **at = &pl->namespaces;
    while (*at != NULL && strcmp((*at)->name, name) != 0)
        at = &(*at)->next;
    return at;
}

static const char *namespace_queue(struct cq_plugin *pl, const char *name)
{
    struct cq_namespace *ns = name != NULL ? *namespace_slot(pl, name) : NULL;
    return ns != NULL ? ns->queue : NULL;
}

/* true when the namespace's default queue changed. */
static bool namespace_put(struct cq_plugin *pl, const char *name, const char *json)
{
    json_t *root = json_loads(json != NULL ? json : "{}", 0, NULL);
    const char *queue = json_string_value(json_object_get(
        json_object_get(json_object_get(root, "metadata"), "annotations"), QUEUE_LABEL));
    struct cq_namespace **at = namespace_slot(pl, name);
    bool changed = false;
    if (*at != NULL && (queue == NULL || strcmp((*at)->queue, queue) != 0)) {
        struct cq_namespace *gone = *at;
        *at = gone->next;
        free(gone->name);
        free(gone->queue);
        free(gone);
        changed = true;
    }
    if (queue != NULL && *at == NULL) {
        struct cq_namespace *ns = calloc(1, sizeof(*ns));
        if (ns != NULL && (ns->name = strdup(name)) != NULL &&
            (ns->queue = strdup(queue)) != NULL) {
            ns->next = pl->namespaces;
            pl->namespaces = ns;
            changed = true;
        } else if (ns != NULL) {
            free(ns->name);
            free(ns);
        }
    }
    json_decref(root);
    return changed;
}

/* ---- the queue of a pod ---------------------------------------------------------------------- */

static const char *queue_of(struct cq_plugin *pl, const kc_pod *pod, bool *explicit_queue)
{
    const char *queue = kc_pod_label(pod, QUEUE_LABEL);
    if (queue == NULL)
        queue = kc_pod_annotation(pod, VOLCANO_QUEUE);
    *explicit_queue = queue != NULL;
    if (queue == NULL)
        queue = namespace_queue(pl, kc_pod_namespace(pod));
    return queue != NULL && queue[0] != '\0' ? queue : DEFAULT_QUEUE;
}

void cq_refresh_cluster(struct cq_plugin *pl)
{
    if (!pl->cluster_dirty)
        return;
    memset(pl->tree.cluster, 0, sizeof(pl->tree.cluster));
    uint32_t count = kc_node_count();
    for (uint32_t i = 0; i < count; i++) {
        const kc_node *node = kc_node_at(i);
        for (kc_resource r = 0; r < KC_RESOURCE_MAX; r++)
            pl->tree.cluster[r] += kc_node_allocatable(node, r);
    }
    pl->cluster_dirty = false;
}

/* The weighted dominant share the pod adds to its queue. */
static double pod_share(const struct cq_plugin *pl, const struct cq_pod *p, int32_t weight)
{
    int64_t request[KC_RESOURCE_MAX];
    cq_pod_request(p, request);
    return cq_dominant_share(&pl->tree, request, weight);
}

/* The queue's line of waiting pods of one priority (created on first use); NULL out of memory. */
static struct cq_band *band_of(struct cq_queue *q, int32_t priority)
{
    for (uint32_t i = 0; i < q->band_count; i++)
        if (q->bands[i].priority == priority)
            return &q->bands[i];
    struct cq_band *grown = realloc(q->bands, (q->band_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    q->bands = grown;
    grown[q->band_count] = (struct cq_band){.priority = priority};
    return &grown[q->band_count++];
}

/* A pod starts waiting in its queue: its place in the fair order is the queue's weighted
 * dominant share once the pods of its priority ahead of it in that queue and itself are
 * admitted. Fixed when the pod arrives, so the runtime's heap stays ordered (a key read from
 * live usage would go stale inside the heap). One line per priority: a pod of higher priority
 * starts from the queue's share now, not behind the queue's backlog of lower ones, and wins
 * the ties. */
static void tag_pending(struct cq_plugin *pl, struct cq_pod *p)
{
    if (p->index < 0) {
        p->tag = 0;
        p->tagged = false;
        return;
    }
    struct cq_queue *q = &pl->tree.queues[p->index];
    cq_refresh_cluster(pl);
    /* a line starts at the later of the queue's share now and its own last waiting pod (no
     * shared virtual time: see README.md, "Limits") */
    double start = cq_dominant_share(&pl->tree, q->usage, q->weight);
    struct cq_band *band = band_of(q, p->priority);
    if (band != NULL && band->pending > 0 && band->next_tag > start)
        start = band->next_tag;
    p->tag = start + pod_share(pl, p, q->weight);
    p->tagged = true;
    if (band != NULL)
        band->next_tag = p->tag;
}

/* Count (sign 1) or uncount (-1) the pod in its queue. */
static void count_pod(struct cq_plugin *pl, struct cq_pod *p, int sign)
{
    if (p->index < 0)
        return;
    int64_t request[KC_RESOURCE_MAX];
    if (p->leaving || p->claimed)
        cq_pod_request(p, request);
    if (p->node != NULL && p->leaving)
        cq_tree_hold(&pl->tree, p->index, request, p->mask, sign, CQ_LEAVING);
    if (p->node == NULL && p->claimed)
        cq_tree_hold(&pl->tree, p->index, request, p->mask, sign, CQ_CLAIMED);
    if (p->node != NULL) {
        cq_pod_request(p, request);
        cq_tree_account(&pl->tree, p->index, request, p->mask, sign, 1);
    } else {
        struct cq_queue *q = &pl->tree.queues[p->index];
        struct cq_band *band = band_of(q, p->priority);
        q->pending += (uint32_t)sign;
        if (band != NULL)
            band->pending += (uint32_t)sign;
        q->status_dirty = true;
    }
}

void cq_pod_mark(struct cq_plugin *pl, struct cq_pod *p, bool leaving, bool claimed)
{
    if (p->leaving == leaving && p->claimed == claimed)
        return;
    count_pod(pl, p, -1);
    p->leaving = leaving;
    p->claimed = claimed;
    count_pod(pl, p, 1);
}

void cq_pod_evicted_for(struct cq_plugin *pl, struct cq_pod *victim, const char *uid)
{
    free(victim->leaving_for);
    victim->leaving_for = strdup(uid); /* NULL when out of memory: then never given back */
    cq_pod_mark(pl, victim, true, false);
}

/* The runtime dropped the nomination of preemptor uid (an eviction failed): its victims that
 * are not terminating are no longer counted as leaving. */
static void victims_stay(struct cq_plugin *pl, const char *uid)
{
    for (uint32_t b = 0; b < pl->pod_buckets; b++)
        for (struct cq_pod *p = pl->pods[b]; p != NULL; p = p->next) {
            if (p->leaving_for == NULL || strcmp(p->leaving_for, uid) != 0)
                continue;
            free(p->leaving_for);
            p->leaving_for = NULL;
            const kc_node *node = p->node != NULL ? kc_node_by_name(p->node) : NULL;
            bool terminating = false;
            for (uint32_t i = 0; node != NULL && i < kc_node_pod_count(node); i++) {
                const kc_pod *on = kc_node_pod_at(node, i);
                if (on != NULL && strcmp(kc_pod_uid(on), p->uid) == 0)
                    terminating = kc_pod_terminating(on) != 0;
            }
            cq_pod_mark(pl, p, terminating, false);
        }
}

static void untrack(struct cq_plugin *pl, const char *uid)
{
    if (pl->pod_buckets == 0)
        return;
    struct cq_pod **at = &pl->pods[hash_text(uid) & (pl->pod_buckets - 1)];
    while (*at != NULL && strcmp((*at)->uid, uid) != 0)
        at = &(*at)->next;
    if (*at == NULL)
        return;
    struct cq_pod *p = *at;
    *at = p->next;
    count_pod(pl, p, -1);
    pl->pod_count--;
    pod_free(p);
}

static int read_request(struct cq_pod *p, const kc_pod *pod)
{
    uint32_t n = kc_pod_request_count(pod);
    for (uint32_t i = 0; i < n; i++) {
        kc_resource id;
        int64_t value;
        if (kc_pod_request_at(pod, i, &id, &value) != 0 || id < 0 || id >= KC_RESOURCE_MAX ||
            value <= 0 || id == KC_RESOURCE_PODS)
            continue;
        if (p->count == CQ_POD_RESOURCES) {
            cq_log(KC_LOG_WARN, "pod %s/%s asks for more than %d resources; %s is not counted "
                   "in its queue", kc_pod_namespace(pod), kc_pod_name(pod), CQ_POD_RESOURCES,
                   kc_resource_name(id));
            continue;
        }
        p->ids[p->count] = id;
        p->values[p->count++] = value;
        p->mask |= 1ull << id;
    }
    return 0;
}

/* Whether the pod asks what p counted (same resources, same amounts, same order). */
static bool same_request(const struct cq_pod *p, const kc_pod *pod)
{
    struct cq_pod fresh = {0};
    read_request(&fresh, pod);
    if (fresh.mask != p->mask || fresh.count != p->count)
        return false;
    for (uint32_t i = 0; i < p->count; i++)
        if (fresh.ids[i] != p->ids[i] || fresh.values[i] != p->values[i])
            return false;
    return true;
}

/* Count the pod as placed on node (NULL: pending), replacing what it counted as. */
static struct cq_pod *track(struct cq_plugin *pl, const kc_pod *pod, const char *node)
{
    bool explicit_queue;
    const char *queue = queue_of(pl, pod, &explicit_queue);
    struct cq_pod *p = cq_pod_find(pl, kc_pod_uid(pod));
    if (p != NULL && strcmp(p->queue, queue) == 0) {
        bool was_placed = p->node != NULL;
        bool resized = !same_request(p, pod); /* an in-place resize changes what it holds */
        if (!resized && was_placed == (node != NULL) &&
            (node == NULL || strcmp(p->node, node) == 0))
            return p;
        count_pod(pl, p, -1);
        if (node != NULL)
            p->claimed = false; /* placed: its claim is now usage */
        if (resized) {
            p->count = 0;
            p->mask = 0;
            read_request(p, pod);
        }
        free(p->node);
        p->node = node != NULL ? strdup(node) : NULL;
        count_pod(pl, p, 1); /* a pod back from a reservation keeps its place in the order */
        return p;
    }
    double tag = p != NULL ? p->tag : 0;
    bool tagged = p != NULL && p->tagged;
    bool leaving = p != NULL && p->leaving, claimed = p != NULL && p->claimed;
    untrack(pl, kc_pod_uid(pod));
    if (pl->pod_count >= pl->pod_buckets && pods_grow(pl) != 0)
        return NULL;
    p = calloc(1, sizeof(*p));
    const char *group = kc_pod_group(pod);
    char group_key[CQ_NAME_MAX * 2 + 2];
    if (group != NULL)
        snprintf(group_key, sizeof(group_key), "%s/%s", kc_pod_namespace(pod), group);
    if (p == NULL || (p->uid = strdup(kc_pod_uid(pod))) == NULL ||
        (p->ns = strdup(kc_pod_namespace(pod) != NULL ? kc_pod_namespace(pod) : "")) == NULL ||
        (p->queue = strdup(queue)) == NULL || (node != NULL && (p->node = strdup(node)) == NULL) ||
        (group != NULL && (p->group = strdup(group_key)) == NULL)) {
        if (p != NULL)
            pod_free(p);
        cq_log(KC_LOG_ERROR, "out of memory counting pod %s/%s", kc_pod_namespace(pod),
               kc_pod_name(pod));
        return NULL;
    }
    p->explicit_queue = explicit_queue;
    p->leaving = leaving && node != NULL; /* moved to another queue: still going */
    p->claimed = claimed && node == NULL;
    p->priority = kc_pod_priority(pod);
    p->index = cq_tree_find(&pl->tree, queue);
    read_request(p, pod);
    uint64_t b = hash_text(p->uid) & (pl->pod_buckets - 1);
    p->next = pl->pods[b];
    pl->pods[b] = p;
    pl->pod_count++;
    if (node == NULL && !tagged)
        tag_pending(pl, p);
    else {
        p->tag = tag;
        p->tagged = tagged;
    }
    count_pod(pl, p, 1);
    return p;
}

/* A pod added or updated: counted where its object says, except that a pod reserved by this
 * scheduler stays counted on its node while its object, not bound yet, says no node (a status
 * update during the binding). */
static void pod_seen(struct cq_plugin *pl, const kc_pod *pod)
{
    const char *node = kc_pod_node_name(pod);
    const struct cq_pod *was = cq_pod_find(pl, kc_pod_uid(pod));
    char reserved[CQ_NAME_MAX + 1];
    if (node == NULL && was != NULL && was->assumed && was->node != NULL) {
        snprintf(reserved, sizeof(reserved), "%s", was->node); /* track may free was */
        node = reserved;
    }
    struct cq_pod *p = track(pl, pod, node);
    if (p != NULL && kc_pod_node_name(pod) != NULL)
        p->assumed = false; /* bound */
    /* a terminating pod is leaving; a preemptor whose nomination the runtime dropped (an
     * eviction failed) claims nothing any more */
    if (p == NULL)
        return;
    bool dropped = p->claimed && p->node == NULL && kc_pod_nominated_node_name(pod) == NULL;
    cq_pod_mark(pl, p, p->leaving || (p->node != NULL && kc_pod_terminating(pod)),
                p->claimed && !dropped);
    if (dropped)
        victims_stay(pl, p->uid);
}

/* The tree or the namespaces changed: link the tree and count every pod again. */
static void recount(struct cq_plugin *pl)
{
    cq_tree_link(&pl->tree);
    for (uint32_t b = 0; b < pl->pod_buckets; b++)
        for (struct cq_pod *p = pl->pods[b]; p != NULL; p = p->next) {
            p->index = cq_tree_find(&pl->tree, p->queue);
            count_pod(pl, p, 1);
        }
}

/* A namespace's default queue changed: its pods that do not name a queue move. */
static void recount_namespace(struct cq_plugin *pl, const char *name)
{
    const char *queue = namespace_queue(pl, name);
    for (uint32_t b = 0; b < pl->pod_buckets; b++)
        for (struct cq_pod *p = pl->pods[b]; p != NULL; p = p->next) {
            if (p->explicit_queue || p->ns == NULL || strcmp(p->ns, name) != 0)
                continue;
            char *moved = strdup(queue != NULL ? queue : DEFAULT_QUEUE);
            if (moved == NULL)
                continue;
            count_pod(pl, p, -1);
            free(p->queue);
            p->queue = moved;
            p->index = cq_tree_find(&pl->tree, moved);
            count_pod(pl, p, 1);
        }
}

/* ---- status ---------------------------------------------------------------------------------- */

/* A map of resource name -> quantity text for the resources in show, or NULL (no memory). */
static json_t *resource_map(const int64_t *values, uint64_t show)
{
    json_t *map = json_object();
    for (uint64_t m = show; map != NULL && m != 0; m &= m - 1) {
        int r = __builtin_ctzll(m);
        char text[32];
        snprintf(text, sizeof(text), "%lld%s", (long long)values[r],
                 r == KC_RESOURCE_CPU ? "m" : "");
        if (json_object_set_new(map, kc_resource_name(r), json_string(text)) != 0) {
            json_decref(map);
            return NULL;
        }
    }
    return map;
}

/* Report the status of every queue whose figures changed (the runtime keeps the latest and
 * writes it at its own pace: the bridge, the simulator's summary). */
static void write_status(struct cq_plugin *pl)
{
    if (!pl->status_supported)
        return;
    for (uint32_t i = 0; i < pl->tree.count; i++) {
        struct cq_queue *q = &pl->tree.queues[i];
        if (!q->status_dirty)
            continue;
        q->status_dirty = false;
        int64_t borrowed[KC_RESOURCE_MAX] = {0};
        for (int r = 0; r < KC_RESOURCE_MAX; r++) {
            if (q->usage[r] > 0 || (q->guaranteed_listed & (1ull << r)))
                q->shown_used |= 1ull << r;
            /* borrowed: above a guarantee the queue lists (unlisted resources come from the
             * shared pool, all of what it uses is in used) */
            if ((q->guaranteed_listed & (1ull << r)) && q->usage[r] > q->guaranteed[r]) {
                borrowed[r] = q->usage[r] - q->guaranteed[r];
                q->shown_borrowed |= 1ull << r;
            }
        }
        /* built by jansson: any number of resources, always valid JSON */
        json_t *status = json_object();
        char *json = NULL;
        if (status != NULL &&
            json_object_set_new(status, "used", resource_map(q->usage, q->shown_used)) == 0 &&
            json_object_set_new(status, "borrowed", resource_map(borrowed, q->shown_borrowed)) ==
                0 &&
            json_object_set_new(status, "pending", json_integer(q->pending)) == 0 &&
            json_object_set_new(status, "admitted", json_integer(q->admitted)) == 0 &&
            json_object_set_new(status, "valid", json_boolean(q->error == NULL)) == 0)
            json = json_dumps(status, JSON_COMPACT);
        json_decref(status);
        if (json == NULL) {
            q->status_dirty = true; /* out of memory: tried again on the next change */
            continue;
        }
        kc_object_status(KIND, NULL, q->name, json);
        free(json);
    }
}

/* ---- args, init, fini ------------------------------------------------------------------------ */

static void capacityqueue_fini(void *self)
{
    struct cq_plugin *pl = self;
    if (pl == NULL)
        return;
    for (uint32_t b = 0; b < pl->pod_buckets; b++)
        for (struct cq_pod *p = pl->pods[b], *next; p != NULL; p = next) {
            next = p->next;
            pod_free(p);
        }
    free(pl->pods);
    for (struct cq_namespace *ns = pl->namespaces, *next; ns != NULL; ns = next) {
        next = ns->next;
        free(ns->name);
        free(ns->queue);
        free(ns);
    }
    cq_tree_free(&pl->tree);
    free(pl);
}

static int capacityqueue_init(const kc_host_api *host, const char *args_json, void **self)
{
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    bool empty = json_is_object(args) && json_object_size(args) == 0;
    json_decref(args);
    if (!empty) {
        cq_log(KC_LOG_ERROR, "args: capacityqueue takes no args (the queues are CapacityQueue "
               "objects); got %s", args_json);
        return -EINVAL;
    }
    struct cq_plugin *pl = calloc(1, sizeof(*pl));
    if (pl == NULL || pods_grow(pl) != 0) {
        free(pl);
        return -ENOMEM;
    }
    pl->cluster_dirty = true;
    pl->status_supported = KC_HOST_HAS(host, object_status);
    *self = pl;
    return 0;
}

/* A pod this plugin refused may be admitted once its queue, a namespace or the room changes. */
static uint32_t capacityqueue_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_OBJECT_DELETE) | KC_EVENT_MASK(KC_EVENT_NODE_ADD) |
           KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) | KC_EVENT_MASK(KC_EVENT_POD_DELETE) |
           KC_EVENT_MASK(KC_EVENT_POD_FORGET) | KC_EVENT_MASK(KC_EVENT_POD_UPDATE);
}

/* ---- QueueSort: weighted dominant share, then priority, then FIFO ---------------------------- */

static int compare_int64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int capacityqueue_queue_less(void *self, const kc_pod *a, const kc_pod *b)
{
    struct cq_plugin *pl = self;
    const struct cq_pod *pa = cq_pod_find(pl, kc_pod_uid(a)), *pb = cq_pod_find(pl, kc_pod_uid(b));
    double ta = pa != NULL ? pa->tag : 0, tb = pb != NULL ? pb->tag : 0;
    if (ta != tb)
        return ta < tb;
    int order = compare_int64(kc_pod_priority(b), kc_pod_priority(a));
    if (order == 0)
        order = compare_int64(kc_pod_enqueue_ms(a), kc_pod_enqueue_ms(b));
    if (order == 0)
        order = compare_int64(kc_pod_creation_ms(a), kc_pod_creation_ms(b));
    if (order == 0)
        order = strcmp(kc_pod_uid(a), kc_pod_uid(b));
    return order < 0;
}

/* ---- PreFilter: admission -------------------------------------------------------------------- */

/* The first error on the queue's path to its root. */
static const char *path_error(const struct cq_tree *tree, int32_t index)
{
    for (uint32_t steps = 0; index >= 0; index = cq_tree_up(tree, index, &steps))
        if (tree->queues[index].error != NULL)
            return tree->queues[index].error;
    return NULL;
}

/* What the group asks as a whole: the first `needed` of its waiting members (the member being
 * tried included), so a gang is admitted whole or not at all. */
static void group_request(const struct cq_plugin *pl, const struct cq_pod *member, uint32_t needed,
                          int64_t *total, uint64_t *mask)
{
    cq_pod_request(member, total);
    *mask = member->mask;
    uint32_t taken = 1;
    for (uint32_t b = 0; b < pl->pod_buckets && taken < needed; b++)
        for (const struct cq_pod *p = pl->pods[b]; p != NULL && taken < needed; p = p->next) {
            if (p == member || p->node != NULL || p->group == NULL ||
                strcmp(p->group, member->group) != 0)
                continue;
            for (uint32_t i = 0; i < p->count; i++)
                total[p->ids[i]] += p->values[i];
            *mask |= p->mask;
            taken++;
        }
}

static kc_status capacityqueue_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct cq_plugin *pl = self;
    struct cq_pod *p = cq_pod_find(pl, kc_pod_uid(pod));
    if (p == NULL && (p = track(pl, pod, NULL)) == NULL)
        return KC_ERROR;
    if (p->index < 0) {
        if (!p->explicit_queue && strcmp(p->queue, DEFAULT_QUEUE) == 0)
            return KC_SKIP; /* no queue governs it */
        return cq_reject(cycle, KC_UNRESOLVABLE, "queue %s does not exist (pod %s/%s)", p->queue,
                      kc_pod_namespace(pod), kc_pod_name(pod));
    }
    /* arrived before its queue (after a bridge restart, say): tagged now, while the pod is out
     * of the runtime's queue for its attempt, so the key changes outside the heap */
    if (!p->tagged && p->node == NULL)
        tag_pending(pl, p);
    const char *error = path_error(&pl->tree, p->index);
    if (error != NULL)
        return cq_reject(cycle, KC_UNRESOLVABLE, "queue %s cannot admit pods: %s", p->queue, error);
    cq_refresh_cluster(pl);
    int64_t request[KC_RESOURCE_MAX];
    uint64_t mask;
    kc_group_cycle group = {.struct_size = sizeof(group)};
    bool whole_group = p->group != NULL && kc_cycle_group(cycle, &group) && group.index == 0;
    if (whole_group) {
        group_request(pl, p, group.needed, request, &mask);
    } else {
        cq_pod_request(p, request);
        mask = p->mask;
    }
    char why[512];
    int32_t refusing = -1;
    if (!cq_admit_at(&pl->tree, p->index, request, mask, why, sizeof(why), &refusing)) {
        /* within its guarantee, refused only because queues under the refusing one borrow:
         * PostFilter can reclaim (unschedulable, not unresolvable) */
        kc_status st = !whole_group && cq_reclaim_may_help(pl, p, refusing) ? KC_UNSCHEDULABLE
                                                                             : KC_UNRESOLVABLE;
        return cq_reject(cycle, st, "%s%s", whole_group ? "pod group as a whole: " : "", why);
    }
    return KC_SUCCESS;
}

static kc_status capacityqueue_post_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    kc_status st = cq_reclaim(self, cycle, pod);
    write_status(self);
    return st;
}

/* ---- events ---------------------------------------------------------------------------------- */

static void capacityqueue_on_event(void *self, const kc_event *ev)
{
    struct cq_plugin *pl = self;
    bool object = ev->object_kind != NULL;
    switch (ev->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
    case KC_EVENT_NODE_DELETE: pl->cluster_dirty = true; break;
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE: pod_seen(pl, ev->pod); break;
    case KC_EVENT_POD_ASSUME:
    case KC_EVENT_POD_FORGET: {
        const char *node = ev->node != NULL ? kc_node_name(ev->node) : kc_pod_node_name(ev->pod);
        struct cq_pod *p = track(pl, ev->pod, ev->type == KC_EVENT_POD_ASSUME ? node : NULL);
        if (p != NULL)
            p->assumed = ev->type == KC_EVENT_POD_ASSUME;
        break;
    }
    case KC_EVENT_POD_DELETE: untrack(pl, kc_pod_uid(ev->pod)); break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        if (object && strcmp(ev->object_kind, KIND) == 0 && ev->object_name != NULL) {
            if (cq_tree_put(&pl->tree, ev->object_name, ev->object_json) == 0)
                recount(pl);
        } else if (object && strcmp(ev->object_kind, "Namespace") == 0 &&
                   ev->object_name != NULL &&
                   namespace_put(pl, ev->object_name, ev->object_json)) {
            recount_namespace(pl, ev->object_name);
        }
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (object && strcmp(ev->object_kind, KIND) == 0 && ev->object_name != NULL) {
            cq_tree_delete(&pl->tree, ev->object_name);
            recount(pl);
        } else if (object && strcmp(ev->object_kind, "Namespace") == 0 &&
                   ev->object_name != NULL && namespace_put(pl, ev->object_name, NULL)) {
            recount_namespace(pl, ev->object_name);
        }
        break;
    default: break;
    }
    write_status(pl);
}

static const kc_plugin_ops capacityqueue_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = capacityqueue_init,
    .fini = capacityqueue_fini,
    .requeue_events = capacityqueue_requeue_events,
    .queue_less = capacityqueue_queue_less,
    .pre_filter = capacityqueue_pre_filter,
    .post_filter = capacityqueue_post_filter,
    .on_event = capacityqueue_on_event,
};

static const kc_plugin_descriptor capacityqueue_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &capacityqueue_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &capacityqueue_descriptor;
}
