/* The scheduling cycle (PreFilter .. Permit), the binding cycle (WaitOnPermit .. PostBind)
 * and the handling of cluster events, with kube-scheduler's semantics (docs/architecture.md). */
#include "scheduler.h"

#include <pthread.h>
#include <stdatomic.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "backend.h"
#include "crash.h"
#include "cycle_internal.h"
#include "decision_log.h"
#include "evaluate.h"
#include "plugin.pb-c.h"
#include "log.h"
#include "model.h"
#include "monotonic.h"
#include "pod_fields.h"
#include "preempt.h"
#include "queue_calls.h"
#include "sched_metrics.h"

static struct scheduler *current_scheduler;

struct scheduler *scheduler_current(void)
{
    return current_scheduler;
}

void scheduler_enter(struct scheduler *s)
{
    current_scheduler = s;
}

int64_t scheduler_now(const struct scheduler *s)
{
    if (s->clock.now_ms != NULL)
        return s->clock.now_ms(s->clock.ctx);
    return monotonic_us() / 1000;
}

uint64_t scheduler_random_next(uint64_t *state)
{
    /* splitmix64: deterministic from the configured seed */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- events ---- */

static void dispatch_to(const struct framework *fw, const kc_event *ev)
{
    for (uint32_t i = 0; i < fw->phase_count[PHASE_EVENT]; i++) {
        struct plugin *p = fw->phase[PHASE_EVENT][i];
        crash_enter(p->name, "OnEvent");
        p->ops.on_event(p->self, ev);
        crash_leave();
    }
}

/* Every plugin with on_event hears of the event, in plugin order; replaced generations that
 * cycles still use hear of it too, so their remaining phases see the cluster as it is. */
static void dispatch(struct scheduler *s, const kc_event *ev)
{
    current_scheduler = s;
    dispatch_to(s->fw, ev);
    for (uint32_t i = 0; i < s->retiring_count; i++)
        dispatch_to(s->retiring[i], ev);
}

static void deliver_update(struct scheduler *s, kc_event_type type, const struct pod *pod,
                           const struct pod *old_pod, const struct cache_node *node)
{
    remote_journal(s, type, pod, node, NULL, NULL, NULL, NULL);
    if (s->fw->phase_count[PHASE_EVENT] == 0 && s->retiring_count == 0)
        return;
    kc_event ev = {
        .struct_size = sizeof(ev),
        .type = type,
        .pod = (const kc_pod *)pod,
        .old_pod = (const kc_pod *)old_pod,
        .node = (const kc_node *)node,
    };
    dispatch(s, &ev);
}

static void deliver(struct scheduler *s, kc_event_type type, const struct pod *pod,
                    const struct cache_node *node)
{
    deliver_update(s, type, pod, NULL, node);
}

/* A cluster event: parked pods whose rejectors care go back to the queue, and pods held by
 * a PreEnqueue plugin (not by schedulingGates, which only a pod update lifts, nor by their pod
 * group, which group.c releases) are asked again. */
static void requeue_on(struct scheduler *s, kc_event_type type)
{
    if (s->queue.unschedulable.count > 0) {
        /* from the plugins' current masks: a restarted plugin host may report new ones */
        uint64_t interested = 0;
        for (uint32_t i = 0; i < s->fw->count; i++)
            if (s->fw->plugins[i].requeue_mask & KC_EVENT_MASK(type))
                interested |= 1ull << i;
        queue_on_event(&s->queue, interested, scheduler_now(s));
    }
    if (s->fw->phase_count[PHASE_PRE_ENQUEUE] == 0)
        return;
    uint32_t count = s->queue.gated.count;
    if (count == 0)
        return;
    /* enqueue() may put a pod back on the list: walk a copy */
    struct sched_pod **held = malloc(count * sizeof(*held));
    if (held == NULL)
        return;
    memcpy(held, s->queue.gated.items, count * sizeof(*held));
    for (uint32_t i = 0; i < count; i++) {
        if (held[i]->pod->scheduling_gate_count > 0 || held[i]->group_held)
            continue;
        queue_remove(&s->queue, held[i]);
        scheduler_enqueue(s, held[i]);
    }
    free(held);
}

static void kept_object_free(struct kept_object *k)
{
    free(k->key);
    free(k->object.kind);
    free(k->object.namespace);
    free(k->object.name);
    free(k->object.json);
    free(k);
}

/* Custom objects are kept (keyed kind/namespace/name) so a restarted plugin host gets them in
 * its snapshot. */
static int remember_object(struct scheduler *s, kc_event_type type, const char *kind,
                           const char *namespace, const char *name, const char *json)
{
    char *key;
    if (asprintf(&key, "%s/%s/%s", kind, namespace != NULL ? namespace : "", name) < 0)
        return -ENOMEM;
    struct kept_object *old = strmap_remove(&s->objects, key);
    if (old != NULL)
        kept_object_free(old);
    if (type == KC_EVENT_OBJECT_DELETE) {
        free(key);
        return 0;
    }
    struct kept_object *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        free(key);
        return -ENOMEM;
    }
    k->key = key;
    k->object.kind = strdup(kind);
    k->object.namespace = namespace != NULL ? strdup(namespace) : NULL;
    k->object.name = strdup(name);
    k->object.json = strdup(json != NULL ? json : "{}");
    if (k->object.kind == NULL || k->object.name == NULL || k->object.json == NULL ||
        strmap_put(&s->objects, k->key, k) < 0) {
        kept_object_free(k);
        return -ENOMEM;
    }
    return 0;
}

int scheduler_object_event(struct scheduler *s, kc_event_type type, const char *kind,
                           const char *namespace, const char *name, const char *json)
{
    int rc = remember_object(s, type, kind, namespace, name, json);
    if (rc < 0)
        return rc;
    remote_journal(s, type, NULL, NULL, kind, namespace, name, json);
    kc_event ev = {
        .struct_size = sizeof(ev),
        .type = type,
        .object_kind = kind,
        .object_namespace = namespace,
        .object_name = name,
        .object_json = json,
    };
    dispatch(s, &ev);
    requeue_on(s, type);
    group_recheck(s); /* a PodGroup may have changed its quorum */
    return 0;
}

int scheduler_object_put(struct scheduler *s, const char *kind, const char *namespace,
                         const char *name, const char *json)
{
    char key[1024];
    snprintf(key, sizeof(key), "%s/%s/%s", kind, namespace != NULL ? namespace : "", name);
    kc_event_type type =
        strmap_get(&s->objects, key) != NULL ? KC_EVENT_OBJECT_UPDATE : KC_EVENT_OBJECT_ADD;
    return scheduler_object_event(s, type, kind, namespace, name, json);
}

int scheduler_node_add(struct scheduler *s, struct node *node)
{
    bool exists = cache_node(&s->cache, node->name) != NULL;
    int rc = cache_put_node(&s->cache, node);
    if (rc < 0) {
        node_free(node);
        return rc;
    }
    kc_event_type type = exists ? KC_EVENT_NODE_UPDATE : KC_EVENT_NODE_ADD;
    deliver(s, type, NULL, cache_node(&s->cache, node->name));
    requeue_on(s, type);
    return 0;
}

int scheduler_node_update(struct scheduler *s, struct node *node)
{
    return scheduler_node_add(s, node);
}

int scheduler_node_delete(struct scheduler *s, const char *name)
{
    struct cache_node *cn = cache_node(&s->cache, name);
    if (cn == NULL)
        return -ENOENT;
    deliver(s, KC_EVENT_NODE_DELETE, NULL, cn);
    return cache_remove_node(&s->cache, name);
}

static void sched_pod_free(struct sched_pod *sp)
{
    if (sp == NULL)
        return;
    group_leave(sp);
    pod_free(sp->pod);
    pod_free(sp->newer);
    free(sp->reason);
    free(sp);
}

/* Drop a pending pod we own (it was deleted, or assigned by someone else). */
static void forget_pending(struct scheduler *s, struct sched_pod *sp)
{
    switch (sp->state) {
    case SP_NONE:
    case SP_WAITING:
    case SP_BINDING:
        /* in flight: the attempt frees it when it ends; one waiting in Permit ends now */
        sp->deleted = true;
        for (uint32_t i = 0; i < s->waiting_count; i++)
            if (s->waiting[i]->cycle->sp == sp)
                waiting_pod_reject(s->waiting[i], NULL, "the pod was deleted or bound elsewhere");
        return;
    default:
        queue_remove(&s->queue, sp);
        strmap_remove(&s->pods, sp->pod->uid);
        sched_pod_free(sp);
    }
}

static const char *gate_reason(const struct pod *pod, char *buf, size_t size)
{
    snprintf(buf, size, "waiting for scheduling gates: %s%s", pod->scheduling_gates[0],
             pod->scheduling_gate_count > 1 ? ", ..." : "");
    return buf;
}

/* Into the queue: gated by schedulingGates or PreEnqueue, held until its group has a quorum,
 * else active. */
int scheduler_enqueue(struct scheduler *s, struct sched_pod *sp)
{
    char buf[512];
    const char *why = NULL;
    group_unhold(sp); /* group_hold below holds it again if its group still lacks the quorum */
    if (sp->pod->scheduling_gate_count > 0)
        why = gate_reason(sp->pod, buf, sizeof(buf));
    const char *holder = NULL;
    if (why == NULL && queue_call_pre_enqueue(s, sp->pod, buf, sizeof(buf), &holder) != KC_SUCCESS)
        why = buf;
    if (why == NULL)
        return group_hold(s, sp) ? 0 : queue_push_active(&s->queue, sp);
    free(sp->reason);
    sp->reason = strdup(why);
    return queue_push_gated(&s->queue, sp);
}

static int add_assigned(struct scheduler *s, struct pod *pod)
{
    preempt_pod_gone(s, pod->uid);
    struct sched_pod *sp = strmap_get(&s->pods, pod->uid);
    if (sp != NULL)
        forget_pending(s, sp); /* bound elsewhere while we had it pending */
    struct pod *old = strmap_get(&s->assigned, pod->uid);
    int rc = cache_add_pod(&s->cache, pod);
    if (rc < 0) {
        pod_free(pod);
        return rc;
    }
    if (old != NULL)
        strmap_remove(&s->assigned, old->uid);
    rc = strmap_put(&s->assigned, pod->uid, pod);
    if (rc < 0) {
        cache_remove_pod(&s->cache, pod->uid);
        pod_free(pod);
        pod_free(old);
        return rc;
    }
    kc_event_type type = old != NULL ? KC_EVENT_POD_UPDATE : KC_EVENT_POD_ADD;
    deliver_update(s, type, pod, old, cache_node(&s->cache, pod->node_name));
    group_assigned(s, pod, old);
    pod_free(old);
    requeue_on(s, type);
    return 0;
}

static int add_pending(struct scheduler *s, struct pod *pod)
{
    struct sched_pod *sp = strmap_get(&s->pods, pod->uid);
    if (sp != NULL) {
        if (sp->state == SP_NONE || sp->state == SP_WAITING || sp->state == SP_BINDING) {
            /* in flight: the attempt decides with the version it has; a failed attempt
             * retries with this one */
            pod_free(sp->newer);
            sp->newer = pod;
            return 0;
        }
        enum sched_pod_state was = sp->state;
        queue_remove(&s->queue, sp);
        pod->enqueue_ms = sp->pod->enqueue_ms;
        struct pod *old = sp->pod;
        sp->pod = pod;
        strmap_put(&s->pods, pod->uid, sp); /* the key now borrows the new uid string */
        preempt_pod_seen(s, sp, old);
        deliver_update(s, KC_EVENT_POD_UPDATE, pod, old, NULL);
        pod_free(old);
        group_join(s, sp);
        /* an update never skips backoff (the scheduler's own status patch comes back as one):
         * a pod still backing off goes back to backoffQ, as in kube-scheduler */
        if ((was == SP_BACKOFF || was == SP_UNSCHEDULABLE) && pod->scheduling_gate_count == 0 &&
            sp->backoff_until_ms > scheduler_now(s))
            return queue_push_backoff(&s->queue, sp, scheduler_now(s));
        return scheduler_enqueue(s, sp);
    }
    sp = calloc(1, sizeof(*sp));
    if (sp == NULL) {
        pod_free(pod);
        return -ENOMEM;
    }
    sp->pod = pod;
    pod->enqueue_ms = scheduler_now(s);
    if (queue_reserve(&s->queue, s->pods.count + 1) < 0 || strmap_put(&s->pods, pod->uid, sp) < 0) {
        sched_pod_free(sp);
        return -ENOMEM; /* the caller hears of it: the pod is not silently dropped */
    }
    preempt_pod_seen(s, sp, NULL);
    deliver(s, KC_EVENT_POD_ADD, pod, NULL);
    group_join(s, sp);
    int rc = scheduler_enqueue(s, sp);
    sched_metrics_incoming(s, sp, SCHED_EVENT_POD_ADD);
    return rc;
}

int scheduler_pod_add(struct scheduler *s, struct pod *pod)
{
    if (pod->node_name != NULL)
        return add_assigned(s, pod);
    if (pod->deleting || pod->phase == POD_SUCCEEDED || pod->phase == POD_FAILED ||
        strcmp(pod->scheduler_name, s->cfg->scheduler_name) != 0) {
        /* not ours to schedule (any more): a queued earlier version leaves the queue too */
        preempt_pod_gone(s, pod->uid);
        struct sched_pod *sp = strmap_get(&s->pods, pod->uid);
        if (sp != NULL)
            forget_pending(s, sp);
        pod_free(pod);
        return 0;
    }
    return add_pending(s, pod);
}

int scheduler_pod_update(struct scheduler *s, struct pod *pod)
{
    return scheduler_pod_add(s, pod);
}

