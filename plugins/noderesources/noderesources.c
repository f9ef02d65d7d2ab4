/* noderesources: kube-scheduler's NodeResourcesFit (Filter plus LeastAllocated, MostAllocated or
 * RequestedToCapacityRatio scoring) and NodeResourcesBalancedAllocation in one plugin. PreFilter
 * reads the pod's requests once into cycle state; Filter and Score then only do integer work per
 * node. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <kcycle/kcycle.h>

#include "attempt_memo.h"

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "noderesources"
#define STATE_KEY "noderesources/prefilter"
#define MAX_SCORE 100
#define MAX_WEIGHT 100
#define EINVAL_CODE (-22)
#define ENOMEM_CODE (-12)

/* kube-scheduler's defaults for a pod that requests no cpu or memory, so that such pods
 * still spread (schedutil.DefaultMilliCPURequest, DefaultMemoryRequest). */
#define DEFAULT_MILLI_CPU_REQUEST 100
#define DEFAULT_MEMORY_REQUEST (200 * 1024 * 1024)

#define REASON_TOO_MANY_PODS "Too many pods"
#define REASON_PREFIX "Insufficient "

enum strategy {
    STRATEGY_LEAST_ALLOCATED,
    STRATEGY_MOST_ALLOCATED,
    STRATEGY_REQUESTED_TO_CAPACITY_RATIO
};

/* RequestedToCapacityRatio's shape: utilization 0..100 strictly increasing, so at most 101
 * points; scores are given 0..10 (kube's MaxCustomPriorityScore) and kept scaled to 0..100. */
#define MAX_UTILIZATION 100
#define MAX_SHAPE_POINTS (MAX_UTILIZATION + 1)
#define MAX_CUSTOM_SCORE 10

struct shape_point {
    int64_t utilization;
    int64_t score;
};

struct scored_resource {
    kc_resource id;
    int64_t weight;
};

struct name_list {
    char **names;
    size_t count;
};

struct plugin {
    enum strategy strategy;
    struct shape_point shape[MAX_SHAPE_POINTS];
    uint32_t shape_count;
    struct scored_resource scoring[KC_RESOURCE_MAX];
    uint32_t scoring_count;
    bool balanced_enabled;
    kc_resource balanced[KC_RESOURCE_MAX];
    uint32_t balanced_count;
    struct name_list ignored;        /* extended resource names Filter does not check */
    struct name_list ignored_groups; /* extended resource prefixes ("example.com") */
    struct attempt_memo memo;        /* the state stored last (plugins/common/attempt_memo.h) */
    bool cpu_memory_only;            /* the default scoring: cpu_memory_score applies */
    bool host_usage;                 /* the host answers kc_node_get_usage itself (1.2) */
};

struct fit_request {
    kc_resource id;
    int64_t value;
    const char *reason; /* "Insufficient <name>", in the state's reason pool */
};

/* What Score needs, in the order of the plugin's resource lists. */
struct score_requests {
    int64_t strategy[KC_RESOURCE_MAX]; /* with the non-zero defaults for cpu and memory */
    int64_t balanced[KC_RESOURCE_MAX]; /* as requested */
    bool balanced_best_effort;         /* no balanced resource requested: skip Balanced */
};

/* Per-cycle state, one allocation, read-only after PreFilter (Filter and Score may run on
 * several threads). */
struct pod_state {
    struct attempt_memo *memo; /* the plugin's, which forgets the state when it is freed */
    uint32_t fit_count;
    struct fit_request fit[KC_RESOURCE_MAX];
    struct score_requests score;
    char reason_pool[]; /* NUL-separated reasons */
};

/* Args ---------------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static int
args_error(const char *format, ...)
{
    char message[512];
    int used = snprintf(message, sizeof(message), "args: ");
    va_list ap;
    va_start(ap, format);
    vsnprintf(message + used, sizeof(message) - (size_t)used, format, ap);
    va_end(ap);
    kc_log(KC_LOG_ERROR, PLUGIN_NAME, message);
    return EINVAL_CODE;
}

/* Unknown keys are errors: a misspelt option silently falling back to a default is the
 * worst outcome for an operator. */
static int check_keys(const json_t *object, const char *where, const char *const *known)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        bool found = false;
        for (size_t i = 0; known[i] != NULL && !found; i++)
            found = strcmp(key, known[i]) == 0;
        if (!found)
            return args_error("unknown key \"%s\" in %s", key, where);
    }
    return 0;
}

static int intern_name(const char *name, const char *where, kc_resource *id)
{
    *id = kc_resource_id(name);
    if (*id < 0 || *id >= KC_RESOURCE_MAX)
        return args_error("%s: cannot use resource \"%s\": the host already knows %d resource "
                          "names (the most it can hold)",
                          where, name, KC_RESOURCE_MAX);
    return 0;
}

