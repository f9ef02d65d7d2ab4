/* Pod groups (gangs). A plugin's group_of names a pending pod's group; the runtime keeps the
 * members together: a member waits (held, holding nothing) until its group has a quorum of
 * pending members, then the first member taken from the queue starts a group cycle that places
 * every pending member on the cache in turn (each one seeing the ones before it), running every
 * plugin's phases for each, and commits all of them or rolls all of them back. Nothing of a group
 * is ever reserved while another member of it waits for room, so groups cannot deadlock holding
 * parts of the cluster. */
#include "group.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "array.h"
#include "crash.h"
#include "cycle_internal.h"
#include "evaluate.h"
#include "monotonic.h"
#include "log.h"
#include "model.h"
#include "preempt.h"
#include "remote.h"
#include "scheduler.h"

/* Longest "namespace/name" a group key can have (Kubernetes allows 63 + 1 + 253). */
#define GROUP_KEY_MAX 512

static const char PHASE_PENDING[] = "Pending";
static const char PHASE_SCHEDULING[] = "Scheduling";
static const char PHASE_SCHEDULED[] = "Scheduled";
static const char PHASE_RUNNING[] = "Running";
static const char PHASE_FAILED[] = "Failed";

/* A member seen on a node, by uid: the group it counts in and whether it runs. */
struct group_assignment {
    char *uid;
    struct pod_group *group;
    bool running;
};

/* One member's try in a group cycle. */
struct member_try {
    struct sched_pod *sp;
    struct kc_cycle *cycle; /* NULL: not tried (or out of memory) */
    struct placement placement;
    struct preempt_trial trial; /* not placed, but a preemption would place it (preempt.c) */
};

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the table ---- */

void group_table_init(struct group_table *t)
{
    memset(t, 0, sizeof(*t));
    t->next_deadline_ms = INT64_MAX;
}

static void group_free(struct pod_group *g)
{
    free(g->key);
    free(g->namespace_name);
    free(g->name);
    free(g->declarer);
    free(g->members);
    free(g->message);
    free(g->failure);
    free(g->permit_failure);
    free(g->reported_message);
    free(g);
}

void group_table_fini(struct group_table *t)
{
    for (uint32_t i = 0; i < t->groups.capacity; i++)
        if (t->groups.entries[i].value != NULL)
            group_free(t->groups.entries[i].value);
    strmap_free(&t->groups);
    for (uint32_t i = 0; i < t->assigned.capacity; i++) {
        struct group_assignment *a = t->assigned.entries[i].value;
        if (a != NULL) {
            free(a->uid);
            free(a);
        }
    }
    strmap_free(&t->assigned);
    free(t->dirty);
    group_table_init(t);
}

/* The group's status may have changed: report it at the next flush. */
static void mark(struct pod_group *g)
{
    struct group_table *t = g->table;
    if (g->dirty)
        return;
    void *grown = array_grow(t->dirty, &t->dirty_capacity, t->dirty_count + 1, sizeof(*t->dirty));
    if (grown == NULL)
        return; /* reported with the next change instead */
    t->dirty = grown;
    t->dirty[t->dirty_count++] = g;
    g->dirty = true;
}

static void set_message(struct pod_group *g, char *message)
{
    free(g->message);
    g->message = message;
    mark(g);
}

/* An attempt of the group failed with message (owned, may be NULL): its status message, and
 * what a later timeout gives as the reason. */
static void set_failure(struct pod_group *g, char *message)
{
    free(g->failure);
    g->failure = message != NULL ? strdup(message) : NULL;
    set_message(g, message);
}

/* The table's next deadline is no later than this group's, when its timeout runs. */
static void note_deadline(struct pod_group *g)
{
    if (!g->waiting || g->timeout_ms <= 0)
        return;
    int64_t deadline = g->waiting_since_ms + g->timeout_ms;
    if (deadline < g->table->next_deadline_ms)
        g->table->next_deadline_ms = deadline;
}

/* A push of a known pod does not fail (queue_reserve holds room for every pod in each part of
 * the queue); should one fail anyway, the pod goes wherever there is room, never nowhere. */
static void pushed(struct scheduler *s, struct sched_pod *sp, int rc)
{
    if (rc == 0)
        return;
    log_error("pod %s/%s: out of memory queueing it; queued where there is room",
              sp->pod->namespace, sp->pod->name);
    if (queue_push_anywhere(&s->queue, sp, scheduler_now(s)) < 0)
        log_error("pod %s/%s: no room in any queue", sp->pod->namespace, sp->pod->name);
}

/* ---- membership ---- */

