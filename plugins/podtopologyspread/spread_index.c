/* The pod index (uid -> namespace, labels, node) and kube's label selectors and
 * topologySpreadConstraints, read from the pod's constraint JSON. */
#include "spread_index.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* ---- index ----------------------------------------------------------------------------- */

static uint32_t hash_uid(const char *text)
{
    uint32_t h = 2166136261u;
    for (; *text != '\0'; text++)
        h = (h ^ (uint8_t)*text) * 16777619u;
    return h;
}

int spread_index_init(struct spread_index *index)
{
    index->bucket_count = 1024;
    index->count = 0;
    index->buckets = calloc(index->bucket_count, sizeof(*index->buckets));
    return index->buckets != NULL ? 0 : -ENOMEM;
}

static void pod_free(struct spread_pod *pod)
{
    for (uint32_t i = 0; i < pod->label_count; i++) {
        free(pod->labels[i].key);
        free(pod->labels[i].value);
    }
    free(pod->labels);
    free(pod->uid);
    free(pod->namespace_name);
    free(pod->node_name);
    free(pod);
}

void spread_index_free(struct spread_index *index)
{
    for (uint32_t b = 0; index->buckets != NULL && b < index->bucket_count; b++) {
        struct spread_pod *pod = index->buckets[b];
        while (pod != NULL) {
            struct spread_pod *next = pod->next;
            pod_free(pod);
            pod = next;
        }
    }
    free(index->buckets);
    memset(index, 0, sizeof(*index));
}

static struct spread_pod **find_slot(const struct spread_index *index, const char *uid)
{
    struct spread_pod **slot = &index->buckets[hash_uid(uid) & (index->bucket_count - 1)];
    while (*slot != NULL && strcmp((*slot)->uid, uid) != 0)
        slot = &(*slot)->next;
    return slot;
}

static void grow(struct spread_index *index)
{
    uint32_t count = index->bucket_count * 2;
    struct spread_pod **buckets = calloc(count, sizeof(*buckets));
    if (buckets == NULL)
        return; /* keep the longer chains */
    for (uint32_t b = 0; b < index->bucket_count; b++) {
        struct spread_pod *pod = index->buckets[b];
        while (pod != NULL) {
            struct spread_pod *next = pod->next;
            uint32_t slot = hash_uid(pod->uid) & (count - 1);
            pod->next = buckets[slot];
            buckets[slot] = pod;
            pod = next;
        }
    }
    free(index->buckets);
    index->buckets = buckets;
    index->bucket_count = count;
}

/* Labels come in key order from the host; a test host may not sort them, so sort here. */
static int label_compare(const void *a, const void *b)
{
    return strcmp(((const struct spread_label *)a)->key, ((const struct spread_label *)b)->key);
}

static struct spread_pod *pod_copy(const kc_pod *source, const char *node_name)
{
    struct spread_pod *pod = calloc(1, sizeof(*pod));
    if (pod == NULL)
        return NULL;
    uint32_t labels = kc_pod_label_count(source);
    pod->uid = strdup(kc_pod_uid(source));
    pod->namespace_name = strdup(kc_pod_namespace(source));
    pod->node_name = strdup(node_name);
    pod->labels = calloc(labels > 0 ? labels : 1, sizeof(*pod->labels));
    bool ok = pod->uid != NULL && pod->namespace_name != NULL && pod->node_name != NULL &&
              pod->labels != NULL;
    for (uint32_t i = 0; ok && i < labels; i++) {
        const char *key, *value;
        if (kc_pod_label_at(source, i, &key, &value) != 0)
            continue;
        struct spread_label *label = &pod->labels[pod->label_count];
        label->key = strdup(key);
        label->value = strdup(value);
        pod->label_count++;
        ok = label->key != NULL && label->value != NULL;
    }
    if (!ok) {
        pod_free(pod);
        return NULL;
    }
    qsort(pod->labels, pod->label_count, sizeof(*pod->labels), label_compare);
    return pod;
}

int spread_index_put(struct spread_index *index, const kc_pod *pod, const char *node_name)
{
    const char *uid = kc_pod_uid(pod);
    if (uid == NULL)
        return 0;
    struct spread_pod **slot = find_slot(index, uid);
    if (node_name == NULL && *slot != NULL)
        node_name = (*slot)->node_name;
    if (node_name == NULL)
        return 0;
    struct spread_pod *copy = pod_copy(pod, node_name);
    if (copy == NULL)
        return -ENOMEM;
    if (*slot != NULL) {
        copy->next = (*slot)->next;
        pod_free(*slot);
        *slot = copy;
        return 0;
    }
    *slot = copy;
    if (++index->count > index->bucket_count * 2)
        grow(index);
    return 0;
}

