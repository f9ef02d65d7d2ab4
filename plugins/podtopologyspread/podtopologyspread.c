/* podtopologyspread: kube-scheduler's PodTopologySpread. Filter keeps the nodes where placing
 * the pod keeps every DoNotSchedule constraint within maxSkew; Score prefers the nodes whose
 * domains hold the fewest matching pods under the ScheduleAnyway constraints.
 *
 * Cost: the plugin keeps its own index of assigned and assumed pods (namespace, labels, node)
 * from cluster events, so PreFilter counts matching pods per domain in one pass over the
 * index (O(pods), not O(pods x nodes)) and stores per-node domain ids in the cycle state;
 * Filter is then two array reads per constraint, allocation-free and read-only, so several
 * Filter threads share it. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "default_constraints.h"
#include "attempt_memo.h"
#include "domain_counts.h"
#include "spread_constraints.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "podtopologyspread"
#define FILTER_STATE_KEY "podtopologyspread/filter"
#define SCORE_STATE_KEY "podtopologyspread/score"
#define HOSTNAME_KEY "kubernetes.io/hostname"

/* kube's reasons, word for word (its ErrReasonConstraintsNotMatch and
 * ErrReasonNodeLabelNotMatch). */
#define REASON_SKEW "node(s) didn't match pod topology spread constraints"
#define REASON_LABEL "node(s) didn't match pod topology spread constraints (missing required label)"

struct plugin {
    struct pod_index index;
    struct domain_cache domains; /* the fast path's per-domain counts */
    struct spread_defaults defaults; /* cluster default constraints (args) */
    struct attempt_memo filter_memo; /* Filter's state stored last (attempt_memo.h) */
    struct spread_parse_cache parsed[2]; /* by enum spread_action */
    bool host_delta; /* the host answers kc_filter_delta_pod (1.2): checked once, in init */
};

/* One constraint with its counts for this attempt. Read-only once PreFilter/PreScore stored
 * it. */
struct constraint_state {
    struct spread_constraint c;
    int32_t *domain_of_node; /* by node index; -1: the node lacks the topology key */
    uint8_t *node_counted;   /* by node index: the node's pods count (inclusion policies) */
    int64_t *count;          /* by domain id: matching pods on counted nodes */
    uint8_t *domain_counted; /* by domain id: the domain has a counted node */
    int64_t *node_pods;      /* hostname constraints in scoring: matching pods by node index */
    uint32_t domain_count;
    uint32_t counted_domains;
    bool borrowed; /* domain_of_node and count point into the plugin's domain cache */
    int64_t min_count; /* over counted domains; INT32_MAX when there is none */
};

struct spread_state {
    /* the constraints are the System defaults: a node need not have every key (kube's
     * requireAllTopologies false) */
    bool system_defaulted;
    uint32_t count;
    uint32_t node_count;
    struct constraint_state *items;
    struct attempt_memo *memo; /* the plugin's memo that remembers it, or NULL */
};

static void spread_state_free(void *data)
{
    struct spread_state *s = data;
    if (s == NULL)
        return;
    attempt_memo_forget(s->memo, s);
    for (uint32_t i = 0; i < s->count; i++) {
        struct constraint_state *cs = &s->items[i];
        spread_constraint_free(&cs->c);
        if (!cs->borrowed) {
            free(cs->domain_of_node);
            free(cs->count);
        }
        free(cs->node_counted);
        free(cs->domain_counted);
        free(cs->node_pods);
    }
    free(s->items);
    free(s);
}

/* ---- node inclusion -------------------------------------------------------------------- */

/* kube's DoNotScheduleTaintsFilterFunc: a NoSchedule or NoExecute taint the pod does not
 * tolerate keeps the node out of the count under nodeTaintsPolicy Honor. */