/* The first plugin (configuration order) whose group_of places the pod in a group. */
static bool declared_group(struct scheduler *s, const struct pod *pod, kc_group_info *info,
                           const char **plugin)
{
    struct framework *fw = s->fw;
    for (uint32_t i = 0; i < fw->count; i++) {
        struct plugin *p = &fw->plugins[i];
        if (p->ops.group_of == NULL)
            continue;
        memset(info, 0, sizeof(*info));
        info->struct_size = sizeof(*info);
        crash_enter(p->name, "group_of");
        kc_status st = p->ops.group_of(p->self, (const kc_pod *)pod, info);
        crash_leave();
        if (st == KC_SUCCESS && info->name != NULL && info->name[0] != '\0') {
            *plugin = p->name;
            return true;
        }
    }
    return false;
}

bool group_declared_by(struct scheduler *s, const struct pod *pod, kc_group_info *info,
                       const char **plugin)
{
    return declared_group(s, pod, info, plugin);
}

/* The group a declaration names, created on first use with its description. */
static struct pod_group *group_for(struct group_table *t, const kc_group_info *info,
                                   const char *plugin)
{
    const char *ns = info->namespace_name != NULL ? info->namespace_name : "";
    char key[GROUP_KEY_MAX];
    if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, info->name) >= sizeof(key)) {
        log_warn("pod group %s/%s: the name is too long; its pods are scheduled one by one", ns,
                 info->name);
        return NULL;
    }
    struct pod_group *g = strmap_get(&t->groups, key);
    if (g == NULL) {
        g = calloc(1, sizeof(*g));
        if (g == NULL)
            return NULL;
        g->table = t;
        g->key = strdup(key);
        g->namespace_name = strdup(ns);
        g->name = strdup(info->name);
        if (g->key == NULL || g->namespace_name == NULL || g->name == NULL ||
            strmap_put(&t->groups, g->key, g) < 0) {
            group_free(g);
            return NULL;
        }
        mark(g);
    }
    uint32_t min_member = info->min_member > 0 ? info->min_member : 1;
    if (g->min_member != min_member)
        mark(g);
    if (g->declarer == NULL || strcmp(g->declarer, plugin) != 0) {
        char *name = strdup(plugin);
        if (name != NULL) {
            free(g->declarer);
            g->declarer = name;
        }
    }
    g->min_member = min_member;
    g->transaction = (info->flags & KC_GROUP_CYCLE) != 0;
    g->timeout_ms = info->schedule_timeout_ms > 0 ? info->schedule_timeout_ms : 0;
    g->backoff_ms = info->backoff_ms > 0 ? info->backoff_ms : 0;
    g->creation_ms = info->creation_ms;
    note_deadline(g); /* a shorter timeout brings a waiting group's deadline forward */
    return g;
}

static void set_held(struct sched_pod *sp, bool held)
{
    if (sp->group_held == held)
        return;
    sp->group_held = held;
    if (held)
        sp->group->held++;
    else
        sp->group->held--;
}

void group_unhold(struct sched_pod *sp)
{
    if (sp->group != NULL)
        set_held(sp, false);
}

void group_leave(struct sched_pod *sp)
{
    struct pod_group *g = sp->group;
    if (g == NULL)
        return;
    set_held(sp, false);
    uint32_t i = sp->group_index;
    g->members[i] = g->members[--g->member_count];
    g->members[i]->group_index = i;
    sp->group = NULL;
    mark(g);
}

void group_join(struct scheduler *s, struct sched_pod *sp)
{
    kc_group_info info;
    const char *plugin = NULL;
    struct pod_group *g = NULL;
    if (declared_group(s, sp->pod, &info, &plugin))
        g = group_for(&s->groups, &info, plugin);
    if (g == sp->group)
        return;
    group_leave(sp);
    if (g == NULL)
        return;
    void *grown =
        array_grow(g->members, &g->member_capacity, g->member_count + 1, sizeof(*g->members));
    if (grown == NULL) {
        log_error("pod %s/%s: out of memory joining pod group %s; scheduled on its own",
                  sp->pod->namespace, sp->pod->name, g->key);
        return;
    }
    g->members = grown;
    sp->group = g;
    sp->group_index = g->member_count;
    g->members[g->member_count++] = sp;
    mark(g);
}

static void release_on_quorum(struct scheduler *s, struct pod_group *g);

static struct group_assignment *assignment_new(struct group_table *t, const char *uid)
{
    struct group_assignment *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return NULL;
    a->uid = strdup(uid);
    if (a->uid == NULL || strmap_put(&t->assigned, a->uid, a) < 0) {
        free(a->uid);
        free(a);
        return NULL;
    }
    return a;
}

