/* kcycle-plugin-host: one scheduler's plugins in a process of their own. Every request brings
 * the cluster deltas since the previous one; they are applied to a replica (a struct scheduler
 * whose queue stays empty) before the plugins run, so the plugins see what the scheduler saw. */
#include "host.h"

#include "array.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "cycle_internal.h"
#include "evaluate.h"
#include "hostapi.h"
#include "log.h"
#include "model.h"
#include "monotonic.h"
#include "plugin.pb-c.h"
#include "preempt.h"
#include "proto_convert.h"
#include "queue_calls.h"
#include "scheduler.h"

/* How often the serve loop looks at the stop flag and the parent while no request comes. */
#define RECEIVE_POLL_MS 100

/* A pod the scheduler evaluated here, kept for the phases that follow if it is chosen. */
struct evaluated {
    struct pod *pod;
    struct kc_cycle *cycle;
    bool chosen;   /* a phase was called for it: the scheduler picked it */
    bool borrowed; /* pod belongs to the assumed map (a host that evaluates nothing) */
    uint64_t attempt; /* the scheduler's attempt (Evaluate.attempt; 0: not said) */
    struct pod_group *harness_group; /* a harness host's group for its cycle (owned) */
};

struct plugin_host {
    char *plugin_dir;
    pid_t parent;
    struct channel channel; /* to the scheduler; fd -1: only plugin_host_handle is usable */
    atomic_bool stop;
    bool open; /* a Hello was served: the replica and its plugins exist */
    struct config cfg;
    struct scheduler sched;
    uint32_t plugin_count;                       /* plugins of the Hello */
    uint32_t hello_index[FRAMEWORK_MAX_PLUGINS]; /* framework index -> Hello index */
    int32_t loaded[FRAMEWORK_MAX_PLUGINS];       /* Hello index -> framework index, or -1 */
    struct strmap assumed;   /* uid -> struct pod: assumed, not yet confirmed or forgotten */
    struct strmap evaluated; /* uid -> struct evaluated */
    uint64_t objects_seen;
    uint32_t spin_us; /* the scheduler's last Request.spin_us */
    uint64_t pod_puts, pods_bound; /* assigned pods applied whole, and as PodBound */
    char diverged[1280]; /* why the replica can no longer be trusted; "" while it can */
    bool bind_requested; /* a Bind plugin called kc_bind during the current phase call */
    int bind_result;     /* what kc_bind answers in a harness host's phase call (0: binds) */
    /* Hello.capture_logs (the plugin test harness): the lines plugins log while a request is
     * served, for its Reply.logs; Filter and Score may log from several threads */
    bool capture_logs;
    pthread_mutex_t log_lock;
    struct scratch *log_scratch; /* the reply's memory while a request is served, else NULL */
    Kcycle__V1__LogLine **log_lines;
    uint32_t log_count, log_capacity;
    /* and the object statuses plugins report (kc_object_status), for Reply.object_statuses */
    Kcycle__V1__HarnessObjectStatus **statuses;
    uint32_t status_count, status_capacity;
    /* Evaluate.nominated while an evaluation runs: pending records of the pods nominated in
     * the replica's nominations, owned here */
    struct sched_pod **nominated;
    uint32_t nominated_count, nominated_capacity;
    /* Added in 1.2: a harness's clock (HarnessControl.set_clock), or a simulating scheduler's
     * (Request.scheduler_now_ms): once set, the replica's scheduler clock reads clock_ms
     * instead of the monotonic clock */
    bool clock_set;
    int64_t clock_ms;
    /* EvaluateGroup.keep_assumed: the members the last group answer left assumed, in order
     * (their evaluations own the pods), on kept_nodes; the first kept_confirmed confirmed by
     * the scheduler's Assume deltas; kept_generations[k]: the replica's generation after
     * member k's assumption, kept_generation_before: before the first */
    struct evaluated **kept;
    uint32_t *kept_nodes;
    uint64_t *kept_generations;
    size_t kept_count, kept_confirmed;
    uint64_t kept_generation_before;
    bool kept_reserved; /* Evaluate.reserve: Reserve ran for the one kept assumption */
    /* the scratch chunk of the last request, for the next one (struct scratch's spare) */
    struct scratch_chunk *spare_chunk;
};

/* ---- reply memory: everything a reply points to, freed once it is packed ---- */

/* A bump arena: a request's decoded message and everything its reply points to come from a
 * few large chunks, freed together once the reply is packed, instead of one malloc and free
 * per string, array and submessage (hundreds a request, thousands for a group's). */
#define SCRATCH_CHUNK_BYTES (64 * 1024)
#define SCRATCH_ALIGN 16

struct scratch_chunk {
    struct scratch_chunk *next;
    size_t size;
    _Alignas(SCRATCH_ALIGN) unsigned char data[];
};

/* spare: where one chunk of SCRATCH_CHUNK_BYTES waits between requests (the host's), or NULL.
 * Allocating and freeing it per request cost more than the request's own allocations: a free
 * of 64 KiB or more makes glibc consolidate its fast bins (malloc_consolidate) every time. */
struct scratch {
    struct scratch_chunk *chunks;
    unsigned char *at;
    size_t left;
    bool failed;
    struct scratch_chunk **spare;
};

/* size bytes, aligned, not zeroed; NULL (and sc failed) when out of memory */
static void *scratch_bump(struct scratch *sc, size_t size)
{
    if (sc->failed || size > SIZE_MAX / 2) {
        sc->failed = true;
        return NULL;
    }
    size = size == 0 ? SCRATCH_ALIGN : (size + SCRATCH_ALIGN - 1) & ~(size_t)(SCRATCH_ALIGN - 1);
    if (size > sc->left) {
        size_t bytes = size > SCRATCH_CHUNK_BYTES ? size : SCRATCH_CHUNK_BYTES;
        struct scratch_chunk *chunk;
        if (bytes == SCRATCH_CHUNK_BYTES && sc->spare != NULL && *sc->spare != NULL) {
            chunk = *sc->spare;
            *sc->spare = NULL;
        } else if ((chunk = malloc(sizeof(*chunk) + bytes)) == NULL) {
            sc->failed = true;
            return NULL;
        }
        chunk->size = bytes;
        chunk->next = sc->chunks;
        sc->chunks = chunk;
        sc->at = chunk->data;
        sc->left = bytes;
    }
    void *block = sc->at;
    sc->at += size;
    sc->left -= size;
    return block;
}

static void *scratch_alloc(struct scratch *sc, size_t size)
{
    void *block = scratch_bump(sc, size);
    if (block != NULL)
        memset(block, 0, size);
    return block;
}

/* protobuf-c's allocator over the arena: a decoded request lives as long as its reply */
static void *scratch_protobuf_alloc(void *data, size_t size)
{
    return scratch_bump(data, size);
}

static void scratch_protobuf_free(void *data, void *pointer)
{
    (void)data;
    (void)pointer; /* freed with the arena */
}

static char *scratch_strdup(struct scratch *sc, const char *text)
{
    size_t len = strlen(text);
    char *copy = scratch_alloc(sc, len + 1);
    if (copy != NULL)
        memcpy(copy, text, len + 1);
    return copy;
}

static char *scratch_vprintf(struct scratch *sc, const char *fmt, va_list ap)
{
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) {
        sc->failed = true;
        return NULL;
    }
    char *copy = scratch_strdup(sc, text);
    free(text);
    return copy;
}

/* Frees the chunks but one of the usual size, kept in *sc->spare for the next request. */
static void scratch_free(struct scratch *sc)
{
    while (sc->chunks != NULL) {
        struct scratch_chunk *next = sc->chunks->next;
        if (sc->spare != NULL && *sc->spare == NULL && sc->chunks->size == SCRATCH_CHUNK_BYTES)
            *sc->spare = sc->chunks;
        else
            free(sc->chunks);
        sc->chunks = next;
    }
    memset(sc, 0, sizeof(*sc));
}

/* A string field of a reply: protobuf-c wants the shared empty string rather than NULL. */
static char *text_or_empty(struct scratch *sc, const char *text)
{
    if (text == NULL || text[0] == '\0')
        return (char *)protobuf_c_empty_string;
    char *copy = scratch_strdup(sc, text);
    return copy != NULL ? copy : (char *)protobuf_c_empty_string;
}

/* Make the reply an error; returns -1 so a serve function can end with it. */
static int reply_error(Kcycle__V1__Reply *reply, struct scratch *sc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int reply_error(Kcycle__V1__Reply *reply, struct scratch *sc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = scratch_vprintf(sc, fmt, ap);
    va_end(ap);
    reply->result_case = KCYCLE__V1__REPLY__RESULT__NOT_SET;
    reply->error = text != NULL ? text : (char *)"out of memory";
    log_info("request %llu: %s", (unsigned long long)reply->id, reply->error);
    return -1;
}

/* ---- the replica ---- */

static int record_bind(void *ctx, const struct pod *pod, const char *node,
                       const struct kv_list *annotations)
{
    struct plugin_host *h = ctx;
    if (h->bind_result < 0)
        return h->bind_result; /* a harness's binder that fails (kc_harness_set_bind_result) */
    h->bind_requested = true;
    log_debug("bind requested: pod %s/%s on node %s with %u annotations", pod->namespace, pod->name,
              node, annotations != NULL ? annotations->count : 0);
    return 0;
}

static void harness_group_free(struct pod_group *g);

static void evaluated_free(struct evaluated *ev)
{
    if (ev->cycle != NULL && ev->cycle->sp != NULL && ev->cycle->sp->group == ev->harness_group)
        ev->cycle->sp->group = NULL;
    evaluation_cycle_free(ev->cycle);
    harness_group_free(ev->harness_group);
    if (!ev->borrowed)
        pod_free(ev->pod);
    free(ev);
}

/* ---- waiting pods mirrored from the scheduler ---- */

static void waiting_drop(struct plugin_host *h, uint32_t i)
{
    struct scheduler *s = &h->sched;
    struct kc_waiting_pod *w = s->waiting[i];
    memmove(&s->waiting[i], &s->waiting[i + 1], (s->waiting_count - i - 1) * sizeof(*s->waiting));
    s->waiting_count--;
    free(w->wait_plugin);
    free(w->reject_message);
    free(w);
}

static int waiting_delete(struct plugin_host *h, const char *uid)
{
    struct scheduler *s = &h->sched;
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        if (strcmp(s->waiting[i]->cycle->sp->pod->uid, uid) == 0) {
            waiting_drop(h, i);
            break;
        }
    }
    return 0;
}

/* Mirrors die with the cycle they point at. */
static void waiting_drop_cycle(struct plugin_host *h, const struct kc_cycle *cycle)
{
    struct scheduler *s = &h->sched;
    for (uint32_t i = 0; i < s->waiting_count;) {
        if (s->waiting[i]->cycle == cycle)
            waiting_drop(h, i);
        else
            i++;
    }
}

static void evaluated_remove(struct plugin_host *h, struct evaluated *ev)
{
    waiting_drop_cycle(h, ev->cycle);
    strmap_remove(&h->evaluated, ev->pod->uid);
    evaluated_free(ev);
}

static struct evaluated *evaluated_from_assumed(struct plugin_host *h, const char *uid);

/* The scheduler holds a pod in Permit: mirror it into the replica's waiting list, where the
 * plugins' kc_waiting_pod_* calls find it; their allows and rejections go back in the reply. */
static int waiting_put(struct plugin_host *h, const Kcycle__V1__WaitingPod *msg,
                       struct kc_error *err)
{
    struct scheduler *s = &h->sched;
    waiting_delete(h, msg->uid);
    struct evaluated *ev = strmap_get(&h->evaluated, msg->uid);
    if (ev == NULL)
        ev = evaluated_from_assumed(h, msg->uid);
    if (ev == NULL)
        return 0; /* not assumed here: nothing a plugin could act on */
    ev->chosen = true; /* held in Permit: its cycle lives on (a harness may hold it without
                        * having called a phase) */
    uint64_t pending = 0;
    for (size_t n = 0; n < msg->n_plugins; n++)
        for (uint32_t i = 0; i < s->fw->count && i < 64; i++)
            if (strcmp(s->fw->plugins[i].name, msg->plugins[n]) == 0)
                pending |= 1ull << i;
    if (ev->cycle->node_name == NULL && msg->node != NULL && msg->node[0] != '\0')
        ev->cycle->node_name = strdup(msg->node);
    struct kc_waiting_pod *w = calloc(1, sizeof(*w));
    void *grown =
        array_grow(s->waiting, &s->waiting_capacity, s->waiting_count + 1, sizeof(*s->waiting));
    if (w == NULL || grown == NULL) {
        free(w);
        if (grown != NULL)
            s->waiting = grown;
        return kc_error_set(err, -ENOMEM, "waiting pod %s: out of memory", msg->uid);
    }
    s->waiting = grown;
    w->cycle = ev->cycle;
    w->pending = pending;
    w->reported_pending = pending;
    s->waiting[s->waiting_count++] = w;
    return 0;
}

/* What plugins did to mirrored waiting pods since the last reply. */
static int collect_waiting_actions(struct plugin_host *h, Kcycle__V1__Reply *reply,
                                   struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    size_t count = 0;
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        const struct kc_waiting_pod *w = s->waiting[i];
        count += __builtin_popcountll(w->reported_pending & ~w->pending);
        count += w->rejected && !w->reported_rejected;
    }
    if (count == 0)
        return 0;
    Kcycle__V1__WaitingAction **list = scratch_alloc(sc, count * sizeof(*list));
    Kcycle__V1__WaitingAction *items = scratch_alloc(sc, count * sizeof(*items));
    if (list == NULL || items == NULL)
        return -1;
    size_t n = 0;
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        struct kc_waiting_pod *w = s->waiting[i];
        uint64_t allowed = w->reported_pending & ~w->pending;
        for (uint32_t b = 0; b < s->fw->count && b < 64; b++) {
            if (!(allowed & (1ull << b)))
                continue;
            kcycle__v1__waiting_action__init(&items[n]);
            items[n].uid = w->cycle->sp->pod->uid;
            items[n].plugin = s->fw->plugins[b].name;
            list[n] = &items[n];
            n++;
        }
        if (w->rejected && !w->reported_rejected) {
            kcycle__v1__waiting_action__init(&items[n]);
            items[n].uid = w->cycle->sp->pod->uid;
            items[n].reject = true;
            items[n].message = w->reject_message != NULL ? w->reject_message : (char *)"";
            list[n] = &items[n];
            n++;
            w->reported_rejected = true;
        }
        w->reported_pending = w->pending;
    }
    reply->n_waiting_actions = n;
    reply->waiting_actions = list;
    return 0;
}