static bool node_has_untolerated_taint(const kc_pod *pod, const kc_node *node)
{
    uint32_t taints = kc_node_taint_count(node);
    for (uint32_t i = 0; i < taints; i++) {
        kc_taint taint = {.struct_size = sizeof(taint)};
        if (kc_node_taint_at(node, i, &taint) != 0)
            continue;
        if (taint.effect == KC_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (!kc_pod_tolerates_taint(pod, &taint))
            return true;
    }
    return false;
}

static bool node_has_all_keys(const kc_node *node, const struct spread_constraint *list,
                              uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        if (kc_node_label(node, list[i].topology_key) == NULL)
            return false;
    return true;
}

/* ---- state ----------------------------------------------------------------------------- */

struct count_context {
    struct spread_state *state;
    bool scoring;
};

/* One indexed pod: add it to every constraint whose selector it matches. */
static void count_pod(void *opaque, const struct indexed_pod *pod)
{
    struct count_context *ctx = opaque;
    const kc_node *node = kc_node_by_name(pod->node_name);
    if (node == NULL)
        return;
    uint32_t index = kc_node_index(node);
    for (uint32_t i = 0; i < ctx->state->count; i++) {
        struct constraint_state *cs = &ctx->state->items[i];
        if (!label_selector_matches(&cs->c.selector, pod))
            continue;
        if (cs->node_pods != NULL)
            cs->node_pods[index]++;
        if (!cs->node_counted[index])
            continue;
        cs->count[cs->domain_of_node[index]]++;
    }
}

static int constraint_state_alloc(struct constraint_state *cs, uint32_t nodes, bool per_node)
{
    size_t n = nodes > 0 ? nodes : 1;
    cs->domain_of_node = malloc(n * sizeof(*cs->domain_of_node));
    cs->node_counted = calloc(n, 1);
    cs->count = calloc(n, sizeof(*cs->count));
    cs->domain_counted = calloc(n, 1);
    if (per_node)
        cs->node_pods = calloc(n, sizeof(*cs->node_pods));
    bool ok = cs->domain_of_node != NULL && cs->node_counted != NULL && cs->count != NULL &&
              cs->domain_counted != NULL && (!per_node || cs->node_pods != NULL);
    return ok ? 0 : -ENOMEM;
}

/* Map every node of the snapshot to its domain and decide which nodes count (the node has
 * every constraint's key and passes the constraint's inclusion policies), as kube's
 * calPreFilterState and PreScore do. */
static int map_domains(struct spread_state *s, const kc_pod *pod,
                       const struct spread_constraint *list)
{
    uint32_t nodes = s->node_count;
    for (uint32_t i = 0; i < s->count; i++) {
        struct constraint_state *cs = &s->items[i];
        struct domain_map map = {.key = cs->c.topology_key};
        int rc = domain_map_build(&map, nodes);
        free(cs->domain_of_node);
        cs->domain_of_node = map.domain_of_node;
        cs->domain_count = map.domain_count;
        if (rc != 0)
            return rc;
        for (uint32_t n = 0; n < nodes; n++) {
            if (cs->domain_of_node[n] < 0)
                continue;
            const kc_node *node = kc_node_at(n);
            if (!s->system_defaulted && !node_has_all_keys(node, list, s->count))
                continue;
            if (cs->c.node_affinity_honor && !kc_pod_matches_node_affinity(pod, node))
                continue;
            if (cs->c.node_taints_honor && node_has_untolerated_taint(pod, node))
                continue;
            cs->node_counted[n] = 1;
            cs->domain_counted[cs->domain_of_node[n]] = 1;
        }
    }
    return 0;
}

static void compute_minimums(struct spread_state *s)
{
    for (uint32_t i = 0; i < s->count; i++) {
        struct constraint_state *cs = &s->items[i];
        cs->min_count = INT32_MAX;
        cs->counted_domains = 0;
        for (uint32_t d = 0; d < cs->domain_count; d++) {
            if (!cs->domain_counted[d])
                continue;
            cs->counted_domains++;
            if (cs->count[d] < cs->min_count)
                cs->min_count = cs->count[d];
        }
    }
}

/* The fast path: when no constraint depends on the pod's node affinity or tolerations and
 * every node that has one constraint's key has all of them, a node counts exactly when it has
 * the key, so the event-fed counters of the domain cache hold the counts kube computes. The
 * state then borrows the cache's arrays: O(domains) per attempt. false: take the slow path. */
static bool borrow_counts(struct plugin *p, const kc_pod *pod, struct spread_state *s)
{
    uint32_t constraints = kc_pod_node_constraints(pod);
    bool pod_affinity = (constraints & (KC_POD_NODE_SELECTOR | KC_POD_REQUIRED_NODE_AFFINITY)) != 0;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct spread_constraint *c = &s->items[i].c;
        if (c->node_taints_honor || (c->node_affinity_honor && pod_affinity))
            return false;
    }
    if (domain_cache_prepare(&p->domains) != 0)
        return false;
    const struct domain_counter *counters[16];
    const struct domain_map *maps[16];
    if (s->count > 16)
        return false;
    for (uint32_t i = 0; i < s->count; i++) {
        const struct spread_constraint *c = &s->items[i].c;
        uint32_t map;
        maps[i] = domain_cache_map(&p->domains, c->topology_key, &map);
        counters[i] = domain_cache_counter(&p->domains, &p->index, kc_pod_namespace(pod),
                                           &c->selector, c->topology_key);
        if (maps[i] == NULL || counters[i] == NULL)
            return false;
        if (s->count > 1 && maps[i]->nodes_without_key > 0 && !s->system_defaulted)
            return false;
    }
    for (uint32_t i = 0; i < s->count; i++) {
        struct constraint_state *cs = &s->items[i];
        cs->borrowed = true;
        cs->domain_of_node = maps[i]->domain_of_node;
        cs->count = counters[i]->counts;
        cs->domain_count = maps[i]->domain_count;
        cs->min_count = INT32_MAX;
        cs->counted_domains = cs->domain_count;
        for (uint32_t d = 0; d < cs->domain_count; d++)
            if (cs->count[d] < cs->min_count)
                cs->min_count = cs->count[d];
    }
    return true;
}