int scheduler_pod_delete(struct scheduler *s, const char *uid)
{
    /* a nominated pod counted on its node for others: its deletion frees room there, as an
     * assigned pod's would (kube moves the parked pods then too) */
    bool nominated = nominations_node(&s->nominations, uid) != NULL;
    preempt_pod_gone(s, uid);
    struct pod *pod = strmap_get(&s->assigned, uid);
    if (pod != NULL) {
        deliver(s, KC_EVENT_POD_DELETE, pod, cache_node(&s->cache, pod->node_name));
        cache_remove_pod(&s->cache, uid);
        strmap_remove(&s->assigned, uid);
        group_assigned(s, NULL, pod);
        pod_free(pod);
        requeue_on(s, KC_EVENT_POD_DELETE);
        return 0;
    }
    struct sched_pod *sp = strmap_get(&s->pods, uid);
    if (sp == NULL)
        return -ENOENT;
    deliver(s, KC_EVENT_POD_DELETE, sp->pod, NULL);
    forget_pending(s, sp);
    if (nominated)
        requeue_on(s, KC_EVENT_POD_DELETE);
    return 0;
}

int scheduler_pod_status(const struct scheduler *s, const char *uid, const char **node,
                         const char **reason)
{
    const struct pod *pod = strmap_get(&s->assigned, uid);
    *node = NULL;
    *reason = NULL;
    if (pod != NULL) {
        *node = pod->node_name;
        return 1;
    }
    const struct sched_pod *sp = strmap_get(&s->pods, uid);
    if (sp == NULL)
        return -ENOENT;
    *reason = sp->reason;
    return 0;
}

/* ---- the end of an attempt ---- */

enum outcome { OUTCOME_UNSCHEDULABLE, OUTCOME_ERROR };

void scheduler_fail_pod(struct scheduler *s, struct sched_pod *sp, bool error, const char *message,
                        int64_t backoff_until_ms)
{
    int64_t now = scheduler_now(s);
    if (error)
        s->stats.error_attempts++;
    else
        s->stats.unschedulable_attempts++;
    sched_metrics_result(s, sp, error ? SCHED_RESULT_ERROR : SCHED_RESULT_UNSCHEDULABLE);
    if (sp->deleted) {
        strmap_remove(&s->pods, sp->pod->uid);
        sched_pod_free(sp);
        return;
    }
    char *reason = strdup(message != NULL ? message : "scheduling failed");
    if (reason != NULL) {
        free(sp->reason);
        sp->reason = reason;
    }
    if (sp->newer != NULL) {
        /* the pod changed during the attempt: the next one uses the new version */
        struct pod *old = sp->pod;
        sp->pod = sp->newer;
        sp->newer = NULL;
        sp->pod->enqueue_ms = old->enqueue_ms;
        strmap_put(&s->pods, sp->pod->uid, sp); /* the key now borrows the new uid string */
        preempt_pod_seen(s, sp, old);
        deliver_update(s, KC_EVENT_POD_UPDATE, sp->pod, old, NULL);
        pod_free(old);
    }
    if (s->sink.unschedulable != NULL)
        s->sink.unschedulable(s->sink.ctx, sp->pod, error ? "SchedulerError" : "Unschedulable",
                              sp->reason);
    sp->backoff_attempts = sp->attempts;
    sp->pod->enqueue_ms = now; /* kube's queue timestamp: when it last entered the queue */
    if (error)
        queue_push_backoff_until(&s->queue, sp, backoff_until_ms);
    else
        queue_park_until(&s->queue, sp, now, backoff_until_ms);
    sched_metrics_incoming(s, sp, SCHED_EVENT_ATTEMPT_FAILURE);
}

/* The attempt failed: tell the sink, then park (unschedulable) or back off (error), until at
 * least backoff_until_ms (0: the pod's own backoff). */
static void fail_attempt_until(struct scheduler *s, struct kc_cycle *cycle, enum outcome outcome,
                               const char *message, int64_t backoff_until_ms)
{
    struct sched_pod *sp = cycle->sp;
    /* message may live in the cycle: copy it before the cycle goes */
    char *reason = message != NULL ? strdup(message) : NULL;
    /* a cycle of a replaced generation recorded its rejectors as positions in that generation,
     * which mean other plugins in the active one (requeue_on): let any event wake the pod */
    if (cycle->fw != s->fw)
        sp->rejectors = 0;
    cycle_free(cycle);
    scheduler_fail_pod(s, sp, outcome == OUTCOME_ERROR, reason, backoff_until_ms);
    free(reason);
}

static void fail_attempt(struct scheduler *s, struct kc_cycle *cycle, enum outcome outcome,
                         const char *message)
{
    fail_attempt_until(s, cycle, outcome, message, 0);
}

static int forget(struct scheduler *s, const struct pod *pod, bool requeue);

/* Undo Reserve: Unreserve on every reserve plugin in reverse order, then forget the pod; the
 * freed room may let parked pods fit (requeue), unless it was only held within this cycle. */
static void unreserve_pod(struct scheduler *s, struct kc_cycle *cycle, bool requeue)
{
    /* in the reverse order of Reserve: plugin hosts first */
    struct phase_result r;
    cycle_phase(s, cycle, PHASE_UNRESERVE, cache_node(&s->cache, cycle->node_name), BACKENDS_ALL,
                &r);
    forget(s, cycle->sp->pod, requeue);
}

static void unreserve(struct scheduler *s, struct kc_cycle *cycle)
{
    unreserve_pod(s, cycle, true);
}

void scheduler_rollback(struct scheduler *s, struct kc_cycle *cycle)
{
    unreserve_pod(s, cycle, false);
}

/* Why a plugin failed the attempt in a phase other than Filter (malloc'd); a rejection (not an
 * error) makes the plugin one of the attempt's rejectors. */
static char *phase_failure(struct kc_cycle *cycle, struct plugin *p, const char *phase,
                           kc_status st, bool *error_out)
{
    bool error = st != KC_UNSCHEDULABLE && st != KC_UNRESOLVABLE;
    char *message;
    *error_out = error;
    if (error)
        message = text_format("plugin %s failed in %s (status %d)%s%s", p->name, phase, (int)st,
                              cycle->message != NULL ? ": " : "",
                              cycle->message != NULL ? cycle->message : "");
    else
        message = text_format("%s", cycle->message != NULL
                                        ? cycle->message
                                        : "rejected by a plugin after a node was chosen");
    if (!error)
        cycle->rejectors |= 1ull << p->index;
    return message;
}

/* A pod that held a reservation past its scheduling cycle (committed, waiting for its binding
 * or binding) failed: Unreserve, then it backs off with message. A member of a committed group
 * that this leaves short of its quorum is retried at once (group_binding_failed). */
static void fail_binding(struct scheduler *s, struct kc_cycle *cycle, const char *message)
{
    struct sched_pod *sp = cycle->sp;
    bool deleted = sp->deleted; /* fail_attempt frees a deleted pod */
    unreserve(s, cycle);
    fail_attempt(s, cycle, OUTCOME_ERROR, message);
    if (!deleted)
        group_binding_failed(s, sp);
}

/* A plugin failed the binding cycle in phase (PreBind, Bind). */
static void fail_in_phase(struct scheduler *s, struct kc_cycle *cycle, struct plugin *p,
                          const char *phase)
{
    bool error;
    char *message = phase_failure(cycle, p, phase, KC_ERROR, &error);
    cycle->sp->rejectors = cycle->rejectors;
    fail_binding(s, cycle, message);
    free(message);
}

void scheduler_release(struct scheduler *s, struct kc_cycle *cycle, const char *message,
                       int64_t backoff_until_ms)
{
    char *reason = strdup(message); /* Unreserve's events may change where message lives */
    unreserve(s, cycle);
    fail_attempt_until(s, cycle, OUTCOME_ERROR, reason != NULL ? reason : "released before binding",
                       backoff_until_ms);
    free(reason);
}

/* ---- phases after a node is chosen ---- */

static kc_status run_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                           const struct cache_node *node, uint32_t *failed, uint32_t *timeout_ms,
                           uint64_t *waiting)
{
    struct framework *fw = cycle->fw;
    const kc_pod *pod = (const kc_pod *)cycle->sp->pod;
    const kc_node *n = (const kc_node *)node;
    current_scheduler = s;
    if (phase == PHASE_UNRESERVE) {
        for (uint32_t i = fw->reserve_all_count; i-- > 0;) {
            struct plugin *p = fw->reserve_all[i];
            crash_enter(p->name, "Unreserve");
            if (p->ops.unreserve != NULL)
                p->ops.unreserve(p->self, cycle, pod, n);
            crash_leave();
        }
        return KC_SUCCESS;
    }
    if (waiting != NULL)
        *waiting = 0;
    if (timeout_ms != NULL)
        *timeout_ms = PERMIT_MAX_TIMEOUT_MS;
    bool bound = false;
    for (uint32_t i = 0; i < fw->phase_count[phase]; i++) {
        struct plugin *p = fw->phase[phase][i];
        kc_status st = KC_SUCCESS;
        uint32_t wait_ms = PERMIT_MAX_TIMEOUT_MS;
        int64_t started = sched_metrics_clock(s);
        crash_enter(p->name, crash_phase(phase));
        switch (phase) {
        case PHASE_POST_FILTER: st = p->ops.post_filter(p->self, cycle, pod); break;
        case PHASE_RESERVE: st = p->ops.reserve(p->self, cycle, pod, n); break;
        case PHASE_PERMIT: st = p->ops.permit(p->self, cycle, pod, n, &wait_ms); break;
        case PHASE_PRE_BIND: st = p->ops.pre_bind(p->self, cycle, pod, n); break;
        case PHASE_BIND: st = p->ops.bind(p->self, cycle, pod, n); break;
        case PHASE_POST_BIND: p->ops.post_bind(p->self, cycle, pod, n); break;
        default: crash_leave(); return KC_ERROR;
        }
        crash_leave();
        sched_metrics_plugin(s, p, phase, st, started);
        if (phase == PHASE_PERMIT && st == KC_WAIT) {
            if (wait_ms > PERMIT_MAX_TIMEOUT_MS)
                wait_ms = PERMIT_MAX_TIMEOUT_MS;
            if (timeout_ms != NULL && (waiting == NULL || *waiting == 0 || wait_ms < *timeout_ms)) {
                *timeout_ms = wait_ms;
                if (failed != NULL)
                    *failed = p->index; /* Permit: the plugin whose wait is the shortest */
            }
            if (waiting != NULL)
                *waiting |= 1ull << p->index;
            continue;
        }
        if (phase == PHASE_BIND && st == KC_SKIP)
            continue;
        if (st != KC_SUCCESS) {
            if (failed != NULL)
                *failed = p->index;
            return st;
        }
        if (phase == PHASE_BIND) {
            bound = true;
            break;
        }
    }
    if (phase == PHASE_BIND && !bound)
        return KC_SKIP;
    if (phase == PHASE_PERMIT && waiting != NULL && *waiting != 0)
        return KC_WAIT;
    return KC_SUCCESS;
}

kc_status scheduler_phase(struct scheduler *s, struct kc_cycle *cycle, enum phase phase,
                          const struct cache_node *node, uint32_t *failed, uint32_t *timeout_ms,
                          uint64_t *waiting)
{
    int64_t started = sched_metrics_now(s);
    kc_status st = run_phase(s, cycle, phase, node, failed, timeout_ms, waiting);
    sched_metrics_extension_point(s, phase, st, started);
    return st;
}

int scheduler_assume(struct scheduler *s, const struct pod *pod, const char *node)
{
    int rc = cache_assume(&s->cache, pod, node);
    if (rc == 0)
        preempt_pod_gone(s, pod->uid); /* placed: its nomination has served */
    if (rc == 0)
        deliver(s, KC_EVENT_POD_ASSUME, pod, cache_node(&s->cache, node));
    return rc;
}

static int forget(struct scheduler *s, const struct pod *pod, bool requeue)
{
    const struct cache_pod *cp = cache_pod(&s->cache, pod->uid);
    if (cp == NULL || !cp->assumed)
        return -ENOENT;
    char node[256];
    snprintf(node, sizeof(node), "%s", cp->node_name);
    int rc = cache_forget(&s->cache, pod->uid);
    if (rc == 0) {
        deliver(s, KC_EVENT_POD_FORGET, pod, cache_node(&s->cache, node));
        if (requeue)
            requeue_on(s, KC_EVENT_POD_FORGET);
    }
    return rc;
}

int scheduler_forget(struct scheduler *s, const struct pod *pod)
{
    return forget(s, pod, true);
}

struct kc_cycle *evaluation_cycle_new(struct scheduler *s, struct pod *pod)
{
    struct sched_pod *sp = calloc(1, sizeof(*sp));
    if (sp == NULL)
        return NULL;
    sp->pod = pod;
    struct kc_cycle *cycle = cycle_new(s, sp);
    if (cycle == NULL)
        free(sp);
    return cycle;
}

void evaluation_cycle_free(struct kc_cycle *cycle)
{
    if (cycle == NULL)
        return;
    struct sched_pod *sp = cycle->sp;
    cycle_free(cycle);
    free(sp); /* the pod belongs to the caller */
}

/* ---- the scheduling cycle ---- */

static int ensure_scratch(struct scheduler *s)
{
    uint32_t n = s->cache.node_count;
    if (n <= s->scratch_capacity)
        return 0;
    uint32_t capacity = n < 64 ? 64 : n;
    uint32_t scorers = s->fw->phase_count[PHASE_SCORE] + 1;
    free(s->feasible);
    free(s->feasible_flag);
    free(s->scores);
    free(s->totals);
    s->feasible = calloc(capacity, sizeof(*s->feasible));
    s->feasible_flag = calloc(capacity, 1);
    free(s->remote_marks);
    free(s->candidates);
    s->remote_marks = calloc(capacity, sizeof(*s->remote_marks));
    s->candidates = calloc(capacity, sizeof(*s->candidates));
    s->scores = calloc((size_t)capacity * scorers, sizeof(*s->scores));
    s->totals = calloc(capacity, sizeof(*s->totals));
    free(s->node_status);
    free(s->nominated_first);
    free(s->nominated_count);
    s->node_status = calloc(capacity, 1);
    free(s->node_rejector);
    free(s->node_winner);
    s->node_rejector = calloc(capacity, sizeof(*s->node_rejector));
    s->node_winner = calloc(capacity, sizeof(*s->node_winner));
    s->nominated_first = calloc(capacity, sizeof(*s->nominated_first));
    s->nominated_count = calloc(capacity, sizeof(*s->nominated_count));
    s->nominated_flagged_count = 0; /* the fresh arrays are zero: nothing left to clear */
    s->node_marks_clean = 0;        /* zero is KC_SUCCESS, not the cleared node_status */
    if (s->feasible == NULL || s->feasible_flag == NULL || s->scores == NULL || s->totals == NULL ||
        s->node_status == NULL || s->nominated_first == NULL || s->nominated_count == NULL ||
        s->node_rejector == NULL || s->node_winner == NULL) {
        s->scratch_capacity = 0;
        return -ENOMEM;
    }
    s->scratch_capacity = capacity;
    return 0;
}

