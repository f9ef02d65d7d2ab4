/* coscheduling: all-or-nothing pod groups, compatible with the PodGroup objects of
 * kubernetes-sigs/scheduler-plugins (scheduling.x-k8s.io/v1alpha1, label
 * scheduling.x-k8s.io/pod-group). It declares each pod's group to the runtime (group_of), which
 * places a group's quorum in one group cycle and commits or rolls back all of it; the permit
 * path (members held in Permit until the group is complete) stays for groups that choose it and
 * for members that arrive after their group runs. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "coscheduling"
#define API_GROUP "scheduling.x-k8s.io/"
#define GROUP_CYCLE_ANNOTATION "kcycle.io/group-cycle"
#define EINVAL_CODE (-22)
#define ENOMEM_CODE (-12)
#define KEY_MAX 512

/* A group as this plugin knows it: the PodGroup object (when one exists) and counts of the
 * pods that carry its label, kept from cluster events. */
struct pod_group {
    char *key;   /* "namespace/name" */
    bool object; /* a PodGroup object exists */
    uint32_t min_member;
    int64_t timeout_ms;  /* spec.scheduleTimeoutSeconds, 0 when unset */
    int64_t creation_ms; /* metadata.creationTimestamp, 0 when unknown */
    int group_cycle;     /* the kcycle.io/group-cycle annotation: 1, 0, or -1 when absent */
    bool has_min_resources;
    int64_t min_resources[KC_RESOURCE_MAX];
    uint32_t pods;   /* pods with the label: pending, reserved or on a node */
    uint32_t placed; /* of those, reserved (assumed) or on a node */
};

/* A pod carrying a group label, by uid: what it was counted as. */
struct tracked_pod {
    char *uid;
    struct pod_group *group;
    bool placed;
    /* its current attempt is part of a runtime group cycle: the runtime binds or releases it with
     * its group, this plugin never allows or rejects it */
    bool group_cycle;
};

/* Open-addressing string map; keys belong to the values. */
struct map {
    struct map_slot {
        const char *key;
        void *value;
    } * slots;
    uint32_t capacity, count, used; /* used: live + tombstones */
};

static char tombstone;

struct coscheduling {
    int64_t permit_wait_ms; /* permitWaitingTimeSeconds */
    int64_t backoff_ms;     /* podGroupBackoffSeconds */
    bool group_cycle;       /* groupCycle: the default for groups without the annotation */
    struct map groups;      /* key -> struct pod_group */
    struct map pods;        /* uid -> struct tracked_pod */
};

/* ---- a small string map ----------------------------------------------------------------- */

static uint64_t hash_text(const char *text)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *text != '\0'; text++)
        h = (h ^ (unsigned char)*text) * 1099511628211ull;
    return h;
}

static struct map_slot *map_find(const struct map *m, const char *key, bool for_insert)
{
    if (m->capacity == 0)
        return NULL;
    uint32_t mask = m->capacity - 1, i = (uint32_t)hash_text(key) & mask;
    struct map_slot *free_slot = NULL;
    for (;; i = (i + 1) & mask) {
        struct map_slot *slot = &m->slots[i];
        if (slot->key == NULL)
            return for_insert ? (free_slot != NULL ? free_slot : slot) : NULL;
        if (slot->key == &tombstone) {
            if (free_slot == NULL)
                free_slot = slot;
        } else if (strcmp(slot->key, key) == 0) {
            return slot;
        }
    }
}

static void *map_get(const struct map *m, const char *key)
{
    struct map_slot *slot = map_find(m, key, false);
    return slot != NULL ? slot->value : NULL;
}

static int map_grow(struct map *m)
{
    uint32_t capacity = m->capacity == 0 ? 64 : m->capacity * 2;
    if (m->count * 2 < m->capacity)
        capacity = m->capacity; /* mostly tombstones: rebuild at the same size */
    struct map_slot *slots = calloc(capacity, sizeof(*slots));
    if (slots == NULL)
        return ENOMEM_CODE;
    struct map old = *m;
    m->slots = slots;
    m->capacity = capacity;
    m->count = m->used = 0;
    for (uint32_t i = 0; i < old.capacity; i++) {
        if (old.slots[i].key == NULL || old.slots[i].key == &tombstone)
            continue;
        struct map_slot *slot = map_find(m, old.slots[i].key, true);
        *slot = old.slots[i];
        m->count++;
        m->used++;
    }
    free(old.slots);
    return 0;
}

