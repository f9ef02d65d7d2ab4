/* The object model: sorted label and resource lists, pods and nodes built from Kubernetes-shaped
 * trees, the effective pod request and kube-scheduler's affinity and toleration predicates. */
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resource_table.h"
#include "tree.h"

#define POD_GROUP_LABEL "scheduling.x-k8s.io/pod-group"
#define DEFAULT_SCHEDULER "default-scheduler"
#define DEFAULT_NAMESPACE "default"

/* ---- kv lists ---------------------------------------------------------------------------- */

/* Index of key, or -(insertion point) - 1 when absent. */
static int64_t kv_find(const struct kv_list *list, const char *key)
{
    int64_t lo = 0, hi = (int64_t)list->count - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(list->items[mid].key, key);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -lo - 1;
}

const char *kv_list_get(const struct kv_list *list, const char *key)
{
    if (list == NULL || key == NULL || list->count == 0)
        return NULL;
    int64_t i = kv_find(list, key);
    return i >= 0 ? list->items[i].value : NULL;
}

int kv_list_set(struct kv_list *list, const char *key, const char *value)
{
    char *v = strdup(value != NULL ? value : "");
    if (v == NULL)
        return -ENOMEM;
    int64_t i = kv_find(list, key);
    if (i >= 0) {
        free(list->items[i].value);
        list->items[i].value = v;
        return 0;
    }
    char *k = strdup(key);
    struct kv *items = realloc(list->items, (list->count + 1) * sizeof(*items));
    if (k == NULL || items == NULL) {
        free(k);
        free(v);
        if (items != NULL)
            list->items = items;
        return -ENOMEM;
    }
    uint32_t at = (uint32_t)(-i - 1);
    memmove(&items[at + 1], &items[at], (list->count - at) * sizeof(*items));
    items[at].key = k;
    items[at].value = v;
    list->items = items;
    list->count++;
    return 0;
}

