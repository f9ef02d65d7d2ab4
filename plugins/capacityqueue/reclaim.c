/* Reclaim (PostFilter): a pod of a queue within its guarantee that fits no node takes back what
 * other queues borrowed. On every node Filter found short, victims are taken from borrowing
 * queues only (lowest priority first, then the most recently started), a pod group's members
 * all together or none, and never so many that a queue drops below its guarantee before the
 * eviction; the node needing the fewest victims wins. The runtime's preemption path evicts them
 * (kc_preempt, and kc_preempt_more for group members on other nodes). */
#include "capacityqueue.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REASON_SIZE 512

/* One victim unit: a pod, or every placed member of its pod group. */
struct unit {
    const kc_pod **pods; /* handles; on the node first (on_node of them), then elsewhere */
    uint32_t count, on_node;
    int32_t priority; /* the highest of its pods */
    int64_t start_ms; /* the latest start of its pods */
    bool chosen;
};

struct plan {
    struct unit *units;
    uint32_t count;
    uint32_t victims;   /* pods of the chosen units */
    int32_t top_priority;
};

/* Per queue, what the plan takes away so far. */
struct taken {
    int64_t (*usage)[KC_RESOURCE_MAX];
    uint32_t queues;
};

static const kc_pod *pod_on(const kc_node *node, const char *uid)
{
    uint32_t n = kc_node_pod_count(node);
    for (uint32_t i = 0; node != NULL && i < n; i++) {
        const kc_pod *pod = kc_node_pod_at(node, i);
        if (pod != NULL && strcmp(kc_pod_uid(pod), uid) == 0)
            return pod;
    }
    return NULL;
}

static void plan_clear(struct plan *plan)
{
    for (uint32_t i = 0; i < plan->count; i++)
        free(plan->units[i].pods);
    free(plan->units);
    memset(plan, 0, sizeof(*plan));
}

/* The members of pod's group placed anywhere, pod first; false when one cannot be reached or
 * is already going (the group then goes whole with nothing of ours, or not at all). */
static bool gather_unit(const struct cq_plugin *pl, const kc_node *node, const kc_pod *pod,
                        const struct cq_pod *t, struct unit *u)
{
    uint32_t capacity = 1;
    if (t->group != NULL)
        for (uint32_t b = 0; b < pl->pod_buckets; b++)
            for (const struct cq_pod *s = pl->pods[b]; s != NULL; s = s->next)
                capacity += s != t && s->node != NULL && s->group != NULL &&
                            strcmp(s->group, t->group) == 0;
    u->pods = calloc(capacity, sizeof(*u->pods));
    if (u->pods == NULL)
        return false;
    u->pods[u->count++] = pod;
    u->priority = kc_pod_priority(pod);
    u->start_ms = kc_pod_start_ms(pod);
    if (t->group == NULL) {
        u->on_node = 1;
        return true;
    }
    const char *here = kc_node_name(node);
    /* two passes: the members on this node, then elsewhere */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t b = 0; b < pl->pod_buckets; b++)
            for (const struct cq_pod *s = pl->pods[b]; s != NULL; s = s->next) {
                if (s == t || s->node == NULL || s->group == NULL ||
                    strcmp(s->group, t->group) != 0)
                    continue;
                bool local = strcmp(s->node, here) == 0;
                if (local != (pass == 0))
                    continue;
                const kc_pod *member = pod_on(local ? node : kc_node_by_name(s->node), s->uid);
                if (member == NULL || kc_pod_terminating(member))
                    return false;
                u->pods[u->count++] = member;
                if (kc_pod_priority(member) > u->priority)
                    u->priority = kc_pod_priority(member);
                if (kc_pod_start_ms(member) > u->start_ms)
                    u->start_ms = kc_pod_start_ms(member);
            }
        if (pass == 0)
            u->on_node = u->count;
    }
    return true;
}

/* Add pod's unit (with its group) to the plan, unless a unit holds it already (a group member
 * gathered with another). */