/* key must be the value's own string. */
static int map_put(struct map *m, const char *key, void *value)
{
    if ((m->used + 1) * 4 >= m->capacity * 3 && map_grow(m) != 0)
        return ENOMEM_CODE;
    struct map_slot *slot = map_find(m, key, true);
    if (slot->key == NULL || slot->key == &tombstone) {
        m->used += slot->key == NULL;
        m->count++;
    }
    slot->key = key;
    slot->value = value;
    return 0;
}

static void map_remove(struct map *m, const char *key)
{
    struct map_slot *slot = map_find(m, key, false);
    if (slot == NULL)
        return;
    slot->key = &tombstone;
    slot->value = NULL;
    m->count--;
}

/* ---- parsing helpers -------------------------------------------------------------------- */

static void log_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void log_error(const char *format, ...)
{
    char message[640];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof(message), format, ap);
    va_end(ap);
    kc_log(KC_LOG_ERROR, PLUGIN_NAME, message);
}

/* A Kubernetes quantity in the resource's base unit, rounded up (cpu: milli-cores). Only what a
 * PodGroup's minResources holds needs to be read: <digits>[.<digits>][suffix]. */
static bool parse_quantity(const char *text, bool milli, int64_t *out)
{
    static const struct {
        const char *suffix;
        int exp10;
        int exp2;
    } suffixes[] = {
        {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
        {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
        {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},  {"", 0, 0},
    };
    __int128 mantissa = 0;
    int exp10 = milli ? 3 : 0, digits = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        if (mantissa < (__int128)1 << 100)
            mantissa = mantissa * 10 + (*p - '0');
        else
            exp10++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (mantissa < (__int128)1 << 100) {
                mantissa = mantissa * 10 + (*p - '0');
                exp10--;
            }
    if (digits == 0)
        return false;
    int exp2 = 0;
    size_t i = 0;
    for (; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strcmp(p, suffixes[i].suffix) == 0)
            break;
    if (i == sizeof(suffixes) / sizeof(suffixes[0])) {
        char *end;
        long e = (*p == 'e' || *p == 'E') ? strtol(p + 1, &end, 10) : 0;
        if ((*p != 'e' && *p != 'E') || end == p + 1 || *end != '\0' || e < -30 || e > 30)
            return false;
        exp10 += (int)e;
    } else {
        exp10 += suffixes[i].exp10;
        exp2 = suffixes[i].exp2;
    }
    for (; exp2 > 0 && mantissa < (__int128)1 << 100; exp2--)
        mantissa *= 2;
    for (; exp10 > 0 && mantissa < (__int128)1 << 100; exp10--)
        mantissa *= 10;
    if (exp2 > 0 || exp10 > 0 || mantissa > INT64_MAX) {
        *out = INT64_MAX;
        return true;
    }
    for (; exp10 < 0; exp10++)
        mantissa = (mantissa + 9) / 10; /* non-zero values round up to the unit */
    *out = (int64_t)mantissa;
    return true;
}

/* RFC 3339 (2024-05-01T10:00:00Z, fractions and offsets allowed) to unix ms; 0 when absent or
 * not understood (the group then sorts by its pods' creation time). */
static int64_t parse_time(const char *text)
{
    struct tm tm = {0};
    int year, month, day, hour, minute, second, used = 0;
    if (text == NULL || sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour,
                               &minute, &second, &used) != 6)
        return 0;
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    int64_t ms = (int64_t)timegm(&tm) * 1000;
    const char *p = text + used;
    if (*p == '.') {
        int64_t scale = 100;
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            ms += (*p - '0') * scale;
    }
    int oh, om;
    if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &oh, &om) == 2)
        ms -= (*p == '+' ? 1 : -1) * ((int64_t)oh * 3600 + om * 60) * 1000;
    return ms;
}

