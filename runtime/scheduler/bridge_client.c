/* kcycle-scheduler --bridge: the cluster comes from kcycle-kube-bridge over nng, decisions go
 * back to it. The scheduler schedules only while the bridge holds the lease, and treats every
 * binding whose result it may never hear (the bridge went away) as failed and retried: the API
 * server refuses a second binding of a bound pod, so a retry never binds twice. */
#include "bridge_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/protocol/pair1/pair.h>

#include "array.h"
#include "log.h"
#include "monotonic.h"
#include "socket_dir.h"
#include "model.h"
#include "preempt.h"
#include "proto_convert.h"
#include "sched_metrics.h"

#define LOOP_BUDGET_US 20000 /* schedule at most this long before looking at messages again */
#define IDLE_WAIT_MS 100
#define SEND_TIMEOUT_MS 5000
/* The bridge's API timeout is 10 s: an answer later than this will not come. */
#define BIND_ANSWER_TIMEOUT_MS 30000
/* A hello unanswered this long is said again: nng may lose a message on a pipe that is going
 * away, and a hello the bridge never got would leave the scheduler waiting for ever. Costs the
 * bridge nothing while its lists are still running (it answers the latest hello once they are
 * done). */
#define HELLO_REPEAT_MS 10000
/* Repeats are routine while a large cluster is listed; past this, the wait is worth a warning. */
#define HELLO_WARN_MS 60000
/* Not connected this long: the dialer is closed and dialed again. libnng 1.5.2's dialer stops
 * trying for good when a connection is closed before the SP handshake (a bridge killed as it
 * accepted: integration/bridge-hello shows it), so its own reconnection is not enough. */
#define REDIAL_MS 5000

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Random enough for session and binding ids: a restart must not reuse the last ones. */
static uint64_t random_u64(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 48);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- commands to the bridge, gathered during one loop turn ---- */

static void free_labels(Kcycle__V1__Label **labels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(labels[i]->key);
        free(labels[i]->value);
        free(labels[i]);
    }
    free(labels);
}

static void binding_free(Kcycle__V1__Binding *m)
{
    free(m->namespace_);
    free(m->name);
    free(m->uid);
    free(m->node);
    free_labels(m->annotations, m->n_annotations);
    free(m);
}

/* The outgoing messages other than bindings own every string they hold (strdup'd in the
 * sink functions), so protobuf-c's own free releases each of them whole. */
static void free_messages(void *items, size_t count)
{
    ProtobufCMessage **messages = items;
    for (size_t i = 0; i < count; i++)
        protobuf_c_message_free_unpacked(messages[i], NULL);
}

static void clear_out(struct bridge_client *b)
{
    Kcycle__V1__ToBridge *out = &b->out;
    for (size_t i = 0; i < out->n_bindings; i++)
        binding_free(out->bindings[i]);
    free_messages(out->unschedulable, out->n_unschedulable);
    free_messages(out->scheduled, out->n_scheduled);
    free_messages(out->group_status, out->n_group_status);
    free_messages(out->object_writes, out->n_object_writes);
    free_messages(out->nominations, out->n_nominations);
    free_messages(out->evictions, out->n_evictions);
    free_messages(out->object_status, out->n_object_status);
    out->n_bindings = out->n_unschedulable = out->n_scheduled = out->n_group_status = 0;
    out->n_object_writes = out->n_nominations = out->n_evictions = out->n_object_status = 0;
    out->hello = false;
}

/* Room for one more pointer in a growing array of messages; false on allocation failure. */
static bool reserve_slot(void ***items, uint32_t *capacity, size_t count)
{
    void *grown = array_grow(*items, capacity, (uint32_t)count + 1, sizeof(void *));
    if (grown == NULL)
        return false;
    *items = grown;
    return true;
}

/* ---- bindings waiting for their answer ---- */

static void bind_forget(struct bridge_client *b, const char *uid)
{
    struct bridge_bind *bb = strmap_remove(&b->binds, uid);
    if (bb != NULL) {
        free(bb->uid);
        free(bb);
    }
}

static int bind_remember(struct bridge_client *b, const char *uid, uint64_t id)
{
    struct bridge_bind *bb = calloc(1, sizeof(*bb));
    if (bb == NULL || (bb->uid = strdup(uid)) == NULL) {
        free(bb);
        return -ENOMEM;
    }
    bb->id = id;
    bb->sent_ms = monotonic_ms();
    bind_forget(b, uid);
    if (strmap_put(&b->binds, bb->uid, bb) < 0) {
        free(bb->uid);
        free(bb);
        return -ENOMEM;
    }
    return 0;
}

static void binds_clear(struct bridge_client *b)
{
    for (uint32_t i = 0; i < b->binds.capacity; i++) {
        struct bridge_bind *bb = b->binds.entries[i].value;
        if (bb != NULL) {
            free(bb->uid);
            free(bb);
        }
    }
    strmap_free(&b->binds);
}

/* Every answer that can no longer come fails its binding; the pods retry after backoff. */
static void binds_lost(struct bridge_client *b, const char *why)
{
    binds_clear(b);
    scheduler_bind_results_lost(&b->sched, why);
}

/* Answers that never came (a message lost to a failed allocation, a bridge that hangs). */
static void binds_expire(struct bridge_client *b)
{
    int64_t now = monotonic_ms();
    if (now < b->next_expiry_check_ms)
        return;
    b->next_expiry_check_ms = now + 1000;
    for (uint32_t i = 0; i < b->binds.capacity; i++) {
        struct bridge_bind *bb = b->binds.entries[i].value;
        if (bb == NULL || now - bb->sent_ms < BIND_ANSWER_TIMEOUT_MS)
            continue;
        char uid[256];
        snprintf(uid, sizeof(uid), "%s", bb->uid);
        bind_forget(b, uid);
        b->stats.bind_timeouts++;
        scheduler_bind_result(&b->sched, uid, -ETIMEDOUT,
                              "the bridge did not answer the binding within 30 s");
    }
}

