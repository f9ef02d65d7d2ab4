/* interpodaffinity: kube-scheduler's InterPodAffinity. Filter enforces the pod's required pod
 * affinity and anti-affinity and the required anti-affinity of the pods already placed; Score
 * adds the weights of preferred terms (the pod's and the placed pods') and of placed pods'
 * required affinity (hardPodAffinityWeight) per topology domain.
 *
 * Cost: the plugin keeps its own index of assigned and assumed pods with their parsed terms
 * (plugins/common pod index, fed by cluster events). PreFilter counts, in one pass over the
 * index, matching pods per (topology key, value) into per-key arrays indexed by domain id,
 * with each node's domain id per key; Filter is a few array reads per term, allocation-free
 * and read-only, so the Filter threads share the state. */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "affinity_terms.h"
#include "domain_counts.h"
#include "term_groups.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "interpodaffinity"
#define FILTER_STATE_KEY "interpodaffinity/filter"
#define SCORE_STATE_KEY "interpodaffinity/score"
#define MAX_KEYS 64

/* kube's reasons, word for word. */
#define REASON_AFFINITY "node(s) didn't match pod affinity rules"
#define REASON_ANTI_AFFINITY "node(s) didn't match pod anti-affinity rules"
#define REASON_EXISTING_ANTI "node(s) didn't satisfy existing pods anti-affinity rules"

struct plugin {
    struct pod_index index;
    struct namespace_table namespaces;
    int64_t hard_pod_affinity_weight;         /* args, default 1 */
    bool ignore_preferred_terms_of_existing;  /* args, default false */
    uint32_t pods_with_required_anti;         /* indexed pods with required anti-affinity */
    uint32_t pods_with_terms;                 /* indexed pods with any term */
    struct domain_cache domains;              /* the fast path's per-domain counts */
    struct term_groups groups;                /* placed pods' terms, grouped */
};

/* One topology key of an attempt: each node's domain id under it and counts per domain. */
struct key_table {
    char *key;
    int32_t *domain_of_node; /* by node index; -1: the node lacks the key */
    uint32_t domain_count;
    int64_t *affinity;       /* pods matching all the pod's required affinity terms */
    int64_t *anti;           /* pods matching one of the pod's required anti-affinity terms */
    int64_t *existing_anti;  /* placed pods whose required anti-affinity selects the pod */
    int64_t *score;          /* preferred weights */
    int64_t existing_total;
    bool borrowed; /* domain_of_node belongs to the plugin's domain cache */
};

/* The attempt's state; read-only once stored. */
struct affinity_state {
    struct pod_terms *terms; /* the incoming pod's, may be NULL */
    uint32_t node_count;
    struct key_table keys[MAX_KEYS];
    uint32_t key_count;
    /* per term of terms: its key table */
    uint32_t *affinity_key;
    uint32_t *anti_key;
    int64_t affinity_total;
    bool self_matches_affinity; /* the pod matches all its own required affinity terms */
    int failed;                 /* out of memory or too many keys while counting */
    struct domain_cache *cache; /* fast path: key tables borrow the cache's maps */
};

static void affinity_state_free(void *data)
{
    struct affinity_state *s = data;
    if (s == NULL)
        return;
    for (uint32_t i = 0; i < s->key_count; i++) {
        struct key_table *k = &s->keys[i];
        free(k->key);
        if (!k->borrowed)
            free(k->domain_of_node);
        free(k->affinity);
        free(k->anti);
        free(k->existing_anti);
        free(k->score);
    }
    free(s->affinity_key);
    free(s->anti_key);
    pod_terms_free(s->terms);
    free(s);
}

/* ---- key tables ------------------------------------------------------------------------ */

/* The slow path's table: number the key's values over the snapshot's nodes. */
static int key_table_map(struct key_table *k, uint32_t nodes)
{
    struct domain_map map = {.key = k->key};
    int rc = domain_map_build(&map, nodes);
    k->domain_of_node = map.domain_of_node;
    k->domain_count = map.domain_count;
    if (rc != 0)
        return rc;
    size_t domains = k->domain_count > 0 ? k->domain_count : 1;
    k->affinity = calloc(domains, sizeof(int64_t));
    k->anti = calloc(domains, sizeof(int64_t));
    k->existing_anti = calloc(domains, sizeof(int64_t));
    k->score = calloc(domains, sizeof(int64_t));
    return k->affinity != NULL && k->anti != NULL && k->existing_anti != NULL && k->score != NULL
               ? 0
               : -ENOMEM;
}