static void add_unit(const struct cq_plugin *pl, const kc_node *node, const kc_pod *pod,
                     const struct cq_pod *t, struct plan *plan)
{
    for (uint32_t u = 0; u < plan->count; u++)
        for (uint32_t k = 0; k < plan->units[u].count; k++)
            if (plan->units[u].pods[k] == pod)
                return;
    struct unit *u = &plan->units[plan->count];
    if (gather_unit(pl, node, pod, t, u))
        plan->count++;
    else {
        free(u->pods);
        memset(u, 0, sizeof(*u));
    }
}

/* Lowest priority first, then the most recently started. */
static int evict_first(const void *a, const void *b)
{
    const struct unit *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return (x->start_ms < y->start_ms) - (x->start_ms > y->start_ms);
}

/* Whether a pod of queue index may be taken: some queue on its path below the queues it shares
 * with the preemptor holds more than its guarantee of a resource the preemptor needs (need),
 * once the victims chosen so far (taken) are gone; never from a queue that is not
 * reclaimable. */
static bool borrowing_queue(const struct cq_plugin *pl, const bool *shared, const struct taken *tk,
                            int32_t index, uint64_t need)
{
    for (uint32_t steps = 0; index >= 0 && !shared[index];
         index = cq_tree_up(&pl->tree, index, &steps)) {
        const struct cq_queue *q = &pl->tree.queues[index];
        if (!q->reclaimable)
            return false;
        for (uint64_t m = need; m != 0; m &= m - 1) {
            int r = __builtin_ctzll(m);
            /* victims already leaving do not count as borrowed: no second reclaim for them */
            if (cq_effective_usage(q, r) - tk->usage[index][r] > q->guaranteed[r])
                return true;
        }
    }
    return false;
}

/* Apply (sign 1) or undo (-1) unit u's requests on what the plan takes from each queue. */
static void take(const struct cq_plugin *pl, struct taken *tk, const struct unit *u, int sign)
{
    for (uint32_t i = 0; i < u->count; i++) {
        const struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(u->pods[i]));
        uint32_t steps = 0;
        for (int32_t at = t != NULL ? t->index : -1; at >= 0;
             at = cq_tree_up(&pl->tree, at, &steps))
            for (uint32_t k = 0; k < t->count; k++)
                tk->usage[at][t->ids[k]] += sign * t->values[k];
    }
}

/* Whether the preemptor fits node with the chosen units' pods on it gone. */
static bool fits_without(kc_cycle *cycle, const kc_node *node, const struct plan *plan,
                         const kc_pod **removed, char *reason)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < plan->count; i++)
        for (uint32_t k = 0; plan->units[i].chosen && k < plan->units[i].on_node; k++)
            removed[n++] = plan->units[i].pods[k];
    return kc_filter_what_if(cycle, node, removed, n, reason, REASON_SIZE) == KC_SUCCESS;
}

/* The units on node that may be taken for the preemptor (of queue index, needing need). */
static int collect(const struct cq_plugin *pl, const kc_node *node, const struct cq_pod *self,
                   const bool *shared, const struct taken *tk, uint64_t need, struct plan *plan)
{
    uint32_t n = kc_node_pod_count(node);
    plan->units = calloc(n + 1, sizeof(*plan->units));
    if (plan->units == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const kc_pod *pod = kc_node_pod_at(node, i);
        const struct cq_pod *t = pod != NULL ? cq_pod_find(pl, kc_pod_uid(pod)) : NULL;
        if (t == NULL || t == self || t->index < 0 || t->node == NULL || t->leaving ||
            kc_pod_terminating(pod))
            continue;
        /* pods of queues within their guarantee are never taken: skip them before gathering
         * their groups (plan_node checks again as victims are chosen) */
        if (!borrowing_queue(pl, shared, tk, t->index, need & t->mask))
            continue;
        add_unit(pl, node, pod, t, plan);
    }
    qsort(plan->units, plan->count, sizeof(*plan->units), evict_first);
    return 0;
}

/* Choose victims on node: least important units first while they are borrowed, until the pod
 * fits; then give back (most important first) those it fits without. true when it fits. */
