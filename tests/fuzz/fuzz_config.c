/* Fuzz target for the scheduler configuration: any bytes as a --config file. A configuration
 * that loads must satisfy every rule the loader enforces; one that fails leaves cfg zeroed. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "fuzz.h"
#include "tree.h"

static bool valid_plugin_name(const char *name)
{
    return name != NULL && name[0] != '\0' &&
           strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(name);
}

static void check_plugins(const struct config *cfg)
{
    fuzz_check(cfg->plugin_count == 0 || cfg->plugins != NULL, "plugins missing", NULL);
    for (uint32_t i = 0; i < cfg->plugin_count; i++) {
        const struct plugin_config *p = &cfg->plugins[i];
        fuzz_check(valid_plugin_name(p->name), "a plugin name the loader should refuse", p->name);
        for (uint32_t j = 0; j < i; j++)
            fuzz_check(strcmp(cfg->plugins[j].name, p->name) != 0, "a plugin listed twice",
                       p->name);
        fuzz_check(p->weight >= 1 && p->weight <= 1000, "plugin weight out of range", p->name);
        fuzz_check(p->path == NULL || p->path[0] != '\0', "empty plugin path", p->name);
        fuzz_check(p->host == NULL || p->host[0] != '\0', "empty plugin host", p->name);
        fuzz_check(p->isolation == ISOLATION_INPROCESS || p->isolation == ISOLATION_PROCESS,
                   "unknown isolation", p->name);
        fuzz_check(p->failure_policy == FAILURE_FAIL || p->failure_policy == FAILURE_IGNORE,
                   "unknown failure policy", p->name);
        /* Plugins receive args as JSON text and parse it: it must be an object. */
        fuzz_check(p->args_json != NULL, "plugin without args JSON", p->name);
        json_error_t error;
        json_t *args = json_loads(p->args_json, 0, &error);
        fuzz_check(args != NULL && json_is_object(args), "plugin args are not a JSON object",
                   p->args_json);
        json_decref(args);
    }
}

static void check_loaded(const struct config *cfg)
{
    fuzz_check(cfg->file != NULL && strcmp(cfg->file, "fuzz.yaml") == 0, "config file name",
               cfg->file);
    fuzz_check(cfg->scheduler_name != NULL && cfg->scheduler_name[0] != '\0',
               "empty scheduler name", NULL);
    fuzz_check(cfg->plugin_dir == NULL || cfg->plugin_dir[0] != '\0', "empty plugin dir", NULL);
    fuzz_check(cfg->percentage_of_nodes_to_score >= 0 && cfg->percentage_of_nodes_to_score <= 100,
               "percentageOfNodesToScore out of range", NULL);
    fuzz_check(cfg->parallelism >= 0 && cfg->parallelism <= 1024, "parallelism out of range", NULL);
    fuzz_check(cfg->seed <= (uint64_t)INT64_MAX, "seed out of range", NULL);
    fuzz_check(cfg->pod_initial_backoff_ms >= 1000 &&
                   cfg->pod_initial_backoff_ms <= cfg->pod_max_backoff_ms &&
                   cfg->pod_max_backoff_ms <= 3600 * 1000,
               "pod backoffs out of order or range", NULL);
    fuzz_check(cfg->unschedulable_flush_ms > 0, "podMaxInUnschedulablePodsDuration not positive",
               NULL);
    const struct leader_election *le = &cfg->leader_election;
    fuzz_check(le->retry_period_ms > 0 && le->retry_period_ms < le->renew_deadline_ms &&
                   le->renew_deadline_ms < le->lease_duration_ms,
               "leader election timing out of order", NULL);
    fuzz_check(le->lease_name != NULL && le->lease_name[0] != '\0', "empty lease name", NULL);
    /* "" only as the default (the bridge's own namespace): a file cannot set it empty */
    fuzz_check(le->lease_namespace != NULL, "no lease namespace", NULL);
    fuzz_check(cfg->bridge_address != NULL && strstr(cfg->bridge_address, "://") != NULL,
               "bridge address is not a URL", cfg->bridge_address);
    check_plugins(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tree *root;
    struct kc_error err = {{0}};
    if (tree_parse_buffer("fuzz.yaml", (const char *)data, size, &root, &err) != 0)
        return 0;
    struct config cfg, zero;
    memset(&cfg, 0xa5, sizeof(cfg)); /* output only: whatever it held must not matter */
    memset(&zero, 0, sizeof(zero));
    err.message[0] = '\0';
    int rc = config_load_tree(root, &cfg, &err);
    if (rc == 0) {
        check_loaded(&cfg);
        config_free(&cfg);
    } else {
        fuzz_check(rc == -EINVAL || rc == -ENOMEM, "config_load_tree: undocumented code", NULL);
        fuzz_check(err.message[0] != '\0', "config_load_tree failed without a message", NULL);
        fuzz_check(memcmp(&cfg, &zero, sizeof(cfg)) == 0,
                   "config_load_tree failed and left cfg not zeroed", err.message);
    }
    tree_free(root);
    return 0;
}