/* The fast path's table: the cache's node-to-domain map, counts of this attempt. */
static int key_table_borrow(struct key_table *k, const struct domain_map *m)
{
    k->borrowed = true;
    k->domain_of_node = m->domain_of_node;
    k->domain_count = m->domain_count;
    size_t domains = k->domain_count > 0 ? k->domain_count : 1;
    k->affinity = calloc(domains, sizeof(int64_t));
    k->anti = calloc(domains, sizeof(int64_t));
    k->existing_anti = calloc(domains, sizeof(int64_t));
    k->score = calloc(domains, sizeof(int64_t));
    return k->affinity != NULL && k->anti != NULL && k->existing_anti != NULL && k->score != NULL
               ? 0
               : -ENOMEM;
}

/* The table of key, made on first use; NULL (s->failed set) when it cannot be. */
static struct key_table *key_table_of(struct affinity_state *s, const char *key, uint32_t *at)
{
    for (uint32_t i = 0; i < s->key_count; i++)
        if (strcmp(s->keys[i].key, key) == 0) {
            if (at != NULL)
                *at = i;
            return &s->keys[i];
        }
    if (s->key_count == MAX_KEYS) {
        s->failed = -E2BIG;
        return NULL;
    }
    struct key_table *k = &s->keys[s->key_count++];
    memset(k, 0, sizeof(*k));
    k->key = strdup(key);
    if (k->key != NULL && s->cache != NULL) {
        uint32_t map;
        const struct domain_map *m = domain_cache_map(s->cache, key, &map);
        if (m == NULL || key_table_borrow(k, m) != 0) {
            s->failed = -ENOMEM;
            return NULL;
        }
    } else if (k->key == NULL || key_table_map(k, s->node_count) != 0) {
        s->failed = -ENOMEM;
        return NULL;
    }
    if (at != NULL)
        *at = s->key_count - 1;
    return k;
}

/* The domain of the node an indexed pod runs on under key; -1 when none. */
static int32_t domain_of(struct affinity_state *s, struct key_table *k, uint32_t node)
{
    (void)s;
    return k != NULL && node < s->node_count ? k->domain_of_node[node] : -1;
}

/* ---- counting -------------------------------------------------------------------------- */

struct count_context {
    struct plugin *plugin;
    struct affinity_state *state;
    const kc_pod *pod;
    bool scoring;
};

static bool term_selects_indexed(const struct plugin *p, const struct affinity_term *term,
                                 const struct indexed_pod *target)
{
    return affinity_term_matches(term, &p->namespaces, target->namespace_name, indexed_pod_label,
                                 target);
}

static bool term_selects_incoming(const struct plugin *p, const struct affinity_term *term,
                                  const kc_pod *pod)
{
    return affinity_term_matches(term, &p->namespaces, kc_pod_namespace(pod), pod_handle_label,
                                 pod);
}

static void add_weight(struct affinity_state *s, const char *key, uint32_t node, int64_t weight)
{
    struct key_table *k = key_table_of(s, key, NULL);
    int32_t d = domain_of(s, k, node);
    if (d >= 0)
        k->score[d] += weight;
}

/* kube's PreFilter counts for one placed pod. */
static void count_for_filter(struct count_context *c, const struct indexed_pod *placed,
                             uint32_t node)
{
    struct affinity_state *s = c->state;
    const struct pod_terms *mine = s->terms;
    if (mine != NULL && mine->required_affinity_count > 0) {
        bool all = true;
        for (uint32_t t = 0; t < mine->required_affinity_count && all; t++)
            all = term_selects_indexed(c->plugin, &mine->required_affinity[t], placed);
        for (uint32_t t = 0; all && t < mine->required_affinity_count; t++) {
            struct key_table *k = &s->keys[s->affinity_key[t]];
            int32_t d = domain_of(s, k, node);
            if (d >= 0) {
                k->affinity[d]++;
                s->affinity_total++;
            }
        }
    }
    for (uint32_t t = 0; mine != NULL && t < mine->required_anti_count; t++) {
        if (!term_selects_indexed(c->plugin, &mine->required_anti[t], placed))
            continue;
        struct key_table *k = &s->keys[s->anti_key[t]];
        int32_t d = domain_of(s, k, node);
        if (d >= 0)
            k->anti[d]++;
    }
    const struct pod_terms *theirs = placed->extra;
    for (uint32_t t = 0; theirs != NULL && t < theirs->required_anti_count; t++) {
        const struct affinity_term *term = &theirs->required_anti[t];
        if (!term_selects_incoming(c->plugin, term, c->pod))
            continue;
        struct key_table *k = key_table_of(s, term->topology_key, NULL);
        int32_t d = domain_of(s, k, node);
        if (d >= 0) {
            k->existing_anti[d]++;
            k->existing_total++;
        }
    }
}