static bool plan_node(const struct cq_plugin *pl, kc_cycle *cycle, const kc_node *node,
                      const struct cq_pod *self, const bool *shared, struct taken *tk,
                      uint64_t need, struct plan *plan, const kc_pod **removed, char *reason)
{
    if (collect(pl, node, self, shared, tk, need, plan) != 0)
        return false;
    bool fits = false;
    for (uint32_t i = 0; i < plan->count && !fits; i++) {
        struct unit *u = &plan->units[i];
        const struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(u->pods[0]));
        if (!borrowing_queue(pl, shared, tk, t->index, need & t->mask))
            continue;
        u->chosen = true;
        take(pl, tk, u, 1);
        fits = fits_without(cycle, node, plan, removed, reason);
    }
    for (uint32_t i = plan->count; fits && i-- > 0;) {
        struct unit *u = &plan->units[i];
        if (!u->chosen)
            continue;
        u->chosen = false;
        if (fits_without(cycle, node, plan, removed, reason)) {
            take(pl, tk, u, -1);
            continue;
        }
        u->chosen = true;
    }
    for (uint32_t i = 0; i < plan->count; i++) {
        const struct unit *u = &plan->units[i];
        if (!u->chosen)
            continue;
        take(pl, tk, u, -1); /* the next node starts from the cluster as it is */
        plan->victims += u->count;
        if (plan->victims == u->count || u->priority > plan->top_priority)
            plan->top_priority = u->priority;
    }
    return fits;
}

static bool better(const struct plan *a, const struct plan *b)
{
    if (a->victims != b->victims)
        return a->victims < b->victims;
    return a->top_priority < b->top_priority;
}

/* Carry the plan out through the runtime. */
static int carry_out(const struct cq_plugin *pl, kc_cycle *cycle, const kc_node *node,
                     const struct plan *plan)
{
    uint32_t victims = 0;
    for (uint32_t i = 0; i < plan->count; i++)
        victims += plan->units[i].chosen ? plan->units[i].count : 0;
    const kc_pod **local = calloc(victims + 1, sizeof(*local));
    const kc_pod **elsewhere = calloc(victims + 1, sizeof(*elsewhere));
    uint32_t nl = 0, ne = 0;
    int rc = local != NULL && elsewhere != NULL ? 0 : -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < plan->count; i++)
        for (uint32_t k = 0; plan->units[i].chosen && k < plan->units[i].count; k++) {
            const struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(plan->units[i].pods[k]));
            if (t != NULL && t->node != NULL && strcmp(t->node, kc_node_name(node)) == 0)
                local[nl++] = plan->units[i].pods[k];
            else
                elsewhere[ne++] = plan->units[i].pods[k];
        }
    if (rc == 0)
        rc = kc_preempt(cycle, node, local, nl);
    if (rc == 0 && ne > 0)
        rc = kc_preempt_more(cycle, elsewhere, ne);
    if (rc != 0 && ne > 0)
        kc_preempt(cycle, NULL, NULL, 0); /* a group goes whole or not at all */
    free(local);
    free(elsewhere);
    return rc;
}

/* The resources the queue guarantees that the pod asks for, or 0 when taking the pod would put
 * the queue above its guarantee of one of them (then nothing is reclaimed for it). */
static uint64_t reclaim_need(const struct cq_queue *q, const struct cq_pod *p)
{
    uint64_t need = p->mask & q->guaranteed_listed;
    for (uint32_t i = 0; i < p->count; i++) {
        int r = p->ids[i];
        /* the queue's nominated preemptors count as placed (the pod's own claim aside) */
        int64_t held = cq_effective_usage(q, r) - (p->claimed ? p->values[i] : 0);
        if ((need & (1ull << r)) && held + p->values[i] > q->guaranteed[r])
            return 0;
    }
    return need;
}

/* Whether queue index is refusing or below it. */
static bool under(const struct cq_tree *tree, int32_t index, int32_t refusing)
{
    for (uint32_t steps = 0; index >= 0; index = cq_tree_up(tree, index, &steps))
        if (index == refusing)
            return true;
    return false;
}

/* Mark the preemptor's queue and its ancestors: queues it shares with any victim. */
static void mark_shared(const struct cq_tree *tree, int32_t index, bool *shared)
{
    for (uint32_t steps = 0; index >= 0; index = cq_tree_up(tree, index, &steps))
        shared[index] = true;
}