static int64_t json_int_or(const json_t *object, const char *key, int64_t fallback)
{
    const json_t *value = json_object_get(object, key);
    return json_is_integer(value) ? json_integer_value(value) : fallback;
}

/* ---- groups and pods ---------------------------------------------------------------------- */

static struct pod_group *group_get(struct coscheduling *c, const char *namespace_name,
                                   const char *name, bool create)
{
    char key[KEY_MAX];
    if ((size_t)snprintf(key, sizeof(key), "%s/%s", namespace_name != NULL ? namespace_name : "",
                         name) >= sizeof(key))
        return NULL;
    struct pod_group *g = map_get(&c->groups, key);
    if (g != NULL || !create)
        return g;
    g = calloc(1, sizeof(*g));
    if (g == NULL || (g->key = strdup(key)) == NULL || map_put(&c->groups, g->key, g) != 0) {
        if (g != NULL)
            free(g->key);
        free(g);
        return NULL;
    }
    g->min_member = 1;
    g->group_cycle = -1;
    return g;
}

/* Forget a group nothing refers to any more. */
static void group_drop_if_unused(struct coscheduling *c, struct pod_group *g)
{
    if (g->object || g->pods > 0)
        return;
    map_remove(&c->groups, g->key);
    free(g->key);
    free(g);
}

/* The group of a pod by its label, or NULL. */
static struct pod_group *group_of_pod(struct coscheduling *c, const kc_pod *pod, bool create)
{
    const char *name = kc_pod_group(pod);
    return name != NULL ? group_get(c, kc_pod_namespace(pod), name, create) : NULL;
}

static void untrack(struct coscheduling *c, const char *uid)
{
    struct tracked_pod *t = map_get(&c->pods, uid);
    if (t == NULL)
        return;
    t->group->pods--;
    t->group->placed -= t->placed;
    map_remove(&c->pods, t->uid);
    group_drop_if_unused(c, t->group);
    free(t->uid);
    free(t);
}

/* Count a pod with a group label as pending or placed (replacing what it counted as). */
static void track(struct coscheduling *c, const kc_pod *pod, bool placed)
{
    const char *uid = kc_pod_uid(pod);
    struct pod_group *g = group_of_pod(c, pod, true);
    struct tracked_pod *t = map_get(&c->pods, uid);
    if (t != NULL && t->group == g) {
        g->placed += (uint32_t)placed - (uint32_t)t->placed;
        t->placed = placed;
        t->group_cycle = false; /* a new attempt (assume) or its end (forget, bound) */
        return;
    }
    untrack(c, uid);
    if (g == NULL)
        return;
    t = calloc(1, sizeof(*t));
    if (t == NULL || (t->uid = strdup(uid)) == NULL || map_put(&c->pods, t->uid, t) != 0) {
        if (t != NULL)
            free(t->uid);
        free(t);
        group_drop_if_unused(c, g);
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory counting a pod group's pods");
        return;
    }
    t->group = g;
    t->placed = placed;
    g->pods++;
    g->placed += placed;
}

static void read_min_resources(struct pod_group *g, const json_t *spec)
{
    const json_t *resources = json_object_get(spec, "minResources");
    const char *name;
    const json_t *value;
    memset(g->min_resources, 0, sizeof(g->min_resources));
    g->has_min_resources = false;
    json_object_foreach((json_t *)resources, name, value)
    {
        char text[64];
        if (json_is_string(value))
            snprintf(text, sizeof(text), "%s", json_string_value(value));
        else if (json_is_integer(value))
            snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(value));
        else
            text[0] = '\0';
        kc_resource id = kc_resource_id(name);
        int64_t amount;
        if (id < 0 || id >= KC_RESOURCE_MAX ||
            !parse_quantity(text, id == KC_RESOURCE_CPU, &amount)) {
            log_error("PodGroup %s: minResources.%s is not a quantity; ignored", g->key, name);
            continue;
        }
        g->min_resources[id] = amount;
        g->has_min_resources = true;
    }
}

/* A PodGroup was added or updated. Objects of other API groups (Volcano's PodGroup) are not
 * ours. */
