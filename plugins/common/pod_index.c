/* The pod index (uid -> namespace, labels, node, the plugin's own data) the pod-level plugins
 * count with, and kube's label selectors (metav1.LabelSelector). */
#include "pod_index.h"

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

int pod_index_init(struct pod_index *index, void (*extra_free)(void *extra))
{
    index->extra_free = extra_free;
    index->bucket_count = 1024;
    index->count = 0;
    index->buckets = calloc(index->bucket_count, sizeof(*index->buckets));
    return index->buckets != NULL ? 0 : -ENOMEM;
}

static void pod_free(const struct pod_index *index, struct indexed_pod *pod)
{
    if (pod->extra != NULL && index != NULL && index->extra_free != NULL)
        index->extra_free(pod->extra);
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

void pod_index_free(struct pod_index *index)
{
    for (uint32_t b = 0; index->buckets != NULL && b < index->bucket_count; b++) {
        struct indexed_pod *pod = index->buckets[b];
        while (pod != NULL) {
            struct indexed_pod *next = pod->next;
            pod_free(index, pod);
            pod = next;
        }
    }
    free(index->buckets);
    memset(index, 0, sizeof(*index));
}

static struct indexed_pod **find_slot(const struct pod_index *index, const char *uid)
{
    struct indexed_pod **slot = &index->buckets[hash_uid(uid) & (index->bucket_count - 1)];
    while (*slot != NULL && strcmp((*slot)->uid, uid) != 0)
        slot = &(*slot)->next;
    return slot;
}

static void grow(struct pod_index *index)
{
    uint32_t count = index->bucket_count * 2;
    struct indexed_pod **buckets = calloc(count, sizeof(*buckets));
    if (buckets == NULL)
        return; /* keep the longer chains */
    for (uint32_t b = 0; b < index->bucket_count; b++) {
        struct indexed_pod *pod = index->buckets[b];
        while (pod != NULL) {
            struct indexed_pod *next = pod->next;
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
    return strcmp(((const struct indexed_label *)a)->key, ((const struct indexed_label *)b)->key);
}

static struct indexed_pod *pod_copy(const kc_pod *source, const char *node_name)
{
    struct indexed_pod *pod = calloc(1, sizeof(*pod));
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
        struct indexed_label *label = &pod->labels[pod->label_count];
        label->key = strdup(key);
        label->value = strdup(value);
        pod->label_count++;
        ok = label->key != NULL && label->value != NULL;
    }
    if (!ok) {
        pod_free(NULL, pod);
        return NULL;
    }
    qsort(pod->labels, pod->label_count, sizeof(*pod->labels), label_compare);
    return pod;
}

/* Whether the indexed entry already says what pod on node_name would: the same node,
 * namespace and labels (kc_pod_label_at gives them in key order, as the entry keeps them).
 * A pod is put again when it is bound after being assumed, and on every status update. */
static bool unchanged(const struct indexed_pod *entry, const kc_pod *pod, const char *node_name)
{
    uint32_t labels = kc_pod_label_count(pod);
    if (strcmp(entry->node_name, node_name) != 0 || labels != entry->label_count ||
        strcmp(entry->namespace_name, kc_pod_namespace(pod)) != 0)
        return false;
    for (uint32_t i = 0; i < labels; i++) {
        const char *key, *value;
        if (kc_pod_label_at(pod, i, &key, &value) != 0 ||
            strcmp(entry->labels[i].key, key) != 0 || strcmp(entry->labels[i].value, value) != 0)
            return false;
    }
    return true;
}

int pod_index_put(struct pod_index *index, const kc_pod *pod, const char *node_name, void *extra)
{
    const char *uid = kc_pod_uid(pod);
    if (uid == NULL) {
        if (extra != NULL && index->extra_free != NULL)
            index->extra_free(extra);
        return 0;
    }
    struct indexed_pod **slot = find_slot(index, uid);
    if (node_name == NULL && *slot != NULL)
        node_name = (*slot)->node_name;
    if (*slot != NULL && node_name != NULL && unchanged(*slot, pod, node_name)) {
        /* keep the entry (no copy of its strings); only the plugin's data is new */
        if ((*slot)->extra != NULL && index->extra_free != NULL)
            index->extra_free((*slot)->extra);
        (*slot)->extra = extra;
        return 0;
    }
    struct indexed_pod *copy = node_name != NULL ? pod_copy(pod, node_name) : NULL;
    if (copy == NULL) {
        if (extra != NULL && index->extra_free != NULL)
            index->extra_free(extra);
        return node_name == NULL ? 0 : -ENOMEM;
    }
    copy->extra = extra;
    if (*slot != NULL) {
        copy->next = (*slot)->next;
        pod_free(index, *slot);
        *slot = copy;
        return 0;
    }
    *slot = copy;
    if (++index->count > index->bucket_count * 2)
        grow(index);
    return 0;
}

void pod_index_remove(struct pod_index *index, const char *uid)
{
    if (uid == NULL)
        return;
    struct indexed_pod **slot = find_slot(index, uid);
    if (*slot == NULL)
        return;
    struct indexed_pod *pod = *slot;
    *slot = pod->next;
    pod_free(index, pod);
    index->count--;
}

const struct indexed_pod *pod_index_find(const struct pod_index *index, const char *uid)
{
    return *find_slot(index, uid);
}

void pod_index_each(const struct pod_index *index,
                    void (*fn)(void *opaque, const struct indexed_pod *pod), void *opaque)
{
    for (uint32_t b = 0; b < index->bucket_count; b++)
        for (const struct indexed_pod *pod = index->buckets[b]; pod != NULL; pod = pod->next)
            fn(opaque, pod);
}

void pod_index_each_in_namespace(const struct pod_index *index, const char *namespace_name,
                                    void (*fn)(void *opaque, const struct indexed_pod *pod),
                                    void *opaque)
{
    for (uint32_t b = 0; b < index->bucket_count; b++)
        for (const struct indexed_pod *pod = index->buckets[b]; pod != NULL; pod = pod->next)
            if (strcmp(pod->namespace_name, namespace_name) == 0)
                fn(opaque, pod);
}

/* ---- selectors ------------------------------------------------------------------------- */

const char *indexed_pod_label(const void *source, const char *key)
{
    const struct indexed_pod *pod = source;
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

const char *pod_handle_label(const void *source, const char *key)
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

bool label_selector_matches_with(const struct label_selector *selector,
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

bool label_selector_matches(const struct label_selector *selector, const struct indexed_pod *pod)
{
    return label_selector_matches_with(selector, indexed_pod_label, pod);
}

void label_selector_free(struct label_selector *selector)
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
int plugin_parse_error(char *error, size_t size, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vsnprintf(error, size, format, ap);
    va_end(ap);
    return -EINVAL;
}

int label_selector_add(struct label_selector *selector, const char *key,
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
int label_selector_parse(json_t *json, struct label_selector *out, const char *where,
                          char *error, size_t error_size)
{
    memset(out, 0, sizeof(*out));
    if (json == NULL || json_is_null(json)) {
        out->nothing = true;
        return 0;
    }
    if (!json_is_object(json))
        return plugin_parse_error(error, error_size, "%s.labelSelector must be an object", where);
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(json, "matchLabels"), key, value)
    {
        if (!json_is_string(value))
            return plugin_parse_error(error, error_size,
                                      "%s.labelSelector.matchLabels.%s must be a string",
                               where, key);
        int rc = label_selector_add(out, key, SELECTOR_IN, NULL, json_string_value(value));
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
            return plugin_parse_error(error, error_size,
                               "%s.labelSelector.matchExpressions[%zu] needs a key and an "
                               "operator In, NotIn, Exists or DoesNotExist",
                               where, i);
        json_t *values = json_object_get(value, "values");
        size_t count = json_array_size(values);
        if ((op <= SELECTOR_NOT_IN) != (count > 0))
            return plugin_parse_error(error, error_size,
                               "%s.labelSelector.matchExpressions[%zu]: In and NotIn need values, "
                               "Exists and DoesNotExist take none",
                               where, i);
        int rc = label_selector_add(out, expression_key, op, values, NULL);
        if (rc != 0)
            return rc == -EINVAL ? plugin_parse_error(error, error_size,
                                               "%s.labelSelector.matchExpressions[%zu].values "
                                               "must be strings",
                                               where, i)
                                 : rc;
    }
    return 0;
}