/* kube applies the cluster default constraints only to a pod without constraints of its own
 * (of either whenUnsatisfiable). */
static bool has_own_constraints(const kc_pod *pod)
{
    const char *text = kc_pod_constraints_json(pod);
    /* (whenUnsatisfiable: text that is not JSON still reaches the parser, which refuses it) */
    return text != NULL && (strstr(text, "\"topologySpreadConstraints\"") != NULL ||
                            strstr(text, "\"whenUnsatisfiable\"") != NULL);
}

/* Build the attempt's state for the pod's constraints with the given whenUnsatisfiable.
 * *out is NULL when the pod has none. 0, -EINVAL (bad constraints, message in error) or
 * -ENOMEM. */
static int build_state(struct plugin *p, const kc_pod *pod, enum spread_action action,
                       bool scoring, struct spread_state **out, char *error, size_t error_size)
{
    *out = NULL;
    struct spread_constraint *list = NULL;
    uint32_t count = 0;
    bool defaulted = !has_own_constraints(pod);
    int rc = defaulted ? spread_defaults_build(&p->defaults, pod, action, &list, &count)
                       : spread_constraints_parse_cached(&p->parsed[action], pod, action, &list,
                                                         &count, error, error_size);
    if (rc != 0 || count == 0)
        return rc;
    struct spread_state *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->items = calloc(count, sizeof(*s->items))) == NULL) {
        free(s);
        spread_constraints_free(list, count);
        return -ENOMEM;
    }
    s->count = count;
    s->system_defaulted = defaulted && p->defaults.system;
    s->node_count = kc_node_count();
    for (uint32_t i = 0; i < count; i++)
        s->items[i].c = list[i]; /* moved */
    free(list);
    if (borrow_counts(p, pod, s)) {
        *out = s;
        return 0;
    }
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        bool per_node = scoring && strcmp(s->items[i].c.topology_key, HOSTNAME_KEY) == 0;
        rc = constraint_state_alloc(&s->items[i], s->node_count, per_node);
    }
    /* map_domains reads the constraints' keys from a flat array */
    struct spread_constraint *keys = rc == 0 ? calloc(count, sizeof(*keys)) : NULL;
    if (rc == 0 && keys == NULL)
        rc = -ENOMEM;
    for (uint32_t i = 0; rc == 0 && i < count; i++)
        keys[i] = s->items[i].c;
    if (rc == 0)
        rc = map_domains(s, pod, keys);
    free(keys);
    if (rc != 0) {
        spread_state_free(s);
        return rc;
    }
    struct count_context ctx = {.state = s, .scoring = scoring};
    pod_index_each_in_namespace(&p->index, kc_pod_namespace(pod), count_pod, &ctx);
    compute_minimums(s);
    *out = s;
    return 0;
}

