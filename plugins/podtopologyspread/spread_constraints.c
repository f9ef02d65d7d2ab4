/* kube's topologySpreadConstraints, read from the pod's constraint JSON
 * (kc_pod_constraints_json). */
#include "spread_constraints.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "domain_counts.h"

static int parse_policy(json_t *json, bool fallback, bool *honor, const char *field,
                        const char *where, char *error, size_t error_size)
{
    *honor = fallback;
    if (json == NULL || json_is_null(json))
        return 0;
    const char *text = json_string_value(json);
    if (text != NULL && strcmp(text, "Honor") == 0)
        *honor = true;
    else if (text != NULL && strcmp(text, "Ignore") == 0)
        *honor = false;
    else
        return plugin_parse_error(error, error_size, "%s.%s must be Honor or Ignore", where, field);
    return 0;
}

static int parse_constraint(json_t *json, const kc_pod *pod, struct spread_constraint *c,
                            const char *where, char *error, size_t error_size)
{
    json_t *skew = json_object_get(json, "maxSkew");
    const char *key = json_string_value(json_object_get(json, "topologyKey"));
    if (!json_is_integer(skew) || json_integer_value(skew) < 1 ||
        json_integer_value(skew) > INT32_MAX)
        return plugin_parse_error(error, error_size, "%s.maxSkew must be an integer above 0",
                                  where);
    if (key == NULL || key[0] == '\0')
        return plugin_parse_error(error, error_size, "%s.topologyKey is required", where);
    c->max_skew = (int32_t)json_integer_value(skew);
    c->min_domains = 1;
    json_t *min_domains = json_object_get(json, "minDomains");
    if (min_domains != NULL && !json_is_null(min_domains)) {
        if (!json_is_integer(min_domains) || json_integer_value(min_domains) < 1 ||
            json_integer_value(min_domains) > INT32_MAX)
            return plugin_parse_error(error, error_size, "%s.minDomains must be an integer above 0",
                               where);
        c->min_domains = (int32_t)json_integer_value(min_domains);
    }
    int rc = parse_policy(json_object_get(json, "nodeAffinityPolicy"), true,
                          &c->node_affinity_honor, "nodeAffinityPolicy", where, error, error_size);
    if (rc == 0)
        rc = parse_policy(json_object_get(json, "nodeTaintsPolicy"), false, &c->node_taints_honor,
                          "nodeTaintsPolicy", where, error, error_size);
    if (rc == 0 && (c->topology_key = strdup(key)) == NULL)
        rc = -ENOMEM;
    if (rc == 0)
        rc = label_selector_parse(json_object_get(json, "labelSelector"), &c->selector, where,
                                  error,
                            error_size);
    /* matchLabelKeys: the incoming pod's values of those keys join the selector as In; keys
     * the pod lacks are ignored */
    size_t i;
    json_t *label_key;
    json_array_foreach(json_object_get(json, "matchLabelKeys"), i, label_key)
    {
        const char *name = json_string_value(label_key);
        const char *value = name != NULL ? kc_pod_label(pod, name) : NULL;
        if (rc == 0 && value != NULL && !c->selector.nothing)
            rc = label_selector_add(&c->selector, name, SELECTOR_IN, NULL, value);
    }
    if (rc == 0)
        c->self_match = label_selector_matches_with(&c->selector, pod_handle_label, pod);
    return rc;
}

static size_t occurrences(const char *text, const char *word)
{
    size_t count = 0;
    for (const char *at = strstr(text, word); at != NULL; at = strstr(at + 1, word))
        count++;
    return count;
}