/* kube-scheduler's numFeasibleNodesToFind. */
static uint32_t nodes_to_find(const struct scheduler *s, uint32_t n)
{
    const uint32_t min_nodes = 100;
    int32_t pct = s->cfg->percentage_of_nodes_to_score;
    if (n < min_nodes || pct >= 100)
        return n;
    if (pct <= 0) {
        pct = 50 - (int32_t)(n / 125);
        if (pct < 5)
            pct = 5;
    }
    uint32_t count = (uint32_t)((uint64_t)n * (uint32_t)pct / 100);
    return count < min_nodes ? min_nodes : count;
}

uint32_t scheduler_nodes_to_find(const struct scheduler *s, uint32_t n)
{
    return nodes_to_find(s, n);
}

/* Filter runs over the nodes from the rotating start index in chunks that the caller and the
 * workers take in order. Every taken chunk completes, so the finished chunks are always a
 * prefix of the order: once they hold `want` feasible nodes, the first `want` feasible nodes
 * in order are among them, and the result is the same whatever the number of threads. */
#define FILTER_CHUNK 32
#define PARALLEL_MIN_NODES 512
/* Threads pay off only when Filter is expensive: handing a job to the workers costs a few
 * microseconds, cheap filters (resource fit) take tens of nanoseconds a node. */
#define PARALLEL_MIN_WORK_NS 100000

struct filter_job {
    struct scheduler *s;
    struct kc_cycle *cycle;
    uint64_t skip;
    const uint32_t *candidates; /* node indices in order, or NULL: every node from start */
    const uint32_t *nominated;  /* by node index: nominated pods count there, or NULL */
    uint32_t n, start, want, chunk_count; /* n: how many candidates */
    _Atomic uint32_t next_chunk;
    _Atomic uint32_t found;
    _Atomic bool failed;
    pthread_mutex_t error_lock;
    char *error; /* first plugin error */
};

/* The node at position k of the job's order. */
static inline uint32_t job_node(const struct filter_job *job, uint32_t k)
{
    if (job->candidates != NULL)
        return job->candidates[k];
    uint32_t index = job->start + k;
    return index >= job->n ? index - job->n : index;
}

/* Filter and Score read the first 128 bytes of every node they visit (cache.h) and little
 * else, one node after another through plugin calls the CPU cannot look past: ask for the
 * node a few places ahead so its lines arrive while this one is examined. */
#define NODE_PREFETCH_AHEAD 4

static inline void prefetch_node(const struct cache_node *cn)
{
    __builtin_prefetch(cn);
    __builtin_prefetch((const char *)cn + 64);
}

/* kube's PreFilter Skip: the Filter plugins of the attempt, without those PreFilter skipped. */
static void prepare_filters(struct kc_cycle *cycle)
{
    const struct framework *fw = cycle->fw;
    cycle->filter_count = 0;
    for (uint32_t i = 0; i < fw->phase_count[PHASE_FILTER] && i < 64; i++) {
        struct plugin *p = fw->phase[PHASE_FILTER][i];
        if (!(cycle->filter_skip & (1ull << p->index)))
            cycle->filters[cycle->filter_count++] = p;
    }
    cycle->filters_ready = fw->phase_count[PHASE_FILTER] <= 64;
}

/* One Filter plugin on cn; its reasons go where kc_cycle_reject writes (cycle_filter_sink). */
static inline kc_status filter_one(struct kc_cycle *cycle, struct plugin *p,
                                   const struct cache_node *cn)
{
    if (cycle_filter_sink != NULL)
        cycle_filter_sink->calls = 0;
    crash_enter(p->name, "Filter");
    kc_status st = p->ops.filter(p->self, cycle, (const kc_pod *)cycle->sp->pod,
                                 (const kc_node *)cn);
    crash_leave();
    return st;
}

kc_status scheduler_filter_node(struct kc_cycle *cycle, uint64_t skip,
                                const struct cache_node *cn, struct plugin **rejector)
{
    /* the attempt's own skips: the list prepare_filters made; other skips: the bits */
    bool listed = cycle->filters_ready && skip == cycle->filter_skip;
    const struct framework *fw = cycle->fw;
    uint32_t count = listed ? cycle->filter_count : fw->phase_count[PHASE_FILTER];
    for (uint32_t i = 0; i < count; i++) {
        struct plugin *p = listed ? cycle->filters[i] : fw->phase[PHASE_FILTER][i];
        if (!listed && (skip & (1ull << p->index)))
            continue;
        kc_status st = filter_one(cycle, p, cn);
        if (st != KC_SUCCESS) {
            *rejector = p;
            return st;
        }
    }
    return KC_SUCCESS;
}

/* A plugin error in Filter: the first one is the attempt's message; the others stop. */
static void filter_failed(struct filter_job *job, const struct plugin *p,
                          const struct cache_node *cn, kc_status st)
{
    pthread_mutex_lock(&job->error_lock);
    if (job->error == NULL)
        job->error = text_format("plugin %s failed in Filter on node %s (status %d)",
                                 p != NULL ? p->name : "?", cn->node->name, (int)st);
    pthread_mutex_unlock(&job->error_lock);
    atomic_store(&job->failed, true);
}

/* cn refused by p with st (unschedulable or unresolvable): its reason, rejector and status. */
static inline void filter_rejected(struct scheduler *s, struct worker_state *ws,
                                   const struct reject_sink *sink, const struct cache_node *cn,
                                   const struct plugin *p, kc_status st)
{
    if (sink->calls == 0) /* the plugin gave no reason: name it */
        reasons_add(ws->reasons, &ws->reason_count, p->default_reason);
    ws->rejectors |= 1ull << p->index;
    s->node_rejector[cn->index] =
        (uint16_t)(p->index + 1) | (st == KC_UNRESOLVABLE ? NODE_REJECTOR_UNRESOLVABLE : 0);
    if (st == KC_UNRESOLVABLE) /* preemption cannot help here */
        s->node_status[cn->index] = KC_UNRESOLVABLE;
}

static inline kc_status filter_job_node(const struct filter_job *job, const struct cache_node *cn,
                                        struct plugin **p)
{
    return job->nominated != NULL && job->nominated[cn->index]
               ? preempt_filter_nominated(job->cycle, job->skip, cn, p)
               : scheduler_filter_node(job->cycle, job->skip, cn, p);
}

static void filter_worker(void *ctx, uint32_t worker)
{
    struct filter_job *job = ctx;
    struct scheduler *s = job->s;
    struct worker_state *ws = &s->worker_state[worker];
    struct reject_sink sink = {ws->reasons, &ws->reason_count, 0};
    cycle_filter_sink = &sink;
    for (;;) {
        if (atomic_load_explicit(&job->found, memory_order_relaxed) >= job->want ||
            atomic_load_explicit(&job->failed, memory_order_relaxed))
            break;
        uint32_t chunk = atomic_fetch_add_explicit(&job->next_chunk, 1, memory_order_relaxed);
        if (chunk >= job->chunk_count)
            break;
        uint32_t end = (chunk + 1) * FILTER_CHUNK < job->n ? (chunk + 1) * FILTER_CHUNK : job->n;
        uint32_t found = 0;
        for (uint32_t k = chunk * FILTER_CHUNK; k < end; k++) {
            if (k + NODE_PREFETCH_AHEAD < end)
                prefetch_node(&s->cache.nodes[job_node(job, k + NODE_PREFETCH_AHEAD)]);
            const struct cache_node *cn = &s->cache.nodes[job_node(job, k)];
            uint8_t feasible = 1;
            struct plugin *p = NULL;
            kc_status st = filter_job_node(job, cn, &p);
            if (st != KC_SUCCESS) {
                if (st != KC_UNSCHEDULABLE && st != KC_UNRESOLVABLE) {
                    filter_failed(job, p, cn, st);
                    cycle_filter_sink = NULL;
                    return;
                }
                filter_rejected(s, ws, &sink, cn, p, st);
                feasible = 0;
            }
            s->feasible_flag[k] = feasible;
            found += feasible;
        }
        atomic_fetch_add_explicit(&job->found, found, memory_order_relaxed);
    }
    cycle_filter_sink = NULL;
}

/* The caller alone (no workers, or Filter too cheap for them, as on most attempts): the nodes
 * one by one in order into s->feasible, stopping at exactly the node that completes the search,
 * as kube-scheduler's sequential path does. The answers of filter_worker on one thread, without
 * what sharing chunks needs per node (atomics, a flag per node and a second pass to collect),
 * and with the attempt's Filter plugins called directly: this loop is the runtime's own cost
 * per node (docs/benchmarks.md). Returns the feasible count; *visited: the nodes examined. */
static uint32_t filter_alone(struct filter_job *job, uint32_t *visited)
{
    struct scheduler *s = job->s;
    struct kc_cycle *cycle = job->cycle;
    struct worker_state *ws = &s->worker_state[0];
    struct reject_sink sink = {ws->reasons, &ws->reason_count, 0};
    /* the attempt's Filter plugins without the skipped ones (prepare_filters' list, or made
     * here for another skip set) */
    struct plugin *listed[64];
    struct plugin *const *filters = cycle->filters;
    uint32_t filter_count = cycle->filter_count;
    if (!cycle->filters_ready || job->skip != cycle->filter_skip) {
        const struct framework *fw = cycle->fw;
        filter_count = 0;
        for (uint32_t i = 0; i < fw->phase_count[PHASE_FILTER] && filter_count < 64; i++)
            if (!(job->skip & (1ull << fw->phase[PHASE_FILTER][i]->index)))
                listed[filter_count++] = fw->phase[PHASE_FILTER][i];
        filters = listed;
    }
    const kc_pod *pod = (const kc_pod *)cycle->sp->pod;
    struct cache_node *nodes = s->cache.nodes;
    uint32_t found = 0, k = 0;
    cycle_filter_sink = &sink;
    for (; k < job->n && found < job->want; k++) {
        if (k + NODE_PREFETCH_AHEAD < job->n)
            prefetch_node(&nodes[job_node(job, k + NODE_PREFETCH_AHEAD)]);
        const struct cache_node *cn = &nodes[job_node(job, k)];
        struct plugin *p = NULL;
        kc_status st = KC_SUCCESS;
        if (job->nominated != NULL && job->nominated[cn->index]) {
            st = preempt_filter_nominated(cycle, job->skip, cn, &p);
        } else {
            for (uint32_t i = 0; i < filter_count; i++) {
                p = filters[i];
                sink.calls = 0;
                crash_enter(p->name, "Filter");
                st = p->ops.filter(p->self, cycle, pod, (const kc_node *)cn);
                crash_leave();
                if (st != KC_SUCCESS)
                    break;
            }
        }
        if (st == KC_SUCCESS) {
            s->feasible[found++] = cn;
            continue;
        }
        if (st != KC_UNSCHEDULABLE && st != KC_UNRESOLVABLE) {
            filter_failed(job, p, cn, st);
            k++;
            break;
        }
        filter_rejected(s, ws, &sink, cn, p, st);
    }
    cycle_filter_sink = NULL;
    *visited = k;
    return found;
}

/* No Filter plugin runs for this attempt (none in process: they are all in plugin hosts, or
 * PreFilter skipped every one): every candidate passes, so the first `want` in order are the
 * answer, taken without visiting the others. A plugin host then filters them, and the visit
 * of every node here was most of the scheduler's own time per pod (docs/benchmarks.md). */
static bool no_filter_runs(const struct kc_cycle *cycle, uint64_t skip)
{
    if (cycle->filters_ready && skip == cycle->filter_skip)
        return cycle->filter_count == 0;
    const struct framework *fw = cycle->fw;
    for (uint32_t i = 0; i < fw->phase_count[PHASE_FILTER]; i++)
        if (!(skip & (1ull << fw->phase[PHASE_FILTER][i]->index)))
            return false;
    return true;
}

/* The cost of Filter per node on one thread, from the wall clock of attempts that ran it
 * alone. A sample can only be too high (the thread lost its core mid-attempt, which on a
 * loaded machine is most minutes), never too low, so the estimate is the least sample of each
 * FILTER_COST_WINDOW, smoothed: a smoothed mean of every sample crept up under load until the
 * threads took over, and on two busy cores their handoffs cost more than they save
 * (docs/benchmarks.md, "Threads for Filter"). A steady cost still gets through: every sample
 * of a window shows it. */
#define FILTER_COST_WINDOW 4

/* Each Filter set (the plugins PreFilter left) has its own estimate: with one, plain pods
 * between costly spread or affinity pods kept the least of every window at the plain cost,
 * and the costly pods never got the threads on a large cluster. A few sets are kept, the
 * least recently asked replaced. */
static struct filter_cost *filter_cost_of(struct scheduler *s, uint64_t skip)
{
    struct filter_cost *oldest = &s->filter_costs[0];
    for (size_t i = 0; i < sizeof(s->filter_costs) / sizeof(s->filter_costs[0]); i++) {
        struct filter_cost *c = &s->filter_costs[i];
        if (c->used && c->skip == skip) {
            c->last_run = s->filter_runs;
            return c;
        }
        if (!c->used || (oldest->used && c->last_run < oldest->last_run))
            oldest = c;
    }
    *oldest = (struct filter_cost){.skip = skip, .used = true, .last_run = s->filter_runs};
    return oldest;
}

int64_t scheduler_filter_cost(struct scheduler *s, uint64_t skip)
{
    return filter_cost_of(s, skip)->ns_per_node;
}

