/* The bridge: reflectors feed a queue of encoded ToScheduler messages that one thread sends;
 * a receiver turns the scheduler's commands into work for a pool of API writers. Every object
 * last seen is kept encoded, so a scheduler that (re)connects gets the whole cluster at once. */
#include "bridge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <nng/protocol/pair1/pair.h>

#include "bridge.pb-c.h"
#include "health.h"
#include "metrics.h"
#include "log.h"
#include "socket_dir.h"
#include "model.h"
#include "proto_convert.h"
#include "tree.h"

#define MESSAGE_SPLIT_BYTES (1u << 20) /* start a new message past this size */
#define BACKPRESSURE_BYTES (64u << 20) /* reflectors wait while this much is unsent */
#define OPTIONAL_WAIT_MS 10000         /* readiness waits this long for optional lists */
#define API_TIMEOUT_MS 10000
/* The scheduler takes nothing for this long: its session is dropped. */
#define SEND_TIMEOUT_MS 60000
/* How often a send to the scheduler looks at the stop flag and at the session it belongs to. */
#define SEND_SLICE_MS 100
#define NOTE_MAX 1024

/* ToScheduler field numbers (bridge.proto), written by hand so that kept changes are copied
 * into messages as they are, without decoding them again. */
enum {
    FIELD_SESSION = 1,
    FIELD_SYNC_BEGIN = 2,
    FIELD_SYNC_END = 3,
    FIELD_CHANGES = 4,
    FIELD_BIND_RESULTS = 5,
    FIELD_LEADERSHIP = 6,
    FIELD_EVICTION_RESULTS = 7
};

int64_t bridge_monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void bridge_format_time(char *out, size_t size)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%s.%06ldZ", base, ts.tv_nsec / 1000);
}

/* ---- encoding of outgoing messages (lock held) ---- */

static int append_varint(nng_msg *msg, uint64_t v)
{
    uint8_t bytes[10];
    size_t n = 0;
    do {
        bytes[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v != 0)
            bytes[n] |= 0x80;
        n++;
    } while (v != 0);
    return nng_msg_append(msg, bytes, n);
}

static int append_bytes_field(nng_msg *msg, uint32_t field, const uint8_t *data, size_t len)
{
    int rc = append_varint(msg, (uint64_t)field << 3 | 2);
    if (rc == 0)
        rc = append_varint(msg, len);
    if (rc == 0 && len > 0)
        rc = nng_msg_append(msg, data, len);
    return rc;
}

static int append_varint_field(nng_msg *msg, uint32_t field, uint64_t v)
{
    int rc = append_varint(msg, (uint64_t)field << 3);
    return rc == 0 ? append_varint(msg, v) : rc;
}

static void drop_queued(struct bridge *b)
{
    for (uint32_t i = 0; i < b->out_count; i++)
        nng_msg_free(b->out[i]);
    b->out_count = 0;
    b->out_bytes = 0;
}

/* A message for the scheduler, and nothing else allocated here: libnng 1.5.2 can lose one that
 * nng_sendmsg took when the scheduler goes away at that moment, and the leak checkers'
 * suppressions name this function alone (tests/lsan.supp, tests/valgrind/suppressions.supp;
 * docs/security.md). Out of line so that it is a frame of its own, and the call is not its
 * last act: an optimised tail call (a jump) would leave no frame of it on the stack, and the
 * suppression would not match (seen in the sanitizer build). */
__attribute__((noinline)) static int bridge_message_new(nng_msg **msg)
{
    int rc = nng_msg_alloc(msg, 0);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return rc;
}

/* The message being filled: the last queued one while it is small, else a new one. */
static nng_msg *current_message(struct bridge *b)
{
    if (b->out_count > 0 && nng_msg_len(b->out[b->out_count - 1]) < MESSAGE_SPLIT_BYTES)
        return b->out[b->out_count - 1];
    if (b->out_count == b->out_capacity) {
        uint32_t capacity = b->out_capacity ? b->out_capacity * 2 : 16;
        nng_msg **grown = realloc(b->out, capacity * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        b->out = grown;
        b->out_capacity = capacity;
    }
    nng_msg *msg;
    if (bridge_message_new(&msg) != 0)
        return NULL;
    if (append_varint_field(msg, FIELD_SESSION, b->session) != 0) {
        nng_msg_free(msg);
        return NULL;
    }
    b->out[b->out_count++] = msg;
    return msg;
}

/* Out of memory while queueing: the scheduler's view would have a hole, so end the session;
 * the scheduler reconnects, says hello and gets everything again. */
static void lose_session(struct bridge *b, const char *why)
{
    log_error("bridge: %s; dropping the scheduler's session to resynchronise it", why);
    drop_queued(b);
    b->session_active = false;
    nng_pipe_close(b->pipe);
}

/* Room for `more` bytes at the end of msg. nng grows a message to the exact size asked for,
 * so appending a sync object by object copied each message again per object (seconds for a
 * large cluster); doubling makes the appends linear. */
static int message_reserve(nng_msg *msg, size_t more)
{
    size_t need = nng_msg_len(msg) + more;
    size_t capacity = nng_msg_capacity(msg);
    if (need <= capacity)
        return 0;
    return nng_msg_reserve(msg, capacity * 2 > need ? capacity * 2 : need);
}

static void queue_field(struct bridge *b, uint32_t field, const uint8_t *data, size_t len)
{
    nng_msg *msg = current_message(b);
    size_t before = msg != NULL ? nng_msg_len(msg) : 0;
    if (msg == NULL || message_reserve(msg, len + 16) != 0 ||
        append_bytes_field(msg, field, data, len) != 0)
        return lose_session(b, "out of memory queueing a message for the scheduler");
    b->out_bytes += nng_msg_len(msg) - before;
    pthread_cond_broadcast(&b->cond);
}

static void queue_flag(struct bridge *b, uint32_t field)
{
    nng_msg *msg = current_message(b);
    if (msg == NULL || append_varint_field(msg, field, 1) != 0)
        return lose_session(b, "out of memory queueing a message for the scheduler");
    pthread_cond_broadcast(&b->cond);
}

void bridge_note_leadership(struct bridge *b)
{
    if (!b->session_active)
        return;
    Kcycle__V1__Leadership m = KCYCLE__V1__LEADERSHIP__INIT;
    m.leader = atomic_load(&b->leader);
    m.identity = b->holder;
    uint8_t buf[512];
    size_t len = kcycle__v1__leadership__get_packed_size(&m);
    if (len > sizeof(buf))
        return;
    kcycle__v1__leadership__pack(&m, buf);
    queue_field(b, FIELD_LEADERSHIP, buf, len);
}

/* ---- the cluster: reflector callbacks (reflector threads) ---- */

static int pack_change(const Kcycle__V1__ClusterChange *c, uint8_t **out, size_t *len)
{
    *len = kcycle__v1__cluster_change__get_packed_size(c);
    *out = malloc(*len > 0 ? *len : 1);
    if (*out == NULL)
        return -ENOMEM;
    kcycle__v1__cluster_change__pack(c, *out);
    return 0;
}

/* ---- bindings this bridge sent ---- */

static void binding_free(struct bridge_binding *e)
{
    if (e == NULL)
        return;
    free(e->key);
    free(e->uid);
    free(e->node);
    free(e);
}

/* A scheduler may decide on a view older than the watch: a landed binding is remembered for
 * this long after the watch showed it, so that a second one is refused here, not by the API
 * server (lock held). */
#define BINDING_MEMORY_MS 60000

static void bindings_sweep(struct bridge *b)
{
    int64_t now = bridge_monotonic_ms();
    if (now - b->bindings_swept_ms < 5000)
        return;
    b->bindings_swept_ms = now;
    for (uint32_t i = 0; i < b->bindings.capacity; i++) {
        struct bridge_binding *e = b->bindings.entries[i].value;
        if (e != NULL && e->seen && now - e->landed_ms > BINDING_MEMORY_MS)
            binding_free(strmap_remove(&b->bindings, e->key));
    }
}

/* Claim the pod for a binding: -EEXIST when this bridge is binding it or bound it. */
static int binding_claim(struct bridge *b, const struct bridge_work *w)
{
    struct bridge_binding *e = calloc(1, sizeof(*e));
    if (e == NULL || asprintf(&e->key, "%s/%s", w->namespace, w->name) < 0) {
        free(e);
        return -ENOMEM;
    }
    e->uid = strdup(w->uid);
    e->node = strdup(w->node);
    if (e->uid == NULL || e->node == NULL) {
        binding_free(e);
        return -ENOMEM;
    }
    pthread_mutex_lock(&b->binding_lock);
    bindings_sweep(b);
    int rc =
        strmap_get(&b->bindings, e->key) != NULL ? -EEXIST : strmap_put(&b->bindings, e->key, e);
    pthread_mutex_unlock(&b->binding_lock);
    if (rc < 0)
        binding_free(e);
    return rc;
}

/* The answer came: kept as landed on 201, forgotten otherwise (also when the outcome is
 * unknown: a sync must never show a pod bound that may not be). */
static void binding_settle(struct bridge *b, const struct bridge_work *w, bool landed)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", w->namespace, w->name);
    pthread_mutex_lock(&b->binding_lock);
    struct bridge_binding *e = strmap_get(&b->bindings, key);
    if (e != NULL && strcmp(e->uid, w->uid) == 0) {
        if (landed) {
            e->landed = true;
            e->landed_ms = bridge_monotonic_ms();
        } else
            binding_free(strmap_remove(&b->bindings, key));
    }
    pthread_mutex_unlock(&b->binding_lock);
}