/* One resource entry: {"name": "cpu", "weight": 1}, or a bare "cpu" where strings are
 * allowed. Weight 0 or absent means 1, as kube-scheduler's defaulting does. */
static int parse_resource_entry(const json_t *entry, const char *where, size_t index,
                                bool allow_string, const char **name, int64_t *weight)
{
    static const char *const known[] = {"name", "weight", NULL};
    *weight = 1;
    if (allow_string && json_is_string(entry)) {
        *name = json_string_value(entry);
    } else if (json_is_object(entry)) {
        if (check_keys(entry, where, known) != 0)
            return EINVAL_CODE;
        *name = json_string_value(json_object_get(entry, "name"));
        const json_t *weight_json = json_object_get(entry, "weight");
        if (weight_json != NULL && !json_is_integer(weight_json))
            return args_error("%s[%zu].weight must be an integer", where, index);
        if (weight_json != NULL && json_integer_value(weight_json) != 0)
            *weight = json_integer_value(weight_json);
    } else {
        return args_error("%s[%zu] must be an object {\"name\": ..., \"weight\": ...}%s", where,
                          index, allow_string ? " or a resource name" : "");
    }
    if (*name == NULL || (*name)[0] == '\0')
        return args_error("%s[%zu].name must be a non-empty resource name", where, index);
    return 0;
}

static bool seen_before(const kc_resource *ids, uint32_t count, kc_resource id)
{
    for (uint32_t i = 0; i < count; i++) {
        if (ids[i] == id)
            return true;
    }
    return false;
}

static void set_default_resources(kc_resource *ids, int64_t *weights, uint32_t *count)
{
    ids[0] = KC_RESOURCE_CPU;
    ids[1] = KC_RESOURCE_MEMORY;
    weights[0] = 1;
    weights[1] = 1;
    *count = 2;
}

/* A resource list; missing or empty means cpu and memory with weight 1 (kube's default).
 * max_weight 1 is BalancedAllocation's rule that every weight be 1. */
static int parse_resources(const json_t *list, const char *where, bool allow_string,
                           int64_t max_weight, kc_resource *ids, int64_t *weights, uint32_t *count)
{
    if (list == NULL || (json_is_array(list) && json_array_size(list) == 0)) {
        set_default_resources(ids, weights, count);
        return 0;
    }
    if (!json_is_array(list))
        return args_error("%s must be a list of resources", where);
    if (json_array_size(list) > KC_RESOURCE_MAX)
        return args_error("%s lists %zu resources; at most %d", where, json_array_size(list),
                          KC_RESOURCE_MAX);
    *count = 0;
    size_t index;
    const json_t *entry;
    json_array_foreach(list, index, entry)
    {
        const char *name = NULL;
        int64_t weight = 1;
        kc_resource id;
        if (parse_resource_entry(entry, where, index, allow_string, &name, &weight) != 0)
            return EINVAL_CODE;
        if (weight < 1 || weight > max_weight)
            return args_error("%s[%zu].weight of \"%s\" is %lld; expected %s", where, index, name,
                              (long long)weight,
                              max_weight == 1 ? "1" : "1 to 100 (0 or absent means 1)");
        if (intern_name(name, where, &id) != 0)
            return EINVAL_CODE;
        if (seen_before(ids, *count, id))
            return args_error("%s lists \"%s\" twice", where, name);
        ids[*count] = id;
        weights[*count] = weight;
        (*count)++;
    }
    return 0;
}

static int parse_strategy_type(const json_t *type, enum strategy *strategy)
{
    if (type == NULL) {
        *strategy = STRATEGY_LEAST_ALLOCATED;
        return 0;
    }
    const char *text = json_string_value(type);
    if (text != NULL && strcmp(text, "LeastAllocated") == 0) {
        *strategy = STRATEGY_LEAST_ALLOCATED;
        return 0;
    }
    if (text != NULL && strcmp(text, "MostAllocated") == 0) {
        *strategy = STRATEGY_MOST_ALLOCATED;
        return 0;
    }
    if (text != NULL && strcmp(text, "RequestedToCapacityRatio") == 0) {
        *strategy = STRATEGY_REQUESTED_TO_CAPACITY_RATIO;
        return 0;
    }
    return args_error("scoringStrategy.type \"%s\" is not supported; expected "
                      "\"LeastAllocated\", \"MostAllocated\" or \"RequestedToCapacityRatio\"",
                      text != NULL ? text : "(not a string)");
}