void scheduler_filter_cost_sample(struct scheduler *s, uint64_t skip, int64_t per_node)
{
    struct filter_cost *c = filter_cost_of(s, skip);
    if (c->samples == 0 || per_node < c->least)
        c->least = per_node;
    if (++c->samples < FILTER_COST_WINDOW)
        return;
    c->samples = 0;
    c->ns_per_node = c->ns_per_node == 0 ? c->least : (c->ns_per_node + c->least) / 2;
    s->filter_ns_per_node = c->ns_per_node;
}

/* Every node's node_status back to KC_UNSCHEDULABLE and node_rejector to 0 before an
 * evaluation marks the nodes it rejects. Most evaluations reject none (every node fits, or no
 * Filter runs in this process), so the arrays stay cleared and only an evaluation that marked
 * a node (filter_rejected, mark_restricted_out, merged_no_fit) leaves work for the next one:
 * clearing all 5,000 nodes of both arrays on every attempt was about 15,000 instructions per
 * pod in the scheduler and again in the plugin host (docs/benchmarks.md). */
static void node_marks_clear(struct scheduler *s)
{
    uint32_t n = s->cache.node_count;
    if (s->node_marks_clean >= n)
        return;
    memset(s->node_status, KC_UNSCHEDULABLE, n);
    memset(s->node_rejector, 0, n * sizeof(*s->node_rejector));
    s->node_marks_clean = n;
}

/* Returns the feasible count (s->feasible holds them in order), or -1 on a plugin error
 * (the cycle's message says which). */
static int64_t run_filters(struct scheduler *s, struct kc_cycle *cycle, uint64_t skip,
                           const uint32_t *candidates, uint32_t n, uint32_t want,
                           uint32_t *processed_out)
{
    struct filter_job job = {
        .s = s,
        .cycle = cycle,
        .skip = skip,
        .candidates = candidates,
        .n = n,
        .start = s->next_start_node < n ? s->next_start_node : 0,
        .want = want == 0 ? n : want,
        .chunk_count = (n + FILTER_CHUNK - 1) / FILTER_CHUNK,
        .error_lock = PTHREAD_MUTEX_INITIALIZER,
        .nominated = preempt_flag_nominated(s, cycle->sp->pod),
    };
    node_marks_clear(s);
    if (no_filter_runs(cycle, skip)) {
        uint32_t found = job.want < n ? job.want : n;
        for (uint32_t k = 0; k < found; k++)
            s->feasible[k] = &s->cache.nodes[job_node(&job, k)];
        *processed_out = found;
        return found;
    }
    uint32_t workers = s->workers.count + 1;
    for (uint32_t w = 0; w < workers; w++) {
        reasons_clear(s->worker_state[w].reasons, &s->worker_state[w].reason_count);
        s->worker_state[w].rejectors = 0;
    }
    /* Decide from the cost measured on the caller alone; every 64th attempt measures again
     * without threads, so a wrong guess does not feed itself. */
    bool probe = (s->filter_runs++ & 63) == 0;
    bool parallel =
        s->workers.count > 0 &&
        (s->force_parallel || (!probe && n >= PARALLEL_MIN_NODES &&
                               scheduler_filter_cost(s, skip) * job.want >
                                   PARALLEL_MIN_WORK_NS));
    int64_t started = monotonic_ns();
    uint32_t found = 0, visited = 0;
    if (parallel) {
        s->stats.parallel_filters++;
        workers_run(&s->workers, filter_worker, &job);
    } else
        found = filter_alone(&job, &visited);
    int64_t elapsed = monotonic_ns() - started;
    for (uint32_t w = 0; w < workers; w++) {
        struct worker_state *ws = &s->worker_state[w];
        if (ws->rejectors != 0) /* filter_rejected marked a node */
            s->node_marks_clean = 0;
        cycle->rejectors |= ws->rejectors;
        for (uint32_t i = 0; i < ws->reason_count; i++)
            reasons_add_count(s->reasons, &s->reason_count, ws->reasons[i].text,
                              ws->reasons[i].count);
    }
    if (atomic_load(&job.failed)) {
        cycle_fail(cycle, job.error != NULL ? job.error : "Filter failed");
        free(job.error);
        return -1;
    }
    if (!parallel) {
        *processed_out = visited;
        if (visited > 0)
            scheduler_filter_cost_sample(s, skip, elapsed / visited);
        return found;
    }
    /* the finished chunks are a prefix: collect the first `want` feasible nodes in order */
    uint32_t done = atomic_load(&job.next_chunk) * FILTER_CHUNK;
    if (done > n)
        done = n;
    uint32_t processed = done;
    for (uint32_t k = 0; k < done && found < job.want; k++) {
        if (!s->feasible_flag[k])
            continue;
        s->feasible[found++] = &s->cache.nodes[job_node(&job, k)];
        if (found == job.want)
            processed = k + 1;
    }
    *processed_out = processed;
    return found;
}

/* Score and NormalizeScore of each plugin not skipped by PreScore: 0, or -1 with the cycle
 * failed. */
static int run_scores(struct scheduler *s, struct kc_cycle *cycle, uint32_t found, uint64_t skip,
                      uint64_t *scored)
{
    struct framework *fw = cycle->fw;
    const kc_pod *pod = (const kc_pod *)cycle->sp->pod;
    for (uint32_t k = 0; k < fw->phase_count[PHASE_SCORE]; k++) {
        struct plugin *p = fw->phase[PHASE_SCORE][k];
        if (skip & (1ull << p->index))
            continue;
        int64_t *scores = &s->scores[(size_t)k * s->scratch_capacity];
        /* one observation per plugin over all the nodes, not one per node as kube: two clock
         * reads and an observation per node cost several percent of the attempt here */
        int64_t started = sched_metrics_clock(s);
        /* the crash record names the plugin for the whole loop: between its calls only the
         * loop's own stores and prefetches run */
        crash_enter(p->name, "Score");
        for (uint32_t i = 0; i < found; i++) {
            if (i + NODE_PREFETCH_AHEAD < found)
                prefetch_node(s->feasible[i + NODE_PREFETCH_AHEAD]);
            scores[i] = 0;
            kc_status st = p->ops.score(p->self, cycle, pod, (const kc_node *)s->feasible[i],
                                        &scores[i]);
            if (st != KC_SUCCESS) {
                crash_leave();
                sched_metrics_plugin(s, p, PHASE_SCORE, st, started);
                char *message = text_format("plugin %s failed in Score", p->name);
                cycle_fail(cycle, message != NULL ? message : "Score failed");
                free(message);
                return -1;
            }
        }
        crash_leave();
        sched_metrics_plugin(s, p, PHASE_SCORE, KC_SUCCESS, started);
        crash_enter(p->name, "NormalizeScore");
        kc_status normalized =
            p->ops.normalize_score != NULL
                ? p->ops.normalize_score(p->self, cycle, pod, (const kc_node *const *)s->feasible,
                                         scores, found)
                : KC_SUCCESS;
        crash_leave();
        if (normalized != KC_SUCCESS) {
            char *message = text_format("plugin %s failed in NormalizeScore", p->name);
            cycle_fail(cycle, message != NULL ? message : "NormalizeScore failed");
            free(message);
            return -1;
        }
        for (uint32_t i = 0; i < found; i++) {
            if (scores[i] < 0 || scores[i] > 100) {
                char *message =
                    text_format("plugin %s returned score %lld for node %s; scores "
                                "must be 0..100",
                                p->name, (long long)scores[i], s->feasible[i]->node->name);
                cycle_fail(cycle, message != NULL ? message : "invalid score");
                free(message);
                return -1;
            }
        }
        *scored |= 1ull << p->index;
    }
    return 0;
}

/* PreScore, Score and NormalizeScore on the feasible nodes: raw scores (0..100, unweighted)
 * of score plugin k in s->scores[k * capacity + i]. Sets *scored to the plugins that scored. */
static int compute_scores(struct scheduler *s, struct kc_cycle *cycle, uint32_t found,
                          uint64_t *scored)
{
    struct framework *fw = cycle->fw;
    const kc_pod *pod = (const kc_pod *)cycle->sp->pod;
    uint64_t skip = 0;
    *scored = 0;
    /* PreScore is an extension point of its own (kube times it apart from Score) */
    int64_t phase_started = sched_metrics_now(s);
    for (uint32_t i = 0; i < fw->phase_count[PHASE_PRE_SCORE]; i++) {
        struct plugin *p = fw->phase[PHASE_PRE_SCORE][i];
        int64_t started = sched_metrics_clock(s);
        crash_enter(p->name, "PreScore");
        kc_status st = p->ops.pre_score(p->self, cycle, pod);
        crash_leave();
        sched_metrics_plugin(s, p, PHASE_PRE_SCORE, st, started);
        if (st == KC_SKIP)
            skip |= 1ull << p->index;
        else if (st != KC_SUCCESS) {
            sched_metrics_extension_point(s, PHASE_PRE_SCORE, KC_ERROR, phase_started);
            return cycle_fail(cycle, "PreScore failed"), -1;
        }
    }
    sched_metrics_extension_point(s, PHASE_PRE_SCORE, KC_SUCCESS, phase_started);
    cycle->score_skip = skip;
    phase_started = sched_metrics_now(s);
    int rc = run_scores(s, cycle, found, skip, scored);
    sched_metrics_extension_point(s, PHASE_SCORE, rc < 0 ? KC_ERROR : KC_SUCCESS, phase_started);
    return rc;
}

int64_t evaluation_score(const struct scheduler *s, uint32_t k, uint32_t i)
{
    return s->scores[(size_t)k * s->scratch_capacity + i];
}

const int64_t *evaluation_scores(const struct scheduler *s, uint32_t k)
{
    return &s->scores[(size_t)k * s->scratch_capacity];
}

/* Weighted sum of the scores in s->totals (plus what the caller added), then the highest
 * total; ties broken by reservoir sampling from the seeded generator. */
static uint32_t select_node(struct scheduler *s, const struct framework *fw, uint32_t found,
                            uint64_t scored)
{
    for (uint32_t k = 0; k < fw->phase_count[PHASE_SCORE]; k++) {
        struct plugin *p = fw->phase[PHASE_SCORE][k];
        if (!(scored & (1ull << p->index)))
            continue;
        const int64_t *scores = &s->scores[(size_t)k * s->scratch_capacity];
        for (uint32_t i = 0; i < found; i++)
            s->totals[i] += scores[i] * p->weight;
    }
    return scheduler_best_total(s->totals, found, &s->rng);
}

uint32_t scheduler_best_total(const int64_t *totals, uint32_t found, uint64_t *rng)
{
    uint32_t best = 0, ties = 1;
    for (uint32_t i = 1; i < found; i++) {
        if (totals[i] > totals[best]) {
            best = i;
            ties = 1;
        } else if (totals[i] == totals[best]) {
            ties++;
            if (scheduler_random_next(rng) % ties == 0)
                best = i;
        }
    }
    return best;
}

/* The position of the best of found feasible nodes; the pod remembers its total weighted score
 * for the report (0 when a single node was feasible: nothing is scored then). */
static uint32_t pick_node(struct scheduler *s, struct kc_cycle *cycle, uint32_t found,
                          uint64_t scored)
{
    uint32_t best = found > 1 ? select_node(s, cycle->fw, found, scored) : 0;
    cycle->sp->score = found > 1 ? s->totals[best] : 0;
    return best;
}

bool scheduler_pod_score(const struct scheduler *s, const char *uid, int64_t *score)
{
    const struct sched_pod *sp = strmap_get(&s->pods, uid);
    if (sp == NULL)
        return false;
    *score = sp->score;
    return true;
}

/* PostFilter (preemption, group rejection) after any unschedulable evaluation, as kube runs it
 * on every FitError: in order until one succeeds (a preemption); the reasons of those that
 * did not become the attempt's post-filter message ("preemption: ..."), which kube appends to
 * the FitError. A preemption chosen here is carried out once they all ran. */
static void run_post_filters(struct scheduler *s, struct kc_cycle *cycle)
{
    char *message = cycle->message; /* the post-filter message is collected apart */
    cycle->message = NULL;
    struct phase_result r;
    bool succeeded = cycle_phase(s, cycle, PHASE_POST_FILTER, NULL, BACKENDS_ALL, &r) == KC_SUCCESS;
    free(cycle->post_filter_message);
    cycle->post_filter_message = succeeded ? NULL : cycle->message;
    if (succeeded)
        free(cycle->message);
    cycle->message = message;
    preempt_carry_out(s, cycle);
}

/* kube's FitError text: the Filter (or PreFilter) part, then the PostFilter message. Takes
 * message. */
static char *with_post_filter(const struct kc_cycle *cycle, char *message)
{
    const char *post = cycle->post_filter_message;
    if (message == NULL || post == NULL || post[0] == '\0')
        return message;
    size_t len = strlen(post);
    char *joined = text_format("%s %s%s", message, post, post[len - 1] == '.' ? "" : ".");
    if (joined == NULL)
        return message;
    free(message);
    return joined;
}

/* The pod is not placed: message (owned, may be NULL) says why. */
static void not_placed(struct placement *out, bool error, char *message)
{
    out->placed = false;
    out->error = error;
    free(out->message);
    out->message = message;
}

/* No node fit: PostFilter, then the kube-style reason histogram. */
static void no_fit(struct scheduler *s, struct kc_cycle *cycle, struct placement *out)
{
    run_post_filters(s, cycle);
    not_placed(out, false,
               with_post_filter(cycle, reasons_message(s->reasons, s->reason_count,
                                                       s->cache.node_count)));
}

/* PreFilter rejected the pod (in process or in a plugin host). */
static void pre_filter_rejected(struct scheduler *s, struct kc_cycle *cycle, const char *why,
                                struct placement *out)
{
    if (cycle->prefilter_status == KC_SUCCESS) /* a plugin host's PreFilter: assume the worst */
        cycle->prefilter_status = KC_UNRESOLVABLE;
    run_post_filters(s, cycle);
    not_placed(out, false,
               with_post_filter(cycle, text_format("0/%u nodes are available: %s.",
                                                   s->cache.node_count, why)));
}