static void podgroup_put(struct coscheduling *c, const kc_event *ev)
{
    json_error_t error;
    json_t *root = json_loads(ev->object_json != NULL ? ev->object_json : "{}", 0, &error);
    const char *api = json_string_value(json_object_get(root, "apiVersion"));
    if (root == NULL || (api != NULL && strncmp(api, API_GROUP, strlen(API_GROUP)) != 0)) {
        json_decref(root);
        return;
    }
    struct pod_group *g = group_get(
        c, ev->object_namespace != NULL ? ev->object_namespace : "default", ev->object_name, true);
    if (g == NULL) {
        json_decref(root);
        return;
    }
    const json_t *metadata = json_object_get(root, "metadata");
    const json_t *spec = json_object_get(root, "spec");
    int64_t min_member = json_int_or(spec, "minMember", 1);
    int64_t timeout_s = json_int_or(spec, "scheduleTimeoutSeconds", 0);
    g->object = true;
    g->min_member =
        min_member > 0 ? (uint32_t)(min_member < UINT32_MAX ? min_member : UINT32_MAX) : 1;
    g->timeout_ms = timeout_s > 0 ? timeout_s * 1000 : 0;
    g->creation_ms = parse_time(json_string_value(json_object_get(metadata, "creationTimestamp")));
    const char *mode = json_string_value(
        json_object_get(json_object_get(metadata, "annotations"), GROUP_CYCLE_ANNOTATION));
    g->group_cycle = mode == NULL ? -1 : strcmp(mode, "false") != 0;
    read_min_resources(g, spec);
    json_decref(root);
}

static void podgroup_delete(struct coscheduling *c, const kc_event *ev)
{
    struct pod_group *g = group_get(
        c, ev->object_namespace != NULL ? ev->object_namespace : "default", ev->object_name, false);
    if (g == NULL)
        return;
    g->object = false;
    group_drop_if_unused(c, g);
}

/* ---- args, init ---------------------------------------------------------------------------- */

static int parse_args(struct coscheduling *c, const char *args_json)
{
    static const char *const known[] = {"permitWaitingTimeSeconds", "podGroupBackoffSeconds",
                                        "groupCycle", NULL};
    json_error_t error;
    json_t *args = json_loads(args_json != NULL ? args_json : "{}", 0, &error);
    if (!json_is_object(args)) {
        json_decref(args);
        log_error("args: expected a JSON object: %s", error.text);
        return EINVAL_CODE;
    }
    int rc = 0;
    const char *key;
    json_t *value;
    json_object_foreach(args, key, value)
    {
        bool found = false;
        for (size_t i = 0; known[i] != NULL; i++)
            found = found || strcmp(key, known[i]) == 0;
        bool seconds = strcmp(key, "groupCycle") != 0;
        if (!found)
            log_error("args: unknown key \"%s\"; known: permitWaitingTimeSeconds, "
                      "podGroupBackoffSeconds, groupCycle",
                      key);
        else if (seconds && (!json_is_integer(value) || json_integer_value(value) < 0))
            log_error("args: %s must be a non-negative integer (seconds)", key);
        else if (!seconds && !json_is_boolean(value))
            log_error("args: %s must be true or false", key);
        else
            continue;
        rc = EINVAL_CODE;
    }
    c->permit_wait_ms = json_int_or(args, "permitWaitingTimeSeconds", 60) * 1000;
    c->backoff_ms = json_int_or(args, "podGroupBackoffSeconds", 0) * 1000;
    const json_t *group_cycle = json_object_get(args, "groupCycle");
    c->group_cycle = group_cycle == NULL || json_is_true(group_cycle);
    json_decref(args);
    return rc;
}

static void coscheduling_fini(void *self)
{
    struct coscheduling *c = self;
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->pods.capacity; i++) {
        struct tracked_pod *t = c->pods.slots[i].value;
        if (t != NULL) {
            free(t->uid);
            free(t);
        }
    }
    for (uint32_t i = 0; i < c->groups.capacity; i++) {
        struct pod_group *g = c->groups.slots[i].value;
        if (g != NULL) {
            free(g->key);
            free(g);
        }
    }
    free(c->pods.slots);
    free(c->groups.slots);
    free(c);
}

