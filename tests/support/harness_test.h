/* What a shipped plugin's cmocka test on libkcycle-plugintest starts with: the plugin's built
 * .so (KC_PLUGIN_PATH, given by meson), a harness opened per test in the current isolation
 * mode, and a main that runs every test once in each mode. Include after <cmocka.h>. */
#ifndef KC_TESTS_HARNESS_TEST_H
#define KC_TESTS_HARNESS_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kcycle/plugintest.h>

static kc_harness_mode harness_mode;
static kc_harness *harness;

static inline const char *harness_mode_name(void)
{
    return harness_mode == KC_HARNESS_PROCESS ? "process" : "in-process";
}

/* Close the running harness, if any, and open the plugin under test in the current mode with
 * the rest of o; a failure fails the test with the harness's reason. */
static inline kc_harness *harness_start_options(kc_harness_options o)
{
    kc_harness_close(harness);
    harness = NULL;
    char error[1024] = "";
    o.struct_size = sizeof(o);
    o.mode = harness_mode;
    o.plugin = KC_PLUGIN_PATH;
    if (kc_harness_open(&o, &harness, error, sizeof(error)) < 0)
        fail_msg("%s: %s", harness_mode_name(), error);
    return harness;
}

/* With args over the cluster (simulation file YAML), with the plugins of more (a
 * NULL-terminated list of .so paths, or NULL) loaded beside the one under test. */
static inline kc_harness *harness_start_with(const char *args, const char *cluster_yaml,
                                             const char *const *more)
{
    return harness_start_options((kc_harness_options){
        .args_json = args, .cluster_yaml = cluster_yaml, .more_plugins = more});
}

/* The same with Filter on threads threads at once (kc_harness_options.filter_threads). */
static inline kc_harness *harness_start_threads(const char *args, const char *cluster_yaml,
                                                uint32_t threads)
{
    return harness_start_options((kc_harness_options){
        .args_json = args, .cluster_yaml = cluster_yaml, .filter_threads = threads});
}

static inline kc_harness *harness_start(const char *args, const char *cluster_yaml)
{
    return harness_start_with(args, cluster_yaml, NULL);
}

/* A harness whose pods without a node are pending pods the plugin hears of
 * (kc_harness_options.pending_pods_as_events), as the scheduler's cache sends them. */

/* With the plugins of more beside, the QueueSort of those named in queue_sort_off (NULL: none)
 * left out as `queueSort: false` does: coscheduling declaring groups beside a plugin that
 * sorts the queue. */
static inline kc_harness *harness_start_groups(const char *args, const char *cluster_yaml,
                                               const char *const *more,
                                               const char *const *queue_sort_off)
{
    return harness_start_options((kc_harness_options){.args_json = args,
                                                      .cluster_yaml = cluster_yaml,
                                                      .more_plugins = more,
                                                      .pending_pods_as_events = 1,
                                                      .queue_sort_off = queue_sort_off});
}

static inline kc_harness *harness_start_pending_with(const char *args, const char *cluster_yaml,
                                                     const char *const *more)
{
    return harness_start_groups(args, cluster_yaml, more, NULL);
}

static inline kc_harness *harness_start_pending(const char *args, const char *cluster_yaml)
{
    return harness_start_groups(args, cluster_yaml, NULL, NULL);
}

/* Fail with what the harness said when a cluster change or other 0/-errno call failed. */
#define harness_expect_ok(what, call)                                                              \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != 0)                                                                              \
            fail_msg("%s (%s): %d; error \"%s\"", (what), harness_mode_name(), rc_,                \
                     kc_harness_error(harness));                                                   \
    } while (0)

static inline int harness_teardown(void **state)
{
    (void)state;
    kc_harness_close(harness);
    harness = NULL;
    return 0;
}

/* A one-node cluster for tests that only open a harness (args). */
#define HARNESS_ONE_NODE "nodes:\n  - {name: n, allocatable: {cpu: 1}}\n"

/* Open with args that init must refuse: the test fails when the open succeeds, or when its
 * error lacks want (NULL: any error; the error carries the line the plugin logged as
 * "LEVEL plugin: message"). Returns the error, valid until the next call. */