static int parse_shape_point(const json_t *point, size_t index, struct shape_point *out)
{
    static const char *const known[] = {"utilization", "score", NULL};
    static const char where[] = "scoringStrategy.requestedToCapacityRatio.shape";
    if (!json_is_object(point))
        return args_error("%s[%zu] must be an object {\"utilization\": ..., \"score\": ...}",
                          where, index);
    if (check_keys(point, where, known) != 0)
        return EINVAL_CODE;
    const json_t *utilization = json_object_get(point, "utilization");
    const json_t *score = json_object_get(point, "score");
    if ((utilization != NULL && !json_is_integer(utilization)) ||
        (score != NULL && !json_is_integer(score)))
        return args_error("%s[%zu]: utilization and score must be integers", where, index);
    /* absent means 0, as kube's int32 fields */
    out->utilization = utilization != NULL ? json_integer_value(utilization) : 0;
    out->score = score != NULL ? json_integer_value(score) : 0;
    if (out->utilization < 0 || out->utilization > MAX_UTILIZATION)
        return args_error("%s[%zu].utilization: %lld not in valid range [0, %d]", where, index,
                          (long long)out->utilization, MAX_UTILIZATION);
    if (out->score < 0 || out->score > MAX_CUSTOM_SCORE)
        return args_error("%s[%zu].score: %lld not in valid range [0, %d]", where, index,
                          (long long)out->score, MAX_CUSTOM_SCORE);
    out->score *= MAX_SCORE / MAX_CUSTOM_SCORE;
    return 0;
}

/* kube's validateFunctionShape: at least one point, utilization strictly increasing, each
 * utilization 0..100 and score 0..10. */
static int parse_shape(struct plugin *plugin, const json_t *ratio)
{
    static const char *const known[] = {"shape", NULL};
    static const char where[] = "scoringStrategy.requestedToCapacityRatio";
    if (ratio == NULL)
        return args_error("%s is required when scoringStrategy.type is "
                          "\"RequestedToCapacityRatio\"; expected {\"shape\": "
                          "[{\"utilization\": 0, \"score\": 0}, {\"utilization\": 100, "
                          "\"score\": 10}]}",
                          where);
    if (!json_is_object(ratio) || check_keys(ratio, where, known) != 0)
        return args_error("%s must be an object {\"shape\": [...]}", where);
    const json_t *shape = json_object_get(ratio, "shape");
    if (shape != NULL && !json_is_array(shape))
        return args_error("%s.shape must be a list of points", where);
    if (shape == NULL || json_array_size(shape) == 0)
        return args_error("%s.shape: at least one point must be specified", where);
    if (json_array_size(shape) > MAX_SHAPE_POINTS)
        return args_error("%s.shape has %zu points; utilization values must be sorted in "
                          "increasing order within [0, %d]",
                          where, json_array_size(shape), MAX_UTILIZATION);
    size_t index;
    const json_t *point;
    json_array_foreach(shape, index, point)
    {
        if (parse_shape_point(point, index, &plugin->shape[index]) != 0)
            return EINVAL_CODE;
        if (index > 0 && plugin->shape[index - 1].utilization >= plugin->shape[index].utilization)
            return args_error("%s.shape[%zu].utilization: utilization values must be sorted in "
                              "increasing order",
                              where, index);
    }
    plugin->shape_count = (uint32_t)json_array_size(shape);
    return 0;
}

static int parse_scoring_strategy(struct plugin *plugin, const json_t *strategy)
{
    static const char *const known[] = {"type", "resources", "requestedToCapacityRatio", NULL};
    kc_resource ids[KC_RESOURCE_MAX];
    int64_t weights[KC_RESOURCE_MAX];
    if (strategy == NULL) {
        plugin->strategy = STRATEGY_LEAST_ALLOCATED;
        set_default_resources(ids, weights, &plugin->scoring_count);
    } else if (!json_is_object(strategy)) {
        return args_error("scoringStrategy must be an object {\"type\": ..., \"resources\": ...}");
    } else if (check_keys(strategy, "scoringStrategy", known) != 0 ||
               parse_strategy_type(json_object_get(strategy, "type"), &plugin->strategy) != 0 ||
               parse_resources(json_object_get(strategy, "resources"), "scoringStrategy.resources",
                               false, MAX_WEIGHT, ids, weights, &plugin->scoring_count) != 0) {
        return EINVAL_CODE;
    } else if (plugin->strategy == STRATEGY_REQUESTED_TO_CAPACITY_RATIO &&
               parse_shape(plugin, json_object_get(strategy, "requestedToCapacityRatio")) != 0) {
        return EINVAL_CODE;
    }
    for (uint32_t i = 0; i < plugin->scoring_count; i++) {
        plugin->scoring[i].id = ids[i];
        plugin->scoring[i].weight = weights[i];
    }
    return 0;
}