int spread_constraints_parse(const kc_pod *pod, enum spread_action action,
                             struct spread_constraint **out, uint32_t *count, char *error,
                             size_t error_size)
{
    *out = NULL;
    *count = 0;
    const char *text = kc_pod_constraints_json(pod);
    /* most pods have no constraint of this kind: skip the JSON parse when every
     * whenUnsatisfiable is the other action (a false count only costs a parse) */
    static const char *const other_action[] = {"\"ScheduleAnyway\"", "\"DoNotSchedule\""};
    if (text == NULL || occurrences(text, "\"whenUnsatisfiable\"") ==
                            occurrences(text, other_action[action]))
        return 0;
    json_error_t json_error;
    json_t *root = json_loads(text, 0, &json_error);
    if (root == NULL)
        return plugin_parse_error(error, error_size, "constraints are not JSON: %s",
                                  json_error.text);
    json_t *list = json_object_get(root, "topologySpreadConstraints");
    size_t total = json_array_size(list);
    struct spread_constraint *items = calloc(total > 0 ? total : 1, sizeof(*items));
    int rc = items != NULL ? 0 : -ENOMEM;
    size_t i;
    json_t *item;
    static const char *const actions[] = {"DoNotSchedule", "ScheduleAnyway"};
    json_array_foreach(list, i, item)
    {
        if (rc != 0)
            break;
        char where[64];
        snprintf(where, sizeof(where), "spec.topologySpreadConstraints[%zu]", i);
        const char *when = json_string_value(json_object_get(item, "whenUnsatisfiable"));
        if (when == NULL ||
            (strcmp(when, actions[0]) != 0 && strcmp(when, actions[1]) != 0)) {
            rc = plugin_parse_error(error, error_size,
                             "%s.whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway", where);
            break;
        }
        if (strcmp(when, actions[action]) != 0)
            continue;
        rc = parse_constraint(item, pod, &items[*count], where, error, error_size);
        (*count)++;
    }
    json_decref(root);
    if (rc != 0) {
        spread_constraints_free(items, *count);
        *count = 0;
        return rc;
    }
    if (*count == 0) {
        /* none of this action after all (the quick count above saw its word elsewhere, in a
         * label value say): nothing to hand over, and the caller frees nothing it is not given */
        free(items);
        return 0;
    }
    *out = items;
    return 0;
}

void spread_constraint_free(struct spread_constraint *constraint)
{
    free(constraint->topology_key);
    label_selector_free(&constraint->selector);
    memset(constraint, 0, sizeof(*constraint));
}

void spread_constraints_free(struct spread_constraint *list, uint32_t count)
{
    for (uint32_t i = 0; list != NULL && i < count; i++)
        spread_constraint_free(&list[i]);
    free(list);
}

void spread_parse_cache_free(struct spread_parse_cache *cache)
{
    free(cache->json);
    spread_constraints_free(cache->list, cache->count);
    memset(cache, 0, sizeof(*cache));
}

/* Deep copies of count constraints into *out (NULL when count is 0). 0 or -ENOMEM. */
static int copy_constraints(const struct spread_constraint *from, uint32_t count,
                            struct spread_constraint **out)
{
    *out = NULL;
    if (count == 0)
        return 0;
    struct spread_constraint *copy = calloc(count, sizeof(*copy));
    if (copy == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        copy[i] = from[i];
        copy[i].topology_key = strdup(from[i].topology_key);
        memset(&copy[i].selector, 0, sizeof(copy[i].selector));
        rc = label_selector_copy(&from[i].selector, &copy[i].selector);
        if (rc == 0 && copy[i].topology_key == NULL)
            rc = -ENOMEM;
    }
    if (rc != 0) {
        spread_constraints_free(copy, count);
        return rc;
    }
    *out = copy;
    return 0;
}

int spread_constraints_parse_cached(struct spread_parse_cache *cache, const kc_pod *pod,
                                    enum spread_action action, struct spread_constraint **out,
                                    uint32_t *count, char *error, size_t error_size)
{
    const char *text = kc_pod_constraints_json(pod);
    bool keepable = text != NULL && strstr(text, "matchLabelKeys") == NULL;
    if (keepable && cache->json != NULL && strcmp(cache->json, text) == 0) {
        *count = 0;
        int rc = copy_constraints(cache->list, cache->count, out);
        if (rc != 0)
            return rc;
        *count = cache->count;
        for (uint32_t i = 0; i < *count; i++)
            (*out)[i].self_match =
                label_selector_matches_with(&(*out)[i].selector, pod_handle_label, pod);
        return 0;
    }
    int rc = spread_constraints_parse(pod, action, out, count, error, error_size);
    if (rc != 0 || !keepable)
        return rc;
    struct spread_parse_cache fresh = {.json = strdup(text), .count = *count};
    if (fresh.json == NULL || copy_constraints(*out, *count, &fresh.list) != 0) {
        spread_parse_cache_free(&fresh);
        return 0; /* nothing kept: the next pod parses */
    }
    spread_parse_cache_free(cache);
    *cache = fresh;
    return 0;
}