void group_assigned(struct scheduler *s, const struct pod *pod, const struct pod *old)
{
    struct group_table *t = &s->groups;
    const char *uid = pod != NULL ? pod->uid : old->uid;
    struct group_assignment *a = strmap_get(&t->assigned, uid);
    if (a != NULL) {
        a->group->assigned--;
        a->group->running -= a->running;
        mark(a->group);
    }
    kc_group_info info;
    const char *plugin = NULL;
    struct pod_group *g = NULL;
    if (pod != NULL && declared_group(s, pod, &info, &plugin))
        g = group_for(t, &info, plugin);
    if (g == NULL) {
        if (a != NULL) {
            strmap_remove(&t->assigned, uid);
            free(a->uid);
            free(a);
        }
        return;
    }
    if (a == NULL && (a = assignment_new(t, uid)) == NULL) {
        log_error("pod %s/%s: out of memory counting it in pod group %s", pod->namespace, pod->name,
                  g->key);
        return;
    }
    a->group = g;
    a->running = t->bound_pods_run || pod->phase == POD_RUNNING;
    g->assigned++;
    g->running += a->running;
    if (g->assigned >= g->min_member)
        g->bind_retried = false; /* complete: a later failure is retried at once again */
    mark(g);
    release_on_quorum(s, g);
}

/* ---- counting ---- */

/* A member that could be placed now: not gated by anything but its group. */
static bool usable(const struct sched_pod *sp)
{
    return !sp->deleted && (sp->state != SP_GATED || sp->group_held);
}

/* A member the group cycle takes out of the queue and places. */
static bool queued(const struct sched_pod *sp)
{
    return usable(sp) && (sp->state == SP_ACTIVE || sp->state == SP_BACKOFF ||
                          sp->state == SP_UNSCHEDULABLE || sp->state == SP_GATED);
}

/* Members holding a reservation: waiting in Permit or binding. */
static uint32_t reserved_members(const struct pod_group *g)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->member_count; i++)
        n += g->members[i]->state == SP_WAITING || g->members[i]->state == SP_BINDING;
    return n;
}

/* Enough members exist (pending, reserved or bound) for the quorum. */
static bool has_quorum(const struct pod_group *g)
{
    if (g->member_count + g->assigned < g->min_member)
        return false; /* the usual answer while a group's pods arrive: no scan */
    uint32_t n = g->assigned;
    for (uint32_t i = 0; i < g->member_count && n < g->min_member; i++)
        n += usable(g->members[i]);
    return n >= g->min_member;
}

const char *group_phase(const struct pod_group *g)
{
    if (g->running >= g->min_member)
        return PHASE_RUNNING;
    if (g->assigned >= g->min_member)
        return PHASE_SCHEDULED;
    if (g->timed_out)
        return PHASE_FAILED;
    if (g->member_count + g->assigned < g->min_member)
        return PHASE_PENDING;
    return PHASE_SCHEDULING;
}

/* ---- waiting, timeout and backoff ---- */

/* The group's quorum is not placed: its timeout runs from now unless it already does. */
static void start_waiting(struct pod_group *g, int64_t now)
{
    if (g->waiting)
        return;
    g->waiting = true;
    g->waiting_since_ms = now;
    note_deadline(g);
}

/* The quorum is placed (or the wait ended otherwise): the timeout stops, and the earliest
 * deadline is found again so nobody waits for one that no longer exists. */
static void stop_waiting(struct pod_group *g)
{
    struct group_table *t = g->table;
    if (!g->waiting)
        return;
    g->waiting = false;
    if (g->timeout_ms <= 0 || g->waiting_since_ms + g->timeout_ms > t->next_deadline_ms)
        return;
    int64_t next = INT64_MAX;
    for (uint32_t i = 0; i < t->groups.capacity; i++) {
        const struct pod_group *o = t->groups.entries[i].value;
        if (o != NULL && o->waiting && o->timeout_ms > 0 &&
            o->waiting_since_ms + o->timeout_ms < next)
            next = o->waiting_since_ms + o->timeout_ms;
    }
    t->next_deadline_ms = next;
}

static int64_t group_backoff_ms(const struct scheduler *s, const struct pod_group *g)
{
    int64_t backoff = queue_backoff_ms(&s->queue, g->failures > 0 ? g->failures : 1);
    return g->backoff_ms > backoff ? g->backoff_ms : backoff;
}

/* Hold a member until its group has a quorum: gated, holding nothing. */
static void hold(struct scheduler *s, struct pod_group *g, struct sched_pod *sp)
{
    /* no count in the text: it would go stale on the members held before the last one */
    char *reason = text_format("pod group %s: fewer than minMember %u members exist; waiting for "
                               "the others",
                               g->key, g->min_member);
    if (reason != NULL) {
        free(sp->reason);
        sp->reason = reason;
    }
    set_held(sp, true);
    int rc = queue_push_gated(&s->queue, sp);
    if (rc < 0)
        set_held(sp, false); /* not gated: it comes back through the queue and is held then */
    pushed(s, sp, rc);
    start_waiting(g, scheduler_now(s));
    mark(g);
}