/* kube's PreScore for one placed pod: the pod's preferred terms against it, and its terms
 * against the pod. */
static void count_for_score(struct count_context *c, const struct indexed_pod *placed,
                            uint32_t node)
{
    struct affinity_state *s = c->state;
    const struct pod_terms *mine = s->terms;
    for (uint32_t t = 0; mine != NULL && t < mine->preferred_affinity_count; t++) {
        const struct affinity_term *term = &mine->preferred_affinity[t];
        if (term_selects_indexed(c->plugin, term, placed))
            add_weight(s, term->topology_key, node, term->weight);
    }
    for (uint32_t t = 0; mine != NULL && t < mine->preferred_anti_count; t++) {
        const struct affinity_term *term = &mine->preferred_anti[t];
        if (term_selects_indexed(c->plugin, term, placed))
            add_weight(s, term->topology_key, node, -term->weight);
    }
    const struct pod_terms *theirs = placed->extra;
    if (theirs == NULL)
        return;
    int64_t hard = c->plugin->hard_pod_affinity_weight;
    for (uint32_t t = 0; hard > 0 && t < theirs->required_affinity_count; t++) {
        const struct affinity_term *term = &theirs->required_affinity[t];
        if (term_selects_incoming(c->plugin, term, c->pod))
            add_weight(s, term->topology_key, node, hard);
    }
    if (c->plugin->ignore_preferred_terms_of_existing)
        return;
    for (uint32_t t = 0; t < theirs->preferred_affinity_count; t++) {
        const struct affinity_term *term = &theirs->preferred_affinity[t];
        if (term_selects_incoming(c->plugin, term, c->pod))
            add_weight(s, term->topology_key, node, term->weight);
    }
    for (uint32_t t = 0; t < theirs->preferred_anti_count; t++) {
        const struct affinity_term *term = &theirs->preferred_anti[t];
        if (term_selects_incoming(c->plugin, term, c->pod))
            add_weight(s, term->topology_key, node, -term->weight);
    }
}

static void count_pod(void *opaque, const struct indexed_pod *placed)
{
    struct count_context *c = opaque;
    if (c->state->failed != 0)
        return;
    const kc_node *node = kc_node_by_name(placed->node_name);
    if (node == NULL)
        return;
    uint32_t index = kc_node_index(node);
    if (c->scoring)
        count_for_score(c, placed, index);
    else
        count_for_filter(c, placed, index);
}

static int state_new(struct plugin *p, const kc_pod *pod, struct affinity_state **out,
                     char *error, size_t error_size)
{
    struct affinity_state *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return -ENOMEM;
    s->node_count = kc_node_count();
    int rc = pod_terms_parse(pod, &s->terms, error, error_size);
    if (rc != 0) {
        free(s);
        return rc;
    }
    (void)p;
    *out = s;
    return 0;
}

/* Tables for the pod's own required terms, made before counting so Filter finds them. */
static int map_required_keys(struct affinity_state *s, const struct plugin *p, const kc_pod *pod)
{
    const struct pod_terms *t = s->terms;
    if (t == NULL)
        return 0;
    s->affinity_key = calloc(t->required_affinity_count + 1, sizeof(uint32_t));
    s->anti_key = calloc(t->required_anti_count + 1, sizeof(uint32_t));
    if (s->affinity_key == NULL || s->anti_key == NULL)
        return -ENOMEM;
    s->self_matches_affinity = true;
    for (uint32_t i = 0; i < t->required_affinity_count; i++) {
        if (key_table_of(s, t->required_affinity[i].topology_key, &s->affinity_key[i]) == NULL)
            return s->failed;
        s->self_matches_affinity =
            s->self_matches_affinity && term_selects_incoming(p, &t->required_affinity[i], pod);
    }
    for (uint32_t i = 0; i < t->required_anti_count; i++)
        if (key_table_of(s, t->required_anti[i].topology_key, &s->anti_key[i]) == NULL)
            return s->failed;
    return 0;
}

/* ---- fast path ------------------------------------------------------------------------- *
 * The pod's terms read the event-fed counters of the domain cache (one per namespace the term
 * selects), placed pods' terms come grouped (term_groups): an attempt costs O(terms x domains)
 * instead of a pass over every pod. Taken when the cache, the groups and every counter are
 * available, the pod has at most one required affinity term (kube counts pods matching all of
 * them, which per-term counters cannot give) and no term of the pod uses a namespaceSelector. */

