/* defaultpreemption: kube-scheduler's DefaultPreemption PostFilter. When no node fits a pod, it
 * looks for the node where evicting the fewest, least important lower-priority pods makes the
 * pod fit (PodDisruptionBudgets respected unless unavoidable), then asks the runtime to
 * nominate the pod there and evict those victims. The runtime runs the Filter plugins on a
 * what-if view of each node (kc_filter_what_if); this plugin holds the algorithm. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "defaultpreemption"
#define PDB_KIND "PodDisruptionBudget"
#define REASON_SIZE 512

#define MSG_NOT_HELPFUL "Preemption is not helpful for scheduling"
#define MSG_NO_VICTIMS "No preemption victims found for incoming pod"
#define MSG_NEVER "not eligible due to preemptionPolicy=Never."
#define MSG_TERMINATING "not eligible due to a terminating pod on the nominated node."

/* ---- PodDisruptionBudgets (policy/v1), as custom objects ---------------------------------- */

enum selector_op { OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST };

struct requirement {
    char *key;
    enum selector_op op;
    char **values;
    size_t value_count;
};

struct pdb {
    char *namespace_name;
    char *name;
    bool selects; /* a non-empty, valid selector: an empty or invalid one matches nothing */
    struct requirement *requirements; /* matchLabels as In, then matchExpressions; ANDed */
    size_t requirement_count;
    int32_t disruptions_allowed;
    char **disrupted; /* status.disruptedPods: names the API server already counts */
    size_t disrupted_count;
};

struct plugin {
    int32_t min_candidate_percentage; /* minCandidateNodesPercentage, 0..100 */
    int32_t min_candidate_absolute;   /* minCandidateNodesAbsolute, >= 0 */
    struct pdb *pdbs;
    size_t pdb_count, pdb_capacity;
};