/* ---- phases ---------------------------------------------------------------------------- */

static int spread_init(const kc_host_api *host, const char *args_json, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -EINVAL;
    struct plugin *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    char error[256] = "";
    int rc = spread_defaults_init(&p->defaults, args_json, error, sizeof(error));
    if (rc != 0) {
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, rc == -ENOMEM ? "out of memory" : error);
        free(p);
        return rc == -ENOMEM ? -ENOMEM : -EINVAL;
    }
    if (pod_index_init(&p->index, NULL) != 0) {
        spread_defaults_free(&p->defaults);
        free(p);
        return -ENOMEM;
    }
    p->host_delta = KC_HOST_HAS(host, filter_delta_pod);
    *self = p;
    return 0;
}

static void spread_fini(void *self)
{
    struct plugin *p = self;
    if (p == NULL)
        return;
    domain_cache_invalidate(&p->domains);
    pod_index_free(&p->index);
    spread_defaults_free(&p->defaults);
    spread_parse_cache_free(&p->parsed[SPREAD_DO_NOT_SCHEDULE]);
    spread_parse_cache_free(&p->parsed[SPREAD_SCHEDULE_ANYWAY]);
    free(p);
}

/* A pod leaving, a node arriving or changing labels can make a rejected pod fit. */
static uint32_t spread_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_NODE_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_ADD) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE) | KC_EVENT_MASK(KC_EVENT_POD_DELETE) |
           KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

static void spread_on_event(void *self, const kc_event *event)
{
    struct plugin *p = self;
    const char *node = event->node != NULL ? kc_node_name(event->node) : NULL;
    const char *uid = event->pod != NULL ? kc_pod_uid(event->pod) : NULL;
    switch (event->type) {
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
    case KC_EVENT_NODE_DELETE:
        /* node indices or labels change: the counters are rebuilt on the next attempt */
        domain_cache_invalidate(&p->domains);
        break;
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
    case KC_EVENT_POD_ASSUME:
        if (node == NULL)
            node = kc_pod_node_name(event->pod);
        domain_cache_pod(&p->domains, uid != NULL ? pod_index_find(&p->index, uid) : NULL, -1);
        if (pod_index_put(&p->index, event->pod, node, NULL) != 0)
            kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory indexing a pod");
        domain_cache_pod(&p->domains, uid != NULL ? pod_index_find(&p->index, uid) : NULL, +1);
        break;
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET:
        domain_cache_pod(&p->domains, uid != NULL ? pod_index_find(&p->index, uid) : NULL, -1);
        pod_index_remove(&p->index, uid);
        break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        /* the objects whose selectors make the default constraints' selector */
        if (spread_defaults_object_set(&p->defaults, event->object_kind, event->object_namespace,
                                       event->object_name, event->object_json) != 0)
            kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory keeping a selecting object");
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (spread_defaults_watches(event->object_kind))
            spread_defaults_object_remove(&p->defaults, event->object_kind,
                                          event->object_namespace, event->object_name);
        break;
    default: break;
    }
}