/* Pods evaluated but not chosen: the scheduler calls no phase for them and says nothing. */
static void drop_unchosen(struct plugin_host *h)
{
    for (uint32_t i = 0; i < h->evaluated.capacity; i++) {
        struct evaluated *ev = h->evaluated.entries[i].value;
        if (ev != NULL && !ev->chosen)
            evaluated_remove(h, ev);
    }
}

/* The replica learned that the pod's attempt is over (bound, deleted, or its assumption
 * forgotten after Unreserve): its cycle goes too. Hosts without Unreserve or PostBind plugins
 * get no phase call that would end it. */
static void end_evaluation(struct plugin_host *h, const char *uid)
{
    struct evaluated *ev = strmap_get(&h->evaluated, uid);
    if (ev != NULL)
        evaluated_remove(h, ev);
}

static void free_map_values(struct strmap *map, bool pods)
{
    for (uint32_t i = 0; i < map->capacity; i++) {
        void *value = map->entries[i].value;
        if (value == NULL)
            continue;
        if (pods)
            pod_free(value);
        else
            evaluated_free(value);
    }
    strmap_free(map);
}

static void kept_resolve(struct plugin_host *h);

static void close_replica(struct plugin_host *h)
{
    /* mirrors point at the cycles; cycles hold plugin state: free both while the plugins are
     * still loaded, before scheduler_close would take the mirrors for its own */
    while (h->sched.waiting_count > 0)
        waiting_drop(h, 0);
    kept_resolve(h); /* the kept assumptions point at evaluations' pods */
    free_map_values(&h->evaluated, false);
    if (h->open)
        scheduler_close(&h->sched);
    free_map_values(&h->assumed, true);
    config_free(&h->cfg);
    h->open = false;
}

static bool replica_empty(const struct plugin_host *h)
{
    return h->sched.cache.node_count == 0 && h->sched.cache.pods.count == 0 &&
           h->assumed.count == 0 && h->objects_seen == 0;
}

/* Bits of plugin framework indices -> bits of Hello indices. */
static uint64_t hello_bits(const struct plugin_host *h, uint64_t bits)
{
    uint64_t out = 0;
    for (uint32_t j = 0; j < h->sched.fw->count; j++)
        if (bits & (1ull << j))
            out |= 1ull << h->hello_index[j];
    return out;
}

static int put_node(struct plugin_host *h, const Kcycle__V1__Node *msg, struct kc_error *err)
{
    struct node *node;
    int rc = node_from_proto(msg, &node, err);
    if (rc < 0)
        return rc;
    rc = scheduler_node_add(&h->sched, node);
    if (rc < 0)
        return kc_error_set(err, rc, "node %s: %s", msg->name, kc_strerror(rc));
    return 0;
}

static int delete_node(struct plugin_host *h, const char *name)
{
    if (scheduler_node_delete(&h->sched, name) == -ENOENT)
        log_debug("node_delete %s: not in the replica (nothing to do)", name);
    return 0;
}

static int harness_put_pending(struct plugin_host *h, struct pod *pod, struct kc_error *err);

static int put_pod(struct plugin_host *h, const Kcycle__V1__Pod *msg, struct kc_error *err)
{
    struct pod *pod;
    int rc = pod_from_proto(msg, &pod, err);
    if (rc < 0)
        return rc;
    if (pod->node_name == NULL && h->capture_logs)
        return harness_put_pending(h, pod, err);
    if (pod->node_name == NULL) {
        rc = kc_error_set(err, -EINVAL,
                          "pod %s/%s (uid %s): pod_put without node_name; only assigned pods "
                          "belong in the replica (a pending pod comes with evaluate)",
                          pod->namespace, pod->name, pod->uid);
        pod_free(pod);
        return rc;
    }
    /* the pod we assumed is now seen assigned: the cache confirms it, our copy goes */
    end_evaluation(h, msg->uid); /* before the assumed copy it may borrow goes */
    struct pod *assumed = strmap_remove(&h->assumed, pod->uid);
    rc = scheduler_pod_add(&h->sched, pod);
    pod_free(assumed);
    if (rc < 0)
        return kc_error_set(err, rc, "pod %s/%s: %s", msg->namespace_, msg->name, kc_strerror(rc));
    h->pod_puts++;
    return 0;
}

static int delete_pod(struct plugin_host *h, const char *uid)
{
    if (scheduler_pod_delete(&h->sched, uid) == -ENOENT)
        log_debug("pod_delete %s: not in the replica (nothing to do)", uid);
    end_evaluation(h, uid);
    return 0;
}

static int assume_pod(struct plugin_host *h, const Kcycle__V1__Assume *msg, struct kc_error *err)
{
    if (msg->pod == NULL || msg->node == NULL || msg->node[0] == '\0')
        return kc_error_set(err, -EINVAL, "assume without a pod or a node");
    struct pod *pod;
    int rc = pod_from_proto(msg->pod, &pod, err);
    if (rc < 0)
        return rc;
    rc = strmap_get(&h->assumed, pod->uid) != NULL ? -EEXIST
                                                   : scheduler_assume(&h->sched, pod, msg->node);
    if (rc < 0) {
        rc = kc_error_set(err, rc, "assume pod %s/%s (uid %s) on node %s: %s", pod->namespace,
                          pod->name, pod->uid, msg->node,
                          rc == -EEXIST ? "the pod is already accounted in the replica"
                                        : kc_strerror(rc));
        pod_free(pod);
        return rc;
    }
    rc = strmap_put(&h->assumed, pod->uid, pod);
    if (rc < 0) {
        scheduler_forget(&h->sched, pod);
        pod_free(pod);
        return kc_error_set(err, rc, "assume pod %s/%s: out of memory", msg->pod->namespace_,
                            msg->pod->name);
    }
    return 0;
}

static int forget_pod(struct plugin_host *h, const char *uid)
{
    end_evaluation(h, uid);
    struct pod *pod = strmap_get(&h->assumed, uid);
    if (pod == NULL) {
        log_debug("forget %s: not assumed in the replica (nothing to do)", uid);
        return 0;
    }
    scheduler_forget(&h->sched, pod);
    strmap_remove(&h->assumed, uid);
    pod_free(pod);
    return 0;
}

/* Delta.pod_bound: the pod assumed here on that node is assigned there, and its object is the
 * assumed one with nodeName set. The scheduler decided so by comparing the assigned pod's
 * encoding with the bytes this replica decoded the assumed copy from: the Assume's pod, or the
 * evaluation's pod that kept_confirm adopted (as_evaluated: the same pod object, encoded in the
 * same cycle). Decoding is field by field (nodeName is copied and nothing derives from it), so
 * the assumed copy with nodeName set is what decoding the pod_put would give, and it takes the
 * pod_put's way through put_pod's steps: the same cache changes, generation and events. */
static int bound_pod(struct plugin_host *h, const Kcycle__V1__PodBound *msg, struct kc_error *err)
{
    const char *uid = msg != NULL ? msg->uid : NULL;
    if (uid == NULL || uid[0] == '\0' || msg->node == NULL || msg->node[0] == '\0')
        return kc_error_set(err, -EINVAL, "pod_bound without a uid or a node");
    const struct cache_pod *cp = cache_pod(&h->sched.cache, uid);
    if (strmap_get(&h->assumed, uid) == NULL || cp == NULL || !cp->assumed)
        return kc_error_set(err, -EPROTO,
                            "pod_bound of pod uid %s on node %s: the replica does not hold that "
                            "pod assumed",
                            uid, msg->node);
    if (strcmp(cp->node_name, msg->node) != 0)
        return kc_error_set(err, -EPROTO,
                            "pod_bound of pod uid %s on node %s: the replica holds it assumed on "
                            "node %s",
                            uid, msg->node, cp->node_name);
    char *node = strdup(msg->node);
    if (node == NULL)
        return kc_error_set(err, -ENOMEM, "pod_bound of pod uid %s: out of memory", uid);
    end_evaluation(h, uid); /* before the assumed copy it may borrow changes hands */
    struct pod *pod = strmap_remove(&h->assumed, uid);
    free(pod->node_name);
    pod->node_name = node;
    char name[320];
    snprintf(name, sizeof(name), "%s/%s", pod->namespace, pod->name);
    int rc = scheduler_pod_add(&h->sched, pod); /* owns pod from here, as put_pod's */
    if (rc < 0)
        return kc_error_set(err, rc, "pod %s: %s", name, kc_strerror(rc));
    h->pods_bound++;
    return 0;
}

static int object_event(struct plugin_host *h, kc_event_type type,
                        const Kcycle__V1__CustomObject *msg, struct kc_error *err)
{
    struct sim_object object;
    int rc = custom_object_from_proto(msg, &object, err);
    if (rc < 0)
        return rc;
    /* a put is an add or an update as in the scheduler: the replica knows which */
    if (type == KC_EVENT_OBJECT_DELETE)
        rc = scheduler_object_event(&h->sched, type, object.kind, object.namespace, object.name,
                                    object.json);
    else
        rc = scheduler_object_put(&h->sched, object.kind, object.namespace, object.name,
                                  object.json);
    custom_object_clear(&object);
    if (rc < 0)
        return kc_error_set(err, rc, "object %s %s: %s", msg->kind, msg->name, kc_strerror(rc));
    if (type == KC_EVENT_OBJECT_ADD)
        h->objects_seen++;
    return 0;
}

/* ---- a group's kept assumptions (EvaluateGroup.keep_assumed) ---- */

static void kept_clear(struct plugin_host *h)
{
    free(h->kept);
    free(h->kept_nodes);
    free(h->kept_generations);
    h->kept = NULL;
    h->kept_nodes = NULL;
    h->kept_generations = NULL;
    h->kept_count = h->kept_confirmed = 0;
    h->kept_reserved = false;
}

/* The kept assumptions the scheduler did not confirm are undone, in reverse, and the replica's
 * generation is the one the confirmed ones alone give: the replica is then what applying the
 * scheduler's deltas one by one would have made it. Before any other change and before any
 * call is served, so nothing else ever sees an unconfirmed assumption. */
static void kept_resolve(struct plugin_host *h)
{
    if (h->kept_count == 0)
        return;
    if (h->kept_reserved && h->kept_confirmed == 0) {
        /* the scheduler did not take the answer whose Reserve ran here: what its failed cycle
         * would do, Unreserve, before the assumption goes */
        struct evaluated *ev = h->kept[0];
        const struct cache_node *node = &h->sched.cache.nodes[h->kept_nodes[0]];
        scheduler_phase(&h->sched, ev->cycle, PHASE_UNRESERVE, node, NULL, NULL, NULL);
        ev->chosen = false;
    }
    for (size_t k = h->kept_count; k-- > h->kept_confirmed;)
        scheduler_forget(&h->sched, h->kept[k]->pod);
    h->sched.cache.generation = h->kept_confirmed > 0
                                    ? h->kept_generations[h->kept_confirmed - 1]
                                    : h->kept_generation_before;
    kept_clear(h);
}

/* An Assume delta that confirms the next kept assumption (the same pod, as evaluated, on the
 * same node): the pod the replica already holds becomes the assumed one; true when it did. */
static bool kept_confirm(struct plugin_host *h, const Kcycle__V1__Assume *msg)
{
    size_t k = h->kept_confirmed;
    if (k >= h->kept_count || !msg->as_evaluated || msg->pod == NULL || msg->pod->uid == NULL ||
        msg->node == NULL)
        return false;
    struct evaluated *ev = h->kept[k];
    const struct cache *cache = &h->sched.cache;
    if (strcmp(ev->pod->uid, msg->pod->uid) != 0 || h->kept_nodes[k] >= cache->node_count ||
        strcmp(cache->nodes[h->kept_nodes[k]].node->name, msg->node) != 0 ||
        strmap_get(&h->assumed, ev->pod->uid) != NULL ||
        strmap_put(&h->assumed, ev->pod->uid, ev->pod) < 0)
        return false;
    ev->borrowed = true; /* the assumed map owns the pod now, as evaluated_from_assumed's */
    h->kept_confirmed++;
    if (h->kept_confirmed == h->kept_count)
        kept_clear(h); /* all confirmed: the generation is already the last one's */
    return true;
}

/* A group cycle's trial preemption: the cache changes as the scheduler's did, and no plugin
 * hears of it (the scheduler's in-process plugins do not either: kube's dry run fires no
 * events). The victims stay in the assigned map, so the undo puts the same objects back. */