void kv_list_free(struct kv_list *list)
{
    if (list == NULL)
        return;
    for (uint32_t i = 0; i < list->count; i++) {
        free(list->items[i].key);
        free(list->items[i].value);
    }
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

/* ---- res lists --------------------------------------------------------------------------- */

static int64_t res_find(const struct res_list *list, kc_resource id)
{
    int64_t lo = 0, hi = (int64_t)list->count - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        kc_resource at = list->items[mid].id;
        if (at == id)
            return mid;
        if (at < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -lo - 1;
}

int64_t res_list_get(const struct res_list *list, kc_resource id)
{
    if (list == NULL || list->count == 0)
        return 0;
    int64_t i = res_find(list, id);
    return i >= 0 ? list->items[i].value : 0;
}

static void res_list_remove(struct res_list *list, uint32_t at)
{
    size_t tail = list->count - at - 1;
    memmove(&list->items[at], &list->items[at + 1], tail * sizeof(list->items[0]));
    list->count--;
}

int res_list_set(struct res_list *list, kc_resource id, int64_t value)
{
    int64_t i = res_find(list, id);
    if (i >= 0) {
        if (value == 0)
            res_list_remove(list, (uint32_t)i);
        else
            list->items[i].value = value;
        return 0;
    }
    if (value == 0)
        return 0;
    struct res_amount *items = realloc(list->items, (list->count + 1) * sizeof(*items));
    if (items == NULL)
        return -ENOMEM;
    uint32_t at = (uint32_t)(-i - 1);
    memmove(&items[at + 1], &items[at], (list->count - at) * sizeof(*items));
    items[at].id = id;
    items[at].value = value;
    list->items = items;
    list->count++;
    return 0;
}

void res_list_free(struct res_list *list)
{
    if (list == NULL)
        return;
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

/* ---- lifecycle --------------------------------------------------------------------------- */

struct pod *pod_new(void)
{
    return calloc(1, sizeof(struct pod));
}

struct node *node_new(void)
{
    return calloc(1, sizeof(struct node));
}

static void free_strings(char **strings, uint32_t count)
{
    for (uint32_t i = 0; strings != NULL && i < count; i++)
        free(strings[i]);
    free(strings);
}

static void requirements_free(struct selector_requirement *reqs, uint32_t count)
{
    for (uint32_t i = 0; reqs != NULL && i < count; i++) {
        free(reqs[i].key);
        free_strings(reqs[i].values, reqs[i].value_count);
    }
    free(reqs);
}

static void term_free(struct node_selector_term *term)
{
    requirements_free(term->expressions, term->expression_count);
    requirements_free(term->fields, term->field_count);
}

static void affinity_free(struct node_affinity *affinity)
{
    for (uint32_t i = 0; affinity->required != NULL && i < affinity->required_count; i++)
        term_free(&affinity->required[i]);
    free(affinity->required);
    for (uint32_t i = 0; affinity->preferred != NULL && i < affinity->preferred_count; i++)
        term_free(&affinity->preferred[i].term);
    free(affinity->preferred);
}

static void containers_free(struct container *containers, uint32_t count)
{
    for (uint32_t i = 0; containers != NULL && i < count; i++) {
        free(containers[i].name);
        res_list_free(&containers[i].requests);
        res_list_free(&containers[i].limits);
    }
    free(containers);
}

void pod_free(struct pod *pod)
{
    if (pod == NULL)
        return;
    free(pod->namespace);
    free(pod->name);
    free(pod->uid);
    free(pod->node_name);
    free(pod->scheduler_name);
    free(pod->nominated_node_name);
    free(pod->pod_group);
    free(pod->constraints_json);
    free(pod->controller_api_version);
    free(pod->controller_kind);
    free(pod->controller_name);
    kv_list_free(&pod->labels);
    kv_list_free(&pod->annotations);
    kv_list_free(&pod->node_selector);
    affinity_free(&pod->affinity);
    for (uint32_t i = 0; pod->tolerations != NULL && i < pod->toleration_count; i++) {
        free(pod->tolerations[i].key);
        free(pod->tolerations[i].value);
    }
    free(pod->tolerations);
    free_strings(pod->scheduling_gates, pod->scheduling_gate_count);
    containers_free(pod->containers, pod->container_count);
    containers_free(pod->init_containers, pod->init_container_count);
    res_list_free(&pod->overhead);
    res_list_free(&pod->request);
    host_ports_free(pod->host_ports, pod->host_port_count);
    volumes_free(pod->volumes, pod->volume_count);
    free(pod);
}

void node_free(struct node *node)
{
    if (node == NULL)
        return;
    free(node->name);
    free(node->uid);
    kv_list_free(&node->labels);
    kv_list_free(&node->annotations);
    for (uint32_t i = 0; node->taints != NULL && i < node->taint_count; i++) {
        free(node->taints[i].key);
        free(node->taints[i].value);
    }
    free(node->taints);
    res_list_free(&node->allocatable);
    free(node);
}

/* ---- effective request ------------------------------------------------------------------- */

/* Dense per-resource vectors keep the init-container arithmetic simple; ids are < MAX. Only
 * the ids in `used` hold a value (the others are 0 and not even written), so the arithmetic
 * visits the two or three resources a pod asks for instead of all 64: clearing and walking
 * every id of several vectors was most of pod_finish's cost, paid for every pod decoded
 * (docs/benchmarks.md). Start a vector with vec_init. */
struct res_vec {
    uint64_t used;
    int64_t v[KC_RESOURCE_MAX];
};

_Static_assert(KC_RESOURCE_MAX <= 64, "res_vec.used has a bit per resource");

static void vec_init(struct res_vec *vec)
{
    vec->used = 0;
}

static int64_t vec_get(const struct res_vec *vec, int id)
{
    return (vec->used >> id & 1) ? vec->v[id] : 0;
}

static void vec_put(struct res_vec *vec, int id, int64_t value)
{
    vec->v[id] = value;
    vec->used |= 1ull << id;
}

static int64_t saturating_add(int64_t a, int64_t b)
{
    int64_t sum;
    if (__builtin_add_overflow(a, b, &sum))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return sum;
}

static void vec_add_list(struct res_vec *vec, const struct res_list *list)
{
    for (uint32_t i = 0; i < list->count; i++) {
        kc_resource id = list->items[i].id;
        if (id >= 0 && id < KC_RESOURCE_MAX)
            vec_put(vec, id, saturating_add(vec_get(vec, id), list->items[i].value));
    }
}

/* dst += src; an id src does not use adds 0 */
static void vec_add(struct res_vec *dst, const struct res_vec *src)
{
    for (uint64_t m = src->used; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        vec_put(dst, id, saturating_add(vec_get(dst, id), src->v[id]));
    }
}

/* dst = max(dst, src) per id, over the ids either uses (a negative dst meets src's 0) */
static void vec_max(struct res_vec *dst, const struct res_vec *src)
{
    for (uint64_t m = dst->used | src->used; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        int64_t value = vec_get(src, id);
        if (value > vec_get(dst, id))
            vec_put(dst, id, value);
    }
}

/* The non-zero amounts of vec, by id, into the empty *out (what res_list_set of each would
 * build) in one allocation: a search and a realloc per resource made this most of the cost of
 * pod_finish, which every decoded pod goes through (docs/benchmarks.md). */
static int vec_to_list(const struct res_vec *vec, struct res_list *out)
{
    uint32_t count = 0;
    for (uint64_t m = vec->used; m != 0; m &= m - 1)
        count += vec->v[__builtin_ctzll(m)] != 0;
    if (count == 0)
        return 0;
    struct res_amount *items = malloc(count * sizeof(*items));
    if (items == NULL)
        return -ENOMEM;
    uint32_t at = 0;
    for (uint64_t m = vec->used; m != 0; m &= m - 1) {
        int id = __builtin_ctzll(m);
        if (vec->v[id] != 0)
            items[at++] = (struct res_amount){.id = (kc_resource)id, .value = vec->v[id]};
    }
    out->items = items;
    out->count = count;
    return 0;
}

/* As k8s.io/component-helpers resource.PodRequests: app containers and sidecars run together;
 * init container i runs next to the sidecars started before it; the pod needs the larger. */
static int compute_request(struct pod *pod)
{
    struct res_vec steady, sidecars, init_peak, overhead;
    vec_init(&steady);
    vec_init(&sidecars);
    vec_init(&init_peak);
    vec_init(&overhead);
    for (uint32_t i = 0; i < pod->container_count; i++)
        vec_add_list(&steady, &pod->containers[i].requests);
    for (uint32_t i = 0; i < pod->init_container_count; i++) {
        const struct container *c = &pod->init_containers[i];
        if (c->restartable) {
            vec_add_list(&steady, &c->requests);
            vec_add_list(&sidecars, &c->requests);
            vec_max(&init_peak, &sidecars);
            continue;
        }
        struct res_vec running = sidecars;
        vec_add_list(&running, &c->requests);
        vec_max(&init_peak, &running);
    }
    vec_max(&steady, &init_peak);
    vec_add_list(&overhead, &pod->overhead);
    vec_add(&steady, &overhead);
    res_list_free(&pod->request);
    return vec_to_list(&steady, &pod->request);
}

/* The API server defaults a missing request to the limit, per resource. */
static int default_requests(struct container *containers, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        struct container *c = &containers[i];
        for (uint32_t j = 0; j < c->limits.count; j++) {
            const struct res_amount *limit = &c->limits.items[j];
            if (res_list_get(&c->requests, limit->id) != 0)
                continue;
            int rc = res_list_set(&c->requests, limit->id, limit->value);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int replace_string(char **slot, const char *value)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return -ENOMEM;
    free(*slot);
    *slot = copy;
    return 0;
}

static int pod_finish_names(struct pod *pod)
{
    int rc = 0;
    if (pod->namespace == NULL || pod->namespace[0] == '\0')
        rc = replace_string(&pod->namespace, DEFAULT_NAMESPACE);
    if (rc == 0 && (pod->scheduler_name == NULL || pod->scheduler_name[0] == '\0'))
        rc = replace_string(&pod->scheduler_name, DEFAULT_SCHEDULER);
    if (rc == 0 && (pod->uid == NULL || pod->uid[0] == '\0')) {
        /* "namespace/name", without asprintf's parsing of a format for every pod */
        size_t ns_len = strlen(pod->namespace), name_len = strlen(pod->name);
        char *uid = malloc(ns_len + name_len + 2);
        if (uid == NULL)
            return -ENOMEM;
        memcpy(uid, pod->namespace, ns_len);
        uid[ns_len] = '/';
        memcpy(uid + ns_len + 1, pod->name, name_len + 1);
        free(pod->uid);
        pod->uid = uid;
    }
    if (rc < 0)
        return rc;
    free(pod->pod_group);
    pod->pod_group = NULL;
    const char *group = kv_list_get(&pod->labels, POD_GROUP_LABEL);
    if (group != NULL && group[0] != '\0' && (pod->pod_group = strdup(group)) == NULL)
        return -ENOMEM;
    return 0;
}

/* The fields a pod's own model shows; the others come from the pod's source (tree, proto). */
static void derive_fields(struct pod *pod)
{
    if (pod->host_port_count > 0)
        pod->fields |= POD_FIELD_HOST_PORTS;
    if (pod->node_selector.count > 0)
        pod->fields |= POD_FIELD_NODE_SELECTOR;
    if (pod->affinity.has_required || pod->affinity.preferred_count > 0)
        pod->fields |= POD_FIELD_NODE_AFFINITY;
    /* volume sources a scheduling plugin reads (VolumeBinding, VolumeRestrictions,
     * NodeVolumeLimits); emptyDir, configMap, hostPath, ... need no node */
    static const uint32_t volume_bits[] = {
        [KC_VOLUME_PVC] = POD_FIELD_PVC_VOLUMES,
        [KC_VOLUME_EPHEMERAL] = POD_FIELD_EPHEMERAL_VOLUMES,
        [KC_VOLUME_GCE_PD] = POD_FIELD_GCE_PD_VOLUMES,
        [KC_VOLUME_AWS_EBS] = POD_FIELD_AWS_EBS_VOLUMES,
        [KC_VOLUME_ISCSI] = POD_FIELD_ISCSI_VOLUMES,
        [KC_VOLUME_RBD] = POD_FIELD_RBD_VOLUMES,
        [KC_VOLUME_CSI] = POD_FIELD_CSI_VOLUMES,
    };
    for (uint32_t i = 0; i < pod->volume_count; i++)
        pod->fields |= volume_bits[pod->volumes[i].source];
}

int pod_finish(struct pod *pod)
{
    if (pod == NULL || pod->name == NULL || pod->name[0] == '\0')
        return -EINVAL;
    derive_fields(pod);
    int rc = pod_finish_names(pod);
    if (rc == 0)
        rc = default_requests(pod->containers, pod->container_count);
    if (rc == 0)
        rc = default_requests(pod->init_containers, pod->init_container_count);
    if (rc == 0)
        rc = compute_request(pod);
    if (rc == 0)
        rc = pod_finish_volumes(pod);
    return rc;
}

/* ---- reading trees ----------------------------------------------------------------------- */

static int no_memory(const struct tree *t, struct kc_error *err, const char *what)
{
    return tree_error(t, err, -ENOMEM, what, "out of memory");
}

/* A field of map, or NULL when absent or written as null (as Kubernetes' JSON decoding). */
static const struct tree *field(const struct tree *map, const char *key)
{
    const struct tree *v = tree_get(map, key);
    return v == NULL || tree_is_null(v) ? NULL : v;
}

static const char *type_name(enum tree_type type)
{
    switch (type) {
    case TREE_MAP: return "a map";
    case TREE_SEQ: return "a list";
    default: return "a scalar";
    }
}

static int expect(const struct tree *t, enum tree_type type, const char *what, struct kc_error *err)
{
    if (t->type == type)
        return 0;
    return tree_error(t, err, -EINVAL, what, "expected %s, found %s", type_name(type),
                      type_name(t->type));
}

/* Copy the string at map[key] into *slot when present. */
static int read_string(const struct tree *map, const char *key, const char *what, char **slot,
                       struct kc_error *err)
{
    const struct tree *t = field(map, key);
    if (t == NULL)
        return 0;
    const char *s;
    int rc = tree_string(t, what, &s, err);
    if (rc < 0)
        return rc;
    if (replace_string(slot, s) < 0)
        return no_memory(t, err, what);
    return 0;
}

static int read_bool(const struct tree *map, const char *key, const char *what, bool *out,
                     struct kc_error *err)
{
    const struct tree *t = field(map, key);
    return t == NULL ? 0 : tree_bool(t, what, out, err);
}

/* A map of string to string (labels, annotations, nodeSelector). A null value reads as "". */
static int read_kv_map(const struct tree *map, const char *key, const char *what,
                       struct kv_list *out, struct kc_error *err)
{
    const struct tree *t = field(map, key);
    if (t == NULL)
        return 0;
    int rc = expect(t, TREE_MAP, what, err);
    for (uint32_t i = 0; rc == 0 && i < t->count; i++) {
        const char *value = "";
        if (!tree_is_null(t->items[i]))
            rc = tree_string(t->items[i], what, &value, err);
        if (rc == 0 && kv_list_set(out, t->keys[i]->scalar, value) < 0)
            rc = no_memory(t->items[i], err, what);
    }
    return rc;
}

static int read_res_entry(const struct tree *key, const struct tree *value, const char *what,
                          struct res_list *out, struct kc_error *err)
{
    const char *name = key->scalar;
    kc_resource id = resource_intern(name);
    if (id < 0)
        return tree_error(key, err, -EINVAL, what,
                          "resource name \"%s\" is empty or one too many "
                          "(at most %d distinct names)",
                          name, KC_RESOURCE_MAX);
    int64_t amount;
    int rc = tree_quantity(value, name, &amount, err);
    if (rc < 0)
        return rc;
    if (amount < 0)
        return tree_error(value, err, -EINVAL, what, "%s must not be negative", name);
    if (res_list_set(out, id, amount) < 0)
        return no_memory(value, err, what);
    return 0;
}

/* A map of resource name to quantity (requests, limits, overhead, allocatable). */
static int read_res_map(const struct tree *t, const char *what, struct res_list *out,
                        struct kc_error *err)
{
    int rc = expect(t, TREE_MAP, what, err);
    for (uint32_t i = 0; rc == 0 && i < t->count; i++)
        rc = read_res_entry(t->keys[i], t->items[i], what, out, err);
    return rc;
}

static int read_res_field(const struct tree *map, const char *key, const char *what,
                          struct res_list *out, struct kc_error *err)
{
    const struct tree *t = field(map, key);
    return t == NULL ? 0 : read_res_map(t, what, out, err);
}

/* A list, allocated zeroed so a partial fill frees cleanly. */
static int alloc_list(const struct tree *t, const char *what, size_t size, void **out,
                      uint32_t *count, struct kc_error *err)
{
    int rc = expect(t, TREE_SEQ, what, err);
    if (rc < 0 || t->count == 0)
        return rc;
    *out = calloc(t->count, size);
    if (*out == NULL)
        return no_memory(t, err, what);
    *count = t->count;
    return 0;
}

static int read_string_list(const struct tree *t, const char *what, char ***out, uint32_t *count,
                            struct kc_error *err)
{
    int rc = alloc_list(t, what, sizeof(char *), (void **)out, count, err);
    for (uint32_t i = 0; rc == 0 && i < *count; i++) {
        const char *s;
        rc = tree_string(t->items[i], what, &s, err);
        if (rc == 0 && ((*out)[i] = strdup(s)) == NULL)
            rc = no_memory(t->items[i], err, what);
    }
    return rc;
}

static int require_map(const struct tree *map, const char *key, const char *what,
                       const struct tree **out, struct kc_error *err)
{
    *out = field(map, key);
    if (*out == NULL)
        return tree_error(map, err, -EINVAL, what, "is required");
    return expect(*out, TREE_MAP, what, err);
}

static int optional_map(const struct tree *map, const char *key, const char *what,
                        const struct tree **out, struct kc_error *err)
{
    *out = field(map, key);
    return *out == NULL ? 0 : expect(*out, TREE_MAP, what, err);
}

/* ---- timestamps -------------------------------------------------------------------------- */

/* s starts with the shape of pattern: 'd' a digit, 'T' T or t, anything else itself (so
 * sscanf's %d never sees a sign or a space). */
static bool has_shape(const char *s, const char *pattern)
{
    for (; *pattern != '\0'; pattern++, s++) {
        if (*pattern == 'd'   ? (*s < '0' || *s > '9')
            : *pattern == 'T' ? (*s != 'T' && *s != 't')
                              : *s != *pattern)
            return false;
    }
    return true;
}

static bool parse_offset(const char *s, int64_t *offset_s)
{
    if (strcmp(s, "Z") == 0 || strcmp(s, "z") == 0) {
        *offset_s = 0;
        return true;
    }
    int hours, minutes, used = 0;
    if ((s[0] != '+' && s[0] != '-') || !has_shape(s + 1, "dd:dd") ||
        sscanf(s + 1, "%2d:%2d%n", &hours, &minutes, &used) != 2 || s[1 + used] != '\0' ||
        used != 5 || hours > 23 || minutes > 59)
        return false;
    *offset_s = (s[0] == '-' ? -1 : 1) * (int64_t)(hours * 3600 + minutes * 60);
    return true;
}

/* RFC 3339, as metav1.Time: 2024-05-01T12:00:00Z, fractional seconds and offsets allowed. */
static bool parse_rfc3339(const char *s, int64_t *ms)
{
    struct tm tm = {0};
    int used = 0;
    if (!has_shape(s, "dddd-dd-ddTdd:dd:dd"))
        return false;
    if (sscanf(s, "%4d-%2d-%2d%*1[Tt]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 ||
        used != 19)
        return false;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    const char *p = s + used;
    int64_t frac_ms = 0, scale = 100;
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9')
            return false;
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            frac_ms += (*p - '0') * scale;
    }
    int64_t offset_s;
    if (!parse_offset(p, &offset_s))
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    *ms = ((int64_t)t - offset_s) * 1000 + frac_ms;
    return true;
}

static int read_timestamp(const struct tree *map, const char *key, const char *what, bool *present,
                          int64_t *ms, struct kc_error *err)
{
    const struct tree *t = field(map, key);
    *present = t != NULL;
    if (t == NULL)
        return 0;
    const char *s;
    int rc = tree_string(t, what, &s, err);
    if (rc < 0)
        return rc;
    if (!parse_rfc3339(s, ms))
        return tree_error(t, err, -EINVAL, what,
                          "\"%s\" is not an RFC 3339 time "
                          "(e.g. 2024-05-01T12:00:00Z)",
                          s);
    return 0;
}

/* ---- integers ---------------------------------------------------------------------------- */

/* strconv.ParseInt(s, 10, 64): optional sign, decimal digits, nothing else. */
static bool parse_int64(const char *s, int64_t *out)
{
    if (s == NULL)
        return false;
    bool negative = s[0] == '-';
    if (s[0] == '-' || s[0] == '+')
        s++;
    if (*s == '\0')
        return false;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t value = 0;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return false;
        uint64_t digit = (uint64_t)(*s - '0');
        if (value > (limit - digit) / 10)
            return false;
        value = value * 10 + digit;
    }
    *out = negative ? (int64_t)(0 - value) : (int64_t)value;
    return true;
}

static int read_int32(const struct tree *t, const char *what, int32_t min, int32_t max,
                      int32_t *out, struct kc_error *err)
{
    int64_t v;
    int rc = tree_int64(t, what, &v, err);
    if (rc < 0)
        return rc;
    if (v < min || v > max)
        return tree_error(t, err, -EINVAL, what,
                          "%" PRId64 " is out of range %" PRId32 "..%" PRId32, v, min, max);
    *out = (int32_t)v;
    return 0;
}

/* ---- node affinity ----------------------------------------------------------------------- */

static const char *const selector_op_names[] = {
    [SELECTOR_IN] = "In",         [SELECTOR_NOT_IN] = "NotIn",
    [SELECTOR_EXISTS] = "Exists", [SELECTOR_DOES_NOT_EXIST] = "DoesNotExist",
    [SELECTOR_GT] = "Gt",         [SELECTOR_LT] = "Lt",
};

static int read_selector_op(const struct tree *map, const char *what, bool field_selector,
                            enum selector_op *out, struct kc_error *err)
{
    const struct tree *t = field(map, "operator");
    if (t == NULL)
        return tree_error(map, err, -EINVAL, what, "operator is required");
    const char *s;
    int rc = tree_string(t, what, &s, err);
    if (rc < 0)
        return rc;
    int last = field_selector ? SELECTOR_NOT_IN : SELECTOR_LT;
    for (int op = 0; op <= last; op++) {
        if (strcmp(s, selector_op_names[op]) == 0) {
            *out = (enum selector_op)op;
            return 0;
        }
    }
    if (field_selector)
        return tree_error(t, err, -EINVAL, what,
                          "operator \"%s\" is not supported in matchFields "
                          "(use In or NotIn)",
                          s);
    return tree_error(t, err, -EINVAL, what,
                      "unknown operator \"%s\" (use In, NotIn, Exists, "
                      "DoesNotExist, Gt or Lt)",
                      s);
}

/* The API server's validation: the value count each operator needs, integers for Gt/Lt. */
static int check_selector_values(const struct tree *map, const struct selector_requirement *req,
                                 bool field_selector, const char *what, struct kc_error *err)
{
    const char *op = selector_op_names[req->op];
    switch (req->op) {
    case SELECTOR_IN:
    case SELECTOR_NOT_IN:
        if (field_selector && req->value_count != 1)
            return tree_error(map, err, -EINVAL, what, "%s in matchFields needs exactly one value",
                              op);
        if (req->value_count == 0)
            return tree_error(map, err, -EINVAL, what, "%s needs at least one value", op);
        return 0;
    case SELECTOR_EXISTS:
    case SELECTOR_DOES_NOT_EXIST:
        if (req->value_count != 0)
            return tree_error(map, err, -EINVAL, what, "%s takes no values", op);
        return 0;
    default: break;
    }
    int64_t ignored;
    if (req->value_count != 1 || !parse_int64(req->values[0], &ignored))
        return tree_error(map, err, -EINVAL, what, "%s needs exactly one integer value", op);
    return 0;
}

static int read_requirement(const struct tree *map, bool field_selector, const char *what,
                            struct selector_requirement *req, struct kc_error *err)
{
    int rc = expect(map, TREE_MAP, what, err);
    if (rc == 0 && field(map, "key") == NULL)
        rc = tree_error(map, err, -EINVAL, what, "key is required");
    if (rc == 0)
        rc = read_string(map, "key", what, &req->key, err);
    if (rc == 0 && field_selector && strcmp(req->key, "metadata.name") != 0)
        rc = tree_error(field(map, "key"), err, -EINVAL, what,
                        "field \"%s\" is not supported "
                        "(only metadata.name)",
                        req->key);
    if (rc == 0)
        rc = read_selector_op(map, what, field_selector, &req->op, err);
    const struct tree *values = field(map, "values");
    if (rc == 0 && values != NULL)
        rc = read_string_list(values, what, &req->values, &req->value_count, err);
    if (rc == 0)
        rc = check_selector_values(map, req, field_selector, what, err);
    return rc;
}

static int read_requirements(const struct tree *term, const char *key, bool field_selector,
                             const char *what, struct selector_requirement **out, uint32_t *count,
                             struct kc_error *err)
{
    const struct tree *list = field(term, key);
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, what, sizeof(**out), (void **)out, count, err);
    for (uint32_t i = 0; rc == 0 && i < *count; i++)
        rc = read_requirement(list->items[i], field_selector, what, &(*out)[i], err);
    return rc;
}

static int read_term(const struct tree *t, struct node_selector_term *term, struct kc_error *err)
{
    int rc = expect(t, TREE_MAP, "nodeSelectorTerm", err);
    if (rc == 0)
        rc = read_requirements(t, "matchExpressions", false, "matchExpressions", &term->expressions,
                               &term->expression_count, err);
    if (rc == 0)
        rc = read_requirements(t, "matchFields", true, "matchFields", &term->fields,
                               &term->field_count, err);
    return rc;
}

static int read_required(const struct tree *node_affinity, struct node_affinity *out,
                         struct kc_error *err)
{
    const char *what = "requiredDuringSchedulingIgnoredDuringExecution";
    const struct tree *required;
    int rc = optional_map(node_affinity, what, what, &required, err);
    if (rc < 0 || required == NULL)
        return rc;
    out->has_required = true;
    const struct tree *terms = field(required, "nodeSelectorTerms");
    if (terms == NULL)
        return 0;
    rc = alloc_list(terms, "nodeSelectorTerms", sizeof(*out->required), (void **)&out->required,
                    &out->required_count, err);
    for (uint32_t i = 0; rc == 0 && i < out->required_count; i++)
        rc = read_term(terms->items[i], &out->required[i], err);
    return rc;
}

static int read_preferred_term(const struct tree *t, struct preferred_term *out,
                               struct kc_error *err)
{
    const char *what = "preferredDuringSchedulingIgnoredDuringExecution";
    int rc = expect(t, TREE_MAP, what, err);
    if (rc < 0)
        return rc;
    const struct tree *weight = field(t, "weight");
    if (weight == NULL)
        return tree_error(t, err, -EINVAL, what, "weight is required");
    rc = read_int32(weight, "weight", 1, 100, &out->weight, err);
    const struct tree *preference = field(t, "preference");
    if (rc == 0 && preference != NULL)
        rc = read_term(preference, &out->term, err);
    return rc;
}

static int read_preferred(const struct tree *node_affinity, struct node_affinity *out,
                          struct kc_error *err)
{
    const char *what = "preferredDuringSchedulingIgnoredDuringExecution";
    const struct tree *list = field(node_affinity, what);
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, what, sizeof(*out->preferred), (void **)&out->preferred,
                        &out->preferred_count, err);
    for (uint32_t i = 0; rc == 0 && i < out->preferred_count; i++)
        rc = read_preferred_term(list->items[i], &out->preferred[i], err);
    return rc;
}

static int read_affinity(const struct tree *spec, struct node_affinity *out, struct kc_error *err)
{
    const struct tree *affinity, *node_affinity;
    int rc = optional_map(spec, "affinity", "affinity", &affinity, err);
    if (rc < 0 || affinity == NULL)
        return rc;
    rc = optional_map(affinity, "nodeAffinity", "affinity.nodeAffinity", &node_affinity, err);
    if (rc < 0 || node_affinity == NULL)
        return rc;
    rc = read_required(node_affinity, out, err);
    if (rc == 0)
        rc = read_preferred(node_affinity, out, err);
    return rc;
}

/* ---- taints and tolerations -------------------------------------------------------------- */

static int parse_effect(const struct tree *t, const char *what, bool allow_empty,
                        kc_taint_effect *out, struct kc_error *err)
{
    const char *s;
    int rc = tree_string(t, what, &s, err);
    if (rc < 0)
        return rc;
    if (strcmp(s, "NoSchedule") == 0)
        *out = KC_TAINT_NO_SCHEDULE;
    else if (strcmp(s, "PreferNoSchedule") == 0)
        *out = KC_TAINT_PREFER_NO_SCHEDULE;
    else if (strcmp(s, "NoExecute") == 0)
        *out = KC_TAINT_NO_EXECUTE;
    else if (allow_empty && s[0] == '\0')
        *out = (kc_taint_effect)0;
    else
        return tree_error(t, err, -EINVAL, what,
                          "unknown effect \"%s\" (use NoSchedule, "
                          "PreferNoSchedule or NoExecute)",
                          s);
    return 0;
}

static int read_toleration_op(const struct tree *map, enum toleration_op *out, struct kc_error *err)
{
    const struct tree *t = field(map, "operator");
    *out = TOLERATION_EQUAL;
    if (t == NULL)
        return 0;
    const char *s;
    int rc = tree_string(t, "operator", &s, err);
    if (rc < 0)
        return rc;
    if (strcmp(s, "Exists") == 0)
        *out = TOLERATION_EXISTS;
    else if (strcmp(s, "Equal") != 0 && s[0] != '\0')
        return tree_error(t, err, -EINVAL, "operator",
                          "unknown operator \"%s\" "
                          "(use Equal or Exists)",
                          s);
    return 0;
}

static int read_toleration(const struct tree *t, struct toleration *tol, struct kc_error *err)
{
    int rc = expect(t, TREE_MAP, "tolerations", err);
    if (rc == 0)
        rc = read_string(t, "key", "key", &tol->key, err);
    if (rc == 0)
        rc = read_string(t, "value", "value", &tol->value, err);
    if (rc == 0)
        rc = read_toleration_op(t, &tol->op, err);
    const struct tree *effect = field(t, "effect");
    if (rc == 0 && effect != NULL)
        rc = parse_effect(effect, "effect", true, &tol->effect, err);
    const struct tree *seconds = field(t, "tolerationSeconds");
    if (rc == 0 && seconds != NULL) {
        tol->has_seconds = true;
        rc = tree_int64(seconds, "tolerationSeconds", &tol->seconds, err);
    }
    if (rc == 0 && tol->key == NULL && (tol->key = strdup("")) == NULL)
        rc = no_memory(t, err, "key");
    if (rc == 0 && tol->value == NULL && (tol->value = strdup("")) == NULL)
        rc = no_memory(t, err, "value");
    return rc;
}

static int read_tolerations(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    const struct tree *list = field(spec, "tolerations");
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, "tolerations", sizeof(*pod->tolerations), (void **)&pod->tolerations,
                        &pod->toleration_count, err);
    for (uint32_t i = 0; rc == 0 && i < pod->toleration_count; i++)
        rc = read_toleration(list->items[i], &pod->tolerations[i], err);
    return rc;
}

