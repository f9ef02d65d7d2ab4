/* Storage objects from cluster events and kube's rules on them (volume_objects.h). */
#include "volume_objects.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

int volume_objects_init(struct volume_objects *vo)
{
    vo->claims = json_object();
    vo->volumes = json_object();
    vo->classes = json_object();
    vo->csinodes = json_object();
    vo->volumes_by_class = json_object();
    if (vo->claims == NULL || vo->volumes == NULL || vo->classes == NULL || vo->csinodes == NULL ||
        vo->volumes_by_class == NULL) {
        volume_objects_fini(vo);
        return -ENOMEM;
    }
    return 0;
}

void volume_objects_fini(struct volume_objects *vo)
{
    json_decref(vo->claims);
    json_decref(vo->volumes);
    json_decref(vo->classes);
    json_decref(vo->csinodes);
    json_decref(vo->volumes_by_class);
    memset(vo, 0, sizeof(*vo));
}

static json_t *index_of(struct volume_objects *vo, const char *kind)
{
    if (kind == NULL)
        return NULL;
    if (strcmp(kind, VO_KIND_CLAIM) == 0)
        return vo->claims;
    if (strcmp(kind, VO_KIND_VOLUME) == 0)
        return vo->volumes;
    if (strcmp(kind, VO_KIND_CLASS) == 0)
        return vo->classes;
    if (strcmp(kind, VO_KIND_CSINODE) == 0)
        return vo->csinodes;
    return NULL;
}

static const char *object_key(const char *namespace_name, const char *name, char *buf, size_t size)
{
    if (namespace_name == NULL || namespace_name[0] == '\0')
        return name;
    snprintf(buf, size, "%s/%s", namespace_name, name);
    return buf;
}

/* Keep volumes_by_class in step with the volume index: drop name from the class of its old
 * version, add the new version (NULL on delete) under its class. */
static void class_index_update(struct volume_objects *vo, const char *name, json_t *volume)
{
    json_t *old = json_object_get(vo->volumes, name);
    if (old != NULL) {
        const char *old_class = vo_volume_class(old);
        json_t *bucket = json_object_get(vo->volumes_by_class, old_class);
        json_object_del(bucket, name);
        if (bucket != NULL && json_object_size(bucket) == 0)
            json_object_del(vo->volumes_by_class, old_class);
    }
    if (volume == NULL)
        return;
    const char *klass = vo_volume_class(volume);
    json_t *bucket = json_object_get(vo->volumes_by_class, klass);
    if (bucket == NULL) {
        bucket = json_object();
        json_object_set_new(vo->volumes_by_class, klass, bucket);
    }
    json_object_set(bucket, name, volume);
}

int volume_objects_event(struct volume_objects *vo, const kc_event *ev)
{
    if (ev->type != KC_EVENT_OBJECT_ADD && ev->type != KC_EVENT_OBJECT_UPDATE &&
        ev->type != KC_EVENT_OBJECT_DELETE)
        return 0;
    json_t *index = index_of(vo, ev->object_kind);
    if (index == NULL || ev->object_name == NULL)
        return 0;
    char buf[KEY_MAX];
    /* claims are namespaced; the other three kinds are cluster-scoped */
    const char *key = object_key(index == vo->claims ? ev->object_namespace : NULL,
                                 ev->object_name, buf, sizeof(buf));
    if (ev->type == KC_EVENT_OBJECT_DELETE) {
        if (index == vo->volumes)
            class_index_update(vo, key, NULL);
        json_object_del(index, key);
        return 1;
    }
    json_t *object = ev->object_json != NULL ? json_loads(ev->object_json, 0, NULL) : NULL;
    if (object == NULL || !json_is_object(object)) {
        json_decref(object);
        return 1; /* unreadable: keep what was known */
    }
    if (index == vo->volumes)
        class_index_update(vo, key, object);
    json_object_set_new(index, key, object);
    return 1;
}

json_t *vo_claim(const struct volume_objects *vo, const char *namespace_name, const char *name)
{
    char buf[KEY_MAX];
    if (name == NULL)
        return NULL;
    return json_object_get(vo->claims,
                           object_key(namespace_name != NULL ? namespace_name : "default", name,
                                      buf, sizeof(buf)));
}

json_t *vo_volume(const struct volume_objects *vo, const char *name)
{
    return name != NULL ? json_object_get(vo->volumes, name) : NULL;
}

json_t *vo_class(const struct volume_objects *vo, const char *name)
{
    return name != NULL ? json_object_get(vo->classes, name) : NULL;
}

json_t *vo_csinode(const struct volume_objects *vo, const char *name)
{
    return name != NULL ? json_object_get(vo->csinodes, name) : NULL;
}

json_t *vo_volumes_of_class(const struct volume_objects *vo, const char *class_name)
{
    return class_name != NULL ? json_object_get(vo->volumes_by_class, class_name) : NULL;
}