static int add_waiting(struct scheduler *s, struct kc_cycle *cycle, uint64_t pending,
                       uint32_t timeout_ms, const char *wait_plugin, bool group_hold)
{
    struct kc_waiting_pod *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return -ENOMEM;
    void *grown =
        array_grow(s->waiting, &s->waiting_capacity, s->waiting_count + 1, sizeof(*s->waiting));
    if (grown == NULL) {
        free(w);
        return -ENOMEM;
    }
    s->waiting = grown;
    w->cycle = cycle;
    w->pending = pending;
    w->group_hold = group_hold;
    w->deadline_ms = scheduler_now(s) + timeout_ms;
    if (timeout_ms % 1000 == 0)
        snprintf(w->timeout_text, sizeof(w->timeout_text), "%us", timeout_ms / 1000);
    else
        snprintf(w->timeout_text, sizeof(w->timeout_text), "%ums", timeout_ms);
    w->wait_plugin = strdup(wait_plugin);
    s->waiting[s->waiting_count++] = w;
    cycle->sp->state = SP_WAITING;
    s->stats.permit_waits++;
    remote_journal_waiting(s, w, true);
    return 0;
}

static int push_binding(struct scheduler *s, struct kc_cycle *cycle)
{
    void *grown =
        array_grow(s->binding, &s->binding_capacity, s->binding_count + 1, sizeof(*s->binding));
    if (grown == NULL)
        return -ENOMEM;
    s->binding = grown;
    s->binding[s->binding_count++] = cycle;
    cycle->sp->state = SP_BINDING;
    return 0;
}

/* Assume, Reserve and Permit on the chosen node. A failure undoes Reserve (requeueing parked
 * pods only outside a group cycle, whose rollback frees nothing that was free before). */
static void reserve_and_permit(struct scheduler *s, struct kc_cycle *cycle,
                               const struct cache_node *cn, struct placement *out)
{
    struct framework *fw = cycle->fw;
    cycle->node_name = strdup(cn->node->name);
    if (cycle->node_name == NULL || scheduler_assume(s, cycle->sp->pod, cn->node->name) < 0)
        return not_placed(out, true, strdup("could not assume the pod in the cache"));
    cn = cache_node(&s->cache, cycle->node_name);
    struct phase_result r;
    const char *phase = "Reserve";
    kc_status st = cycle_phase(s, cycle, PHASE_RESERVE, cn, BACKENDS_ALL, &r);
    if (st == KC_SUCCESS) {
        phase = "Permit";
        st = cycle_phase(s, cycle, PHASE_PERMIT, cn, BACKENDS_ALL, &r);
    }
    if (st != KC_SUCCESS && st != KC_WAIT) {
        unreserve_pod(s, cycle, cycle->group == NULL);
        bool error;
        char *message = phase_failure(cycle, &fw->plugins[r.failed], phase, st, &error);
        return not_placed(out, error, message);
    }
    out->placed = true;
    out->permit = st;
    out->waiting = r.waiting;
    out->timeout_ms = r.timeout_ms;
    out->wait_plugin = r.failed;
}

/* PreFilter on the in-process plugins; the plugin that rejected is in *failed. */
/* kube-scheduler v1.37 (RunPreFilterPlugins): the restrictions of PreFilter leave no node
 * name, so PreFilter fails UnschedulableAndUnresolvable, naming the restricting plugins:
 * "node(s) didn't satisfy plugin(s) [A B] simultaneously", or "node(s) didn't satisfy plugin
 * A" for one. */
static kc_status restriction_failure(struct kc_cycle *cycle)
{
    char message[sizeof(cycle->restrict_label) + 64];
    if (strchr(cycle->restrict_label, ' ') != NULL)
        snprintf(message, sizeof(message), "node(s) didn't satisfy plugin(s) [%s] simultaneously",
                 cycle->restrict_label);
    else
        snprintf(message, sizeof(message), "node(s) didn't satisfy plugin %s",
                 cycle->restrict_label);
    cycle_fail(cycle, message);
    return KC_UNRESOLVABLE;
}

static kc_status run_pre_filters(struct scheduler *s, struct kc_cycle *cycle, uint64_t *skip,
                                 struct plugin **failed)
{
    struct framework *fw = cycle->fw;
    const kc_pod *pod = (const kc_pod *)cycle->sp->pod;
    *skip = 0;
    for (uint32_t i = 0; i < fw->phase_count[PHASE_PRE_FILTER]; i++) {
        struct plugin *p = fw->phase[PHASE_PRE_FILTER][i];
        int64_t started = sched_metrics_clock(s);
        crash_enter(p->name, "PreFilter");
        kc_status st = p->ops.pre_filter(p->self, cycle, pod);
        crash_leave();
        sched_metrics_plugin(s, p, PHASE_PRE_FILTER, st, started);
        if (st == KC_SKIP) {
            *skip |= 1ull << p->index;
        } else if (st != KC_SUCCESS) {
            *failed = p;
            return st;
        }
        if (cycle_restriction_empty(cycle)) {
            *failed = p;
            return restriction_failure(cycle);
        }
    }
    return KC_SUCCESS;
}

static int compare_node_index(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* PreFilter restricted the nodes (kube's PreFilterResult): Filter sees only the allowed
 * candidates, in their order, and the others count once each under kube's reason for them.
 * Returns the candidates left (the cycle's narrowed list), with *count updated, or NULL
 * when out of memory. */
static const uint32_t *restrict_candidates(struct scheduler *s, struct kc_cycle *cycle,
                                           const uint32_t *candidates, uint32_t *count)
{
    uint32_t n = *count, kept = 0;
    free(cycle->narrowed);
    cycle->narrowed = malloc(((size_t)n + 1) * sizeof(*cycle->narrowed));
    if (cycle->narrowed == NULL)
        return NULL;
    if (candidates == NULL) {
        memcpy(cycle->narrowed, cycle->restricted_nodes,
               cycle->restricted_count * sizeof(*cycle->narrowed));
        kept = cycle->restricted_count;
    } else {
        for (uint32_t i = 0; i < n; i++)
            if (bsearch(&candidates[i], cycle->restricted_nodes, cycle->restricted_count,
                        sizeof(*candidates), compare_node_index) != NULL)
                cycle->narrowed[kept++] = candidates[i];
    }
    if (n > kept) {
        char reason[sizeof(cycle->restrict_label) + 48];
        snprintf(reason, sizeof(reason), "node(s) didn't satisfy plugin(s) [%s]",
                 cycle->restrict_label);
        reasons_add_count(s->reasons, &s->reason_count, reason, n - kept);
    }
    *count = kept;
    return cycle->narrowed;
}

/* The nodes PreFilter left out cannot be helped by preemption: kube marks them
 * UnschedulableAndUnresolvable ("filtered out by the prefilter result"). */
static void mark_restricted_out(struct scheduler *s, const struct kc_cycle *cycle)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < s->cache.node_count; i++) {
        while (r < cycle->restricted_count && cycle->restricted_nodes[r] < i)
            r++;
        if (r == cycle->restricted_count || cycle->restricted_nodes[r] != i) {
            s->node_status[i] = KC_UNRESOLVABLE;
            s->node_rejector[i] = NODE_REJECTOR_RESTRICTED;
            s->node_marks_clean = 0;
        }
    }
}

int scheduler_evaluate(struct scheduler *s, struct kc_cycle *cycle, const uint32_t *candidates,
                       uint32_t candidate_count, uint32_t want, bool score, struct evaluation *out)
{
    memset(out, 0, sizeof(*out));
    current_scheduler = s;
    reasons_clear(s->reasons, &s->reason_count);
    if (ensure_scratch(s) < 0) {
        out->status = KC_ERROR;
        out->message = strdup("out of memory");
        return -ENOMEM;
    }
    uint64_t skip;
    struct plugin *failed = NULL;
    cycle_restrict_clear(cycle);
    cycle->in_pre_filter = true;
    int64_t started = sched_metrics_now(s);
    kc_status st = run_pre_filters(s, cycle, &skip, &failed);
    sched_metrics_extension_point(s, PHASE_PRE_FILTER, st, started);
    cycle->in_pre_filter = false;
    cycle->prefilter_status = st;
    cycle->filter_skip = skip;
    prepare_filters(cycle);
    if (st != KC_SUCCESS) {
        out->status = st == KC_UNSCHEDULABLE || st == KC_UNRESOLVABLE ? st : KC_ERROR;
        if (out->status != KC_ERROR)
            out->rejectors = 1ull << failed->index;
        out->message = out->status == KC_ERROR
                           ? text_format("plugin %s failed in PreFilter (status %d)%s%s",
                                         failed->name, (int)st, cycle->message != NULL ? ": " : "",
                                         cycle->message != NULL ? cycle->message : "")
                           : strdup(cycle->message != NULL ? cycle->message : failed->name);
        return 0;
    }
    uint32_t count = candidates != NULL ? candidate_count : s->cache.node_count;
    if (cycle->restricted) {
        /* kube sizes its sample from the nodes PreFilter left, not from the whole cluster */
        if (candidates == NULL && want != 0)
            want = nodes_to_find(s, cycle->restricted_count);
        if ((candidates = restrict_candidates(s, cycle, candidates, &count)) == NULL) {
            out->status = KC_ERROR;
            out->message = strdup("out of memory");
            return -ENOMEM;
        }
    }
    started = sched_metrics_now(s);
    int64_t found = run_filters(s, cycle, skip, candidates, count, want, &out->processed);
    sched_metrics_extension_point(s, PHASE_FILTER, found < 0 ? KC_ERROR : KC_SUCCESS, started);
    if (cycle->restricted)
        mark_restricted_out(s, cycle);
    out->rejectors = cycle->rejectors;
    if (found < 0) {
        out->status = KC_ERROR;
        out->message = strdup(cycle->message != NULL ? cycle->message : "Filter failed");
        return 0;
    }
    out->found = (uint32_t)found;
    if (score && found > 1 && compute_scores(s, cycle, (uint32_t)found, &out->scored) < 0) {
        out->status = KC_ERROR;
        out->message = strdup(cycle->message != NULL ? cycle->message : "scoring failed");
    }
    return 0;
}

void evaluation_clear(struct evaluation *e)
{
    free(e->message);
    memset(e, 0, sizeof(*e));
}

static const struct cache_node *choose_merged(struct scheduler *s, struct kc_cycle *cycle,
                                              struct placement *out);

/* With plugin hosts: the in-process plugins filter every node (in rotated order), the hosts
 * evaluate what is left in one round trip each, and the results are merged. Returns the chosen
 * node, or NULL with out saying why not. */
static const struct cache_node *choose_remote(struct scheduler *s, struct kc_cycle *cycle,
                                              struct placement *out)
{
    uint32_t n = s->cache.node_count;
    uint32_t want = nodes_to_find(s, n);
    struct evaluation e;
    uint64_t rejectors = cycle->rejectors;
    /* no Filter in process: every node PreFilter left is a candidate, and the hosts are told
     * so without a list (one node is enough for the evaluation here to say so) */
    bool no_local_filter = cycle->fw->phase_count[PHASE_FILTER] == 0;
    scheduler_evaluate(s, cycle, NULL, 0, no_local_filter ? 1 : 0, false, &e);
    if ((e.status == KC_UNSCHEDULABLE || e.status == KC_UNRESOLVABLE) &&
        remote_pre_filter_before(cycle->fw, (uint32_t)__builtin_ctzll(e.rejectors | 1ull << 63))) {
        /* a host's PreFilter comes first in the configuration: its verdict may be the one */
        evaluation_clear(&e);
        cycle->rejectors = rejectors;
        return choose_merged(s, cycle, out);
    }
    cycle->rejectors |= e.rejectors;
    char *message = NULL;
    uint32_t found = 0, processed = 0;
    const struct cache_node *chosen = NULL;
    kc_status st = e.status;
    struct remote_pick pick = {0};
    if (st == KC_SUCCESS && no_local_filter) {
        const uint32_t *list = cycle->restricted ? cycle->narrowed : NULL;
        uint32_t count = cycle->restricted ? cycle->restricted_count : n;
        st = remote_evaluate(s, cycle, list, count, want, &found, &processed, &message);
        /* the host picked as select_node would (its weights, this generator): the choice, the
         * score the report gives and the rotation are the same as if picked here */
        if (st == KC_SUCCESS && remote_picked(s, &pick)) {
            chosen = &s->cache.nodes[pick.node];
            cycle->sp->score = found > 1 ? pick.total : 0;
            s->rng = pick.rng;
        }
        uint32_t last = chosen != NULL ? pick.last
                        : found > 0    ? s->feasible[found - 1]->index
                                       : 0;
        if (st == KC_SUCCESS && found == want)
            s->next_start_node = (last + 1) % n;
    } else if (st == KC_SUCCESS) {
        for (uint32_t i = 0; i < e.found; i++)
            s->candidates[i] = s->feasible[i]->index;
        st = remote_evaluate(s, cycle, s->candidates, e.found, want, &found, &processed, &message);
        /* rotate past the last node the search needed, as in-process */
        if (st == KC_SUCCESS && found == want)
            s->next_start_node = (s->feasible[found - 1]->index + 1) % n;
    } else {
        message = e.message;
        e.message = NULL;
    }
    evaluation_clear(&e);
    if (st == KC_ERROR) {
        not_placed(out, true, message);
        return NULL;
    }
    if (st != KC_SUCCESS)
        pre_filter_rejected(s, cycle, message, out);
    else if (found == 0)
        no_fit(s, cycle, out);
    else if (chosen == NULL) {
        uint64_t scored = 0;
        if (found > 1 && compute_scores(s, cycle, found, &scored) < 0)
            not_placed(out, true, cycle->message != NULL ? strdup(cycle->message) : NULL);
        else
            chosen = s->feasible[pick_node(s, cycle, found, scored)];
        if (chosen != NULL) /* the hosts' plugins are in the totals, not in the list */
            decision_log_scores(s, cycle, found > 1 ? found : 0, scored);
    }
    free(message);
    return chosen;
}

/* The feasible nodes of the merged verdicts, in the order in-process Filter visits them (from
 * the rotating start; after a restriction, the nodes it kept in index order), the first `want`
 * of them into s->feasible. Returns the count; *processed: the nodes the search needed;
 * *rejectors: the plugins whose verdict rejected one of those (what requeues the pod). */
static uint32_t merged_feasible(struct scheduler *s, uint32_t start, uint32_t *processed,
                                uint64_t *rejectors)
{
    uint32_t n = s->cache.node_count, kept = 0;
    for (uint32_t i = 0; i < n; i++)
        kept += !(s->node_winner[i] & NODE_REJECTOR_RESTRICTED);
    bool restricted = kept < n;
    uint32_t want = nodes_to_find(s, restricted ? kept : n), found = 0, position = 0;
    *processed = restricted ? kept : n;
    for (uint32_t k = 0; k < n && found < want; k++) {
        uint32_t node = restricted ? k : (start + k) % n;
        if (s->node_winner[node] & NODE_REJECTOR_RESTRICTED)
            continue;
        position++;
        if (s->node_winner[node] != 0) {
            *rejectors |= 1ull << ((s->node_winner[node] & 0xffu) - 1);
            continue;
        }
        s->totals[found] = 0;
        s->feasible[found++] = &s->cache.nodes[node];
        if (found == want)
            *processed = position;
    }
    return found;
}

/* No node fits: the reasons of the backend whose plugin gave each node's verdict (in-process
 * Filter again on its nodes, then each host on its own), and the nodes where preemption cannot
 * help. */
static void merged_no_fit(struct scheduler *s, struct kc_cycle *cycle, struct placement *out)
{
    const struct framework *fw = cycle->fw;
    uint32_t n = s->cache.node_count, count = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint16_t w = s->node_winner[i];
        if ((w & NODE_REJECTOR_RESTRICTED) ? (w & 0xffu) == 0
                                            : (w & 0xffu) != 0 && !fw->plugins[(w & 0xffu) - 1].remote)
            s->candidates[count++] = i;
    }
    reasons_clear(s->reasons, &s->reason_count);
    if (count > 0) {
        uint32_t *mine = malloc(count * sizeof(*mine));
        struct evaluation e;
        if (mine == NULL) {
            not_placed(out, true, strdup("out of memory"));
            return;
        }
        memcpy(mine, s->candidates, count * sizeof(*mine));
        scheduler_evaluate(s, cycle, mine, count, 0, false, &e);
        free(mine);
        evaluation_clear(&e);
    }
    char *message = NULL;
    if (remote_merged_reasons(s, cycle, &message) != KC_SUCCESS) {
        not_placed(out, true, message);
        return;
    }
    s->node_marks_clean = 0;
    for (uint32_t i = 0; i < n; i++)
        s->node_status[i] = s->node_winner[i] & (NODE_REJECTOR_RESTRICTED |
                                                 NODE_REJECTOR_UNRESOLVABLE)
                                ? KC_UNRESOLVABLE
                                : KC_UNSCHEDULABLE;
    no_fit(s, cycle, out);
}