static kc_status reject_bad_constraints(kc_cycle *cycle, int rc, const char *error)
{
    if (rc == -ENOMEM) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    char message[512];
    snprintf(message, sizeof(message), PLUGIN_NAME ": %s", error);
    kc_cycle_reject(cycle, message);
    return KC_UNRESOLVABLE;
}

static kc_status spread_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct spread_state *s;
    char error[256] = "";
    int rc = build_state(self, pod, SPREAD_DO_NOT_SCHEDULE, false, &s, error, sizeof(error));
    if (rc != 0)
        return reject_bad_constraints(cycle, rc, error);
    if (s == NULL)
        return KC_SKIP;
    struct plugin *p = self;
    s->memo = &p->filter_memo;
    if (kc_cycle_set(cycle, FILTER_STATE_KEY, s, spread_state_free) != 0) {
        spread_state_free(s);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    attempt_memo_set(&p->filter_memo, cycle, s);
    return KC_SUCCESS;
}

/* ---- what-if Filter (preemption) ------------------------------------------------------ */

/* How many of the pods this Filter call takes off node (gone) or adds to it count for the
 * constraint, as kube's RemovePod / AddPod (updateWithPod) count them: pods of the incoming
 * pod's namespace matching the selector, on a node that counts. */
static int64_t delta_matching(kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                              const struct constraint_state *cs, int gone)
{
    int64_t n = 0;
    const char *namespace_name = kc_pod_namespace(pod);
    for (uint32_t i = 0;; i++) {
        const kc_pod *other = kc_filter_delta_pod(cycle, node, gone, i);
        if (other == NULL)
            break;
        if (strcmp(kc_pod_namespace(other), namespace_name) != 0)
            continue;
        if (label_selector_matches_with(&cs->c.selector, pod_handle_label, other))
            n++;
    }
    return n;
}

/* Asked on every node Filter visits: the host table is read directly, its check made in init. */
static bool delta_present(const struct plugin *p, kc_cycle *cycle, const kc_node *node)
{
    return p->host_delta && (kc_host->filter_delta_pod(cycle, node, 1, 0) != NULL ||
                             kc_host->filter_delta_pod(cycle, node, 0, 0) != NULL);
}

/* The global minimum with domain's count replaced by count: O(domains), what-if only. */
static int64_t minimum_with(const struct constraint_state *cs, int32_t domain, int64_t count)
{
    int64_t minimum = INT32_MAX;
    for (uint32_t d = 0; d < cs->domain_count; d++) {
        if (cs->domain_counted != NULL && !cs->domain_counted[d])
            continue;
        int64_t c = (int32_t)d == domain ? count : cs->count[d];
        if (c < minimum)
            minimum = c;
    }
    return minimum;
}

/* The domain count and global minimum of cs for node in this Filter call: PreFilter's, or
 * corrected for the pods a what-if Filter takes off or adds to node (kube's SelectVictimsOnNode
 * removes victims from the cycle state through RemovePod). */
static void counts_for(kc_cycle *cycle, const kc_pod *pod, const kc_node *node, uint32_t index,
                       const struct constraint_state *cs, bool delta, int64_t *count,
                       int64_t *minimum)
{
    int32_t domain = cs->domain_of_node[index];
    *count = cs->count[domain];
    *minimum = cs->min_count;
    bool counted = cs->node_counted == NULL || cs->node_counted[index];
    if (!delta || !counted)
        return;
    int64_t change = delta_matching(cycle, pod, node, cs, 0) - delta_matching(cycle, pod, node, cs, 1);
    if (change == 0)
        return;
    *count += change;
    *minimum = minimum_with(cs, domain, *count);
}