static int sink_bind(void *ctx, const struct pod *pod, const char *node,
                     const struct kv_list *annotations)
{
    struct bridge_client *b = ctx;
    if (!b->connected || !b->leader)
        return -ENOTCONN; /* the attempt fails and the pod backs off */
    if (!reserve_slot((void ***)&b->bindings, &b->binding_capacity, b->out.n_bindings))
        return -ENOMEM;
    Kcycle__V1__Binding *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    kcycle__v1__binding__init(m);
    m->id = ++b->next_bind_id;
    m->namespace_ = strdup(pod->namespace);
    m->name = strdup(pod->name);
    m->uid = strdup(pod->uid);
    m->node = strdup(node);
    m->annotations = calloc(annotations->count + 1, sizeof(*m->annotations));
    bool ok = m->namespace_ != NULL && m->name != NULL && m->uid != NULL && m->node != NULL &&
              m->annotations != NULL;
    for (uint32_t i = 0; ok && i < annotations->count; i++) {
        Kcycle__V1__Label *l = calloc(1, sizeof(*l));
        if (l == NULL) {
            ok = false;
            break;
        }
        kcycle__v1__label__init(l);
        m->annotations[m->n_annotations++] = l;
        l->key = strdup(annotations->items[i].key);
        l->value = strdup(annotations->items[i].value);
        ok = l->key != NULL && l->value != NULL;
    }
    if (!ok || bind_remember(b, pod->uid, m->id) < 0) {
        /* never sent half a binding: the attempt fails and the pod retries */
        binding_free(m);
        return -ENOMEM;
    }
    b->out.bindings = b->bindings;
    b->out.bindings[b->out.n_bindings++] = m;
    return 1;
}

/* An object update goes in the same message as the binding that follows it (the scheduler
 * hands it over right before that bind); the bridge writes it before the Binding. */
static int sink_write_object(void *ctx, const struct pod *pod, const struct object_write *write)
{
    struct bridge_client *b = ctx;
    if (!b->connected || !b->leader)
        return -ENOTCONN;
    if (!reserve_slot((void ***)&b->object_writes, &b->object_write_capacity,
                      b->out.n_object_writes))
        return -ENOMEM;
    Kcycle__V1__ObjectWrite *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -ENOMEM;
    kcycle__v1__object_write__init(m);
    m->kind = strdup(write->kind);
    m->namespace_ = strdup(write->namespace != NULL ? write->namespace : "");
    m->name = strdup(write->name);
    m->patch = strdup(write->patch);
    m->pod_uid = strdup(pod->uid);
    if (m->kind == NULL || m->namespace_ == NULL || m->name == NULL || m->patch == NULL ||
        m->pod_uid == NULL) {
        free(m->kind);
        free(m->namespace_);
        free(m->name);
        free(m->patch);
        free(m->pod_uid);
        free(m);
        return -ENOMEM;
    }
    b->out.object_writes = b->object_writes;
    b->out.object_writes[b->out.n_object_writes++] = m;
    return 0;
}

static void sink_unschedulable(void *ctx, const struct pod *pod, const char *reason,
                               const char *message)
{
    struct bridge_client *b = ctx;
    if (!b->connected || !reserve_slot((void ***)&b->unschedulable, &b->unschedulable_capacity,
                                       b->out.n_unschedulable))
        return; /* the next attempt reports it again */
    Kcycle__V1__Unschedulable *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return;
    kcycle__v1__unschedulable__init(m);
    m->namespace_ = strdup(pod->namespace);
    m->name = strdup(pod->name);
    m->uid = strdup(pod->uid);
    m->reason = strdup(reason);
    m->message = strdup(message);
    b->out.unschedulable = b->unschedulable;
    b->out.unschedulable[b->out.n_unschedulable++] = m;
}

static void sink_bound(void *ctx, const struct pod *pod, const char *node)
{
    struct bridge_client *b = ctx;
    if (!b->connected ||
        !reserve_slot((void ***)&b->scheduled, &b->scheduled_capacity, b->out.n_scheduled))
        return;
    Kcycle__V1__Scheduled *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return;
    kcycle__v1__scheduled__init(m);
    m->namespace_ = strdup(pod->namespace);
    m->name = strdup(pod->name);
    m->uid = strdup(pod->uid);
    m->node = strdup(node);
    b->out.scheduled = b->scheduled;
    b->out.scheduled[b->out.n_scheduled++] = m;
}

static void sink_group_status(void *ctx, const char *namespace, const char *name, const char *phase,
                              uint32_t scheduled, uint32_t running, const char *message)
{
    struct bridge_client *b = ctx;
    if (!b->connected ||
        !reserve_slot((void ***)&b->group_status, &b->group_status_capacity, b->out.n_group_status))
        return; /* the next change reports the whole status again */
    Kcycle__V1__GroupStatus *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return;
    kcycle__v1__group_status__init(m);
    m->namespace_ = strdup(namespace != NULL ? namespace : "");
    m->name = strdup(name);
    m->phase = strdup(phase);
    m->message = strdup(message != NULL ? message : "");
    m->scheduled = scheduled;
    m->running = running;
    b->out.group_status = b->group_status;
    b->out.group_status[b->out.n_group_status++] = m;
}