static int read_taint(const struct tree *t, struct taint *taint, struct kc_error *err)
{
    int rc = expect(t, TREE_MAP, "taints", err);
    if (rc == 0 && field(t, "key") == NULL)
        rc = tree_error(t, err, -EINVAL, "taints", "key is required");
    if (rc == 0)
        rc = read_string(t, "key", "key", &taint->key, err);
    if (rc == 0)
        rc = read_string(t, "value", "value", &taint->value, err);
    if (rc == 0 && taint->value == NULL && (taint->value = strdup("")) == NULL)
        rc = no_memory(t, err, "value");
    const struct tree *effect = field(t, "effect");
    if (rc == 0 && effect == NULL)
        rc = tree_error(t, err, -EINVAL, "taints",
                        "effect is required (NoSchedule, "
                        "PreferNoSchedule or NoExecute)");
    if (rc == 0)
        rc = parse_effect(effect, "effect", false, &taint->effect, err);
    return rc;
}

/* ---- containers -------------------------------------------------------------------------- */

static int read_container(const struct tree *t, bool init, struct container *c,
                          struct kc_error *err)
{
    const char *what = init ? "initContainers" : "containers";
    int rc = expect(t, TREE_MAP, what, err);
    if (rc == 0)
        rc = read_string(t, "name", "name", &c->name, err);
    const struct tree *resources = NULL;
    if (rc == 0)
        rc = optional_map(t, "resources", "resources", &resources, err);
    if (rc == 0 && resources != NULL)
        rc = read_res_field(resources, "requests", "resources.requests", &c->requests, err);
    if (rc == 0 && resources != NULL)
        rc = read_res_field(resources, "limits", "resources.limits", &c->limits, err);
    if (rc < 0 || !init)
        return rc;
    char *policy = NULL;
    rc = read_string(t, "restartPolicy", "restartPolicy", &policy, err);
    c->restartable = policy != NULL && strcmp(policy, "Always") == 0;
    free(policy);
    return rc;
}