/* The value at a dotted path of object fields. */
static json_t *path_get(const json_t *object, const char *path)
{
    char part[128];
    const json_t *at = object;
    while (at != NULL && *path != '\0') {
        const char *dot = strchr(path, '.');
        size_t len = dot != NULL ? (size_t)(dot - path) : strlen(path);
        if (len >= sizeof(part))
            return NULL;
        memcpy(part, path, len);
        part[len] = '\0';
        at = json_object_get(at, part);
        path += dot != NULL ? len + 1 : len;
    }
    return (json_t *)at;
}

const char *vo_string(const json_t *object, const char *path)
{
    return json_string_value(path_get(object, path));
}

const char *vo_annotation(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(path_get(object, "metadata.annotations"), key));
}

bool vo_deleting(const json_t *object)
{
    const json_t *ts = path_get(object, "metadata.deletionTimestamp");
    return ts != NULL && !json_is_null(ts);
}

uint32_t vo_access_modes(const json_t *object)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } modes[] = {{"ReadWriteOnce", VO_RWO},
                 {"ReadOnlyMany", VO_ROX},
                 {"ReadWriteMany", VO_RWX},
                 {"ReadWriteOncePod", VO_RWOP}};
    uint32_t bits = 0;
    size_t i;
    json_t *mode;
    json_array_foreach(path_get(object, "spec.accessModes"), i, mode)
    {
        for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
            if (json_is_string(mode) && strcmp(json_string_value(mode), modes[k].name) == 0)
                bits |= modes[k].bit;
    }
    return bits;
}

const char *vo_claim_class(const json_t *claim)
{
    const char *beta = vo_annotation(claim, VO_ANN_BETA_CLASS);
    if (beta != NULL)
        return beta;
    const char *name = vo_string(claim, "spec.storageClassName");
    return name != NULL ? name : "";
}

const char *vo_volume_class(const json_t *volume)
{
    const char *beta = vo_annotation(volume, VO_ANN_BETA_CLASS);
    if (beta != NULL)
        return beta;
    const char *name = vo_string(volume, "spec.storageClassName");
    return name != NULL ? name : "";
}

int64_t vo_claim_request(const json_t *claim)
{
    int64_t v = vo_quantity(path_get(claim, "spec.resources.requests.storage"));
    return v > 0 ? v : 0;
}

int64_t vo_volume_capacity(const json_t *volume)
{
    int64_t v = vo_quantity(path_get(volume, "spec.capacity.storage"));
    return v > 0 ? v : 0;
}

bool vo_claim_fully_bound(const json_t *claim)
{
    const char *volume = vo_string(claim, "spec.volumeName");
    return volume != NULL && volume[0] != '\0' &&
           vo_annotation(claim, VO_ANN_BIND_COMPLETED) != NULL;
}

bool vo_claim_delays_binding(const struct volume_objects *vo, const json_t *claim)
{
    const char *class_name = vo_claim_class(claim);
    if (class_name[0] == '\0')
        return false;
    const json_t *klass = vo_class(vo, class_name);
    const char *mode = klass != NULL ? vo_string(klass, "volumeBindingMode") : NULL;
    return mode != NULL && strcmp(mode, "WaitForFirstConsumer") == 0;
}

bool vo_claim_owned_by_pod(const json_t *claim, const kc_pod *pod)
{
    const char *uid = kc_pod_uid(pod);
    size_t i;
    json_t *ref;
    json_array_foreach(path_get(claim, "metadata.ownerReferences"), i, ref)
    {
        const char *ref_uid = json_string_value(json_object_get(ref, "uid"));
        if (json_is_true(json_object_get(ref, "controller")) && ref_uid != NULL && uid != NULL &&
            strcmp(ref_uid, uid) == 0)
            return true;
    }
    return false;
}

/* ---- quantities -------------------------------------------------------------------------- */

static int64_t scale_up(double value, double factor)
{
    double v = value * factor;
    if (v >= 9.2e18)
        return -1;
    int64_t whole = (int64_t)v;
    return (double)whole < v ? whole + 1 : whole;
}

int64_t vo_quantity(const json_t *value)
{
    if (json_is_integer(value))
        return json_integer_value(value) >= 0 ? json_integer_value(value) : -1;
    if (json_is_real(value))
        return json_real_value(value) >= 0 ? scale_up(json_real_value(value), 1) : -1;
    const char *s = json_string_value(value);
    if (s == NULL || s[0] == '\0')
        return -1;
    char *end;
    double number = strtod(s, &end);
    if (end == s || number < 0)
        return -1;
    static const struct {
        const char *suffix;
        double factor;
    } suffixes[] = {
        {"", 1},       {"m", 1e-3},   {"k", 1e3},          {"M", 1e6},
        {"G", 1e9},    {"T", 1e12},   {"P", 1e15},         {"E", 1e18},
        {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}, {"Ti", 1099511627776.0},
        {"Pi", 1125899906842624.0}, {"Ei", 1152921504606846976.0},
    };
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strcmp(end, suffixes[i].suffix) == 0)
            return scale_up(number, suffixes[i].factor);
    if ((end[0] == 'e' || end[0] == 'E') && end[1] != '\0') {
        char *tail;
        long exponent = strtol(end + 1, &tail, 10);
        if (*tail == '\0' && exponent >= 0 && exponent <= 18) {
            double factor = 1;
            while (exponent-- > 0)
                factor *= 10;
            return scale_up(number, factor);
        }
    }
    return -1;
}