/* A held member of g into the active queue; false when g holds none. */
static bool release_one(struct scheduler *s, struct pod_group *g, uint32_t *from)
{
    for (; *from < g->member_count && g->held > 0; (*from)++) {
        struct sched_pod *m = g->members[*from];
        if (!m->group_held || m->state != SP_GATED)
            continue;
        queue_remove(&s->queue, m);
        set_held(m, false);
        pushed(s, m, queue_push_active(&s->queue, m));
        return true;
    }
    return false;
}

/* The permit path: a group whose quorum exists lets its held members into the queue, each to
 * be scheduled on its own (a Permit plugin holds them until the group is complete). */
static void release_held(struct scheduler *s, struct pod_group *g)
{
    stop_waiting(g);
    uint32_t from = 0;
    while (release_one(s, g, &from))
        ;
}

/* Bound members came (after a restart or a leader failover the pending members of a group may
 * be listed before its bound ones): when they complete the quorum of a group whose members are
 * held, the held members go on. */
static void release_on_quorum(struct scheduler *s, struct pod_group *g)
{
    if (g->held == 0 || !has_quorum(g))
        return;
    if (!g->transaction || g->assigned + reserved_members(g) >= g->min_member) {
        release_held(s, g); /* the permit path, or the group runs: each goes on its own */
        return;
    }
    /* the group cycle: the member taken from the queue collects the others */
    uint32_t from = 0;
    release_one(s, g, &from);
}

bool group_hold(struct scheduler *s, struct sched_pod *sp)
{
    struct pod_group *g = sp->group;
    if (g == NULL)
        return false;
    if (has_quorum(g)) {
        set_held(sp, false);
        if (!g->transaction && g->held > 0)
            release_held(s, g);
        return false; /* a group cycle collects the held members when this pod is taken */
    }
    hold(s, g, sp);
    return true;
}

/* scheduleTimeoutSeconds passed without the quorum placed: the group is Failed, its pending
 * members (holding nothing) back off and are tried again. */
static void time_out(struct scheduler *s, struct pod_group *g, int64_t now)
{
    g->table->timeouts++;
    g->timed_out = true;
    g->waiting = false; /* group_tick finds the next deadline */
    g->failures++;
    g->backoff_until_ms = now + group_backoff_ms(s, g);
    char *message = text_format(
        "pod group %s: its quorum of %u members was not placed within scheduleTimeoutSeconds "
        "(%lld s): %s",
        g->key, g->min_member, (long long)(g->timeout_ms / 1000),
        g->failure != NULL ? g->failure : "too few members exist");
    for (uint32_t i = 0; i < g->member_count; i++) {
        struct sched_pod *m = g->members[i];
        if (!queued(m))
            continue;
        queue_remove(&s->queue, m);
        set_held(m, false);
        if (message != NULL) {
            free(m->reason);
            m->reason = strdup(message);
        }
        if (s->sink.unschedulable != NULL)
            s->sink.unschedulable(s->sink.ctx, m->pod, "Unschedulable", m->reason);
        pushed(s, m, queue_push_backoff_until(&s->queue, m, g->backoff_until_ms));
    }
    log_info("%s", message != NULL ? message : g->key);
    set_message(g, message);
}

/* A committed member that can no longer be bound: its pod or its node was deleted. Writes what
 * happened to why. */
static bool gone(const struct scheduler *s, const struct kc_cycle *cycle, char *why, size_t size)
{
    if (cycle->sp->deleted)
        snprintf(why, size, "was deleted");
    else if (cache_node(&s->cache, cycle->node_name) == NULL)
        snprintf(why, size, "lost its node %s", cycle->node_name);
    else
        return false;
    return true;
}

/* Committed groups waiting in Permit, their members held by the runtime (group_hold, which no
 * plugin's allow lifts): when a member was rejected, its wait expired or it went away (its pod
 * or its node deleted), every member is rejected now (in the same tick, before the waiting pods
 * are processed, so none is bound or kept alone); when no member waits for a plugin any more,
 * the runtime lets all of them go. */
static void settle_permit_holds(struct scheduler *s, int64_t now)
{
    struct group_table *t = &s->groups;
    uint64_t round = ++t->permit_round;
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        struct kc_waiting_pod *w = s->waiting[i];
        struct pod_group *g = w->cycle->sp->group;
        if (g == NULL || !w->group_hold)
            continue;
        if (g->permit_round != round) {
            g->permit_round = round;
            g->permit_failed = g->permit_pending = false;
        }
        char why[320];
        bool failed = true;
        if (w->rejected)
            snprintf(why, sizeof(why), "was rejected in Permit");
        else if (w->pending != 0 && now >= w->deadline_ms)
            snprintf(why, sizeof(why), "was not allowed in Permit in time");
        else
            failed = gone(s, w->cycle, why, sizeof(why));
        if (failed && !g->permit_failed) {
            g->permit_failed = true;
            free(g->permit_failure);
            g->permit_failure = text_format(
                "pod group %s: member %s/%s %s; the group's members are released together", g->key,
                w->cycle->sp->pod->namespace, w->cycle->sp->pod->name, why);
        }
        g->permit_pending = g->permit_pending || w->pending != 0;
    }
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        struct kc_waiting_pod *w = s->waiting[i];
        struct pod_group *g = w->cycle->sp->group;
        if (g == NULL || !w->group_hold || g->permit_round != round)
            continue;
        if (g->permit_failed)
            /* by name: the member's cycle may run on an older generation than s->fw */
            waiting_pod_reject(w, g->declarer,
                               g->permit_failure != NULL ? g->permit_failure : g->key);
        else if (!g->permit_pending)
            w->group_hold = false;
    }
    /* settled groups stop holding; the others are looked at again next tick */
    for (uint32_t i = 0; i < s->waiting_count; i++) {
        struct pod_group *g = s->waiting[i]->cycle->sp->group;
        if (g != NULL && g->permit_hold && g->permit_round == round &&
            (g->permit_failed || !g->permit_pending)) {
            g->permit_hold = false;
            t->permit_holds--;
        }
    }
}