void spread_index_remove(struct spread_index *index, const char *uid)
{
    if (uid == NULL)
        return;
    struct spread_pod **slot = find_slot(index, uid);
    if (*slot == NULL)
        return;
    struct spread_pod *pod = *slot;
    *slot = pod->next;
    pod_free(pod);
    index->count--;
}

void spread_index_each_in_namespace(const struct spread_index *index, const char *namespace_name,
                                    void (*fn)(void *opaque, const struct spread_pod *pod),
                                    void *opaque)
{
    for (uint32_t b = 0; b < index->bucket_count; b++)
        for (const struct spread_pod *pod = index->buckets[b]; pod != NULL; pod = pod->next)
            if (strcmp(pod->namespace_name, namespace_name) == 0)
                fn(opaque, pod);
}

/* ---- selectors ------------------------------------------------------------------------- */

static const char *indexed_label(const void *source, const char *key)
{
    const struct spread_pod *pod = source;
    uint32_t low = 0, high = pod->label_count;
    while (low < high) {
        uint32_t mid = (low + high) / 2;
        int c = strcmp(pod->labels[mid].key, key);
        if (c == 0)
            return pod->labels[mid].value;
        if (c < 0)
            low = mid + 1;
        else
            high = mid;
    }
    return NULL;
}

static const char *handle_label(const void *source, const char *key)
{
    return kc_pod_label(source, key);
}

static bool requirement_holds(const struct selector_requirement *r, const char *value)
{
    bool listed = false;
    for (uint32_t v = 0; value != NULL && v < r->value_count && !listed; v++)
        listed = strcmp(r->values[v], value) == 0;
    switch (r->op) {
    case SELECTOR_IN: return listed;
    case SELECTOR_NOT_IN: return !listed;
    case SELECTOR_EXISTS: return value != NULL;
    case SELECTOR_DOES_NOT_EXIST: return value == NULL;
    }
    return false;
}

static bool selector_matches_with(const struct spread_selector *selector,
                                  const char *(*label)(const void *, const char *),
                                  const void *source)
{
    if (selector->nothing)
        return false;
    for (uint32_t i = 0; i < selector->count; i++) {
        const struct selector_requirement *r = &selector->requirements[i];
        if (!requirement_holds(r, label(source, r->key)))
            return false;
    }
    return true;
}

bool spread_selector_matches(const struct spread_selector *selector, const struct spread_pod *pod)
{
    return selector_matches_with(selector, indexed_label, pod);
}

static void selector_free(struct spread_selector *selector)
{
    for (uint32_t i = 0; i < selector->count; i++) {
        struct selector_requirement *r = &selector->requirements[i];
        free(r->key);
        for (uint32_t v = 0; v < r->value_count; v++)
            free(r->values[v]);
        free(r->values);
    }
    free(selector->requirements);
    memset(selector, 0, sizeof(*selector));
}