/* ---- preemption: nominations and evictions go to the bridge with the other decisions ---- */

static void sink_nominate(void *ctx, const struct pod *pod, const char *node)
{
    struct bridge_client *b = ctx;
    /* only the leader writes to the cluster (a follower's status patch would race its) */
    if (!b->connected || !b->leader ||
        !reserve_slot((void ***)&b->nominations, &b->nomination_capacity, b->out.n_nominations))
        return; /* the pod's next attempt nominates it again */
    Kcycle__V1__Nomination *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return;
    kcycle__v1__nomination__init(m);
    m->namespace_ = strdup(pod->namespace);
    m->name = strdup(pod->name);
    m->uid = strdup(pod->uid);
    m->node = strdup(node != NULL ? node : "");
    if (m->namespace_ == NULL || m->name == NULL || m->uid == NULL || m->node == NULL) {
        log_warn("bridge: out of memory: the nomination of pod %s/%s is not written",
                 pod->namespace, pod->name);
        kcycle__v1__nomination__free_unpacked(m, NULL); /* frees the copies made */
        return;
    }
    b->out.nominations = b->nominations;
    b->out.nominations[b->out.n_nominations++] = m;
}

static void sink_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                       const char *node)
{
    struct bridge_client *b = ctx;
    if (!b->connected || !b->leader ||
        !reserve_slot((void ***)&b->evictions, &b->eviction_capacity, b->out.n_evictions)) {
        /* the preemptor finds its victims in place and preempts again */
        log_warn("bridge: not connected or not leading: pod %s/%s is not evicted",
                 victim->namespace, victim->name);
        return;
    }
    Kcycle__V1__Eviction *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return;
    kcycle__v1__eviction__init(m);
    m->namespace_ = strdup(victim->namespace);
    m->name = strdup(victim->name);
    m->uid = strdup(victim->uid);
    m->node = strdup(node);
    m->preemptor_namespace = strdup(preemptor->namespace);
    m->preemptor_name = strdup(preemptor->name);
    m->preemptor_uid = strdup(preemptor->uid);
    if (m->namespace_ == NULL || m->name == NULL || m->uid == NULL || m->node == NULL ||
        m->preemptor_namespace == NULL || m->preemptor_name == NULL || m->preemptor_uid == NULL) {
        log_warn("bridge: out of memory: pod %s/%s is not evicted", victim->namespace,
                 victim->name);
        kcycle__v1__eviction__free_unpacked(m, NULL); /* frees the copies made */
        return;
    }
    b->out.evictions = b->evictions;
    b->out.evictions[b->out.n_evictions++] = m;
    b->stats.evictions++;
}

/* A failed eviction (403, 422, 5xx, a timeout) leaves the victim in the cluster: as kube's
 * prepareCandidate failing, the preemptor gives up its nomination and backs off, so its next
 * attempt decides again and its room is not held for an eviction that never came. 409 (the
 * uid precondition: the victim is already another pod) counts as gone. */
static void apply_eviction_result(struct bridge_client *b, const Kcycle__V1__EvictionResult *r)
{
    if (r->code == 200 || r->code == 202 || r->code == 404 || r->code == 409)
        return; /* deleted, or gone already */
    b->stats.eviction_failures++;
    log_warn("bridge: evicting pod %s failed (%d): %s", r->uid, r->code, r->message);
    if (r->preemptor_uid != NULL && r->preemptor_uid[0] != '\0')
        preempt_eviction_failed(&b->sched, r->preemptor_uid);
}

/* A packed ToBridge that could not be sent: its bindings will never be answered. */
static void fail_unsent_bindings(struct bridge_client *b, const char *why)
{
    for (size_t i = 0; i < b->out.n_bindings; i++) {
        bind_forget(b, b->out.bindings[i]->uid);
        scheduler_bind_result(&b->sched, b->out.bindings[i]->uid, -EIO, why);
    }
}

/* ---- plugins' object status (kc_object_status) ---- */

#define STATUS_INTERVAL_MS 1000

static bool same_object(const Kcycle__V1__ObjectStatus *m, const char *kind, const char *ns,
                        const char *name)
{
    return strcmp(m->kind, kind) == 0 && strcmp(m->namespace_, ns) == 0 &&
           strcmp(m->name, name) == 0;
}

/* Keep the latest status of the object until the next send. */
static void sink_object_status(void *ctx, const char *kind, const char *namespace_name,
                               const char *name, const char *status_json)
{
    struct bridge_client *b = ctx;
    const char *ns = namespace_name != NULL ? namespace_name : "";
    char *json = strdup(status_json);
    if (json == NULL)
        return;
    for (uint32_t i = 0; i < b->status_pending_count; i++)
        if (same_object(b->status_pending[i], kind, ns, name)) {
            free(b->status_pending[i]->status);
            b->status_pending[i]->status = json;
            return;
        }
    Kcycle__V1__ObjectStatus *m = calloc(1, sizeof(*m));
    if (m == NULL || !reserve_slot((void ***)&b->status_pending, &b->status_pending_capacity,
                                   b->status_pending_count)) {
        free(m);
        free(json);
        return; /* the object's next status reports it whole again */
    }
    kcycle__v1__object_status__init(m);
    m->kind = strdup(kind);
    m->namespace_ = strdup(ns);
    m->name = strdup(name);
    m->status = json;
    if (m->kind == NULL || m->namespace_ == NULL || m->name == NULL) {
        protobuf_c_message_free_unpacked(&m->base, NULL);
        return;
    }
    b->status_pending[b->status_pending_count++] = m;
}