void group_check_bindings(struct scheduler *s, struct kc_cycle **cycles, uint32_t *count)
{
    struct group_table *t = &s->groups;
    uint64_t round = 0;
    uint32_t n = *count;
    /* the groups with a member gone; cycle->group: placed by a group cycle */
    for (uint32_t i = 0; i < n; i++) {
        const struct kc_cycle *c = cycles[i];
        struct pod_group *g = c->group != NULL ? c->sp->group : NULL;
        char why[320];
        if (g == NULL || (round != 0 && g->release_round == round) || !gone(s, c, why, sizeof(why)))
            continue;
        if (round == 0)
            round = ++t->release_round;
        g->release_round = round;
        set_failure(g, text_format("pod group %s: member %s/%s %s before binding; the group's "
                                   "members are released together",
                                   g->key, c->sp->pod->namespace, c->sp->pod->name, why));
    }
    if (round == 0)
        return;
    int64_t now = scheduler_now(s);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct kc_cycle *c = cycles[i];
        struct pod_group *g = c->group != NULL ? c->sp->group : NULL;
        if (g == NULL || g->release_round != round) {
            cycles[kept++] = c;
            continue;
        }
        start_waiting(g, now); /* its quorum is not placed any more */
        scheduler_release(s, c,
                          g->message != NULL ? g->message
                                             : "a member of the pod group went away before binding",
                          0);
    }
    *count = kept;
}

void group_binding_failed(struct scheduler *s, struct sched_pod *sp)
{
    struct pod_group *g = sp->group;
    if (g == NULL || !g->transaction || sp->state != SP_BACKOFF)
        return;
    uint32_t holding = g->assigned + reserved_members(g);
    if (holding == 0 || holding >= g->min_member)
        return; /* nothing of the group holds a node, or it is still whole */
    start_waiting(g, scheduler_now(s));
    mark(g);
    if (g->bind_retried)
        return; /* failed again: the pod's backoff, as usual */
    g->bind_retried = true;
    queue_remove(&s->queue, sp);
    pushed(s, sp, queue_push_active(&s->queue, sp));
}

void group_tick(struct scheduler *s, int64_t now)
{
    struct group_table *t = &s->groups;
    if (t->permit_holds > 0)
        settle_permit_holds(s, now);
    if (now < t->next_deadline_ms)
        return;
    int64_t next = INT64_MAX;
    for (uint32_t i = 0; i < t->groups.capacity; i++) {
        struct pod_group *g = t->groups.entries[i].value;
        if (g == NULL || !g->waiting || g->timeout_ms <= 0)
            continue;
        int64_t deadline = g->waiting_since_ms + g->timeout_ms;
        if (deadline <= now)
            time_out(s, g, now);
        else if (deadline < next)
            next = deadline;
    }
    t->next_deadline_ms = next;
}

int64_t group_next_due(const struct scheduler *s)
{
    return s->groups.next_deadline_ms;
}

/* ---- the group cycle ---- */

static int compare_members(const void *a, const void *b, void *queue)
{
    const struct member_try *x = a, *y = b;
    if (queue_before(queue, x->sp, y->sp))
        return -1;
    return queue_before(queue, y->sp, x->sp) ? 1 : 0;
}

/* The first member and every other queued member, out of the queue, in queue order. */
static uint32_t collect(struct scheduler *s, struct pod_group *g, struct sched_pod *first,
                        struct member_try *tries, int64_t now)
{
    uint32_t count = 0;
    tries[count++].sp = first;
    for (uint32_t i = 0; i < g->member_count; i++) {
        struct sched_pod *m = g->members[i];
        if (m == first || !queued(m))
            continue;
        queue_remove(&s->queue, m);
        set_held(m, false);
        tries[count++].sp = m;
    }
    qsort_r(tries + 1, count - 1, sizeof(*tries), compare_members, &s->queue);
    for (uint32_t i = 0; i < count; i++) {
        tries[i].sp->attempts++;
        tries[i].sp->attempt_start_us = monotonic_us();
        tries[i].sp->last_attempt_ms = now;
        s->stats.attempts++;
    }
    return count;
}

