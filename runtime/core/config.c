/* The scheduler configuration: built-in defaults, overlaid by a YAML or JSON file that is checked
 * key by key, with messages "FILE:LINE:COL: key 'K': problem; what is expected". */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod_fields.h"
#include "socket_dir.h"
#include "tree.h"

#define CONFIG_API_VERSION "kcycle.io/v1alpha1"
#define CONFIG_KIND "KcycleSchedulerConfiguration"
#define MAX_BACKOFF_SECONDS 3600
#define QUOTE_MAX 64

static const char *const top_keys[] = {
    "apiVersion",
    "kind",
    "schedulerName",
    "percentageOfNodesToScore",
    "pluginDir",
    "parallelism",
    "seed",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "podMaxInUnschedulablePodsDuration",
    "pluginTimeout",
    "plugins",
    "leaderElection",
    "bridge",
    "unhandledPodFields",
    NULL,
};
static const char *const plugin_keys[] = {
    "name", "path", "weight", "isolation", "host", "failurePolicy", "required", "args", "handles",
    "queueSort", NULL,
};
static const char *const leader_keys[] = {
    "leaderElect", "leaseDuration", "renewDeadline",
    "retryPeriod", "resourceName",  "resourceNamespace",
    NULL,
};
static const char *const bridge_keys[] = {"address", NULL};
static const char *const unhandled_keys[] = {"refuse", "ignore", NULL};
static const char *const isolation_names[] = {"inprocess", "process", NULL};
static const char *const failure_policy_names[] = {"Fail", "Ignore", NULL};
/* kube-scheduler's default profile, in its order and with its score weights, for the plugins
 * kcycle ships (docs/configuration.md). coscheduling stays opt-in. */
static const struct {
    const char *name;
    int32_t weight;
} default_plugins[] = {
    {"prioritysort", 1},    {"nodeunschedulable", 1}, {"nodename", 1},      {"tainttoleration", 3},
    {"nodeaffinity", 2},    {"nodeports", 1},         {"noderesources", 1},
    {"volumerestrictions", 1}, {"nodevolumelimits", 1}, {"volumebinding", 1},
    {"podtopologyspread", 2},  {"interpodaffinity", 2},
    {"defaultpreemption", 1}, {"defaultbinder", 1},
};

/* ---- defaults and freeing ---- */

static void plugin_config_free(struct plugin_config *p)
{
    free(p->name);
    free(p->path);
    free(p->host);
    free(p->args_json);
    memset(p, 0, sizeof(*p));
}

static void plugins_free(struct plugin_config *plugins, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        plugin_config_free(&plugins[i]);
    free(plugins);
}

void config_free(struct config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->file);
    free(cfg->scheduler_name);
    free(cfg->plugin_dir);
    plugins_free(cfg->plugins, cfg->plugin_count);
    free(cfg->leader_election.lease_name);
    free(cfg->leader_election.lease_namespace);
    free(cfg->bridge_address);
    memset(cfg, 0, sizeof(*cfg));
}

/* A plugin entry with every optional field at its default. */
static int plugin_config_init(struct plugin_config *p, const char *name)
{
    memset(p, 0, sizeof(*p));
    p->weight = 1;
    p->isolation = ISOLATION_INPROCESS;
    p->failure_policy = FAILURE_FAIL;
    p->required = true;
    p->name = name != NULL ? strdup(name) : NULL;
    p->args_json = strdup("{}");
    if ((name != NULL && p->name == NULL) || p->args_json == NULL) {
        plugin_config_free(p);
        return -ENOMEM;
    }
    return 0;
}

static int default_plugin_list(struct config *cfg)
{
    uint32_t count = sizeof(default_plugins) / sizeof(default_plugins[0]);
    cfg->plugins = calloc(count, sizeof(*cfg->plugins));
    if (cfg->plugins == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        if (plugin_config_init(&cfg->plugins[i], default_plugins[i].name) != 0)
            return -ENOMEM;
        cfg->plugins[i].weight = default_plugins[i].weight;
        cfg->plugin_count = i + 1;
    }
    return 0;
}