/* The pending statuses go with this turn's message when a second has passed since the last
 * ones; only the leader writes. */
static void status_take(struct bridge_client *b)
{
    int64_t now = monotonic_ms();
    if (b->status_pending_count == 0 || !b->connected || !b->leader ||
        now - b->status_sent_ms < STATUS_INTERVAL_MS ||
        !reserve_slot((void ***)&b->object_status, &b->object_status_capacity,
                      b->status_pending_count))
        return;
    memcpy(b->object_status, b->status_pending,
           b->status_pending_count * sizeof(*b->object_status));
    b->out.object_status = b->object_status;
    b->out.n_object_status = b->status_pending_count;
    b->status_pending_count = 0;
    b->status_sent_ms = now;
}

/* The send of this turn's message failed: its statuses go back to pending (unless a newer
 * status of the same object is pending already), to go with a later message. */
static void status_unsent(struct bridge_client *b)
{
    Kcycle__V1__ToBridge *out = &b->out;
    for (size_t i = 0; i < out->n_object_status; i++) {
        Kcycle__V1__ObjectStatus *m = out->object_status[i];
        bool newer = false;
        for (uint32_t k = 0; k < b->status_pending_count && !newer; k++)
            newer = same_object(b->status_pending[k], m->kind, m->namespace_, m->name);
        if (newer || !reserve_slot((void ***)&b->status_pending, &b->status_pending_capacity,
                                   b->status_pending_count)) {
            protobuf_c_message_free_unpacked(&m->base, NULL);
            continue;
        }
        b->status_pending[b->status_pending_count++] = m;
    }
    out->n_object_status = 0; /* moved: clear_out frees none of them */
    b->status_sent_ms = 0;    /* due again at once */
}

/* How long the loop may sleep before pending statuses are due. */
static int64_t status_wait_ms(const struct bridge_client *b, int64_t wait)
{
    if (b->status_pending_count == 0 || !b->leader)
        return wait;
    int64_t due = b->status_sent_ms + STATUS_INTERVAL_MS - monotonic_ms();
    return due < 1 ? 1 : due < wait ? due : wait;
}

static void status_free(struct bridge_client *b)
{
    free_messages(b->status_pending, b->status_pending_count);
    free(b->status_pending);
    free(b->object_status);
}

/* bridge_client_feed in place of the send: the packed message must decode, and is appended to
 * what the turn packed before (packed protobuf messages concatenated read as one merged
 * message). 0, -ENOMEM or -EPROTO. */
static int feed_keep(struct bridge_client *b, size_t len)
{
    uint8_t *grown = realloc(b->fed, b->fed_len + len + 1);
    if (grown == NULL)
        return -ENOMEM;
    b->fed = grown;
    uint8_t *packed = grown + b->fed_len;
    kcycle__v1__to_bridge__pack(&b->out, packed);
    Kcycle__V1__ToBridge *back = kcycle__v1__to_bridge__unpack(NULL, len, packed);
    if (back == NULL)
        return -EPROTO;
    kcycle__v1__to_bridge__free_unpacked(back, NULL);
    b->fed_len += len;
    return 0;
}

/* The outgoing batch's message, and nothing else allocated here: libnng 1.5.2 can lose one that
 * nng_sendmsg took when the bridge goes away at that moment, and the leak checkers'
 * suppressions name this function alone (tests/lsan.supp, tests/valgrind/suppressions.supp;
 * docs/security.md). Out of line so that it is a frame of its own, and the call is not its
 * last act: an optimised tail call (a jump) would leave no frame of it on the stack, and the
 * suppression would not match (seen in the sanitizer build). */
__attribute__((noinline)) static int outgoing_message_new(nng_msg **msg, size_t len)
{
    int rc = nng_msg_alloc(msg, len);
    __asm__ volatile("" ::: "memory"); /* no tail call */
    return rc;
}

static void flush(struct bridge_client *b)
{
    Kcycle__V1__ToBridge *out = &b->out;
    status_take(b);
    if (!out->hello && out->n_bindings == 0 && out->n_unschedulable == 0 && out->n_scheduled == 0 &&
        out->n_group_status == 0 && out->n_nominations == 0 && out->n_evictions == 0 &&
        out->n_object_status == 0)
        return;
    size_t len = kcycle__v1__to_bridge__get_packed_size(out);
    int rc;
    const char *why;
    if (b->feeding) {
        rc = feed_keep(b, len);
        why = kc_strerror(rc);
        if (rc != 0 && b->fed_rc == 0)
            b->fed_rc = rc;
    } else {
        nng_msg *msg;
        rc = outgoing_message_new(&msg, len);
        if (rc == 0) {
            kcycle__v1__to_bridge__pack(out, nng_msg_body(msg));
            rc = nng_sendmsg(b->sock, msg, 0);
            if (rc != 0)
                nng_msg_free(msg);
        }
        why = nng_strerror(rc);
    }
    if (rc != 0) {
        log_warn("bridge: could not send %zu binding(s) and %zu status update(s): %s",
                 out->n_bindings, out->n_unschedulable, why);
        fail_unsent_bindings(b, "the bridge did not take the binding");
        status_unsent(b);
    }
    bool hello_lost = rc != 0 && out->hello;
    if (rc == 0 && out->hello)
        b->hello_sent_ms = monotonic_ms();
    clear_out(b);
    out->hello = hello_lost; /* asked again on the next turn */
}

/* ---- the cluster, from the bridge ---- */