static kc_status spread_filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    const struct plugin *p = self;
    const struct spread_state *s = attempt_memo_get(&p->filter_memo, cycle, FILTER_STATE_KEY);
    if (s == NULL)
        return KC_SUCCESS; /* PreFilter skipped: the pod has no DoNotSchedule constraint */
    uint32_t index = kc_node_index(node);
    if (index >= s->node_count) {
        kc_cycle_reject(cycle, REASON_LABEL);
        return KC_UNRESOLVABLE;
    }
    bool delta = delta_present(p, cycle, node);
    for (uint32_t i = 0; i < s->count; i++) {
        const struct constraint_state *cs = &s->items[i];
        int32_t domain = cs->domain_of_node[index];
        if (domain < 0) {
            kc_cycle_reject(cycle, REASON_LABEL);
            return KC_UNRESOLVABLE;
        }
        int64_t count, min_count;
        counts_for(cycle, pod, node, index, cs, delta, &count, &min_count);
        /* fewer eligible domains than minDomains: the global minimum is taken as 0 */
        int64_t minimum = cs->counted_domains < (uint32_t)cs->c.min_domains ? 0 : min_count;
        int64_t skew = count + (cs->c.self_match ? 1 : 0) - minimum;
        if (skew > cs->c.max_skew) {
            kc_cycle_reject(cycle, REASON_SKEW);
            return KC_UNSCHEDULABLE;
        }
    }
    return KC_SUCCESS;
}

static kc_status spread_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct spread_state *s;
    char error[256] = "";
    int rc = build_state(self, pod, SPREAD_SCHEDULE_ANYWAY, true, &s, error, sizeof(error));
    if (rc != 0)
        return rc == -ENOMEM ? KC_ERROR : KC_SKIP;
    if (s == NULL)
        return KC_SKIP;
    if (kc_cycle_set(cycle, SCORE_STATE_KEY, s, spread_state_free) != 0) {
        spread_state_free(s);
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

/* The raw score needs the number of domains among the feasible nodes, known only once they
 * are all scored: NormalizeScore computes it, Score leaves 0. */
static kc_status spread_score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                              int64_t *score)
{
    (void)self;
    (void)cycle;
    (void)pod;
    (void)node;
    *score = 0;
    return KC_SUCCESS;
}

/* A node is ignored (scores 0) when it lacks one of the constraints' keys; never under the
 * System defaults, where a constraint whose key the node lacks just adds nothing. */
static bool node_ignored(const struct spread_state *s, uint32_t index)
{
    if (s->system_defaulted)
        return false;
    for (uint32_t i = 0; i < s->count; i++)
        if (s->items[i].domain_of_node[index] < 0)
            return true;
    return false;
}

/* kube's topologyNormalizingWeight per constraint: log(domains among the scored nodes + 2);
 * for hostname the number of scored nodes. index: the scored nodes' indices; ignored: by
 * position, node_ignored's answer. */
static void normalizing_weights(const struct spread_state *s, const uint32_t *index,
                                const uint8_t *ignored, uint32_t count, double *weights,
                                uint8_t *seen)
{
    uint32_t kept = 0;
    for (uint32_t n = 0; n < count; n++)
        kept += !ignored[n];
    for (uint32_t i = 0; i < s->count; i++) {
        const struct constraint_state *cs = &s->items[i];
        uint32_t size = kept;
        if (strcmp(cs->c.topology_key, HOSTNAME_KEY) != 0) {
            memset(seen, 0, cs->domain_count > 0 ? cs->domain_count : 1);
            size = 0;
            bool keyless = false;
            for (uint32_t n = 0; n < count; n++) {
                if (ignored[n])
                    continue;
                int32_t d = cs->domain_of_node[index[n]];
                if (d < 0) {
                    keyless = true; /* System defaults: kube counts "" as one more value */
                    continue;
                }
                size += !seen[d];
                seen[d] = 1;
            }
            size += keyless;
        }
        weights[i] = log((double)size + 2.0);
    }
}

/* llround (halves away from zero) without the call, for the raw scores here, which are never
 * negative: truncation is the floor, and x - floor(x) is exact for a double. */
static inline int64_t round_raw(double x)
{
    if (!(x >= 0.0 && x < 9.0e18))
        return llround(x);
    int64_t whole = (int64_t)x;
    return whole + (x - (double)whole >= 0.5);
}

