/* kube's cluster default spread constraints (PodTopologySpreadArgs defaultingType and
 * defaultConstraints) and helper.DefaultSelector, which picks the pods they count. */
#include "default_constraints.h"
#include "domain_counts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define HOSTNAME_KEY "kubernetes.io/hostname"
#define ZONE_KEY "topology.kubernetes.io/zone"

/* ---- templates ------------------------------------------------------------------------- */

static int add_template(struct spread_defaults *d, int32_t max_skew, const char *key,
                        enum spread_action action)
{
    struct default_template *grown =
        realloc(d->templates, (d->template_count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    d->templates = grown;
    struct default_template *t = &d->templates[d->template_count];
    *t = (struct default_template){.max_skew = max_skew, .action = action, .min_domains = 1,
                                   .node_affinity_honor = true};
    if ((t->topology_key = strdup(key)) == NULL)
        return -ENOMEM;
    d->template_count++;
    return 0;
}

static int parse_policy(json_t *json, bool fallback, bool *honor)
{
    *honor = fallback;
    const char *text = json_string_value(json);
    if (json == NULL)
        return 0;
    if (text != NULL && strcmp(text, "Honor") == 0)
        *honor = true;
    else if (text != NULL && strcmp(text, "Ignore") == 0)
        *honor = false;
    else
        return -EINVAL;
    return 0;
}

/* One entry of args.defaultConstraints, validated as kube's ValidatePodTopologySpreadArgs
 * does (maxSkew > 0, a topologyKey, a known whenUnsatisfiable, no labelSelector). */
static int parse_template(struct spread_defaults *d, json_t *item, size_t i, char *error,
                          size_t error_size)
{
    json_t *skew = json_object_get(item, "maxSkew");
    const char *key = json_string_value(json_object_get(item, "topologyKey"));
    const char *when = json_string_value(json_object_get(item, "whenUnsatisfiable"));
    if (!json_is_integer(skew) || json_integer_value(skew) < 1 ||
        json_integer_value(skew) > INT32_MAX)
        return plugin_parse_error(error, error_size,
                                  "defaultConstraints[%zu].maxSkew must be an integer above 0", i);
    if (key == NULL || key[0] == '\0')
        return plugin_parse_error(error, error_size,
                                  "defaultConstraints[%zu].topologyKey is required", i);
    bool anyway = when != NULL && strcmp(when, "ScheduleAnyway") == 0;
    if (!anyway && (when == NULL || strcmp(when, "DoNotSchedule") != 0))
        return plugin_parse_error(
            error, error_size,
            "defaultConstraints[%zu].whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway", i);
    if (json_object_get(item, "labelSelector") != NULL)
        return plugin_parse_error(error, error_size,
                                  "defaultConstraints[%zu].labelSelector: constraints must not "
                                  "define a selector (the default selector is used)",
                                  i);
    int rc = add_template(d, (int32_t)json_integer_value(skew), key,
                          anyway ? SPREAD_SCHEDULE_ANYWAY : SPREAD_DO_NOT_SCHEDULE);
    if (rc != 0)
        return rc;
    struct default_template *t = &d->templates[d->template_count - 1];
    json_t *min_domains = json_object_get(item, "minDomains");
    if (json_is_integer(min_domains) && json_integer_value(min_domains) >= 1 &&
        json_integer_value(min_domains) <= INT32_MAX)
        t->min_domains = (int32_t)json_integer_value(min_domains);
    else if (min_domains != NULL && !json_is_null(min_domains))
        return plugin_parse_error(
            error, error_size, "defaultConstraints[%zu].minDomains must be an integer above 0", i);
    if (parse_policy(json_object_get(item, "nodeAffinityPolicy"), true,
                     &t->node_affinity_honor) != 0 ||
        parse_policy(json_object_get(item, "nodeTaintsPolicy"), false, &t->node_taints_honor) != 0)
        return plugin_parse_error(error, error_size,
                                  "defaultConstraints[%zu]: node policies must be Honor or Ignore",
                                  i);
    return 0;
}

static int parse_args(struct spread_defaults *d, json_t *root, char *error, size_t error_size)
{
    const char *known[] = {"defaultingType", "defaultConstraints", NULL};
    const char *name;
    json_t *value;
    json_object_foreach(root, name, value)
    {
        bool ok = false;
        for (int i = 0; known[i] != NULL; i++)
            ok = ok || strcmp(known[i], name) == 0;
        if (!ok)
            return plugin_parse_error(error, error_size, "unknown argument %s", name);
    }
    const char *type = json_string_value(json_object_get(root, "defaultingType"));
    json_t *list = json_object_get(root, "defaultConstraints");
    if (json_object_get(root, "defaultingType") != NULL && type == NULL)
        return plugin_parse_error(error, error_size, "defaultingType must be System or List");
    d->system = type == NULL || strcmp(type, "System") == 0;
    if (!d->system && strcmp(type, "List") != 0)
        return plugin_parse_error(error, error_size, "defaultingType must be System or List");
    if (list != NULL && !json_is_array(list))
        return plugin_parse_error(error, error_size, "defaultConstraints must be a list");
    if (d->system && json_array_size(list) > 0)
        return plugin_parse_error(error, error_size,
                                  "defaultConstraints must be empty when defaultingType is System");
    if (d->system) {
        /* kube's systemDefaultConstraints, in its order */
        int rc = add_template(d, 3, HOSTNAME_KEY, SPREAD_SCHEDULE_ANYWAY);
        return rc == 0 ? add_template(d, 5, ZONE_KEY, SPREAD_SCHEDULE_ANYWAY) : rc;
    }
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        int rc = parse_template(d, item, i, error, error_size);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int spread_defaults_init(struct spread_defaults *d, const char *args_json, char *error,
                         size_t error_size)
{
    memset(d, 0, sizeof(*d));
    json_t *root = json_object();
    if (args_json != NULL && args_json[0] != '\0') {
        json_decref(root);
        json_error_t json_error;
        root = json_loads(args_json, 0, &json_error);
        if (root == NULL || !json_is_object(root)) {
            json_decref(root);
            return plugin_parse_error(error, error_size, "args are not a JSON object");
        }
    }
    int rc = root != NULL ? parse_args(d, root, error, error_size) : -ENOMEM;
    json_decref(root);
    if (rc != 0)
        spread_defaults_free(d);
    return rc;
}

static void object_release(struct selecting_object *o)
{
    free(o->kind);
    free(o->namespace_name);
    free(o->name);
    label_selector_free(&o->selector);
}

void spread_defaults_free(struct spread_defaults *d)
{
    for (uint32_t i = 0; i < d->template_count; i++)
        free(d->templates[i].topology_key);
    free(d->templates);
    for (uint32_t i = 0; i < d->object_count; i++)
        object_release(&d->objects[i]);
    free(d->objects);
    memset(d, 0, sizeof(*d));
}

/* ---- selecting objects ----------------------------------------------------------------- */

static const char *const watched_kinds[] = {"Service", "ReplicationController", "ReplicaSet",
                                            "StatefulSet", NULL};

bool spread_defaults_watches(const char *kind)
{
    for (int i = 0; kind != NULL && watched_kinds[i] != NULL; i++)
        if (strcmp(kind, watched_kinds[i]) == 0)
            return true;
    return false;
}

static int find(const struct spread_defaults *d, const char *kind, const char *namespace_name,
                const char *name)
{
    for (uint32_t i = 0; i < d->object_count; i++) {
        const struct selecting_object *o = &d->objects[i];
        if (strcmp(o->kind, kind) == 0 && strcmp(o->name, name) == 0 &&
            strcmp(o->namespace_name, namespace_name) == 0)
            return (int)i;
    }
    return -1;
}

/* A label map (Service, ReplicationController spec.selector) as In requirements; an absent
 * map selects nothing (kube skips Services without a selector). */
static int read_label_map(json_t *map, struct selecting_object *o)
{
    o->has_selector = json_is_object(map);
    const char *key;
    json_t *value;
    json_object_foreach(map, key, value)
    {
        const char *text = json_string_value(value);
        if (text == NULL)
            continue;
        int rc = label_selector_add(&o->selector, key, SELECTOR_IN, NULL, text);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int spread_defaults_object_set(struct spread_defaults *d, const char *kind,
                               const char *namespace_name, const char *name, const char *json)
{
    if (!spread_defaults_watches(kind) || name == NULL)
        return 0;
    if (namespace_name == NULL)
        namespace_name = "";
    spread_defaults_object_remove(d, kind, namespace_name, name);
    json_t *root = json != NULL ? json_loads(json, 0, NULL) : NULL;
    json_t *selector = json_object_get(json_object_get(root, "spec"), "selector");
    struct selecting_object o = {0};
    int rc = 0;
    if (strcmp(kind, "ReplicaSet") == 0 || strcmp(kind, "StatefulSet") == 0) {
        char error[128];
        o.has_selector = selector != NULL;
        /* a selector kube would refuse selects nothing here */
        if (label_selector_parse(selector, &o.selector, "spec.selector", error, sizeof(error)) ==
            -ENOMEM)
            rc = -ENOMEM;
        if (o.selector.nothing)
            o.has_selector = false;
    } else {
        rc = read_label_map(selector, &o);
    }
    json_decref(root);
    struct selecting_object *grown =
        rc == 0 ? realloc(d->objects, (d->object_count + 1) * sizeof(*grown)) : NULL;
    if (grown != NULL) {
        d->objects = grown;
        o.kind = strdup(kind);
        o.namespace_name = strdup(namespace_name);
        o.name = strdup(name);
    }
    if (grown == NULL || o.kind == NULL || o.namespace_name == NULL || o.name == NULL) {
        object_release(&o);
        return -ENOMEM;
    }
    d->objects[d->object_count++] = o;
    return 0;
}

void spread_defaults_object_remove(struct spread_defaults *d, const char *kind,
                                   const char *namespace_name, const char *name)
{
    int at = find(d, kind, namespace_name != NULL ? namespace_name : "", name);
    if (at < 0)
        return;
    object_release(&d->objects[at]);
    d->objects[at] = d->objects[--d->object_count];
}

/* ---- kube's DefaultSelector ------------------------------------------------------------ */

static bool has_requirement(const struct label_selector *s, const struct selector_requirement *r)
{
    for (uint32_t i = 0; i < s->count; i++) {
        const struct selector_requirement *q = &s->requirements[i];
        if (q->op == r->op && q->value_count == 1 && r->value_count == 1 &&
            strcmp(q->key, r->key) == 0 && strcmp(q->values[0], r->values[0]) == 0)
            return true;
    }
    return false;
}

/* Append every requirement of from (duplicates of a key=value pair once). */
static int merge(struct label_selector *into, const struct label_selector *from)
{
    for (uint32_t i = 0; i < from->count; i++) {
        const struct selector_requirement *r = &from->requirements[i];
        if (r->op == SELECTOR_IN && r->value_count == 1 && has_requirement(into, r))
            continue;
        int rc;
        if (r->value_count <= 1) {
            rc = label_selector_add(into, r->key, r->op, NULL,
                                    r->value_count == 1 ? r->values[0] : NULL);
        } else {
            json_t *values = json_array();
            for (uint32_t v = 0; values != NULL && v < r->value_count; v++)
                json_array_append_new(values, json_string(r->values[v]));
            rc = values != NULL ? label_selector_add(into, r->key, r->op, values, NULL) : -ENOMEM;
            json_decref(values);
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The owner kinds DefaultSelector reads, with the API group version it requires. */
static bool controller_is(const char *api_version, const char *kind, const char *want_api,
                          const char *want_kind)
{
    return strcmp(api_version, want_api) == 0 && strcmp(kind, want_kind) == 0;
}

/* kube's helper.DefaultSelector: the Services of the pod's namespace whose selector matches
 * its labels, merged, then its controller's selector (ReplicationController v1, ReplicaSet
 * or StatefulSet apps/v1). */
static int default_selector(const struct spread_defaults *d, const kc_pod *pod,
                            struct label_selector *out)
{
    memset(out, 0, sizeof(*out));
    const char *namespace_name = kc_pod_namespace(pod);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < d->object_count; i++) {
        const struct selecting_object *o = &d->objects[i];
        if (strcmp(o->kind, "Service") != 0 || !o->has_selector ||
            strcmp(o->namespace_name, namespace_name) != 0 ||
            !label_selector_matches_with(&o->selector, pod_handle_label, pod))
            continue;
        rc = merge(out, &o->selector);
    }
    const char *api_version, *kind, *name;
    if (rc != 0 || kc_pod_controller(pod, &api_version, &kind, &name) != 0)
        return rc;
    const char *owner_kind = NULL;
    if (controller_is(api_version, kind, "v1", "ReplicationController"))
        owner_kind = "ReplicationController";
    else if (controller_is(api_version, kind, "apps/v1", "ReplicaSet"))
        owner_kind = "ReplicaSet";
    else if (controller_is(api_version, kind, "apps/v1", "StatefulSet"))
        owner_kind = "StatefulSet";
    int at = owner_kind != NULL ? find(d, owner_kind, namespace_name, name) : -1;
    if (at >= 0 && d->objects[at].has_selector)
        rc = merge(out, &d->objects[at].selector);
    return rc;
}

int spread_defaults_build(const struct spread_defaults *d, const kc_pod *pod,
                          enum spread_action action, struct spread_constraint **out,
                          uint32_t *count)
{
    *out = NULL;
    *count = 0;
    uint32_t wanted = 0;
    for (uint32_t i = 0; i < d->template_count; i++)
        wanted += d->templates[i].action == action;
    if (wanted == 0 || d->object_count == 0)
        return 0;
    struct label_selector selector;
    int rc = default_selector(d, pod, &selector);
    if (rc != 0 || selector.count == 0) {
        /* an empty default selector: kube applies no default constraint */
        label_selector_free(&selector);
        return rc;
    }
    struct spread_constraint *list = calloc(wanted, sizeof(*list));
    if (list == NULL) {
        label_selector_free(&selector);
        return -ENOMEM;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; rc == 0 && i < d->template_count; i++) {
        const struct default_template *t = &d->templates[i];
        if (t->action != action)
            continue;
        struct spread_constraint *c = &list[n++];
        c->max_skew = t->max_skew;
        c->min_domains = t->min_domains;
        c->node_affinity_honor = t->node_affinity_honor;
        c->node_taints_honor = t->node_taints_honor;
        c->topology_key = strdup(t->topology_key);
        rc = c->topology_key != NULL ? label_selector_copy(&selector, &c->selector) : -ENOMEM;
        if (rc == 0)
            c->self_match = label_selector_matches_with(&c->selector, pod_handle_label, pod);
    }
    label_selector_free(&selector);
    if (rc != 0) {
        spread_constraints_free(list, n);
        return rc;
    }
    *out = list;
    *count = n;
    return 0;
}