static void seen_add(struct bridge_client *b, char prefix, const char *a, const char *c)
{
    if (!b->syncing || b->sync_onto_empty)
        return;
    char *key;
    if (asprintf(&key, "%c/%s/%s", prefix, a, c != NULL ? c : "") < 0)
        return;
    if (strmap_get(&b->seen, key) != NULL) {
        free(key);
        return;
    }
    void *grown =
        array_grow(b->seen_keys, &b->seen_capacity, b->seen_count + 1, sizeof(*b->seen_keys));
    if (grown == NULL || strmap_put(&b->seen, key, key) < 0) {
        free(key);
        if (grown != NULL)
            b->seen_keys = grown;
        return;
    }
    b->seen_keys = grown;
    b->seen_keys[b->seen_count++] = key;
}

static bool was_seen(struct bridge_client *b, char prefix, const char *a, const char *c)
{
    char key[1024];
    snprintf(key, sizeof(key), "%c/%s/%s", prefix, a, c != NULL ? c : "");
    return strmap_get(&b->seen, key) != NULL;
}

static void seen_clear(struct bridge_client *b)
{
    for (uint32_t i = 0; i < b->seen_count; i++)
        free(b->seen_keys[i]);
    free(b->seen_keys);
    b->seen_keys = NULL;
    b->seen_count = b->seen_capacity = 0;
    strmap_free(&b->seen);
}

static void sync_begin(struct bridge_client *b)
{
    /* whatever was sent before is answered by the new state, not by results */
    binds_lost(b, "the bridge restarted before answering");
    seen_clear(b);
    b->syncing = true;
    b->synced = false;
    /* the first sync after start (the one an operator waits on) has nothing to diff against */
    struct scheduler *s = &b->sched;
    b->sync_onto_empty = s->cache.node_count == 0 && s->assigned.count == 0 && s->pods.count == 0 &&
                         s->objects.count == 0;
}

/* Names collected before acting on them: deleting reorders the node array and the maps. */
struct name_list {
    char **items;
    uint32_t count, capacity;
};

static void name_list_add(struct name_list *l, const char *name)
{
    void *grown = array_grow(l->items, &l->capacity, l->count + 1, sizeof(*l->items));
    if (grown == NULL)
        return; /* the next sync finds it again */
    l->items = grown;
    if ((l->items[l->count] = strdup(name)) != NULL)
        l->count++;
}

static void name_list_clear(struct name_list *l)
{
    for (uint32_t i = 0; i < l->count; i++)
        free(l->items[i]);
    l->count = 0;
}

/* Everything not restated during the sync is gone from the cluster: delete it. */
static void delete_unrestated(struct bridge_client *b, uint32_t *nodes_gone, uint32_t *pods_gone)
{
    struct scheduler *s = &b->sched;
    struct name_list gone = {0};
    for (uint32_t i = 0; i < s->cache.node_count; i++)
        if (!was_seen(b, 'n', s->cache.nodes[i].node->name, NULL))
            name_list_add(&gone, s->cache.nodes[i].node->name);
    for (uint32_t i = 0; i < gone.count; i++)
        scheduler_node_delete(s, gone.items[i]);
    *nodes_gone = gone.count;
    name_list_clear(&gone);
    struct strmap *pod_maps[] = {&s->assigned, &s->pods};
    for (int m = 0; m < 2; m++)
        for (uint32_t i = 0; i < pod_maps[m]->capacity; i++) {
            const struct strmap_entry *e = &pod_maps[m]->entries[i];
            if (e->value != NULL && !was_seen(b, 'p', e->key, NULL))
                name_list_add(&gone, e->key);
        }
    for (uint32_t i = 0; i < gone.count; i++)
        scheduler_pod_delete(s, gone.items[i]);
    *pods_gone = gone.count;
    name_list_clear(&gone);
    for (uint32_t i = 0; i < s->objects.capacity; i++) {
        const struct kept_object *k = s->objects.entries[i].value;
        if (k != NULL && !was_seen(b, 'o', k->key, NULL))
            name_list_add(&gone, k->key);
    }
    for (uint32_t i = 0; i < gone.count; i++) {
        struct kept_object *k = strmap_get(&s->objects, gone.items[i]);
        if (k == NULL)
            continue;
        /* the event removes the kept object: pass copies */
        struct sim_object o = {strdup(k->object.kind),
                               k->object.namespace ? strdup(k->object.namespace) : NULL,
                               strdup(k->object.name), NULL};
        if (o.kind != NULL && o.name != NULL)
            scheduler_object_event(s, KC_EVENT_OBJECT_DELETE, o.kind, o.namespace, o.name, NULL);
        custom_object_clear(&o);
    }
    name_list_clear(&gone);
    free(gone.items);
}

static void sync_end(struct bridge_client *b)
{
    struct scheduler *s = &b->sched;
    uint32_t nodes_gone = 0, pods_gone = 0;
    if (!b->sync_onto_empty)
        delete_unrestated(b, &nodes_gone, &pods_gone);
    seen_clear(b);
    b->syncing = false;
    b->synced = true;
    b->stats.syncs++;
    log_info("bridge: in sync (session %llx): %u nodes, %u assigned and %u pending pods; %u "
             "nodes and %u pods gone since the last sync",
             (unsigned long long)b->session, s->cache.node_count, s->assigned.count, s->pods.count,
             nodes_gone, pods_gone);
}