static int read_containers(const struct tree *spec, bool init, struct container **out,
                           uint32_t *count, struct kc_error *err)
{
    const char *key = init ? "initContainers" : "containers";
    const struct tree *list = field(spec, key);
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, key, sizeof(**out), (void **)out, count, err);
    for (uint32_t i = 0; rc == 0 && i < *count; i++)
        rc = read_container(list->items[i], init, &(*out)[i], err);
    return rc;
}

static int read_gates(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    const struct tree *list = field(spec, "schedulingGates");
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, "schedulingGates", sizeof(char *), (void **)&pod->scheduling_gates,
                        &pod->scheduling_gate_count, err);
    for (uint32_t i = 0; rc == 0 && i < pod->scheduling_gate_count; i++) {
        const struct tree *gate = list->items[i];
        rc = expect(gate, TREE_MAP, "schedulingGates", err);
        if (rc == 0 && field(gate, "name") == NULL)
            rc = tree_error(gate, err, -EINVAL, "schedulingGates", "name is required");
        if (rc == 0)
            rc = read_string(gate, "name", "name", &pod->scheduling_gates[i], err);
    }
    return rc;
}

/* ---- host ports -------------------------------------------------------------------------- */

int host_port_append(struct host_port **ports, uint32_t *count, const char *host_ip,
                     const char *protocol, int32_t port, int32_t container_port)
{
    struct host_port *grown = realloc(*ports, (*count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    *ports = grown;
    struct host_port *hp = &grown[*count];
    hp->host_ip = strdup(host_ip != NULL && host_ip[0] != '\0' ? host_ip : "0.0.0.0");
    hp->protocol = strdup(protocol != NULL && protocol[0] != '\0' ? protocol : "TCP");
    hp->port = port;
    hp->container_port = container_port;
    if (hp->host_ip == NULL || hp->protocol == NULL) {
        free(hp->host_ip);
        free(hp->protocol);
        return -ENOMEM;
    }
    (*count)++;
    return 0;
}

void host_ports_free(struct host_port *ports, uint32_t count)
{
    for (uint32_t i = 0; ports != NULL && i < count; i++) {
        free(ports[i].host_ip);
        free(ports[i].protocol);
    }
    free(ports);
}

static int read_port_protocol(const struct tree *port, const char **out, struct kc_error *err)
{
    static const char *const protocols[] = {"TCP", "UDP", "SCTP"};
    const struct tree *t = field(port, "protocol");
    *out = NULL;
    if (t == NULL)
        return 0;
    int rc = tree_string(t, "protocol", out, err);
    for (size_t i = 0; rc == 0 && i < sizeof(protocols) / sizeof(protocols[0]); i++)
        if (strcmp(*out, protocols[i]) == 0)
            return 0;
    return rc < 0 ? rc
                  : tree_error(t, err, -EINVAL, "protocol",
                               "unknown protocol \"%s\" (TCP, UDP or SCTP)", *out);
}

/* One entry of a container's ports; only those with a host port are kept. With hostNetwork
 * the API server defaults hostPort to containerPort, as the pod really binds it on the node. */
static int read_port(const struct tree *t, bool host_network, struct pod *pod,
                     struct kc_error *err)
{
    int32_t host_port = 0, container_port = 0;
    const char *host_ip = NULL, *protocol = NULL;
    int rc = expect(t, TREE_MAP, "ports", err);
    const struct tree *v;
    if (rc == 0 && (v = field(t, "containerPort")) != NULL)
        rc = read_int32(v, "containerPort", 1, 65535, &container_port, err);
    if (rc == 0 && (v = field(t, "hostPort")) != NULL)
        rc = read_int32(v, "hostPort", 0, 65535, &host_port, err);
    if (rc == 0 && (v = field(t, "hostIP")) != NULL)
        rc = tree_string(v, "hostIP", &host_ip, err);
    if (rc == 0)
        rc = read_port_protocol(t, &protocol, err);
    if (rc < 0)
        return rc;
    if (host_port == 0 && host_network)
        host_port = container_port;
    if (host_port == 0)
        return 0;
    if (host_port_append(&pod->host_ports, &pod->host_port_count, host_ip, protocol, host_port,
                         container_port) < 0)
        return no_memory(t, err, "ports");
    return 0;
}

/* App containers and sidecars (init containers with restartPolicy Always) hold their ports for
 * the pod's whole life; other init containers have exited before the app starts. */
static int read_host_ports(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    bool host_network = false;
    int rc = read_bool(spec, "hostNetwork", "hostNetwork", &host_network, err);
    static const char *const lists[] = {"containers", "initContainers"};
    for (size_t l = 0; rc == 0 && l < 2; l++) {
        const struct tree *list = field(spec, lists[l]);
        for (uint32_t i = 0; rc == 0 && list != NULL && i < list->count; i++) {
            const struct tree *c = list->items[i];
            if (l == 1 && !pod->init_containers[i].restartable)
                continue;
            const struct tree *ports = field(c, "ports");
            if (ports != NULL)
                rc = expect(ports, TREE_SEQ, "ports", err);
            for (uint32_t j = 0; rc == 0 && ports != NULL && j < ports->count; j++)
                rc = read_port(ports->items[j], host_network, pod, err);
        }
    }
    return rc;
}

/* ---- volumes ----------------------------------------------------------------------------- */

void volumes_free(struct volume *volumes, uint32_t count)
{
    for (uint32_t i = 0; volumes != NULL && i < count; i++) {
        free(volumes[i].name);
        free(volumes[i].claim_name);
        free(volumes[i].disk);
        free(volumes[i].pool);
        free(volumes[i].monitors);
    }
    free(volumes);
}

int pod_finish_volumes(struct pod *pod)
{
    for (uint32_t i = 0; i < pod->volume_count; i++) {
        struct volume *v = &pod->volumes[i];
        if (v->source != KC_VOLUME_EPHEMERAL)
            continue;
        char *claim;
        if (asprintf(&claim, "%s-%s", pod->name, v->name != NULL ? v->name : "") < 0)
            return -ENOMEM;
        free(v->claim_name);
        v->claim_name = claim;
    }
    return 0;
}

/* RBD monitors as one comma-separated string: the conflict check compares them as sets. */
static int read_monitors(const struct tree *source, struct volume *v, struct kc_error *err)
{
    const struct tree *list = field(source, "monitors");
    if (list == NULL)
        return 0;
    int rc = expect(list, TREE_SEQ, "monitors", err);
    size_t len = 1;
    for (uint32_t i = 0; rc == 0 && i < list->count; i++) {
        const char *s;
        rc = tree_string(list->items[i], "monitors", &s, err);
        len += strlen(s) + 1;
    }
    if (rc < 0)
        return rc;
    if ((v->monitors = calloc(1, len)) == NULL)
        return no_memory(list, err, "monitors");
    for (uint32_t i = 0; i < list->count; i++) {
        if (i > 0)
            strcat(v->monitors, ",");
        strcat(v->monitors, list->items[i]->scalar);
    }
    return 0;
}

/* The volume sources a scheduling rule reads, with the field naming the disk in each. */
static const struct {
    const char *key;
    kc_volume_source source;
    const char *disk_key;
} volume_kinds[] = {
    {"persistentVolumeClaim", KC_VOLUME_PVC, NULL},
    {"ephemeral", KC_VOLUME_EPHEMERAL, NULL},
    {"gcePersistentDisk", KC_VOLUME_GCE_PD, "pdName"},
    {"awsElasticBlockStore", KC_VOLUME_AWS_EBS, "volumeID"},
    {"iscsi", KC_VOLUME_ISCSI, "iqn"},
    {"rbd", KC_VOLUME_RBD, "image"},
    {"csi", KC_VOLUME_CSI, "driver"},
};

static int read_volume(const struct tree *t, struct volume *v, struct kc_error *err)
{
    int rc = expect(t, TREE_MAP, "volumes", err);
    if (rc == 0)
        rc = read_string(t, "name", "name", &v->name, err);
    v->source = KC_VOLUME_OTHER;
    for (size_t k = 0; rc == 0 && k < sizeof(volume_kinds) / sizeof(volume_kinds[0]); k++) {
        const struct tree *source = field(t, volume_kinds[k].key);
        if (source == NULL)
            continue;
        if ((rc = expect(source, TREE_MAP, volume_kinds[k].key, err)) < 0)
            return rc;
        v->source = volume_kinds[k].source;
        rc = read_bool(source, "readOnly", "readOnly", &v->read_only, err);
        if (rc == 0 && v->source == KC_VOLUME_PVC) {
            if (field(source, "claimName") == NULL)
                return tree_error(source, err, -EINVAL, "persistentVolumeClaim",
                                  "claimName is required");
            rc = read_string(source, "claimName", "claimName", &v->claim_name, err);
        }
        if (rc == 0 && volume_kinds[k].disk_key != NULL)
            rc = read_string(source, volume_kinds[k].disk_key, volume_kinds[k].disk_key, &v->disk,
                             err);
        if (rc == 0 && v->source == KC_VOLUME_RBD) {
            rc = read_string(source, "pool", "pool", &v->pool, err);
            if (rc == 0 && v->pool == NULL && (v->pool = strdup("rbd")) == NULL)
                rc = no_memory(source, err, "pool");
            if (rc == 0)
                rc = read_monitors(source, v, err);
        }
        break;
    }
    return rc;
}

/* ---- fields kcycle may not handle -------------------------------------------------------- */

/* A key present with a non-empty value (an empty list or map asks for nothing). */
static bool present(const struct tree *map, const char *key)
{
    const struct tree *t = map != NULL ? field(map, key) : NULL;
    return t != NULL && (t->type == TREE_SCALAR || t->count > 0);
}

/* Append ,"key":<subtree as JSON> to buffer (grown with realloc). 0 or -ENOMEM. */
static int append_json_member(char **buffer, size_t *length, const char *key,
                              const struct tree *value)
{
    char *json = tree_to_json(value);
    if (json == NULL)
        return -ENOMEM;
    size_t add = strlen(key) + strlen(json) + 5;
    char *grown = realloc(*buffer, *length + add + 2);
    if (grown == NULL) {
        free(json);
        return -ENOMEM;
    }
    *length += (size_t)snprintf(grown + *length, add + 2, "%s\"%s\":%s",
                                *length > 1 ? "," : "", key, json);
    *buffer = grown;
    free(json);
    return 0;
}

/* The pod-level placement constraints (topology spread, pod affinity and anti-affinity) kept
 * as kube JSON: the plugins that read them parse the wire format themselves, so the model
 * need not mirror label selectors and their many optional fields. */
static int read_pod_constraints(const struct tree *spec, struct pod *pod)
{
    const struct tree *affinity = field(spec, "affinity");
    const struct tree *parts[3] = {
        present(spec, "topologySpreadConstraints") ? field(spec, "topologySpreadConstraints")
                                                   : NULL,
        affinity != NULL && present(affinity, "podAffinity") ? field(affinity, "podAffinity")
                                                             : NULL,
        affinity != NULL && present(affinity, "podAntiAffinity")
            ? field(affinity, "podAntiAffinity")
            : NULL,
    };
    static const char *const keys[3] = {"topologySpreadConstraints", "podAffinity",
                                        "podAntiAffinity"};
    if (parts[0] == NULL && parts[1] == NULL && parts[2] == NULL)
        return 0;
    char *buffer = strdup("{");
    size_t length = 1;
    if (buffer == NULL)
        return -ENOMEM;
    for (int i = 0; i < 3; i++) {
        if (parts[i] == NULL)
            continue;
        int rc = append_json_member(&buffer, &length, keys[i], parts[i]);
        if (rc != 0) {
            free(buffer);
            return rc;
        }
    }
    buffer[length] = '}';
    buffer[length + 1] = '\0';
    free(pod->constraints_json);
    pod->constraints_json = buffer;
    return 0;
}

/* Fields kube-scheduler's default plugins read that the model does not carry: the pod records
 * that it uses them, so the runtime can refuse it when no enabled plugin handles them. */
static void read_pod_fields(const struct tree *spec, struct pod *pod)
{
    const struct tree *affinity = field(spec, "affinity");
    if (affinity != NULL && affinity->type == TREE_MAP) {
        if (present(affinity, "podAffinity"))
            pod->fields |= POD_FIELD_POD_AFFINITY;
        if (present(affinity, "podAntiAffinity"))
            pod->fields |= POD_FIELD_POD_ANTI_AFFINITY;
    }
    if (present(spec, "topologySpreadConstraints"))
        pod->fields |= POD_FIELD_TOPOLOGY_SPREAD;
    if (present(spec, "resourceClaims"))
        pod->fields |= POD_FIELD_RESOURCE_CLAIMS;
    const struct tree *resources = field(spec, "resources");
    if (resources != NULL && resources->type == TREE_MAP &&
        (present(resources, "requests") || present(resources, "limits")))
        pod->fields |= POD_FIELD_POD_RESOURCES;
}

static int read_volumes(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    const struct tree *list = field(spec, "volumes");
    if (list == NULL)
        return 0;
    int rc = alloc_list(list, "volumes", sizeof(*pod->volumes), (void **)&pod->volumes,
                        &pod->volume_count, err);
    for (uint32_t i = 0; rc == 0 && i < pod->volume_count; i++)
        rc = read_volume(list->items[i], &pod->volumes[i], err);
    return rc;
}

/* ---- pods -------------------------------------------------------------------------------- */

/* metadata.name: required and non-empty for pods and nodes alike. */
static int read_name(const struct tree *meta, char **out, struct kc_error *err)
{
    const struct tree *t = field(meta, "name");
    if (t == NULL)
        return tree_error(meta, err, -EINVAL, "name", "is required");
    int rc = read_string(meta, "name", "name", out, err);
    if (rc == 0 && (*out)[0] == '\0')
        rc = tree_error(t, err, -EINVAL, "name", "must not be empty");
    return rc;
}

/* metadata.ownerReferences: the one with controller: true (kube's GetControllerOf). Entries
 * that are not maps of strings are skipped: the field is the API server's, never the user's. */
static int read_pod_controller(const struct tree *meta, struct pod *pod)
{
    const struct tree *list = field(meta, "ownerReferences");
    for (uint32_t i = 0; list != NULL && list->type == TREE_SEQ && i < list->count; i++) {
        const struct tree *ref = list->items[i];
        const struct tree *controller = field(ref, "controller");
        const struct tree *api = field(ref, "apiVersion"), *kind = field(ref, "kind");
        const struct tree *name = field(ref, "name");
        bool is_controller = false;
        if (controller == NULL || tree_bool(controller, "controller", &is_controller, NULL) != 0 ||
            !is_controller || api == NULL || kind == NULL || name == NULL ||
            api->type != TREE_SCALAR || kind->type != TREE_SCALAR || name->type != TREE_SCALAR)
            continue;
        free(pod->controller_api_version);
        free(pod->controller_kind);
        free(pod->controller_name);
        pod->controller_api_version = strdup(api->scalar);
        pod->controller_kind = strdup(kind->scalar);
        pod->controller_name = strdup(name->scalar);
        if (pod->controller_api_version == NULL || pod->controller_kind == NULL ||
            pod->controller_name == NULL)
            return -ENOMEM;
        break;
    }
    return 0;
}

static int read_pod_metadata(const struct tree *root, struct pod *pod, struct kc_error *err)
{
    const struct tree *meta;
    int rc = require_map(root, "metadata", "metadata", &meta, err);
    if (rc == 0)
        rc = read_name(meta, &pod->name, err);
    if (rc == 0)
        rc = read_string(meta, "namespace", "namespace", &pod->namespace, err);
    if (rc == 0)
        rc = read_string(meta, "uid", "uid", &pod->uid, err);
    if (rc == 0)
        rc = read_kv_map(meta, "labels", "labels", &pod->labels, err);
    if (rc == 0)
        rc = read_kv_map(meta, "annotations", "annotations", &pod->annotations, err);
    bool present;
    if (rc == 0)
        rc = read_timestamp(meta, "creationTimestamp", "creationTimestamp", &present,
                            &pod->creation_ms, err);
    int64_t deleted_ms;
    if (rc == 0)
        rc = read_timestamp(meta, "deletionTimestamp", "deletionTimestamp", &pod->deleting,
                            &deleted_ms, err);
    if (rc == 0 && read_pod_controller(meta, pod) != 0)
        rc = kc_error_set(err, -ENOMEM, "out of memory");
    return rc;
}

static int read_priority(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    const struct tree *t = field(spec, "priority");
    return t == NULL ? 0 : read_int32(t, "priority", INT32_MIN, INT32_MAX, &pod->priority, err);
}

/* spec.preemptionPolicy: PreemptLowerPriority (the default) or Never. */
static int read_preemption_policy(const struct tree *spec, struct pod *pod, struct kc_error *err)
{
    const struct tree *t = field(spec, "preemptionPolicy");
    if (t == NULL)
        return 0;
    const char *s;
    int rc = tree_string(t, "preemptionPolicy", &s, err);
    if (rc < 0)
        return rc;
    if (strcmp(s, "Never") == 0 || strcmp(s, "PreemptLowerPriority") == 0) {
        pod->preempt_never = s[0] == 'N';
        return 0;
    }
    return tree_error(t, err, -EINVAL, "preemptionPolicy",
                      "unknown policy \"%s\" (PreemptLowerPriority or Never)", s);
}

/* status.nominatedNodeName and status.startTime: what preemption reads. */
static int read_preemption_status(const struct tree *status, struct pod *pod,
                                  struct kc_error *err)
{
    int rc = read_string(status, "nominatedNodeName", "nominatedNodeName",
                         &pod->nominated_node_name, err);
    if (rc == 0 && pod->nominated_node_name != NULL && pod->nominated_node_name[0] == '\0') {
        free(pod->nominated_node_name);
        pod->nominated_node_name = NULL;
    }
    bool present;
    if (rc == 0)
        rc = read_timestamp(status, "startTime", "startTime", &present, &pod->start_ms, err);
    return rc;
}

static int read_pod_spec(const struct tree *root, struct pod *pod, struct kc_error *err)
{
    const struct tree *spec;
    int rc = optional_map(root, "spec", "spec", &spec, err);
    if (rc < 0 || spec == NULL)
        return rc;
    rc = read_string(spec, "nodeName", "nodeName", &pod->node_name, err);
    if (rc == 0)
        rc = read_string(spec, "schedulerName", "schedulerName", &pod->scheduler_name, err);
    if (rc == 0)
        rc = read_priority(spec, pod, err);
    if (rc == 0)
        rc = read_preemption_policy(spec, pod, err);
    if (rc == 0)
        rc = read_kv_map(spec, "nodeSelector", "nodeSelector", &pod->node_selector, err);
    if (rc == 0)
        rc = read_affinity(spec, &pod->affinity, err);
    if (rc == 0)
        rc = read_tolerations(spec, pod, err);
    if (rc == 0)
        rc = read_gates(spec, pod, err);
    if (rc == 0)
        rc = read_containers(spec, false, &pod->containers, &pod->container_count, err);
    if (rc == 0)
        rc = read_containers(spec, true, &pod->init_containers, &pod->init_container_count, err);
    if (rc == 0)
        rc = read_res_field(spec, "overhead", "overhead", &pod->overhead, err);
    if (rc == 0)
        rc = read_host_ports(spec, pod, err);
    if (rc == 0)
        read_pod_fields(spec, pod);
    if (rc == 0)
        rc = read_pod_constraints(spec, pod);
    if (rc == 0)
        rc = read_volumes(spec, pod, err);
    if (rc == 0 && pod->node_name != NULL && pod->node_name[0] == '\0') {
        free(pod->node_name);
        pod->node_name = NULL;
    }
    return rc;
}

static int read_pod_status(const struct tree *root, struct pod *pod, struct kc_error *err)
{
    static const char *const phases[] = {
        [POD_PENDING] = "Pending", [POD_RUNNING] = "Running", [POD_SUCCEEDED] = "Succeeded",
        [POD_FAILED] = "Failed",   [POD_UNKNOWN] = "Unknown",
    };
    const struct tree *status, *phase;
    int rc = optional_map(root, "status", "status", &status, err);
    if (rc == 0 && status != NULL)
        rc = read_preemption_status(status, pod, err);
    if (rc < 0 || status == NULL || (phase = field(status, "phase")) == NULL)
        return rc;
    const char *s;
    rc = tree_string(phase, "phase", &s, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i <= POD_UNKNOWN; i++) {
        if (strcmp(s, phases[i]) == 0) {
            pod->phase = (enum pod_phase)i;
            return 0;
        }
    }
    return tree_error(phase, err, -EINVAL, "phase",
                      "unknown phase \"%s\" (Pending, Running, "
                      "Succeeded, Failed or Unknown)",
                      s);
}

int pod_from_tree(const struct tree *t, struct pod **out, struct kc_error *err)
{
    *out = NULL;
    int rc = expect(t, TREE_MAP, "pod", err);
    if (rc < 0)
        return rc;
    struct pod *pod = pod_new();
    if (pod == NULL)
        return no_memory(t, err, "pod");
    rc = read_pod_metadata(t, pod, err);
    if (rc == 0)
        rc = read_pod_spec(t, pod, err);
    if (rc == 0)
        rc = read_pod_status(t, pod, err);
    if (rc == 0 && (rc = pod_finish(pod)) < 0)
        rc = no_memory(t, err, "pod");
    if (rc < 0) {
        pod_free(pod);
        return rc;
    }
    *out = pod;
    return 0;
}

/* ---- nodes ------------------------------------------------------------------------------- */

static int read_node_metadata(const struct tree *root, struct node *node, struct kc_error *err)
{
    const struct tree *meta;
    int rc = require_map(root, "metadata", "metadata", &meta, err);
    if (rc == 0)
        rc = read_name(meta, &node->name, err);
    if (rc == 0)
        rc = read_string(meta, "uid", "uid", &node->uid, err);
    if (rc == 0)
        rc = read_kv_map(meta, "labels", "labels", &node->labels, err);
    if (rc == 0)
        rc = read_kv_map(meta, "annotations", "annotations", &node->annotations, err);
    if (rc == 0 && node->uid == NULL && (node->uid = strdup(node->name)) == NULL)
        rc = no_memory(meta, err, "uid");
    return rc;
}

static int read_node_spec(const struct tree *root, struct node *node, struct kc_error *err)
{
    const struct tree *spec;
    int rc = optional_map(root, "spec", "spec", &spec, err);
    if (rc < 0 || spec == NULL)
        return rc;
    rc = read_bool(spec, "unschedulable", "unschedulable", &node->unschedulable, err);
    const struct tree *list = field(spec, "taints");
    if (rc < 0 || list == NULL)
        return rc;
    rc = alloc_list(list, "taints", sizeof(*node->taints), (void **)&node->taints,
                    &node->taint_count, err);
    for (uint32_t i = 0; rc == 0 && i < node->taint_count; i++)
        rc = read_taint(list->items[i], &node->taints[i], err);
    return rc;
}

/* The kubelet always reports allocatable; capacity stands in for hand-written nodes. */
static int read_node_status(const struct tree *root, struct node *node, struct kc_error *err)
{
    const struct tree *status;
    int rc = optional_map(root, "status", "status", &status, err);
    if (rc < 0 || status == NULL)
        return rc;
    if (field(status, "allocatable") != NULL)
        return read_res_field(status, "allocatable", "allocatable", &node->allocatable, err);
    return read_res_field(status, "capacity", "capacity", &node->allocatable, err);
}

int node_from_tree(const struct tree *t, struct node **out, struct kc_error *err)
{
    *out = NULL;
    int rc = expect(t, TREE_MAP, "node", err);
    if (rc < 0)
        return rc;
    struct node *node = node_new();
    if (node == NULL)
        return no_memory(t, err, "node");
    rc = read_node_metadata(t, node, err);
    if (rc == 0)
        rc = read_node_spec(t, node, err);
    if (rc == 0)
        rc = read_node_status(t, node, err);
    if (rc < 0) {
        node_free(node);
        return rc;
    }
    *out = node;
    return 0;
}

/* ---- predicates -------------------------------------------------------------------------- */

static bool value_in(const struct selector_requirement *req, const char *value)
{
    for (uint32_t i = 0; i < req->value_count; i++)
        if (strcmp(req->values[i], value) == 0)
            return true;
    return false;
}

/* Gt/Lt compare integers; a label that is not one never matches (labels.Requirement). */
static bool compare_int(const struct selector_requirement *req, const char *value)
{
    int64_t have, want;
    if (value == NULL || req->value_count != 1 || !parse_int64(value, &have) ||
        !parse_int64(req->values[0], &want))
        return false;
    return req->op == SELECTOR_GT ? have > want : have < want;
}

static bool requirement_matches(const struct selector_requirement *req, const char *value)
{
    switch (req->op) {
    case SELECTOR_IN: return value != NULL && value_in(req, value);
    case SELECTOR_NOT_IN: return value == NULL || !value_in(req, value);
    case SELECTOR_EXISTS: return value != NULL;
    case SELECTOR_DOES_NOT_EXIST: return value == NULL;
    case SELECTOR_GT:
    case SELECTOR_LT: return compare_int(req, value);
    }
    return false;
}

/* A term with neither expressions nor fields matches nothing (nodeaffinity.nodeSelectorTerm). */
static bool term_matches(const struct node_selector_term *term, const struct node *node)
{
    if (term->expression_count == 0 && term->field_count == 0)
        return false;
    for (uint32_t i = 0; i < term->expression_count; i++) {
        const struct selector_requirement *req = &term->expressions[i];
        if (!requirement_matches(req, kv_list_get(&node->labels, req->key)))
            return false;
    }
    for (uint32_t i = 0; i < term->field_count; i++) {
        const struct selector_requirement *req = &term->fields[i];
        const char *value = strcmp(req->key, "metadata.name") == 0 ? node->name : NULL;
        if (!requirement_matches(req, value))
            return false;
    }
    return true;
}

bool pod_matches_node_selector_and_affinity(const struct pod *pod, const struct node *node)
{
    for (uint32_t i = 0; i < pod->node_selector.count; i++) {
        const struct kv *want = &pod->node_selector.items[i];
        const char *have = kv_list_get(&node->labels, want->key);
        if (have == NULL || strcmp(have, want->value) != 0)
            return false;
    }
    if (!pod->affinity.has_required)
        return true;
    for (uint32_t i = 0; i < pod->affinity.required_count; i++)
        if (term_matches(&pod->affinity.required[i], node))
            return true;
    return false;
}

int64_t pod_preferred_affinity_weight(const struct pod *pod, const struct node *node)
{
    int64_t sum = 0;
    for (uint32_t i = 0; i < pod->affinity.preferred_count; i++) {
        const struct preferred_term *p = &pod->affinity.preferred[i];
        if (p->weight != 0 && term_matches(&p->term, node))
            sum += p->weight;
    }
    return sum;
}

/* v1.Toleration.ToleratesTaint. */
bool toleration_tolerates(const struct toleration *tol, const char *key, const char *value,
                          kc_taint_effect effect)
{
    const char *tol_key = tol->key != NULL ? tol->key : "";
    if (tol->effect != 0 && tol->effect != effect)
        return false;
    if (tol_key[0] != '\0' && strcmp(tol_key, key != NULL ? key : "") != 0)
        return false;
    if (tol->op == TOLERATION_EXISTS)
        return true;
    return strcmp(tol->value != NULL ? tol->value : "", value != NULL ? value : "") == 0;
}

bool pod_tolerates(const struct pod *pod, const char *key, const char *value,
                   kc_taint_effect effect)
{
    for (uint32_t i = 0; i < pod->toleration_count; i++)
        if (toleration_tolerates(&pod->tolerations[i], key, value, effect))
            return true;
    return false;
}

/* ---- node names of the required affinity ------------------------------------------------- */

/* The name one matchFields requirement pins the node to, or NULL when it is not
 * "metadata.name In" (the API server allows exactly one value there). */
static const char *name_in(const struct selector_requirement *req)
{
    if (req->op != SELECTOR_IN || strcmp(req->key, "metadata.name") != 0 || req->value_count == 0)
        return NULL;
    return req->values[0];
}

/* Whether every "metadata.name In" requirement of term admits name; *restricts says whether
 * the term has one at all. */
static bool term_admits_name(const struct node_selector_term *term, const char *name,
                             bool *restricts)
{
    *restricts = false;
    for (uint32_t i = 0; i < term->field_count; i++) {
        const struct selector_requirement *req = &term->fields[i];
        if (name_in(req) == NULL)
            continue;
        *restricts = true;
        if (!value_in(req, name))
            return false;
    }
    return true;
}

int32_t pod_affinity_node_names(const struct pod *pod, const char **names, uint32_t capacity)
{
    const struct node_affinity *a = &pod->affinity;
    if (!a->has_required || a->required_count == 0)
        return -1;
    bool restricts;
    for (uint32_t t = 0; t < a->required_count; t++) {
        term_admits_name(&a->required[t], "", &restricts);
        if (!restricts) /* terms are ORed: one term open to every node opens them all */
            return -1;
    }
    int32_t count = 0;
    for (uint32_t t = 0; t < a->required_count; t++) {
        const struct node_selector_term *term = &a->required[t];
        for (uint32_t i = 0; i < term->field_count; i++) {
            const char *name = name_in(&term->fields[i]);
            if (name == NULL || !term_admits_name(term, name, &restricts))
                continue;
            /* distinct: count a name only where it first appears (earlier field, earlier term) */
            bool seen = false;
            for (uint32_t j = 0; j < i && !seen; j++)
                seen = name_in(&term->fields[j]) != NULL &&
                       strcmp(name_in(&term->fields[j]), name) == 0;
            for (uint32_t u = 0; u < t && !seen; u++)
                seen = term_admits_name(&a->required[u], name, &restricts);
            if (seen)
                continue;
            if ((uint32_t)count < capacity)
                names[count] = name;
            count++;
        }
    }
    return count;
}
