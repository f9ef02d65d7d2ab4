/* Preemption in the runtime: node views for what-if Filter runs, nominated pods, and the
 * preemption a PostFilter plugin chose, carried out through the sink (docs/architecture.md,
 * "Preemption"). */
#include "preempt.h"
#include "sched_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cycle_internal.h"
#include "evaluate.h"
#include "log.h"
#include "plugin.pb-c.h"
#include "remote.h"

/* ---- node views -------------------------------------------------------------------------- */

/* A node as Filter sees it with some pods gone and others added: a copy of the cache node
 * (same node object and index) with its own pod list and requests. Only for preemption and
 * nodes with nominated pods, never on the common path; small nodes use no heap. */
#define VIEW_PODS 128
#define VIEW_ADDED 8

struct node_view {
    struct cache_node node;
    struct cache_pod *added; /* shallow: the pods' own request lists */
    uint32_t added_count;
    /* the pods taken off, for plugins whose PreFilter counted them (kc_filter_delta_pod) */
    const struct pod **gone;
    uint32_t gone_count;
    struct cache_pod *pods_local[VIEW_PODS];
    struct cache_pod added_local[VIEW_ADDED];
    const struct pod *gone_local[VIEW_PODS];
};

/* removed holds handles from kc_node_pod_at: the node's own pod objects. */
static bool listed(const struct pod *const *pods, uint32_t count, const struct cache_pod *cp)
{
    for (uint32_t i = 0; i < count; i++)
        if (pods[i] == cp->pod)
            return true;
    return false;
}

static void view_account(struct cache_node *v, const struct res_list *request, int sign)
{
    cache_node_count_request(v, request, sign);
}

static void view_free(struct node_view *v)
{
    if (v->node.pods != v->pods_local)
        free(v->node.pods);
    if (v->added != v->added_local)
        free(v->added);
    if (v->gone != v->gone_local)
        free(v->gone);
}

static int view_build(struct node_view *v, const struct cache_node *cn,
                      const struct pod *const *removed, uint32_t removed_count,
                      const struct pod *const *added, uint32_t added_count)
{
    v->node = *cn;
    uint32_t room = cn->pod_count + added_count;
    v->node.pods = room <= VIEW_PODS ? v->pods_local : malloc(room * sizeof(*v->node.pods));
    v->added = added_count <= VIEW_ADDED ? v->added_local : calloc(added_count, sizeof(*v->added));
    v->added_count = added_count;
    v->gone_count = 0;
    v->gone = cn->pod_count <= VIEW_PODS
                  ? v->gone_local
                  : malloc((cn->pod_count > 0 ? cn->pod_count : 1) * sizeof(*v->gone));
    if (v->node.pods == NULL || v->added == NULL || v->gone == NULL) {
        view_free(v);
        return -ENOMEM;
    }
    uint32_t count = 0;
    for (uint32_t i = 0; i < cn->pod_count; i++) {
        struct cache_pod *cp = cn->pods[i];
        if (removed_count > 0 && listed(removed, removed_count, cp)) {
            view_account(&v->node, &cp->request, -1);
            v->gone[v->gone_count++] = cp->pod;
            continue;
        }
        v->node.pods[count++] = cp;
    }
    for (uint32_t i = 0; i < added_count; i++) {
        struct cache_pod *cp = &v->added[i];
        memset(cp, 0, sizeof(*cp));
        cp->uid = added[i]->uid;
        cp->node_name = cn->node->name;
        cp->request = added[i]->request;
        cp->pod = added[i];
        cp->counted = true;
        cp->slot = count;
        v->node.pods[count++] = cp;
        view_account(&v->node, &cp->request, 1);
    }
    v->node.pod_count = count;
    v->node.pods_capacity = count;
    return 0;
}


/* The view the calling thread's Filter runs on. A node handle is only read as a view when it
 * is this one: any other handle (a cache node, a copy a plugin kept, garbage) is not cast to
 * a view and its memory past the node never read. Filter runs each node on one thread, and
 * views nest (saved and restored), so a thread-local is exact. */
_Thread_local const struct node_view *preempt_current_view CRASH_TLS;

static kc_status view_filter(struct kc_cycle *cycle, uint64_t skip, const struct node_view *v,
                             struct plugin **rejector)
{
    const struct node_view *saved = preempt_current_view;
    preempt_current_view = v;
    kc_status st = scheduler_filter_node(cycle, skip, &v->node, rejector);
    preempt_current_view = saved;
    return st;
}