/* Admission of request for queue index with the plan's victims (tk) gone. */
static bool admits_without(struct cq_plugin *pl, int32_t index, const int64_t *request,
                           uint64_t mask, const struct taken *tk)
{
    char why[REASON_SIZE];
    for (uint32_t i = 0; i < pl->tree.count; i++)
        for (int r = 0; r < KC_RESOURCE_MAX; r++)
            pl->tree.queues[i].usage[r] -= tk->usage[i][r];
    bool ok = cq_admit(&pl->tree, index, request, mask, why, sizeof(why));
    for (uint32_t i = 0; i < pl->tree.count; i++)
        for (int r = 0; r < KC_RESOURCE_MAX; r++)
            pl->tree.queues[i].usage[r] += tk->usage[i][r];
    return ok;
}

/* The placed pods of borrowing queues under refusing, as units (each on its own node), least
 * important first. */
static int collect_quota(const struct cq_plugin *pl, const struct cq_pod *self, int32_t refusing,
                         const bool *shared, const struct taken *tk, uint64_t need,
                         struct plan *plan)
{
    plan->units = calloc(pl->pod_count + 1, sizeof(*plan->units));
    if (plan->units == NULL)
        return -ENOMEM;
    for (uint32_t b = 0; b < pl->pod_buckets; b++)
        for (const struct cq_pod *t = pl->pods[b]; t != NULL; t = t->next) {
            if (t == self || t->index < 0 || t->node == NULL || t->leaving ||
                !under(&pl->tree, t->index, refusing) ||
                !borrowing_queue(pl, shared, tk, t->index, need & t->mask))
                continue;
            const kc_node *node = kc_node_by_name(t->node);
            const kc_pod *pod = node != NULL ? pod_on(node, t->uid) : NULL;
            if (pod == NULL || kc_pod_terminating(pod))
                continue;
            add_unit(pl, node, pod, t, plan);
        }
    qsort(plan->units, plan->count, sizeof(*plan->units), evict_first);
    return 0;
}

/* The node of a pod handle, through the plugin's own record. */
static const char *unit_pod_node(const struct cq_plugin *pl, const kc_pod *pod)
{
    const struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(pod));
    return t != NULL ? t->node : NULL;
}

/* The plan carried out: its victims are leaving, the preemptor claims their room. */
static void mark_carried_out(struct cq_plugin *pl, const struct plan *plan, const char *self_uid)
{
    for (uint32_t i = 0; i < plan->count; i++)
        for (uint32_t k = 0; plan->units[i].chosen && k < plan->units[i].count; k++) {
            struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(plan->units[i].pods[k]));
            if (t != NULL && t->node != NULL)
                cq_pod_evicted_for(pl, t, self_uid);
        }
    struct cq_pod *self = cq_pod_find(pl, self_uid);
    if (self != NULL && self->node == NULL)
        cq_pod_mark(pl, self, false, true);
}

/* Quota reclaim: an ancestor's limit or pool refused the pod while its queue is within its
 * guarantee, because queues under that ancestor borrow. Victims are chosen across the
 * cluster, least important first, until admission passes (then those it passes without are
 * given back); whether a node is full does not matter. The pod is nominated on the node that
 * loses the most victims (its room frees there) and every victim goes through the preemption
 * path. */
