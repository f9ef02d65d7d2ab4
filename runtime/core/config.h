/* Scheduler configuration (YAML or JSON), modelled on KubeSchedulerConfiguration. */
#ifndef KC_CORE_CONFIG_H
#define KC_CORE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct tree;

enum plugin_isolation { ISOLATION_INPROCESS = 0, ISOLATION_PROCESS = 1 };
enum failure_policy { FAILURE_FAIL = 0, FAILURE_IGNORE = 1 };

struct plugin_config {
    char *name;     /* plugin name; the file is <pluginDir>/<name>.so unless path is set */
    char *path;     /* explicit .so path, or NULL */
    int32_t weight; /* Score weight, default 1 */
    enum plugin_isolation isolation;
    char *host; /* plugin-host group name, or NULL (own host) */
    enum failure_policy failure_policy;
    bool required;         /* refuse to start without it (default true for in-process) */
    char *args_json;       /* the args object as JSON, "{}" when absent */
    uint32_t handles;      /* pod_field bits the entry declares it handles (`handles:`) */
    bool queue_sort_off;   /* `queueSort: false`: the plugin's QueueSort is not used */
    uint32_t line, column; /* where the entry is, for messages */
};

struct leader_election {
    bool enabled;              /* true */
    int64_t lease_duration_ms; /* 15 s */
    int64_t renew_deadline_ms; /* 10 s */
    int64_t retry_period_ms;   /* 2 s */
    char *lease_name;          /* "kcycle" */
    char *lease_namespace;     /* "": the namespace the bridge runs in */
};

struct config {
    char *file;                           /* where it came from, or NULL for defaults */
    char *scheduler_name;                 /* "kcycle" */
    int32_t percentage_of_nodes_to_score; /* 0 = adaptive, 1..100 */
    char *plugin_dir;                     /* NULL: the built-in default */
    struct plugin_config *plugins;
    uint32_t plugin_count;
    struct leader_election leader_election;
    char *bridge_address;           /* nng url, "ipc:///tmp/kcycle-<euid>/bridge.ipc" */
    uint64_t seed;                  /* tie-breaking seed, default 1 */
    int32_t parallelism;            /* Filter/Score threads, 0 = number of cores */
    int64_t pod_initial_backoff_ms; /* 1 s */
    int64_t pod_max_backoff_ms;     /* 10 s */
    int64_t unschedulable_flush_ms; /* 5 min */
    int64_t plugin_timeout_ms;      /* deadline of one plugin-host request, 5 s */
    /* unhandledPodFields: refuse a pod that uses a field no enabled plugin handles (true),
     * except the pod_field bits in ignored */
    bool refuse_unhandled_fields;
    uint32_t ignored_unhandled_fields;
    bool binder_elsewhere;          /* not from files: a plugin host binds through its scheduler */
    bool private_copies; /* not from files: load private copies of plugin files (hot reload) */
};

/* The default configuration: kube-scheduler's default profile of the shipped plugins
 * (docs/configuration.md), in its order and with its weights.
 * 0 or -ENOMEM. cfg is output only; the caller releases it with config_free. */
int config_default(struct config *cfg);
/* Load from a file (YAML or JSON) over the defaults. Unknown keys and bad values are -EINVAL
 * with err naming file:line:column and the key ("FILE:LINE:COL: key 'K': problem; what is
 * expected"); an unreadable file is -errno. cfg is output only: whatever it held is overwritten,
 * not freed. On success the caller owns it (config_free); on failure it is left zeroed. */
int config_load_file(const char *path, struct config *cfg, struct kc_error *err);
/* Load from an already parsed tree (e.g. the `config:` section of a simulation file); same
 * contract as config_load_file. cfg->file is the tree's file name. */
int config_load_tree(const struct tree *root, struct config *cfg, struct kc_error *err);
/* Releases everything cfg owns and leaves it zeroed; safe on a zeroed struct. */
void config_free(struct config *cfg);

#endif