/* The watch showed the pod: bound (the record is kept a while, see bindings_sweep), gone or
 * another pod of that name (the record is done). */
static void binding_seen(struct bridge *b, const char *key, const char *uid, bool bound)
{
    pthread_mutex_lock(&b->binding_lock);
    struct bridge_binding *e = b->bindings.count > 0 ? strmap_get(&b->bindings, key) : NULL;
    if (e != NULL && e->landed) {
        if (uid == NULL || strcmp(e->uid, uid) != 0)
            binding_free(strmap_remove(&b->bindings, key));
        else if (bound)
            e->seen = true;
    }
    pthread_mutex_unlock(&b->binding_lock);
}

/* The kept change of a pod as the scheduler must see it: bound when this bridge's binding
 * landed and the watch has not shown it yet. malloc'd into *out, or 0 with *out NULL when the
 * kept change is right as it is (lock held). */
static int synced_pod_change(struct bridge *b, const struct bridge_item *item, uint8_t **out,
                             size_t *len)
{
    *out = NULL;
    pthread_mutex_lock(&b->binding_lock);
    const struct bridge_binding *e =
        b->bindings.count > 0 ? strmap_get(&b->bindings, item->key) : NULL;
    char node[256] = "";
    if (e != NULL && e->landed)
        snprintf(node, sizeof(node), "%s", e->node);
    char uid[128] = "";
    if (e != NULL)
        snprintf(uid, sizeof(uid), "%s", e->uid);
    pthread_mutex_unlock(&b->binding_lock);
    if (node[0] == '\0')
        return 0;
    Kcycle__V1__ClusterChange *c =
        kcycle__v1__cluster_change__unpack(NULL, item->len, item->change);
    int rc = 0;
    if (c != NULL && c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT &&
        strcmp(c->pod_put->uid, uid) == 0 && c->pod_put->node_name[0] == '\0') {
        char *copy = strdup(node);
        if (copy == NULL) {
            rc = -ENOMEM;
        } else {
            c->pod_put->node_name = copy; /* freed with the message (default allocator) */
            rc = pack_change(c, out, len);
        }
    }
    if (c != NULL)
        kcycle__v1__cluster_change__free_unpacked(c, NULL);
    return rc;
}

/* The put change of an object, or a negative code with err saying why it was skipped. */
static int encode_put(struct bridge_watch *w, const char *namespace, const char *name,
                      const struct tree *object, uint8_t **out, size_t *len, struct kc_error *err)
{
    Kcycle__V1__ClusterChange c = KCYCLE__V1__CLUSTER_CHANGE__INIT;
    int rc;
    if (w->kind == 'p') {
        struct pod *pod;
        if ((rc = pod_from_tree(object, &pod, err)) < 0)
            return rc;
        char key[512];
        snprintf(key, sizeof(key), "%s/%s", namespace, name);
        binding_seen(w->bridge, key, pod->uid, pod->node_name != NULL);
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT;
        c.pod_put = pod_to_proto(pod);
        rc = c.pod_put != NULL ? pack_change(&c, out, len) : -EINVAL;
        pod_proto_free(c.pod_put);
        pod_free(pod);
    } else if (w->kind == 'n') {
        struct node *node;
        if ((rc = node_from_tree(object, &node, err)) < 0)
            return rc;
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT;
        c.node_put = node_to_proto(node);
        rc = c.node_put != NULL ? pack_change(&c, out, len) : -EINVAL;
        node_proto_free(c.node_put);
        node_free(node);
    } else {
        Kcycle__V1__CustomObject o = KCYCLE__V1__CUSTOM_OBJECT__INIT;
        o.kind = (char *)w->resource.kind;
        o.namespace_ = (char *)namespace;
        o.name = (char *)name;
        o.json = tree_to_json(object);
        if (o.json == NULL)
            return -ENOMEM;
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_PUT;
        c.object_put = &o;
        rc = pack_change(&c, out, len);
        free(o.json);
    }
    if (rc == -EINVAL)
        kc_error_set(err, rc, "it cannot be carried to the scheduler");
    return rc;
}

static int encode_delete(struct bridge_watch *w, const char *namespace, const char *name,
                         const char *uid, uint8_t **out, size_t *len)
{
    Kcycle__V1__ClusterChange c = KCYCLE__V1__CLUSTER_CHANGE__INIT;
    Kcycle__V1__CustomObject o = KCYCLE__V1__CUSTOM_OBJECT__INIT;
    if (w->kind == 'p') {
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_DELETE;
        c.pod_delete = (char *)uid;
    } else if (w->kind == 'n') {
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_DELETE;
        c.node_delete = (char *)name;
    } else {
        o.kind = (char *)w->resource.kind;
        o.namespace_ = (char *)namespace;
        o.name = (char *)name;
        o.json = "";
        c.change_case = KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_DELETE;
        c.object_delete = &o;
    }
    return pack_change(&c, out, len);
}

static void item_free(struct bridge_item *item)
{
    if (item == NULL)
        return;
    free(item->key);
    free(item->change);
    free(item);
}

static void forget_reported(struct bridge *b, const char *uid);
static void group_status_note(struct bridge *b, const char *kind, const char *namespace,
                              const char *name,
                              char *json);
static void work_free(struct bridge_work *w);
static void work_push(struct bridge *b, struct bridge_work *w);
static void eviction_result(struct bridge *b, const struct bridge_work *w, int code,
                            const char *message);
static struct bridge_work *work_new(int type, const char *namespace, const char *name,
                                    const char *uid);

/* A pod of ours that the model cannot read would wait without a word: say why on the pod. */
static void report_unreadable_pod(struct bridge *b, const struct tree *object,
                                  const char *namespace, const char *name, const char *uid,
                                  const struct kc_error *err)
{
    const struct tree *spec = tree_get(object, "spec");
    const struct tree *scheduler = tree_get(spec, "schedulerName");
    const struct tree *node = tree_get(spec, "nodeName");
    if (object == NULL || uid == NULL || uid[0] == '\0' || scheduler == NULL ||
        scheduler->type != TREE_SCALAR || strcmp(scheduler->scalar, b->opt.scheduler_name) != 0 ||
        (node != NULL && !tree_is_null(node) && node->scalar != NULL && node->scalar[0] != '\0'))
        return;
    struct bridge_work *w = work_new(WORK_UNSCHEDULABLE, namespace, name, uid);
    char message[1200];
    snprintf(message, sizeof(message), "kcycle cannot read this pod: %s", err->message);
    if (w != NULL && ((w->reason = strdup("SchedulerError")) == NULL ||
                      (w->message = strdup(message)) == NULL)) {
        work_free(w);
        return;
    }
    if (w != NULL)
        work_push(b, w);
}

void bridge_watch_event(void *ctx, enum kube_event_type type, const char *namespace,
                        const char *name, const char *uid, const struct tree *object)
{
    struct bridge_watch *w = ctx;
    struct bridge *b = w->bridge;
    metric_inc(w->events_metric);
    char key[512];
    snprintf(key, sizeof(key), "%s%s%s", namespace, namespace[0] ? "/" : "", name);
    uint8_t *change = NULL;
    size_t len = 0;
    struct kc_error err = {{0}};
    int rc;
    if (type == KUBE_DELETED) {
        if (w->kind == 'p' && (uid == NULL || uid[0] == '\0'))
            return; /* never sent: nothing to delete */
        rc = encode_delete(w, namespace, name, uid, &change, &len);
    } else {
        rc = encode_put(w, namespace, name, object, &change, &len, &err);
    }
    if (rc < 0) {
        atomic_fetch_add(&b->stats.skipped_objects, 1);
        log_warn("bridge: skipping %s %s: %s", w->resource.kind, key,
                 err.message[0] ? err.message : kc_strerror(rc));
        if (w->kind == 'p')
            report_unreadable_pod(b, object, namespace, name, uid, &err);
        /* the scheduler must not go on with a version it was sent before */
        pthread_mutex_lock(&b->lock);
        bool sent_before = strmap_get(&w->items, key) != NULL;
        pthread_mutex_unlock(&b->lock);
        if (!sent_before || encode_delete(w, namespace, name, uid, &change, &len) < 0)
            return;
        type = KUBE_DELETED;
    }
    struct bridge_item *item = NULL;
    if (type != KUBE_DELETED) {
        item = calloc(1, sizeof(*item));
        if (item == NULL || (item->key = strdup(key)) == NULL) {
            free(item);
            free(change);
            log_error("bridge: out of memory keeping %s %s", w->resource.kind, key);
            return;
        }
        item->change = change;
        item->len = len;
    }
    bool kept = false;
    pthread_mutex_lock(&b->lock);
    while (b->session_active && b->out_bytes > BACKPRESSURE_BYTES && !atomic_load(&b->stop))
        pthread_cond_wait(&b->cond, &b->lock);
    item_free(strmap_remove(&w->items, key));
    if (item != NULL) {
        kept = strmap_put(&w->items, item->key, item) == 0;
        if (!kept) {
            item->change = NULL; /* still queued below; freed after */
            item_free(item);
            log_error("bridge: out of memory keeping %s %s", w->resource.kind, key);
        }
    }
    if (b->session_active) {
        queue_field(b, FIELD_CHANGES, change, len);
        atomic_fetch_add(&b->stats.changes_sent, 1);
    }
    pthread_mutex_unlock(&b->lock);
    if (!kept)
        free(change);
    if (type == KUBE_DELETED && w->kind == 'p') {
        binding_seen(b, key, NULL, false);
        if (uid != NULL)
            forget_reported(b, uid);
    }
}