/* One raw score per node (kube's Score), -1 for an ignored node; the extremes over the rest. */
static void raw_scores(const struct spread_state *s, const uint32_t *index, const uint8_t *ignored,
                       uint32_t count, const double *weights, int64_t *scores,
                       int64_t *min_score, int64_t *max_score)
{
    for (uint32_t n = 0; n < count; n++) {
        if (ignored[n]) {
            scores[n] = -1;
            continue;
        }
        double raw = 0;
        for (uint32_t i = 0; i < s->count; i++) {
            const struct constraint_state *cs = &s->items[i];
            int32_t domain = cs->domain_of_node[index[n]];
            if (domain < 0)
                continue; /* System defaults: the node lacks this key */
            int64_t pods = cs->node_pods != NULL ? cs->node_pods[index[n]] : cs->count[domain];
            raw += (double)pods * weights[i] + (double)(cs->c.max_skew - 1);
        }
        scores[n] = round_raw(raw);
        if (scores[n] < *min_score)
            *min_score = scores[n];
        if (scores[n] > *max_score)
            *max_score = scores[n];
    }
}

/* NormalizeScore's scratch in one block, on the stack when it fits (6 KiB: about 1,200 scored
 * nodes with one constraint, above the 500 that percentageOfNodesToScore leaves of 5,000): the
 * weights, each node's index and whether it is ignored, and the domains seen of the
 * constraint whose domains normalizing_weights counts (the largest). It made three
 * allocations an attempt and one per constraint before. */
#define NORMALIZE_STACK_DOUBLES 768

static size_t normalize_seen_size(const struct spread_state *s)
{
    size_t most = 1;
    for (uint32_t i = 0; i < s->count; i++)
        if (s->items[i].domain_count > most)
            most = s->items[i].domain_count;
    return most;
}

static kc_status spread_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                        const kc_node *const *nodes, int64_t *scores,
                                        uint32_t count)
{
    (void)self;
    (void)pod;
    const struct spread_state *s = kc_cycle_get(cycle, SCORE_STATE_KEY);
    if (s == NULL)
        return KC_SUCCESS;
    size_t bytes = (size_t)s->count * sizeof(double) + (size_t)count * sizeof(uint32_t) +
                   count + normalize_seen_size(s);
    double stack[NORMALIZE_STACK_DOUBLES];
    double *weights = bytes <= sizeof(stack) ? stack : malloc(bytes);
    if (weights == NULL)
        return KC_ERROR;
    /* each node's index and whether it is ignored, once: both passes below read them */
    uint32_t *index = (uint32_t *)(weights + s->count);
    uint8_t *ignored = (uint8_t *)(index + count);
    uint8_t *seen = ignored + count;
    for (uint32_t n = 0; n < count; n++) {
        index[n] = kc_node_index(nodes[n]);
        ignored[n] = node_ignored(s, index[n]);
    }
    int64_t min_score = INT64_MAX, max_score = 0;
    normalizing_weights(s, index, ignored, count, weights, seen);
    raw_scores(s, index, ignored, count, weights, scores, &min_score, &max_score);
    if (weights != stack)
        free(weights);
    for (uint32_t n = 0; n < count; n++) {
        if (scores[n] < 0)
            scores[n] = 0;
        else if (max_score == 0)
            scores[n] = 100;
        else
            scores[n] = 100 * (max_score + min_score - scores[n]) / max_score;
    }
    return KC_SUCCESS;
}

static const kc_plugin_ops spread_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = spread_init,
    .fini = spread_fini,
    .requeue_events = spread_requeue_events,
    .pre_filter = spread_pre_filter,
    .filter = spread_filter,
    .pre_score = spread_pre_score,
    .score = spread_score,
    .normalize_score = spread_normalize_score,
    .on_event = spread_on_event,
};

static const kc_plugin_descriptor spread_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &spread_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &spread_descriptor;
}