static int apply_trial(struct plugin_host *h, const Kcycle__V1__Delta *delta, struct kc_error *err)
{
    struct cache *cache = &h->sched.cache;
    switch (delta->change_case) {
    case KCYCLE__V1__DELTA__CHANGE_POD_DELETE: {
        const struct pod *victim = strmap_get(&h->sched.assigned, delta->pod_delete);
        if (victim == NULL || cache_remove_pod(cache, delta->pod_delete) < 0)
            return kc_error_set(err, -ENOENT, "trial pod_delete %s: no such assigned pod",
                                delta->pod_delete);
        return 0;
    }
    case KCYCLE__V1__DELTA__CHANGE_POD_PUT: {
        const struct pod *victim =
            delta->pod_put != NULL ? strmap_get(&h->sched.assigned, delta->pod_put->uid) : NULL;
        if (victim == NULL || cache_pod(cache, victim->uid) != NULL)
            return kc_error_set(err, -ENOENT, "trial pod_put %s: not a victim of a trial",
                                delta->pod_put != NULL ? delta->pod_put->uid : "(none)");
        int rc = cache_add_pod(cache, victim);
        return rc < 0 ? kc_error_set(err, rc, "trial pod_put %s: %s", victim->uid,
                                     kc_strerror(rc))
                      : 0;
    }
    case KCYCLE__V1__DELTA__CHANGE_ASSUME: {
        const Kcycle__V1__Assume *msg = delta->assume;
        if (msg == NULL || msg->pod == NULL || msg->node == NULL || msg->node[0] == '\0')
            return kc_error_set(err, -EINVAL, "trial assume without a pod or a node");
        struct pod *pod;
        int rc = pod_from_proto(msg->pod, &pod, err);
        if (rc < 0)
            return rc;
        rc = strmap_get(&h->assumed, pod->uid) != NULL ? -EEXIST
                                                       : cache_assume(cache, pod, msg->node);
        if (rc == 0 && (rc = strmap_put(&h->assumed, pod->uid, pod)) < 0)
            cache_forget(cache, pod->uid);
        if (rc < 0) {
            rc = kc_error_set(err, rc, "trial assume %s on %s: %s", pod->uid, msg->node,
                              kc_strerror(rc));
            pod_free(pod);
        }
        return rc;
    }
    case KCYCLE__V1__DELTA__CHANGE_FORGET: {
        struct evaluated *ev = strmap_get(&h->evaluated, delta->forget);
        if (ev != NULL && ev->borrowed)
            end_evaluation(h, delta->forget); /* it borrows the copy that goes */
        struct pod *pod = strmap_remove(&h->assumed, delta->forget);
        if (pod == NULL)
            return kc_error_set(err, -ENOENT, "trial forget %s: not assumed in the replica",
                                delta->forget);
        cache_forget(cache, pod->uid);
        pod_free(pod);
        return 0;
    }
    default: return kc_error_set(err, -EINVAL, "a trial delta that is no pod change");
    }
}

static int apply_delta(struct plugin_host *h, const Kcycle__V1__Delta *delta, struct kc_error *err)
{
    if (h->kept_count > 0) {
        if (!delta->trial && delta->change_case == KCYCLE__V1__DELTA__CHANGE_ASSUME &&
            delta->assume != NULL && kept_confirm(h, delta->assume))
            return 0;
        kept_resolve(h);
    }
    if (delta->trial)
        return apply_trial(h, delta, err);
    switch (delta->change_case) {
    case KCYCLE__V1__DELTA__CHANGE_NODE_PUT: return put_node(h, delta->node_put, err);
    case KCYCLE__V1__DELTA__CHANGE_NODE_DELETE: return delete_node(h, delta->node_delete);
    case KCYCLE__V1__DELTA__CHANGE_POD_PUT: return put_pod(h, delta->pod_put, err);
    case KCYCLE__V1__DELTA__CHANGE_POD_DELETE: return delete_pod(h, delta->pod_delete);
    case KCYCLE__V1__DELTA__CHANGE_ASSUME: return assume_pod(h, delta->assume, err);
    case KCYCLE__V1__DELTA__CHANGE_FORGET: return forget_pod(h, delta->forget);
    case KCYCLE__V1__DELTA__CHANGE_OBJECT_PUT:
        return object_event(h, KC_EVENT_OBJECT_ADD, delta->object_put, err);
    case KCYCLE__V1__DELTA__CHANGE_OBJECT_DELETE:
        return object_event(h, KC_EVENT_OBJECT_DELETE, delta->object_delete, err);
    case KCYCLE__V1__DELTA__CHANGE_WAITING_PUT: return waiting_put(h, delta->waiting_put, err);
    case KCYCLE__V1__DELTA__CHANGE_WAITING_DELETE: return waiting_delete(h, delta->waiting_delete);
    case KCYCLE__V1__DELTA__CHANGE_POD_BOUND: return bound_pod(h, delta->pod_bound, err);
    default:
        return kc_error_set(err, -EINVAL, "a delta with no change set (unknown to this host?)");
    }
}

/* Apply the request's deltas in order. A delta that cannot be applied leaves the replica short
 * of a change the scheduler made: from then on every request is refused (h->diverged says why)
 * until the scheduler restarts the host. */
static int apply_deltas(struct plugin_host *h, const Kcycle__V1__Request *req)
{
    for (size_t i = 0; i < req->n_deltas; i++) {
        struct kc_error err = {{0}};
        int rc = apply_delta(h, req->deltas[i], &err);
        if (rc == 0)
            continue;
        snprintf(h->diverged, sizeof(h->diverged), "delta %zu of request %llu: %s", i,
                 (unsigned long long)req->id,
                 err.message[0] != '\0' ? err.message : kc_strerror(rc));
        log_error("%s; the replica stays out of sync until the host is restarted", h->diverged);
        return rc;
    }
    kept_resolve(h);
    return 0;
}

/* ---- hello ---- */

static uint32_t phase_bits(const kc_plugin_ops *o)
{
    const struct {
        bool set;
        uint32_t bit;
    } table[] = {
        {o->pre_enqueue != NULL, KCYCLE__V1__PHASE__PHASE_PRE_ENQUEUE},
        {o->queue_less != NULL, KCYCLE__V1__PHASE__PHASE_QUEUE_SORT},
        {o->pre_filter != NULL, KCYCLE__V1__PHASE__PHASE_PRE_FILTER},
        {o->filter != NULL, KCYCLE__V1__PHASE__PHASE_FILTER},
        {o->post_filter != NULL, KCYCLE__V1__PHASE__PHASE_POST_FILTER},
        {o->pre_score != NULL, KCYCLE__V1__PHASE__PHASE_PRE_SCORE},
        {o->score != NULL, KCYCLE__V1__PHASE__PHASE_SCORE},
        {o->normalize_score != NULL, KCYCLE__V1__PHASE__PHASE_NORMALIZE_SCORE},
        {o->reserve != NULL, KCYCLE__V1__PHASE__PHASE_RESERVE},
        {o->unreserve != NULL, KCYCLE__V1__PHASE__PHASE_UNRESERVE},
        {o->permit != NULL, KCYCLE__V1__PHASE__PHASE_PERMIT},
        {o->pre_bind != NULL, KCYCLE__V1__PHASE__PHASE_PRE_BIND},
        {o->bind != NULL, KCYCLE__V1__PHASE__PHASE_BIND},
        {o->post_bind != NULL, KCYCLE__V1__PHASE__PHASE_POST_BIND},
        {o->on_event != NULL, KCYCLE__V1__PHASE__PHASE_EVENT},
        {o->group_of != NULL, KCYCLE__V1__PHASE__PHASE_GROUP_OF},
    };
    uint32_t bits = 0;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].set)
            bits |= table[i].bit;
    return bits;
}

/* The replica's configuration: the Hello's plugins, in process, none required (a plugin that
 * fails is reported in its PluginInfo and the others still serve). */
static int build_config(struct config *cfg, const Kcycle__V1__Hello *hello)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->scheduler_name = strdup("kcycle");
    cfg->seed = 1;
    cfg->parallelism = hello->parallelism > 0 ? hello->parallelism : 0;
    cfg->pod_initial_backoff_ms = 1000;
    cfg->pod_max_backoff_ms = 10000;
    cfg->unschedulable_flush_ms = 5 * 60 * 1000;
    cfg->binder_elsewhere = true; /* the scheduler binds: a host may serve no Bind plugin */
    cfg->plugins = calloc(hello->n_plugins + 1, sizeof(*cfg->plugins));
    if (cfg->scheduler_name == NULL || cfg->plugins == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < hello->n_plugins; i++) {
        const Kcycle__V1__PluginSpec *spec = hello->plugins[i];
        struct plugin_config *pc = &cfg->plugins[i];
        cfg->plugin_count = (uint32_t)i + 1;
        pc->name = strdup(spec->name);
        pc->path = spec->path[0] != '\0' ? strdup(spec->path) : NULL;
        pc->args_json = strdup(spec->args_json[0] != '\0' ? spec->args_json : "{}");
        pc->weight = 1;
        pc->isolation = ISOLATION_INPROCESS;
        pc->failure_policy = FAILURE_FAIL;
        pc->required = false;
        pc->queue_sort_off = spec->queue_sort_off;
        if (pc->name == NULL || (spec->path[0] != '\0' && pc->path == NULL) ||
            pc->args_json == NULL)
            return -ENOMEM;
    }
    return 0;
}

/* Which framework plugin each Hello plugin became: the framework keeps the loaded ones in
 * configuration order and records why the others failed. */
static void index_plugins(struct plugin_host *h, const Kcycle__V1__Hello *hello)
{
    const struct framework *fw = h->sched.fw;
    uint32_t j = 0;
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        h->loaded[i] = -1;
        if (j < fw->count && fw->errors[i] == NULL &&
            strcmp(fw->plugins[j].name, hello->plugins[i]->name) == 0) {
            h->loaded[i] = (int32_t)j;
            h->hello_index[j++] = i;
        }
    }
}

/* ---- the test harness's taps: Hello.capture_logs and Request.cycle_keys_of ---- */

static void capture_log(void *ctx, kc_log_level level, const char *plugin, const char *message)
{
    struct plugin_host *h = ctx;
    pthread_mutex_lock(&h->log_lock);
    struct scratch *sc = h->log_scratch;
    Kcycle__V1__LogLine *line = sc != NULL ? scratch_alloc(sc, sizeof(*line)) : NULL;
    void *grown = line != NULL ? array_grow(h->log_lines, &h->log_capacity, h->log_count + 1,
                                            sizeof(*h->log_lines))
                               : NULL;
    if (grown != NULL) {
        h->log_lines = grown;
        kcycle__v1__log_line__init(line);
        line->level = (int32_t)level;
        line->plugin = text_or_empty(sc, plugin);
        line->message = text_or_empty(sc, message);
        h->log_lines[h->log_count++] = line;
    }
    pthread_mutex_unlock(&h->log_lock);
}

static void capture_start(struct plugin_host *h, struct scratch *sc)
{
    pthread_mutex_lock(&h->log_lock);
    h->log_scratch = sc;
    h->log_count = 0;
    /* statuses a call that sent no reply kept (a Hello whose scheduler_open failed) point into
     * a scratch already freed: they are forgotten with it */
    h->status_count = 0;
    pthread_mutex_unlock(&h->log_lock);
}

/* The lines go into the reply (their memory is the reply's scratch) and capture pauses. */
static void capture_finish(struct plugin_host *h, Kcycle__V1__Reply *reply)
{
    pthread_mutex_lock(&h->log_lock);
    reply->n_logs = h->log_count;
    reply->logs = h->log_lines;
    h->log_scratch = NULL;
    pthread_mutex_unlock(&h->log_lock);
}

static void fill_cycle_keys(struct plugin_host *h, const char *uid, Kcycle__V1__Probe *probe,
                            struct scratch *sc)
{
    struct evaluated *ev = strmap_get(&h->evaluated, uid);
    if (ev == NULL || ev->cycle->state_count == 0)
        return;
    char **keys = scratch_alloc(sc, ev->cycle->state_count * sizeof(*keys));
    if (keys == NULL)
        return;
    for (uint32_t i = 0; i < ev->cycle->state_count; i++)
        keys[i] = text_or_empty(sc, ev->cycle->state[i].key);
    probe->n_cycle_keys = ev->cycle->state_count;
    probe->cycle_keys = keys;
}

/* ---- Added in 1.2: the harness's clock, cycle strings and skips (plugin.proto's
 * HarnessControl and HarnessFacts; docs/plugin-testing.md) ---- */

static int64_t harness_clock_now(void *ctx)
{
    const struct plugin_host *h = ctx;
    return h->clock_set ? h->clock_ms : monotonic_us() / 1000;
}

/* The replica's clock: monotonic until the harness sets it (kc_harness_set_clock) or the
 * scheduler's requests carry its own (a simulation's). */
static struct scheduler_clock harness_clock(struct plugin_host *h)
{
    return (struct scheduler_clock){.ctx = h, .now_ms = harness_clock_now};
}

/* kc_harness_cycle_string's bound (docs/sdk/kc_harness_cycle_string.md): the longest string
 * read from a cycle key's data, its NUL included. */
#define HARNESS_CYCLE_STRING_MAX 4096

/* A harness host refuses a wait (WaitingPod delta) for a pod with no open cycle and no
 * assumption before any delta applies: the scheduler only waits for a pod it assumed, so
 * from a test it is a mistake to name, not a change to ignore (and, refused here, the
 * replica stays in sync). True when the reply is that refusal. */
static bool harness_waits_unknown_pod(struct plugin_host *h, const Kcycle__V1__Request *req,
                                      Kcycle__V1__Reply *reply, struct scratch *sc)
{
    for (size_t i = 0; h->capture_logs && i < req->n_deltas; i++) {
        const Kcycle__V1__Delta *d = req->deltas[i];
        if (d->change_case != KCYCLE__V1__DELTA__CHANGE_WAITING_PUT || d->trial)
            continue;
        const char *uid = d->waiting_put->uid;
        if (strmap_get(&h->evaluated, uid) != NULL || strmap_get(&h->assumed, uid) != NULL)
            continue;
        reply_error(reply, sc,
                    "pod %s cannot wait: it has no open cycle and is not assumed (evaluate it "
                    "or assume it first)",
                    uid);
        return true;
    }
    return false;
}

/* Before the request's deltas, the replica's clock: the one a harness set
 * (HarnessControl.set_clock), or a simulating scheduler's (Request.scheduler_clock); it applies
 * to the events the deltas bring too. */
static void follow_clock(struct plugin_host *h, const Kcycle__V1__Request *req)
{
    const Kcycle__V1__HarnessControl *c = req->harness_control;
    if (h->capture_logs ? c == NULL || !c->set_clock : !req->scheduler_clock)
        return;
    h->clock_set = true;
    h->clock_ms = h->capture_logs ? c->now_ms : req->scheduler_now_ms;
}

/* After an evaluation, the plugins whose PreFilter and PreScore skipped the pod; with
 * HarnessControl.cycle_string_key, that key's data in the cycle of Request.cycle_keys_of. */