static int coscheduling_init(const kc_host_api *host, const char *args_json, void **self)
{
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    struct coscheduling *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return ENOMEM_CODE;
    rc = parse_args(c, args_json);
    if (rc != 0) {
        coscheduling_fini(c);
        return rc;
    }
    *self = c;
    return 0;
}

/* A member that failed may fit once the PodGroup changes, nodes change, or room frees up. */
static uint32_t coscheduling_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_OBJECT_ADD) | KC_EVENT_MASK(KC_EVENT_OBJECT_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_DELETE) | KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

/* ---- QueueSort ------------------------------------------------------------------------------ */

static int compare_int64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int compare_text(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "");
}

/* Priority, then the group's creation time (a pod's own for pods outside a group), then the
 * group's name (the pod's): the members of a group stay together in the queue. */
static int coscheduling_queue_less(void *self, const kc_pod *a, const kc_pod *b)
{
    struct coscheduling *c = self;
    int order = compare_int64(kc_pod_priority(b), kc_pod_priority(a));
    if (order != 0)
        return order < 0;
    const struct pod_group *ga = group_of_pod(c, a, false), *gb = group_of_pod(c, b, false);
    int64_t created_a = ga != NULL && ga->creation_ms > 0 ? ga->creation_ms : kc_pod_creation_ms(a);
    int64_t created_b = gb != NULL && gb->creation_ms > 0 ? gb->creation_ms : kc_pod_creation_ms(b);
    order = compare_int64(created_a, created_b);
    if (order == 0)
        order = compare_text(kc_pod_namespace(a), kc_pod_namespace(b));
    if (order == 0)
        order = compare_text(ga != NULL ? kc_pod_group(a) : kc_pod_name(a),
                             gb != NULL ? kc_pod_group(b) : kc_pod_name(b));
    if (order == 0)
        order = compare_int64(kc_pod_enqueue_ms(a), kc_pod_enqueue_ms(b));
    if (order == 0)
        order = compare_text(kc_pod_name(a), kc_pod_name(b));
    return order < 0;
}

/* ---- the group a pod belongs to ------------------------------------------------------------- */

static int64_t timeout_of(const struct coscheduling *c, const struct pod_group *g)
{
    return g->timeout_ms > 0 ? g->timeout_ms : c->permit_wait_ms;
}

static kc_status coscheduling_group_of(void *self, const kc_pod *pod, kc_group_info *out)
{
    struct coscheduling *c = self;
    const struct pod_group *g = group_of_pod(c, pod, false);
    if (g == NULL || !g->object)
        return KC_SKIP; /* PreFilter says why a labelled pod without its PodGroup waits */
    kc_group_info info = {
        .struct_size = sizeof(info),
        .flags = (g->group_cycle >= 0 ? g->group_cycle : c->group_cycle) ? KC_GROUP_CYCLE : 0,
        .namespace_name = kc_pod_namespace(pod),
        .name = kc_pod_group(pod),
        .min_member = g->min_member,
        .schedule_timeout_ms = timeout_of(c, g),
        .backoff_ms = c->backoff_ms,
        .creation_ms = g->creation_ms,
    };
    uint32_t size = out->struct_size < sizeof(info) ? out->struct_size : sizeof(info);
    info.struct_size = out->struct_size;
    memcpy(out, &info, size);
    return KC_SUCCESS;
}

/* ---- PreFilter: the PodGroup exists, and its minResources fit the cluster's free room ---- */

/* The part of minResources (plus one pod slot per member) that the free room of every node
 * together cannot hold, written to gap; false when it all fits. */