/* Several backends filter (in-process plugins and hosts, or several hosts): each filters every
 * node, the verdicts are merged node by node in the configured plugin order, and the hosts
 * that score then score the final list, so placements, reasons and scores are those of one
 * backend running every plugin (docs/architecture.md). Returns the chosen node, or NULL with
 * out saying why not. */
static const struct cache_node *choose_merged(struct scheduler *s, struct kc_cycle *cycle,
                                              struct placement *out)
{
    /* where in-process Filter starts (run_filters), so the feasible nodes come in its order */
    uint32_t n = s->cache.node_count, start = s->next_start_node < n ? s->next_start_node : 0;
    /* each backend's evaluation adds the plugins that rejected in it; the attempt's rejectors
     * are those whose verdict counted, as with one backend */
    uint64_t rejectors = cycle->rejectors;
    struct evaluation e;
    scheduler_evaluate(s, cycle, NULL, 0, 0, false, &e);
    if (e.status == KC_ERROR) {
        not_placed(out, true, e.message);
        e.message = NULL;
        evaluation_clear(&e);
        return NULL;
    }
    uint32_t pre_filter_plugin = UINT32_MAX;
    kc_status pre_filter_status = KC_SUCCESS;
    char *pre_filter_message = NULL, *message = NULL;
    if (e.status != KC_SUCCESS) {
        pre_filter_plugin = (uint32_t)__builtin_ctzll(e.rejectors | (1ull << 63));
        pre_filter_status = e.status;
        pre_filter_message = e.message;
        e.message = NULL;
        memset(s->node_winner, 0, n * sizeof(*s->node_winner));
    } else {
        memcpy(s->node_winner, s->node_rejector, n * sizeof(*s->node_winner));
    }
    evaluation_clear(&e);
    kc_status st = remote_filter_merged(s, cycle, start, &pre_filter_plugin, &pre_filter_status,
                                        &pre_filter_message, &message);
    const struct cache_node *chosen = NULL;
    if (st != KC_SUCCESS) {
        not_placed(out, true, message);
        message = NULL;
    } else if (pre_filter_status != KC_SUCCESS) {
        cycle->prefilter_status = pre_filter_status;
        cycle->rejectors = rejectors | (pre_filter_plugin < 64 ? 1ull << pre_filter_plugin : 0);
        pre_filter_rejected(s, cycle, pre_filter_message, out);
    } else {
        uint32_t processed;
        uint32_t found = merged_feasible(s, start, &processed, &rejectors);
        cycle->rejectors = rejectors;
        s->next_start_node = (s->next_start_node + processed) % n;
        uint64_t scored = 0;
        if (found == 0)
            merged_no_fit(s, cycle, out);
        else if (remote_merged_scores(s, cycle, found, &message) != KC_SUCCESS) {
            not_placed(out, true, message);
            message = NULL;
        } else if (found > 1 && compute_scores(s, cycle, found, &scored) < 0)
            not_placed(out, true, cycle->message != NULL ? strdup(cycle->message) : NULL);
        else
            chosen = s->feasible[pick_node(s, cycle, found, scored)];
    }
    free(pre_filter_message);
    free(message);
    return chosen;
}

/* In process: PreFilter, Filter on a sample of the nodes from the rotating start index, Score,
 * then the best node. Returns it, or NULL with out saying why not. */
/* A pod nominated by an earlier preemption tries its nominated node first and takes it if it
 * fits (kube's evaluateNominatedNode): the room its victims freed is meant for it. */
static const struct cache_node *choose_nominated(struct scheduler *s, struct kc_cycle *cycle)
{
    const struct pod *pod = cycle->sp->pod;
    const char *name = nominations_node(&s->nominations, pod->uid);
    const struct cache_node *cn = cache_node(&s->cache, name != NULL ? name : "");
    if (cn == NULL)
        return NULL;
    uint32_t index = cn->index;
    struct evaluation e;
    scheduler_evaluate(s, cycle, &index, 1, 1, false, &e);
    const struct cache_node *chosen =
        e.status == KC_SUCCESS && e.found == 1 ? s->feasible[0] : NULL;
    evaluation_clear(&e);
    if (chosen != NULL && cycle->fw->host_count > 0) {
        /* the hosted plugins filter it too; their evaluation is then the one Reserve and the
         * later phases use */
        uint32_t found = 0, processed = 0;
        char *message = NULL;
        if (remote_evaluate(s, cycle, &index, 1, 1, &found, &processed, &message) != KC_SUCCESS ||
            found != 1)
            chosen = NULL;
        free(message);
    }
    if (chosen == NULL) {
        /* the full evaluation says why again */
        free(cycle->message);
        cycle->message = NULL;
    }
    return chosen;
}

static const struct cache_node *choose_local(struct scheduler *s, struct kc_cycle *cycle,
                                             struct placement *out)
{
    uint32_t n = s->cache.node_count;
    const struct cache_node *chosen = NULL;
    struct evaluation e;
    scheduler_evaluate(s, cycle, NULL, 0, nodes_to_find(s, n), true, &e);
    cycle->rejectors |= e.rejectors;
    if (e.status == KC_ERROR) {
        not_placed(out, true, e.message);
        e.message = NULL;
    } else if (e.status != KC_SUCCESS) {
        pre_filter_rejected(s, cycle, e.message, out);
    } else {
        s->next_start_node = (s->next_start_node + e.processed) % n;
        if (e.found == 0) {
            no_fit(s, cycle, out);
        } else {
            memset(s->totals, 0, e.found * sizeof(*s->totals));
            chosen = s->feasible[pick_node(s, cycle, e.found, e.scored)];
            decision_log_scores(s, cycle, e.found > 1 ? e.found : 0, e.scored);
        }
    }
    evaluation_clear(&e);
    return chosen;
}

/* No plugin of this generation reads these fields (pod_fields.c): placing the pod as if they
 * were absent could put it where kube-scheduler would not. No rejector's event can change that
 * (a reload starts a new generation and wakes every parked pod), so the attempt names one that
 * no plugin's events match. */
#define UNHANDLED_FIELD_REJECTOR (1ull << 63)

static bool refuse_unhandled_fields(struct scheduler *s, struct kc_cycle *cycle,
                                    struct placement *out)
{
    uint32_t refused = cycle->sp->pod->fields & cycle->fw->refused_fields;
    if (refused == 0)
        return false;
    char fields[1024];
    pod_fields_format(refused, fields, sizeof(fields));
    not_placed(out, false,
               text_format("0/%u nodes are available: pod uses %s, which no enabled plugin "
                           "handles.",
                           s->cache.node_count, fields));
    cycle->rejectors |= UNHANDLED_FIELD_REJECTOR;
    return true;
}

void scheduler_place(struct scheduler *s, struct kc_cycle *cycle, struct placement *out)
{
    memset(out, 0, sizeof(*out));
    current_scheduler = s;
    cycle->sp->score = 0;
    if (refuse_unhandled_fields(s, cycle, out)) {
        /* before PreFilter: no plugin ran, nothing to undo */
    } else if (s->cache.node_count == 0) {
        not_placed(out, false,
                   strdup("0/0 nodes are available: no nodes available to schedule pods."));
    } else {
        /* kube tries a preemptor's nominated node first, whatever backends filter */
        const struct cache_node *chosen = choose_nominated(s, cycle);
        if (chosen == NULL)
            chosen = cycle->fw->host_count == 0              ? choose_local(s, cycle, out)
                     : remote_single_evaluation(cycle->fw) ? choose_remote(s, cycle, out)
                                                           : choose_merged(s, cycle, out);
        if (chosen != NULL)
            reserve_and_permit(s, cycle, chosen, out);
    }
    cycle->sp->rejectors = cycle->rejectors;
}

void scheduler_commit(struct scheduler *s, struct kc_cycle *cycle, const struct placement *p)
{
    /* wait_plugin is a position in the cycle's own generation; a group member held for its
     * group whose plugin is not in that generation has none (UINT32_MAX) */
    const char *wait_plugin = "?";
    if (p->wait_plugin < cycle->fw->count)
        wait_plugin = cycle->fw->plugins[p->wait_plugin].name;
    else if (cycle->group != NULL && cycle->group->declarer != NULL)
        wait_plugin = cycle->group->declarer;
    int rc = p->permit == KC_WAIT
                 ? add_waiting(s, cycle, p->waiting, p->timeout_ms, wait_plugin, p->group_hold)
                 : push_binding(s, cycle);
    if (rc < 0)
        fail_binding(s, cycle, "out of memory holding the pod after Permit");
}

int scheduler_schedule_one(struct scheduler *s)
{
    struct sched_pod *sp = queue_pop(&s->queue);
    if (sp == NULL) {
        remote_colocation_release(s); /* nothing to evaluate: no reason to hold a CPU */
        return 0;
    }
    int64_t start = monotonic_us();
    current_scheduler = s;
    if (group_schedule(s, sp)) {
        /* its group's cycle ran (or the pod waits for its group) */
        group_flush_status(s);
        s->last_attempt_us = monotonic_us() - start;
        return 1;
    }
    sp->attempts++;
    sp->attempt_start_us = start;
    sp->last_attempt_ms = scheduler_now(s);
    if (sp->attempts == 1)
        sp->first_attempt_ms = sp->last_attempt_ms; /* the SLI runs from here */
    s->stats.attempts++;
    struct kc_cycle *cycle = cycle_new(s, sp);
    if (cycle == NULL) {
        sp->backoff_attempts = sp->attempts;
        queue_push_backoff(&s->queue, sp, sp->last_attempt_ms);
        return -ENOMEM;
    }
    struct placement p;
    scheduler_place(s, cycle, &p);
    decision_log_attempt(cycle, &p, start);
    if (p.placed)
        scheduler_commit(s, cycle, &p);
    else
        fail_attempt(s, cycle, p.error ? OUTCOME_ERROR : OUTCOME_UNSCHEDULABLE, p.message);
    free(p.message);
    group_flush_status(s);
    s->last_attempt_us = monotonic_us() - start;
    sched_metrics_cycle_end(s);
    return 1;
}

/* ---- the binding cycle ---- */

static void finish_bound(struct scheduler *s, struct kc_cycle *cycle)
{
    struct sched_pod *sp = cycle->sp;
    struct pod *pod = sp->pod;
    s->stats.scheduled++;
    sched_metrics_bound(s, sp);
    s->serving = cycle->fw;
    if (s->sink.bound != NULL)
        s->sink.bound(s->sink.ctx, pod, cycle->node_name);
    /* bound elsewhere than an earlier preemption nominated it: the stale nomination goes */
    if (pod->nominated_node_name != NULL && s->sink.nominate != NULL &&
        strcmp(pod->nominated_node_name, cycle->node_name) != 0)
        s->sink.nominate(s->sink.ctx, pod, NULL);
    s->serving = NULL;
    strmap_remove(&s->pods, pod->uid);
    free(pod->node_name);
    pod->node_name = strdup(cycle->node_name);
    sp->pod = NULL;
    bool deleted = sp->deleted;
    sched_pod_free(sp);
    cycle_free(cycle);
    if (pod->node_name == NULL) {
        pod_free(pod);
        return;
    }
    if (deleted) {
        scheduler_forget(s, pod);
        pod_free(pod);
        return;
    }
    add_assigned(s, pod); /* confirms the assumption, as the API's update would */
}