static void sync_when_ready(struct bridge *b);
static bool required_lists_done(struct bridge *b);

/* A list completed (or a resource turned out not to be served): the scheduler's pending hello
 * is answered from here, by the event itself, not by whoever looks next (lock not held). */
static void list_settled(struct bridge_watch *w)
{
    struct bridge *b = w->bridge;
    pthread_mutex_lock(&b->lock);
    if (b->lists_done_ms == 0 && required_lists_done(b))
        b->lists_done_ms = bridge_monotonic_ms();
    sync_when_ready(b);
    pthread_cond_broadcast(&b->cond); /* the send loop may now have the optional wait to time */
    pthread_mutex_unlock(&b->lock);
}

static void on_synced(void *ctx)
{
    struct bridge_watch *w = ctx;
    metric_inc(w->lists_metric);
    bool was_not_served = atomic_exchange(&w->not_served, false);
    if (!atomic_exchange(&w->synced, true) || was_not_served)
        log_info("bridge: %s listed (%u objects) after %.3f s", w->resource.kind, w->items.count,
                 (double)(bridge_monotonic_ms() - w->bridge->start_ms) / 1000.0);
    list_settled(w);
}

/* The API server does not serve the resource (a CRD not installed): nothing will come, so
 * readiness does not wait for it. Said once; the reflector keeps looking with backoff. */
static void on_not_served(void *ctx)
{
    struct bridge_watch *w = ctx;
    if (atomic_exchange(&w->not_served, true))
        return;
    log_info("bridge: %s is not served by the API server (404 on %s): not waiting for it; "
             "listed when it appears",
             w->resource.kind, w->resource.path);
    list_settled(w);
}

/* Cuts, relists and retries are routine: one warning a minute per resource, the rest at info
 * level (a CRD that is not installed is retried for ever). */
static void on_warn(void *ctx, const char *message)
{
    struct bridge_watch *w = ctx;
    int64_t now = bridge_monotonic_ms();
    bool loud = now - w->last_warn_ms >= 60000 || w->last_warn_ms == 0;
    if (loud)
        w->last_warn_ms = now;
    log_msg(loud ? KC_LOG_WARN : KC_LOG_INFO, "bridge: %s: %s", w->resource.kind, message);
}

static void *watch_main(void *arg)
{
    struct bridge_watch *w = arg;
    kube_reflector_run(&w->reflector);
    return NULL;
}

/* ---- readiness and the sync ---- */

static bool required_lists_done(struct bridge *b)
{
    for (uint32_t i = 0; i < b->watch_count; i++)
        if (b->watches[i].required && !atomic_load(&b->watches[i].synced))
            return false;
    return true;
}

/* An optional list still awaited: served (no 404 yet) and not listed. */
static bool optional_list_awaited(struct bridge *b)
{
    for (uint32_t i = 0; i < b->watch_count; i++) {
        const struct bridge_watch *w = &b->watches[i];
        if (!w->required && !atomic_load(&w->synced) && !atomic_load(&w->not_served))
            return true;
    }
    return false;
}

/* Every required list done, and every optional one done, not served, or given up after
 * OPTIONAL_WAIT_MS from the start (served but slow). */
static bool lists_done(struct bridge *b)
{
    if (!required_lists_done(b))
        return false;
    return !optional_list_awaited(b) || bridge_monotonic_ms() - b->start_ms >= OPTIONAL_WAIT_MS;
}

/* When the send loop must look again without being woken: the end of the wait for a served
 * but slow optional list while a hello waits on it; 0 when nothing is due (lock held). */
static int64_t sync_due_ms(struct bridge *b)
{
    if (!b->hello_pending || !required_lists_done(b) || !optional_list_awaited(b))
        return 0;
    return b->start_ms + OPTIONAL_WAIT_MS;
}

/* The start-up figures an operator waits on after a restart or failover (lock held). */
static void note_first_sync(struct bridge *b)
{
    if (atomic_load(&b->first_sync_ms) != 0 || !b->session_active)
        return;
    int64_t now = bridge_monotonic_ms();
    if (b->lists_done_ms == 0)
        b->lists_done_ms = now; /* no watches (a benchmark feeding events itself) */
    atomic_store(&b->first_sync_ms, now);
    atomic_store(&b->stats.start_to_first_sync_ms, now - b->start_ms);
    log_info("bridge: first sync sent %.3f s after start (required lists done after %.3f s, "
             "the scheduler's hello after %.3f s)",
             (double)(now - b->start_ms) / 1000.0,
             (double)(b->lists_done_ms - b->start_ms) / 1000.0,
             (double)(b->hello_ms - b->start_ms) / 1000.0);
}

/* The first binding the API server accepted. */
static void note_first_binding(struct bridge *b)
{
    int64_t none = -1, first_sync = atomic_load(&b->first_sync_ms);
    int64_t since = first_sync != 0 ? bridge_monotonic_ms() - first_sync : 0;
    if (!atomic_compare_exchange_strong(&b->stats.first_sync_to_first_binding_ms, &none, since))
        return;
    log_info("bridge: first binding %.3f s after the first sync (%.3f s after start)",
             (double)since / 1000.0, (double)(bridge_monotonic_ms() - b->start_ms) / 1000.0);
}

/* The whole cluster to the scheduler: nodes, then pods, then custom objects (lock held). */
static void sync_locked(struct bridge *b)
{
    drop_queued(b);
    b->session_active = true;
    b->hello_pending = false;
    queue_flag(b, FIELD_SYNC_BEGIN);
    bridge_note_leadership(b);
    static const char order[] = {'n', 'p', 'o'};
    uint64_t count = 0;
    for (int k = 0; k < 3; k++)
        for (uint32_t i = 0; i < b->watch_count; i++) {
            struct bridge_watch *w = &b->watches[i];
            if (w->kind != order[k])
                continue;
            for (uint32_t j = 0; j < w->items.capacity && b->session_active; j++) {
                const struct bridge_item *item = w->items.entries[j].value;
                if (item == NULL)
                    continue;
                uint8_t *bound = NULL;
                size_t len = 0;
                if (w->kind == 'p' && synced_pod_change(b, item, &bound, &len) < 0)
                    return lose_session(b, "out of memory preparing the sync");
                if (bound != NULL)
                    queue_field(b, FIELD_CHANGES, bound, len);
                else
                    queue_field(b, FIELD_CHANGES, item->change, item->len);
                free(bound);
                count++;
            }
        }
    if (b->session_active)
        queue_flag(b, FIELD_SYNC_END);
    atomic_fetch_add(&b->stats.syncs, 1);
    log_info("bridge: sending the scheduler the cluster: %llu objects (session %llu)",
             (unsigned long long)count, (unsigned long long)b->session);
    note_first_sync(b);
}

/* Answer a pending hello once the lists allow it. Called by each event that can make it
 * possible: the hello, a list done, a resource found not served, the optional wait's end
 * (lock held). */
static void sync_when_ready(struct bridge *b)
{
    if (!b->hello_pending || !lists_done(b))
        return;
    for (uint32_t i = 0; i < b->watch_count; i++) {
        const struct bridge_watch *w = &b->watches[i];
        if (!w->required && !atomic_load(&w->synced) && !atomic_load(&w->not_served))
            log_warn("bridge: %s is served but not listed after %d s: syncing without it; its "
                     "objects follow as changes",
                     w->resource.kind, OPTIONAL_WAIT_MS / 1000);
    }
    sync_locked(b);
}

bool bridge_alive(struct bridge *b)
{
    return !atomic_load(&b->stop);
}

bool bridge_ready(struct bridge *b)
{
    pthread_mutex_lock(&b->lock);
    bool ready = b->session_active && lists_done(b);
    pthread_mutex_unlock(&b->lock);
    return ready;
}

/* ---- the scheduler's commands ---- */

static void work_free(struct bridge_work *w)
{
    free(w->namespace);
    free(w->name);
    free(w->uid);
    free(w->node);
    free(w->reason);
    free(w->message);
    free(w->annotations_json);
    free(w->writes_json);
    free(w->related_namespace);
    free(w->related_name);
    free(w->related_uid);
    free(w->kind);
    free(w);
}

static struct bridge_work *work_new(int type, const char *namespace, const char *name,
                                    const char *uid)
{
    struct bridge_work *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->type = type;
    w->namespace = strdup(namespace);
    w->name = strdup(name);
    w->uid = strdup(uid);
    if (w->namespace == NULL || w->name == NULL || w->uid == NULL) {
        work_free(w);
        return NULL;
    }
    return w;
}

static void work_push(struct bridge *b, struct bridge_work *w)
{
    pthread_mutex_lock(&b->lock);
    w->session = b->session;
    pthread_mutex_unlock(&b->lock);
    pthread_mutex_lock(&b->work_lock);
    if (b->work_tail != NULL)
        b->work_tail->next = w;
    else
        b->work_head = w;
    b->work_tail = w;
    b->work_count++;
    pthread_cond_signal(&b->work_cond);
    pthread_mutex_unlock(&b->work_lock);
}

static void bind_result(struct bridge *b, uint64_t id, const char *uid, int code,
                        const char *message)
{
    Kcycle__V1__BindResult r = KCYCLE__V1__BIND_RESULT__INIT;
    r.id = id;
    r.uid = (char *)uid;
    r.code = code;
    r.message = (char *)message;
    size_t len = kcycle__v1__bind_result__get_packed_size(&r);
    uint8_t *buf = malloc(len > 0 ? len : 1);
    if (buf == NULL)
        return; /* the scheduler learns from the watch; its binding fails on reconnect */
    kcycle__v1__bind_result__pack(&r, buf);
    pthread_mutex_lock(&b->lock);
    if (b->session_active)
        queue_field(b, FIELD_BIND_RESULTS, buf, len);
    pthread_mutex_unlock(&b->lock);
    free(buf);
}