static int parse_balanced(struct plugin *plugin, const json_t *balanced)
{
    static const char *const known[] = {"enabled", "resources", NULL};
    int64_t weights[KC_RESOURCE_MAX];
    if (balanced == NULL) {
        set_default_resources(plugin->balanced, weights, &plugin->balanced_count);
        return 0;
    }
    if (!json_is_object(balanced))
        return args_error("balancedAllocation must be an object {\"enabled\": ..., "
                          "\"resources\": ...}");
    if (check_keys(balanced, "balancedAllocation", known) != 0)
        return EINVAL_CODE;
    const json_t *enabled = json_object_get(balanced, "enabled");
    if (enabled != NULL && !json_is_boolean(enabled))
        return args_error("balancedAllocation.enabled must be true or false");
    plugin->balanced_enabled = json_is_true(enabled);
    return parse_resources(json_object_get(balanced, "resources"), "balancedAllocation.resources",
                           true, 1, plugin->balanced, weights, &plugin->balanced_count);
}

static void name_list_free(struct name_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->names[i]);
    free(list->names);
    list->names = NULL;
    list->count = 0;
}

/* strdup is POSIX, not C11: plugins build with a plain C11 compiler. */
static char *copy_string(const char *text)
{
    size_t size = strlen(text) + 1;
    char *copy = malloc(size);
    if (copy != NULL)
        memcpy(copy, text, size);
    return copy;
}

static int parse_names(const json_t *array, const char *where, bool is_group,
                       struct name_list *list)
{
    if (array == NULL)
        return 0;
    if (!json_is_array(array))
        return args_error("%s must be a list of strings", where);
    list->names = calloc(json_array_size(array) + 1, sizeof(char *));
    if (list->names == NULL)
        return ENOMEM_CODE;
    size_t index;
    const json_t *entry;
    json_array_foreach(array, index, entry)
    {
        const char *name = json_string_value(entry);
        if (name == NULL || name[0] == '\0')
            return args_error("%s[%zu] must be a non-empty string", where, index);
        if (is_group && strchr(name, '/') != NULL)
            return args_error("%s[%zu] \"%s\": a resource group is the part before '/', "
                              "e.g. \"example.com\"",
                              where, index, name);
        list->names[list->count] = copy_string(name);
        if (list->names[list->count] == NULL)
            return ENOMEM_CODE;
        list->count++;
    }
    return 0;
}

static int parse_args(struct plugin *plugin, const char *args_json)
{
    static const char *const known[] = {"scoringStrategy", "balancedAllocation", "ignoredResources",
                                        "ignoredResourceGroups", NULL};
    json_error_t error;
    json_t *root =
        json_loads(args_json != NULL && args_json[0] != '\0' ? args_json : "{}", 0, &error);
    if (root == NULL)
        return args_error("invalid JSON at line %d column %d: %s; expected an object such as "
                          "{\"scoringStrategy\": {\"type\": \"LeastAllocated\"}}",
                          error.line, error.column, error.text);
    int rc;
    if (!json_is_object(root))
        rc = args_error("expected a JSON object, got another JSON value");
    else if ((rc = check_keys(root, "the args object", known)) == 0 &&
             (rc = parse_scoring_strategy(plugin, json_object_get(root, "scoringStrategy"))) == 0 &&
             (rc = parse_balanced(plugin, json_object_get(root, "balancedAllocation"))) == 0 &&
             (rc = parse_names(json_object_get(root, "ignoredResources"), "ignoredResources", false,
                               &plugin->ignored)) == 0)
        rc = parse_names(json_object_get(root, "ignoredResourceGroups"), "ignoredResourceGroups",
                         true, &plugin->ignored_groups);
    json_decref(root);
    return rc;
}

/* Lifecycle ----------------------------------------------------------------------------- */

static void noderesources_fini(void *self)
{
    struct plugin *plugin = self;
    if (plugin == NULL)
        return;
    name_list_free(&plugin->ignored);
    name_list_free(&plugin->ignored_groups);
    free(plugin);
}

/* kube's default scoring: LeastAllocated over cpu then memory, and BalancedAllocation (when
 * enabled) over the same two. */
static bool scores_cpu_and_memory(const struct plugin *plugin)
{
    bool strategy = plugin->strategy == STRATEGY_LEAST_ALLOCATED && plugin->scoring_count == 2 &&
                    plugin->scoring[0].id == KC_RESOURCE_CPU &&
                    plugin->scoring[1].id == KC_RESOURCE_MEMORY;
    bool balanced = !plugin->balanced_enabled ||
                    (plugin->balanced_count == 2 && plugin->balanced[0] == KC_RESOURCE_CPU &&
                     plugin->balanced[1] == KC_RESOURCE_MEMORY);
    return strategy && balanced;
}

static int noderesources_init(const kc_host_api *host, const char *args_json, void **self)
{
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    struct plugin *plugin = calloc(1, sizeof(*plugin));
    if (plugin == NULL)
        return ENOMEM_CODE;
    rc = parse_args(plugin, args_json);
    if (rc == ENOMEM_CODE)
        kc_log(KC_LOG_ERROR, PLUGIN_NAME, "out of memory while reading args");
    if (rc != 0) {
        noderesources_fini(plugin);
        return rc;
    }
    plugin->cpu_memory_only = scores_cpu_and_memory(plugin);
    plugin->host_usage = KC_HOST_HAS(host, node_usage);
    *self = plugin;
    return 0;
}