/* A Bind plugin in a plugin host asked for the binding: the binder is here. */
static bool sink_bind(struct scheduler *s, struct kc_cycle *cycle)
{
    if (s->sink.bind == NULL)
        return false;
    int rc = cycle_flush_writes(cycle);
    if (rc == 0)
        rc = s->sink.bind(s->sink.ctx, cycle->sp->pod, cycle->node_name, &cycle->annotations);
    if (rc == 1)
        cycle->bind_pending = true;
    return rc >= 0;
}

/* Bound: PostBind, then the pod counts as assigned. */
static void complete_binding(struct scheduler *s, struct kc_cycle *cycle)
{
    const struct cache_node *node = cache_node(&s->cache, cycle->node_name);
    if (node == NULL) /* PostBind never sees a NULL node: one deleted meanwhile gets none */
        log_info("pod %s/%s: bound to %s, which is gone; PostBind skipped in process",
                 cycle->sp->pod->namespace, cycle->sp->pod->name, cycle->node_name);
    struct phase_result r;
    cycle_phase(s, cycle, PHASE_POST_BIND, node, BACKENDS_ALL, &r);
    finish_bound(s, cycle);
}

/* The binding was sent; the binding cycle stays open (the pod assumed) until its result. */
static void await_binding(struct scheduler *s, struct kc_cycle *cycle)
{
    if (strmap_put(&s->binds_in_flight, cycle->sp->pod->uid, cycle) < 0) {
        /* no room to wait: fail the attempt; if the binding lands anyway, the watch shows the
         * pod bound, and a retry before that is refused by the API server */
        fail_binding(s, cycle, "out of memory waiting for the binding's result");
    }
}

/* The pod of an open binding cycle is already known bound elsewhere: end the cycle without
 * Unreserve (the reservation became the assignment) and drop the pending record. */
static void drop_bound_cycle(struct scheduler *s, struct kc_cycle *cycle)
{
    struct sched_pod *sp = cycle->sp;
    if (strmap_get(&s->pods, sp->pod->uid) == sp)
        strmap_remove(&s->pods, sp->pod->uid);
    cycle_free(cycle);
    sched_pod_free(sp);
}

int scheduler_bind_result(struct scheduler *s, const char *uid, int rc, const char *message)
{
    current_scheduler = s;
    struct kc_cycle *cycle = strmap_remove(&s->binds_in_flight, uid);
    if (cycle == NULL)
        return -ENOENT;
    const struct pod *assigned = strmap_get(&s->assigned, uid);
    if (rc != 0 && assigned != NULL) {
        /* the watch showed the pod bound before this answer (a lost or late result of a
         * binding that landed): it is bound, so no Unreserve */
        if (strcmp(assigned->node_name, cycle->node_name) != 0) {
            drop_bound_cycle(s, cycle);
            return 0;
        }
        rc = 0;
    }
    if (rc == 0) {
        complete_binding(s, cycle);
        return 0;
    }
    s->stats.bind_failures++;
    sched_metrics_binding_failed(s);
    char text[768];
    snprintf(text, sizeof(text), "binding rejected: %s",
             message != NULL && message[0] != '\0' ? message : kc_strerror(rc));
    fail_binding(s, cycle, text);
    return 0;
}

void scheduler_bind_results_lost(struct scheduler *s, const char *why)
{
    current_scheduler = s;
    /* removal leaves a tombstone and failing inserts nothing here: one pass sees every entry */
    for (uint32_t i = 0; i < s->binds_in_flight.capacity; i++) {
        struct kc_cycle *cycle = s->binds_in_flight.entries[i].value;
        if (cycle == NULL)
            continue;
        s->stats.binds_lost++;
        scheduler_bind_result(s, cycle->sp->pod->uid, -EIO, why);
    }
}

#define NO_BINDER "no Bind plugin bound the pod (configure defaultbinder)"
#define BINDING_BATCH 32
#define BINDING_BATCH_WAIT_MS 20

static void defer_binding(struct scheduler *s, struct kc_cycle *cycle)
{
    void *grown =
        array_grow(s->deferred, &s->deferred_capacity, s->deferred_count + 1, sizeof(*s->deferred));
    if (grown == NULL) {
        fail_binding(s, cycle, "out of memory before binding");
        return;
    }
    s->deferred = grown;
    if (s->deferred_count == 0)
        s->deferred_since_us = monotonic_us();
    s->deferred[s->deferred_count++] = cycle;
}

/* A batch's results (NULL: every pod failed) taken: each binding cycle goes on. Frees both
 * arrays. */
static void finish_deferred_bindings(struct scheduler *s, struct kc_cycle **cycles,
                                     uint32_t count, struct remote_binding *results)
{
    for (uint32_t i = 0; i < count; i++) {
        struct kc_cycle *cycle = cycles[i];
        struct remote_binding res =
            results != NULL ? results[i] : (struct remote_binding){KC_ERROR, 0, false};
        if (cycle->sp->deleted)
            res.status = KC_ERROR; /* deleted while the batch waited: no binding */
        if (res.status == KC_SUCCESS && res.requested && !sink_bind(s, cycle))
            res.status = KC_ERROR;
        if (res.status == KC_SKIP) {
            s->stats.bind_failures++;
            sched_metrics_binding_failed(s);
            fail_binding(s, cycle, NO_BINDER);
        } else if (res.status != KC_SUCCESS) {
            s->stats.bind_failures++;
            sched_metrics_binding_failed(s);
            fail_in_phase(s, cycle, &cycle->fw->plugins[res.failed], "Bind");
        } else {
            cycle->remote_post_bind_done = true; /* the hosts' PostBind rode in the batch */
            if (cycle->bind_pending)
                await_binding(s, cycle);
            else
                complete_binding(s, cycle);
        }
    }
    free(results);
    free(cycles);
}

/* Binding cycles waiting for a plugin host's binder go in one request per host once enough
 * have gathered, once they waited long enough, or when nothing else is left to do. The batch
 * in the air (remote.c) is taken once answered, and waited for when the next batch is ready to
 * go or nothing else is left to do; a ready batch then goes without waiting when it can, else
 * the thread waits for its answer. */
static void flush_deferred_bindings(struct scheduler *s)
{
    uint32_t count = s->deferred_count;
    bool ready = count > 0 && !(count < BINDING_BATCH && s->queue.active.count > 0 &&
                                monotonic_us() - s->deferred_since_us <
                                    BINDING_BATCH_WAIT_MS * 1000);
    struct kc_cycle **cycles;
    struct remote_binding *results;
    uint32_t answered;
    if (remote_bind_collect(s, ready || s->queue.active.count == 0, &cycles, &answered,
                            &results) > 0)
        finish_deferred_bindings(s, cycles, answered, results);
    if (!ready)
        return;
    cycles = s->deferred;
    s->deferred = NULL;
    s->deferred_count = s->deferred_capacity = 0;
    if (remote_bind_send(s, cycles, count))
        return;
    results = calloc(count, sizeof(*results));
    if (results != NULL)
        remote_bind_batch(s, cycles, count, results);
    finish_deferred_bindings(s, cycles, count, results);
}

static void run_binding_cycle(struct scheduler *s, struct kc_cycle *cycle)
{
    struct framework *fw = cycle->fw;
    const struct cache_node *node = cache_node(&s->cache, cycle->node_name);
    if (node == NULL || cycle->sp->deleted)
        return fail_binding(s, cycle, "the node or the pod went away before binding");
    /* the binder is in a plugin host: the hosts' PreBind, Bind and PostBind ride with other
     * pods' binding cycles */
    bool deferred = fw->phase_count[PHASE_BIND] == 0 && remote_binds(fw);
    struct phase_result r;
    kc_status st = cycle_phase(s, cycle, PHASE_PRE_BIND, node,
                               deferred ? BACKENDS_INPROCESS : BACKENDS_ALL, &r);
    if (st != KC_SUCCESS) {
        s->stats.bind_failures++;
        sched_metrics_binding_failed(s);
        return fail_in_phase(s, cycle, &fw->plugins[r.failed], "PreBind");
    }
    if (deferred) {
        defer_binding(s, cycle);
        return;
    }
    st = cycle_phase(s, cycle, PHASE_BIND, node, BACKENDS_ALL, &r);
    /* a Bind plugin in a plugin host asks for the binding; the binder is here */
    if (st == KC_SUCCESS && r.bind_requested && !sink_bind(s, cycle))
        st = KC_ERROR;
    if (st == KC_SKIP) {
        s->stats.bind_failures++;
        sched_metrics_binding_failed(s);
        return fail_binding(s, cycle, NO_BINDER);
    }
    if (st != KC_SUCCESS) {
        s->stats.bind_failures++;
        sched_metrics_binding_failed(s);
        return fail_in_phase(s, cycle, &fw->plugins[r.failed], "Bind");
    }
    if (cycle->bind_pending)
        await_binding(s, cycle);
    else
        complete_binding(s, cycle);
}

static void remove_waiting(struct scheduler *s, uint32_t i)
{
    struct kc_waiting_pod *w = s->waiting[i];
    remote_journal_waiting(s, w, false);
    /* keep the order: plugins may walk waiting pods by index */
    memmove(&s->waiting[i], &s->waiting[i + 1], (s->waiting_count - i - 1) * sizeof(*s->waiting));
    s->waiting_count--;
    free(w->wait_plugin);
    free(w->reject_message);
    free(w);
}

/* WaitOnPermit: decided waiting pods go to binding or fail; expired ones time out. A pod the
 * runtime holds with its group (group_hold) waits until group_tick lifts the hold. */
static void process_waiting(struct scheduler *s, int64_t now)
{
    for (uint32_t i = 0; i < s->waiting_count;) {
        struct kc_waiting_pod *w = s->waiting[i];
        struct kc_cycle *cycle = w->cycle;
        if (w->rejected || (w->pending != 0 && now >= w->deadline_ms)) {
            char *message =
                w->rejected
                    ? strdup(w->reject_message != NULL ? w->reject_message : "rejected in Permit")
                    : text_format("rejected due to timeout after waiting %s at plugin %s",
                                  w->timeout_text, w->wait_plugin);
            if (!w->rejected)
                s->stats.permit_timeouts++;
            cycle->rejectors |= w->pending;
            cycle->sp->rejectors = cycle->rejectors;
            remove_waiting(s, i);
            unreserve(s, cycle);
            fail_attempt(s, cycle, OUTCOME_UNSCHEDULABLE, message);
            free(message);
            continue;
        }
        if (w->pending == 0 && !w->group_hold) {
            remove_waiting(s, i);
            if (push_binding(s, cycle) < 0)
                fail_binding(s, cycle, "out of memory before binding");
            continue;
        }
        i++;
    }
}

int scheduler_tick(struct scheduler *s)
{
    current_scheduler = s;
    int64_t now = scheduler_now(s);
    queue_flush(&s->queue, now);
    group_tick(s, now);
    process_waiting(s, now);
    /* a committed group whose member went away binds none of its members */
    group_check_bindings(s, s->binding, &s->binding_count);
    group_check_bindings(s, s->deferred, &s->deferred_count);
    int bound = 0;
    /* binding cycles started while running these (none today) wait for the next tick */
    uint32_t count = s->binding_count;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t before = s->stats.scheduled;
        run_binding_cycle(s, s->binding[i]);
        bound += (int)(s->stats.scheduled - before);
    }
    if (count > 0) {
        memmove(s->binding, s->binding + count, (s->binding_count - count) * sizeof(*s->binding));
        s->binding_count -= count;
    }
    remote_sync_if_large(s);
    remote_watch(s);
    uint64_t before = s->stats.scheduled;
    flush_deferred_bindings(s);
    bound += (int)(s->stats.scheduled - before);
    group_flush_status(s);
    sched_metrics_publish(s, false);
    if (s->retiring_count > 0)
        scheduler_reap_generations(s);
    if (s->remote.stopping_count > 0)
        remote_reap_stopped(s, false);
    return bound;
}

int64_t scheduler_next_due(const struct scheduler *s)
{
    int64_t due = queue_next_due(&s->queue);
    int64_t group_due = group_next_due(s);
    if (group_due < due)
        due = group_due;
    for (uint32_t i = 0; i < s->waiting_count; i++)
        if (s->waiting[i]->deadline_ms < due)
            due = s->waiting[i]->deadline_ms;
    int64_t restart = remote_next_due(s); /* a host to start again */
    return restart < due ? restart : due;
}

bool scheduler_busy(const struct scheduler *s)
{
    if (s->queue.active.count > 0 || s->binding_count > 0 || s->deferred_count > 0 ||
        remote_bind_in_flight(s))
        return true;
    for (uint32_t i = 0; i < s->waiting_count; i++)
        if (s->waiting[i]->rejected || (s->waiting[i]->pending == 0 && !s->waiting[i]->group_hold))
            return true;
    return false;
}

/* ---- hot reload ---- */

/* A pending pod a new generation hears of: not one whose open cycle only waits to end because
 * the pod was deleted or bound elsewhere (the old generations heard of that; to the new one it
 * would be a ghost). */
static bool replayed(const struct scheduler *s, const struct sched_pod *sp)
{
    return !sp->deleted && strmap_get(&s->assigned, sp->pod->uid) == NULL;
}

/* A new generation hears the cluster the scheduler keeps, as add events, before it serves:
 * nodes, custom objects, assigned pods, pending pods, then the pods open cycles assumed. */