static bool resource_gap(const struct pod_group *g, char *gap, size_t size)
{
    int64_t want[KC_RESOURCE_MAX];
    memcpy(want, g->min_resources, sizeof(want));
    want[KC_RESOURCE_PODS] = g->min_member;
    uint32_t count = kc_node_count();
    for (uint32_t i = 0; i < count; i++) {
        const kc_node *node = kc_node_at(i);
        for (kc_resource id = 0; id < KC_RESOURCE_MAX; id++) {
            if (want[id] <= 0)
                continue;
            int64_t used = id == KC_RESOURCE_PODS ? (int64_t)kc_node_pod_count(node)
                                                  : kc_node_requested(node, id);
            int64_t free_room = kc_node_allocatable(node, id) - used;
            if (free_room > 0)
                want[id] -= free_room;
        }
    }
    size_t used = 0;
    gap[0] = '\0';
    for (kc_resource id = 0; id < KC_RESOURCE_MAX && used < size; id++)
        if (want[id] > 0)
            used += (size_t)snprintf(gap + used, size - used, "%s%s short by %lld%s",
                                     used > 0 ? ", " : "", kc_resource_name(id),
                                     (long long)want[id], id == KC_RESOURCE_CPU ? "m" : "");
    return gap[0] != '\0';
}

static kc_status reject(kc_cycle *cycle, kc_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static kc_status reject(kc_cycle *cycle, kc_status status, const char *format, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, format);
    vsnprintf(reason, sizeof(reason), format, ap);
    va_end(ap);
    kc_cycle_reject(cycle, reason);
    return status;
}

static kc_status coscheduling_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct coscheduling *c = self;
    if (kc_pod_group(pod) == NULL)
        return KC_SKIP;
    const struct pod_group *g = group_of_pod(c, pod, false);
    if (g == NULL || !g->object)
        return reject(cycle, KC_UNRESOLVABLE, "pod group %s/%s not found", kc_pod_namespace(pod),
                      kc_pod_group(pod));
    kc_group_cycle group = {.struct_size = sizeof(group)};
    bool in_group_cycle = kc_cycle_group(cycle, &group) != 0;
    if (g->placed >= g->min_member || (in_group_cycle && group.index > 0))
        return KC_SUCCESS; /* the group runs, or member 0 of this group cycle checked it */
    if (!in_group_cycle && g->pods < g->min_member)
        return reject(cycle, KC_UNRESOLVABLE,
                      "pod group %s: %u pods exist, fewer than minMember %u", g->key, g->pods,
                      g->min_member);
    char gap[512];
    if (g->has_min_resources && g->placed == 0 && resource_gap(g, gap, sizeof(gap)))
        return reject(cycle, KC_UNSCHEDULABLE,
                      "pod group %s: minResources do not fit the free room of the cluster (%s)",
                      g->key, gap);
    return KC_SUCCESS;
}

/* ---- the permit path: waiting members, PostFilter and Unreserve ---------------------------- */

static bool same_group(const kc_pod *a, const kc_pod *b)
{
    const char *ga = kc_pod_group(a), *gb = kc_pod_group(b);
    return ga != NULL && gb != NULL && strcmp(ga, gb) == 0 &&
           compare_text(kc_pod_namespace(a), kc_pod_namespace(b)) == 0;
}

/* Allow (or reject, with message) every waiting sibling of pod, except those a group cycle
 * placed: the runtime holds them and binds or releases them with their group. */
static void settle_siblings(const struct coscheduling *c, const kc_pod *pod, const char *message)
{
    for (uint32_t i = kc_waiting_pod_count(); i-- > 0;) {
        kc_waiting_pod *w = kc_waiting_pod_at(i);
        if (w == NULL || !same_group(kc_waiting_pod_pod(w), pod))
            continue;
        const struct tracked_pod *t = map_get(&c->pods, kc_pod_uid(kc_waiting_pod_pod(w)));
        if (t != NULL && t->group_cycle)
            continue;
        if (message == NULL)
            kc_waiting_pod_allow(w, PLUGIN_NAME);
        else
            kc_waiting_pod_reject(w, PLUGIN_NAME, message);
    }
}

static void reject_siblings(const struct coscheduling *c, const struct pod_group *g,
                            const kc_pod *pod, const char *why)
{
    char message[640];
    snprintf(message, sizeof(message), "pod group %s: member %s %s; the group is released", g->key,
             kc_pod_name(pod), why);
    settle_siblings(c, pod, message);
}