static void fill_harness_facts(struct plugin_host *h, const Kcycle__V1__Request *req,
                               Kcycle__V1__Reply *reply, struct scratch *sc)
{
    Kcycle__V1__HarnessFacts *facts = scratch_alloc(sc, sizeof(*facts));
    if (facts == NULL)
        return;
    kcycle__v1__harness_facts__init(facts);
    if (reply->result_case == KCYCLE__V1__REPLY__RESULT_EVALUATE &&
        req->call_case == KCYCLE__V1__REQUEST__CALL_EVALUATE && req->evaluate->pod != NULL) {
        const struct evaluated *ev = strmap_get(&h->evaluated, req->evaluate->pod->uid);
        if (ev != NULL) {
            facts->pre_filter_skipped = hello_bits(h, ev->cycle->filter_skip);
            facts->pre_score_skipped = hello_bits(h, ev->cycle->score_skip);
        }
    }
    const Kcycle__V1__HarnessControl *c = req->harness_control;
    const struct evaluated *ev = c != NULL && c->cycle_string_key[0] != '\0'
                                     ? strmap_get(&h->evaluated, req->cycle_keys_of)
                                     : NULL;
    for (uint32_t i = 0; ev != NULL && i < ev->cycle->state_count; i++) {
        if (strcmp(ev->cycle->state[i].key, c->cycle_string_key) != 0 ||
            ev->cycle->state[i].data == NULL)
            continue;
        /* the data is a plugin's pointer of no known size: a string ends within the bound,
         * anything else answers no string rather than a read to wherever a NUL lies */
        const char *data = ev->cycle->state[i].data;
        size_t len = strnlen(data, HARNESS_CYCLE_STRING_MAX);
        char *copy = len < HARNESS_CYCLE_STRING_MAX ? scratch_alloc(sc, len + 1) : NULL;
        if (copy == NULL)
            continue;
        memcpy(copy, data, len + 1);
        facts->has_cycle_string = true;
        facts->cycle_string = copy;
    }
    reply->harness_facts = facts;
}

/* ---- the test harness's calls: what a scheduler's host never serves ---- */

/* A harness host's sink lets kc_preempt record a choice (a sink that cannot evict refuses it);
 * nothing is ever evicted: the host never carries a preemption out, the choice goes back in
 * the PhaseReply. */
static void harness_evict(void *ctx, const struct pod *victim, const struct pod *preemptor,
                          const char *node)
{
    (void)ctx;
    log_debug("a harness host does not evict: pod %s/%s for %s/%s on %s", victim->namespace,
              victim->name, preemptor->namespace, preemptor->name, node);
}

/* kc_object_status in a harness host: kept for the reply being built (Filter may call from
 * several threads, hence the lock the log lines use). */
static void harness_object_status(void *ctx, const char *kind, const char *namespace_name,
                                  const char *name, const char *status_json)
{
    struct plugin_host *h = ctx;
    pthread_mutex_lock(&h->log_lock);
    struct scratch *sc = h->log_scratch;
    Kcycle__V1__HarnessObjectStatus *st = sc != NULL ? scratch_alloc(sc, sizeof(*st)) : NULL;
    void *grown = st != NULL ? array_grow(h->statuses, &h->status_capacity, h->status_count + 1,
                                          sizeof(*h->statuses))
                             : NULL;
    if (grown != NULL) {
        h->statuses = grown;
        kcycle__v1__harness_object_status__init(st);
        st->kind = text_or_empty(sc, kind);
        st->namespace_ = text_or_empty(sc, namespace_name);
        st->name = text_or_empty(sc, name);
        st->status_json = text_or_empty(sc, status_json);
        h->statuses[h->status_count++] = st;
    }
    pthread_mutex_unlock(&h->log_lock);
}

static void harness_sink(struct scheduler_sink *sink)
{
    sink->evict = harness_evict;
    sink->object_status = harness_object_status;
}

static void fill_object_statuses(struct plugin_host *h, Kcycle__V1__Reply *reply)
{
    pthread_mutex_lock(&h->log_lock);
    reply->n_object_statuses = h->status_count;
    reply->object_statuses = h->statuses;
    h->status_count = 0; /* their memory is the reply's scratch */
    pthread_mutex_unlock(&h->log_lock);
}

/* PostFilter in a harness host: the preemption the plugins chose, into the reply. */
static void fill_preemption(struct plugin_host *h, struct kc_cycle *cycle,
                            Kcycle__V1__PhaseReply *r, struct scratch *sc)
{
    struct preemption *p = cycle->preemption;
    if (!h->capture_logs || p == NULL)
        return;
    cycle->preemption = NULL; /* each PostFilter call reports its own choice */
    r->preempted = true;
    r->nominated_node = text_or_empty(sc, p->node);
    r->victims = scratch_alloc(sc, (p->victim_count + 1) * sizeof(*r->victims));
    for (uint32_t i = 0; r->victims != NULL && i < p->victim_count; i++) {
        const struct pod *v = p->victims[i];
        size_t size = strlen(v->namespace) + strlen(v->name) + 2;
        char *text = scratch_alloc(sc, size);
        if (text == NULL)
            break;
        snprintf(text, size, "%s/%s", v->namespace, v->name);
        r->victims[r->n_victims++] = text;
    }
    preempt_decision_free(p);
}

static void queue_group_of(struct plugin_host *h, const struct pod *pod, Kcycle__V1__QueueReply *r,
                           struct scratch *sc)
{
    kc_group_info info;
    const char *plugin = NULL;
    if (!queue_call_group_of(&h->sched, pod, &info, &plugin)) {
        r->status = KC_SKIP; /* no plugin placed it in a group */
        return;
    }
    r->status = KC_SUCCESS;
    r->plugin = text_or_empty(sc, plugin);
    r->group_namespace = text_or_empty(sc, info.namespace_name);
    r->group_name = text_or_empty(sc, info.name);
    r->min_member = info.min_member;
    r->group_flags = info.flags;
    r->schedule_timeout_ms = info.schedule_timeout_ms;
    r->backoff_ms = info.backoff_ms; /* kc_harness_group_info reads the whole info */
    r->creation_ms = info.creation_ms;
}

static int queue_reply(struct plugin_host *h, const Kcycle__V1__QueueCall *call,
                       const struct pod *pod, const struct pod *other, Kcycle__V1__Reply *reply,
                       struct scratch *sc)
{
    Kcycle__V1__QueueReply *r = scratch_alloc(sc, sizeof(*r));
    if (r == NULL)
        return -1;
    kcycle__v1__queue_reply__init(r);
    const char *plugin = NULL;
    switch (call->kind) {
    case KCYCLE__V1__QUEUE_CALL__KIND__KIND_LESS: {
        int less = queue_call_less(&h->sched, pod, other, &plugin);
        if (less < 0)
            return reply_error(reply, sc, "QueueSort asked, but no plugin of this host sorts "
                                          "the queue");
        r->less = less != 0;
        r->plugin = text_or_empty(sc, plugin);
        break;
    }
    case KCYCLE__V1__QUEUE_CALL__KIND__KIND_PRE_ENQUEUE: {
        char why[300];
        r->status = queue_call_pre_enqueue(&h->sched, pod, why, sizeof(why), &plugin);
        if (plugin != NULL) {
            r->message = text_or_empty(sc, why);
            r->plugin = text_or_empty(sc, plugin);
        }
        break;
    }
    case KCYCLE__V1__QUEUE_CALL__KIND__KIND_GROUP_OF: queue_group_of(h, pod, r, sc); break;
    default: return reply_error(reply, sc, "a queue call of kind %d", (int)call->kind);
    }
    reply->result_case = KCYCLE__V1__REPLY__RESULT_QUEUE;
    reply->queue = r;
    return 0;
}

/* QueueSort, PreEnqueue or group_of for a pending pod, for the test harness only: the scheduler
 * runs them in process on every queue operation, never in a host. */
static int serve_queue(struct plugin_host *h, const Kcycle__V1__QueueCall *call,
                       Kcycle__V1__Reply *reply, struct scratch *sc)
{
    if (!h->capture_logs)
        return reply_error(reply, sc, "queue calls are only for a test harness (a Hello with "
                                      "capture_logs); the scheduler runs them in process");
    bool two = call->kind == KCYCLE__V1__QUEUE_CALL__KIND__KIND_LESS;
    if (call->pod == NULL || (two && call->other == NULL))
        return reply_error(reply, sc, "a queue call without its pod%s", two ? "s" : "");
    struct pod *pod = NULL, *other = NULL;
    struct kc_error err = {{0}};
    int rc = pod_from_proto(call->pod, &pod, &err);
    if (rc == 0 && two)
        rc = pod_from_proto(call->other, &other, &err);
    if (rc == 0) {
        /* the queue timestamps the harness's test chose (the scheduler's queue sets them) */
        pod->enqueue_ms = call->pod_enqueue_ms;
        if (other != NULL)
            other->enqueue_ms = call->other_enqueue_ms;
        rc = queue_reply(h, call, pod, other, reply, sc);
    } else
        rc = reply_error(reply, sc, "queue call: %s", err.message);
    pod_free(pod);
    pod_free(other);
    return rc;
}

/* ---- the test harness's additions of SDK 1.2 (docs/plugin-testing.md) ----
 * A harness host (capture_logs) takes pending pods as the scheduler's cache delivers them to
 * its plugins, evaluates a pod as a group cycle's member, and places an evaluation's pod in the
 * group its plugins declare, so that kc_preempt refuses a member outside a group cycle as the
 * scheduler does. */

/* A pod without a node from a harness (kc_harness_options.pending_pods_as_events): a pending
 * pod of the replica, which the plugins hear of (KC_EVENT_POD_ADD or UPDATE without a node) as
 * they do in the scheduler; pod is taken over. */
static int harness_put_pending(struct plugin_host *h, struct pod *pod, struct kc_error *err)
{
    char name[300];
    snprintf(name, sizeof(name), "%s/%s", pod->namespace, pod->name);
    int rc = scheduler_pod_add(&h->sched, pod);
    if (rc < 0)
        return kc_error_set(err, rc, "pending pod %s: %s", name, kc_strerror(rc));
    return 0;
}

static void harness_group_free(struct pod_group *g)
{
    if (g == NULL)
        return;
    free(g->key);
    free(g->namespace_name);
    free(g->name);
    free(g);
}

/* The group the plugins' group_of declare for pod, as the evaluation's own copy; NULL when none
 * does (or out of memory: *oom). */
static struct pod_group *harness_group_new(struct plugin_host *h, const struct pod *pod, bool *oom)
{
    kc_group_info info = {.struct_size = sizeof(info)};
    const char *plugin = NULL;
    *oom = false;
    if (!queue_call_group_of(&h->sched, pod, &info, &plugin) || info.name == NULL)
        return NULL;
    struct pod_group *g = calloc(1, sizeof(*g));
    const char *ns = info.namespace_name != NULL ? info.namespace_name : "";
    if (g != NULL) {
        g->namespace_name = strdup(ns);
        g->name = strdup(info.name);
        if (asprintf(&g->key, "%s/%s", ns, info.name) < 0)
            g->key = NULL;
        g->min_member = info.min_member;
        g->transaction = (info.flags & KC_GROUP_CYCLE) != 0;
    }
    if (g == NULL || g->namespace_name == NULL || g->name == NULL || g->key == NULL) {
        harness_group_free(g);
        *oom = true;
        return NULL;
    }
    return g;
}

/* A harness host's evaluation: its pod joins the group its plugins declare (the scheduler's
 * pending pod is filed under it), and with position (Evaluate.harness_group) its cycle is that
 * member of a group cycle. -EINVAL with err set when position names no group. */
static int harness_join_group(struct plugin_host *h, struct evaluated *ev,
                              const Kcycle__V1__HarnessGroupCycle *position, struct kc_error *err)
{
    bool oom;
    ev->harness_group = harness_group_new(h, ev->pod, &oom);
    if (oom)
        return kc_error_set(err, -ENOMEM, "out of memory");
    if (ev->harness_group == NULL)
        return position == NULL ? 0
                                : kc_error_set(err, -EINVAL,
                                               "pod %s/%s: no plugin places it in a group, so "
                                               "it is no member of a group cycle",
                                               ev->pod->namespace, ev->pod->name);
    ev->cycle->sp->group = ev->harness_group;
    if (position != NULL) {
        if (position->count == 0 || position->index >= position->count ||
            position->needed > position->count)
            return kc_error_set(err, -EINVAL,
                                "group cycle member %u of %u with %u needed: not a position",
                                position->index, position->count, position->needed);
        ev->cycle->group = ev->harness_group;
        ev->cycle->group_index = position->index;
        ev->cycle->group_count = position->count;
        ev->cycle->group_needed = position->needed;
    }
    return 0;
}

/* ---- end of the test harness's additions of SDK 1.2 ---- */

/* For a harness (capture_logs): the cycle keys asked for, and Filter's verdict per node after
 * an evaluation (the scheduler reads only the feasible list; a test wants the status). */
static void fill_probe(struct plugin_host *h, const Kcycle__V1__Request *req,
                       Kcycle__V1__Reply *reply, struct scratch *sc)
{
    fill_object_statuses(h, reply);
    Kcycle__V1__Probe *probe = scratch_alloc(sc, sizeof(*probe));
    if (probe == NULL)
        return;
    kcycle__v1__probe__init(probe);
    if (req->cycle_keys_of[0] != '\0')
        fill_cycle_keys(h, req->cycle_keys_of, probe, sc);
    const struct scheduler *s = &h->sched;
    if (reply->result_case == KCYCLE__V1__REPLY__RESULT_EVALUATE && s->node_status != NULL &&
        s->cache.node_count > 0) {
        uint8_t *status = scratch_bump(sc, s->cache.node_count); /* all copied over */
        if (status == NULL)
            return;
        memcpy(status, s->node_status, s->cache.node_count);
        for (size_t i = 0; i < reply->evaluate->n_feasible; i++)
            if (reply->evaluate->feasible[i] < s->cache.node_count)
                status[reply->evaluate->feasible[i]] = KC_SUCCESS;
        probe->node_status.data = status;
        probe->node_status.len = s->cache.node_count;
    }
    reply->probe = probe;
}