/* The object writes that precede the binding of uid, as a JSON array (NULL when none). */
static char *writes_for(const Kcycle__V1__ToBridge *m, const char *uid)
{
    json_t *writes = NULL;
    for (size_t i = 0; i < m->n_object_writes; i++) {
        const Kcycle__V1__ObjectWrite *in = m->object_writes[i];
        if (strcmp(in->pod_uid, uid) != 0)
            continue;
        if (writes == NULL && (writes = json_array()) == NULL)
            return NULL;
        json_array_append_new(writes, json_pack("{s:s, s:s, s:s, s:s}", "kind", in->kind,
                                                "namespace", in->namespace_, "name", in->name,
                                                "patch", in->patch));
    }
    char *text = writes != NULL ? json_dumps(writes, JSON_COMPACT) : NULL;
    json_decref(writes);
    return text;
}

/* Whether a command's object may go into an API path: its namespace a DNS-1123 label (none for
 * a cluster-scoped kind), its name a DNS-1123 subdomain (kube_check_name). A name such as
 * "../../secrets/x" or one holding '?' or '#' would address another resource, so the command is
 * refused before anything is sent; -EINVAL with why naming the object. */
static int check_target(const char *kind, const char *namespace, const char *name,
                        bool namespaced, char *why, size_t size)
{
    char detail[256];
    int rc = 0;
    if (namespaced)
        rc = kube_check_name("namespace", namespace, true, detail, sizeof(detail));
    else if (namespace != NULL && namespace[0] != '\0') {
        snprintf(detail, sizeof(detail), "a cluster-scoped object has no namespace");
        rc = -EINVAL;
    }
    if (rc == 0)
        rc = kube_check_name("name", name, false, detail, sizeof(detail));
    if (rc < 0) {
        log_warn("bridge: refused a command on %s: %s", kind, detail);
        snprintf(why, size, "the bridge refuses %s %.80s/%.80s: %s", kind,
                 namespace != NULL ? namespace : "", name != NULL ? name : "", detail);
    }
    return rc;
}

/* The binding's pod and every object written before it are safe path segments. */
static int check_binding(const Kcycle__V1__ToBridge *m, const Kcycle__V1__Binding *in, char *why,
                         size_t size)
{
    if (check_target("Pod", in->namespace_, in->name, true, why, size) < 0)
        return -EINVAL;
    for (size_t i = 0; i < m->n_object_writes; i++) {
        const Kcycle__V1__ObjectWrite *ow = m->object_writes[i];
        if (strcmp(ow->pod_uid, in->uid) == 0 &&
            check_target(ow->kind, ow->namespace_, ow->name,
                         strcmp(ow->kind, "PersistentVolume") != 0, why, size) < 0)
            return -EINVAL;
    }
    return 0;
}

/* A hello that waits for lists: which ones, so that a scheduler left waiting says why in the
 * bridge's log (lock held). */
static void log_hello_waiting(struct bridge *b)
{
    char kinds[512];
    size_t used = 0;
    kinds[0] = '\0';
    for (uint32_t i = 0; i < b->watch_count && used < sizeof(kinds); i++) {
        const struct bridge_watch *w = &b->watches[i];
        if (atomic_load(&w->synced) || (!w->required && atomic_load(&w->not_served)))
            continue;
        int n = snprintf(kinds + used, sizeof(kinds) - used, "%s%s", used ? ", " : "",
                         w->resource.kind);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    log_info("bridge: the scheduler asked for the cluster (session %llx); it follows once these "
             "are listed: %s",
             (unsigned long long)b->session, kinds);
}

static void handle_command(struct bridge *b, nng_msg *msg)
{
    Kcycle__V1__ToBridge *m =
        kcycle__v1__to_bridge__unpack(NULL, nng_msg_len(msg), nng_msg_body(msg));
    nng_pipe pipe = nng_msg_get_pipe(msg);
    nng_msg_free(msg);
    if (m == NULL) {
        log_warn("bridge: a message from the scheduler does not decode (version mismatch?)");
        return;
    }
    if (m->hello) {
        pthread_mutex_lock(&b->lock);
        b->pipe = pipe;
        b->session = m->session != 0 ? m->session : b->session + 1;
        drop_queued(b);
        b->session_active = false;
        b->hello_pending = true;
        if (b->hello_ms == 0 || atomic_load(&b->first_sync_ms) != 0)
            b->hello_ms = bridge_monotonic_ms(); /* the first sync's log: the first hello */
        if (!lists_done(b))
            log_hello_waiting(b);
        sync_when_ready(b);               /* else the list that completes last answers it */
        pthread_cond_broadcast(&b->cond); /* the send loop may have the optional wait to time */
        pthread_mutex_unlock(&b->lock);
    }
    for (size_t i = 0; i < m->n_bindings; i++) {
        const Kcycle__V1__Binding *in = m->bindings[i];
        char why[512];
        if (check_binding(m, in, why, sizeof(why)) < 0) {
            bind_result(b, in->id, in->uid, 0, why);
            continue;
        }
        struct bridge_work *w = work_new(WORK_BIND, in->namespace_, in->name, in->uid);
        json_t *annotations = json_object();
        for (size_t j = 0; annotations != NULL && j < in->n_annotations; j++)
            json_object_set_new(annotations, in->annotations[j]->key,
                                json_string(in->annotations[j]->value));
        if (w != NULL) {
            w->id = in->id;
            w->node = strdup(in->node);
            w->annotations_json =
                annotations != NULL ? json_dumps(annotations, JSON_COMPACT) : NULL;
            w->writes_json = writes_for(m, in->uid);
        }
        json_decref(annotations);
        if (w == NULL || w->node == NULL || w->annotations_json == NULL) {
            bind_result(b, in->id, in->uid, 0, "the bridge ran out of memory");
            if (w != NULL)
                work_free(w);
            continue;
        }
        work_push(b, w);
    }
    for (size_t i = 0; i < m->n_unschedulable; i++) {
        const Kcycle__V1__Unschedulable *in = m->unschedulable[i];
        char why[512];
        if (check_target("Pod", in->namespace_, in->name, true, why, sizeof(why)) < 0) {
            continue;
        }
        struct bridge_work *w = work_new(WORK_UNSCHEDULABLE, in->namespace_, in->name, in->uid);
        if (w != NULL && ((w->reason = strdup(in->reason)) == NULL ||
                          (w->message = strdup(in->message)) == NULL)) {
            work_free(w);
            w = NULL;
        }
        if (w != NULL)
            work_push(b, w);
    }
    for (size_t i = 0; i < m->n_scheduled; i++) {
        const Kcycle__V1__Scheduled *in = m->scheduled[i];
        char why[512];
        if (check_target("Pod", in->namespace_, in->name, true, why, sizeof(why)) < 0) {
            continue;
        }
        struct bridge_work *w = work_new(WORK_SCHEDULED, in->namespace_, in->name, in->uid);
        if (w != NULL && (w->node = strdup(in->node)) == NULL) {
            work_free(w);
            w = NULL;
        }
        if (w != NULL)
            work_push(b, w);
    }
    for (size_t i = 0; i < m->n_group_status; i++) {
        const Kcycle__V1__GroupStatus *in = m->group_status[i];
        char why[512];
        if (check_target("PodGroup", in->namespace_, in->name, true, why, sizeof(why)) < 0) {
            continue;
        }
        json_t *status = json_pack("{s:s, s:i, s:i}", "phase", in->phase, "scheduled",
                                   (int)in->scheduled, "running", (int)in->running);
        char *json = status != NULL ? json_dumps(status, JSON_COMPACT) : NULL;
        json_decref(status);
        if (json != NULL)
            group_status_note(b, "PodGroup", in->namespace_, in->name, json);
    }
    for (size_t i = 0; i < m->n_object_status; i++) {
        const Kcycle__V1__ObjectStatus *in = m->object_status[i];
        char why[512];
        if (check_target(in->kind, in->namespace_, in->name, strcmp(in->kind, "CapacityQueue") != 0, why, sizeof(why)) < 0) {
            continue;
        }
        char *json = strdup(in->status);
        if (json != NULL)
            group_status_note(b, in->kind, in->namespace_, in->name, json);
    }
    for (size_t i = 0; i < m->n_nominations; i++) {
        const Kcycle__V1__Nomination *in = m->nominations[i];
        char why[512];
        if (check_target("Pod", in->namespace_, in->name, true, why, sizeof(why)) < 0) {
            continue;
        }
        struct bridge_work *w = work_new(WORK_NOMINATE, in->namespace_, in->name, in->uid);
        if (w != NULL && (w->node = strdup(in->node)) == NULL) {
            work_free(w);
            w = NULL;
        }
        if (w != NULL)
            work_push(b, w);
    }
    for (size_t i = 0; i < m->n_evictions; i++) {
        const Kcycle__V1__Eviction *in = m->evictions[i];
        char why[512];
        if (check_target("Pod", in->namespace_, in->name, true, why, sizeof(why)) < 0) {
            struct bridge_work refused = {.uid = in->uid, .related_uid = in->preemptor_uid};
            eviction_result(b, &refused, 0, why);
            continue;
        }
        struct bridge_work *w = work_new(WORK_EVICT, in->namespace_, in->name, in->uid);
        if (w != NULL && ((w->node = strdup(in->node)) == NULL ||
                          (w->related_namespace = strdup(in->preemptor_namespace)) == NULL ||
                          (w->related_name = strdup(in->preemptor_name)) == NULL ||
                          (w->related_uid = strdup(in->preemptor_uid)) == NULL)) {
            work_free(w);
            w = NULL;
        }
        if (w != NULL)
            work_push(b, w);
    }
    kcycle__v1__to_bridge__free_unpacked(m, NULL);
}

static void *receiver_main(void *arg)
{
    struct bridge *b = arg;
    while (!atomic_load(&b->stop)) {
        nng_msg *msg;
        int rc = nng_recvmsg(b->sock, &msg, 0);
        if (rc == 0)
            handle_command(b, msg);
        else if (rc == NNG_ECLOSED)
            break;
    }
    return NULL;
}

static void pipe_removed(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
    (void)ev;
    struct bridge *b = arg;
    pthread_mutex_lock(&b->lock);
    if (nng_pipe_id(pipe) == nng_pipe_id(b->pipe)) {
        b->session_active = false;
        b->hello_pending = false;
        drop_queued(b);
        pthread_cond_broadcast(&b->cond);
        log_warn("bridge: the scheduler disconnected");
    }
    pthread_mutex_unlock(&b->lock);
}

/* ---- API writers ---- */

/* Cut text to at most max bytes without splitting a UTF-8 sequence. */
static void utf8_truncate(char *text, size_t max)
{
    size_t len = strlen(text);
    if (len <= max)
        return;
    size_t cut = max;
    while (cut > 0 && ((unsigned char)text[cut] & 0xc0) == 0x80)
        cut--;
    text[cut] = '\0';
}

static void api_error(struct bridge *b, const char *what, const char *object, long status,
                      const char *body, const struct kc_error *err)
{
    atomic_fetch_add(&b->stats.api_errors, 1);
    char text[512] = "";
    if (status != 0)
        kube_status_text(body, text, sizeof(text));
    log_warn("bridge: %s for %s failed: %s", what, object, status != 0 ? text : err->message);
}

static void post_event(struct bridge *b, struct kube_client *client, const struct bridge_work *w,
                       const char *reason, const char *type, const char *action, char *note)
{
    char now[64], name[512], path[512];
    bridge_format_time(now, sizeof(now));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(name, sizeof(name), "%s.%llx", w->name,
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
    utf8_truncate(note, NOTE_MAX);
    json_t *event = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}",
        "apiVersion", "events.k8s.io/v1", "kind", "Event", "metadata", "name", name, "namespace",
        w->namespace, "eventTime", now, "reportingController", b->opt.scheduler_name,
        "reportingInstance", b->opt.identity, "action", action, "reason", reason, "type", type,
        "note", note, "regarding", "apiVersion", "v1", "kind", "Pod", "namespace", w->namespace,
        "name", w->name, "uid", w->uid);
    if (event != NULL && w->related_uid != NULL) /* a preemption: the preemptor */
        json_object_set_new(event, "related",
                            json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind",
                                      "Pod", "namespace", w->related_namespace, "name",
                                      w->related_name, "uid", w->related_uid));
    char *body = event != NULL ? json_dumps(event, JSON_COMPACT) : NULL;
    json_decref(event);
    if (body == NULL)
        return;
    snprintf(path, sizeof(path), "/apis/events.k8s.io/v1/namespaces/%s/events", w->namespace);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(client, "POST", path, "application/json", body, strlen(body),
                          API_TIMEOUT_MS, &res, &err);
    if (rc < 0 || res.status >= 300)
        api_error(b, "the event", w->name, rc < 0 ? 0 : res.status, res.body, &err);
    else
        atomic_fetch_add(&b->stats.events, 1);
    kube_response_free(&res);
    free(body);
}