/* A member fit nowhere: its waiting siblings would hold their nodes for nothing. */
static kc_status coscheduling_post_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct coscheduling *c = self;
    const struct pod_group *g = group_of_pod(c, pod, false);
    kc_group_cycle group = {.struct_size = sizeof(group)};
    if (g != NULL && g->object && g->placed < g->min_member && !kc_cycle_group(cycle, &group))
        reject_siblings(c, g, pod, "fits no node");
    return KC_UNSCHEDULABLE;
}

static kc_status coscheduling_permit(void *self, kc_cycle *cycle, const kc_pod *pod,
                                     const kc_node *node, uint32_t *timeout_ms)
{
    struct coscheduling *c = self;
    (void)node;
    const struct pod_group *g = group_of_pod(c, pod, false);
    kc_group_cycle group = {.struct_size = sizeof(group)};
    if (g == NULL || !g->object)
        return KC_SUCCESS; /* not a member */
    if (kc_cycle_group(cycle, &group)) {
        /* the runtime commits the whole group; the pod is assumed already, so tracked */
        struct tracked_pod *t = map_get(&c->pods, kc_pod_uid(pod));
        if (t != NULL)
            t->group_cycle = true;
        return KC_SUCCESS;
    }
    /* the pod is assumed already: placed counts it */
    if (g->placed >= g->min_member) {
        settle_siblings(c, pod, NULL);
        return KC_SUCCESS;
    }
    int64_t wait = timeout_of(c, g);
    *timeout_ms = wait > UINT32_MAX ? UINT32_MAX : (uint32_t)wait;
    return KC_WAIT;
}

/* A member's reservation is undone while its group is incomplete: release the others, as
 * scheduler-plugins does. In a group cycle the runtime rolls the whole group back itself. */
static void coscheduling_unreserve(void *self, kc_cycle *cycle, const kc_pod *pod,
                                   const kc_node *node)
{
    struct coscheduling *c = self;
    (void)node;
    const struct pod_group *g = group_of_pod(c, pod, false);
    kc_group_cycle group = {.struct_size = sizeof(group)};
    /* placed still counts this pod: without it the group is short */
    if (g != NULL && g->object && g->placed <= g->min_member && !kc_cycle_group(cycle, &group))
        reject_siblings(c, g, pod, "was rejected");
}

/* ---- events ---------------------------------------------------------------------------------- */

static void coscheduling_on_event(void *self, const kc_event *ev)
{
    struct coscheduling *c = self;
    switch (ev->type) {
    case KC_EVENT_POD_ADD:
    case KC_EVENT_POD_UPDATE:
        if (kc_pod_group(ev->pod) != NULL || map_get(&c->pods, kc_pod_uid(ev->pod)) != NULL)
            track(c, ev->pod, kc_pod_node_name(ev->pod) != NULL);
        break;
    case KC_EVENT_POD_ASSUME:
    case KC_EVENT_POD_FORGET:
        if (kc_pod_group(ev->pod) != NULL)
            track(c, ev->pod, ev->type == KC_EVENT_POD_ASSUME);
        break;
    case KC_EVENT_POD_DELETE: untrack(c, kc_pod_uid(ev->pod)); break;
    case KC_EVENT_OBJECT_ADD:
    case KC_EVENT_OBJECT_UPDATE:
        if (ev->object_kind != NULL && strcmp(ev->object_kind, "PodGroup") == 0)
            podgroup_put(c, ev);
        break;
    case KC_EVENT_OBJECT_DELETE:
        if (ev->object_kind != NULL && strcmp(ev->object_kind, "PodGroup") == 0)
            podgroup_delete(c, ev);
        break;
    default: break;
    }
}

static const kc_plugin_ops coscheduling_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = coscheduling_init,
    .fini = coscheduling_fini,
    .requeue_events = coscheduling_requeue_events,
    .queue_less = coscheduling_queue_less,
    .pre_filter = coscheduling_pre_filter,
    .post_filter = coscheduling_post_filter,
    .permit = coscheduling_permit,
    .unreserve = coscheduling_unreserve,
    .on_event = coscheduling_on_event,
    .group_of = coscheduling_group_of,
};

static const kc_plugin_descriptor coscheduling_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &coscheduling_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    /* group_of needs a 1.1 host; an older one is refused by the loader (plugin minor 1) */
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &coscheduling_descriptor;
}