const struct pod *preempt_view_delta(const struct scheduler *s, const struct cache_node *node,
                                     bool gone, uint32_t index)
{
    (void)s;
    const struct node_view *v = preempt_current_view;
    if (node == NULL || v == NULL || node != &v->node)
        return NULL; /* not the view being filtered: a cache node, Filter sees what PreFilter saw */
    if (gone)
        return index < v->gone_count ? v->gone[index] : NULL;
    return index < v->added_count ? v->added[index].pod : NULL;
}

/* The nominated pods on node that count for pod: of at least its priority, not itself.
 * Returns how many were put in out (at most max). */
static uint32_t nominated_for(const struct scheduler *s, const struct pod *pod,
                              const struct nominated_node *nn, const struct pod **out,
                              uint32_t max)
{
    uint32_t count = 0;
    (void)s;
    for (uint32_t i = 0; nn != NULL && i < nn->count && count < max; i++) {
        /* the pending-pod record kept with the nomination: it outlives it (preempt_pod_gone
         * ends a nomination before its record goes) */
        const struct sched_pod *sp = nn->refs[i];
        if (sp != NULL && sp->pod != pod && sp->pod->priority >= pod->priority)
            out[count++] = sp->pod;
    }
    return count;
}

/* ---- nominated pods in Filter ------------------------------------------------------------ */

#define NOMINATED_MAX 256

uint32_t preempt_nominated_pods(const struct scheduler *s, const struct pod *pod,
                                const struct pod **pods, const char **nodes, uint32_t max)
{
    uint32_t count = 0;
    const struct strmap *by_node = &s->nominations.by_node;
    for (uint32_t i = 0; i < by_node->capacity && count < max; i++) {
        const struct nominated_node *nn = by_node->entries[i].value;
        if (nn == NULL)
            continue;
        uint32_t n = nominated_for(s, pod, nn, &pods[count], max - count);
        for (uint32_t k = 0; k < n; k++)
            nodes[count + k] = nn->node;
        count += n;
    }
    return count;
}