static kc_status reclaim_quota(struct cq_plugin *pl, kc_cycle *cycle, const struct cq_pod *self,
                               int32_t refusing, uint64_t need, const bool *shared,
                               struct taken *tk)
{
    const struct cq_queue *q = &pl->tree.queues[self->index];
    int64_t request[KC_RESOURCE_MAX];
    cq_pod_request(self, request);
    struct plan plan = {0};
    kc_status st = KC_UNSCHEDULABLE;
    if (collect_quota(pl, self, refusing, shared, tk, need, &plan) != 0)
        goto out;
    bool admitted = false;
    for (uint32_t i = 0; i < plan.count && !admitted; i++) {
        struct unit *u = &plan.units[i];
        const struct cq_pod *t = cq_pod_find(pl, kc_pod_uid(u->pods[0]));
        if (t == NULL || !borrowing_queue(pl, shared, tk, t->index, need & t->mask))
            continue;
        u->chosen = true;
        take(pl, tk, u, 1);
        admitted = admits_without(pl, self->index, request, self->mask, tk);
    }
    for (uint32_t i = plan.count; admitted && i-- > 0;) {
        struct unit *u = &plan.units[i];
        if (!u->chosen)
            continue;
        take(pl, tk, u, -1);
        if (admits_without(pl, self->index, request, self->mask, tk)) {
            u->chosen = false;
            continue;
        }
        take(pl, tk, u, 1);
    }
    if (!admitted) {
        cq_reject(cycle, KC_UNSCHEDULABLE,
                  "capacityqueue: queues borrowing under %s cannot give back enough for queue %s",
                  pl->tree.queues[refusing].name, q->name);
        goto out;
    }
    /* the node that loses the most victims */
    const char *best = NULL;
    uint32_t best_count = 0;
    for (uint32_t i = 0; i < plan.count; i++)
        for (uint32_t k = 0; plan.units[i].chosen && k < plan.units[i].count; k++) {
            const char *node = unit_pod_node(pl, plan.units[i].pods[k]);
            uint32_t count = 0;
            for (uint32_t j = 0; node != NULL && j < plan.count; j++)
                for (uint32_t l = 0; plan.units[j].chosen && l < plan.units[j].count; l++) {
                    const char *other = unit_pod_node(pl, plan.units[j].pods[l]);
                    count += other != NULL && strcmp(other, node) == 0;
                }
            if (count > best_count) {
                best = node;
                best_count = count;
            }
        }
    const kc_node *node = best != NULL ? kc_node_by_name(best) : NULL;
    uint32_t victims = 0;
    for (uint32_t i = 0; i < plan.count; i++)
        victims += plan.units[i].chosen ? plan.units[i].count : 0;
    int rc = node != NULL ? carry_out(pl, cycle, node, &plan) : -ENOENT;
    if (rc != 0) {
        cq_reject(cycle, KC_UNSCHEDULABLE, "capacityqueue: reclaim under %s failed (%s)",
                  pl->tree.queues[refusing].name,
                  rc == -EBUSY ? "a pod group member reclaims only with its group"
                               : strerror(-rc));
        goto out;
    }
    mark_carried_out(pl, &plan, self->uid);
    cq_log(KC_LOG_INFO, "pod %s of queue %s reclaims %u pod(s) borrowed under %s, nominated on "
           "node %s", self->uid, q->name, victims, pl->tree.queues[refusing].name, best);
    st = KC_SUCCESS;
out:
    plan_clear(&plan);
    return st;
}

bool cq_reclaim_may_help(const struct cq_plugin *pl, const struct cq_pod *self, int32_t refusing)
{
    if (self == NULL || self->index < 0 || refusing < 0 || self->group != NULL)
        return false;
    uint64_t need = reclaim_need(&pl->tree.queues[self->index], self);
    if (need == 0)
        return false;
    bool *shared = calloc(pl->tree.count + 1, sizeof(*shared));
    struct taken tk = {.usage = calloc(pl->tree.count + 1, sizeof(*tk.usage)),
                       .queues = pl->tree.count};
    bool found = false;
    if (shared != NULL && tk.usage != NULL) {
        mark_shared(&pl->tree, self->index, shared);
        for (uint32_t b = 0; b < pl->pod_buckets && !found; b++)
            for (const struct cq_pod *t = pl->pods[b]; t != NULL && !found; t = t->next)
                found = t != self && t->index >= 0 && t->node != NULL && !t->leaving &&
                        under(&pl->tree, t->index, refusing) &&
                        borrowing_queue(pl, shared, &tk, t->index, need & t->mask);
    }
    free(shared);
    free(tk.usage);
    return found;
}