static bool fast_usable(struct plugin *p, struct affinity_state *s, bool scoring)
{
    bool had = p->domains.valid && p->domains.node_count == kc_node_count();
    if (domain_cache_prepare(&p->domains) != 0)
        return false;
    if (!had)
        term_groups_reset(&p->groups);
    if (!term_groups_prepare(&p->groups, &p->domains, &p->index))
        return false;
    const struct pod_terms *t = s->terms;
    if (t == NULL)
        return true;
    if (!scoring && t->required_affinity_count > 1)
        return false;
    const struct affinity_term *lists[4] = {t->required_affinity, t->required_anti,
                                            t->preferred_affinity, t->preferred_anti};
    const uint32_t counts[4] = {t->required_affinity_count, t->required_anti_count,
                                t->preferred_affinity_count, t->preferred_anti_count};
    for (int l = 0; l < 4; l++)
        for (uint32_t i = 0; i < counts[l]; i++)
            if (lists[l][i].has_namespace_selector)
                return false;
    return true;
}

/* Add weight x the term's matching pods per domain into the key table's array at offset. */
static bool add_term_counts(struct plugin *p, struct affinity_state *s,
                            const struct affinity_term *term, size_t array, int64_t weight,
                            uint32_t *key_at, int64_t *total)
{
    uint32_t at;
    struct key_table *k = key_table_of(s, term->topology_key, &at);
    if (k == NULL)
        return false;
    if (key_at != NULL)
        *key_at = at;
    int64_t *target = *(int64_t **)((char *)k + array);
    for (uint32_t n = 0; n < term->namespace_count; n++) {
        const struct domain_counter *c = domain_cache_counter(
            &p->domains, &p->index, term->namespaces[n], &term->selector, term->topology_key);
        if (c == NULL)
            return false;
        for (uint32_t d = 0; d < k->domain_count; d++) {
            target[d] += weight * c->counts[d];
            if (total != NULL)
                *total += c->counts[d];
        }
    }
    return true;
}

static bool fast_pre_filter(struct plugin *p, const kc_pod *pod, struct affinity_state *s)
{
    s->cache = &p->domains;
    const struct pod_terms *t = s->terms;
    uint32_t affinity = t != NULL ? t->required_affinity_count : 0;
    uint32_t anti = t != NULL ? t->required_anti_count : 0;
    if (t != NULL) {
        s->affinity_key = calloc(affinity + 1, sizeof(uint32_t));
        s->anti_key = calloc(anti + 1, sizeof(uint32_t));
        if (s->affinity_key == NULL || s->anti_key == NULL)
            return false;
    }
    s->self_matches_affinity = true;
    for (uint32_t i = 0; i < affinity; i++) {
        if (!add_term_counts(p, s, &t->required_affinity[i], offsetof(struct key_table, affinity),
                             1, &s->affinity_key[i], &s->affinity_total))
            return false;
        s->self_matches_affinity =
            s->self_matches_affinity && term_selects_incoming(p, &t->required_affinity[i], pod);
    }
    for (uint32_t i = 0; i < anti; i++)
        if (!add_term_counts(p, s, &t->required_anti[i], offsetof(struct key_table, anti), 1,
                             &s->anti_key[i], NULL))
            return false;
    for (uint32_t g = 0; g < p->groups.count; g++) {
        const struct term_group *group = &p->groups.items[g];
        if (group->kind != GROUP_REQUIRED_ANTI || group->total == 0 ||
            !term_selects_incoming(p, &group->term, pod))
            continue;
        struct key_table *k = key_table_of(s, group->term.topology_key, NULL);
        if (k == NULL)
            return false;
        for (uint32_t d = 0; d < k->domain_count; d++)
            k->existing_anti[d] += group->counts[d];
        k->existing_total += group->total;
    }
    return s->failed == 0;
}

static bool fast_pre_score(struct plugin *p, const kc_pod *pod, struct affinity_state *s)
{
    s->cache = &p->domains;
    const struct pod_terms *t = s->terms;
    for (uint32_t i = 0; t != NULL && i < t->preferred_affinity_count; i++)
        if (!add_term_counts(p, s, &t->preferred_affinity[i], offsetof(struct key_table, score),
                             t->preferred_affinity[i].weight, NULL, NULL))
            return false;
    for (uint32_t i = 0; t != NULL && i < t->preferred_anti_count; i++)
        if (!add_term_counts(p, s, &t->preferred_anti[i], offsetof(struct key_table, score),
                             -t->preferred_anti[i].weight, NULL, NULL))
            return false;
    for (uint32_t g = 0; g < p->groups.count; g++) {
        const struct term_group *group = &p->groups.items[g];
        int64_t weight = 0;
        switch (group->kind) {
        case GROUP_REQUIRED_AFFINITY: weight = p->hard_pod_affinity_weight; break;
        case GROUP_PREFERRED_AFFINITY: weight = group->term.weight; break;
        case GROUP_PREFERRED_ANTI: weight = -group->term.weight; break;
        default: break;
        }
        if (group->kind != GROUP_REQUIRED_AFFINITY && p->ignore_preferred_terms_of_existing)
            weight = 0;
        if (weight == 0 || group->total == 0 || !term_selects_incoming(p, &group->term, pod))
            continue;
        struct key_table *k = key_table_of(s, group->term.topology_key, NULL);
        if (k == NULL)
            return false;
        for (uint32_t d = 0; d < k->domain_count; d++)
            k->score[d] += weight * group->counts[d];
    }
    return s->failed == 0;
}