/* ---- selectors --------------------------------------------------------------------------- */

bool vo_value_in(const json_t *values, const char *value)
{
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), value) == 0)
            return true;
    }
    return false;
}

static bool parse_integer(const char *s, long long *out)
{
    if (s == NULL || s[0] == '\0')
        return false;
    char *end;
    *out = strtoll(s, &end, 10);
    return *end == '\0';
}

/* One requirement: key, operator, values against a label value (NULL: no such label). */
static bool requirement_matches(const json_t *req, const char *label)
{
    const char *op = json_string_value(json_object_get(req, "operator"));
    const json_t *values = json_object_get(req, "values");
    if (op == NULL)
        return false;
    if (strcmp(op, "In") == 0)
        return label != NULL && vo_value_in(values, label);
    if (strcmp(op, "NotIn") == 0)
        return label == NULL || !vo_value_in(values, label);
    if (strcmp(op, "Exists") == 0)
        return label != NULL;
    if (strcmp(op, "DoesNotExist") == 0)
        return label == NULL;
    if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) {
        long long have, want;
        if (json_array_size(values) != 1 || !parse_integer(label, &have) ||
            !parse_integer(json_string_value(json_array_get(values, 0)), &want))
            return false;
        return op[0] == 'G' ? have > want : have < want;
    }
    return false;
}

static const char *node_label(const void *node, const char *key)
{
    return kc_node_label((const kc_node *)node, key);
}

static const char *object_label(const void *labels, const char *key)
{
    return json_string_value(json_object_get((const json_t *)labels, key));
}

static bool expressions_match(const json_t *expressions, const void *owner,
                              const char *(*label_of)(const void *, const char *))
{
    size_t i;
    json_t *req;
    json_array_foreach(expressions, i, req)
    {
        const char *key = json_string_value(json_object_get(req, "key"));
        if (key == NULL || !requirement_matches(req, label_of(owner, key)))
            return false;
    }
    return true;
}

bool vo_volume_fits_node(const json_t *volume, const kc_node *node)
{
    const json_t *required = path_get(volume, "spec.nodeAffinity.required");
    if (required == NULL || json_is_null(required))
        return true;
    size_t i;
    json_t *term;
    json_array_foreach(json_object_get(required, "nodeSelectorTerms"), i, term)
    {
        const json_t *expressions = json_object_get(term, "matchExpressions");
        /* the check sees the node's labels only: a term of fields alone never matches */
        if (json_array_size(expressions) == 0 ||
            json_array_size(json_object_get(term, "matchFields")) > 0)
            continue;
        if (expressions_match(expressions, node, node_label))
            return true;
    }
    return false;
}

bool vo_class_allows_node(const json_t *klass, const kc_node *node)
{
    const json_t *terms = json_object_get(klass, "allowedTopologies");
    if (json_array_size(terms) == 0)
        return true;
    size_t i;
    json_t *term;
    json_array_foreach(terms, i, term)
    {
        size_t k;
        json_t *expression;
        bool all = true;
        json_array_foreach(json_object_get(term, "matchLabelExpressions"), k, expression)
        {
            const char *key = json_string_value(json_object_get(expression, "key"));
            const char *label = key != NULL ? kc_node_label(node, key) : NULL;
            if (label == NULL || !vo_value_in(json_object_get(expression, "values"), label)) {
                all = false;
                break;
            }
        }
        if (all)
            return true;
    }
    return false;
}

bool vo_selector_matches(const json_t *claim, const json_t *volume)
{
    const json_t *selector = path_get(claim, "spec.selector");
    if (selector == NULL || json_is_null(selector))
        return true;
    const json_t *labels = path_get(volume, "metadata.labels");
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)json_object_get(selector, "matchLabels"), key, value)
    {
        const char *have = object_label(labels, key);
        if (have == NULL || !json_is_string(value) || strcmp(have, json_string_value(value)) != 0)
            return false;
    }
    return expressions_match(json_object_get(selector, "matchExpressions"), labels, object_label);
}

bool vo_volume_bound_to_claim(const json_t *volume, const json_t *claim)
{
    const json_t *ref = path_get(volume, "spec.claimRef");
    if (ref == NULL || json_is_null(ref))
        return false;
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *ns = json_string_value(json_object_get(ref, "namespace"));
    const char *uid = json_string_value(json_object_get(ref, "uid"));
    const char *claim_name = vo_string(claim, "metadata.name");
    const char *claim_ns = vo_string(claim, "metadata.namespace");
    const char *claim_uid = vo_string(claim, "metadata.uid");
    if (name == NULL || claim_name == NULL || strcmp(name, claim_name) != 0)
        return false;
    if (strcmp(ns != NULL ? ns : "", claim_ns != NULL ? claim_ns : "default") != 0)
        return false;
    return uid == NULL || uid[0] == '\0' || (claim_uid != NULL && strcmp(uid, claim_uid) == 0);
}