static int open_replica(struct plugin_host *h, const Kcycle__V1__Hello *hello, struct kc_error *err)
{
    if (hello->n_plugins > FRAMEWORK_MAX_PLUGINS)
        return kc_error_set(err, -EINVAL, "hello lists %zu plugins; a host runs at most %d",
                            hello->n_plugins, FRAMEWORK_MAX_PLUGINS);
    for (size_t i = 0; i < hello->n_plugins; i++)
        if (hello->plugins[i]->name[0] == '\0')
            return kc_error_set(err, -EINVAL, "hello: plugin %zu has no name", i);
    /* The scheduler runs QueueSort itself and never sends queue_sort_off; leaving a plugin's
     * QueueSort out is a harness's choice (kc_harness_options.queue_sort_off) only. */
    for (size_t i = 0; i < hello->n_plugins && !hello->capture_logs; i++)
        if (hello->plugins[i]->queue_sort_off)
            return kc_error_set(err, -EINVAL,
                                "hello: plugin %s has queue_sort_off, which only a test harness "
                                "(a Hello with capture_logs) may set",
                                hello->plugins[i]->name);
    if (hello->abi_version != 0 && KC_ABI_VERSION_MAJOR(hello->abi_version) != KC_ABI_MAJOR)
        return kc_error_set(err, -EINVAL,
                            "the scheduler speaks ABI %u.%u and this host ABI %u.%u; run the "
                            "kcycle-plugin-host of the scheduler's release",
                            KC_ABI_VERSION_MAJOR(hello->abi_version),
                            KC_ABI_VERSION_MINOR(hello->abi_version), KC_ABI_MAJOR, KC_ABI_MINOR);
    int rc = build_config(&h->cfg, hello);
    /* a private copy of each file: a build copied over it in place while this host runs (a
     * hot reload starts a new host for it) never changes the code mapped here */
    h->cfg.private_copies = true;
    if (rc < 0) {
        config_free(&h->cfg);
        return kc_error_set(err, rc, "hello: out of memory");
    }
    if (hello->capture_logs) {
        h->capture_logs = true;
        hostapi_capture_logs(capture_log, h);
    }
    struct scheduler_sink sink = {.ctx = h, .bind = record_bind};
    if (hello->capture_logs)
        harness_sink(&sink); /* a harness host records what PostFilter chose */
    /* the harness's clock, or the scheduler's when its requests carry it (a simulation);
     * monotonic until either sets it */
    struct scheduler_clock clock = harness_clock(h);
    rc = scheduler_open(&h->sched, &h->cfg, h->plugin_dir, &sink, &clock, err);
    if (rc < 0) {
        scheduler_close(&h->sched);
        config_free(&h->cfg);
        return rc;
    }
    /* a harness's Filter on threads (kc_harness_options.filter_threads, added in 1.2) */
    h->sched.force_parallel = hello->capture_logs && hello->parallel_filter;
    h->open = true;
    h->plugin_count = (uint32_t)hello->n_plugins;
    index_plugins(h, hello);
    return 0;
}

static int serve_hello(struct plugin_host *h, const Kcycle__V1__Hello *hello,
                       Kcycle__V1__Reply *reply, struct scratch *sc)
{
    Kcycle__V1__HelloReply *r = scratch_alloc(sc, sizeof(*r));
    Kcycle__V1__PluginInfo **infos = scratch_alloc(sc, h->plugin_count * sizeof(*infos));
    if (r == NULL || infos == NULL)
        return -1;
    kcycle__v1__hello_reply__init(r);
    for (uint32_t i = 0; i < h->plugin_count; i++) {
        Kcycle__V1__PluginInfo *info = scratch_alloc(sc, sizeof(*info));
        if (info == NULL)
            return -1;
        kcycle__v1__plugin_info__init(info);
        info->name = text_or_empty(sc, hello->plugins[i]->name);
        if (h->loaded[i] < 0) {
            const char *why = h->sched.fw->errors[i];
            /* framework_open has logged it */
            info->error = text_or_empty(sc, why != NULL ? why : "the plugin was not loaded");
        } else {
            const struct plugin *p = &h->sched.fw->plugins[h->loaded[i]];
            info->version = text_or_empty(sc, p->version);
            info->abi_major = p->abi_major;
            info->abi_minor = p->abi_minor;
            info->phases = phase_bits(&p->ops);
            info->requeue_events = p->requeue_mask;
            log_info("plugin %s %s loaded from %s", p->name, p->version, p->path);
        }
        infos[i] = info;
    }
    r->n_plugins = h->plugin_count;
    r->plugins = infos;
    reply->result_case = KCYCLE__V1__REPLY__RESULT_HELLO;
    reply->hello = r;
    return 0;
}

/* ---- evaluate ---- */

static void fill_scores(struct plugin_host *h, const struct evaluation *e,
                        Kcycle__V1__EvaluateReply *r, struct scratch *sc)
{
    const struct framework *fw = h->sched.fw;
    uint32_t scorers = fw->phase_count[PHASE_SCORE];
    if (e->scored == 0 || e->found == 0)
        return;
    Kcycle__V1__PluginScores **all = scratch_alloc(sc, scorers * sizeof(*all));
    if (all == NULL)
        return;
    for (uint32_t k = 0; k < scorers; k++) {
        const struct plugin *p = fw->phase[PHASE_SCORE][k];
        if (!(e->scored & (1ull << p->index)))
            continue;
        Kcycle__V1__PluginScores *ps = scratch_alloc(sc, sizeof(*ps));
        int64_t *scores = scratch_bump(sc, e->found * sizeof(*scores)); /* all written */
        if (ps == NULL || scores == NULL)
            return;
        kcycle__v1__plugin_scores__init(ps);
        ps->plugin = h->hello_index[p->index];
        for (uint32_t i = 0; i < e->found; i++)
            scores[i] = evaluation_score(&h->sched, k, i);
        ps->n_scores = e->found;
        ps->scores = scores;
        all[r->n_scores++] = ps;
    }
    r->scores = all;
}

static void fill_evaluation(struct plugin_host *h, const struct evaluation *e,
                            Kcycle__V1__EvaluateReply *r, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    r->status = (int32_t)e->status;
    r->message = text_or_empty(sc, e->message);
    r->rejectors = hello_bits(h, e->rejectors);
    r->processed = e->processed;
    uint32_t *feasible = scratch_bump(sc, e->found * sizeof(*feasible)); /* all written */
    Kcycle__V1__ReasonCount **reasons = scratch_alloc(sc, s->reason_count * sizeof(*reasons));
    if (feasible == NULL || reasons == NULL)
        return;
    for (uint32_t i = 0; i < e->found; i++)
        feasible[i] = s->feasible[i]->index;
    r->n_feasible = e->found;
    r->feasible = feasible;
    for (uint32_t i = 0; i < s->reason_count; i++) {
        Kcycle__V1__ReasonCount *rc = scratch_alloc(sc, sizeof(*rc));
        if (rc == NULL)
            return;
        kcycle__v1__reason_count__init(rc);
        rc->text = text_or_empty(sc, s->reasons[i].text);
        rc->count = s->reasons[i].count;
        reasons[r->n_reasons++] = rc;
    }
    r->reasons = reasons;
    fill_scores(h, e, r, sc);
}

/* Per candidate, in the request's order, the first of this host's plugins that rejected it
 * (plugin.proto's EvaluateReply.node_rejectors), so the scheduler can merge backends node by
 * node in the configured plugin order. */
static int fill_node_rejectors(struct plugin_host *h, const Kcycle__V1__Evaluate *call,
                               Kcycle__V1__EvaluateReply *r, struct scratch *sc)
{
    const struct scheduler *s = &h->sched;
    uint32_t n = call->all_nodes ? s->cache.node_count : (uint32_t)call->n_candidates;
    uint32_t *out = scratch_bump(sc, ((size_t)n + 1) * sizeof(*out)); /* n written */
    if (out == NULL)
        return -ENOMEM; /* a success without them would let every node through */
    uint32_t start = call->start < s->cache.node_count ? call->start : 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t node = call->all_nodes ? (start + k) % n : call->candidates[k];
        uint32_t v = s->node_rejector[node];
        uint32_t plugin = v & 0xffu;
        if (plugin != 0 && !(v & NODE_REJECTOR_RESTRICTED))
            v = (v & ~0xffu) | (h->hello_index[plugin - 1] + 1);
        out[k] = v;
    }
    r->n_node_rejectors = n;
    r->node_rejectors = out;
    return 0;
}

/* The scheduler's nominated pods that count for the pod evaluated (Evaluate.nominated) go into
 * the replica's nominations for that evaluation only: its Filter then counts them as the
 * scheduler's does in process (preempt_flag_nominated). */
static void forget_nominated(struct plugin_host *h)
{
    for (uint32_t i = 0; i < h->nominated_count; i++) {
        struct sched_pod *sp = h->nominated[i];
        nominations_remove(&h->sched.nominations, sp->pod->uid);
        pod_free(sp->pod);
        free(sp);
    }
    h->nominated_count = 0;
}