/* A fresh state for the slow path after the fast one gave up part way. */
static int restart_state(struct plugin *p, const kc_pod *pod, struct affinity_state **s)
{
    affinity_state_free(*s);
    char error[256];
    return state_new(p, pod, s, error, sizeof(error));
}

/* ---- phases ---------------------------------------------------------------------------- */

static int parse_args(struct plugin *p, const char *args_json)
{
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    if (!json_is_object(args)) {
        json_decref(args);
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "args: not a JSON object");
        return -EINVAL;
    }
    p->hard_pod_affinity_weight = 1;
    const char *key;
    json_t *value;
    int rc = 0;
    json_object_foreach(args, key, value)
    {
        if (strcmp(key, "hardPodAffinityWeight") == 0 && json_is_integer(value) &&
            json_integer_value(value) >= 0 && json_integer_value(value) <= 100) {
            p->hard_pod_affinity_weight = json_integer_value(value);
        } else if (strcmp(key, "ignorePreferredTermsOfExistingPods") == 0 &&
                   json_is_boolean(value)) {
            p->ignore_preferred_terms_of_existing = json_is_true(value);
        } else {
            char message[256];
            snprintf(message, sizeof(message),
                     "args: \"%s\": expected hardPodAffinityWeight (0..100) or "
                     "ignorePreferredTermsOfExistingPods (true/false)",
                     key);
            kc_log(KC_LOG_ERROR, PLUGIN_NAME, message);
            rc = -EINVAL;
        }
    }
    json_decref(args);
    return rc;
}

static int affinity_init(const kc_host_api *host, const char *args_json, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -EINVAL;
    struct plugin *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    int rc = parse_args(p, args_json);
    if (rc == 0)
        rc = pod_index_init(&p->index, pod_terms_free);
    if (rc != 0) {
        free(p);
        return rc;
    }
    *self = p;
    return 0;
}

static void affinity_fini(void *self)
{
    struct plugin *p = self;
    if (p == NULL)
        return;
    term_groups_reset(&p->groups);
    domain_cache_invalidate(&p->domains);
    pod_index_free(&p->index);
    namespace_table_free(&p->namespaces);
    free(p);
}

static uint32_t affinity_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_ADD) | KC_EVENT_MASK(KC_EVENT_POD_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET) |
           KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE);
}

/* The two tallies that let PreFilter and PreScore skip, kept as pods come and go. */
static void tally(struct plugin *p, const struct pod_terms *terms, int delta)
{
    if (terms == NULL)
        return;
    p->pods_with_terms += (uint32_t)delta;
    if (terms->required_anti_count > 0)
        p->pods_with_required_anti += (uint32_t)delta;
}


/* The pod with uid (if indexed) leaves (-1) or joins (+1) the tallies and the fast path's
 * counts. */
static void account(struct plugin *p, const char *uid, int delta)
{
    const struct indexed_pod *pod = uid != NULL ? pod_index_find(&p->index, uid) : NULL;
    if (pod == NULL)
        return;
    tally(p, pod->extra, delta);
    domain_cache_pod(&p->domains, pod, delta);
    term_groups_pod(&p->groups, &p->domains, pod, delta);
}

static void put_pod(struct plugin *p, const kc_event *event, const char *node)
{
    const char *uid = kc_pod_uid(event->pod);
    struct pod_terms *terms = NULL;
    char error[256] = "";
    if (pod_terms_parse(event->pod, &terms, error, sizeof(error)) != 0)
        terms = NULL; /* PreFilter refused its bad terms; its labels still count */
    account(p, uid, -1);
    if (pod_index_put(&p->index, event->pod, node, terms) != 0)
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory indexing a pod");
    account(p, uid, +1);
}