/* A pod that fits on no node may fit after a node appears or grows, or a pod leaves. */
static uint32_t noderesources_requeue_events(void *self)
{
    (void)self;
    return KC_EVENT_MASK(KC_EVENT_NODE_ADD) | KC_EVENT_MASK(KC_EVENT_NODE_UPDATE) |
           KC_EVENT_MASK(KC_EVENT_POD_UPDATE) | KC_EVENT_MASK(KC_EVENT_POD_DELETE) |
           KC_EVENT_MASK(KC_EVENT_POD_FORGET);
}

/* PreFilter ----------------------------------------------------------------------------- */

/* kube's IsExtendedResourceName: a qualified name outside kubernetes.io. ignoredResources
 * apply only to these, never to cpu, memory or hugepages. */
static bool is_extended_resource(const char *name)
{
    return strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL &&
           strncmp(name, "requests.", 9) != 0;
}

static bool name_listed(const struct name_list *list, const char *name, size_t length)
{
    for (size_t i = 0; i < list->count; i++) {
        if (strlen(list->names[i]) == length && strncmp(list->names[i], name, length) == 0)
            return true;
    }
    return false;
}

static bool fit_ignores(const struct plugin *plugin, const char *name)
{
    if (!is_extended_resource(name))
        return false;
    if (name_listed(&plugin->ignored, name, strlen(name)))
        return true;
    return name_listed(&plugin->ignored_groups, name, (size_t)(strchr(name, '/') - name));
}

static const char *resource_name_or_unknown(kc_resource id)
{
    const char *name = kc_resource_name(id);
    return name != NULL ? name : "unknown-resource";
}

/* The pod's effective request by resource id; the one place that walks the request list. */
static void read_requests(const kc_pod *pod, int64_t by_id[KC_RESOURCE_MAX])
{
    memset(by_id, 0, sizeof(int64_t) * KC_RESOURCE_MAX);
    uint32_t count = kc_pod_request_count(pod);
    for (uint32_t i = 0; i < count; i++) {
        kc_resource id;
        int64_t value;
        if (kc_pod_request_at(pod, i, &id, &value) == 0 && id >= 0 && id < KC_RESOURCE_MAX)
            by_id[id] = value;
    }
}

static int64_t non_zero_request(kc_resource id, int64_t value)
{
    if (value != 0)
        return value;
    if (id == KC_RESOURCE_CPU)
        return DEFAULT_MILLI_CPU_REQUEST;
    if (id == KC_RESOURCE_MEMORY)
        return DEFAULT_MEMORY_REQUEST;
    return 0;
}

static void fill_score_requests(const struct plugin *plugin, const int64_t by_id[KC_RESOURCE_MAX],
                                struct score_requests *out)
{
    /* RequestedToCapacityRatio scores what is really requested (kube's useRequested) */
    bool actual = plugin->strategy == STRATEGY_REQUESTED_TO_CAPACITY_RATIO;
    for (uint32_t i = 0; i < plugin->scoring_count; i++) {
        kc_resource id = plugin->scoring[i].id;
        out->strategy[i] = actual ? by_id[id] : non_zero_request(id, by_id[id]);
    }
    out->balanced_best_effort = true;
    for (uint32_t i = 0; i < plugin->balanced_count; i++) {
        out->balanced[i] = by_id[plugin->balanced[i]];
        if (out->balanced[i] != 0)
            out->balanced_best_effort = false;
    }
}

/* Fills the fit list without reasons; returns the size the reason pool needs. */
static size_t fill_fit_requests(const struct plugin *plugin, const int64_t by_id[KC_RESOURCE_MAX],
                                struct pod_state *state)
{
    size_t pool_size = 0;
    state->fit_count = 0;
    for (kc_resource id = 0; id < KC_RESOURCE_MAX; id++) {
        /* pods is checked as a count ("Too many pods"), not as a request. */
        if (by_id[id] <= 0 || id == KC_RESOURCE_PODS)
            continue;
        const char *name = resource_name_or_unknown(id);
        if (fit_ignores(plugin, name))
            continue;
        state->fit[state->fit_count].id = id;
        state->fit[state->fit_count].value = by_id[id];
        state->fit_count++;
        pool_size += strlen(REASON_PREFIX) + strlen(name) + 1;
    }
    return pool_size;
}

static void fill_reasons(struct pod_state *state, size_t pool_size)
{
    char *cursor = state->reason_pool;
    for (uint32_t i = 0; i < state->fit_count; i++) {
        int written = snprintf(cursor, pool_size, REASON_PREFIX "%s",
                               resource_name_or_unknown(state->fit[i].id));
        state->fit[i].reason = cursor;
        cursor += written + 1;
        pool_size -= (size_t)written + 1;
    }
}