/* ---- parsing --------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int parse_error(char *error, size_t size, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vsnprintf(error, size, format, ap);
    va_end(ap);
    return -EINVAL;
}

static int add_requirement(struct spread_selector *selector, const char *key,
                           enum selector_operator op, json_t *values, const char *single)
{
    struct selector_requirement *grown =
        realloc(selector->requirements, (selector->count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    selector->requirements = grown;
    struct selector_requirement *r = &grown[selector->count++];
    memset(r, 0, sizeof(*r));
    r->op = op;
    r->key = strdup(key);
    size_t count = single != NULL ? 1 : json_array_size(values);
    r->values = calloc(count > 0 ? count : 1, sizeof(*r->values));
    if (r->key == NULL || r->values == NULL)
        return -ENOMEM;
    for (size_t v = 0; v < count; v++) {
        const char *text = single != NULL ? single : json_string_value(json_array_get(values, v));
        if (text == NULL)
            return -EINVAL;
        if ((r->values[r->value_count++] = strdup(text)) == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int parse_operator(const char *name, enum selector_operator *op)
{
    static const char *const names[] = {"In", "NotIn", "Exists", "DoesNotExist"};
    for (int i = 0; i < 4; i++)
        if (name != NULL && strcmp(name, names[i]) == 0) {
            *op = (enum selector_operator)i;
            return 0;
        }
    return -EINVAL;
}

/* metav1.LabelSelector: matchLabels become In with one value, matchExpressions as given. */
static int parse_selector(json_t *json, struct spread_selector *out, const char *where,
                          char *error, size_t error_size)
{
    memset(out, 0, sizeof(*out));
    if (json == NULL || json_is_null(json)) {
        out->nothing = true;
        return 0;
    }
    if (!json_is_object(json))
        return parse_error(error, error_size, "%s.labelSelector must be an object", where);
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(json, "matchLabels"), key, value)
    {
        if (!json_is_string(value))
            return parse_error(error, error_size, "%s.labelSelector.matchLabels.%s must be a string",
                               where, key);
        int rc = add_requirement(out, key, SELECTOR_IN, NULL, json_string_value(value));
        if (rc != 0)
            return rc;
    }
    size_t i;
    json_array_foreach(json_object_get(json, "matchExpressions"), i, value)
    {
        enum selector_operator op;
        const char *expression_key = json_string_value(json_object_get(value, "key"));
        if (expression_key == NULL ||
            parse_operator(json_string_value(json_object_get(value, "operator")), &op) != 0)
            return parse_error(error, error_size,
                               "%s.labelSelector.matchExpressions[%zu] needs a key and an "
                               "operator In, NotIn, Exists or DoesNotExist",
                               where, i);
        json_t *values = json_object_get(value, "values");
        size_t count = json_array_size(values);
        if ((op <= SELECTOR_NOT_IN) != (count > 0))
            return parse_error(error, error_size,
                               "%s.labelSelector.matchExpressions[%zu]: In and NotIn need values, "
                               "Exists and DoesNotExist take none",
                               where, i);
        int rc = add_requirement(out, expression_key, op, values, NULL);
        if (rc != 0)
            return rc == -EINVAL ? parse_error(error, error_size,
                                               "%s.labelSelector.matchExpressions[%zu].values "
                                               "must be strings",
                                               where, i)
                                 : rc;
    }
    return 0;
}

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
        return parse_error(error, error_size, "%s.%s must be Honor or Ignore", where, field);
    return 0;
}

static int parse_constraint(json_t *json, const kc_pod *pod, struct spread_constraint *c,
                            const char *where, char *error, size_t error_size)
{
    json_t *skew = json_object_get(json, "maxSkew");
    const char *key = json_string_value(json_object_get(json, "topologyKey"));
    if (!json_is_integer(skew) || json_integer_value(skew) < 1 ||
        json_integer_value(skew) > INT32_MAX)
        return parse_error(error, error_size, "%s.maxSkew must be an integer above 0", where);
    if (key == NULL || key[0] == '\0')
        return parse_error(error, error_size, "%s.topologyKey is required", where);
    c->max_skew = (int32_t)json_integer_value(skew);
    c->min_domains = 1;
    json_t *min_domains = json_object_get(json, "minDomains");
    if (min_domains != NULL && !json_is_null(min_domains)) {
        if (!json_is_integer(min_domains) || json_integer_value(min_domains) < 1 ||
            json_integer_value(min_domains) > INT32_MAX)
            return parse_error(error, error_size, "%s.minDomains must be an integer above 0",
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
        rc = parse_selector(json_object_get(json, "labelSelector"), &c->selector, where, error,
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
            rc = add_requirement(&c->selector, name, SELECTOR_IN, NULL, value);
    }
    if (rc == 0)
        c->self_match = selector_matches_with(&c->selector, handle_label, pod);
    return rc;
}

int spread_constraints_parse(const kc_pod *pod, enum spread_action action,
                             struct spread_constraint **out, uint32_t *count, char *error,
                             size_t error_size)
{
    *out = NULL;
    *count = 0;
    const char *text = kc_pod_constraints_json(pod);
    if (text == NULL)
        return 0;
    json_error_t json_error;
    json_t *root = json_loads(text, 0, &json_error);
    if (root == NULL)
        return parse_error(error, error_size, "constraints are not JSON: %s", json_error.text);
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
            rc = parse_error(error, error_size,
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
    *out = items;
    return 0;
}

void spread_constraint_free(struct spread_constraint *constraint)
{
    free(constraint->topology_key);
    selector_free(&constraint->selector);
    memset(constraint, 0, sizeof(*constraint));
}

void spread_constraints_free(struct spread_constraint *list, uint32_t count)
{
    for (uint32_t i = 0; list != NULL && i < count; i++)
        spread_constraint_free(&list[i]);
    free(list);
}