static void affinity_on_event(void *self, const kc_event *event)
{
    struct plugin *p = self;
    const char *node = event->node != NULL ? kc_node_name(event->node) : NULL;
    switch (event->type) {
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
    case KC_EVENT_POD_ASSUME:
        put_pod(p, event, node != NULL ? node : kc_pod_node_name(event->pod));
        break;
    case KC_EVENT_POD_DELETE:
    case KC_EVENT_POD_FORGET:
        account(p, kc_pod_uid(event->pod), -1);
        pod_index_remove(&p->index, kc_pod_uid(event->pod));
        break;
    case KC_EVENT_NODE_ADD:
    case KC_EVENT_NODE_UPDATE:
    case KC_EVENT_NODE_DELETE:
        /* node indices or labels change: counts and groups are rebuilt on the next attempt */
        term_groups_reset(&p->groups);
        domain_cache_invalidate(&p->domains);
        break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        if (event->object_kind != NULL && strcmp(event->object_kind, "Namespace") == 0 &&
            namespace_table_set(&p->namespaces, event->object_name, event->object_json) != 0)
            kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory keeping a namespace");
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (event->object_kind != NULL && strcmp(event->object_kind, "Namespace") == 0)
            namespace_table_remove(&p->namespaces, event->object_name);
        break;
    default: break;
    }
}