static void apply_change(struct bridge_client *b, const Kcycle__V1__ClusterChange *c)
{
    struct scheduler *s = &b->sched;
    struct kc_error err = {{0}};
    int rc = 0;
    b->stats.changes++;
    switch (c->change_case) {
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_PUT: {
        struct node *node;
        if ((rc = node_from_proto(c->node_put, &node, &err)) < 0)
            break;
        seen_add(b, 'n', node->name, NULL);
        rc = scheduler_node_add(s, node);
        break;
    }
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_NODE_DELETE:
        scheduler_node_delete(s, c->node_delete);
        break;
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_PUT: {
        struct pod *pod;
        if ((rc = pod_from_proto(c->pod_put, &pod, &err)) < 0)
            break;
        seen_add(b, 'p', pod->uid, NULL);
        rc = scheduler_pod_add(s, pod);
        break;
    }
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_POD_DELETE:
        scheduler_pod_delete(s, c->pod_delete);
        break;
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_PUT:
    case KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_DELETE: {
        bool put = c->change_case == KCYCLE__V1__CLUSTER_CHANGE__CHANGE_OBJECT_PUT;
        struct sim_object o;
        if ((rc = custom_object_from_proto(put ? c->object_put : c->object_delete, &o, &err)) < 0)
            break;
        char key[1024];
        snprintf(key, sizeof(key), "%s/%s/%s", o.kind, o.namespace != NULL ? o.namespace : "",
                 o.name);
        if (put)
            seen_add(b, 'o', key, NULL);
        rc = put ? scheduler_object_put(s, o.kind, o.namespace, o.name, o.json)
                 : scheduler_object_event(s, KC_EVENT_OBJECT_DELETE, o.kind, o.namespace, o.name,
                                          o.json);
        custom_object_clear(&o);
        break;
    }
    default:
        rc = kc_error_set(&err, -EBADMSG, "a cluster change of unknown kind %d", c->change_case);
    }
    if (rc < 0 && rc != -ENOENT) {
        b->stats.decode_errors++;
        log_warn("bridge: a cluster change was not applied: %s",
                 err.message[0] ? err.message : kc_strerror(rc));
    }
}

static void apply_bind_result(struct bridge_client *b, const Kcycle__V1__BindResult *r)
{
    b->stats.bind_results++;
    const struct bridge_bind *bb = strmap_get(&b->binds, r->uid);
    if (bb == NULL || bb->id != r->id) {
        b->stats.stale_results++; /* an answer to an older binding of the pod */
        return;
    }
    bind_forget(b, r->uid);
    if (r->code == 201 || r->code == 200) {
        scheduler_bind_result(&b->sched, r->uid, 0, NULL);
        return;
    }
    b->stats.bind_failures++;
    char text[640];
    if (r->code == 0)
        snprintf(text, sizeof(text), "%s", r->message);
    else
        snprintf(text, sizeof(text), "the API server answered %d: %s", r->code, r->message);
    int rc = r->code == 404 ? -ENOENT : r->code == 409 ? -EEXIST : -EIO;
    scheduler_bind_result(&b->sched, r->uid, rc, text);
}

static Kcycle__V1__ToScheduler *unpack_message(struct bridge_client *b, const uint8_t *data,
                                                size_t len)
{
    b->stats.messages++;
    Kcycle__V1__ToScheduler *m = kcycle__v1__to_scheduler__unpack(NULL, len, data);
    if (m == NULL) {
        b->stats.decode_errors++;
        log_warn("bridge: a message from the bridge does not decode (version mismatch?)");
    }
    return m;
}

/* Apply one message from the bridge and free it. */
static void apply_message(struct bridge_client *b, Kcycle__V1__ToScheduler *m)
{
    if (m == NULL)
        return;
    if (m->session != b->session) {
        /* sent before our last hello (to a connection that has since been replaced) */
        b->stats.stale_messages++;
        kcycle__v1__to_scheduler__free_unpacked(m, NULL);
        return;
    }
    b->hello_sent_ms = 0; /* answered */
    if (m->sync_begin)
        sync_begin(b);
    for (size_t i = 0; i < m->n_changes; i++)
        apply_change(b, m->changes[i]);
    for (size_t i = 0; i < m->n_bind_results; i++)
        apply_bind_result(b, m->bind_results[i]);
    for (size_t i = 0; i < m->n_eviction_results; i++)
        apply_eviction_result(b, m->eviction_results[i]);
    if (m->sync_end && b->syncing)
        sync_end(b);
    if (m->leadership != NULL && m->leadership->leader != b->leader) {
        b->leader = m->leadership->leader;
        metric_set(b->leader_metric, b->leader);
        log_warn("bridge: %s (lease holder: %s)",
                 b->leader ? "this replica leads: scheduling" : "not the leader: not scheduling",
                 m->leadership->identity[0] ? m->leadership->identity : "unknown");
    }
    kcycle__v1__to_scheduler__free_unpacked(m, NULL);
}

static void handle_message(struct bridge_client *b, nng_msg *msg)
{
    Kcycle__V1__ToScheduler *m = unpack_message(b, nng_msg_body(msg), nng_msg_len(msg));
    nng_msg_free(msg); /* before applying: a big sync is not held twice */
    apply_message(b, m);
}

/* The scheduling part of a loop turn, the same for bridge_client_run and bridge_client_feed:
 * only while connected, in sync and leader, cycles until the time budget or max_cycles, with a
 * tick and a send every 32; then a tick and a send. Returns whether it could schedule. */
static bool schedule_turn(struct bridge_client *b, int64_t budget_us, uint32_t max_cycles)
{
    struct scheduler *s = &b->sched;
    bool may_schedule = b->connected && b->synced && b->leader;
    if (may_schedule) {
        int64_t start = monotonic_us();
        for (uint32_t n = 1; n <= max_cycles && monotonic_us() - start < budget_us; n++) {
            if (scheduler_schedule_one(s) <= 0)
                break;
            if (n % 32 == 0) {
                scheduler_tick(s);
                flush(b);
            }
        }
    }
    scheduler_tick(s);
    flush(b);
    return may_schedule;
}