static void plugin_log(kc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void plugin_log(kc_log_level level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    kc_log(level, PLUGIN_NAME, line);
}

static char *copy_text(const char *text)
{
    return text != NULL ? strdup(text) : NULL;
}

static void pdb_clear(struct pdb *p)
{
    free(p->namespace_name);
    free(p->name);
    for (size_t i = 0; i < p->requirement_count; i++) {
        free(p->requirements[i].key);
        for (size_t k = 0; k < p->requirements[i].value_count; k++)
            free(p->requirements[i].values[k]);
        free(p->requirements[i].values);
    }
    free(p->requirements);
    for (size_t i = 0; i < p->disrupted_count; i++)
        free(p->disrupted[i]);
    free(p->disrupted);
    memset(p, 0, sizeof(*p));
}

static int add_requirement(struct pdb *p, const char *key, enum selector_op op,
                           const json_t *values, const char *single)
{
    struct requirement *grown =
        realloc(p->requirements, (p->requirement_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    p->requirements = grown;
    struct requirement *r = &grown[p->requirement_count++];
    memset(r, 0, sizeof(*r));
    r->op = op;
    r->key = copy_text(key);
    size_t count = single != NULL ? 1 : json_array_size(values);
    r->values = calloc(count + 1, sizeof(*r->values));
    if (r->key == NULL || r->values == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < count; i++) {
        const char *v = single != NULL ? single : json_string_value(json_array_get(values, i));
        if (v == NULL)
            return -EINVAL;
        if ((r->values[r->value_count++] = copy_text(v)) == NULL)
            return -ENOMEM;
    }
    return 0;
}

/* metav1.LabelSelectorAsSelector: matchLabels and matchExpressions ANDed. An operator it does
 * not know, or In/NotIn without values, make the selector invalid (it matches nothing). */
static int read_selector(struct pdb *p, const json_t *selector)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), key, value)
    {
        if (!json_is_string(value))
            return -EINVAL;
        int rc = add_requirement(p, key, OP_IN, NULL, json_string_value(value));
        if (rc < 0)
            return rc;
    }
    const json_t *expressions = json_object_get(selector, "matchExpressions");
    for (size_t i = 0; i < json_array_size(expressions); i++) {
        const json_t *e = json_array_get(expressions, i);
        const char *k = json_string_value(json_object_get(e, "key"));
        const char *op = json_string_value(json_object_get(e, "operator"));
        const json_t *values = json_object_get(e, "values");
        enum selector_op o;
        if (k == NULL || op == NULL)
            return -EINVAL;
        if (strcmp(op, "In") == 0)
            o = OP_IN;
        else if (strcmp(op, "NotIn") == 0)
            o = OP_NOT_IN;
        else if (strcmp(op, "Exists") == 0)
            o = OP_EXISTS;
        else if (strcmp(op, "DoesNotExist") == 0)
            o = OP_DOES_NOT_EXIST;
        else
            return -EINVAL;
        if ((o == OP_IN || o == OP_NOT_IN) && json_array_size(values) == 0)
            return -EINVAL;
        if ((o == OP_EXISTS || o == OP_DOES_NOT_EXIST) && json_array_size(values) > 0)
            return -EINVAL;
        int rc = add_requirement(p, k, o, values, NULL);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int pdb_parse(struct pdb *p, const char *json)
{
    json_error_t error;
    json_t *root = json_loads(json != NULL ? json : "{}", 0, &error);
    if (!json_is_object(root)) {
        json_decref(root);
        return -EINVAL;
    }
    const json_t *meta = json_object_get(root, "metadata");
    const json_t *spec = json_object_get(root, "spec");
    const json_t *status = json_object_get(root, "status");
    p->namespace_name = copy_text(json_string_value(json_object_get(meta, "namespace")));
    if (p->namespace_name == NULL)
        p->namespace_name = strdup("default");
    p->name = copy_text(json_string_value(json_object_get(meta, "name")));
    p->disruptions_allowed =
        (int32_t)json_integer_value(json_object_get(status, "disruptionsAllowed"));
    const char *pod;
    json_t *when;
    json_object_foreach(json_object_get(status, "disruptedPods"), pod, when)
    {
        char **grown = realloc(p->disrupted, (p->disrupted_count + 1) * sizeof(*grown));
        if (grown == NULL)
            break;
        p->disrupted = grown;
        if ((grown[p->disrupted_count] = copy_text(pod)) != NULL)
            p->disrupted_count++;
    }
    const json_t *selector = json_object_get(spec, "selector");
    int rc = json_is_object(selector) ? read_selector(p, selector) : 0;
    p->selects = rc == 0 && p->requirement_count > 0;
    json_decref(root);
    return p->namespace_name != NULL && p->name != NULL ? 0 : -EINVAL;
}

static struct pdb *pdb_find(struct plugin *pl, const char *namespace_name, const char *name)
{
    for (size_t i = 0; i < pl->pdb_count; i++)
        if (strcmp(pl->pdbs[i].namespace_name, namespace_name) == 0 &&
            strcmp(pl->pdbs[i].name, name) == 0)
            return &pl->pdbs[i];
    return NULL;
}

static void pdb_event(struct plugin *pl, const kc_event *ev)
{
    const char *ns = ev->object_namespace != NULL ? ev->object_namespace : "default";
    const char *name = ev->object_name != NULL ? ev->object_name : "";
    struct pdb *old = pdb_find(pl, ns, name);
    if (old != NULL) {
        pdb_clear(old);
        *old = pl->pdbs[--pl->pdb_count];
    }
    if (ev->type == KC_EVENT_OBJECT_DELETE)
        return;
    if (pl->pdb_count == pl->pdb_capacity) {
        size_t capacity = pl->pdb_capacity < 8 ? 8 : pl->pdb_capacity * 2;
        struct pdb *grown = realloc(pl->pdbs, capacity * sizeof(*grown));
        if (grown == NULL) {
            plugin_log(KC_LOG_ERROR, "PodDisruptionBudget %s/%s: out of memory", ns, name);
            return;
        }
        pl->pdbs = grown;
        pl->pdb_capacity = capacity;
    }
    struct pdb *p = &pl->pdbs[pl->pdb_count];
    memset(p, 0, sizeof(*p));
    if (pdb_parse(p, ev->object_json) < 0) {
        plugin_log(KC_LOG_WARN, "PodDisruptionBudget %s/%s: unreadable, ignored", ns, name);
        pdb_clear(p);
        return;
    }
    /* known by the event's names, which its update and delete carry too */
    free(p->namespace_name);
    free(p->name);
    p->namespace_name = strdup(ns);
    p->name = strdup(name);
    if (p->namespace_name == NULL || p->name == NULL) {
        pdb_clear(p);
        return;
    }
    pl->pdb_count++;
}

static bool requirement_matches(const struct requirement *r, const kc_pod *pod)
{
    const char *value = kc_pod_label(pod, r->key);
    bool listed = false;
    for (size_t i = 0; value != NULL && i < r->value_count; i++)
        listed = listed || strcmp(r->values[i], value) == 0;
    switch (r->op) {
    case OP_IN: return listed;
    case OP_NOT_IN: return !listed;
    case OP_EXISTS: return value != NULL;
    case OP_DOES_NOT_EXIST: return value == NULL;
    }
    return false;
}

static bool pdb_selects(const struct pdb *p, const kc_pod *pod)
{
    if (!p->selects || strcmp(p->namespace_name, kc_pod_namespace(pod)) != 0)
        return false;
    for (size_t i = 0; i < p->requirement_count; i++)
        if (!requirement_matches(&p->requirements[i], pod))
            return false;
    for (size_t i = 0; i < p->disrupted_count; i++)
        if (strcmp(p->disrupted[i], kc_pod_name(pod)) == 0)
            return false; /* its eviction is already counted by the API server */
    return true;
}

/* ---- victims on one node (kube's SelectVictimsOnNode) ------------------------------------ */

struct victim {
    const kc_pod *pod;
    int32_t priority;
    int64_t start_ms; /* status.startTime, or now when not started (kube's GetPodStartTime) */
    bool violating;
};

/* kube's MoreImportantPod: higher priority, then the earlier start. */
static int more_important_first(const void *a, const void *b)
{
    const struct victim *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms ? 1 : 0;
}

struct candidate {
    const kc_node *node;
    struct victim *victims; /* most important first */
    uint32_t victim_count;
    uint32_t pdb_violations;
};

/* What SelectVictimsOnNode came to on a node that yields no candidate. */
struct node_verdict {
    kc_status status;
    char reason[REASON_SIZE];
};

/* Split potential victims (sorted) into PDB-violating and not, as kube's
 * filterPodsWithPDBViolation: each matching budget loses one allowed disruption per pod and is
 * violated once it goes below zero. */
static void mark_violations(const struct plugin *pl, struct victim *v, uint32_t count)
{
    int32_t stack_allowed[64];
    int32_t *allowed = pl->pdb_count <= 64 ? stack_allowed
                                            : malloc(pl->pdb_count * sizeof(*allowed));
    if (allowed == NULL)
        return;
    for (size_t i = 0; i < pl->pdb_count; i++)
        allowed[i] = pl->pdbs[i].disruptions_allowed;
    for (uint32_t k = 0; k < count; k++) {
        v[k].violating = false;
        for (size_t i = 0; i < pl->pdb_count; i++) {
            if (!pdb_selects(&pl->pdbs[i], v[k].pod))
                continue;
            if (--allowed[i] < 0)
                v[k].violating = true;
        }
    }
    if (allowed != stack_allowed)
        free(allowed);
}

/* Try to give back one victim: it stays when the pod still fits without the others. */
static kc_status reprieve(kc_cycle *cycle, const kc_node *node, const kc_pod **removed,
                          uint32_t *removed_count, const kc_pod *pod, bool *fits)
{
    /* take pod out of the removed set */
    uint32_t at = 0;
    while (at < *removed_count && removed[at] != pod)
        at++;
    if (at == *removed_count)
        return KC_ERROR;
    removed[at] = removed[--(*removed_count)];
    kc_status st = kc_filter_what_if(cycle, node, removed, *removed_count, NULL, 0);
    if (st == KC_ERROR)
        return st;
    *fits = st == KC_SUCCESS;
    if (!*fits)
        removed[(*removed_count)++] = pod;
    return KC_SUCCESS;
}

/* KC_SUCCESS with c filled (at least one victim), or the node's verdict. */
static kc_status select_victims(const struct plugin *pl, kc_cycle *cycle, const kc_pod *pod,
                                const kc_node *node, int64_t now, struct candidate *c,
                                struct node_verdict *verdict)
{
    int32_t priority = kc_pod_priority(pod);
    uint32_t on_node = kc_node_pod_count(node);
    struct victim *potential = calloc(on_node + 1, sizeof(*potential));
    const kc_pod **removed = calloc(on_node + 1, sizeof(*removed));
    uint32_t count = 0;
    kc_status st = KC_ERROR;
    verdict->reason[0] = '\0';
    if (potential == NULL || removed == NULL) {
        snprintf(verdict->reason, sizeof(verdict->reason), "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < on_node; i++) {
        const kc_pod *p = kc_node_pod_at(node, i);
        if (p == NULL || kc_pod_priority(p) >= priority)
            continue;
        int64_t start = kc_pod_start_ms(p);
        potential[count] = (struct victim){p, kc_pod_priority(p), start > 0 ? start : now, false};
        removed[count++] = p;
    }
    if (count == 0) {
        st = KC_UNRESOLVABLE;
        snprintf(verdict->reason, sizeof(verdict->reason), MSG_NO_VICTIMS);
        goto out;
    }
    /* the pod must fit once every lower-priority pod is gone, or this node cannot help */
    st = kc_filter_what_if(cycle, node, removed, count, verdict->reason, sizeof(verdict->reason));
    if (st != KC_SUCCESS)
        goto out;
    qsort(potential, count, sizeof(*potential), more_important_first);
    mark_violations(pl, potential, count);
    c->victims = calloc(count, sizeof(*c->victims));
    if (c->victims == NULL) {
        st = KC_ERROR;
        snprintf(verdict->reason, sizeof(verdict->reason), "out of memory");
        goto out;
    }
    uint32_t removed_count = count;
    bool mixed[2] = {false, false};
    /* reprieve as many as possible: the PDB-violating ones first, each group from the most
     * important down */
    for (int pass = 0; pass < 2; pass++) {
        bool want_violating = pass == 0;
        for (uint32_t k = 0; k < count; k++) {
            if (potential[k].violating != want_violating)
                continue;
            bool fits = false;
            st = reprieve(cycle, node, removed, &removed_count, potential[k].pod, &fits);
            if (st != KC_SUCCESS) {
                snprintf(verdict->reason, sizeof(verdict->reason), "what-if Filter failed");
                goto out;
            }
            if (fits)
                continue;
            c->victims[c->victim_count++] = potential[k];
            c->pdb_violations += want_violating;
            mixed[pass] = true;
        }
    }
    if (mixed[0] && mixed[1])
        qsort(c->victims, c->victim_count, sizeof(*c->victims), more_important_first);
    c->node = node;
    st = KC_SUCCESS;
    if (c->victim_count == 0) { /* cannot happen: the node was unschedulable as it is */
        st = KC_ERROR;
        snprintf(verdict->reason, sizeof(verdict->reason),
                 "expected at least one victim pod on node %s", kc_node_name(node));
    }
out:
    verdict->status = st;
    free(potential);
    free(removed);
    return st;
}

/* ---- picking the node (kube's pickOneNodeForPreemption) ---------------------------------- */

/* The earliest start among the victims of the highest priority (victims[0]'s). */
static int64_t earliest_start_of_highest(const struct candidate *c)
{
    int64_t earliest = INT64_MAX;
    for (uint32_t i = 0; i < c->victim_count; i++)
        if (c->victims[i].priority == c->victims[0].priority && c->victims[i].start_ms < earliest)
            earliest = c->victims[i].start_ms;
    return earliest;
}

/* Score of candidate c by rule r: larger is better. */
static int64_t pick_score(const struct candidate *c, int rule)
{
    switch (rule) {
    case 0: return -(int64_t)c->pdb_violations;
    case 1: return -(int64_t)c->victims[0].priority;
    case 2: {
        /* shifted so that every priority counts positive, as kube */
        int64_t sum = 0;
        for (uint32_t i = 0; i < c->victim_count; i++)
            sum += (int64_t)c->victims[i].priority + 2147483648LL;
        return -sum;
    }
    case 3: return -(int64_t)c->victim_count;
    default: return earliest_start_of_highest(c);
    }
}

/* Fewest PDB violations, lowest highest-victim priority, lowest priority sum, fewest victims,
 * latest start of the highest-priority victims, then the first in candidate order. */
static uint32_t pick_one(const struct candidate *candidates, uint32_t count)
{
    uint32_t *alive = malloc(count * sizeof(*alive));
    if (alive == NULL)
        return 0;
    uint32_t n = count;
    for (uint32_t i = 0; i < count; i++)
        alive[i] = i;
    for (int rule = 0; rule < 5 && n > 1; rule++) {
        int64_t best = INT64_MIN;
        uint32_t kept = 0;
        for (uint32_t i = 0; i < n; i++) {
            int64_t score = pick_score(&candidates[alive[i]], rule);
            if (score > best) {
                best = score;
                kept = 0;
            }
            if (score == best)
                alive[kept++] = alive[i];
        }
        n = kept;
    }
    uint32_t chosen = alive[0];
    free(alive);
    return chosen;
}

/* ---- the message ------------------------------------------------------------------------- */

struct histogram {
    char **reasons;
    uint32_t *counts;
    uint32_t size, capacity;
};

static void histogram_add(struct histogram *h, const char *reason, uint32_t n)
{
    if (n == 0)
        return;
    for (uint32_t i = 0; i < h->size; i++) {
        if (strcmp(h->reasons[i], reason) == 0) {
            h->counts[i] += n;
            return;
        }
    }
    if (h->size == h->capacity) {
        uint32_t capacity = h->capacity < 8 ? 8 : h->capacity * 2;
        char **reasons = realloc(h->reasons, capacity * sizeof(*reasons));
        if (reasons != NULL)
            h->reasons = reasons;
        uint32_t *counts = realloc(h->counts, capacity * sizeof(*counts));
        if (counts != NULL)
            h->counts = counts;
        if (reasons == NULL || counts == NULL)
            return;
        h->capacity = capacity;
    }
    if ((h->reasons[h->size] = strdup(reason)) != NULL)
        h->counts[h->size++] = n;
}

/* A verdict's reasons (one a line) each count the node once. */
static void histogram_add_lines(struct histogram *h, const char *lines)
{
    char copy[REASON_SIZE];
    snprintf(copy, sizeof(copy), "%s", lines[0] != '\0' ? lines : MSG_NOT_HELPFUL);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        histogram_add(h, line, 1);
}

static int compare_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* kube's FitError text: "0/N nodes are available: " and "<count> <reason>" sorted, ", ". */
static void reject_with_histogram(kc_cycle *cycle, struct histogram *h, uint32_t node_count)
{
    char **parts = calloc(h->size + 1, sizeof(*parts));
    size_t total = 64;
    for (uint32_t i = 0; parts != NULL && i < h->size; i++) {
        size_t size = strlen(h->reasons[i]) + 16;
        if ((parts[i] = malloc(size)) != NULL)
            snprintf(parts[i], size, "%u %s", h->counts[i], h->reasons[i]);
        total += size + 2;
    }
    char *message = parts != NULL ? malloc(total) : NULL;
    if (message != NULL) {
        qsort(parts, h->size, sizeof(*parts), compare_text);
        size_t used = (size_t)snprintf(message, total, "preemption: 0/%u nodes are available: ",
                                       node_count);
        for (uint32_t i = 0; i < h->size; i++)
            used += (size_t)snprintf(message + used, total - used, "%s%s", i > 0 ? ", " : "",
                                     parts[i] != NULL ? parts[i] : "");
        snprintf(message + used, total - used, ".");
        kc_cycle_reject(cycle, message);
    }
    for (uint32_t i = 0; parts != NULL && i < h->size; i++)
        free(parts[i]);
    free(parts);
    free(message);
    for (uint32_t i = 0; i < h->size; i++)
        free(h->reasons[i]);
    free(h->reasons);
    free(h->counts);
}

/* ---- PostFilter -------------------------------------------------------------------------- */

/* kube's PodEligibleToPreemptOthers. NULL when eligible, else why not. */
static const char *not_eligible(kc_cycle *cycle, const kc_pod *pod)
{
    if (kc_pod_preempt_never(pod))
        return MSG_NEVER;
    const char *nominated = kc_pod_nominated_node_name(pod);
    const kc_node *node = nominated != NULL ? kc_node_by_name(nominated) : NULL;
    if (node == NULL || kc_cycle_node_status(cycle, node) == KC_UNRESOLVABLE)
        return NULL; /* its nominated node cannot help: it may preempt again */
    /* victims of its earlier preemption are still going: wait for them, not preempt more */
    int32_t priority = kc_pod_priority(pod);
    for (uint32_t i = 0; i < kc_node_pod_count(node); i++) {
        const kc_pod *p = kc_node_pod_at(node, i);
        if (p != NULL && kc_pod_priority(p) < priority && kc_pod_terminating(p))
            return MSG_TERMINATING;
    }
    return NULL;
}

/* kube's calculateNumCandidates. */
static uint32_t candidates_wanted(const struct plugin *pl, uint32_t potential)
{
    uint64_t n = (uint64_t)potential * (uint32_t)pl->min_candidate_percentage / 100;
    if (n < (uint64_t)pl->min_candidate_absolute)
        n = (uint64_t)pl->min_candidate_absolute;
    return n > potential ? potential : (uint32_t)n;
}

/* Where the dry run starts among the potential nodes. kube picks it at random; here it comes
 * from the pod's uid, so that a run is reproducible and pods still spread over the nodes. */
static uint32_t start_offset(const kc_pod *pod, uint32_t potential)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = kc_pod_uid(pod); c != NULL && *c != '\0'; c++)
        h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return potential > 0 ? (uint32_t)(h % potential) : 0;
}

static void free_candidates(struct candidate *c, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        free(c[i].victims);
    free(c);
}

static kc_status reject(kc_cycle *cycle, const char *why)
{
    char message[256];
    snprintf(message, sizeof(message), "preemption: %s", why);
    kc_cycle_reject(cycle, message);
    return KC_UNSCHEDULABLE;
}

static kc_status defaultpreemption_post_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct plugin *pl = self;
    const char *why = not_eligible(cycle, pod);
    if (why != NULL)
        return reject(cycle, why);
    uint32_t nodes = kc_node_count();
    const kc_node **potential = calloc(nodes + 1, sizeof(*potential));
    if (potential == NULL)
        return KC_ERROR;
    uint32_t potential_count = 0;
    for (uint32_t i = 0; i < nodes; i++) {
        const kc_node *node = kc_node_at(i);
        if (node != NULL && kc_cycle_node_status(cycle, node) == KC_UNSCHEDULABLE)
            potential[potential_count++] = node;
    }
    struct histogram h = {0};
    struct candidate *candidates = calloc(potential_count + 1, sizeof(*candidates));
    uint32_t violating_first = potential_count; /* candidates with violations fill from the end */
    uint32_t non_violating = 0, evaluated = 0;
    uint32_t wanted = candidates_wanted(pl, potential_count);
    uint32_t offset = start_offset(pod, potential_count);
    int64_t now = kc_now_ms();
    kc_status result = KC_UNSCHEDULABLE;
    if (candidates == NULL) {
        free(potential);
        return KC_ERROR;
    }
    for (uint32_t i = 0; i < potential_count; i++) {
        if (non_violating > 0 && non_violating + (potential_count - violating_first) >= wanted)
            break;
        const kc_node *node = potential[(offset + i) % potential_count];
        struct candidate c = {0};
        struct node_verdict verdict;
        kc_status st = select_victims(pl, cycle, pod, node, now, &c, &verdict);
        evaluated++;
        if (st == KC_SUCCESS) {
            if (c.pdb_violations == 0)
                candidates[non_violating++] = c;
            else
                candidates[--violating_first] = c;
            continue;
        }
        free(c.victims);
        if (st == KC_ERROR) {
            plugin_log(KC_LOG_ERROR, "pod %s/%s on node %s: %s", kc_pod_namespace(pod),
                       kc_pod_name(pod), kc_node_name(node), verdict.reason);
        }
        histogram_add_lines(&h, verdict.reason);
    }
    /* non-violating candidates first, then the violating ones in the order they were found */
    uint32_t count = non_violating;
    struct candidate *ordered = calloc(potential_count + 1, sizeof(*ordered));
    if (ordered == NULL) {
        free_candidates(candidates, potential_count);
        free(potential);
        return KC_ERROR;
    }
    memcpy(ordered, candidates, non_violating * sizeof(*ordered));
    for (uint32_t i = potential_count; i-- > violating_first;)
        ordered[count++] = candidates[i];
    free(candidates);
    candidates = ordered;
    if (count == 0) {
        /* nodes never examined (not potential, or left out) cannot be helped */
        histogram_add(&h, MSG_NOT_HELPFUL, nodes - evaluated);
        reject_with_histogram(cycle, &h, nodes);
        kc_preempt(cycle, NULL, NULL, 0); /* any earlier nomination goes */
    } else {
        for (uint32_t i = 0; i < h.size; i++)
            free(h.reasons[i]);
        free(h.reasons);
        free(h.counts);
        const struct candidate *best = &candidates[count > 1 ? pick_one(candidates, count) : 0];
        const kc_pod **victims = calloc(best->victim_count + 1, sizeof(*victims));
        int rc = victims != NULL ? 0 : -ENOMEM;
        for (uint32_t i = 0; victims != NULL && i < best->victim_count; i++)
            victims[i] = best->victims[i].pod;
        if (rc == 0)
            rc = kc_preempt(cycle, best->node, victims, best->victim_count);
        free(victims);
        if (rc == 0) {
            result = KC_SUCCESS;
        } else if (rc == -EBUSY) {
            result = reject(cycle, "a pod group member does not preempt alone.");
        } else {
            char text[160];
            snprintf(text, sizeof(text), "could not preempt on node %s (%s).",
                     kc_node_name(best->node), strerror(-rc));
            result = reject(cycle, text);
        }
    }
    free_candidates(candidates, count);
    free(potential);
    return result;
}