static kc_status store_or_fail(kc_cycle *cycle, const char *key, struct affinity_state *s)
{
    if (kc_cycle_set(cycle, key, s, affinity_state_free) != 0) {
        affinity_state_free(s);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    return KC_SUCCESS;
}

static kc_status reject_parse(kc_cycle *cycle, int rc, const char *error)
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

/* Whether some placed pod's required anti-affinity selects the pod in a domain of the
 * snapshot: kube's existingAntiAffinityCounts being non-empty. */
static bool existing_anti_counted(const struct affinity_state *s)
{
    for (uint32_t i = 0; i < s->key_count; i++)
        for (uint32_t d = 0; d < s->keys[i].domain_count; d++)
            if (s->keys[i].existing_anti[d] > 0)
                return true;
    return false;
}

/* The attempt's state when Filter has work to do, else KC_SKIP as kube's PreFilter: a pod
 * without required terms that no placed pod's anti-affinity selects is skipped even where
 * other placed pods carry anti-affinity. It matters beyond speed: a skipped Filter never sees
 * nominated pods (kube calls no AddPod for it), so their anti-affinity refuses no node. */
static kc_status store_or_skip(kc_cycle *cycle, struct affinity_state *s, bool required)
{
    if (!required && !existing_anti_counted(s)) {
        affinity_state_free(s);
        return KC_SKIP;
    }
    return store_or_fail(cycle, FILTER_STATE_KEY, s);
}

static kc_status affinity_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct plugin *p = self;
    /* the common case, decided before allocating a state (several KB): a pod without terms
     * (none, or only spread constraints) while no placed pod has required anti-affinity */
    if (!pod_terms_possible(pod) && p->pods_with_required_anti == 0)
        return KC_SKIP;
    struct affinity_state *s;
    char error[256] = "";
    int rc = state_new(p, pod, &s, error, sizeof(error));
    if (rc != 0)
        return reject_parse(cycle, rc, error);
    bool required = s->terms != NULL &&
                    s->terms->required_affinity_count + s->terms->required_anti_count > 0;
    if (!required && p->pods_with_required_anti == 0) {
        affinity_state_free(s);
        return KC_SKIP;
    }
    if (fast_usable(p, s, false) && fast_pre_filter(p, pod, s))
        return store_or_skip(cycle, s, required);
    if (restart_state(p, pod, &s) != 0)
        return reject_parse(cycle, -ENOMEM, "");
    rc = map_required_keys(s, p, pod);
    struct count_context c = {.plugin = p, .state = s, .pod = pod, .scoring = false};
    if (rc == 0)
        pod_index_each(&p->index, count_pod, &c);
    if (rc != 0 || s->failed != 0) {
        int failed = rc != 0 ? rc : s->failed;
        affinity_state_free(s);
        kc_cycle_reject(cycle, failed == -E2BIG ? PLUGIN_NAME ": more than 64 topology keys"
                                                : PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    return store_or_skip(cycle, s, required);
}

/* ---- what-if Filter (preemption) ------------------------------------------------------ */

/* A Filter call that takes pods off node or adds pods to it (kc_filter_delta_pod): the
 * PreFilter counts of node's domains corrected for them, as kube's RemovePod / AddPod
 * (updateWithPod) do on a copy of the state in SelectVictimsOnNode. Only node's own domains
 * change (the pods are on it), so the correction is local; nothing is stored. */
struct delta_counts {
    int64_t affinity_pods; /* pods matching every required affinity term, net */
    int64_t anti[64];      /* per required anti-affinity term, net */
    int64_t existing[MAX_KEYS]; /* per key table: pods whose required anti-affinity selects
                                   the incoming pod, net */
    bool existing_untabled;     /* an added pod's such term has a key with no table, on node */
    int failed;
};

static void delta_pod(const struct plugin *p, const struct affinity_state *s, const kc_pod *pod,
                      const kc_node *node, const kc_pod *other, int sign, struct delta_counts *d)
{
    const struct pod_terms *mine = s->terms;
    const char *ns = kc_pod_namespace(other);
    if (mine != NULL && mine->required_affinity_count > 0) {
        bool all = true;
        for (uint32_t t = 0; t < mine->required_affinity_count && all; t++)
            all = affinity_term_matches(&mine->required_affinity[t], &p->namespaces, ns,
                                        pod_handle_label, other);
        d->affinity_pods += all ? sign : 0;
    }
    for (uint32_t t = 0; mine != NULL && t < mine->required_anti_count && t < 64; t++)
        if (affinity_term_matches(&mine->required_anti[t], &p->namespaces, ns, pod_handle_label,
                                  other))
            d->anti[t] += sign;
    struct pod_terms *theirs = NULL;
    char error[128];
    if (pod_terms_parse(other, &theirs, error, sizeof(error)) == -ENOMEM)
        d->failed = -ENOMEM;
    for (uint32_t t = 0; theirs != NULL && t < theirs->required_anti_count; t++) {
        const struct affinity_term *term = &theirs->required_anti[t];
        if (!term_selects_incoming(p, term, pod) || kc_node_label(node, term->topology_key) == NULL)
            continue;
        bool tabled = false;
        for (uint32_t k = 0; k < s->key_count && !tabled; k++)
            if (strcmp(s->keys[k].key, term->topology_key) == 0) {
                d->existing[k] += sign;
                tabled = true;
            }
        if (!tabled && sign > 0)
            d->existing_untabled = true;
    }
    pod_terms_free(theirs);
}

/* false when the call has no such pods for node (the common case: one host call each way). */
static bool delta_collect(const struct plugin *p, const struct affinity_state *s, kc_cycle *cycle,
                          const kc_pod *pod, const kc_node *node, struct delta_counts *d)
{
    if (kc_filter_delta_pod(cycle, node, 1, 0) == NULL &&
        kc_filter_delta_pod(cycle, node, 0, 0) == NULL)
        return false;
    memset(d, 0, sizeof(*d));
    for (int gone = 0; gone <= 1; gone++)
        for (uint32_t i = 0;; i++) {
            const kc_pod *other = kc_filter_delta_pod(cycle, node, gone, i);
            if (other == NULL)
                break;
            delta_pod(p, s, pod, node, other, gone ? -1 : 1, d);
        }
    return true;
}

/* The checks of Filter, on PreFilter's counts or, in a Filter that takes pods off the node or
 * adds some (d not NULL), on those counts corrected for them. */
static bool satisfies_affinity(const struct affinity_state *s, uint32_t node,
                               const struct delta_counts *d)
{
    const struct pod_terms *t = s->terms;
    if (t == NULL || t->required_affinity_count == 0)
        return true;
    int64_t change = d != NULL ? d->affinity_pods : 0;
    bool pods_exist = true;
    for (uint32_t i = 0; i < t->required_affinity_count; i++) {
        const struct key_table *k = &s->keys[s->affinity_key[i]];
        int32_t dom = k->domain_of_node[node];
        if (dom < 0)
            return false; /* every topology key must be on the node */
        if (k->affinity[dom] + change <= 0)
            pods_exist = false;
    }
    /* every term's key is on node: a pod counts once per term, as PreFilter counts */
    int64_t total = s->affinity_total + change * (int64_t)t->required_affinity_count;
    /* the first pod of a set with affinity to itself: no pod matches anywhere yet */
    return pods_exist || (total == 0 && s->self_matches_affinity);
}

static bool satisfies_anti_affinity(const struct affinity_state *s, uint32_t node,
                                    const struct delta_counts *d)
{
    const struct pod_terms *t = s->terms;
    for (uint32_t i = 0; t != NULL && i < t->required_anti_count; i++) {
        const struct key_table *k = &s->keys[s->anti_key[i]];
        int32_t dom = k->domain_of_node[node];
        int64_t change = d != NULL && i < 64 ? d->anti[i] : 0;
        if (dom >= 0 && k->anti[dom] + change > 0)
            return false;
    }
    return true;
}

static bool satisfies_existing_anti_affinity(const struct affinity_state *s, uint32_t node,
                                             const struct delta_counts *d)
{
    if (d != NULL && d->existing_untabled)
        return false;
    for (uint32_t i = 0; i < s->key_count; i++) {
        const struct key_table *k = &s->keys[i];
        if (k->existing_total == 0 && d == NULL)
            continue;
        int32_t dom = k->domain_of_node[node];
        if (dom >= 0 && k->existing_anti[dom] + (d != NULL ? d->existing[i] : 0) > 0)
            return false;
    }
    return true;
}

static kc_status affinity_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node)
{
    const struct affinity_state *s = kc_cycle_get(cycle, FILTER_STATE_KEY);
    if (s == NULL)
        return KC_SUCCESS;
    uint32_t index = kc_node_index(node);
    if (index >= s->node_count)
        return KC_SUCCESS;
    struct delta_counts delta;
    const struct delta_counts *d = delta_collect(self, s, cycle, pod, node, &delta) ? &delta : NULL;
    if (d != NULL && d->failed != 0) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    if (!satisfies_affinity(s, index, d)) {
        kc_cycle_reject(cycle, REASON_AFFINITY);
        return KC_UNRESOLVABLE;
    }
    if (!satisfies_anti_affinity(s, index, d)) {
        kc_cycle_reject(cycle, REASON_ANTI_AFFINITY);
        return KC_UNSCHEDULABLE;
    }
    if (!satisfies_existing_anti_affinity(s, index, d)) {
        kc_cycle_reject(cycle, REASON_EXISTING_ANTI);
        return KC_UNSCHEDULABLE;
    }
    return KC_SUCCESS;
}

static kc_status affinity_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct plugin *p = self;
    if (!pod_terms_possible(pod) && p->pods_with_terms == 0)
        return KC_SKIP; /* as below, without allocating a state */
    struct affinity_state *s;
    char error[256] = "";
    if (state_new(p, pod, &s, error, sizeof(error)) != 0)
        return KC_SKIP; /* PreFilter refused bad terms already */
    bool preferred = s->terms != NULL &&
                     s->terms->preferred_affinity_count + s->terms->preferred_anti_count > 0;
    if (!preferred && p->pods_with_terms == 0) {
        affinity_state_free(s);
        return KC_SKIP;
    }
    if (fast_usable(p, s, true) && fast_pre_score(p, pod, s))
        return store_or_fail(cycle, SCORE_STATE_KEY, s);
    if (restart_state(p, pod, &s) != 0)
        return KC_ERROR;
    struct count_context c = {.plugin = p, .state = s, .pod = pod, .scoring = true};
    pod_index_each(&p->index, count_pod, &c);
    if (s->failed != 0) {
        affinity_state_free(s);
        return KC_ERROR;
    }
    return store_or_fail(cycle, SCORE_STATE_KEY, s);
}