static struct pod_state *build_state(const struct plugin *plugin, const kc_pod *pod)
{
    int64_t by_id[KC_RESOURCE_MAX];
    struct pod_state scratch;
    read_requests(pod, by_id);
    size_t pool_size = fill_fit_requests(plugin, by_id, &scratch);
    fill_score_requests(plugin, by_id, &scratch.score);
    struct pod_state *state = malloc(sizeof(*state) + pool_size);
    if (state == NULL)
        return NULL;
    memcpy(state, &scratch, sizeof(scratch));
    fill_reasons(state, pool_size);
    return state;
}

static void pod_state_free(void *data)
{
    struct pod_state *state = data;
    if (state != NULL)
        attempt_memo_forget(state->memo, state);
    free(state);
}

static kc_status store_state(struct plugin *plugin, kc_cycle *cycle, const kc_pod *pod)
{
    struct pod_state *state = build_state(plugin, pod);
    if (state == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": out of memory");
        return KC_ERROR;
    }
    state->memo = &plugin->memo;
    if (kc_cycle_set(cycle, STATE_KEY, state, pod_state_free) != 0) {
        free(state);
        kc_cycle_reject(cycle, PLUGIN_NAME ": cannot store cycle state");
        return KC_ERROR;
    }
    attempt_memo_set(&plugin->memo, cycle, state);
    return KC_SUCCESS;
}

static kc_status noderesources_pre_filter(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    return store_state(self, cycle, pod);
}

/* kc_node_get_usage, with its host check made once in init: the inline function's fallback
 * makes it too large for the compiler to inline, and Filter and Score call it on every node. */
static inline void read_usage(const struct plugin *plugin, const kc_node *node,
                              kc_node_usage *usage)
{
    usage->struct_size = sizeof(*usage);
    if (plugin->host_usage)
        kc_host->node_usage(node, usage);
    else
        kc_node_get_usage(node, usage);
}

/* Filter -------------------------------------------------------------------------------- */

/* Every failing reason is reported, once each, so the kube-style histogram counts them all.
 * A request larger than the node's whole allocatable cannot be helped by preemption. */
static kc_status noderesources_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                      const kc_node *node)
{
    const struct plugin *plugin = self;
    (void)pod; /* everything Filter needs about the pod is in the PreFilter state */
    const struct pod_state *state = attempt_memo_get(&plugin->memo, cycle, STATE_KEY);
    if (state == NULL) {
        kc_cycle_reject(cycle, PLUGIN_NAME ": Filter ran without PreFilter state");
        return KC_ERROR;
    }
    bool failed = false;
    bool unresolvable = false;
    /* the pods, cpu and memory figures in one host call: most pods ask for nothing else */
    kc_node_usage usage;
    read_usage(plugin, node, &usage);
    if ((int64_t)usage.pod_count + 1 > usage.pods_allocatable) {
        kc_cycle_reject(cycle, REASON_TOO_MANY_PODS);
        failed = true;
    }
    for (uint32_t i = 0; i < state->fit_count; i++) {
        const struct fit_request *request = &state->fit[i];
        int64_t allocatable, requested;
        if (request->id == KC_RESOURCE_CPU) {
            allocatable = usage.cpu_allocatable;
            requested = usage.cpu_requested;
        } else if (request->id == KC_RESOURCE_MEMORY) {
            allocatable = usage.memory_allocatable;
            requested = usage.memory_requested;
        } else {
            allocatable = kc_node_allocatable(node, request->id);
            requested = kc_node_requested(node, request->id);
        }
        if (request->value <= allocatable - requested)
            continue;
        kc_cycle_reject(cycle, request->reason);
        failed = true;
        unresolvable = unresolvable || request->value > allocatable;
    }
    if (!failed)
        return KC_SUCCESS;
    return unresolvable ? KC_UNRESOLVABLE : KC_UNSCHEDULABLE;
}

/* Score --------------------------------------------------------------------------------- */

/* kube's calculateResourceAllocatableRequest: false when the resource does not take part
 * in this node's score (an extended resource the pod does not request, the pods count, or
 * a resource the node does not have). nonzero: the node's cpu and memory as
 * NodeInfo.NonZeroRequested (LeastAllocated, MostAllocated: kube's useRequested false), where
 * a pod without a request counts 100m / 200 MiB; else what is really requested. Always
 * inlined: it runs for every resource of every node scored, and a call cost as much as its
 * body. */