static int mirror_nominated(struct plugin_host *h, const Kcycle__V1__Evaluate *call,
                            struct kc_error *err)
{
    forget_nominated(h);
    if (call->n_nominated == 0)
        return 0;
    void *grown = array_grow(h->nominated, &h->nominated_capacity, (uint32_t)call->n_nominated,
                             sizeof(*h->nominated));
    if (grown == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    h->nominated = grown;
    for (size_t i = 0; i < call->n_nominated; i++) {
        const Kcycle__V1__NominatedPod *msg = call->nominated[i];
        if (msg->pod == NULL || msg->node[0] == '\0')
            return kc_error_set(err, -EINVAL, "nominated pod %zu without a pod or a node", i);
        struct sched_pod *sp = calloc(1, sizeof(*sp));
        if (sp == NULL)
            return kc_error_set(err, -ENOMEM, "out of memory");
        int rc = pod_from_proto(msg->pod, &sp->pod, err);
        if (rc < 0) {
            free(sp);
            return rc;
        }
        if (nominations_node(&h->sched.nominations, sp->pod->uid) != NULL ||
            (rc = nominations_set(&h->sched.nominations, sp->pod->uid, msg->node, sp)) < 0) {
            rc = kc_error_set(err, rc < 0 ? rc : -EINVAL, "nominated pod %s/%s: %s",
                              sp->pod->namespace, sp->pod->name,
                              rc < 0 ? "out of memory" : "listed twice");
            pod_free(sp->pod);
            free(sp);
            return rc;
        }
        h->nominated[h->nominated_count++] = sp;
    }
    return 0;
}

static int harness_join_group(struct plugin_host *h, struct evaluated *ev,
                              const Kcycle__V1__HarnessGroupCycle *position, struct kc_error *err);

static int pick_evaluated(struct plugin_host *h, const struct evaluation *e,
                          const Kcycle__V1__Evaluate *call, Kcycle__V1__EvaluateReply *r,
                          struct scratch *sc);

/* One pod's evaluation into reply->evaluate; *out (when given): the pod's entry in
 * h->evaluated. pick: answer Evaluate.pick here when the evaluation found nodes
 * (pick_evaluated). */
static int evaluate_pod(struct plugin_host *h, const Kcycle__V1__Evaluate *call,
                        Kcycle__V1__Reply *reply, struct scratch *sc, struct evaluated **out,
                        bool pick)
{
    struct scheduler *s = &h->sched;
    if (call->pod == NULL)
        return reply_error(reply, sc, "evaluate without a pod");
    for (size_t i = 0; i < call->n_candidates; i++)
        if (call->candidates[i] >= s->cache.node_count)
            return reply_error(reply, sc,
                               "evaluate: candidate %zu is node index %u, but the replica has %u "
                               "nodes",
                               i, call->candidates[i], s->cache.node_count);
    struct kc_error err = {{0}};
    struct evaluated *ev = calloc(1, sizeof(*ev));
    if (ev == NULL)
        return reply_error(reply, sc, "evaluate: out of memory");
    int rc = pod_from_proto(call->pod, &ev->pod, &err);
    if (rc < 0) {
        free(ev);
        return reply_error(reply, sc, "evaluate: %s", err.message);
    }
    ev->attempt = call->attempt;
    struct evaluated *old = strmap_get(&h->evaluated, ev->pod->uid);
    if (old != NULL)
        evaluated_remove(h, old); /* with any waiting mirror of its cycle */
    ev->cycle = evaluation_cycle_new(s, ev->pod);
    if (ev->cycle == NULL || strmap_put(&h->evaluated, ev->pod->uid, ev) < 0 ||
        (h->capture_logs && harness_join_group(h, ev, call->harness_group, &err) < 0)) {
        if (err.message[0] != '\0') {
            strmap_remove(&h->evaluated, ev->pod->uid);
            evaluated_free(ev);
            return reply_error(reply, sc, "evaluate: %s", err.message);
        }
        evaluated_free(ev);
        return reply_error(reply, sc, "evaluate: out of memory");
    }
    /* an empty list means no candidates (PreFilter still runs), unless all_nodes says every
     * node from `start`, in rotated order */
    static const uint32_t no_candidates[1];
    const uint32_t *candidates = call->n_candidates > 0 ? call->candidates : no_candidates;
    if (call->all_nodes) {
        candidates = NULL;
        s->next_start_node = call->start < s->cache.node_count ? call->start : 0;
    }
    if (mirror_nominated(h, call, &err) < 0) {
        forget_nominated(h);
        return reply_error(reply, sc, "evaluate: %s", err.message);
    }
    struct evaluation e;
    scheduler_evaluate(s, ev->cycle, candidates, (uint32_t)call->n_candidates, call->want,
                       call->score, &e);
    forget_nominated(h);
    Kcycle__V1__EvaluateReply *r = scratch_alloc(sc, sizeof(*r));
    if (r != NULL) {
        kcycle__v1__evaluate_reply__init(r);
        if (pick && e.status == KC_SUCCESS && e.found > 0) {
            fill_evaluation(h, &(struct evaluation){.status = e.status,
                                                   .message = e.message,
                                                   .rejectors = e.rejectors,
                                                   .processed = e.processed},
                            r, sc); /* all but the feasible list and scores, which pick drops */
            if (pick_evaluated(h, &e, call, r, sc) < 0) {
                evaluation_clear(&e);
                return reply_error(reply, sc, "evaluate: out of memory picking a node");
            }
        } else {
            fill_evaluation(h, &e, r, sc);
        }
        reply->result_case = KCYCLE__V1__REPLY__RESULT_EVALUATE;
        reply->evaluate = r;
        if (call->node_rejectors && e.status == KC_SUCCESS &&
            fill_node_rejectors(h, call, r, sc) < 0) {
            evaluation_clear(&e);
            return reply_error(reply, sc, "evaluate: out of memory for node_rejectors");
        }
    }
    log_debug("evaluate %s/%s: status %d, %u of %zu candidates feasible", ev->pod->namespace,
              ev->pod->name, (int)e.status, e.found, call->n_candidates);
    evaluation_clear(&e);
    if (out != NULL)
        *out = ev;
    return 0;
}

/* ---- the host picks (Evaluate.pick, EvaluateGroup) ---- */

/* The node the scheduler would pick from r, as its cycle does with this host the only one that
 * scores: the weighted sum of the clamped scores, the highest total (*total), ties broken by
 * reservoir sampling from the scheduler's generator (*rng advances as the scheduler's does).
 * totals: room for r's feasible nodes. */
static int32_t host_pick(const Kcycle__V1__EvaluateReply *r, const int64_t *weights,
                         size_t weight_count, uint64_t *rng, int64_t *totals, int64_t *total)
{
    size_t found = r->n_feasible;
    *total = 0;
    if (found == 0)
        return -1;
    /* the first scorer sets the totals, so they are not cleared first */
    bool set = false;
    for (size_t k = 0; k < r->n_scores; k++) {
        const Kcycle__V1__PluginScores *ps = r->scores[k];
        if (ps->plugin >= weight_count || ps->n_scores != found)
            continue;
        int64_t weight = weights[ps->plugin];
        if (!set)
            for (size_t i = 0; i < found; i++)
                totals[i] = scheduler_score_clamped(ps->scores[i]) * weight;
        else
            for (size_t i = 0; i < found; i++)
                totals[i] += scheduler_score_clamped(ps->scores[i]) * weight;
        set = true;
    }
    if (!set)
        memset(totals, 0, found * sizeof(*totals));
    if (found == 1)
        return (int32_t)r->feasible[0]; /* the scheduler draws nothing for one node */
    uint32_t best = scheduler_best_total(totals, (uint32_t)found, rng);
    *total = totals[best];
    return (int32_t)r->feasible[best];
}

/* Evaluate.pick for an evaluation that found nodes, from the evaluation itself: what
 * fill_evaluation, host_pick and make_picked answer, without building the feasible list and
 * the score arrays that make_picked drops (about a tenth of the host's instructions per pod
 * with 500 feasible nodes, docs/benchmarks.md). r has the rest of the evaluation. */
static int pick_evaluated(struct plugin_host *h, const struct evaluation *e,
                          const Kcycle__V1__Evaluate *call, Kcycle__V1__EvaluateReply *r,
                          struct scratch *sc)
{
    const struct scheduler *s = &h->sched;
    const struct framework *fw = s->fw;
    uint32_t found = e->found, best = 0;
    uint64_t rng = call->rng;
    int64_t total = 0;
    if (found > 1) { /* host_pick draws nothing for one node, and its total stays 0 */
        int64_t *totals = scratch_bump(sc, found * sizeof(*totals));
        if (totals == NULL)
            return -ENOMEM;
        /* the scorers fill_scores lists, in its order, weighted as host_pick weighs them */
        bool set = false;
        for (uint32_t k = 0; k < fw->phase_count[PHASE_SCORE]; k++) {
            const struct plugin *p = fw->phase[PHASE_SCORE][k];
            uint32_t plugin = h->hello_index[p->index];
            if (!(e->scored & (1ull << p->index)) || plugin >= call->n_weights)
                continue;
            int64_t weight = call->weights[plugin];
            const int64_t *scores = evaluation_scores(s, k);
            for (uint32_t i = 0; i < found; i++) {
                int64_t weighted = scheduler_score_clamped(scores[i]) * weight;
                totals[i] = set ? totals[i] + weighted : weighted;
            }
            set = true;
        }
        if (!set)
            memset(totals, 0, found * sizeof(*totals));
        best = scheduler_best_total(totals, found, &rng);
        total = totals[best];
    }
    r->picked = true;
    r->found = found;
    r->chosen = s->feasible[best]->index;
    r->chosen_total = total;
    r->last_feasible = s->feasible[found - 1]->index;
    r->rng = rng;
    r->n_feasible = 0;
    r->feasible = NULL;
    return 0;
}

/* Evaluate.pick: the answer is the choice instead of the feasible list and the scores. */
static void make_picked(Kcycle__V1__EvaluateReply *r, int32_t chosen, int64_t total,
                        uint64_t rng)
{
    if (r->status != KC_SUCCESS || r->n_feasible == 0 || chosen < 0)
        return;
    r->picked = true;
    r->found = (uint32_t)r->n_feasible;
    r->chosen = (uint32_t)chosen;
    r->chosen_total = total;
    r->last_feasible = r->feasible[r->n_feasible - 1];
    r->rng = rng;
    r->n_feasible = 0;
    r->feasible = NULL;
    r->n_scores = 0;
    r->scores = NULL;
}

static int serve_phase(struct plugin_host *h, const Kcycle__V1__PhaseCall *call,
                       Kcycle__V1__Reply *reply, struct scratch *sc);

/* Evaluate.reserve: the picked node's assumption, kept (as a group member's is) until the
 * scheduler's Assume confirms it, and this host's Reserve call on it, answered in r->reserve. */
static int evaluate_reserve(struct plugin_host *h, const Kcycle__V1__Evaluate *call,
                            Kcycle__V1__EvaluateReply *r, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    struct evaluated *ev = strmap_get(&h->evaluated, call->pod->uid);
    struct evaluated **kept = calloc(1, sizeof(*kept));
    uint32_t *nodes = calloc(1, sizeof(*nodes));
    uint64_t *generations = calloc(1, sizeof(*generations));
    uint64_t before = s->cache.generation;
    const char *node = s->cache.nodes[r->chosen].node->name;
    if (ev == NULL || kept == NULL || nodes == NULL || generations == NULL ||
        scheduler_assume(s, ev->pod, node) < 0) {
        free(kept);
        free(nodes);
        free(generations);
        return 0; /* no reserve answer: the scheduler calls Reserve as usual */
    }
    kept[0] = ev;
    nodes[0] = r->chosen;
    generations[0] = s->cache.generation;
    h->kept = kept;
    h->kept_nodes = nodes;
    h->kept_generations = generations;
    h->kept_count = 1;
    h->kept_confirmed = 0;
    h->kept_generation_before = before;
    Kcycle__V1__PhaseCall phase = KCYCLE__V1__PHASE_CALL__INIT;
    phase.phase = KCYCLE__V1__PHASE__PHASE_RESERVE;
    phase.pod_uid = call->pod->uid;
    phase.node = (char *)node;
    Kcycle__V1__Reply answer = KCYCLE__V1__REPLY__INIT;
    if (serve_phase(h, &phase, &answer, sc) < 0 ||
        answer.result_case != KCYCLE__V1__REPLY__RESULT_PHASE)
        return 0; /* Reserve did not run: no answer, the assumption is undone unconfirmed */
    h->kept_reserved = true; /* unconfirmed, it is undone with Unreserve */
    r->reserve = answer.phase;
    return 0;
}

static int serve_evaluate(struct plugin_host *h, const Kcycle__V1__Evaluate *call,
                          Kcycle__V1__Reply *reply, struct scratch *sc)
{
    drop_unchosen(h);
    int rc = evaluate_pod(h, call, reply, sc, NULL, call->pick);
    if (rc < 0 || !call->pick || reply->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE)
        return rc;
    Kcycle__V1__EvaluateReply *r = reply->evaluate;
    if (r->picked) /* pick_evaluated answered */
        return call->reserve ? evaluate_reserve(h, call, r, sc) : 0;
    int64_t *totals = scratch_bump(sc, (r->n_feasible + 1) * sizeof(*totals)); /* host_pick's */
    if (totals == NULL)
        return reply_error(reply, sc, "evaluate: out of memory picking a node");
    uint64_t rng = call->rng;
    int64_t total;
    int32_t chosen = host_pick(r, call->weights, call->n_weights, &rng, totals, &total);
    make_picked(r, chosen, total, rng);
    if (call->reserve && r->picked)
        return evaluate_reserve(h, call, r, sc);
    return 0;
}

/* ---- a group cycle's members in one request (plugin.proto's EvaluateGroup) ---- */

/* Undo the group's tentative assumptions in reverse; the replica's generation goes back to
 * what the scheduler's deltas will count from. */
static void group_undo(struct plugin_host *h, struct evaluated **assumed, size_t count,
                       uint64_t generation)
{
    for (size_t i = count; i-- > 0;)
        scheduler_forget(&h->sched, assumed[i]->pod);
    h->sched.cache.generation = generation;
}

/* The index of a member whose pod has the uid of one before it, or -1. The members' tentative
 * assumptions are undone by pod (group_undo), and the replica keeps one evaluation per uid:
 * a repeated uid would undo a member whose evaluation the repeat already replaced and freed. */
static ptrdiff_t group_repeated_member(const Kcycle__V1__EvaluateGroup *g)
{
    for (size_t k = 1; k < g->n_members; k++) {
        const Kcycle__V1__Pod *pod = g->members[k]->pod;
        if (pod == NULL || pod->uid == NULL)
            continue; /* refused by evaluate_pod, before anything is assumed */
        for (size_t i = 0; i < k; i++) {
            const Kcycle__V1__Pod *before = g->members[i]->pod;
            if (before != NULL && before->uid != NULL && strcmp(before->uid, pod->uid) == 0)
                return (ptrdiff_t)k;
        }
    }
    return -1;
}

static int serve_evaluate_group(struct plugin_host *h, const Kcycle__V1__EvaluateGroup *g,
                                Kcycle__V1__Reply *reply, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    ptrdiff_t repeated = group_repeated_member(g);
    if (repeated >= 0)
        return reply_error(reply, sc, "evaluate_group: member %td repeats the pod %s", repeated,
                           g->members[repeated]->pod->uid);
    drop_unchosen(h);
    size_t n = g->n_members;
    Kcycle__V1__EvaluateGroupReply *out = scratch_alloc(sc, sizeof(*out));
    Kcycle__V1__EvaluateReply **members = scratch_alloc(sc, (n + 1) * sizeof(*members));
    int32_t *chosen = scratch_alloc(sc, (n + 1) * sizeof(*chosen));
    uint32_t *starts = scratch_alloc(sc, (n + 1) * sizeof(*starts));
    struct evaluated **assumed = calloc(n + 1, sizeof(*assumed));
    uint32_t *nodes_of = g->keep_assumed ? calloc(n + 1, sizeof(*nodes_of)) : NULL;
    uint64_t *generations = g->keep_assumed ? calloc(n + 1, sizeof(*generations)) : NULL;
    int64_t *totals = calloc((size_t)s->cache.node_count + 1, sizeof(*totals));
    if (out == NULL || members == NULL || chosen == NULL || starts == NULL || assumed == NULL ||
        totals == NULL || (g->keep_assumed && (nodes_of == NULL || generations == NULL))) {
        free(assumed);
        free(nodes_of);
        free(generations);
        free(totals);
        return reply_error(reply, sc, "evaluate_group: out of memory");
    }
    kcycle__v1__evaluate_group_reply__init(out);
    uint64_t generation = s->cache.generation, rng = g->rng;
    uint32_t start = n > 0 ? g->members[0]->start : 0;
    size_t placed = 0;
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        Kcycle__V1__Evaluate *call = g->members[k];
        call->start = start;
        Kcycle__V1__Reply one = KCYCLE__V1__REPLY__INIT;
        struct evaluated *ev = NULL;
        evaluate_pod(h, call, &one, sc, &ev, false); /* the group picks with its own rng */
        if (one.result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE) {
            rc = reply_error(reply, sc, "evaluate_group: member %zu: %s", k,
                             one.error != NULL ? one.error : "no evaluation");
            break;
        }
        const Kcycle__V1__EvaluateReply *r = one.evaluate;
        members[k] = one.evaluate;
        starts[k] = start;
        int64_t total = 0;
        chosen[k] = r->status == KC_SUCCESS
                        ? host_pick(r, g->weights, g->n_weights, &rng, totals, &total)
                        : -1;
        if (chosen[k] < 0)
            continue;
        /* the scheduler's rotation: past the last node the search needed */
        uint32_t nodes = s->cache.node_count;
        if (call->want > 0 && r->n_feasible == call->want && nodes > 0)
            start = (r->feasible[r->n_feasible - 1] + 1) % nodes;
        if (call->pick)
            make_picked(one.evaluate, chosen[k], total, rng);
        const char *node = s->cache.nodes[chosen[k]].node->name;
        if (scheduler_assume(s, ev->pod, node) < 0) {
            rc = reply_error(reply, sc, "evaluate_group: member %zu: cannot assume %s/%s on %s",
                             k, ev->pod->namespace, ev->pod->name, node);
            break;
        }
        if (nodes_of != NULL) {
            nodes_of[placed] = (uint32_t)chosen[k];
            generations[placed] = s->cache.generation;
        }
        assumed[placed++] = ev;
    }
    free(totals);
    if (rc < 0 || !g->keep_assumed || placed == 0) {
        group_undo(h, assumed, placed, generation);
        free(assumed);
        free(nodes_of);
        free(generations);
        if (rc < 0)
            return rc;
    } else {
        /* kept until the next request's deltas confirm them (kept_confirm) or undo them */
        h->kept = assumed;
        h->kept_nodes = nodes_of;
        h->kept_generations = generations;
        h->kept_count = placed;
        h->kept_confirmed = 0;
        h->kept_generation_before = generation;
    }
    out->n_members = out->n_chosen = out->n_starts = n;
    out->members = members;
    out->chosen = chosen;
    out->starts = starts;
    reply->result_case = KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP;
    reply->evaluate_group = out;
    return 0;
}