static kc_status affinity_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                const kc_node *node, int64_t *score)
{
    (void)self;
    (void)pod;
    *score = 0;
    const struct affinity_state *s = kc_cycle_get(cycle, SCORE_STATE_KEY);
    uint32_t index = kc_node_index(node);
    if (s == NULL || index >= s->node_count)
        return KC_SUCCESS;
    for (uint32_t i = 0; i < s->key_count; i++) {
        int32_t d = s->keys[i].domain_of_node[index];
        if (d >= 0)
            *score += s->keys[i].score[d];
    }
    return KC_SUCCESS;
}

/* kube's NormalizeScore: 100 x (score - min) / (max - min), 0 everywhere when all are equal. */
static kc_status affinity_normalize_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                          const kc_node *const *nodes, int64_t *scores,
                                          uint32_t count)
{
    (void)self;
    (void)pod;
    (void)nodes;
    if (kc_cycle_get(cycle, SCORE_STATE_KEY) == NULL || count == 0)
        return KC_SUCCESS;
    int64_t min = INT64_MAX, max = INT64_MIN;
    for (uint32_t i = 0; i < count; i++) {
        if (scores[i] < min)
            min = scores[i];
        if (scores[i] > max)
            max = scores[i];
    }
    for (uint32_t i = 0; i < count; i++)
        scores[i] = max > min ? (int64_t)(100.0 * (double)(scores[i] - min) / (double)(max - min))
                              : 0;
    return KC_SUCCESS;
}


static const kc_plugin_ops affinity_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = affinity_init,
    .fini = affinity_fini,
    .requeue_events = affinity_requeue_events,
    .pre_filter = affinity_pre_filter,
    .filter = affinity_filter,
    .pre_score = affinity_pre_score,
    .score = affinity_score,
    .normalize_score = affinity_normalize_score,
    .on_event = affinity_on_event,
};

static const kc_plugin_descriptor affinity_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &affinity_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &affinity_descriptor;
}