static inline __attribute__((always_inline)) bool
allocation_of(const kc_node *node, kc_resource id, int64_t pod_request, bool nonzero,
              int64_t *allocatable, int64_t *requested)
{
    bool scalar =
        id != KC_RESOURCE_CPU && id != KC_RESOURCE_MEMORY && id != KC_RESOURCE_EPHEMERAL_STORAGE;
    if (id == KC_RESOURCE_PODS || (scalar && pod_request == 0))
        return false;
    *allocatable = kc_node_allocatable(node, id);
    bool defaults = nonzero && (id == KC_RESOURCE_CPU || id == KC_RESOURCE_MEMORY);
    *requested = (defaults ? kc_node_nonzero_requested(node, id) : kc_node_requested(node, id)) +
                 pod_request;
    return *allocatable > 0;
}

static int64_t least_requested_score(int64_t requested, int64_t capacity)
{
    if (requested > capacity)
        return 0;
    return (capacity - requested) * MAX_SCORE / capacity;
}

/* Pods with no request count with the defaults, so requested may pass capacity. */
static int64_t most_requested_score(int64_t requested, int64_t capacity)
{
    if (requested > capacity)
        requested = capacity;
    return requested * MAX_SCORE / capacity;
}

/* kube's helper.BuildBrokenLinearFunction: the shape's score at p, linear between points
 * (integer division, toward zero), flat before the first point and after the last. */
static int64_t broken_linear(const struct plugin *plugin, int64_t p)
{
    const struct shape_point *shape = plugin->shape;
    for (uint32_t i = 0; i < plugin->shape_count; i++) {
        if (p > shape[i].utilization)
            continue;
        if (i == 0)
            return shape[0].score;
        return shape[i - 1].score + (shape[i].score - shape[i - 1].score) *
                                        (p - shape[i - 1].utilization) /
                                        (shape[i].utilization - shape[i - 1].utilization);
    }
    return shape[plugin->shape_count - 1].score;
}

/* requested * 100 / capacity in integers, exact even where the product would overflow. */
static int64_t scaled_utilization(int64_t requested, int64_t capacity)
{
    if (capacity <= 0 || requested <= 0)
        return 0;
    if (requested >= capacity)
        return MAX_UTILIZATION;
    if (requested <= INT64_MAX / MAX_UTILIZATION)
        return requested * MAX_UTILIZATION / capacity;
    return (int64_t)((long double)requested * MAX_UTILIZATION / (long double)capacity);
}

/* One resource's score under the plugin's strategy, 0..100. */
static int64_t resource_score(const struct plugin *plugin, int64_t requested, int64_t allocatable)
{
    switch (plugin->strategy) {
    case STRATEGY_MOST_ALLOCATED: return most_requested_score(requested, allocatable);
    case STRATEGY_REQUESTED_TO_CAPACITY_RATIO:
        return broken_linear(plugin, requested > allocatable
                                         ? MAX_UTILIZATION
                                         : scaled_utilization(requested, allocatable));
    default: return least_requested_score(requested, allocatable);
    }
}

static int64_t strategy_score(const struct plugin *plugin, const struct score_requests *requests,
                              const kc_node *node)
{
    bool ratio = plugin->strategy == STRATEGY_REQUESTED_TO_CAPACITY_RATIO;
    int64_t node_score = 0;
    int64_t weight_sum = 0;
    for (uint32_t i = 0; i < plugin->scoring_count; i++) {
        int64_t allocatable;
        int64_t requested;
        if (!allocation_of(node, plugin->scoring[i].id, requests->strategy[i], !ratio,
                           &allocatable, &requested))
            continue;
        int64_t score = resource_score(plugin, requested, allocatable);
        /* kube's RequestedToCapacityRatio scorer leaves a resource scoring 0 out of both sums */
        if (ratio && score <= 0)
            continue;
        node_score += score * plugin->scoring[i].weight;
        weight_sum += plugin->scoring[i].weight;
    }
    if (weight_sum == 0)
        return 0;
    /* RequestedToCapacityRatio rounds half away from zero (math.Round); the others truncate */
    return ratio ? (node_score * 2 + weight_sum) / (weight_sum * 2) : node_score / weight_sum;
}

/* kube's balancedResourceScorer: 100 * (1 - standard deviation of the requested fractions),
 * with the two-resource case written as |f0 - f1| / 2. */
static int64_t balanced_score(const struct plugin *plugin, const struct score_requests *requests,
                              const kc_node *node)
{
    double fractions[KC_RESOURCE_MAX];
    uint32_t count = 0;
    double total = 0.0;
    for (uint32_t i = 0; i < plugin->balanced_count; i++) {
        int64_t allocatable;
        int64_t requested;
        if (!allocation_of(node, plugin->balanced[i], requests->balanced[i], false, &allocatable,
                           &requested))
            continue;
        double fraction = (double)requested / (double)allocatable;
        fractions[count] = fraction > 1.0 ? 1.0 : fraction;
        total += fractions[count++];
    }
    double deviation = 0.0;
    if (count == 2) {
        deviation = fabs((fractions[0] - fractions[1]) / 2.0);
    } else if (count > 2) {
        double mean = total / count;
        double sum = 0.0;
        for (uint32_t i = 0; i < count; i++)
            sum += (fractions[i] - mean) * (fractions[i] - mean);
        deviation = sqrt(sum / count);
    }
    return (int64_t)((1.0 - deviation) * MAX_SCORE);
}