kc_status cq_reclaim(struct cq_plugin *pl, kc_cycle *cycle, const kc_pod *pod)
{
    const struct cq_pod *self = cq_pod_find(pl, kc_pod_uid(pod));
    if (self == NULL || self->index < 0 || kc_pod_preempt_never(pod))
        return KC_UNSCHEDULABLE;
    const struct cq_queue *q = &pl->tree.queues[self->index];
    uint64_t need = reclaim_need(q, self);
    /* refused by an ancestor's limit or pool while queues under it borrow: reclaim quota */
    int64_t request[KC_RESOURCE_MAX];
    cq_pod_request(self, request);
    char why[REASON_SIZE];
    int32_t refusing = -1;
    bool quota = need != 0 && self->group == NULL &&
                 !cq_admit_at(&pl->tree, self->index, request, self->mask, why, sizeof(why),
                              &refusing) &&
                 cq_reclaim_may_help(pl, self, refusing);
    uint32_t nodes = kc_node_count(), short_nodes = 0;
    for (uint32_t i = 0; i < nodes && !quota; i++)
        short_nodes += kc_cycle_node_status(cycle, kc_node_at(i)) == KC_UNSCHEDULABLE;
    if (short_nodes == 0 && !quota)
        return KC_UNSCHEDULABLE; /* refused by admission or by rules no eviction changes */
    if ((self->mask & q->guaranteed_listed) == 0)
        return KC_UNSCHEDULABLE; /* the queue is guaranteed nothing the pod asks */
    if (need == 0)
        return cq_reject(cycle, KC_UNSCHEDULABLE,
                         "capacityqueue: queue %s would be above its guarantee; nothing to "
                         "reclaim",
                         q->name);
    bool *shared = calloc(pl->tree.count + 1, sizeof(*shared));
    struct taken tk = {.usage = calloc(pl->tree.count + 1, sizeof(*tk.usage)),
                       .queues = pl->tree.count};
    const kc_pod **removed = NULL;
    char *reason = malloc(REASON_SIZE);
    struct plan best = {0};
    const kc_node *best_node = NULL;
    kc_status st = KC_UNSCHEDULABLE;
    if (shared == NULL || tk.usage == NULL || reason == NULL)
        goto out;
    mark_shared(&pl->tree, self->index, shared);
    if (quota) {
        st = reclaim_quota(pl, cycle, self, refusing, need, shared, &tk);
        goto out;
    }
    uint32_t most_pods = 0;
    for (uint32_t i = 0; i < nodes; i++)
        if (kc_node_pod_count(kc_node_at(i)) > most_pods)
            most_pods = kc_node_pod_count(kc_node_at(i));
    removed = calloc(most_pods + 1, sizeof(*removed)); /* the what-if list, for every node */
    for (uint32_t i = 0; i < nodes; i++) {
        const kc_node *node = kc_node_at(i);
        if (kc_cycle_node_status(cycle, node) != KC_UNSCHEDULABLE)
            continue;
        struct plan plan = {0};
        if (removed != NULL &&
            plan_node(pl, cycle, node, self, shared, &tk, need, &plan, removed, reason) &&
            (best_node == NULL || better(&plan, &best))) {
            plan_clear(&best);
            best = plan;
            best_node = node;
            continue;
        }
        plan_clear(&plan);
    }
    if (best_node == NULL) {
        cq_reject(cycle, KC_UNSCHEDULABLE,
                  "capacityqueue: no node can be freed from queues that borrow for queue %s",
                  q->name);
        goto out;
    }
    int rc = carry_out(pl, cycle, best_node, &best);
    if (rc != 0) {
        cq_reject(cycle, KC_UNSCHEDULABLE, "capacityqueue: reclaim on node %s failed (%s)",
                  kc_node_name(best_node),
                  rc == -EBUSY ? "a pod group member reclaims only with its group"
                               : strerror(-rc));
        goto out;
    }
    mark_carried_out(pl, &best, self->uid);
    cq_log(KC_LOG_INFO, "pod %s/%s of queue %s reclaims %u pod(s) from borrowing queues, "
           "nominated on node %s", kc_pod_namespace(pod), kc_pod_name(pod), q->name,
           best.victims, kc_node_name(best_node));
    st = KC_SUCCESS;
out:
    plan_clear(&best);
    free(removed);
    free(reason);
    free(shared);
    free(tk.usage);
    return st;
}