/* ---- fed by hand: the fuzz target of bridge messages (tests/fuzz/fuzz_sched.c) ---- */

int bridge_client_feed(struct bridge_client *b, const uint8_t *data, size_t len,
                       uint32_t max_cycles, uint8_t **out, size_t *out_len)
{
    if (out != NULL)
        *out = NULL;
    if (out_len != NULL)
        *out_len = 0;
    b->connected = true; /* fed by hand stands for a connected bridge */
    b->feeding = true;
    b->fed = NULL;
    b->fed_len = 0;
    b->fed_rc = 0;
    binds_expire(b);
    reloader_poll(&b->reload, &b->sched);
    apply_message(b, unpack_message(b, data, len));
    schedule_turn(b, INT64_MAX, max_cycles);
    b->feeding = false;
    int rc = b->fed_rc;
    if (out_len != NULL)
        *out_len = b->fed_len;
    if (rc == 0 && out != NULL && b->fed != NULL) {
        *out = b->fed;
        b->fed = NULL;
    }
    free(b->fed);
    b->fed = NULL;
    return rc;
}

void bridge_client_feed_connect(struct bridge_client *b, uint64_t session, uint64_t next_bind_id)
{
    b->connected = true;
    b->leader = false;
    metric_set(b->leader_metric, 0);
    b->synced = false;
    b->syncing = false;
    seen_clear(b);
    clear_out(b);
    binds_lost(b, "the connection to the bridge was lost");
    b->session = session;
    b->next_bind_id = next_bind_id;
}

/* ---- connection ---- */

static void pipe_notify(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
    (void)pipe;
    struct bridge_client *b = arg;
    atomic_fetch_add(ev == NNG_PIPE_EV_ADD_POST ? &b->pipe_adds : &b->pipe_removes, 1);
}

/* Ask the bridge for the whole cluster under a new session, on the next flush. */
static void say_hello(struct bridge_client *b)
{
    b->out.hello = true;
    b->session = random_u64() | 1;
    b->out.session = b->session;
    b->hello_sent_ms = 0;
}

/* A pipe came or went since the last look. A drop and a reconnect between two looks count as
 * a loss: nothing sent on the old pipe can be trusted to have arrived. */
static void check_pipe(struct bridge_client *b)
{
    unsigned adds = atomic_load(&b->pipe_adds), removes = atomic_load(&b->pipe_removes);
    if (adds + removes == b->pipe_events_seen)
        return;
    bool up = adds > removes; /* pair: one peer at a time */
    b->pipe_events_seen = adds + removes;
    if (b->connected) {
        /* lost (or lost and back): nothing sent before can be trusted to have arrived */
        log_warn("bridge: the connection to the bridge was lost; not scheduling until it is "
                 "back");
        b->connected = false;
        b->down_since_ms = monotonic_ms();
        b->leader = false;
        metric_set(b->leader_metric, 0);
        b->synced = false;
        b->syncing = false;
        seen_clear(b);
        clear_out(b);
        binds_lost(b, "the connection to the bridge was lost");
    }
    if (up) {
        b->connected = true;
        b->down_since_ms = 0;
        b->hello_warned = false;
        b->hello_first_ms = monotonic_ms();
        say_hello(b);
        log_info("bridge: connected; asking for the cluster");
    }
}

/* Not connected for REDIAL_MS since the loss (or the last dial): close the dialer and dial
 * again. Logged once a minute at most. */
static void check_dialer(struct bridge_client *b)
{
    int64_t now = monotonic_ms();
    if (b->connected || b->down_since_ms == 0 || now - b->down_since_ms < REDIAL_MS ||
        now - b->dialed_ms < REDIAL_MS)
        return;
    if (now - b->redial_logged_ms >= 60000) {
        log_info("bridge: not connected to the bridge for %lld s; dialing %s again",
                 (long long)((now - b->down_since_ms) / 1000), b->url);
        b->redial_logged_ms = now;
    }
    nng_dialer_close(b->dialer);
    b->dialed_ms = now;
    int rc = nng_dial(b->sock, b->url, &b->dialer, NNG_FLAG_NONBLOCK);
    if (rc != 0)
        log_warn("bridge: cannot dial the bridge at %s: %s", b->url, nng_strerror(rc));
}

/* A hello with no answer after HELLO_REPEAT_MS is said again, under a new session (whatever
 * still comes for the old one is stale). */
static void check_hello(struct bridge_client *b)
{
    if (!b->connected || b->hello_sent_ms == 0 || b->out.hello ||
        monotonic_ms() - b->hello_sent_ms < HELLO_REPEAT_MS)
        return;
    int64_t waited = monotonic_ms() - b->hello_first_ms;
    bool warn = !b->hello_warned && waited >= HELLO_WARN_MS;
    log_msg(warn ? KC_LOG_WARN : KC_LOG_INFO,
            "bridge: no answer from the bridge %d s after asking for the cluster (session %llx, "
            "%lld s since the first ask); asking again",
            HELLO_REPEAT_MS / 1000, (unsigned long long)b->session, (long long)(waited / 1000));
    b->hello_warned |= warn;
    say_hello(b);
}