/* strategy_score and balanced_score under kube's default scoring (scores_cpu_and_memory), with
 * the same arithmetic in the same order: each node's cpu and memory figures read in one host
 * call (kc_node_get_usage), on the path every default attempt takes. */
static int64_t cpu_memory_score(const struct plugin *plugin, const struct score_requests *requests,
                                const kc_node *node)
{
    kc_node_usage usage;
    read_usage(plugin, node, &usage);
    /* Scalars, one resource after the other: gathering the struct's members into arrays made
     * the compiler load them in 16-byte pairs, which the host's 8-byte stores cannot forward
     * (a stall per load that cost more time than the host calls it saved). */
    int64_t node_score = 0;
    int64_t weight_sum = 0;
    if (usage.cpu_allocatable > 0) {
        int64_t requested = usage.cpu_nonzero_requested + requests->strategy[0];
        node_score += least_requested_score(requested, usage.cpu_allocatable) *
                      plugin->scoring[0].weight;
        weight_sum += plugin->scoring[0].weight;
    }
    if (usage.memory_allocatable > 0) {
        int64_t requested = usage.memory_nonzero_requested + requests->strategy[1];
        node_score += least_requested_score(requested, usage.memory_allocatable) *
                      plugin->scoring[1].weight;
        weight_sum += plugin->scoring[1].weight;
    }
    int64_t value = weight_sum == 0 ? 0 : node_score / weight_sum;
    if (!plugin->balanced_enabled || requests->balanced_best_effort)
        return value;
    double fractions[2];
    uint32_t count = 0;
    if (usage.cpu_allocatable > 0) {
        double fraction = (double)(usage.cpu_requested + requests->balanced[0]) /
                          (double)usage.cpu_allocatable;
        fractions[count++] = fraction > 1.0 ? 1.0 : fraction;
    }
    if (usage.memory_allocatable > 0) {
        double fraction = (double)(usage.memory_requested + requests->balanced[1]) /
                          (double)usage.memory_allocatable;
        fractions[count++] = fraction > 1.0 ? 1.0 : fraction;
    }
    double deviation = count == 2 ? fabs((fractions[0] - fractions[1]) / 2.0) : 0.0;
    return (value + (int64_t)((1.0 - deviation) * MAX_SCORE)) / 2;
}

/* Runs once per cycle, single-threaded: stores the state when PreFilter did not (the plugin
 * enabled for scoring only), so Score never has to read the pod. */
static kc_status noderesources_pre_score(void *self, kc_cycle *cycle, const kc_pod *pod)
{
    struct plugin *plugin = self;
    const struct pod_state *state = kc_cycle_get(cycle, STATE_KEY);
    if (state == NULL)
        return store_state(plugin, cycle, pod);
    attempt_memo_set(&plugin->memo, cycle, state); /* another cycle may have run PreFilter since */
    return KC_SUCCESS;
}

static kc_status noderesources_score(void *self, kc_cycle *cycle, const kc_pod *pod,
                                     const kc_node *node, int64_t *score)
{
    const struct plugin *plugin = self;
    const struct pod_state *state = attempt_memo_get(&plugin->memo, cycle, STATE_KEY);
    struct score_requests local;
    const struct score_requests *requests = &local;
    if (state != NULL) {
        requests = &state->score;
    } else {
        /* No PreFilter or PreScore ran: as kube does, compute here, on the stack. */
        int64_t by_id[KC_RESOURCE_MAX];
        read_requests(pod, by_id);
        fill_score_requests(plugin, by_id, &local);
    }
    if (plugin->cpu_memory_only) {
        *score = cpu_memory_score(plugin, requests, node);
        return KC_SUCCESS;
    }
    int64_t value = strategy_score(plugin, requests, node);
    /* Kube runs BalancedAllocation as a second score plugin of equal weight and skips it for
     * best-effort pods; the average keeps 0..100 and kube's order (bar ties from halving). */
    if (plugin->balanced_enabled && !requests->balanced_best_effort)
        value = (value + balanced_score(plugin, requests, node)) / 2;
    *score = value;
    return KC_SUCCESS;
}

static const kc_plugin_ops noderesources_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = noderesources_init,
    .fini = noderesources_fini,
    .requeue_events = noderesources_requeue_events,
    .pre_filter = noderesources_pre_filter,
    .filter = noderesources_filter,
    .pre_score = noderesources_pre_score,
    .score = noderesources_score,
};

static const kc_plugin_descriptor noderesources_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &noderesources_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &noderesources_descriptor;
}