int config_default(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->percentage_of_nodes_to_score = 0;
    cfg->parallelism = 0;
    cfg->seed = 1;
    cfg->pod_initial_backoff_ms = 1000;
    cfg->pod_max_backoff_ms = 10000;
    cfg->unschedulable_flush_ms = 5 * 60 * 1000;
    cfg->plugin_timeout_ms = 5000;
    cfg->refuse_unhandled_fields = true; /* a field silently ignored is a wrong placement */
    cfg->leader_election.enabled = true; /* as kube-scheduler: replicas must never both bind */
    cfg->leader_election.lease_duration_ms = 15000;
    cfg->leader_election.renew_deadline_ms = 10000;
    cfg->leader_election.retry_period_ms = 2000;
    cfg->scheduler_name = strdup("kcycle");
    cfg->leader_election.lease_name = strdup("kcycle");
    cfg->leader_election.lease_namespace = strdup(""); /* "": where the bridge runs */
    char bridge_url[96]; /* in this user's private socket directory (core/socket_dir.h) */
    socket_dir_default_url(bridge_url, sizeof(bridge_url));
    cfg->bridge_address = strdup(bridge_url);
    if (cfg->scheduler_name == NULL || cfg->leader_election.lease_name == NULL ||
        cfg->leader_election.lease_namespace == NULL || cfg->bridge_address == NULL ||
        default_plugin_list(cfg) != 0) {
        config_free(cfg);
        return -ENOMEM;
    }
    return 0;
}

/* ---- typed reads over a map; an absent key or an explicit null keeps the default ---- */

static const struct tree *value_of(const struct tree *map, const char *key)
{
    const struct tree *v = tree_get(map, key);
    return tree_is_null(v) ? NULL : v;
}