static inline const char *harness_expect_open_error(const char *args, const char *want)
{
    static char error[2048];
    kc_harness_close(harness);
    harness = NULL;
    error[0] = '\0';
    kc_harness_options o = {
        .struct_size = sizeof(o),
        .mode = harness_mode,
        .plugin = KC_PLUGIN_PATH,
        .args_json = args,
        .cluster_yaml = HARNESS_ONE_NODE,
    };
    if (kc_harness_open(&o, &harness, error, sizeof(error)) == 0)
        fail_msg("%s: args %s accepted", harness_mode_name(), args);
    if (harness != NULL)
        fail_msg("%s: args %s: a failed open left a harness", harness_mode_name(), args);
    if (want != NULL && strstr(error, want) == NULL)
        fail_msg("%s: args %s: error \"%s\" lacks \"%s\"", harness_mode_name(), args, error,
                 want);
    return error;
}

/* Fail with the case's name, the mode and what the harness said. */
#define harness_expect_status(what, got, want)                                                     \
    do {                                                                                           \
        kc_status got_ = (got);                                                                    \
        if (got_ != (want))                                                                        \
            fail_msg("%s (%s): status %d, want %d; message \"%s\", error \"%s\"", (what),          \
                     harness_mode_name(), (int)got_, (int)(want), kc_harness_message(harness),     \
                     kc_harness_error(harness));                                                   \
    } while (0)

/* Append printf output to the string in buf (size bytes in all), cut at the end: tests build
 * their clusters' YAML with it. */
static inline void harness_append(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void harness_append(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    if (used < size)
        vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

/* The "key=value" words of spec after the first `skip`, as a YAML flow map appended to buf;
 * words with a prefix ("sel:k=v", "taint:k") are left to the caller. */
static inline void harness_yaml_labels(char *buf, size_t size, const char *spec, int skip)
{
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", spec);
    int index = 0, written = 0;
    harness_append(buf, size, "{");
    for (char *w = strtok(copy, " "); w != NULL; w = strtok(NULL, " "), index++) {
        char *eq = strchr(w, '=');
        if (index < skip || eq == NULL || strchr(w, ':') != NULL)
            continue;
        *eq = '\0';
        harness_append(buf, size, "%s'%s': '%s'", written++ > 0 ? ", " : "", w, eq + 1);
    }
    harness_append(buf, size, "}");
}

/* A '-quoted JSON object (the volume plugins' notation) as an entry of a YAML list: JSON is
 * YAML once its quotes are double. */
static inline void harness_yaml_object(char *buf, size_t size, const char *quoted)
{
    char json[2048];
    snprintf(json, sizeof(json), "%s", quoted);
    for (char *c = json; *c != '\0'; c++)
        if (*c == '\'')
            *c = '"';
    harness_append(buf, size, "  - %s\n", json);
}

/* Filter each of pods (count of them) on node: status want, with one reason that contains
 * text (a plugin's refusal of what it cannot parse, say). */
static inline void harness_expect_each_refused(const char *const *pods, size_t count,
                                               const char *node, kc_status want, const char *text)
{
    for (size_t i = 0; i < count; i++) {
        harness_expect_status(pods[i], kc_harness_filter(harness, pods[i], node), want);
        const char *message = kc_harness_message(harness);
        if (strstr(message, text) == NULL || strstr(message, "; ") != NULL)
            fail_msg("%s (%s): reason \"%s\", want one reason with \"%s\"", pods[i],
                     harness_mode_name(), message, text);
    }
}

#define HARNESS_TEST(name) cmocka_unit_test_teardown(name, harness_teardown)

/* Every test in both isolation modes: in this process, then in a kcycle-plugin-host child. */
static inline int harness_run_both_modes(const struct CMUnitTest *tests, size_t count)
{
    harness_mode = KC_HARNESS_IN_PROCESS;
    int failed = _cmocka_run_group_tests("in-process", tests, count, NULL, NULL);
    harness_mode = KC_HARNESS_PROCESS;
    return failed + _cmocka_run_group_tests("process", tests, count, NULL, NULL);
}
#define HARNESS_RUN_BOTH_MODES(tests)                                                              \
    harness_run_both_modes(tests, sizeof(tests) / sizeof((tests)[0]))

#endif