/* The API path of an object kind the scheduler may write; 0 or -EINVAL for another kind. */
static int object_path(const char *kind, const char *namespace_name, const char *name, char *out,
                       size_t size)
{
    if (strcmp(kind, "PersistentVolumeClaim") == 0 && namespace_name[0] != '\0')
        snprintf(out, size, "/api/v1/namespaces/%s/persistentvolumeclaims/%s", namespace_name,
                 name);
    else if (strcmp(kind, "PersistentVolume") == 0)
        snprintf(out, size, "/api/v1/persistentvolumes/%s", name);
    else
        return -EINVAL;
    return 0;
}

/* The writes a binding needs first (kube's binder: the volume's claimRef, the claim's
 * selected-node), as merge patches, in order. A failure answers the binding with the write's
 * status and message, and the Binding is not sent: the pod is retried. */
static int write_objects(struct bridge *b, struct kube_client *client, struct bridge_work *w,
                         long timeout)
{
    json_t *writes = json_loads(w->writes_json, 0, NULL);
    size_t i;
    json_t *write;
    int result = 0;
    json_array_foreach(writes, i, write)
    {
        const char *kind = json_string_value(json_object_get(write, "kind"));
        const char *ns = json_string_value(json_object_get(write, "namespace"));
        const char *name = json_string_value(json_object_get(write, "name"));
        const char *patch = json_string_value(json_object_get(write, "patch"));
        char path[768], text[640] = "", message[2400];
        if (kind == NULL || name == NULL || patch == NULL ||
            object_path(kind, ns != NULL ? ns : "", name, path, sizeof(path)) < 0) {
            snprintf(message, sizeof(message), "the bridge cannot write %s %s",
                     kind != NULL ? kind : "(no kind)", name != NULL ? name : "(no name)");
            bind_result(b, w->id, w->uid, 0, message);
            result = -EINVAL;
            break;
        }
        struct kube_response res = {0};
        struct kc_error err = {{0}};
        int rc = kube_request(client, "PATCH", path, "application/merge-patch+json", patch,
                              strlen(patch), timeout, &res, &err);
        if (rc >= 0 && res.status < 300) {
            atomic_fetch_add(&b->stats.object_writes, 1);
            kube_response_free(&res);
            continue;
        }
        if (rc >= 0)
            kube_status_text(res.body, text, sizeof(text));
        snprintf(message, sizeof(message), "writing %s %s%s%s before the binding: %s", kind,
                 ns != NULL && ns[0] != '\0' ? ns : "", ns != NULL && ns[0] != '\0' ? "/" : "",
                 name, rc < 0 ? err.message : text);
        log_info("bridge: binding %s/%s: %s", w->namespace, w->name, message);
        bind_result(b, w->id, w->uid, rc < 0 ? 0 : (int)res.status, message);
        kube_response_free(&res);
        result = rc < 0 ? rc : -EIO;
        break;
    }
    json_decref(writes);
    return result;
}

static void do_bind(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    /* the request must end while the lease is ours: no binding lands after another replica
     * may have taken over */
    long timeout = API_TIMEOUT_MS;
    if (b->opt.leader_elect) {
        int64_t left = atomic_load(&b->leader_until_ms) - bridge_monotonic_ms();
        if (left < timeout)
            timeout = (long)left;
    }
    if (!bridge_may_bind(b) || timeout < 1000) {
        bind_result(b, w->id, w->uid, 0, "this replica does not hold the lease");
        return;
    }
    int claimed = binding_claim(b, w);
    if (claimed < 0) {
        atomic_fetch_add(&b->stats.bindings_refused, 1);
        bind_result(b, w->id, w->uid, claimed == -EEXIST ? 409 : 0,
                    claimed == -EEXIST ? "this bridge already bound the pod or is binding it"
                                       : "the bridge ran out of memory");
        return;
    }
    if (w->writes_json != NULL && write_objects(b, client, w, timeout) < 0) {
        binding_settle(b, w, false);
        atomic_fetch_add(&b->stats.binding_failures, 1);
        return;
    }
    json_t *annotations = json_loads(w->annotations_json, 0, NULL);
    json_t *binding =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:o}, s:{s:s, s:s, s:s}}", "apiVersion", "v1",
                  "kind", "Binding", "metadata", "name", w->name, "namespace", w->namespace, "uid",
                  w->uid, "annotations", annotations != NULL ? annotations : json_object(),
                  "target", "apiVersion", "v1", "kind", "Node", "name", w->node);
    char *body = binding != NULL ? json_dumps(binding, JSON_COMPACT) : NULL;
    json_decref(binding);
    if (body == NULL) {
        bind_result(b, w->id, w->uid, 0, "the bridge ran out of memory");
        return;
    }
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/binding", w->namespace, w->name);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(client, "POST", path, "application/json", body, strlen(body), timeout,
                          &res, &err);
    free(body);
    char text[512] = "";
    binding_settle(b, w, rc >= 0 && (res.status == 201 || res.status == 200));
    if (rc < 0) {
        bind_result(b, w->id, w->uid, 0, err.message);
        atomic_fetch_add(&b->stats.binding_failures, 1);
    } else {
        kube_status_text(res.body, text, sizeof(text));
        bind_result(b, w->id, w->uid, (int)res.status, text);
        if (res.status == 201 || res.status == 200) {
            atomic_fetch_add(&b->stats.bindings, 1);
            note_first_binding(b);
        } else
            atomic_fetch_add(&b->stats.binding_failures, 1);
    }
    if (rc < 0 || (res.status != 201 && res.status != 200))
        log_info("bridge: binding %s/%s to %s: %s", w->namespace, w->name, w->node,
                 rc < 0 ? err.message : text);
    kube_response_free(&res);
}