static int replace_string(char **dst, const char *src, struct kc_error *err)
{
    char *copy = strdup(src);
    if (copy == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory loading the configuration");
    free(*dst);
    *dst = copy;
    return 0;
}

static int read_string(const struct tree *map, const char *key, char **dst, struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    const char *s;
    if (v == NULL)
        return 0;
    int rc = tree_string(v, key, &s, err);
    if (rc != 0)
        return rc;
    if (s[0] == '\0')
        return tree_error(v, err, -EINVAL, key, "is empty; expected a non-empty string");
    return replace_string(dst, s, err);
}

static int read_int(const struct tree *map, const char *key, int64_t min, int64_t max, int64_t *dst,
                    struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    int64_t value;
    if (v == NULL)
        return 0;
    int rc = tree_int64(v, key, &value, err);
    if (rc != 0)
        return rc;
    if (value < min || value > max) {
        return tree_error(v, err, -EINVAL, key,
                          "%lld is out of range; expected an integer from %lld "
                          "to %lld",
                          (long long)value, (long long)min, (long long)max);
    }
    *dst = value;
    return 0;
}

static int read_int32(const struct tree *map, const char *key, int32_t min, int32_t max,
                      int32_t *dst, struct kc_error *err)
{
    int64_t value = *dst;
    int rc = read_int(map, key, min, max, &value, err);
    *dst = (int32_t)value;
    return rc;
}

static int read_seconds_as_ms(const struct tree *map, const char *key, int64_t *dst_ms,
                              struct kc_error *err)
{
    int64_t seconds = *dst_ms / 1000;
    int rc = read_int(map, key, 1, MAX_BACKOFF_SECONDS, &seconds, err);
    *dst_ms = seconds * 1000;
    return rc;
}

static int read_duration(const struct tree *map, const char *key, int64_t *dst_ms,
                         struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    int64_t ms;
    if (v == NULL)
        return 0;
    int rc = tree_duration_ms(v, key, &ms, err);
    if (rc != 0)
        return rc;
    if (ms <= 0)
        return tree_error(v, err, -EINVAL, key,
                          "is zero; expected a duration longer than 0 such as 10s");
    *dst_ms = ms;
    return 0;
}

static int read_bool(const struct tree *map, const char *key, bool *dst, struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    return v == NULL ? 0 : tree_bool(v, key, dst, err);
}

static void join_names(char *buf, size_t size, const char *const *names)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i] != NULL && used < size; i++) {
        const char *sep = i == 0 ? "" : names[i + 1] == NULL ? " or " : ", ";
        int n = snprintf(buf + used, size - used, "%s%s", sep, names[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

/* One of names (case-sensitive, as Kubernetes enums are); *dst is its index. */
static int read_enum(const struct tree *map, const char *key, const char *const *names, int *dst,
                     struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    const char *s;
    if (v == NULL)
        return 0;
    int rc = tree_string(v, key, &s, err);
    if (rc != 0)
        return rc;
    for (int i = 0; names[i] != NULL; i++) {
        if (strcmp(s, names[i]) == 0) {
            *dst = i;
            return 0;
        }
    }
    char expected[256];
    join_names(expected, sizeof(expected), names);
    return tree_error(v, err, -EINVAL, key, "'%.*s' is not valid; expected %s", QUOTE_MAX, s,
                      expected);
}

/* A fixed string such as apiVersion: when present it must be exactly this. */
static int read_fixed(const struct tree *map, const char *key, const char *want,
                      struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    const char *s;
    if (v == NULL)
        return 0;
    int rc = tree_string(v, key, &s, err);
    if (rc != 0)
        return rc;
    if (strcmp(s, want) != 0)
        return tree_error(v, err, -EINVAL, key, "'%.*s' is not supported; expected %s", QUOTE_MAX,
                          s, want);
    return 0;
}

/* A map-valued key; *out is NULL when absent or null. */
static int read_section(const struct tree *map, const char *key, const char *const *allowed,
                        const struct tree **out, struct kc_error *err)
{
    const struct tree *v = value_of(map, key);
    *out = v;
    if (v == NULL)
        return 0;
    if (v->type != TREE_MAP)
        return tree_error(v, err, -EINVAL, key, "got %s; expected a map",
                          v->type == TREE_SEQ ? "a list" : "a single value");
    return tree_check_keys(v, key, allowed, err);
}

/* ---- plugins ---- */

static bool valid_plugin_name(const char *name)
{
    if (name[0] == '\0')
        return false;
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(name);
}

static int read_plugin_name(const struct tree *entry, uint32_t index, struct plugin_config *p,
                            struct kc_error *err)
{
    static const char expected[] = "a plugin name made of a-z, 0-9, '_' and '-' such as "
                                   "noderesources";
    const struct tree *v = value_of(entry, "name");
    const char *name;
    if (v == NULL)
        return tree_error(entry, err, -EINVAL, "name", "missing in plugin entry %u; expected %s",
                          index + 1, expected);
    int rc = tree_string(v, "name", &name, err);
    if (rc != 0)
        return rc;
    if (!valid_plugin_name(name))
        return tree_error(v, err, -EINVAL, "name", "'%.*s' is not a valid plugin name; expected %s",
                          QUOTE_MAX, name, expected);
    return replace_string(&p->name, name, err);
}

/* A list of pod field names (pod_fields.c) into a pod_field mask. */
static int read_field_list(const struct tree *map, const char *key, uint32_t *mask,
                           struct kc_error *err)
{
    const struct tree *seq = value_of(map, key);
    if (seq == NULL)
        return 0;
    if (seq->type != TREE_SEQ)
        return tree_error(seq, err, -EINVAL, key,
                          "got %s; expected a list of pod fields such as "
                          "[spec.topologySpreadConstraints]",
                          seq->type == TREE_MAP ? "a map" : "a single value");
    for (uint32_t i = 0; i < seq->count; i++) {
        const char *name;
        int rc = tree_string(seq->items[i], key, &name, err);
        if (rc != 0)
            return rc;
        uint32_t bit = pod_field_by_name(name);
        if (bit == 0) {
            char known[1024];
            pod_fields_format(pod_fields_all(), known, sizeof(known));
            return tree_error(seq->items[i], err, -EINVAL, key,
                              "'%.*s' is not a pod field kcycle checks; expected one of %s",
                              QUOTE_MAX, name, known);
        }
        *mask |= bit;
    }
    return 0;
}

static int read_plugin_args(const struct tree *entry, struct plugin_config *p, struct kc_error *err)
{
    const struct tree *v = value_of(entry, "args");
    if (v == NULL)
        return 0;
    if (v->type != TREE_MAP)
        return tree_error(v, err, -EINVAL, "args", "got %s; expected a map of plugin arguments",
                          v->type == TREE_SEQ ? "a list" : "a single value");
    char *json = tree_to_json(v);
    if (json == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory loading the configuration");
    free(p->args_json);
    p->args_json = json;
    return 0;
}

/* queueSort: false leaves the plugin's QueueSort out, so that another plugin's may run (one
 * QueueSort only; e.g. coscheduling's pod groups under capacityqueue's fair order). */
static int read_queue_sort(const struct tree *entry, struct plugin_config *p,
                           struct kc_error *err)
{
    bool queue_sort = true;
    int rc = read_bool(entry, "queueSort", &queue_sort, err);
    p->queue_sort_off = !queue_sort;
    return rc;
}

static int read_plugin(const struct tree *entry, uint32_t index, struct plugin_config *p,
                       struct kc_error *err)
{
    if (entry->type != TREE_MAP)
        return tree_error(entry, err, -EINVAL, "plugins",
                          "entry %u is %s; expected a map with at "
                          "least a name",
                          index + 1, entry->type == TREE_SEQ ? "a list" : "a single value");
    int rc = tree_check_keys(entry, "a plugin entry", plugin_keys, err);
    int isolation = (int)p->isolation, failure_policy = (int)p->failure_policy;
    if (rc == 0)
        rc = read_plugin_name(entry, index, p, err);
    if (rc == 0)
        rc = read_string(entry, "path", &p->path, err);
    if (rc == 0)
        rc = read_int32(entry, "weight", 1, 1000, &p->weight, err);
    if (rc == 0)
        rc = read_enum(entry, "isolation", isolation_names, &isolation, err);
    if (rc == 0)
        rc = read_string(entry, "host", &p->host, err);
    if (rc == 0)
        rc = read_enum(entry, "failurePolicy", failure_policy_names, &failure_policy, err);
    if (rc == 0)
        rc = read_bool(entry, "required", &p->required, err);
    if (rc == 0)
        rc = read_plugin_args(entry, p, err);
    if (rc == 0)
        rc = read_field_list(entry, "handles", &p->handles, err);
    if (rc == 0)
        rc = read_queue_sort(entry, p, err);
    p->isolation = (enum plugin_isolation)isolation;
    p->failure_policy = (enum failure_policy)failure_policy;
    p->line = entry->line;
    p->column = entry->column;
    return rc;
}

static int check_unique_name(const struct tree *seq, uint32_t index, struct kc_error *err)
{
    const struct tree *name = tree_get(seq->items[index], "name");
    for (uint32_t i = 0; i < index; i++) {
        const struct tree *first = tree_get(seq->items[i], "name");
        if (strcmp(first->scalar, name->scalar) != 0)
            continue;
        return tree_error(name, err, -EINVAL, "name",
                          "plugin '%s' is listed twice, first at %u:%u; "
                          "expected each plugin once",
                          name->scalar, first->line, first->column);
    }
    return 0;
}

static int read_plugins(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    const struct tree *seq = value_of(root, "plugins");
    if (seq == NULL)
        return 0;
    if (seq->type != TREE_SEQ)
        return tree_error(seq, err, -EINVAL, "plugins", "got %s; expected a list of plugin entries",
                          seq->type == TREE_MAP ? "a map" : "a single value");
    struct plugin_config *plugins = calloc(seq->count > 0 ? seq->count : 1, sizeof(*plugins));
    if (plugins == NULL)
        return kc_error_set(err, -ENOMEM, "out of memory loading the configuration");
    uint32_t loaded = 0;
    int rc = 0;
    for (; rc == 0 && loaded < seq->count; loaded++) {
        rc = plugin_config_init(&plugins[loaded], NULL);
        if (rc != 0) {
            kc_error_set(err, rc, "out of memory loading the configuration");
            break;
        }
        rc = read_plugin(seq->items[loaded], loaded, &plugins[loaded], err);
        if (rc == 0)
            rc = check_unique_name(seq, loaded, err);
    }
    if (rc != 0) {
        plugins_free(plugins, loaded);
        return rc;
    }
    plugins_free(cfg->plugins, cfg->plugin_count);
    cfg->plugins = plugins;
    cfg->plugin_count = seq->count;
    return 0;
}

/* ---- sections ---- */

/* "15s" for whole seconds, "1500ms" otherwise: the way a user would have written it. */
static const char *format_ms(char *buf, size_t size, int64_t ms)
{
    if (ms % 1000 == 0)
        snprintf(buf, size, "%llds", (long long)(ms / 1000));
    else
        snprintf(buf, size, "%lldms", (long long)ms);
    return buf;
}

/* The node to blame for a relation between keys: the first of them the user wrote. */
static const struct tree *blame(const struct tree *section, const char *key, const char *other)
{
    const struct tree *v = value_of(section, key);
    if (v == NULL)
        v = value_of(section, other);
    return v != NULL ? v : section;
}

static int check_leader_timing(const struct tree *le, const struct leader_election *l,
                               struct kc_error *err)
{
    static const char expected[] = "retryPeriod < renewDeadline < leaseDuration";
    char a[32], b[32];
    if (l->renew_deadline_ms >= l->lease_duration_ms) {
        return tree_error(blame(le, "renewDeadline", "leaseDuration"), err, -EINVAL,
                          "renewDeadline", "%s is not shorter than leaseDuration (%s); expected %s",
                          format_ms(a, sizeof(a), l->renew_deadline_ms),
                          format_ms(b, sizeof(b), l->lease_duration_ms), expected);
    }
    if (l->retry_period_ms >= l->renew_deadline_ms) {
        return tree_error(blame(le, "retryPeriod", "renewDeadline"), err, -EINVAL, "retryPeriod",
                          "%s is not shorter than renewDeadline (%s); expected %s",
                          format_ms(a, sizeof(a), l->retry_period_ms),
                          format_ms(b, sizeof(b), l->renew_deadline_ms), expected);
    }
    return 0;
}

static int read_leader_election(const struct tree *root, struct leader_election *l,
                                struct kc_error *err)
{
    const struct tree *le;
    int rc = read_section(root, "leaderElection", leader_keys, &le, err);
    if (rc != 0 || le == NULL)
        return rc;
    rc = read_bool(le, "leaderElect", &l->enabled, err);
    if (rc == 0)
        rc = read_duration(le, "leaseDuration", &l->lease_duration_ms, err);
    if (rc == 0)
        rc = read_duration(le, "renewDeadline", &l->renew_deadline_ms, err);
    if (rc == 0)
        rc = read_duration(le, "retryPeriod", &l->retry_period_ms, err);
    if (rc == 0)
        rc = read_string(le, "resourceName", &l->lease_name, err);
    if (rc == 0)
        rc = read_string(le, "resourceNamespace", &l->lease_namespace, err);
    if (rc == 0)
        rc = check_leader_timing(le, l, err);
    return rc;
}

static int read_bridge(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    const struct tree *bridge;
    int rc = read_section(root, "bridge", bridge_keys, &bridge, err);
    if (rc != 0 || bridge == NULL)
        return rc;
    rc = read_string(bridge, "address", &cfg->bridge_address, err);
    if (rc == 0 && strstr(cfg->bridge_address, "://") == NULL) {
        return tree_error(value_of(bridge, "address"), err, -EINVAL, "address",
                          "'%.*s' is not an nng URL; expected a URL such as "
                          "ipc:///run/kcycle/bridge.sock or tcp://127.0.0.1:7070",
                          QUOTE_MAX, cfg->bridge_address);
    }
    return rc;
}

/* unhandledPodFields: {refuse: true|false, ignore: [field, ...]} (docs/configuration.md). */
static int read_unhandled_fields(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    const struct tree *section;
    int rc = read_section(root, "unhandledPodFields", unhandled_keys, &section, err);
    if (rc != 0 || section == NULL)
        return rc;
    rc = read_bool(section, "refuse", &cfg->refuse_unhandled_fields, err);
    if (rc == 0)
        rc = read_field_list(section, "ignore", &cfg->ignored_unhandled_fields, err);
    return rc;
}

static int check_backoff(const struct tree *root, const struct config *cfg, struct kc_error *err)
{
    if (cfg->pod_max_backoff_ms >= cfg->pod_initial_backoff_ms)
        return 0;
    return tree_error(blame(root, "podMaxBackoffSeconds", "podInitialBackoffSeconds"), err, -EINVAL,
                      "podMaxBackoffSeconds",
                      "%lld is less than podInitialBackoffSeconds (%lld); expected a value "
                      "at least as large",
                      (long long)(cfg->pod_max_backoff_ms / 1000),
                      (long long)(cfg->pod_initial_backoff_ms / 1000));
}

static int read_scalars(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    int64_t seed = (int64_t)cfg->seed;
    int rc = read_fixed(root, "apiVersion", CONFIG_API_VERSION, err);
    if (rc == 0)
        rc = read_fixed(root, "kind", CONFIG_KIND, err);
    if (rc == 0)
        rc = read_string(root, "schedulerName", &cfg->scheduler_name, err);
    if (rc == 0)
        rc = read_int32(root, "percentageOfNodesToScore", 0, 100,
                        &cfg->percentage_of_nodes_to_score, err);
    if (rc == 0)
        rc = read_string(root, "pluginDir", &cfg->plugin_dir, err);
    if (rc == 0)
        rc = read_int32(root, "parallelism", 0, 1024, &cfg->parallelism, err);
    if (rc == 0)
        rc = read_int(root, "seed", 0, INT64_MAX, &seed, err);
    cfg->seed = (uint64_t)seed;
    if (rc == 0)
        rc =
            read_seconds_as_ms(root, "podInitialBackoffSeconds", &cfg->pod_initial_backoff_ms, err);
    if (rc == 0)
        rc = read_seconds_as_ms(root, "podMaxBackoffSeconds", &cfg->pod_max_backoff_ms, err);
    if (rc == 0)
        rc = check_backoff(root, cfg, err);
    if (rc == 0)
        rc = read_duration(root, "podMaxInUnschedulablePodsDuration", &cfg->unschedulable_flush_ms,
                           err);
    if (rc == 0)
        rc = read_duration(root, "pluginTimeout", &cfg->plugin_timeout_ms, err);
    return rc;
}

static int apply_tree(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    if (root->type != TREE_MAP) {
        return kc_error_set(err, -EINVAL,
                            "%s:%u:%u: the scheduler configuration is %s; "
                            "expected a map of settings such as schedulerName",
                            root->file, root->line, root->column,
                            root->type == TREE_SEQ ? "a list" : "a single value");
    }
    int rc = tree_check_keys(root, "the scheduler configuration", top_keys, err);
    if (rc == 0)
        rc = read_scalars(root, cfg, err);
    if (rc == 0)
        rc = read_plugins(root, cfg, err);
    if (rc == 0)
        rc = read_leader_election(root, &cfg->leader_election, err);
    if (rc == 0)
        rc = read_bridge(root, cfg, err);
    if (rc == 0)
        rc = read_unhandled_fields(root, cfg, err);
    return rc;
}

int config_load_tree(const struct tree *root, struct config *cfg, struct kc_error *err)
{
    struct config loaded;
    memset(cfg, 0, sizeof(*cfg));
    if (root == NULL)
        return kc_error_set(err, -EINVAL, "no configuration given; expected a map");
    if (config_default(&loaded) != 0)
        return kc_error_set(err, -ENOMEM, "%s: out of memory loading the configuration",
                            root->file);
    int rc = apply_tree(root, &loaded, err);
    if (rc == 0)
        rc = replace_string(&loaded.file, root->file, err);
    if (rc != 0) {
        config_free(&loaded);
        return rc;
    }
    *cfg = loaded;
    return 0;
}

int config_load_file(const char *path, struct config *cfg, struct kc_error *err)
{
    struct tree *root;
    memset(cfg, 0, sizeof(*cfg));
    int rc = tree_parse_file(path, &root, err);
    if (rc != 0)
        return rc;
    rc = config_load_tree(root, cfg, err);
    tree_free(root);
    return rc;
}