/* ---- lifecycle --------------------------------------------------------------------------- */

static void defaultpreemption_on_event(void *self, const kc_event *ev)
{
    if (ev->type >= KC_EVENT_OBJECT_ADD && ev->type <= KC_EVENT_OBJECT_DELETE &&
        ev->object_kind != NULL && strcmp(ev->object_kind, PDB_KIND) == 0)
        pdb_event(self, ev);
}

static int read_int_arg(const json_t *args, const char *key, int32_t low, int32_t high,
                        int32_t *out)
{
    const json_t *value = json_object_get(args, key);
    if (value == NULL)
        return 0;
    if (!json_is_integer(value) || json_integer_value(value) < low ||
        json_integer_value(value) > high) {
        plugin_log(KC_LOG_ERROR, "args: %s must be an integer from %d to %d", key, low, high);
        return -EINVAL;
    }
    *out = (int32_t)json_integer_value(value);
    return 0;
}

static int defaultpreemption_init(const kc_host_api *host, const char *args_json, void **self)
{
    if (kc_plugin_attach(host) < 0)
        return -EINVAL;
    if (!KC_HOST_HAS(host, preempt)) {
        plugin_log(KC_LOG_ERROR, "needs a host of SDK 1.2 or later (kc_preempt)");
        return -ENOTSUP;
    }
    struct plugin *pl = calloc(1, sizeof(*pl));
    if (pl == NULL)
        return -ENOMEM;
    pl->min_candidate_percentage = 10; /* kube's DefaultPreemptionArgs */
    pl->min_candidate_absolute = 100;
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    int rc = json_is_object(args) ? 0 : -EINVAL;
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value)
    {
        if (strcmp(key, "minCandidateNodesPercentage") != 0 &&
            strcmp(key, "minCandidateNodesAbsolute") != 0) {
            plugin_log(KC_LOG_ERROR, "args: unknown key %s", key);
            rc = -EINVAL;
        }
    }
    if (rc == 0)
        rc = read_int_arg(args, "minCandidateNodesPercentage", 0, 100,
                          &pl->min_candidate_percentage);
    if (rc == 0)
        rc = read_int_arg(args, "minCandidateNodesAbsolute", 0, INT32_MAX,
                          &pl->min_candidate_absolute);
    if (rc == 0 && pl->min_candidate_percentage == 0 && pl->min_candidate_absolute == 0) {
        plugin_log(KC_LOG_ERROR, "args: minCandidateNodesPercentage and "
                                 "minCandidateNodesAbsolute cannot both be 0");
        rc = -EINVAL;
    }
    json_decref(args);
    if (rc < 0) {
        free(pl);
        return rc;
    }
    *self = pl;
    return 0;
}

static void defaultpreemption_fini(void *self)
{
    struct plugin *pl = self;
    if (pl == NULL)
        return;
    for (size_t i = 0; i < pl->pdb_count; i++)
        pdb_clear(&pl->pdbs[i]);
    free(pl->pdbs);
    free(pl);
}

/* A preemption chosen here evicts pods; the pod itself comes back with their deletion, which
 * the resource plugins already ask for. Nothing else makes it fit. */
static uint32_t defaultpreemption_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_POD_DELETE);
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = defaultpreemption_init,
    .fini = defaultpreemption_fini,
    .requeue_events = defaultpreemption_requeue_events,
    .post_filter = defaultpreemption_post_filter,
    .on_event = defaultpreemption_on_event,
};

static const kc_plugin_descriptor descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &descriptor;
}