/* ---- phases after the scheduler chose a node ---- */

static bool phase_from_proto(Kcycle__V1__Phase wire, enum phase *out)
{
    switch (wire) {
    case KCYCLE__V1__PHASE__PHASE_POST_FILTER: *out = PHASE_POST_FILTER; return true;
    case KCYCLE__V1__PHASE__PHASE_RESERVE: *out = PHASE_RESERVE; return true;
    case KCYCLE__V1__PHASE__PHASE_UNRESERVE: *out = PHASE_UNRESERVE; return true;
    case KCYCLE__V1__PHASE__PHASE_PERMIT: *out = PHASE_PERMIT; return true;
    case KCYCLE__V1__PHASE__PHASE_PRE_BIND: *out = PHASE_PRE_BIND; return true;
    case KCYCLE__V1__PHASE__PHASE_BIND: *out = PHASE_BIND; return true;
    case KCYCLE__V1__PHASE__PHASE_POST_BIND: *out = PHASE_POST_BIND; return true;
    default: return false;
    }
}

static void fill_annotations(const struct kv_list *annotations, Kcycle__V1__PhaseReply *r,
                             struct scratch *sc)
{
    if (annotations->count == 0)
        return;
    Kcycle__V1__Label **labels = scratch_alloc(sc, annotations->count * sizeof(*labels));
    if (labels == NULL)
        return;
    for (uint32_t i = 0; i < annotations->count; i++) {
        Kcycle__V1__Label *label = scratch_alloc(sc, sizeof(*label));
        if (label == NULL)
            return;
        kcycle__v1__label__init(label);
        /* copies: the cycle may be freed before the reply is packed */
        label->key = text_or_empty(sc, annotations->items[i].key);
        label->value = text_or_empty(sc, annotations->items[i].value);
        labels[r->n_annotations++] = label;
    }
    r->annotations = labels;
}

/* The object updates PreBind asked for travel back to the scheduler, whose binder writes them;
 * taken from the cycle so a later call of the same binding does not send them twice. */
static void fill_writes(struct kc_cycle *cycle, Kcycle__V1__PhaseReply *r, struct scratch *sc)
{
    if (cycle->write_count == 0)
        return;
    Kcycle__V1__ObjectWrite **writes = scratch_alloc(sc, cycle->write_count * sizeof(*writes));
    for (uint32_t i = 0; writes != NULL && i < cycle->write_count; i++) {
        Kcycle__V1__ObjectWrite *w = scratch_alloc(sc, sizeof(*w));
        if (w == NULL)
            break;
        kcycle__v1__object_write__init(w);
        w->kind = text_or_empty(sc, cycle->writes[i].kind);
        w->namespace_ = text_or_empty(sc, cycle->writes[i].namespace);
        w->name = text_or_empty(sc, cycle->writes[i].name);
        w->patch = text_or_empty(sc, cycle->writes[i].patch);
        writes[r->n_object_writes++] = w;
    }
    r->object_writes = writes;
    cycle_drop_writes(cycle);
}

/* A phase call for a pod this host holds no cycle for: it restarted after the evaluation (the
 * snapshot brings the assumption, not the cycle), or the pod's attempt already ended here. Not a
 * protocol error, which would make the scheduler restart the host again: the pod's attempt fails
 * (and is retried), and Unreserve or PostBind, which would close a cycle that is not there, do
 * nothing. */
static int reply_unknown_pod(struct plugin_host *h, const Kcycle__V1__PhaseCall *call,
                             enum phase phase, Kcycle__V1__Reply *reply, struct scratch *sc)
{
    Kcycle__V1__PhaseReply *r = scratch_alloc(sc, sizeof(*r));
    if (r == NULL)
        return -1;
    kcycle__v1__phase_reply__init(r);
    const struct framework *fw = h->sched.fw;
    if (phase == PHASE_UNRESERVE || phase == PHASE_POST_BIND) {
        r->status = KC_SUCCESS;
        log_debug("phase %d for pod uid %s: no cycle here, nothing to do", (int)call->phase,
                  call->pod_uid);
    } else {
        r->status = KC_ERROR;
        char text[512];
        snprintf(text, sizeof(text),
                 "pod uid %s has no evaluation in this plugin host (it restarted after the "
                 "evaluation, or the pod's attempt already ended); the attempt fails and the pod "
                 "is retried",
                 call->pod_uid);
        r->message = text_or_empty(sc, text);
        if (fw->phase_count[phase] > 0)
            r->plugin = h->hello_index[fw->phase[phase][0]->index];
        log_warn("%s", text);
    }
    reply->result_case = KCYCLE__V1__REPLY__RESULT_PHASE;
    reply->phase = r;
    return 0;
}

/* A host whose plugins evaluate nothing (a binder, say) sees the pod first in the Assume delta
 * of its Reserve: its cycle starts here, on the assumed copy. */
static struct evaluated *evaluated_from_assumed(struct plugin_host *h, const char *uid)
{
    struct pod *pod = strmap_get(&h->assumed, uid);
    if (pod == NULL)
        return NULL;
    struct evaluated *ev = calloc(1, sizeof(*ev));
    if (ev == NULL)
        return NULL;
    ev->pod = pod;
    ev->borrowed = true;
    ev->chosen = true;
    ev->cycle = evaluation_cycle_new(&h->sched, pod);
    if (ev->cycle == NULL || strmap_put(&h->evaluated, pod->uid, ev) < 0) {
        evaluated_free(ev);
        return NULL;
    }
    return ev;
}

static int serve_phase(struct plugin_host *h, const Kcycle__V1__PhaseCall *call,
                       Kcycle__V1__Reply *reply, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    enum phase phase;
    if (!phase_from_proto(call->phase, &phase))
        return reply_error(reply, sc,
                           "phase call with phase %d: only Reserve, Unreserve, Permit, PreBind, "
                           "Bind and PostBind are called after an evaluation",
                           (int)call->phase);
    struct evaluated *ev = strmap_get(&h->evaluated, call->pod_uid);
    if (ev == NULL)
        ev = evaluated_from_assumed(h, call->pod_uid);
    if (ev == NULL)
        return reply_unknown_pod(h, call, phase, reply, sc);
    const struct cache_node *node = cache_node(&s->cache, call->node);
    if (node == NULL && phase != PHASE_UNRESERVE && phase != PHASE_POST_FILTER)
        return reply_error(reply, sc, "phase call for pod %s/%s: node '%s' is not in the replica",
                           ev->pod->namespace, ev->pod->name, call->node);
    struct kc_cycle *cycle = ev->cycle;
    if (cycle->node_name == NULL && call->node[0] != '\0' &&
        (cycle->node_name = strdup(call->node)) == NULL)
        return reply_error(reply, sc, "phase call: out of memory");
    ev->chosen = phase != PHASE_POST_FILTER; /* PostFilter: no node was chosen */
    /* the message of this call only, not of earlier phases */
    free(cycle->message);
    cycle->message = NULL;
    h->bind_requested = false;
    h->bind_result = h->capture_logs ? call->harness_bind_result : 0;
    cycle->what_if_calls = 0;
    uint32_t failed = UINT32_MAX, timeout_ms = 0;
    uint64_t waiting = 0;
    bool permit = phase == PHASE_PERMIT;
    cycle->write_result = h->capture_logs && call->write_result < 0 ? call->write_result : 0;
    kc_status st = scheduler_phase(s, cycle, phase, node, &failed, permit ? &timeout_ms : NULL,
                                   permit ? &waiting : NULL);
    cycle->write_result = 0;
    Kcycle__V1__PhaseReply *r = scratch_alloc(sc, sizeof(*r));
    if (r != NULL) {
        kcycle__v1__phase_reply__init(r);
        r->status = (int32_t)st;
        r->message = text_or_empty(sc, cycle->message);
        if (failed < s->fw->count)
            r->plugin = h->hello_index[failed];
        r->timeout_ms = st == KC_WAIT ? timeout_ms : 0;
        r->waiting = hello_bits(h, waiting);
        r->bind_requested = h->bind_requested;
        fill_annotations(&cycle->annotations, r, sc);
        fill_writes(cycle, r, sc);
        fill_preemption(h, cycle, r, sc);
        r->what_if_calls = h->capture_logs ? cycle->what_if_calls : 0;
        reply->result_case = KCYCLE__V1__REPLY__RESULT_PHASE;
        reply->phase = r;
    }
    log_debug("phase %d for %s/%s on %s: status %d", (int)call->phase, ev->pod->namespace,
              ev->pod->name, call->node, (int)st);
    if (phase == PHASE_UNRESERVE || phase == PHASE_POST_BIND)
        evaluated_remove(h, ev);
    return 0;
}

/* ---- preemption's what-if Filter ---- */

/* The cycle the what-if reuses: the pod's evaluation here in the asking attempt, or, when this
 * host has none (it restarted, nothing asked it to evaluate the pod, or its evaluation is of
 * another attempt: stale PreFilter state), a new one after PreFilter alone. */
