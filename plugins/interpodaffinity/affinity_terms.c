/* Pod affinity terms from a pod's constraint JSON, their namespaces, and the Namespace objects
 * a namespaceSelector is matched against. */
#include "affinity_terms.h"

#include "domain_counts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- terms ----------------------------------------------------------------------------- */

void affinity_term_release(struct affinity_term *term)
{
    label_selector_free(&term->selector);
    label_selector_free(&term->namespace_selector);
    free(term->topology_key);
    for (uint32_t i = 0; i < term->namespace_count; i++)
        free(term->namespaces[i]);
    free(term->namespaces);
}

static void terms_free(struct affinity_term *terms, uint32_t count)
{
    for (uint32_t i = 0; terms != NULL && i < count; i++)
        affinity_term_release(&terms[i]);
    free(terms);
}

void pod_terms_free(void *data)
{
    struct pod_terms *t = data;
    if (t == NULL)
        return;
    terms_free(t->required_affinity, t->required_affinity_count);
    terms_free(t->required_anti, t->required_anti_count);
    terms_free(t->preferred_affinity, t->preferred_affinity_count);
    terms_free(t->preferred_anti, t->preferred_anti_count);
    free(t);
}

/* matchLabelKeys (In the pod's value) and mismatchLabelKeys (NotIn it), for keys the pod has. */
static int merge_label_keys(json_t *keys, const kc_pod *pod, enum selector_operator op,
                            struct label_selector *selector)
{
    size_t i;
    json_t *key;
    json_array_foreach(keys, i, key)
    {
        const char *name = json_string_value(key);
        const char *value = name != NULL ? kc_pod_label(pod, name) : NULL;
        if (value == NULL || selector->nothing)
            continue;
        int rc = label_selector_add(selector, name, op, NULL, value);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int parse_namespaces(json_t *json, const kc_pod *pod, struct affinity_term *term,
                            const char *where, char *error, size_t error_size)
{
    json_t *list = json_object_get(json, "namespaces");
    json_t *selector = json_object_get(json, "namespaceSelector");
    term->has_namespace_selector = selector != NULL && !json_is_null(selector);
    if (term->has_namespace_selector) {
        int rc = label_selector_parse(selector, &term->namespace_selector, where, error,
                                      error_size);
        if (rc != 0)
            return rc;
    }
    size_t count = json_array_size(list);
    /* no namespaces and no selector: the owning pod's namespace */
    bool own = count == 0 && !term->has_namespace_selector;
    term->namespaces = calloc(own ? 1 : (count > 0 ? count : 1), sizeof(*term->namespaces));
    if (term->namespaces == NULL)
        return -ENOMEM;
    if (own) {
        term->namespaces[0] = strdup(kc_pod_namespace(pod));
        term->namespace_count = 1;
        return term->namespaces[0] != NULL ? 0 : -ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = json_string_value(json_array_get(list, i));
        if (name == NULL)
            return plugin_parse_error(error, error_size, "%s.namespaces[%zu] must be a string",
                                      where, i);
        if ((term->namespaces[term->namespace_count++] = strdup(name)) == NULL)
            return -ENOMEM;
    }
    return 0;
}

static int parse_term(json_t *json, const kc_pod *pod, struct affinity_term *term,
                      const char *where, char *error, size_t error_size)
{
    if (!json_is_object(json))
        return plugin_parse_error(error, error_size, "%s must be an object", where);
    const char *key = json_string_value(json_object_get(json, "topologyKey"));
    if (key == NULL || key[0] == '\0')
        return plugin_parse_error(error, error_size, "%s.topologyKey is required", where);
    if ((term->topology_key = strdup(key)) == NULL)
        return -ENOMEM;
    int rc = label_selector_parse(json_object_get(json, "labelSelector"), &term->selector, where,
                                  error, error_size);
    if (rc == 0)
        rc = merge_label_keys(json_object_get(json, "matchLabelKeys"), pod, SELECTOR_IN,
                              &term->selector);
    if (rc == 0)
        rc = merge_label_keys(json_object_get(json, "mismatchLabelKeys"), pod, SELECTOR_NOT_IN,
                              &term->selector);
    if (rc == 0)
        rc = parse_namespaces(json, pod, term, where, error, error_size);
    return rc;
}

/* One list: required terms as given, preferred ones as {weight, podAffinityTerm}. */
static int parse_list(json_t *list, bool preferred, const kc_pod *pod, const char *where,
                      struct affinity_term **out, uint32_t *count, char *error,
                      size_t error_size)
{
    size_t total = json_array_size(list);
    if (total == 0)
        return 0;
    *out = calloc(total, sizeof(**out));
    if (*out == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < total; i++) {
        char at[160];
        snprintf(at, sizeof(at), "%s[%zu]", where, i);
        json_t *item = json_array_get(list, i);
        struct affinity_term *term = &(*out)[(*count)++];
        if (preferred) {
            json_t *weight = json_object_get(item, "weight");
            if (!json_is_integer(weight) || json_integer_value(weight) < 1 ||
                json_integer_value(weight) > 100)
                return plugin_parse_error(error, error_size, "%s.weight must be 1..100", at);
            term->weight = (int32_t)json_integer_value(weight);
            item = json_object_get(item, "podAffinityTerm");
            strncat(at, ".podAffinityTerm", sizeof(at) - strlen(at) - 1);
        }
        int rc = parse_term(item, pod, term, at, error, error_size);
        if (rc != 0)
            return rc;
    }
    return 0;
}

bool pod_terms_possible(const kc_pod *pod)
{
    /* pods with only spread constraints: no JSON parse (a false positive just parses) */
    const char *text = kc_pod_constraints_json(pod);
    return text != NULL && strstr(text, "Affinity") != NULL;
}

int pod_terms_parse(const kc_pod *pod, struct pod_terms **out, char *error, size_t error_size)
{
    *out = NULL;
    if (!pod_terms_possible(pod))
        return 0;
    const char *text = kc_pod_constraints_json(pod);
    json_error_t json_error;
    json_t *root = json_loads(text, 0, &json_error);
    if (root == NULL)
        return plugin_parse_error(error, error_size, "constraints are not JSON: %s",
                                  json_error.text);
    json_t *affinity = json_object_get(root, "podAffinity");
    json_t *anti = json_object_get(root, "podAntiAffinity");
    if (affinity == NULL && anti == NULL) {
        json_decref(root);
        return 0;
    }
    struct pod_terms *t = calloc(1, sizeof(*t));
    int rc = t != NULL ? 0 : -ENOMEM;
    static const char *const required = "requiredDuringSchedulingIgnoredDuringExecution";
    static const char *const preferred = "preferredDuringSchedulingIgnoredDuringExecution";
    if (rc == 0)
        rc = parse_list(json_object_get(affinity, required), false, pod,
                        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                        &t->required_affinity, &t->required_affinity_count, error, error_size);
    if (rc == 0)
        rc = parse_list(json_object_get(anti, required), false, pod,
                        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuring"
                        "Execution",
                        &t->required_anti, &t->required_anti_count, error, error_size);
    if (rc == 0)
        rc = parse_list(json_object_get(affinity, preferred), true, pod,
                        "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution",
                        &t->preferred_affinity, &t->preferred_affinity_count, error, error_size);
    if (rc == 0)
        rc = parse_list(json_object_get(anti, preferred), true, pod,
                        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuring"
                        "Execution",
                        &t->preferred_anti, &t->preferred_anti_count, error, error_size);
    json_decref(root);
    if (rc != 0) {
        pod_terms_free(t);
        return rc;
    }
    if (t->required_affinity_count + t->required_anti_count + t->preferred_affinity_count +
            t->preferred_anti_count ==
        0) {
        pod_terms_free(t);
        return 0;
    }
    *out = t;
    return 0;
}

int affinity_term_copy(const struct affinity_term *from, struct affinity_term *to)
{
    memset(to, 0, sizeof(*to));
    to->weight = from->weight;
    to->has_namespace_selector = from->has_namespace_selector;
    to->topology_key = strdup(from->topology_key);
    to->namespaces = calloc(from->namespace_count + 1, sizeof(*to->namespaces));
    if (to->topology_key == NULL || to->namespaces == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < from->namespace_count; i++) {
        if ((to->namespaces[i] = strdup(from->namespaces[i])) == NULL)
            return -ENOMEM;
        to->namespace_count++;
    }
    if (label_selector_copy(&from->selector, &to->selector) != 0 ||
        label_selector_copy(&from->namespace_selector, &to->namespace_selector) != 0)
        return -ENOMEM;
    return 0;
}

char *affinity_term_signature(const struct affinity_term *term)
{
    size_t size = 32;
    for (uint32_t i = 0; i < term->namespace_count; i++)
        size += strlen(term->namespaces[i]) + 1;
    char *namespaces = malloc(size);
    if (namespaces == NULL)
        return NULL;
    size_t used = (size_t)snprintf(namespaces, size, "%d\x1b%d", (int)term->weight,
                                   term->has_namespace_selector ? 1 : 0);
    for (uint32_t i = 0; i < term->namespace_count; i++)
        used += (size_t)snprintf(namespaces + used, size - used, "\x1a%s", term->namespaces[i]);
    char *selector = label_selector_signature(namespaces, &term->selector, term->topology_key);
    char *scope = term->has_namespace_selector
                      ? label_selector_signature("", &term->namespace_selector, "")
                      : strdup("");
    char *text = NULL;
    if (selector != NULL && scope != NULL) {
        size_t length = strlen(selector) + strlen(scope) + 2;
        text = malloc(length);
        if (text != NULL)
            snprintf(text, length, "%s\x19%s", selector, scope);
    }
    free(namespaces);
    free(selector);
    free(scope);
    return text;
}

/* ---- matching -------------------------------------------------------------------------- */

static const struct namespace_entry *namespace_find(const struct namespace_table *table,
                                                    const char *name)
{
    for (uint32_t i = 0; table != NULL && i < table->count; i++)
        if (strcmp(table->items[i].name, name) == 0)
            return &table->items[i];
    return NULL;
}

static bool namespace_selected(const struct affinity_term *term,
                               const struct namespace_table *table, const char *namespace_name)
{
    for (uint32_t i = 0; i < term->namespace_count; i++)
        if (strcmp(term->namespaces[i], namespace_name) == 0)
            return true;
    if (!term->has_namespace_selector)
        return false;
    const struct label_selector *selector = &term->namespace_selector;
    if (!selector->nothing && selector->count == 0)
        return true; /* {} selects every namespace, known or not */
    const struct namespace_entry *entry = namespace_find(table, namespace_name);
    return entry != NULL && label_selector_matches(selector, &entry->labels);
}

bool affinity_term_matches(const struct affinity_term *term, const struct namespace_table *table,
                           const char *namespace_name,
                           const char *(*label)(const void *source, const char *key),
                           const void *source)
{
    return namespace_selected(term, table, namespace_name) &&
           label_selector_matches_with(&term->selector, label, source);
}

/* ---- namespaces ------------------------------------------------------------------------ */

static void namespace_entry_free(struct namespace_entry *entry)
{
    free(entry->name);
    for (uint32_t i = 0; i < entry->labels.label_count; i++) {
        free(entry->labels.labels[i].key);
        free(entry->labels.labels[i].value);
    }
    free(entry->labels.labels);
}

static int label_compare(const void *a, const void *b)
{
    return strcmp(((const struct indexed_label *)a)->key, ((const struct indexed_label *)b)->key);
}

int namespace_table_set(struct namespace_table *table, const char *name, const char *json)
{
    json_t *root = json != NULL ? json_loads(json, 0, NULL) : NULL;
    json_t *labels = json_object_get(json_object_get(root, "metadata"), "labels");
    struct namespace_entry entry = {.name = strdup(name)};
    size_t count = json_object_size(labels);
    entry.labels.labels = calloc(count > 0 ? count : 1, sizeof(*entry.labels.labels));
    int rc = entry.name != NULL && entry.labels.labels != NULL ? 0 : -ENOMEM;
    const char *key;
    json_t *value;
    json_object_foreach(labels, key, value)
    {
        if (rc != 0 || !json_is_string(value))
            continue;
        struct indexed_label *label = &entry.labels.labels[entry.labels.label_count++];
        label->key = strdup(key);
        label->value = strdup(json_string_value(value));
        if (label->key == NULL || label->value == NULL)
            rc = -ENOMEM;
    }
    json_decref(root);
    if (rc != 0) {
        namespace_entry_free(&entry);
        return rc;
    }
    qsort(entry.labels.labels, entry.labels.label_count, sizeof(*entry.labels.labels),
          label_compare);
    namespace_table_remove(table, name);
    struct namespace_entry *grown = realloc(table->items, (table->count + 1) * sizeof(*grown));
    if (grown == NULL) {
        namespace_entry_free(&entry);
        return -ENOMEM;
    }
    table->items = grown;
    table->items[table->count++] = entry;
    return 0;
}

void namespace_table_remove(struct namespace_table *table, const char *name)
{
    for (uint32_t i = 0; i < table->count; i++) {
        if (strcmp(table->items[i].name, name) != 0)
            continue;
        namespace_entry_free(&table->items[i]);
        table->items[i] = table->items[--table->count];
        return;
    }
}

void namespace_table_free(struct namespace_table *table)
{
    for (uint32_t i = 0; i < table->count; i++)
        namespace_entry_free(&table->items[i]);
    free(table->items);
    memset(table, 0, sizeof(*table));
}