/* The message last reported for a pod; the condition and event are skipped when unchanged. */
static bool already_reported(struct bridge *b, const char *uid, const char *message)
{
    pthread_mutex_lock(&b->reported_lock);
    char *last = strmap_get(&b->reported, uid);
    bool same = last != NULL && strcmp(last + strlen(last) + 1, message) == 0;
    if (!same) {
        /* one block: "uid\0message\0", the key points into it */
        size_t ulen = strlen(uid), mlen = strlen(message);
        char *entry = malloc(ulen + mlen + 2);
        if (entry != NULL) {
            memcpy(entry, uid, ulen + 1);
            memcpy(entry + ulen + 1, message, mlen + 1);
            free(strmap_remove(&b->reported, uid));
            if (strmap_put(&b->reported, entry, entry) < 0)
                free(entry);
        }
    }
    pthread_mutex_unlock(&b->reported_lock);
    return same;
}

static void forget_reported(struct bridge *b, const char *uid)
{
    pthread_mutex_lock(&b->reported_lock);
    free(strmap_remove(&b->reported, uid));
    pthread_mutex_unlock(&b->reported_lock);
}

static void do_unschedulable(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    if (already_reported(b, w->uid, w->message))
        return;
    char now[64], path[512];
    bridge_format_time(now, sizeof(now));
    json_t *patch = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:n, s:s}]}}", "status", "conditions",
                              "type", "PodScheduled", "status", "False", "reason", w->reason,
                              "message", w->message, "lastProbeTime", "lastTransitionTime", now);
    char *body = patch != NULL ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body == NULL)
        return;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", w->namespace, w->name);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(client, "PATCH", path, "application/strategic-merge-patch+json", body,
                          strlen(body), API_TIMEOUT_MS, &res, &err);
    free(body);
    if (rc < 0 || res.status >= 300) {
        if (rc >= 0 && res.status != 404)
            forget_reported(b, w->uid); /* try again with the next report */
        if (rc < 0 || res.status != 404)
            api_error(b, "the PodScheduled condition", w->name, rc < 0 ? 0 : res.status, res.body,
                      &err);
    } else {
        atomic_fetch_add(&b->stats.conditions, 1);
    }
    kube_response_free(&res);
    if (rc >= 0 && res.status == 404)
        return; /* the pod is gone */
    post_event(b, client, w, "FailedScheduling", "Warning", "Scheduling", w->message);
}

static void do_scheduled(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    forget_reported(b, w->uid);
    char note[1100];
    snprintf(note, sizeof(note), "Successfully assigned %s/%s to %s", w->namespace, w->name,
             w->node);
    post_event(b, client, w, "Scheduled", "Normal", "Binding", note);
}

/* ---- PodGroup status: the latest per group, one write at a time per group ---- */

static void group_status_free(struct bridge_group_status *g)
{
    if (g == NULL)
        return;
    free(g->key);
    free(g->json);
    free(g);
}

/* Queue a write of the group's status unless one is queued or running (group_status_lock
 * held): that one writes the latest, or queues the next when it is done. */
static bool group_status_queue(struct bridge_group_status *g)
{
    if (g->json == NULL || g->queued || g->writing)
        return false;
    g->queued = true;
    return true;
}

/* Hand the queued write to the writers; out of memory, the group is not queued after all (its
 * next status queues it again). */
static void group_status_push(struct bridge *b, const char *kind, const char *namespace,
                              const char *name, const char *key)
{
    struct bridge_work *w = work_new(WORK_GROUP_STATUS, namespace, name, "");
    if (w != NULL && (w->kind = strdup(kind)) == NULL) {
        work_free(w);
        w = NULL;
    }
    if (w != NULL)
        return work_push(b, w);
    log_error("bridge: out of memory writing the status of PodGroup %s", key);
    pthread_mutex_lock(&b->group_status_lock);
    struct bridge_group_status *g = strmap_get(&b->group_status, key);
    if (g != NULL)
        g->queued = false;
    pthread_mutex_unlock(&b->group_status_lock);
}

/* The scheduler reported a group's status, or a plugin an object's (json is taken). Statuses
 * that come faster than they are written collapse into the latest. */
static void group_status_note(struct bridge *b, const char *kind, const char *namespace,
                              const char *name, char *json)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s/%s", kind, namespace, name);
    pthread_mutex_lock(&b->group_status_lock);
    struct bridge_group_status *g = strmap_get(&b->group_status, key);
    if (g == NULL && (g = calloc(1, sizeof(*g))) != NULL &&
        ((g->key = strdup(key)) == NULL || strmap_put(&b->group_status, g->key, g) < 0)) {
        group_status_free(g);
        g = NULL;
    }
    bool push = false;
    if (g != NULL) {
        free(g->json);
        g->json = json;
        json = NULL;
        push = group_status_queue(g);
    }
    pthread_mutex_unlock(&b->group_status_lock);
    free(json);
    if (push)
        group_status_push(b, kind, namespace, name, key);
}

/* The status to write now (malloc'd), the group marked as being written; NULL when a
 * write of it already took the latest. */
static char *group_status_take(struct bridge *b, const char *key)
{
    pthread_mutex_lock(&b->group_status_lock);
    struct bridge_group_status *g = strmap_get(&b->group_status, key);
    char *json = g != NULL ? g->json : NULL;
    if (g != NULL) {
        g->json = NULL;
        g->queued = false;
        g->writing = json != NULL;
    }
    pthread_mutex_unlock(&b->group_status_lock);
    return json;
}

/* The write is done: queue the next when a newer status came meanwhile, else forget it. */
static bool group_status_written(struct bridge *b, const char *key)
{
    pthread_mutex_lock(&b->group_status_lock);
    struct bridge_group_status *g = strmap_get(&b->group_status, key);
    bool push = false;
    if (g != NULL) {
        g->writing = false;
        push = group_status_queue(g);
        if (!push && g->json == NULL && !g->queued)
            group_status_free(strmap_remove(&b->group_status, key));
    }
    pthread_mutex_unlock(&b->group_status_lock);
    return push;
}

static void write_group_status(struct bridge *b, struct kube_client *client,
                               const struct bridge_work *w);

/* The status subresource of a custom object a plugin reports on; 0 or -EINVAL for a kind the
 * bridge does not know. */
static int status_path(const char *kind, const char *namespace_name, const char *name, char *out,
                       size_t size)
{
    if (strcmp(kind, "CapacityQueue") == 0)
        snprintf(out, size, "/apis/scheduling.kcycle.io/v1alpha1/capacityqueues/%s/status", name);
    else
        return -EINVAL;
    (void)namespace_name;
    return 0;
}

/* Write the group's latest status; client NULL: drop it (this replica writes nothing now). */
static void do_group_status(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s/%s", w->kind, w->namespace, w->name);
    w->annotations_json = group_status_take(b, key);
    if (w->annotations_json == NULL)
        return;
    if (client != NULL)
        write_group_status(b, client, w);
    if (group_status_written(b, key))
        group_status_push(b, w->kind, w->namespace, w->name, key);
}

/* A status as a merge patch of the status subresource: PodGroup status as scheduler-plugins
 * keeps it (phase, scheduled and running counts), or a plugin's object status (CapacityQueue
 * usage; the plugin reports every figure it ever reported, so a merge leaves nothing stale).
 * An object that does not exist (a group without a PodGroup, a deleted queue) is left alone. */
static void write_group_status(struct bridge *b, struct kube_client *client,
                               const struct bridge_work *w)
{
    char path[768];
    bool group = strcmp(w->kind, "PodGroup") == 0;
    if (group)
        snprintf(path, sizeof(path),
                 "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status",
                 w->namespace, w->name);
    else if (status_path(w->kind, w->namespace, w->name, path, sizeof(path)) < 0) {
        log_warn("bridge: a plugin reported the status of %s %s, a kind the bridge cannot write",
                 w->kind, w->name);
        return;
    }
    size_t len = strlen(w->annotations_json) + 16;
    char *body = malloc(len);
    if (body == NULL)
        return;
    snprintf(body, len, "{\"status\":%s}", w->annotations_json);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(client, "PATCH", path, "application/merge-patch+json", body, strlen(body),
                          API_TIMEOUT_MS, &res, &err);
    free(body);
    if (rc >= 0 && res.status < 300)
        atomic_fetch_add(group ? &b->stats.group_statuses : &b->stats.object_statuses, 1);
    else if (rc < 0 || res.status != 404)
        api_error(b, group ? "the PodGroup status" : "the object status", w->name,
                  rc < 0 ? 0 : res.status, res.body, &err);
    kube_response_free(&res);
}

/* ---- preemption ---- */

/* status.nominatedNodeName of the preemptor, as kube-scheduler writes it with its status
 * update (a merge patch: null clears it). */
static void do_nominate(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    json_t *patch = json_pack("{s:{s:o}}", "status", "nominatedNodeName",
                              w->node[0] != '\0' ? json_string(w->node) : json_null());
    char *body = patch != NULL ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    if (body == NULL)
        return;
    char path[512];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", w->namespace, w->name);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    int rc = kube_request(client, "PATCH", path, "application/merge-patch+json", body,
                          strlen(body), API_TIMEOUT_MS, &res, &err);
    free(body);
    if (rc >= 0 && res.status < 300)
        atomic_fetch_add(&b->stats.nominations, 1);
    else if (rc < 0 || res.status != 404)
        api_error(b, "the nominated node", w->name, rc < 0 ? 0 : res.status, res.body, &err);
    kube_response_free(&res);
}