static struct kc_cycle *what_if_cycle(struct plugin_host *h, const Kcycle__V1__Pod *msg,
                                      uint64_t attempt, struct kc_error *err)
{
    struct evaluated *ev = strmap_get(&h->evaluated, msg->uid);
    if (ev != NULL && (ev->attempt == 0 || attempt == 0 || ev->attempt == attempt))
        return ev->cycle;
    if (ev != NULL && ev->chosen) { /* its binding cycle still needs that state */
        kc_error_set(err, -EBUSY, "pod %s: attempt %llu is in its later phases, not %llu",
                     msg->uid, (unsigned long long)ev->attempt, (unsigned long long)attempt);
        return NULL;
    }
    if (ev != NULL)
        evaluated_remove(h, ev);
    ev = calloc(1, sizeof(*ev));
    if (ev == NULL) {
        kc_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    if (pod_from_proto(msg, &ev->pod, err) < 0) {
        free(ev);
        return NULL;
    }
    ev->cycle = evaluation_cycle_new(&h->sched, ev->pod);
    ev->attempt = attempt;
    if (ev->cycle == NULL || strmap_put(&h->evaluated, ev->pod->uid, ev) < 0) {
        evaluated_free(ev);
        kc_error_set(err, -ENOMEM, "out of memory");
        return NULL;
    }
    static const uint32_t no_candidates[1];
    struct evaluation e;
    scheduler_evaluate(&h->sched, ev->cycle, no_candidates, 0, 0, false, &e);
    evaluation_clear(&e);
    return ev->cycle;
}

/* The replica's pods on node that the scheduler named (serve_what_if checked each is there). */
static uint32_t what_if_removed(struct plugin_host *h, const Kcycle__V1__WhatIfNode *item,
                                const struct pod **out)
{
    for (size_t i = 0; i < item->n_removed; i++)
        out[i] = cache_pod(&h->sched.cache, item->removed[i])->pod;
    return (uint32_t)item->n_removed;
}

static Kcycle__V1__WhatIfVerdict *what_if_verdict(struct plugin_host *h, struct kc_cycle *cycle,
                                                  const Kcycle__V1__WhatIfNode *item,
                                                  struct pod *const *nominated, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    const struct cache_node *node = &s->cache.nodes[item->node];
    Kcycle__V1__WhatIfVerdict *v = scratch_alloc(sc, sizeof(*v));
    const struct pod **removed = scratch_alloc(sc, (item->n_removed + 1) * sizeof(*removed));
    const struct pod **added = scratch_alloc(sc, (item->n_added + 1) * sizeof(*added));
    if (v == NULL || removed == NULL || added == NULL)
        return NULL;
    kcycle__v1__what_if_verdict__init(v);
    uint32_t removed_count = what_if_removed(h, item, removed);
    for (size_t i = 0; i < item->n_added; i++)
        added[i] = nominated[item->added[i]];
    struct reason_count reasons[CYCLE_MAX_REASONS];
    uint32_t reason_count = 0;
    struct plugin *rejector = NULL;
    kc_status st = preempt_what_if_pass(cycle, node, removed, removed_count, added,
                                        (uint32_t)item->n_added, &rejector, reasons, &reason_count);
    v->status = (int32_t)st;
    /* a refusal names its plugin; one without (out of memory) names the first Filter plugin */
    if (st != KC_SUCCESS && rejector == NULL && s->fw->phase_count[PHASE_FILTER] > 0)
        rejector = s->fw->phase[PHASE_FILTER][0];
    if (st != KC_SUCCESS && rejector == NULL)
        v->status = KC_SUCCESS; /* no Filter plugin here: nothing refuses */
    else if (st != KC_SUCCESS)
        v->plugin = h->hello_index[rejector->index] + 1;
    char **texts = scratch_alloc(sc, (reason_count + 1) * sizeof(*texts));
    for (uint32_t i = 0; texts != NULL && v->status != KC_SUCCESS && i < reason_count; i++)
        texts[v->n_reasons++] = text_or_empty(sc, reasons[i].text);
    v->reasons = texts;
    reasons_clear(reasons, &reason_count);
    return texts != NULL ? v : NULL;
}

static int serve_what_if(struct plugin_host *h, const Kcycle__V1__WhatIf *call,
                         Kcycle__V1__Reply *reply, struct scratch *sc)
{
    struct scheduler *s = &h->sched;
    if (call->pod == NULL)
        return reply_error(reply, sc, "what_if without a pod");
    for (size_t i = 0; i < call->n_nodes; i++) {
        if (call->nodes[i]->node >= s->cache.node_count)
            return reply_error(reply, sc,
                               "what_if: item %zu is node index %u, but the replica has %u "
                               "nodes",
                               i, call->nodes[i]->node, s->cache.node_count);
        const Kcycle__V1__WhatIfNode *item = call->nodes[i];
        for (size_t k = 0; k < item->n_added; k++) {
            if (item->added[k] >= call->n_nominated)
                return reply_error(reply, sc, "what_if: item %zu adds nominated pod %u of %zu", i,
                                   item->added[k], call->n_nominated);
            for (size_t j = 0; j < k; j++)
                if (item->added[j] == item->added[k])
                    return reply_error(reply, sc, "what_if: item %zu adds nominated pod %u twice",
                                       i, item->added[k]);
        }
        /* a pod the scheduler removes that the replica lacks there: the replica is desynced,
         * and a verdict on it would be on another cluster */
        const char *name = s->cache.nodes[item->node].node->name;
        for (size_t k = 0; k < item->n_removed; k++) {
            const struct cache_pod *cp = cache_pod(&s->cache, item->removed[k]);
            if (cp == NULL || !cp->counted || cp->node_name == NULL ||
                strcmp(cp->node_name, name) != 0)
                return reply_error(reply, sc,
                                   "what_if: item %zu removes pod %s, which the replica does not "
                                   "count on node %s",
                                   i, item->removed[k], name);
        }
    }
    struct kc_error err = {{0}};
    struct kc_cycle *cycle = what_if_cycle(h, call->pod, call->attempt, &err);
    if (cycle == NULL)
        return reply_error(reply, sc, "what_if: %s", err.message);
    struct pod **nominated = scratch_alloc(sc, (call->n_nominated + 1) * sizeof(*nominated));
    Kcycle__V1__WhatIfReply *r = scratch_alloc(sc, sizeof(*r));
    Kcycle__V1__WhatIfVerdict **verdicts =
        scratch_alloc(sc, (call->n_nodes + 1) * sizeof(*verdicts));
    if (nominated == NULL || r == NULL || verdicts == NULL)
        return -1;
    kcycle__v1__what_if_reply__init(r);
    size_t decoded = 0;
    int rc = 0;
    for (; rc == 0 && decoded < call->n_nominated; decoded++)
        if ((rc = pod_from_proto(call->nominated[decoded], &nominated[decoded], &err)) < 0)
            break;
    for (size_t i = 0; rc == 0 && i < call->n_nodes; i++) {
        verdicts[i] = what_if_verdict(h, cycle, call->nodes[i], nominated, sc);
        if (verdicts[i] == NULL)
            rc = -ENOMEM;
        r->n_verdicts = i + 1;
    }
    for (size_t i = 0; i < decoded; i++)
        pod_free(nominated[i]);
    if (rc < 0)
        return reply_error(reply, sc, "what_if: %s",
                           err.message[0] != '\0' ? err.message : kc_strerror(rc));
    r->verdicts = verdicts;
    reply->result_case = KCYCLE__V1__REPLY__RESULT_WHAT_IF;
    reply->what_if = r;
    return 0;
}

/* ---- one request ---- */

/* One phase of a batched binding cycle: the reply of serve_phase, or an error status when the
 * call could not be served at all (that pod fails, the others go on). */
static Kcycle__V1__PhaseReply *batch_phase(struct plugin_host *h, Kcycle__V1__PhaseCall *call,
                                           Kcycle__V1__Phase phase, struct scratch *sc)
{
    Kcycle__V1__Reply one = KCYCLE__V1__REPLY__INIT;
    call->phase = phase;
    int rc = serve_phase(h, call, &one, sc);
    if (rc == 0 && one.result_case == KCYCLE__V1__REPLY__RESULT_PHASE)
        return one.phase;
    Kcycle__V1__PhaseReply *r = scratch_alloc(sc, sizeof(*r));
    if (r == NULL)
        return NULL;
    kcycle__v1__phase_reply__init(r);
    r->status = KC_ERROR;
    r->message = one.error != NULL && one.error[0] != '\0' ? one.error : (char *)"phase failed";
    return r;
}

/* Binding cycles that rode along: PreBind, Bind, PostBind for each pod, stopping at a failure. */
static int serve_batch(struct plugin_host *h, const Kcycle__V1__Request *req,
                       Kcycle__V1__Reply *reply, struct scratch *sc)
{
    Kcycle__V1__PhaseReply **out = scratch_alloc(sc, req->n_batch * sizeof(*out));
    if (out == NULL)
        return -1;
    for (size_t i = 0; i < req->n_batch; i++) {
        Kcycle__V1__PhaseCall call = *req->batch[i];
        Kcycle__V1__PhaseReply *r = batch_phase(h, &call, KCYCLE__V1__PHASE__PHASE_PRE_BIND, sc);
        if (r != NULL && r->status == KC_SUCCESS) {
            r = batch_phase(h, &call, KCYCLE__V1__PHASE__PHASE_BIND, sc);
            if (r != NULL && (r->status == KC_SUCCESS || r->status == KC_SKIP)) {
                Kcycle__V1__PhaseReply *post =
                    batch_phase(h, &call, KCYCLE__V1__PHASE__PHASE_POST_BIND, sc);
                (void)post; /* PostBind cannot fail the binding */
            }
        }
        if (r == NULL)
            return -1;
        out[i] = r;
    }
    reply->n_batch = req->n_batch;
    reply->batch = out;
    return 0;
}

static int serve_request(struct plugin_host *h, const Kcycle__V1__Request *req,
                         Kcycle__V1__Reply *reply, struct scratch *sc)
{
    bool hello = req->call_case == KCYCLE__V1__REQUEST__CALL_HELLO;
    if (hello) {
        if (h->open)
            return reply_error(reply, sc, "a second hello: this host already serves %u plugins",
                               h->plugin_count);
        struct kc_error err = {{0}};
        if (open_replica(h, req->hello, &err) < 0)
            return reply_error(reply, sc, "hello: %s", err.message);
    } else if (!h->open) {
        return reply_error(reply, sc, "no hello yet: the first request to a host is a hello");
    }
    if (h->diverged[0] != '\0')
        return reply_error(reply, sc,
                           "the replica is out of sync since a delta failed (%s); restart the "
                           "host",
                           h->diverged);
    if (req->snapshot && !hello && !replica_empty(h))
        return reply_error(reply, sc,
                           "snapshot sent to a host whose replica is not empty (%u nodes, %u "
                           "pods); a snapshot needs a fresh host",
                           h->sched.cache.node_count, h->sched.cache.pods.count);
    /* Skipping the generation check is the test harness's privilege (it changes the cluster
     * without tracking generations): from anyone else it would hide a replica out of sync. */
    if (req->adopt_generation && !h->capture_logs)
        return reply_error(reply, sc,
                           "adopt_generation is only for a test harness (a Hello with "
                           "capture_logs); this host checks generations");
    follow_clock(h, req);
    if (harness_waits_unknown_pod(h, req, reply, sc))
        return -1;
    if (apply_deltas(h, req) < 0)
        return reply_error(reply, sc, "%s", h->diverged);
    /* a hello or a snapshot starts the replica: it counts from the scheduler's generation */
    if (hello || req->snapshot)
        h->sched.cache.generation = req->generation;
    else if (req->generation != h->sched.cache.generation && !req->adopt_generation)
        return reply_error(
            reply, sc, "replica out of sync: scheduler generation %llu, replica %llu",
            (unsigned long long)req->generation, (unsigned long long)h->sched.cache.generation);
    if (req->n_batch > 0 && serve_batch(h, req, reply, sc) < 0)
        return reply_error(reply, sc, "out of memory serving the binding batch");
    switch (req->call_case) {
    case KCYCLE__V1__REQUEST__CALL_HELLO: return serve_hello(h, req->hello, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_EVALUATE: return serve_evaluate(h, req->evaluate, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_EVALUATE_GROUP:
        return serve_evaluate_group(h, req->evaluate_group, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_PHASE: return serve_phase(h, req->phase, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_QUEUE: return serve_queue(h, req->queue, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_WHAT_IF: return serve_what_if(h, req->what_if, reply, sc);
    case KCYCLE__V1__REQUEST__CALL_SYNC:
        reply->result_case = KCYCLE__V1__REPLY__RESULT_SYNCED;
        reply->synced = true;
        return 0;
    default: return reply_error(reply, sc, "a request with no call (unknown to this host?)");
    }
}

static int pack_reply(const Kcycle__V1__Reply *reply, uint8_t **out, size_t *len)
{
    size_t size = kcycle__v1__reply__get_packed_size(reply);
    uint8_t *buf = malloc(size != 0 ? size : 1);
    if (buf == NULL)
        return -ENOMEM;
    *len = kcycle__v1__reply__pack(reply, buf);
    *out = buf;
    return 0;
}

int plugin_host_handle(struct plugin_host *h, const uint8_t *request, size_t len, uint8_t **out,
                       size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    Kcycle__V1__Reply reply = KCYCLE__V1__REPLY__INIT;
    struct scratch sc = {.spare = &h->spare_chunk};
    ProtobufCAllocator arena = {scratch_protobuf_alloc, scratch_protobuf_free, &sc};
    Kcycle__V1__Request *req = kcycle__v1__request__unpack(&arena, len, request);
    if (req == NULL) {
        reply_error(&reply, &sc,
                    "the request (%zu bytes) does not decode as a kcycle.v1.Request; is the "
                    "scheduler of the same release?",
                    len);
    } else {
        reply.id = req->id;
        /* the wait for the next request polls as long as the scheduler says it comes soon;
         * a change also means the scheduler pinned this host or let it go: the mask is read
         * again now, not up to 16 ms later (a pinned thread does not poll) */
        if (req->spin_us != h->spin_us) {
            h->spin_us = req->spin_us;
            channel_set_spin_us(req->spin_us > 0 ? (int64_t)req->spin_us : -1);
            channel_affinity_changed();
        }
        log_debug("request %llu: call %d, %zu deltas, generation %llu%s",
                  (unsigned long long)req->id, (int)req->call_case, req->n_deltas,
                  (unsigned long long)req->generation, req->snapshot ? ", snapshot" : "");
        capture_start(h, &sc);
        serve_request(h, req, &reply, &sc);
        if (h->open && collect_waiting_actions(h, &reply, &sc) < 0)
            sc.failed = true;
        if (h->open && h->capture_logs) {
            fill_probe(h, req, &reply, &sc);
            fill_harness_facts(h, req, &reply, &sc);
        }
        capture_finish(h, &reply);
    }
    if (sc.failed) {
        Kcycle__V1__Reply fallback = KCYCLE__V1__REPLY__INIT;
        fallback.id = reply.id;
        fallback.error = (char *)"out of memory in the plugin host";
        reply = fallback;
    }
    int rc = pack_reply(&reply, out, out_len);
    scratch_free(&sc); /* the request's decoded message with it */
    return rc;
}

/* ---- lifecycle and the socket ---- */

int plugin_host_open(const struct plugin_host_options *opts, struct plugin_host **out,
                     struct kc_error *err)
{
    *out = NULL;
    struct plugin_host *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    atomic_init(&h->stop, false);
    pthread_mutex_init(&h->log_lock, NULL);
    h->parent = opts->parent;
    channel_init(&h->channel, -1);
    h->plugin_dir = opts->plugin_dir != NULL ? strdup(opts->plugin_dir) : NULL;
    if (opts->plugin_dir != NULL && h->plugin_dir == NULL) {
        plugin_host_close(h);
        return kc_error_set(err, -ENOMEM, "out of memory");
    }
    if (opts->fd > 0)
        channel_init(&h->channel, opts->fd);
    *out = h;
    return 0;
}

int plugin_host_serve(struct plugin_host *h)
{
    if (h->channel.fd < 0)
        return -EINVAL;
    while (!atomic_load(&h->stop)) {
        if (h->parent > 0 && getppid() != h->parent) {
            log_warn("the scheduler (pid %ld) went away; stopping", (long)h->parent);
            return 0;
        }
        /* a bounded wait, so the stop flag and the parent are looked at between requests */
        int ready = channel_wait(&h->channel, RECEIVE_POLL_MS);
        if (ready == 0)
            continue;
        const uint8_t *request = NULL;
        size_t len = 0;
        int rc = ready < 0 ? ready
                           : channel_recv(&h->channel, CHANNEL_REQUEST_MAX_BYTES, -1, &request,
                                          &len);
        if (rc == -EPIPE) {
            log_info("the scheduler closed the channel; stopping");
            return 0;
        }
        if (rc < 0) {
            /* a message over the cap or cut records: the stream cannot be trusted any more */
            log_error("receiving a request: %s", rc == -EMSGSIZE ? "over the size limit"
                                                 : rc == -EPROTO ? "not a whole message"
                                                                 : strerror(-rc));
            return -EIO;
        }
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        rc = plugin_host_handle(h, request, len, &reply, &reply_len);
        if (rc < 0) {
            log_error("out of memory: no reply can be sent; stopping");
            return rc;
        }
        rc = reply_len <= CHANNEL_REPLY_MAX_BYTES
                 ? channel_send(&h->channel, reply, reply_len, -1)
                 : -EMSGSIZE;
        free(reply);
        if (rc == -EPIPE) {
            log_info("the scheduler closed the channel; stopping");
            return 0;
        }
        if (rc < 0) {
            log_error("sending a reply of %zu bytes: %s", reply_len, strerror(-rc));
            return -EIO;
        }
    }
    return 0;
}

void plugin_host_stop(struct plugin_host *h)
{
    atomic_store(&h->stop, true);
}

void plugin_host_counts(const struct plugin_host *h, struct plugin_host_counts *out)
{
    out->pod_puts = h->pod_puts;
    out->pods_bound = h->pods_bound;
}

void plugin_host_close(struct plugin_host *h)
{
    if (h == NULL)
        return;
    channel_close(&h->channel);
    close_replica(h);
    if (h->capture_logs)
        hostapi_capture_logs_stop(h);
    pthread_mutex_destroy(&h->log_lock);
    free(h->log_lines);
    free(h->statuses);
    free(h->nominated);
    free(h->plugin_dir);
    free(h->spare_chunk);
    free(h);
}