int bridge_client_open(struct bridge_client *b, const struct bridge_client_options *opt,
                       struct kc_error *err)
{
    memset(b, 0, sizeof(*b));
    kcycle__v1__to_bridge__init(&b->out);
    int rc = opt->config_path != NULL ? config_load_file(opt->config_path, &b->cfg, err)
                                      : config_default(&b->cfg);
    if (rc < 0)
        return rc;
    b->cfg.binder_elsewhere = false;
    struct scheduler_sink sink = {.ctx = b,
                                  .bind = sink_bind,
                                  .unschedulable = sink_unschedulable,
                                  .bound = sink_bound,
                                  .group_status = sink_group_status,
                                  .write_object = sink_write_object,
                                  .nominate = sink_nominate,
                                  .evict = sink_evict,
                                  .object_status = sink_object_status};
    b->cfg.private_copies = opt->watch_plugins;
    b->next_bind_id = random_u64() & 0xffffffff00000000ull;
    /* the scheduler's own clock (monotonic): timers do not jump with the wall clock */
    if ((rc = scheduler_open(&b->sched, &b->cfg, opt->plugin_dir, &sink, NULL, err)) < 0)
        return rc;
    b->sched_open = true;
    if (opt->config_path != NULL && (b->config_path = strdup(opt->config_path)) == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    if ((rc = reloader_open(&b->reload, &b->sched, b->config_path, opt->watch_plugins,
                            opt->watch_config, err)) < 0)
        return rc;
    const char *url = opt->url != NULL ? opt->url : b->cfg.bridge_address;
    if ((rc = socket_dir_check(url, err)) < 0)
        return rc;
    if ((rc = nng_pair1_open(&b->sock)) != 0)
        return kc_error_set(err, -ENOMEM, "cannot open the bridge socket: %s", nng_strerror(rc));
    b->sock_open = true;
    nng_pipe_notify(b->sock, NNG_PIPE_EV_ADD_POST, pipe_notify, b);
    nng_pipe_notify(b->sock, NNG_PIPE_EV_REM_POST, pipe_notify, b);
    nng_socket_set_ms(b->sock, NNG_OPT_RECONNMINT, 100);
    nng_socket_set_ms(b->sock, NNG_OPT_RECONNMAXT, 2000);
    nng_socket_set_ms(b->sock, NNG_OPT_SENDTIMEO, SEND_TIMEOUT_MS);
    /* a bridge of another uid (one that bound the path first) never reaches the scheduler */
    if ((rc = ipc_peer_guard(b->sock, &b->peer, "scheduler")) != 0)
        return kc_error_set(err, -ENOMEM, "cannot set up the bridge socket: %s", nng_strerror(rc));
    /* non-blocking dial: the bridge may start later; nng keeps trying */
    if ((b->url = strdup(url)) == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    b->down_since_ms = b->dialed_ms = monotonic_ms();
    if ((rc = nng_dial(b->sock, url, &b->dialer, NNG_FLAG_NONBLOCK)) != 0)
        return kc_error_set(err, -EINVAL, "cannot dial the bridge at %s: %s", url,
                            nng_strerror(rc));
    log_info("bridge: dialing %s", url);
    return 0;
}

int bridge_client_metrics(struct bridge_client *b, struct metrics *registry)
{
    b->leader_metric = metrics_gauge(registry, "kcycle_leader",
                                     "1 while this scheduler's bridge holds the lease and the "
                                     "scheduler schedules, else 0.",
                                     "");
    metric_set(b->leader_metric, b->leader);
    return sched_metrics_open(&b->sched, registry);
}

bool bridge_client_alive(const struct bridge_client *b, int64_t now_ms)
{
    return now_ms - atomic_load(&((struct bridge_client *)b)->last_loop_ms) < 30000;
}

bool bridge_client_ready(const struct bridge_client *b)
{
    return atomic_load(&((struct bridge_client *)b)->ready);
}

int bridge_client_run(struct bridge_client *b, const atomic_bool *stop)
{
    struct scheduler *s = &b->sched;
    while (!atomic_load(stop)) {
        atomic_store(&b->last_loop_ms, monotonic_ms());
        check_pipe(b);
        check_dialer(b);
        check_hello(b);
        binds_expire(b);
        reloader_poll(&b->reload, &b->sched);
        nng_msg *msg;
        for (int i = 0; i < 256 && nng_recvmsg(b->sock, &msg, NNG_FLAG_NONBLOCK) == 0; i++)
            handle_message(b, msg);
        atomic_store(&b->ready, b->connected && b->synced);
        bool may_schedule = schedule_turn(b, LOOP_BUDGET_US, UINT32_MAX);
        if (may_schedule && scheduler_busy(s))
            continue;
        int64_t wait = status_wait_ms(b, IDLE_WAIT_MS);
        if (may_schedule) {
            int64_t due = scheduler_next_due(s) - scheduler_now(s);
            if (due < wait)
                wait = due < 1 ? 1 : due;
        }
        nng_socket_set_ms(b->sock, NNG_OPT_RECVTIMEO, (nng_duration)wait);
        if (nng_recvmsg(b->sock, &msg, 0) == 0)
            handle_message(b, msg);
    }
    return 0;
}

void bridge_client_close(struct bridge_client *b)
{
    if (b->sock_open)
        nng_close(b->sock);
    clear_out(b);
    binds_clear(b);
    free(b->bindings);
    free(b->unschedulable);
    free(b->scheduled);
    free(b->group_status);
    free(b->object_writes);
    free(b->nominations);
    free(b->evictions);
    status_free(b);
    seen_clear(b);
    if (b->sched_open)
        scheduler_close(&b->sched);
    reloader_close(&b->reload); /* after the scheduler: it may use the reloaded config */
    free(b->config_path);
    free(b->url);
    config_free(&b->cfg);
    memset(b, 0, sizeof(*b));
}