static void replay_cluster(struct scheduler *s, const struct framework *fw)
{
    if (fw->phase_count[PHASE_EVENT] == 0)
        return;
    kc_event ev = {.struct_size = sizeof(ev), .type = KC_EVENT_NODE_ADD};
    for (uint32_t i = 0; i < s->cache.node_count; i++) {
        ev.node = (const kc_node *)&s->cache.nodes[i];
        dispatch_to(fw, &ev);
    }
    for (uint32_t i = 0; i < s->objects.capacity; i++) {
        const struct kept_object *k = s->objects.entries[i].value;
        if (k == NULL)
            continue;
        kc_event object = {
            .struct_size = sizeof(object),
            .type = KC_EVENT_OBJECT_ADD,
            .object_kind = k->object.kind,
            .object_namespace = k->object.namespace,
            .object_name = k->object.name,
            .object_json = k->object.json,
        };
        dispatch_to(fw, &object);
    }
    ev.type = KC_EVENT_POD_ADD;
    for (uint32_t i = 0; i < s->assigned.capacity; i++) {
        const struct pod *pod = s->assigned.entries[i].value;
        if (pod == NULL)
            continue;
        ev.pod = (const kc_pod *)pod;
        ev.node = (const kc_node *)cache_node(&s->cache, pod->node_name);
        dispatch_to(fw, &ev);
    }
    ev.node = NULL;
    for (uint32_t i = 0; i < s->pods.capacity; i++) {
        const struct sched_pod *sp = s->pods.entries[i].value;
        if (sp == NULL || !replayed(s, sp))
            continue;
        ev.pod = (const kc_pod *)sp->pod;
        dispatch_to(fw, &ev);
    }
    ev.type = KC_EVENT_POD_ASSUME;
    for (uint32_t i = 0; i < s->pods.capacity; i++) {
        const struct sched_pod *sp = s->pods.entries[i].value;
        const struct cache_pod *cp =
            sp != NULL && replayed(s, sp) ? cache_pod(&s->cache, sp->pod->uid) : NULL;
        if (cp == NULL || !cp->assumed)
            continue;
        ev.pod = (const kc_pod *)sp->pod;
        ev.node = (const kc_node *)cache_node(&s->cache, cp->node_name);
        dispatch_to(fw, &ev);
    }
}

static bool binds(const struct framework *fw, const struct config *cfg)
{
    bool remote_bind = false;
    for (uint32_t i = 0; i < fw->host_count; i++)
        remote_bind |= (fw->hosts[i]->phases & KCYCLE__V1__PHASE__PHASE_BIND) != 0;
    return fw->phase_count[PHASE_BIND] > 0 || remote_bind || cfg->binder_elsewhere;
}

/* The settings a reload takes from the new configuration besides the plugins: the seed and
 * pluginTimeout apply at once; the Filter threads (parallelism) start only with the scheduler,
 * which the log says. */
static void apply_settings(struct scheduler *s, const struct config *use)
{
    const struct config *was = s->cfg;
    if (use == was)
        return;
    if (use->parallelism != was->parallelism)
        log_warn("configuration: parallelism changed from %d to %d; it takes effect only at a "
                 "restart of the scheduler (its Filter threads and plugin hosts keep %d)",
                 (int)was->parallelism, (int)use->parallelism, (int)was->parallelism);
    if (use->seed != was->seed) {
        log_info("configuration: seed changed from %llu to %llu; tie-breaking restarts from it",
                 (unsigned long long)was->seed, (unsigned long long)use->seed);
        s->rng = use->seed;
    }
    if (use->plugin_timeout_ms != was->plugin_timeout_ms) {
        log_info("configuration: pluginTimeout changed from %lld ms to %lld ms",
                 (long long)was->plugin_timeout_ms, (long long)use->plugin_timeout_ms);
        remote_set_timeout(s, use->plugin_timeout_ms);
    }
}

/* After a switch: the pods a PreEnqueue or group_of of the replaced generation held would stay
 * held until an event that the new generation may not care about (or never, when it has no
 * PreEnqueue plugin). Queued pods are filed under the groups the new generation declares, then
 * every gated pod but those held by spec.schedulingGates (which only a pod update lifts) goes
 * through the queue again: the new PreEnqueue plugins, then its group's quorum. */
static void requeue_held(struct scheduler *s)
{
    for (uint32_t i = 0; i < s->pods.capacity; i++) {
        struct sched_pod *sp = s->pods.entries[i].value;
        if (sp != NULL && !sp->deleted &&
            (sp->state == SP_ACTIVE || sp->state == SP_BACKOFF || sp->state == SP_UNSCHEDULABLE ||
             sp->state == SP_GATED))
            group_join(s, sp);
    }
    uint32_t count = s->queue.gated.count;
    if (count == 0)
        return;
    /* enqueue may put a pod back on the list: walk a copy */
    struct sched_pod **held = malloc(count * sizeof(*held));
    if (held == NULL) {
        log_error("hot reload: out of memory asking the held pods again; they are asked at the "
                  "next event");
        return;
    }
    memcpy(held, s->queue.gated.items, count * sizeof(*held));
    for (uint32_t i = 0; i < count; i++) {
        if (held[i]->state != SP_GATED || held[i]->pod->scheduling_gate_count > 0)
            continue;
        queue_remove(&s->queue, held[i]);
        scheduler_enqueue(s, held[i]);
    }
    free(held);
}

int scheduler_reload(struct scheduler *s, struct config *cfg, struct kc_error *err)
{
    struct config *use = cfg != NULL ? cfg : s->cfg;
    current_scheduler = s;
    /* numbers are never reused, not even after a failure: a private copy's name stays unique */
    /* strict: a plugin that fails to load refuses the reload even when required: false, so a
     * bad new file changes nothing (the old generation keeps serving) */
    struct framework_load how = {
        .generation = ++s->generations, .private_copy = true, .strict = true};
    struct framework *fw = NULL;
    remote_colocation_release(s); /* the new plugins' threads must not inherit the pin */
    int rc = remote_trial(s, use, s->plugin_dir, err);
    if (rc == 0)
        rc = framework_new(use, s->plugin_dir, &s->host, &how, &fw, err);
    /* isolation: process: a new host generation beside the serving one, handshaken and given
     * the snapshot before it serves; the serving hosts stay with the open cycles */
    if (rc == 0)
        rc = remote_build(s, fw, err);
    if (rc == 0 && !binds(fw, use))
        rc = kc_error_set(err, -EINVAL,
                          "no Bind plugin is configured: pods could never be "
                          "bound; add defaultbinder to the plugins list");
    void *grown = rc < 0 ? NULL
                         : array_grow(s->retiring, &s->retiring_capacity, s->retiring_count + 1,
                                      sizeof(*s->retiring));
    if (rc == 0 && grown == NULL)
        rc = kc_error_set(err, -ENOMEM, "out of memory");
    if (rc < 0) {
        if (fw != NULL)
            remote_release(s, fw);
        framework_free(fw);
        s->reload_failures++;
        return rc;
    }
    s->retiring = grown;
    apply_settings(s, use);
    replay_cluster(s, fw);
    struct framework *old = s->fw;
    remote_retire(old);
    framework_unref(old); /* the scheduler's reference: open cycles keep theirs */
    s->retiring[s->retiring_count++] = old;
    s->fw = fw;
    fw->loaded_ms = scheduler_now(s);
    s->cfg = use;
    queue_set_sort(&s->queue, fw->queue_sort);
    s->queue.initial_backoff_ms = use->pod_initial_backoff_ms;
    s->queue.max_backoff_ms = use->pod_max_backoff_ms;
    s->queue.flush_ms = use->unschedulable_flush_ms;
    s->scratch_capacity = 0; /* the number of Score plugins may have changed */
    s->switches++;
    /* the new plugins may judge parked pods differently: every one may try again */
    queue_on_event(&s->queue, ~0ull, scheduler_now(s));
    /* and the pods the old ones held (PreEnqueue, group_of) are asked again */
    requeue_held(s);
    log_info("plugins: generation %llu serves new cycles; generation %llu retires once its %u "
             "open cycles end",
             (unsigned long long)fw->generation, (unsigned long long)old->generation, old->refs);
    scheduler_reap_generations(s);
    return 0;
}

void scheduler_reap_generations(struct scheduler *s)
{
    for (uint32_t i = 0; i < s->retiring_count;) {
        struct framework *fw = s->retiring[i];
        if (fw->refs > 0) {
            i++;
            continue;
        }
        memmove(&s->retiring[i], &s->retiring[i + 1],
                (s->retiring_count - i - 1) * sizeof(*s->retiring));
        s->retiring_count--;
        current_scheduler = s;
        log_info("plugins: generation %llu closed", (unsigned long long)fw->generation);
        remote_release(s, fw); /* its plugin hosts: no cycle calls them any more */
        framework_free(fw);
        s->generations_closed++;
    }
}

/* ---- open and close ---- */

static int open_failed(struct scheduler *s, int rc)
{
    remote_close(s);
    framework_free(s->fw);
    s->fw = NULL;
    free(s->plugin_dir);
    s->plugin_dir = NULL;
    return rc;
}

int scheduler_open(struct scheduler *s, struct config *cfg, const char *plugin_dir,
                   const struct scheduler_sink *sink, const struct scheduler_clock *clock,
                   struct kc_error *err)
{
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    if (sink != NULL)
        s->sink = *sink;
    if (clock != NULL)
        s->clock = *clock;
    s->rng = cfg->seed;
    hostapi_fill(&s->host);
    cache_init(&s->cache);
    group_table_init(&s->groups);
    current_scheduler = s;
    if (plugin_dir != NULL && (s->plugin_dir = strdup(plugin_dir)) == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory");
    struct framework_load how = {.generation = 1, .private_copy = cfg->private_copies};
    int rc = framework_new(cfg, plugin_dir, &s->host, &how, &s->fw, err);
    if (rc < 0)
        return open_failed(s, rc);
    s->generations = 1;
    rc = remote_open(s, err);
    if (rc < 0)
        return open_failed(s, rc);
    if (!binds(s->fw, cfg)) {
        return open_failed(s, kc_error_set(err, -EINVAL,
                                           "no Bind plugin is configured: pods could never be "
                                           "bound; add defaultbinder to the plugins list"));
    }
    rc = workers_start(&s->workers, cfg->parallelism > 0 ? (uint32_t)cfg->parallelism : 0);
    s->worker_state = calloc(s->workers.count + 1, sizeof(*s->worker_state));
    if (rc < 0 || s->worker_state == NULL) {
        workers_stop(&s->workers);
        free(s->worker_state);
        s->worker_state = NULL;
        return open_failed(
            s, kc_error_set(err, rc < 0 ? rc : -ENOMEM, "could not start Filter threads"));
    }
    queue_init(&s->queue, s->fw->queue_sort, cfg->pod_initial_backoff_ms, cfg->pod_max_backoff_ms,
               cfg->unschedulable_flush_ms);
    return 0;
}

static void free_cycle_and_pod(struct kc_cycle *cycle)
{
    struct sched_pod *sp = cycle->sp;
    cycle_free(cycle);
    sched_pod_free(sp);
}

void scheduler_close(struct scheduler *s)
{
    current_scheduler = s;
    sched_metrics_close(s);
    struct kc_cycle **flying;
    uint32_t flying_count;
    remote_bind_drop(s, &flying, &flying_count);
    for (uint32_t i = 0; i < flying_count; i++) {
        strmap_remove(&s->pods, flying[i]->sp->pod->uid);
        free_cycle_and_pod(flying[i]);
    }
    free(flying);
    remote_close(s);
    while (s->waiting_count > 0) {
        struct kc_cycle *cycle = s->waiting[0]->cycle;
        strmap_remove(&s->pods, cycle->sp->pod->uid);
        remove_waiting(s, 0);
        free_cycle_and_pod(cycle);
    }
    free(s->waiting);
    for (uint32_t i = 0; i < s->binding_count; i++) {
        strmap_remove(&s->pods, s->binding[i]->sp->pod->uid);
        free_cycle_and_pod(s->binding[i]);
    }
    free(s->binding);
    for (uint32_t i = 0; i < s->deferred_count; i++) {
        strmap_remove(&s->pods, s->deferred[i]->sp->pod->uid);
        free_cycle_and_pod(s->deferred[i]);
    }
    free(s->deferred);
    for (uint32_t i = 0; i < s->binds_in_flight.capacity; i++) {
        struct kc_cycle *cycle = s->binds_in_flight.entries[i].value;
        if (cycle != NULL) {
            strmap_remove(&s->pods, cycle->sp->pod->uid);
            free_cycle_and_pod(cycle);
        }
    }
    strmap_free(&s->binds_in_flight);
    for (uint32_t i = 0; i < s->pods.capacity; i++)
        if (s->pods.entries[i].value != NULL)
            sched_pod_free(s->pods.entries[i].value);
    strmap_free(&s->pods);
    group_table_fini(&s->groups); /* after the pods, which leave their groups */
    for (uint32_t i = 0; i < s->assigned.capacity; i++)
        if (s->assigned.entries[i].value != NULL)
            pod_free(s->assigned.entries[i].value);
    strmap_free(&s->assigned);
    for (uint32_t i = 0; i < s->objects.capacity; i++)
        if (s->objects.entries[i].value != NULL)
            kept_object_free(s->objects.entries[i].value);
    strmap_free(&s->objects);
    if (s->worker_state != NULL) {
        uint32_t threads = s->workers.count + 1;
        workers_stop(&s->workers);
        for (uint32_t w = 0; w < threads; w++)
            reasons_clear(s->worker_state[w].reasons, &s->worker_state[w].reason_count);
        free(s->worker_state);
    }
    for (uint32_t i = 0; i < s->retiring_count; i++)
        framework_free(s->retiring[i]);
    free(s->retiring);
    framework_free(s->fw);
    free(s->plugin_dir);
    queue_fini(&s->queue);
    cache_fini(&s->cache);
    reasons_clear(s->reasons, &s->reason_count);
    free(s->feasible);
    free(s->feasible_flag);
    free(s->remote_marks);
    free(s->candidates);
    free(s->scores);
    free(s->totals);
    free(s->node_status);
    free(s->node_rejector);
    free(s->node_winner);
    free(s->nominated_first);
    free(s->nominated_count);
    free(s->nominated_pods);
    free(s->nominated_flagged);
    nominations_free(&s->nominations);
    if (current_scheduler == s)
        current_scheduler = NULL;
    memset(s, 0, sizeof(*s));
}