const uint32_t *preempt_flag_nominated(struct scheduler *s, const struct pod *pod)
{
    if (s->nominations.count == 0 || s->nominated_first == NULL)
        return NULL;
    uint32_t want = s->nominations.count;
    if (want > s->nominated_pods_capacity) {
        const struct pod **grown = realloc(s->nominated_pods, want * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        s->nominated_pods = grown;
        s->nominated_pods_capacity = want;
    }
    if (want > s->nominated_flagged_capacity) {
        uint32_t *grown = realloc(s->nominated_flagged, want * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        s->nominated_flagged = grown;
        s->nominated_flagged_capacity = want;
    }
    /* at most one node per nomination was flagged: clear those, not every node. The bound is
     * the arrays' size, not today's node count: a slot past a deleted last node keeps its
     * flag otherwise, and a node added later at that index would inherit stale pods
     * (ensure_scratch forgets the list whenever it allocates the arrays afresh). */
    for (uint32_t i = 0; i < s->nominated_flagged_count; i++)
        if (s->nominated_flagged[i] < s->scratch_capacity)
            s->nominated_first[s->nominated_flagged[i]] = 0;
    s->nominated_flagged_count = 0;
    uint32_t used = 0;
    const struct strmap *by_node = &s->nominations.by_node;
    for (uint32_t i = 0; i < by_node->capacity; i++) {
        const struct nominated_node *nn = by_node->entries[i].value;
        if (nn == NULL)
            continue;
        const struct cache_node *cn = cache_node(&s->cache, nn->node);
        if (cn == NULL)
            continue;
        uint32_t room = s->nominated_pods_capacity - used;
        uint32_t n = nominated_for(s, pod, nn, &s->nominated_pods[used],
                                   room < UINT16_MAX ? room : UINT16_MAX);
        if (n == 0)
            continue;
        s->nominated_first[cn->index] = used + 1;
        s->nominated_count[cn->index] = (uint16_t)n;
        s->nominated_flagged[s->nominated_flagged_count++] = cn->index;
        used += n;
    }
    return used > 0 ? s->nominated_first : NULL;
}

kc_status preempt_filter_nominated(struct kc_cycle *cycle, uint64_t skip,
                                   const struct cache_node *node, struct plugin **rejector)
{
    struct scheduler *s = cycle->sched;
    uint32_t first = s->nominated_first[node->index];
    if (first == 0)
        return scheduler_filter_node(cycle, skip, node, rejector);
    struct node_view v;
    if (view_build(&v, node, NULL, 0, &s->nominated_pods[first - 1],
                   s->nominated_count[node->index]) < 0)
        return KC_ERROR;
    kc_status st = view_filter(cycle, skip, &v, rejector);
    view_free(&v);
    if (st != KC_SUCCESS)
        return st;
    return scheduler_filter_node(cycle, skip, node, rejector);
}

/* ---- what-if Filter ---------------------------------------------------------------------- */

static bool remote_filters(const struct framework *fw)
{
    for (uint32_t i = 0; i < fw->count; i++) {
        const struct plugin *p = &fw->plugins[i];
        if (p->remote && !p->disabled && (p->remote_phases & KCYCLE__V1__PHASE__PHASE_FILTER))
            return true;
    }
    return false;
}

static void copy_reason(char *reason, size_t size, const char *text)
{
    if (reason != NULL && size > 0)
        snprintf(reason, size, "%s", text != NULL ? text : "");
}

char *what_if_join(const char *const *texts, uint32_t count)
{
    size_t total = 1;
    for (uint32_t i = 0; i < count; i++)
        total += strlen(texts[i]) + 1;
    char *out = malloc(total);
    if (out == NULL)
        return NULL;
    size_t used = 0;
    for (uint32_t i = 0; i < count; i++) {
        size_t len = strlen(texts[i]);
        if (i > 0)
            out[used++] = '\n';
        memcpy(out + used, texts[i], len);
        used += len;
    }
    out[used] = '\0';
    return out;
}

kc_status preempt_what_if_pass(struct kc_cycle *cycle, const struct cache_node *node,
                               const struct pod *const *removed, uint32_t removed_count,
                               const struct pod *const *added, uint32_t added_count,
                               struct plugin **rejector, struct reason_count *reasons,
                               uint32_t *reason_count)
{
    *rejector = NULL;
    struct node_view v;
    if (view_build(&v, node, removed, removed_count, added, added_count) < 0) {
        reasons_add(reasons, reason_count, "out of memory");
        return KC_ERROR;
    }
    /* the reasons go to the caller's histogram: the attempt's stays as Filter left it */
    struct reject_sink sink = {reasons, reason_count, 0};
    struct reject_sink *saved = cycle_filter_sink;
    cycle_filter_sink = &sink;
    kc_status st = view_filter(cycle, cycle->filter_skip, &v, rejector);
    cycle_filter_sink = saved;
    view_free(&v);
    if (st != KC_SUCCESS && *reason_count == 0 && *rejector != NULL)
        reasons_add(reasons, reason_count, (*rejector)->default_reason);
    return st;
}

/* One pass of the in-process plugins as a verdict (reasons one a line). */
static kc_status local_pass(struct kc_cycle *cycle, const struct cache_node *node,
                            const struct pod *const *removed, uint32_t removed_count,
                            const struct pod *const *added, uint32_t added_count,
                            struct what_if_verdict *out)
{
    struct reason_count reasons[CYCLE_MAX_REASONS];
    uint32_t reason_count = 0;
    struct plugin *rejector = NULL;
    out->status = preempt_what_if_pass(cycle, node, removed, removed_count, added, added_count,
                                       &rejector, reasons, &reason_count);
    out->plugin = rejector != NULL ? rejector->index : UINT32_MAX;
    out->reasons = NULL;
    if (out->status != KC_SUCCESS) {
        const char *texts[CYCLE_MAX_REASONS];
        for (uint32_t i = 0; i < reason_count; i++)
            texts[i] = reasons[i].text;
        out->reasons = what_if_join(texts, reason_count);
    }
    reasons_clear(reasons, &reason_count);
    return out->status;
}

/* The verdict of one backend running every plugin: the refusal of the plugin first in the
 * configuration, as the evaluation merges node_rejectors. Takes both; *into keeps the winner. */
static void merge_verdict(struct what_if_verdict *into, struct what_if_verdict *other)
{
    bool other_wins =
        other->status != KC_SUCCESS && (into->status == KC_SUCCESS || other->plugin < into->plugin);
    if (other_wins) {
        free(into->reasons);
        *into = *other;
    } else {
        free(other->reasons);
    }
    other->reasons = NULL;
}

kc_status preempt_filter_what_if(struct kc_cycle *cycle, const struct cache_node *node,
                                 const struct pod *const *removed, uint32_t removed_count,
                                 char *reason, size_t reason_size)
{
    struct scheduler *s = cycle->sched;
    cycle->what_if_calls++;
    if (reason != NULL && reason_size > 0)
        reason[0] = '\0';
    if (node == NULL)
        return KC_ERROR;
    const struct pod *added[NOMINATED_MAX];
    uint32_t count = nominated_for(s, cycle->sp->pod,
                                   nominations_on(&s->nominations, node->node->name), added,
                                   NOMINATED_MAX);
    /* kube's RunFilterPluginsWithNominatedPods: with the nominated pods counted, then, when
     * that passes, without them; each pass merged over the backends */
    struct what_if_verdict pass[2] = {{KC_SUCCESS, UINT32_MAX, NULL},
                                      {KC_SUCCESS, UINT32_MAX, NULL}};
    uint32_t passes = 1;
    local_pass(cycle, node, removed, removed_count, added, count, &pass[0]);
    if (pass[0].status == KC_SUCCESS && count > 0) {
        local_pass(cycle, node, removed, removed_count, NULL, 0, &pass[1]);
        passes = 2;
    }
    /* a refusal without a plugin is the view that could not be built: nothing to merge */
    bool local_failed = (pass[0].status != KC_SUCCESS && pass[0].plugin == UINT32_MAX) ||
                        (pass[1].status != KC_SUCCESS && pass[1].plugin == UINT32_MAX);
    /* PreFilter rejected the pod in this attempt: the plugins after the rejecting one ran no
     * PreFilter, and in process their Filter finds no state of theirs and lets the node
     * through; hosts would run a PreFilter of their own, so their plugins count as not
     * refusing instead, the same in both modes */
    bool prefiltered = cycle->prefilter_status == KC_SUCCESS;
    if (!local_failed && prefiltered && remote_filters(cycle->fw)) {
        /* only plugins before the in-process refusal can change the verdict */
        struct what_if_verdict hosted[2] = {{KC_SUCCESS, UINT32_MAX, NULL},
                                            {KC_SUCCESS, UINT32_MAX, NULL}};
        char *message = NULL;
        kc_status st = remote_what_if(s, cycle, node, removed, removed_count, added, count, passes,
                                      pass[0].plugin, hosted, &message);
        if (st != KC_SUCCESS) {
            copy_reason(reason, reason_size, message != NULL ? message : "plugin hosts failed");
            free(message);
            /* a host may have merged its refusal before another failed */
            for (uint32_t p = 0; p < 2; p++) {
                free(pass[p].reasons);
                free(hosted[p].reasons);
            }
            return KC_ERROR;
        }
        for (uint32_t p = 0; p < passes; p++)
            merge_verdict(&pass[p], &hosted[p]);
    }
    struct what_if_verdict *v = pass[0].status != KC_SUCCESS ? &pass[0] : &pass[1];
    kc_status st = v->status;
    if (st != KC_SUCCESS)
        copy_reason(reason, reason_size, v->reasons); /* every reason of the refusing plugin */
    free(pass[0].reasons);
    free(pass[1].reasons);
    return st;
}

/* ---- the preemption a plugin chose ------------------------------------------------------- */

void preempt_decision_free(struct preemption *p)
{
    if (p == NULL)
        return;
    free(p->node);
    free(p->victims);
    free(p);
}

static bool on_node(const struct cache_node *cn, const struct pod *pod)
{
    for (uint32_t i = 0; i < cn->pod_count; i++)
        if (cn->pods[i]->pod == pod)
            return true;
    return false;
}

int preempt_choose(struct kc_cycle *cycle, const struct cache_node *node,
                   const struct pod *const *victims, uint32_t victim_count)
{
    struct scheduler *s = cycle->sched;
    if (cycle->group == NULL && cycle->sp->group != NULL)
        return -EBUSY; /* a group member never preempts alone (docs/architecture.md) */
    if (node != NULL && s->sink.evict == NULL)
        return -EOPNOTSUPP;
    for (uint32_t i = 0; node != NULL && i < victim_count; i++)
        if (victims[i] == NULL || !on_node(node, victims[i]))
            return -ENOENT;
    struct preemption *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    p->victims = malloc((victim_count + 1) * sizeof(*p->victims));
    p->node = node != NULL ? strdup(node->node->name) : NULL;
    if (p->victims == NULL || (node != NULL && p->node == NULL)) {
        preempt_decision_free(p);
        return -ENOMEM;
    }
    for (uint32_t i = 0; node != NULL && i < victim_count; i++)
        p->victims[p->victim_count++] = victims[i];
    preempt_decision_free(cycle->preemption);
    cycle->preemption = p;
    return 0;
}

int preempt_choose_more(struct kc_cycle *cycle, const struct pod *const *victims,
                        uint32_t victim_count)
{
    struct preemption *p = cycle->preemption;
    if (p == NULL || p->node == NULL)
        return -EINVAL;
    for (uint32_t i = 0; i < victim_count; i++)
        if (victims[i] == NULL || cache_pod(&cycle->sched->cache, victims[i]->uid) == NULL)
            return -ENOENT;
    const struct pod **grown =
        realloc(p->victims, (p->victim_count + victim_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    p->victims = grown;
    for (uint32_t i = 0; i < victim_count; i++)
        p->victims[p->victim_count++] = victims[i];
    return 0;
}

static void nominate(struct scheduler *s, struct sched_pod *sp, const char *node)
{
    const struct pod *pod = sp->pod;
    const char *was = nominations_node(&s->nominations, pod->uid);
    bool changed = was == NULL ? node != NULL : node == NULL || strcmp(was, node) != 0;
    if (nominations_set(&s->nominations, pod->uid, node, sp) < 0)
        log_error("pod %s/%s: out of memory nominating it on %s", pod->namespace, pod->name,
                  node != NULL ? node : "no node");
    bool written = pod->nominated_node_name != NULL;
    if ((changed || written != (node != NULL)) && s->sink.nominate != NULL)
        s->sink.nominate(s->sink.ctx, pod, node);
}

/* Lower-priority pods nominated on node may no longer fit there: their nominations go, so
 * that their next attempt looks at every node (kube's prepareCandidate). */
static void clear_lower_nominations(struct scheduler *s, const struct pod *preemptor,
                                    const char *node)
{
    const struct nominated_node *nn = nominations_on(&s->nominations, node);
    uint32_t count = nn != NULL ? nn->count : 0;
    struct sched_pod **lower = calloc(count + 1, sizeof(*lower));
    uint32_t n = 0;
    for (uint32_t i = 0; lower != NULL && i < count; i++) {
        struct sched_pod *sp = nn->refs[i];
        if (sp != NULL && sp->pod->priority < preemptor->priority)
            lower[n++] = sp;
    }
    for (uint32_t i = 0; i < n; i++) /* nn changes as they go: the list was copied */
        nominate(s, lower[i], NULL);
    free(lower);
}

static void carry_out(struct scheduler *s, struct sched_pod *sp, struct preemption *p)
{
    const struct pod *pod = sp->pod;
    if (p->node == NULL) {
        nominate(s, sp, NULL);
        preempt_decision_free(p);
        return;
    }
    s->stats.preemptions++;
    sched_metrics_preemption(s, p->victim_count);
    for (uint32_t i = 0; i < p->victim_count; i++) {
        const struct pod *victim = p->victims[i];
        s->stats.preemption_victims++;
        log_info("pod %s/%s preempts pod %s/%s on node %s", pod->namespace, pod->name,
                 victim->namespace, victim->name, p->node);
        struct kc_waiting_pod *w = waiting_pod_find(s, victim->uid);
        if (w != NULL)
            waiting_pod_reject(w, NULL, "preempted");
        else
            s->sink.evict(s->sink.ctx, victim, pod, p->node);
    }
    nominate(s, sp, p->node);
    clear_lower_nominations(s, pod, p->node);
    preempt_decision_free(p);
}

void preempt_carry_out(struct scheduler *s, struct kc_cycle *cycle)
{
    struct preemption *p = cycle->preemption;
    if (p == NULL || cycle->group != NULL)
        return; /* a group cycle's: group.c takes it */
    cycle->preemption = NULL;
    carry_out(s, cycle->sp, p);
}

/* ---- whole-group preemption -------------------------------------------------------------- */

/* A trial's cache change for the plugin hosts: their replicas count every change of the cache
 * (a request names the generation), and their Filter must judge the members after the trial on
 * the cluster the in-process Filter sees. Hosts apply it to the cache alone: no plugin hears of
 * it, in process or in a host (docs/architecture.md, "Preemption"). */
static void trial_journal(struct scheduler *s, kc_event_type type, const struct pod *pod,
                          const char *node)
{
    remote_journal_trial(s, type, pod, node);
}

int preempt_trial_apply(struct scheduler *s, struct kc_cycle *cycle, struct preempt_trial *t)
{
    memset(t, 0, sizeof(*t));
    struct preemption *p = cycle->preemption;
    if (p == NULL || p->node == NULL)
        return -ENOENT;
    for (uint32_t i = 0; i < p->victim_count; i++) {
        const struct cache_pod *cp = cache_pod(&s->cache, p->victims[i]->uid);
        if (cp == NULL || cp->assumed || p->victims[i]->node_name == NULL)
            return -EBUSY;
    }
    for (uint32_t i = 0; i < p->victim_count; i++) {
        cache_remove_pod(&s->cache, p->victims[i]->uid);
        trial_journal(s, KC_EVENT_POD_DELETE, p->victims[i], NULL);
    }
    if (cache_assume(&s->cache, cycle->sp->pod, p->node) < 0) {
        for (uint32_t i = 0; i < p->victim_count; i++) {
            cache_add_pod(&s->cache, p->victims[i]);
            trial_journal(s, KC_EVENT_POD_ADD, p->victims[i], NULL);
        }
        /* no trial: the decision stays with the cycle (freed with it), and t->p stays NULL so
         * the group never evicts for a member that was not placed */
        return -ENOMEM;
    }
    trial_journal(s, KC_EVENT_POD_ASSUME, cycle->sp->pod, p->node);
    cycle->preemption = NULL;
    t->p = p;
    t->sp = cycle->sp;
    t->applied = true;
    return 0;
}

void preempt_trial_undo(struct scheduler *s, struct preempt_trial *t)
{
    if (!t->applied)
        return;
    cache_forget(&s->cache, t->sp->pod->uid);
    trial_journal(s, KC_EVENT_POD_FORGET, t->sp->pod, NULL);
    /* the victims' objects are the scheduler's assigned pods, unchanged since the trial */
    for (uint32_t i = t->p->victim_count; i-- > 0;) {
        cache_add_pod(&s->cache, t->p->victims[i]);
        trial_journal(s, KC_EVENT_POD_ADD, t->p->victims[i], NULL);
    }
    t->applied = false;
}

void preempt_trial_carry_out(struct scheduler *s, struct preempt_trial *t)
{
    struct preemption *p = t->p;
    t->p = NULL;
    if (p != NULL)
        carry_out(s, t->sp, p);
}

void preempt_trial_free(struct preempt_trial *t)
{
    preempt_decision_free(t->p);
    t->p = NULL;
}

void preempt_nominate(struct scheduler *s, struct sched_pod *sp, const char *node)
{
    nominate(s, sp, node);
}

/* ---- nominations follow the pods --------------------------------------------------------- */

void preempt_pod_seen(struct scheduler *s, struct sched_pod *sp, const struct pod *old)
{
    const struct pod *pod = sp->pod;
    if (pod->node_name != NULL)
        return;
    if (pod->nominated_node_name != NULL) {
        /* set or changed in the object (our own status patch coming back, or another
         * scheduler's preemption) */
        if (nominations_set(&s->nominations, pod->uid, pod->nominated_node_name, sp) < 0)
            log_error("pod %s/%s: out of memory keeping its nomination", pod->namespace,
                      pod->name);
    } else if (old != NULL && old->nominated_node_name != NULL) {
        nominations_remove(&s->nominations, pod->uid); /* removed from the object */
    }
    /* absent in both: a nomination made moments ago (not written back yet) stays, as in kube's
     * nominator; it is kept with the same pending record */
}

void preempt_pod_gone(struct scheduler *s, const char *uid)
{
    nominations_remove(&s->nominations, uid);
}

/* ---- evictions that failed --------------------------------------------------------------- */

void preempt_eviction_failed(struct scheduler *s, const char *preemptor_uid)
{
    struct sched_pod *sp = strmap_get(&s->pods, preemptor_uid);
    if (sp == NULL || sp->deleted)
        return;
    nominate(s, sp, NULL);
    /* waiting for the victim's deletion, or woken already: back off instead (a pod in an
     * attempt, held in Permit or binding has moved on and keeps its course) */
    if (sp->state == SP_UNSCHEDULABLE || sp->state == SP_ACTIVE) {
        queue_remove(&s->queue, sp);
        queue_push_backoff(&s->queue, sp, scheduler_now(s));
    }
}