static void eviction_result(struct bridge *b, const struct bridge_work *w, int code,
                            const char *message)
{
    Kcycle__V1__EvictionResult r = KCYCLE__V1__EVICTION_RESULT__INIT;
    r.uid = w->uid;
    r.preemptor_uid = w->related_uid != NULL ? w->related_uid : "";
    r.code = code;
    r.message = (char *)message;
    size_t len = kcycle__v1__eviction_result__get_packed_size(&r);
    uint8_t *buf = malloc(len > 0 ? len : 1);
    if (buf == NULL)
        return;
    kcycle__v1__eviction_result__pack(&r, buf);
    pthread_mutex_lock(&b->lock);
    if (b->session_active)
        queue_field(b, FIELD_EVICTION_RESULTS, buf, len);
    pthread_mutex_unlock(&b->lock);
    free(buf);
}

/* A preemption victim: the DisruptionTarget condition kube sets, then DELETE with a uid
 * precondition (a pod of the same name created since is never hit), then a Preempted event on
 * the victim naming the preemptor, as kube-scheduler writes it. */
static void do_evict(struct bridge *b, struct kube_client *client, struct bridge_work *w)
{
    char path[512], now[64], message[320];
    bridge_format_time(now, sizeof(now));
    snprintf(message, sizeof(message), "%s: preempting to accommodate a higher priority pod",
             b->opt.scheduler_name);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", w->namespace, w->name);
    json_t *patch = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type",
                              "DisruptionTarget", "status", "True", "reason",
                              "PreemptionByScheduler", "message", message, "lastTransitionTime",
                              now);
    char *body = patch != NULL ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    struct kube_response res = {0};
    struct kc_error err = {{0}};
    if (body != NULL) {
        int rc = kube_request(client, "PATCH", path, "application/strategic-merge-patch+json",
                              body, strlen(body), API_TIMEOUT_MS, &res, &err);
        if (rc < 0 || (res.status >= 300 && res.status != 404))
            api_error(b, "the DisruptionTarget condition", w->name, rc < 0 ? 0 : res.status,
                      res.body, &err);
        kube_response_free(&res);
        free(body);
    }
    json_t *options = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                "DeleteOptions", "preconditions", "uid", w->uid);
    body = options != NULL ? json_dumps(options, JSON_COMPACT) : NULL;
    json_decref(options);
    if (body == NULL) {
        eviction_result(b, w, 0, "the bridge ran out of memory");
        return;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->namespace, w->name);
    memset(&res, 0, sizeof(res));
    int rc = kube_request(client, "DELETE", path, "application/json", body, strlen(body),
                          API_TIMEOUT_MS, &res, &err);
    free(body);
    char text[512] = "";
    if (rc >= 0)
        kube_status_text(res.body, text, sizeof(text));
    bool deleted = rc >= 0 && (res.status == 200 || res.status == 202);
    eviction_result(b, w, rc < 0 ? 0 : (int)res.status, rc < 0 ? err.message : text);
    if (deleted) {
        atomic_fetch_add(&b->stats.evictions, 1);
    } else {
        atomic_fetch_add(&b->stats.eviction_failures, 1);
        if (rc < 0 || res.status != 404)
            api_error(b, "the eviction", w->name, rc < 0 ? 0 : res.status, res.body, &err);
    }
    kube_response_free(&res);
    if (!deleted)
        return;
    char note[1100];
    snprintf(note, sizeof(note), "Preempted by pod %s on node %s", w->related_uid, w->node);
    post_event(b, client, w, "Preempted", "Normal", "Preempting", note);
}

static bool session_current(struct bridge *b, uint64_t session)
{
    pthread_mutex_lock(&b->lock);
    bool current = b->session_active && b->session == session;
    pthread_mutex_unlock(&b->lock);
    return current;
}

static void *writer_main(void *arg)
{
    struct bridge *b = arg;
    struct kube_client *client = NULL;
    struct kc_error err = {{0}};
    if (kube_client_new(&b->kube, b->user_agent, &client, &err) < 0) {
        log_error("bridge: an API writer cannot start: %s", err.message);
    } else {
        kube_client_set_limits(client, &b->opt.limits);
        /* a write in flight at the stop may finish, briefly: the stop is not held for the
         * API timeout of each write a binding still has to make */
        kube_client_set_stop(client, &b->stop, BRIDGE_STOP_GRACE_MS);
    }
    for (;;) {
        pthread_mutex_lock(&b->work_lock);
        while (b->work_head == NULL && !atomic_load(&b->stop))
            pthread_cond_wait(&b->work_cond, &b->work_lock);
        struct bridge_work *w = b->work_head;
        if (w != NULL) {
            b->work_head = w->next;
            if (b->work_head == NULL)
                b->work_tail = NULL;
            b->work_count--;
        }
        pthread_mutex_unlock(&b->work_lock);
        if (w == NULL)
            break; /* stopping and nothing left */
        if (client == NULL || atomic_load(&b->stop)) {
            if (w->type == WORK_BIND)
                bind_result(b, w->id, w->uid, 0, "the bridge is stopping");
            else if (w->type == WORK_GROUP_STATUS)
                do_group_status(b, NULL, w);
        } else if (w->type != WORK_BIND && !bridge_may_bind(b)) {
            /* a replica that lost the lease writes nothing more: the new leader reports */
            if (w->type == WORK_GROUP_STATUS)
                do_group_status(b, NULL, w);
        } else if (w->type == WORK_BIND && !session_current(b, w->session)) {
            /* asked by a scheduler session that ended: that scheduler has already failed
             * the binding and will learn from the sync whether the pod is bound */
        } else if (w->type == WORK_BIND) {
            do_bind(b, client, w);
        } else if (w->type == WORK_UNSCHEDULABLE) {
            do_unschedulable(b, client, w);
        } else if (w->type == WORK_GROUP_STATUS) {
            do_group_status(b, client, w);
        } else if (w->type == WORK_NOMINATE) {
            do_nominate(b, client, w);
        } else if (w->type == WORK_EVICT) {
            do_evict(b, client, w);
        } else {
            do_scheduled(b, client, w);
        }
        work_free(w);
    }
    kube_client_free(client);
    return NULL;
}

/* ---- open, run, close ---- */

static void add_watch(struct bridge *b, const char *kind, const char *path,
                      const char *field_selector, char type, bool required)
{
    struct bridge_watch *w = &b->watches[b->watch_count++];
    w->bridge = b;
    w->resource.kind = kind;
    w->resource.path = path;
    w->resource.field_selector = field_selector;
    w->kind = type;
    w->required = required;
}

static bool health_check(void *ctx, const char *path)
{
    struct bridge *b = ctx;
    return strcmp(path, "/readyz") == 0 ? bridge_ready(b) : bridge_alive(b);
}