/* Place the members in turn on the cache, each seeing the ones before it. Stops when the quorum
 * is out of reach. Returns how many were placed; *tried how many were tried. */
static uint32_t place_members(struct scheduler *s, struct pod_group *g, struct member_try *tries,
                              uint32_t count, uint32_t needed, bool trials, uint32_t *tried,
                              uint32_t *preempting)
{
    uint32_t placed = 0;
    *tried = 0;
    *preempting = 0;
    for (uint32_t i = 0; i < count; i++) {
        struct member_try *m = &tries[i];
        *tried = i + 1;
        m->cycle = cycle_new(s, m->sp);
        if (m->cycle == NULL) {
            m->placement.error = true;
        } else {
            m->cycle->group = g;
            m->cycle->group_index = i;
            m->cycle->group_count = count;
            m->cycle->group_needed = needed;
            scheduler_place(s, m->cycle, &m->placement);
            /* a PostFilter plugin found victims for it: the members after it see them gone */
            if (!m->placement.placed && m->cycle->preemption != NULL && trials &&
                preempt_trial_apply(s, m->cycle, &m->trial) == 0)
                (*preempting)++;
        }
        if (m->placement.placed)
            placed++;
        else if (placed + *preempting + (count - i - 1) < needed)
            break;
    }
    return placed;
}

/* Whether a member that was not placed had victims chosen for it (in a first pass, whose
 * choices are not applied). */
static bool victims_found(const struct member_try *tries, uint32_t tried)
{
    for (uint32_t i = 0; i < tried; i++)
        if (!tries[i].placement.placed && tries[i].cycle != NULL &&
            tries[i].cycle->preemption != NULL)
            return true;
    return false;
}

/* Forget a pass of place_members without failing anyone: placed members undone in reverse. */
static void undo_pass(struct scheduler *s, struct member_try *tries, uint32_t tried)
{
    for (uint32_t i = tried; i-- > 0;) {
        struct member_try *m = &tries[i];
        if (m->placement.placed)
            scheduler_rollback(s, m->cycle);
        cycle_free(m->cycle);
        m->cycle = NULL;
        free(m->placement.message);
        memset(&m->placement, 0, sizeof(m->placement));
    }
}

/* Undo every member's preemption trial, in reverse; nothing is evicted. */
static void undo_trials(struct scheduler *s, struct member_try *tries, uint32_t tried)
{
    for (uint32_t i = tried; i-- > 0;)
        preempt_trial_undo(s, &tries[i].trial);
}

/* The quorum fits only if some members preempt: the whole group preempts at once (never part
 * of it). The cache is restored, the placed members are undone and nominated where they were
 * placed (their room is kept), the preempting ones are nominated on their nodes and their
 * victims evicted; every member then waits for the victims to go, with the group's reason. */
static void preempt_for_group(struct scheduler *s, struct pod_group *g, struct member_try *tries,
                              uint32_t count, uint32_t tried, uint32_t placed,
                              uint32_t preempting, int64_t now)
{
    undo_trials(s, tries, tried);
    for (uint32_t i = tried; i-- > 0;) {
        struct member_try *m = &tries[i];
        if (!m->placement.placed)
            continue;
        char node[256];
        snprintf(node, sizeof(node), "%s", m->cycle->node_name);
        scheduler_rollback(s, m->cycle);
        preempt_nominate(s, m->sp, node);
    }
    uint32_t victims = 0;
    for (uint32_t i = 0; i < tried; i++) {
        victims += tries[i].trial.p != NULL ? tries[i].trial.p->victim_count : 0;
        preempt_trial_carry_out(s, &tries[i].trial);
    }
    char *message = text_format("pod group %s: %u members placed and %u preempting %u pods of "
                                "lower priority: the whole group waits for them to go",
                                g->key, placed, preempting, victims);
    g->failures++;
    g->backoff_until_ms = now + group_backoff_ms(s, g);
    for (uint32_t i = 0; i < count; i++) {
        struct member_try *m = &tries[i];
        cycle_free(m->cycle);
        m->cycle = NULL;
        scheduler_fail_pod(s, m->sp, false, message != NULL ? message : "preempting",
                           g->backoff_until_ms);
    }
    start_waiting(g, now);
    set_failure(g, message);
}

/* The quorum is placed: every placed member goes on to Permit's wait or its binding cycle; the
 * ones beyond the quorum that did not fit are failed on their own. When a Permit plugin made
 * some members wait, all of them wait, held by the runtime (in the name of the group's plugin)
 * until every wait is over (group_tick): the group is bound together or released together. */
