/* Per-domain counts of the workload's topology spread constraints in a simulation. */
#include "sim_spread.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "simulator.h"

int sim_spread_note_pod(struct sim_record *r, const struct pod *pod)
{
    for (uint32_t i = 0; i < pod->labels.count; i++)
        if (kv_list_set(&r->spread_labels, pod->labels.items[i].key, pod->labels.items[i].value) <
            0)
            return -ENOMEM;
    if (pod->constraints_json == NULL ||
        strstr(pod->constraints_json, "\"topologySpreadConstraints\"") == NULL)
        return 0;
    r->spread_json = strdup(pod->constraints_json);
    return r->spread_json != NULL ? 0 : -ENOMEM;
}

void sim_spread_record_free(struct sim_record *r)
{
    kv_list_free(&r->spread_labels);
    free(r->spread_json);
}

/* metav1.LabelSelector against a pod's labels: absent matches nothing, {} everything. */
static bool selector_matches(json_t *selector, const struct kv_list *labels)
{
    if (!json_is_object(selector))
        return false;
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(selector, "matchLabels"), key, value)
    {
        const char *have = kv_list_get(labels, key);
        if (have == NULL || !json_is_string(value) || strcmp(have, json_string_value(value)) != 0)
            return false;
    }
    size_t i;
    json_array_foreach(json_object_get(selector, "matchExpressions"), i, value)
    {
        const char *op = json_string_value(json_object_get(value, "operator"));
        const char *label = json_string_value(json_object_get(value, "key"));
        const char *have = label != NULL ? kv_list_get(labels, label) : NULL;
        bool listed = false;
        size_t v;
        json_t *item;
        json_array_foreach(json_object_get(value, "values"), v, item)
        {
            listed = listed || (have != NULL && json_is_string(item) &&
                                strcmp(have, json_string_value(item)) == 0);
        }
        bool ok = op == NULL                              ? false
                  : strcmp(op, "In") == 0                 ? listed
                  : strcmp(op, "NotIn") == 0              ? !listed
                  : strcmp(op, "Exists") == 0             ? have != NULL
                  : strcmp(op, "DoesNotExist") == 0       ? have == NULL
                                                          : false;
        if (!ok)
            return false;
    }
    return true;
}

/* The distinct (namespace, constraint) pairs of the workload, as {namespace, constraint}. */
static json_t *distinct_constraints(const struct simulator *sim)
{
    json_t *list = json_array();
    for (uint32_t i = 0; list != NULL && i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        json_t *root = r->spread_json != NULL ? json_loads(r->spread_json, 0, NULL) : NULL;
        size_t c;
        json_t *constraint;
        json_array_foreach(json_object_get(root, "topologySpreadConstraints"), c, constraint)
        {
            json_t *entry = json_pack("{s:s, s:O}", "namespace", r->namespace, "constraint",
                                      constraint);
            bool seen = false;
            for (size_t k = 0; k < json_array_size(list) && !seen; k++)
                seen = json_equal(json_array_get(list, k), entry);
            if (!seen && entry != NULL)
                json_array_append(list, entry);
            json_decref(entry);
        }
        json_decref(root);
    }
    return list;
}

/* {domain: bound matching pods} over every node with the key, and the skew (max - min). */
static json_t *domain_counts(const struct simulator *sim, const char *namespace_name,
                             json_t *constraint, int64_t *skew)
{
    const char *key = json_string_value(json_object_get(constraint, "topologyKey"));
    json_t *selector = json_object_get(constraint, "labelSelector");
    json_t *domains = json_object();
    const struct cache *cache = &sim->sched.cache;
    for (uint32_t n = 0; key != NULL && domains != NULL && n < cache->node_count; n++) {
        const char *value = kv_list_get(&cache->nodes[n].node->labels, key);
        if (value != NULL && json_object_get(domains, value) == NULL)
            json_object_set_new(domains, value, json_integer(0));
    }
    for (uint32_t i = 0; key != NULL && domains != NULL && i < sim->record_count; i++) {
        const struct sim_record *r = &sim->records[i];
        if (r->node == NULL || r->preempted || r->node_removed ||
            strcmp(r->namespace, namespace_name) != 0 ||
            !selector_matches(selector, &r->spread_labels))
            continue;
        const struct cache_node *node = cache_node(cache, r->node);
        const char *value = node != NULL ? kv_list_get(&node->node->labels, key) : NULL;
        json_t *count = value != NULL ? json_object_get(domains, value) : NULL;
        if (count != NULL)
            json_integer_set(count, json_integer_value(count) + 1);
    }
    int64_t low = INT64_MAX, high = 0;
    const char *name;
    json_t *count;
    json_object_foreach(domains, name, count)
    {
        low = json_integer_value(count) < low ? json_integer_value(count) : low;
        high = json_integer_value(count) > high ? json_integer_value(count) : high;
    }
    *skew = low == INT64_MAX ? 0 : high - low;
    return domains;
}

json_t *sim_spread_json(const struct simulator *sim)
{
    json_t *constraints = distinct_constraints(sim);
    if (json_array_size(constraints) == 0) {
        json_decref(constraints);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *entry;
    json_array_foreach(constraints, i, entry)
    {
        const char *namespace_name = json_string_value(json_object_get(entry, "namespace"));
        json_t *constraint = json_object_get(entry, "constraint");
        int64_t skew;
        json_t *domains = domain_counts(sim, namespace_name, constraint, &skew);
        json_array_append_new(
            out, json_pack("{s:s, s:O, s:O, s:O, s:O, s:o, s:I}", "namespace", namespace_name,
                           "topology_key", json_object_get(constraint, "topologyKey"),
                           "when_unsatisfiable", json_object_get(constraint, "whenUnsatisfiable"),
                           "max_skew", json_object_get(constraint, "maxSkew"), "label_selector",
                           json_object_get(constraint, "labelSelector") != NULL
                               ? json_object_get(constraint, "labelSelector")
                               : json_null(),
                           "domains", domains, "skew", (json_int_t)skew));
    }
    json_decref(constraints);
    return out;
}

void sim_spread_print(const struct simulator *sim, FILE *out)
{
    json_t *spread = sim_spread_json(sim);
    size_t i;
    json_t *entry;
    json_array_foreach(spread, i, entry)
    {
        char *selector = json_dumps(json_object_get(entry, "label_selector"),
                                    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fprintf(out, "  topology spread %s %s (%s, maxSkew %lld, selector %s): skew %lld;",
                json_string_value(json_object_get(entry, "namespace")),
                json_string_value(json_object_get(entry, "topology_key")),
                json_string_value(json_object_get(entry, "when_unsatisfiable")),
                (long long)json_integer_value(json_object_get(entry, "max_skew")),
                selector != NULL ? selector : "?",
                (long long)json_integer_value(json_object_get(entry, "skew")));
        free(selector);
        const char *name;
        json_t *count;
        uint32_t shown = 0;
        json_object_foreach(json_object_get(entry, "domains"), name, count)
        {
            if (shown++ == 12) {
                fprintf(out, " ... (%zu domains)",
                        json_object_size(json_object_get(entry, "domains")));
                break;
            }
            fprintf(out, " %s=%lld", name, (long long)json_integer_value(count));
        }
        fprintf(out, "\n");
    }
    json_decref(spread);
}