int bridge_open(struct bridge *b, const struct bridge_options *opt, struct kc_error *err)
{
    memset(b, 0, sizeof(*b));
    b->opt = *opt;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    pthread_mutex_init(&b->work_lock, NULL);
    pthread_cond_init(&b->work_cond, NULL);
    pthread_mutex_init(&b->reported_lock, NULL);
    pthread_mutex_init(&b->group_status_lock, NULL);
    pthread_mutex_init(&b->binding_lock, NULL);
    b->start_ms = bridge_monotonic_ms();
    atomic_store(&b->stats.start_to_first_sync_ms, -1);
    atomic_store(&b->stats.first_sync_to_first_binding_ms, -1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    b->session = (uint64_t)ts.tv_sec << 20 ^ (uint64_t)ts.tv_nsec; /* new on every start */
    int rc;
    if (opt->kubeconfig != NULL) {
        rc = kube_config_from_kubeconfig(opt->kubeconfig, opt->context, &b->kube, err);
    } else {
        rc = kube_config_in_cluster(NULL, &b->kube, err);
        const char *env = getenv("KUBECONFIG");
        if (rc == -ENOENT && env != NULL && env[0] != '\0')
            rc = kube_config_from_kubeconfig(env, opt->context, &b->kube, err);
    }
    if (rc < 0)
        return rc;
    if (b->opt.lease_namespace == NULL)
        b->opt.lease_namespace = b->kube.namespace != NULL ? b->kube.namespace : "default";
    snprintf(b->user_agent, sizeof(b->user_agent), "kcycle-kube-bridge/%s (%s)", KCYCLE_VERSION,
             opt->identity);
    add_watch(b, "Node", "/api/v1/nodes", NULL, 'n', true);
    add_watch(b, "Pod", "/api/v1/pods", "status.phase!=Succeeded,status.phase!=Failed", 'p', true);
    add_watch(b, "PodGroup", "/apis/scheduling.x-k8s.io/v1alpha1/podgroups", NULL, 'o', false);
    add_watch(b, "CapacityQueue", "/apis/scheduling.kcycle.io/v1alpha1/capacityqueues", NULL, 'o',
              false);
    add_watch(b, "NodeResourceTopology",
              "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies", NULL, 'o', false);
    /* what the volume plugins read (volumebinding, volumerestrictions, nodevolumelimits) */
    add_watch(b, "PersistentVolumeClaim", "/api/v1/persistentvolumeclaims", NULL, 'o', false);
    add_watch(b, "PersistentVolume", "/api/v1/persistentvolumes", NULL, 'o', false);
    add_watch(b, "StorageClass", "/apis/storage.k8s.io/v1/storageclasses", NULL, 'o', false);
    add_watch(b, "CSINode", "/apis/storage.k8s.io/v1/csinodes", NULL, 'o', false);
    /* preemption: budgets defaultpreemption respects, passed on as custom objects */
    add_watch(b, "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets", NULL, 'o', false);
    /* namespace labels, for the namespaceSelector of pod affinity terms (interpodaffinity) */
    add_watch(b, "Namespace", "/api/v1/namespaces", NULL, 'o', false);
    /* the selectors of podtopologyspread's default constraints (kube's DefaultSelector) */
    add_watch(b, "Service", "/api/v1/services", NULL, 'o', false);
    add_watch(b, "ReplicationController", "/api/v1/replicationcontrollers", NULL, 'o', false);
    add_watch(b, "ReplicaSet", "/apis/apps/v1/replicasets", NULL, 'o', false);
    add_watch(b, "StatefulSet", "/apis/apps/v1/statefulsets", NULL, 'o', false);
    if ((rc = socket_dir_check(opt->listen_url, err)) < 0)
        return rc;
    if ((rc = nng_pair1_open(&b->sock)) != 0)
        return kc_error_set(err, -ENOMEM, "cannot open the scheduler socket: %s", nng_strerror(rc));
    b->sock_open = true;
    nng_pipe_notify(b->sock, NNG_PIPE_EV_REM_POST, pipe_removed, b);
    nng_socket_set_ms(b->sock, NNG_OPT_RECVTIMEO, 200);
    nng_socket_set_ms(b->sock, NNG_OPT_SENDTIMEO, SEND_SLICE_MS); /* see send_to_scheduler */
    /* another user's process connecting to the socket never reaches the bridge */
    if ((rc = ipc_peer_guard(b->sock, &b->peer, "bridge")) != 0)
        return kc_error_set(err, -ENOMEM, "cannot set up the scheduler socket: %s",
                            nng_strerror(rc));
    if ((rc = nng_listen(b->sock, opt->listen_url, NULL, 0)) != 0)
        return kc_error_set(err, -EADDRINUSE, "cannot listen on %s: %s", opt->listen_url,
                            nng_strerror(rc));
    if (!opt->leader_elect) {
        atomic_store(&b->leader, true);
        snprintf(b->holder, sizeof(b->holder), "%s", opt->identity);
    }
    return 0;
}

void bridge_stop(struct bridge *b)
{
    atomic_store(&b->stop, true);
}

int bridge_start_receiver(struct bridge *b, struct kc_error *err)
{
    if (pthread_create(&b->receiver, NULL, receiver_main, b) != 0)
        return kc_error_set(err, -EAGAIN, "cannot start the receiver thread");
    b->receiver_started = true;
    return 0;
}

static int start_threads(struct bridge *b, struct kc_error *err)
{
    static const struct kube_reflector_ops template = {.event = bridge_watch_event,
                                                       .synced = on_synced,
                                                       .warn = on_warn,
                                                       .not_served = on_not_served};
    /* the series exist before any thread that counts into them: the first list is counted */
    if (b->opt.health_port >= 0 && bridge_metrics_open(b) < 0)
        return kc_error_set(err, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < b->watch_count; i++) {
        struct bridge_watch *w = &b->watches[i];
        struct kube_reflector_ops ops = template;
        ops.ctx = w;
        int rc = kube_client_new(&b->kube, b->user_agent, &w->client, err);
        if (rc < 0)
            return rc;
        kube_client_set_limits(w->client, &b->opt.limits);
        if ((rc = kube_reflector_init(&w->reflector, &w->resource, &ops, w->client, &b->stop)) < 0)
            return kc_error_set(err, rc, "cannot start watching %s", w->resource.kind);
        if (pthread_create(&w->thread, NULL, watch_main, w) != 0)
            return kc_error_set(err, -EAGAIN, "cannot start a watch thread");
        w->started = true;
    }
    b->writers = calloc(b->opt.workers, sizeof(*b->writers));
    if (b->writers == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    for (; b->writer_count < b->opt.workers; b->writer_count++)
        if (pthread_create(&b->writers[b->writer_count], NULL, writer_main, b) != 0)
            return kc_error_set(err, -EAGAIN, "cannot start an API writer thread");
    if (b->opt.leader_elect) {
        if (pthread_create(&b->leader_thread, NULL, bridge_leader_main, b) != 0)
            return kc_error_set(err, -EAGAIN, "cannot start leader election");
        b->leader_started = true;
    }
    int rc = bridge_start_receiver(b, err);
    if (rc < 0)
        return rc;
    if (b->opt.health_port < 0)
        return 0;
    struct health_options hopt = {.port = b->opt.health_port,
                                  .port_file = b->opt.health_port_file,
                                  .check = health_check,
                                  .ctx = b,
                                  .metrics = b->metrics.registry};
    return health_start(&b->health, &hopt, err);
}

/* Hand msg to the scheduler of `session`. A pair socket's send waits while the pipe still
 * writes the previous message and, once the scheduler has gone, until another one connects;
 * waited for whole, that held the stop for up to SEND_TIMEOUT_MS. So it waits in slices and
 * gives up at the stop, or when the session ended (a new one starts with a whole sync, which
 * this message is part of no longer). 0, or nng's error with msg still the caller's (lock not
 * held). */
static int send_to_scheduler(struct bridge *b, nng_msg *msg, uint64_t session)
{
    int64_t deadline = bridge_monotonic_ms() + SEND_TIMEOUT_MS;
    for (;;) {
        int rc = nng_sendmsg(b->sock, msg, 0);
        if (rc != NNG_ETIMEDOUT || atomic_load(&b->stop) || !session_current(b, session) ||
            bridge_monotonic_ms() >= deadline)
            return rc;
    }
}

void bridge_send_loop(struct bridge *b)
{
    pthread_mutex_lock(&b->lock);
    while (!atomic_load(&b->stop)) {
        sync_when_ready(b); /* only the optional wait's end gets here first */
        if (b->out_count == 0) {
            /* woken by queued messages; otherwise look at the stop flag (set from a signal
             * handler, which cannot signal a condition) every 200 ms, and at the end of the
             * optional wait when it is due sooner */
            int64_t wait_ms = 200, due = sync_due_ms(b), now = bridge_monotonic_ms();
            if (due != 0 && due - now < wait_ms)
                wait_ms = due > now ? due - now : 0;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += wait_ms / 1000;
            ts.tv_nsec += (wait_ms % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&b->cond, &b->lock, &ts);
            continue;
        }
        nng_msg *msg = b->out[0];
        size_t len = nng_msg_len(msg);
        b->out_bytes = b->out_bytes > len ? b->out_bytes - len : 0;
        memmove(b->out, b->out + 1, (b->out_count - 1) * sizeof(*b->out));
        b->out_count--;
        uint64_t session = b->session; /* the queue holds the current session's messages */
        pthread_cond_broadcast(&b->cond); /* producers held back by backpressure */
        pthread_mutex_unlock(&b->lock);
        int rc = send_to_scheduler(b, msg, session);
        pthread_mutex_lock(&b->lock);
        if (rc != 0) {
            nng_msg_free(msg);
            if (!atomic_load(&b->stop) && b->session_active && b->session == session)
                lose_session(b, "the scheduler does not take messages");
        } else {
            atomic_fetch_add(&b->stats.messages_sent, 1);
        }
    }
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

int bridge_run(struct bridge *b)
{
    struct kc_error err = {{0}};
    int rc = start_threads(b, &err);
    if (rc < 0) {
        log_error("bridge: %s", err.message);
        atomic_store(&b->stop, true);
        return rc;
    }
    log_info("bridge: listening on %s for the scheduler", b->opt.listen_url);
    bridge_send_loop(b);
    return 0;
}

void bridge_close(struct bridge *b)
{
    atomic_store(&b->stop, true);
    pthread_mutex_lock(&b->work_lock);
    pthread_cond_broadcast(&b->work_cond);
    pthread_mutex_unlock(&b->work_lock);
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    health_stop(b->health);
    /* writers first: their last requests end before the lease is released */
    for (uint32_t i = 0; i < b->writer_count; i++)
        pthread_join(b->writers[i], NULL);
    free(b->writers);
    atomic_store(&b->writers_joined, true); /* the leader thread waits for this to release */
    if (b->leader_started)
        pthread_join(b->leader_thread, NULL);
    for (uint32_t i = 0; i < b->watch_count; i++)
        if (b->watches[i].started)
            pthread_join(b->watches[i].thread, NULL);
    if (b->sock_open)
        nng_close(b->sock); /* wakes the receiver */
    if (b->receiver_started)
        pthread_join(b->receiver, NULL);
    bridge_metrics_close(b); /* after every thread that counts into it is joined */
    for (uint32_t i = 0; i < b->watch_count; i++) {
        struct bridge_watch *w = &b->watches[i];
        if (w->reflector.resource != NULL)
            kube_reflector_free(&w->reflector);
        kube_client_free(w->client);
        for (uint32_t j = 0; j < w->items.capacity; j++)
            item_free(w->items.entries[j].value);
        strmap_free(&w->items);
    }
    drop_queued(b);
    free(b->out);
    while (b->work_head != NULL) {
        struct bridge_work *w = b->work_head;
        b->work_head = w->next;
        work_free(w);
    }
    for (uint32_t i = 0; i < b->reported.capacity; i++)
        free(b->reported.entries[i].value);
    strmap_free(&b->reported);
    kube_config_free(&b->kube);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->work_lock);
    pthread_cond_destroy(&b->work_cond);
    pthread_mutex_destroy(&b->reported_lock);
    for (uint32_t i = 0; i < b->group_status.capacity; i++)
        group_status_free(b->group_status.entries[i].value);
    strmap_free(&b->group_status);
    pthread_mutex_destroy(&b->group_status_lock);
    for (uint32_t i = 0; i < b->bindings.capacity; i++)
        binding_free(b->bindings.entries[i].value);
    strmap_free(&b->bindings);
    pthread_mutex_destroy(&b->binding_lock);
    memset(b, 0, sizeof(*b));
}