static void commit(struct scheduler *s, struct pod_group *g, struct member_try *tries,
                   uint32_t tried)
{
    bool hold = false;
    for (uint32_t i = 0; i < tried; i++)
        hold = hold || (tries[i].placement.placed && tries[i].placement.permit == KC_WAIT);
    for (uint32_t i = 0; i < tried; i++) {
        struct member_try *m = &tries[i];
        if (m->placement.placed) {
            struct placement p = m->placement;
            if (hold && p.permit != KC_WAIT) {
                p.permit = KC_WAIT;
                p.timeout_ms = PERMIT_MAX_TIMEOUT_MS; /* its siblings' waits decide */
                /* the position of the group's plugin in the member's own generation; none
                 * (it left the configuration): scheduler_commit names the group's plugin */
                const struct plugin *declarer =
                    g->declarer != NULL ? framework_plugin(m->cycle->fw, g->declarer) : NULL;
                p.wait_plugin = declarer != NULL ? declarer->index : UINT32_MAX;
            }
            p.group_hold = hold;
            scheduler_commit(s, m->cycle, &p);
        } else {
            cycle_free(m->cycle);
            scheduler_fail_pod(
                s, m->sp, m->placement.error,
                m->placement.message != NULL ? m->placement.message : "out of memory", 0);
        }
    }
    g->table->admitted++;
    if (hold && !g->permit_hold) {
        g->permit_hold = true;
        g->table->permit_holds++;
    }
    stop_waiting(g);
    g->timed_out = false;
    g->failures = 0;
    g->backoff_until_ms = 0;
    free(g->failure);
    g->failure = NULL;
    set_message(g, NULL);
}

/* The quorum did not fit: undo every placed member in reverse, then fail all of them with the
 * group's reason and back the group off. */
static void roll_back(struct scheduler *s, struct pod_group *g, struct member_try *tries,
                      uint32_t count, uint32_t tried, uint32_t placed, uint32_t needed, int64_t now)
{
    const struct member_try *failure = NULL;
    uint64_t rejectors = 0;
    for (uint32_t i = tried; i-- > 0;) {
        struct member_try *m = &tries[i];
        if (m->placement.placed)
            scheduler_rollback(s, m->cycle);
        else
            failure = m; /* the earliest failure */
        if (m->cycle != NULL)
            rejectors |= m->cycle->rejectors;
    }
    const struct pod *pod = failure != NULL ? failure->sp->pod : tries[0].sp->pod;
    const char *why = failure != NULL && failure->placement.message != NULL
                          ? failure->placement.message
                          : "out of memory";
    char *message = text_format("pod group %s: %u of the %u members needed could be placed "
                                "together (all or nothing); %s/%s: %s",
                                g->key, placed, needed, pod->namespace, pod->name, why);
    g->table->rollbacks++;
    g->failures++;
    g->backoff_until_ms = now + group_backoff_ms(s, g);
    bool error = failure != NULL && failure->placement.error;
    for (uint32_t i = 0; i < count; i++) {
        struct member_try *m = &tries[i];
        cycle_free(m->cycle);
        m->cycle = NULL;
        m->sp->rejectors = rejectors;
        scheduler_fail_pod(s, m->sp, error, message != NULL ? message : why, g->backoff_until_ms);
    }
    start_waiting(g, now);
    set_failure(g, message);
}

/* The members go to a plugin host that evaluates them together (up to 64 a request), each
 * seeing the ones before it (remote.h); the placement below takes their evaluations from its
 * answers. */
static void batch_members(struct scheduler *s, const struct member_try *tries, uint32_t count)
{
    if (s->fw->host_count == 0 || count < 2)
        return;
    const struct pod **pods = calloc(count, sizeof(*pods));
    if (pods == NULL)
        return; /* the members go one by one */
    for (uint32_t i = 0; i < count; i++)
        pods[i] = tries[i].sp->pod;
    remote_group_begin(s, s->fw, pods, count);
    free(pods);
}

static void group_cycle(struct scheduler *s, struct pod_group *g, struct sched_pod *first,
                        uint32_t reserved, int64_t now)
{
    int64_t started = wall_us();
    struct group_table *t = &s->groups;
    uint32_t needed = g->min_member - g->assigned - reserved;
    struct member_try *tries = calloc(g->member_count + 1, sizeof(*tries));
    if (tries == NULL) {
        first->attempts++;
        scheduler_fail_pod(s, first, true, "out of memory starting a group cycle", 0);
        return;
    }
    t->cycles++;
    g->timed_out = false;
    uint32_t count = collect(s, g, first, tries, now);
    uint32_t tried, preempting;
    batch_members(s, tries, count);
    uint32_t placed = place_members(s, g, tries, count, needed, false, &tried, &preempting);
    remote_group_end(s);
    if (placed < needed && victims_found(tries, tried)) {
        /* the quorum does not fit as the cluster is, but victims exist: a second pass where
         * each member's preemption is tried on the cache, so the members after it see the room
         * it would make. Only the whole quorum preempts, or nobody. */
        undo_pass(s, tries, tried);
        placed = place_members(s, g, tries, count, needed, true, &tried, &preempting);
    }
    if (placed >= needed && g->assigned + reserved == 0)
        g->bind_retried = false; /* the whole quorum anew */
    if (placed >= needed && preempting == 0) {
        commit(s, g, tries, tried);
    } else if (placed + preempting >= needed) {
        preempt_for_group(s, g, tries, count, tried, placed, preempting, now);
    } else {
        undo_trials(s, tries, tried); /* the group would not fit even so: nobody is evicted */
        roll_back(s, g, tries, count, tried, placed, needed, now);
    }
    for (uint32_t i = 0; i < count; i++) {
        free(tries[i].placement.message);
        preempt_trial_free(&tries[i].trial);
    }
    free(tries);
    mark(g);
    t->last_cycle_us = wall_us() - started;
}

