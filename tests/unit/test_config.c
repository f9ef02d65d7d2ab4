/* config: defaults, YAML and JSON files written to a temporary directory, and the exact messages
 * for the mistakes users make (unknown keys, bad enums, out-of-range numbers, duplicates). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "pod_fields.h"
#include "tree.h"

static char tmp_dir[64];
static char last_path[128];

static int make_tmp_dir(void **state)
{
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/kcycle-config-test-XXXXXX");
    return mkdtemp(tmp_dir) == NULL ? -1 : 0;
}

static int remove_tmp_dir(void **state)
{
    return rmdir(tmp_dir);
}

/* Writes text to tmp_dir/name, loads it, removes it. last_path keeps the name for messages. */
static int load_text(const char *name, const char *text, struct config *cfg, struct kc_error *err)
{
    snprintf(last_path, sizeof(last_path), "%s/%s", tmp_dir, name);
    FILE *f = fopen(last_path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
    int rc = config_load_file(last_path, cfg, err);
    assert_int_equal(unlink(last_path), 0);
    return rc;
}

static void assert_zeroed(const struct config *cfg)
{
    static const struct config zero;
    assert_memory_equal(cfg, &zero, sizeof(zero));
}

/* Loads text expecting -EINVAL with the message "<path>:<where>". */
static void assert_load_error(const char *name, const char *text, const char *where)
{
    struct config cfg;
    struct kc_error err = {{0}};
    char expected[1024];
    assert_int_equal(load_text(name, text, &cfg, &err), -EINVAL);
    snprintf(expected, sizeof(expected), "%s:%s", last_path, where);
    assert_string_equal(err.message, expected);
    assert_zeroed(&cfg);
}

static void assert_default_plugin_weighted(const struct plugin_config *p, const char *name,
                                           int32_t weight)
{
    assert_string_equal(p->name, name);
    assert_null(p->path);
    assert_int_equal(p->weight, weight);
    assert_int_equal(p->isolation, ISOLATION_INPROCESS);
    assert_null(p->host);
    assert_int_equal(p->failure_policy, FAILURE_FAIL);
    assert_true(p->required);
    assert_string_equal(p->args_json, "{}");
}

static void assert_default_plugin(const struct plugin_config *p, const char *name)
{
    assert_default_plugin_weighted(p, name, 1);
}

static void assert_default_values(const struct config *cfg)
{
    assert_string_equal(cfg->scheduler_name, "kcycle");
    assert_int_equal(cfg->percentage_of_nodes_to_score, 0);
    assert_null(cfg->plugin_dir);
    assert_int_equal(cfg->parallelism, 0);
    assert_int_equal(cfg->seed, 1);
    assert_int_equal(cfg->pod_initial_backoff_ms, 1000);
    assert_int_equal(cfg->pod_max_backoff_ms, 10000);
    assert_int_equal(cfg->unschedulable_flush_ms, 300000);
    assert_true(cfg->leader_election.enabled);
    assert_int_equal(cfg->leader_election.lease_duration_ms, 15000);
    assert_int_equal(cfg->leader_election.renew_deadline_ms, 10000);
    assert_int_equal(cfg->leader_election.retry_period_ms, 2000);
    assert_string_equal(cfg->leader_election.lease_name, "kcycle");
    assert_string_equal(cfg->leader_election.lease_namespace, "");
    char bridge_url[96]; /* a private directory per user */
    snprintf(bridge_url, sizeof(bridge_url), "ipc:///tmp/kcycle-%u/bridge.ipc",
             (unsigned)geteuid());
    assert_string_equal(cfg->bridge_address, bridge_url);
    assert_true(cfg->refuse_unhandled_fields);
    assert_int_equal(cfg->ignored_unhandled_fields, 0);
    /* kube-scheduler's default profile order and weights */
    static const struct {
        const char *name;
        int32_t weight;
    } profile[] = {
        {"prioritysort", 1},    {"nodeunschedulable", 1}, {"nodename", 1},      {"tainttoleration", 3},
        {"nodeaffinity", 2},    {"nodeports", 1},         {"noderesources", 1},
        {"volumerestrictions", 1}, {"nodevolumelimits", 1}, {"volumebinding", 1},
        {"podtopologyspread", 2},  {"interpodaffinity", 2},
        {"defaultpreemption", 1}, {"defaultbinder", 1},
    };
    assert_int_equal(cfg->plugin_count, sizeof(profile) / sizeof(profile[0]));
    for (size_t i = 0; i < sizeof(profile) / sizeof(profile[0]); i++)
        assert_default_plugin_weighted(&cfg->plugins[i], profile[i].name, profile[i].weight);
}

/* ---- defaults ---- */

static void defaults_match_the_documented_values(void **state)
{
    struct config cfg;
    assert_int_equal(config_default(&cfg), 0);
    assert_null(cfg.file);
    assert_default_values(&cfg);
    config_free(&cfg);
    assert_zeroed(&cfg);
    config_free(&cfg); /* a zeroed config frees again safely */
}

static void empty_file_gives_the_defaults(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(load_text("empty.yaml", "", &cfg, &err), 0);
    assert_string_equal(cfg.file, last_path);
    assert_default_values(&cfg);
    config_free(&cfg);
}

static void missing_file_is_enoent_and_leaves_config_zeroed(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(config_load_file("/nonexistent/kcycle.yaml", &cfg, &err), -ENOENT);
    assert_non_null(strstr(err.message, "/nonexistent/kcycle.yaml: cannot open"));
    assert_zeroed(&cfg);
}

/* ---- full files ---- */

static const char full_yaml[] = "apiVersion: kcycle.io/v1alpha1\n"
                                "kind: KcycleSchedulerConfiguration\n"
                                "schedulerName: gang\n"
                                "percentageOfNodesToScore: 50\n"
                                "pluginDir: /opt/kcycle/plugins\n"
                                "parallelism: 8\n"
                                "seed: 42\n"
                                "podInitialBackoffSeconds: 2\n"
                                "podMaxBackoffSeconds: 30\n"
                                "podMaxInUnschedulablePodsDuration: 90s\n"
                                "plugins:\n"
                                "  - name: prioritysort\n"
                                "  - name: gpushare\n"
                                "    path: /srv/gpushare.so\n"
                                "    weight: 5\n"
                                "    isolation: process\n"
                                "    host: gpu\n"
                                "    failurePolicy: Ignore\n"
                                "    required: false\n"
                                "    args:\n"
                                "      binpack: true\n"
                                "      ratio: 0.5\n"
                                "      unknownToUs: {anything: [1, \"x\"]}\n"
                                "leaderElection:\n"
                                "  leaderElect: true\n"
                                "  leaseDuration: 30s\n"
                                "  renewDeadline: 20s\n"
                                "  retryPeriod: 5s\n"
                                "  resourceName: kcycle-gang\n"
                                "  resourceNamespace: scheduling\n"
                                "bridge:\n"
                                "  address: tcp://127.0.0.1:7070\n";

static const char full_json[] =
    "{\n"
    "\t\"apiVersion\": \"kcycle.io/v1alpha1\",\n"
    "\t\"kind\": \"KcycleSchedulerConfiguration\",\n"
    "\t\"schedulerName\": \"gang\",\n"
    "\t\"percentageOfNodesToScore\": 50,\n"
    "\t\"pluginDir\": \"/opt/kcycle/plugins\",\n"
    "\t\"parallelism\": 8,\n"
    "\t\"seed\": 42,\n"
    "\t\"podInitialBackoffSeconds\": 2,\n"
    "\t\"podMaxBackoffSeconds\": 30,\n"
    "\t\"podMaxInUnschedulablePodsDuration\": \"90s\",\n"
    "\t\"plugins\": [\n"
    "\t\t{\"name\": \"prioritysort\"},\n"
    "\t\t{\"name\": \"gpushare\", \"path\": \"/srv/gpushare.so\", \"weight\": 5,\n"
    "\t\t \"isolation\": \"process\", \"host\": \"gpu\", \"failurePolicy\": \"Ignore\",\n"
    "\t\t \"required\": false,\n"
    "\t\t \"args\": {\"binpack\": true, \"ratio\": 0.5,\n"
    "\t\t          \"unknownToUs\": {\"anything\": [1, \"x\"]}}}\n"
    "\t],\n"
    "\t\"leaderElection\": {\"leaderElect\": true, \"leaseDuration\": \"30s\",\n"
    "\t\t\"renewDeadline\": \"20s\", \"retryPeriod\": \"5s\", \"resourceName\": \"kcycle-gang\",\n"
    "\t\t\"resourceNamespace\": \"scheduling\"},\n"
    "\t\"bridge\": {\"address\": \"tcp://127.0.0.1:7070\"}\n"
    "}\n";

static void assert_full_values(const struct config *cfg)
{
    assert_string_equal(cfg->scheduler_name, "gang");
    assert_int_equal(cfg->percentage_of_nodes_to_score, 50);
    assert_string_equal(cfg->plugin_dir, "/opt/kcycle/plugins");
    assert_int_equal(cfg->parallelism, 8);
    assert_int_equal(cfg->seed, 42);
    assert_int_equal(cfg->pod_initial_backoff_ms, 2000);
    assert_int_equal(cfg->pod_max_backoff_ms, 30000);
    assert_int_equal(cfg->unschedulable_flush_ms, 90000);
    assert_true(cfg->leader_election.enabled);
    assert_int_equal(cfg->leader_election.lease_duration_ms, 30000);
    assert_int_equal(cfg->leader_election.renew_deadline_ms, 20000);
    assert_int_equal(cfg->leader_election.retry_period_ms, 5000);
    assert_string_equal(cfg->leader_election.lease_name, "kcycle-gang");
    assert_string_equal(cfg->leader_election.lease_namespace, "scheduling");
    assert_string_equal(cfg->bridge_address, "tcp://127.0.0.1:7070");
    assert_int_equal(cfg->plugin_count, 2); /* the list replaces the defaults */
    assert_default_plugin(&cfg->plugins[0], "prioritysort");
    const struct plugin_config *p = &cfg->plugins[1];
    assert_string_equal(p->name, "gpushare");
    assert_string_equal(p->path, "/srv/gpushare.so");
    assert_int_equal(p->weight, 5);
    assert_int_equal(p->isolation, ISOLATION_PROCESS);
    assert_string_equal(p->host, "gpu");
    assert_int_equal(p->failure_policy, FAILURE_IGNORE);
    assert_false(p->required);
    assert_string_equal(p->args_json, "{\"binpack\":true,\"ratio\":0.5,"
                                      "\"unknownToUs\":{\"anything\":[1,\"x\"]}}");
}

static void yaml_file_sets_every_key(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    if (load_text("full.yaml", full_yaml, &cfg, &err) != 0)
        fail_msg("%s", err.message);
    assert_string_equal(cfg.file, last_path);
    assert_full_values(&cfg);
    assert_int_equal(cfg.plugins[0].line, 12);
    assert_int_equal(cfg.plugins[0].column, 5);
    assert_int_equal(cfg.plugins[1].line, 13);
    assert_int_equal(cfg.plugins[1].column, 5);
    config_free(&cfg);
    assert_zeroed(&cfg);
}

static void tab_indented_json_file_sets_every_key(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    if (load_text("full.json", full_json, &cfg, &err) != 0)
        fail_msg("%s", err.message);
    assert_full_values(&cfg);
    assert_int_equal(cfg.plugins[1].line, 14);
    assert_int_equal(cfg.plugins[1].column, 3);
    config_free(&cfg);
}

static void empty_plugin_list_replaces_the_defaults(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(load_text("none.yaml", "plugins: []\n", &cfg, &err), 0);
    assert_int_equal(cfg.plugin_count, 0);
    config_free(&cfg);
    struct config defaults;
    assert_int_equal(config_default(&defaults), 0);
    assert_int_equal(load_text("null.yaml", "plugins:\npluginDir: ~\n", &cfg, &err), 0);
    assert_int_equal(cfg.plugin_count, defaults.plugin_count); /* null is the same as absent */
    config_free(&defaults);
    assert_null(cfg.plugin_dir);
    config_free(&cfg);
}

/* queueSort: false lets a second QueueSort plugin stay (coscheduling under capacityqueue). */
static void queue_sort_false_leaves_a_plugins_queue_sort_out(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(load_text("sort.yaml",
                               "plugins:\n  - name: capacityqueue\n  - name: coscheduling\n"
                               "    queueSort: false\n",
                               &cfg, &err),
                     0);
    assert_false(cfg.plugins[0].queue_sort_off);
    assert_true(cfg.plugins[1].queue_sort_off);
    config_free(&cfg);
    assert_load_error("sort-bad.yaml", "plugins:\n  - name: a\n    queueSort: maybe\n",
                      "3:16: key 'queueSort': 'maybe' is not a boolean; expected true or "
                      "false, without quotes");
}

static void a_parsed_subtree_loads_with_its_file_name(void **state)
{
    const char text[] = "nodes: []\nconfig:\n  schedulerName: sim\n  seed: 7\n";
    struct tree *root = NULL;
    struct kc_error err = {{0}};
    struct config cfg;
    assert_int_equal(tree_parse_buffer("cluster.yaml", text, strlen(text), &root, &err), 0);
    assert_int_equal(config_load_tree(tree_get(root, "config"), &cfg, &err), 0);
    assert_string_equal(cfg.file, "cluster.yaml");
    assert_string_equal(cfg.scheduler_name, "sim");
    assert_int_equal(cfg.seed, 7);
    config_free(&cfg);
    assert_int_equal(config_load_tree(root, &cfg, &err), -EINVAL);
    assert_string_equal(err.message, "cluster.yaml:1:1: key 'nodes': unknown key in the scheduler "
                                     "configuration; expected one of: apiVersion, kind, "
                                     "schedulerName, percentageOfNodesToScore, pluginDir, "
                                     "parallelism, seed, podInitialBackoffSeconds, "
                                     "podMaxBackoffSeconds, podMaxInUnschedulablePodsDuration, "
                                     "pluginTimeout, plugins, leaderElection, bridge, "
                                     "unhandledPodFields");
    tree_free(root);
}

/* ---- errors ---- */

static void unknown_top_level_key_names_its_position(void **state)
{
    assert_load_error("unknown.yaml", "schedulerName: a\nseed: 3\nschedulerNmae: b\n",
                      "3:1: key 'schedulerNmae': unknown key in the scheduler configuration; "
                      "expected one of: apiVersion, kind, schedulerName, "
                      "percentageOfNodesToScore, pluginDir, parallelism, seed, "
                      "podInitialBackoffSeconds, podMaxBackoffSeconds, "
                      "podMaxInUnschedulablePodsDuration, pluginTimeout, plugins, "
                      "leaderElection, bridge, unhandledPodFields");
}

static void unknown_keys_in_sections_are_errors_but_not_inside_args(void **state)
{
    assert_load_error("plugin-key.yaml", "plugins:\n  - name: a\n    wieght: 2\n",
                      "3:5: key 'wieght': unknown key in a plugin entry; expected one of: name, "
                      "path, weight, isolation, host, failurePolicy, required, args, "
                      "handles, queueSort");
    assert_load_error("leader-key.json", "{\"leaderElection\": {\"leaseDuraton\": \"15s\"}}",
                      "1:21: key 'leaseDuraton': unknown key in leaderElection; expected one of: "
                      "leaderElect, leaseDuration, renewDeadline, retryPeriod, resourceName, "
                      "resourceNamespace");
    assert_load_error("bridge-key.yaml", "bridge:\n  adress: tcp://x:1\n",
                      "2:3: key 'adress': unknown key in bridge; expected one of: address");
}

static void bad_enums_list_the_valid_values(void **state)
{
    assert_load_error("isolation.yaml", "plugins:\n  - name: a\n    isolation: sandbox\n",
                      "3:16: key 'isolation': 'sandbox' is not valid; expected inprocess or "
                      "process");
    assert_load_error("policy.json",
                      "{\"plugins\": [{\"name\": \"a\", \"failurePolicy\": \"fail\"}]}",
                      "1:45: key 'failurePolicy': 'fail' is not valid; expected Fail or Ignore");
}

static void out_of_range_numbers_state_the_range(void **state)
{
    assert_load_error("percentage.yaml", "percentageOfNodesToScore: 150\n",
                      "1:27: key 'percentageOfNodesToScore': 150 is out of range; expected an "
                      "integer from 0 to 100");
    assert_load_error("weight.yaml", "plugins:\n  - name: a\n    weight: 0\n",
                      "3:13: key 'weight': 0 is out of range; expected an integer from 1 to 1000");
    assert_load_error("parallelism.yaml", "parallelism: 2000\n",
                      "1:14: key 'parallelism': 2000 is out of range; expected an integer from 0 "
                      "to 1024");
    assert_load_error("seed.yaml", "seed: -1\n",
                      "1:7: key 'seed': -1 is out of range; expected an integer from 0 to "
                      "9223372036854775807");
}

static void missing_or_invalid_plugin_name_is_an_error(void **state)
{
    assert_load_error("noname.yaml", "plugins:\n  - name: a\n  - weight: 3\n",
                      "3:5: key 'name': missing in plugin entry 2; expected a plugin name made of "
                      "a-z, 0-9, '_' and '-' such as noderesources");
    assert_load_error("badname.yaml", "plugins:\n  - name: Node Resources\n",
                      "2:11: key 'name': 'Node Resources' is not a valid plugin name; expected a "
                      "plugin name made of a-z, 0-9, '_' and '-' such as noderesources");
    assert_load_error("notmap.yaml", "plugins:\n  - noderesources\n",
                      "2:5: key 'plugins': entry 1 is a single value; expected a map with at "
                      "least a name");
}

static void duplicate_plugins_name_both_positions(void **state)
{
    assert_load_error("dup.yaml",
                      "plugins:\n  - name: noderesources\n  - name: defaultbinder\n"
                      "  - name: noderesources\n    weight: 2\n",
                      "4:11: key 'name': plugin 'noderesources' is listed twice, first at 2:11; "
                      "expected each plugin once");
    assert_load_error("dupkey.yaml", "seed: 1\nseed: 2\n",
                      "2:1: key 'seed': duplicate key, first defined at 1:1; expected each key "
                      "once in a map");
}

static void wrong_api_version_and_kind_are_errors(void **state)
{
    assert_load_error("api.yaml", "apiVersion: v1\n",
                      "1:13: key 'apiVersion': 'v1' is not supported; expected "
                      "kcycle.io/v1alpha1");
    assert_load_error("kind.yaml", "kind: KubeSchedulerConfiguration\n",
                      "1:7: key 'kind': 'KubeSchedulerConfiguration' is not supported; expected "
                      "KcycleSchedulerConfiguration");
}

static void relations_between_keys_are_checked(void **state)
{
    assert_load_error("renew.yaml", "leaderElection:\n  renewDeadline: 20s\n",
                      "2:18: key 'renewDeadline': 20s is not shorter than leaseDuration (15s); "
                      "expected retryPeriod < renewDeadline < leaseDuration");
    assert_load_error("retry.yaml", "leaderElection:\n  retryPeriod: 10000ms\n",
                      "2:16: key 'retryPeriod': 10s is not shorter than renewDeadline (10s); "
                      "expected retryPeriod < renewDeadline < leaseDuration");
    assert_load_error("backoff.yaml", "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
                      "2:23: key 'podMaxBackoffSeconds': 2 is less than podInitialBackoffSeconds "
                      "(5); expected a value at least as large");
}

static void bad_values_of_other_types_are_errors(void **state)
{
    assert_load_error("dur.yaml", "podMaxInUnschedulablePodsDuration: 5 minutes\n",
                      "1:36: key 'podMaxInUnschedulablePodsDuration': '5 minutes' is not a "
                      "duration; expected a duration such as 10s, 1.5s, 250ms, 2m or 1h30m (a "
                      "plain number is seconds)");
    assert_load_error("bool.yaml", "leaderElection:\n  leaderElect: \"true\"\n",
                      "2:16: key 'leaderElect': \"true\" is quoted; expected true or false, "
                      "without quotes");
    assert_load_error("args.yaml", "plugins:\n  - name: a\n    args: [1]\n",
                      "3:11: key 'args': got a list; expected a map of plugin arguments");
    assert_load_error("plugins.yaml", "plugins: {name: a}\n",
                      "1:10: key 'plugins': got a map; expected a list of plugin entries");
    assert_load_error("bridge.yaml", "bridge:\n  address: /tmp/sock\n",
                      "2:12: key 'address': '/tmp/sock' is not an nng URL; expected a URL such as "
                      "ipc:///run/kcycle/bridge.sock or tcp://127.0.0.1:7070");
    assert_load_error("empty-name.yaml", "schedulerName: \"\"\n",
                      "1:16: key 'schedulerName': is empty; expected a non-empty string");
    assert_load_error("root.yaml", "- a\n",
                      "1:1: the scheduler configuration is a list; expected a map of settings "
                      "such as schedulerName");
}


/* ---- unhandledPodFields and handles ---- */

static void unhandled_pod_fields_turn_off_whole_or_per_field(void **state)
{
    struct config cfg;
    struct kc_error err = {{0}};
    assert_int_equal(load_text("off.yaml", "unhandledPodFields: {refuse: false}\n", &cfg, &err), 0);
    assert_false(cfg.refuse_unhandled_fields);
    config_free(&cfg);
    assert_int_equal(load_text("some.yaml",
                               "unhandledPodFields:\n"
                               "  ignore: [spec.topologySpreadConstraints, spec.resources]\n",
                               &cfg, &err),
                     0);
    assert_true(cfg.refuse_unhandled_fields);
    assert_int_equal(cfg.ignored_unhandled_fields,
                     POD_FIELD_TOPOLOGY_SPREAD | POD_FIELD_POD_RESOURCES);
    config_free(&cfg);
    assert_int_equal(load_text("handles.json",
                               "{\"plugins\": [{\"name\": \"myaffinity\", \"handles\": "
                               "[\"spec.affinity.podAffinity\", "
                               "\"spec.affinity.podAntiAffinity\"]}, {\"name\": \"other\"}]}\n",
                               &cfg, &err),
                     0);
    assert_int_equal(cfg.plugins[0].handles,
                     POD_FIELD_POD_AFFINITY | POD_FIELD_POD_ANTI_AFFINITY);
    assert_int_equal(cfg.plugins[1].handles, 0);
    config_free(&cfg);
}

static void unhandled_pod_fields_mistakes_name_their_position(void **state)
{
    char known[1024], expected[1400];
    pod_fields_format(pod_fields_all(), known, sizeof(known));
    snprintf(expected, sizeof(expected),
             "2:31: key 'ignore': 'spec.topologySpread' is not a pod field kcycle checks; "
             "expected one of %s",
             known);
    assert_load_error("typo.yaml", "unhandledPodFields:\n  ignore: [spec.nodeSelector, "
                                   "spec.topologySpread]\n",
                      expected + 0);
    assert_load_error("key.yaml", "unhandledPodFields:\n  refuse: true\n  skip: []\n",
                      "3:3: key 'skip': unknown key in unhandledPodFields; expected one of: "
                      "refuse, ignore");
    assert_load_error("bool.yaml", "unhandledPodFields: {refuse: \"no\"}\n",
                      "1:30: key 'refuse': \"no\" is quoted; expected true or false, without "
                      "quotes");
    assert_load_error("map.yaml", "plugins:\n  - name: a\n    handles: {x: 1}\n",
                      "3:14: key 'handles': got a map; expected a list of pod fields such as "
                      "[spec.topologySpreadConstraints]");
    assert_load_error("section.yaml", "unhandledPodFields: false\n",
                      "1:21: key 'unhandledPodFields': got a single value; expected a map");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_match_the_documented_values),
        cmocka_unit_test(empty_file_gives_the_defaults),
        cmocka_unit_test(missing_file_is_enoent_and_leaves_config_zeroed),
        cmocka_unit_test(yaml_file_sets_every_key),
        cmocka_unit_test(tab_indented_json_file_sets_every_key),
        cmocka_unit_test(empty_plugin_list_replaces_the_defaults),
        cmocka_unit_test(a_parsed_subtree_loads_with_its_file_name),
        cmocka_unit_test(queue_sort_false_leaves_a_plugins_queue_sort_out),
        cmocka_unit_test(unknown_top_level_key_names_its_position),
        cmocka_unit_test(unknown_keys_in_sections_are_errors_but_not_inside_args),
        cmocka_unit_test(bad_enums_list_the_valid_values),
        cmocka_unit_test(out_of_range_numbers_state_the_range),
        cmocka_unit_test(missing_or_invalid_plugin_name_is_an_error),
        cmocka_unit_test(duplicate_plugins_name_both_positions),
        cmocka_unit_test(wrong_api_version_and_kind_are_errors),
        cmocka_unit_test(relations_between_keys_are_checked),
        cmocka_unit_test(bad_values_of_other_types_are_errors),
        cmocka_unit_test(unhandled_pod_fields_turn_off_whole_or_per_field),
        cmocka_unit_test(unhandled_pod_fields_mistakes_name_their_position),
    };
    return cmocka_run_group_tests_name("config", tests, make_tmp_dir, remove_tmp_dir);
}