bool group_schedule(struct scheduler *s, struct sched_pod *sp)
{
    group_join(s, sp); /* the PodGroup may have appeared or changed since the pod arrived */
    struct pod_group *g = sp->group;
    if (g == NULL)
        return false;
    uint32_t reserved = reserved_members(g);
    if (g->assigned + reserved >= g->min_member)
        return false; /* the group runs: a member beyond its quorum goes on its own */
    if (!has_quorum(g)) {
        hold(s, g, sp);
        return true;
    }
    int64_t now = scheduler_now(s);
    if (now < g->backoff_until_ms) {
        pushed(s, sp, queue_push_backoff_until(&s->queue, sp, g->backoff_until_ms));
        return true;
    }
    if (!g->transaction) {
        release_held(s, g);
        return false;
    }
    group_cycle(s, g, sp, reserved, now);
    return true;
}

void group_recheck(struct scheduler *s)
{
    struct group_table *t = &s->groups;
    uint32_t count = 0;
    for (uint32_t i = 0; i < t->groups.capacity; i++) {
        const struct pod_group *g = t->groups.entries[i].value;
        count += g != NULL && g->held > 0;
    }
    if (count == 0)
        return;
    /* group_join below may add groups to the map: walk a copy */
    struct pod_group **groups = malloc(count * sizeof(*groups));
    if (groups == NULL)
        return;
    count = 0;
    for (uint32_t i = 0; i < t->groups.capacity; i++) {
        struct pod_group *g = t->groups.entries[i].value;
        if (g != NULL && g->held > 0)
            groups[count++] = g;
    }
    for (uint32_t k = 0; k < count; k++) {
        struct pod_group *g = groups[k];
        struct sched_pod *probe = NULL;
        for (uint32_t i = 0; i < g->member_count && probe == NULL; i++)
            if (g->members[i]->group_held)
                probe = g->members[i];
        if (probe == NULL)
            continue;
        uint32_t min_member = g->min_member;
        group_join(s, probe);
        if (probe->group == g && g->min_member == min_member)
            continue; /* nothing this object changed */
        /* the group changed or went away: its held members (and the probe, which may have
         * left it) go through the queue again */
        struct sched_pod **held = malloc((g->held + 1) * sizeof(*held));
        if (held == NULL)
            continue;
        uint32_t n = 0;
        held[n++] = probe;
        for (uint32_t i = 0; i < g->member_count; i++)
            if (g->members[i]->group_held)
                held[n++] = g->members[i];
        for (uint32_t i = 0; i < n; i++) {
            queue_remove(&s->queue, held[i]);
            if (held[i]->group != NULL)
                set_held(held[i], false);
            group_join(s, held[i]);
            scheduler_enqueue(s, held[i]);
        }
        free(held);
    }
    free(groups);
}

/* ---- status ---- */

static bool same_text(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void report(struct scheduler *s, struct pod_group *g)
{
    const char *phase = group_phase(g);
    if (phase == g->reported_phase && g->assigned == g->reported_scheduled &&
        g->running == g->reported_running && same_text(g->message, g->reported_message))
        return;
    g->reported_phase = phase;
    g->reported_scheduled = g->assigned;
    g->reported_running = g->running;
    free(g->reported_message);
    g->reported_message = g->message != NULL ? strdup(g->message) : NULL;
    if (s->sink.group_status != NULL)
        s->sink.group_status(s->sink.ctx, g->namespace_name, g->name, phase, g->assigned,
                             g->running, g->message);
}

void group_flush_status(struct scheduler *s)
{
    struct group_table *t = &s->groups;
    for (uint32_t i = 0; i < t->dirty_count; i++) {
        struct pod_group *g = t->dirty[i];
        g->dirty = false;
        report(s, g);
        if (g->member_count == 0 && g->assigned == 0) {
            strmap_remove(&t->groups, g->key);
            group_free(g);
        }
    }
    t->dirty_count = 0;
}
