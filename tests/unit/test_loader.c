/* The in-process loader and the framework built on it: every way a plugin file can be wrong
 * is refused with a message that names the file and the problem, and the process survives. */
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
#include "error.h"
#include "framework.h"
#include "scheduler.h"

#ifndef KC_TEST_PLUGIN_DIR
#error "KC_TEST_PLUGIN_DIR must name the build directory of tests/plugins"
#endif
#ifndef KC_PLUGIN_BUILD_DIR
#error "KC_PLUGIN_BUILD_DIR must name the build directory of plugins/"
#endif

#define TEST_PLUGIN(name) KC_TEST_PLUGIN_DIR "/" name ".so"
#define SHIPPED_PLUGIN(name) KC_PLUGIN_BUILD_DIR "/" name "/" name ".so"
#define MAX_ENTRIES 8

/* A configuration built in memory, so these tests need no config parser. The strings are
 * borrowed from the test (never freed): config_free is not called on it. */
struct test_config {
    struct config cfg;
    struct plugin_config entries[MAX_ENTRIES];
};

static void test_config_init(struct test_config *tc)
{
    memset(tc, 0, sizeof(*tc));
    tc->cfg.scheduler_name = (char *)"kcycle";
    tc->cfg.seed = 1;
    tc->cfg.pod_initial_backoff_ms = 1000;
    tc->cfg.pod_max_backoff_ms = 10000;
    tc->cfg.unschedulable_flush_ms = 5 * 60 * 1000;
    tc->cfg.plugins = tc->entries;
}

static void test_config_add(struct test_config *tc, const char *name, const char *path,
                            bool required)
{
    assert_true(tc->cfg.plugin_count < MAX_ENTRIES);
    struct plugin_config *pc = &tc->entries[tc->cfg.plugin_count++];
    pc->name = (char *)name;
    pc->path = (char *)path;
    pc->weight = 1;
    pc->required = required;
    pc->args_json = (char *)"{}";
}

/* The shipped default set, loaded by explicit path so the test does not depend on the
 * search list. */
static void test_config_add_defaults(struct test_config *tc)
{
    test_config_add(tc, "prioritysort", SHIPPED_PLUGIN("prioritysort"), true);
    test_config_add(tc, "noderesources", SHIPPED_PLUGIN("noderesources"), true);
    test_config_add(tc, "defaultbinder", SHIPPED_PLUGIN("defaultbinder"), true);
}

/* Everything the process writes on stderr between begin and end, so a test can check what
 * an operator would read in the log. */
struct stderr_capture {
    FILE *file;
    int saved_fd;
};

static void capture_begin(struct stderr_capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved_fd = dup(STDERR_FILENO);
    assert_true(c->saved_fd >= 0);
    assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
}

/* Returns the captured text (malloc'd) and restores stderr. */
static char *capture_end(struct stderr_capture *c)
{
    fflush(stderr);
    assert_true(dup2(c->saved_fd, STDERR_FILENO) >= 0);
    close(c->saved_fd);
    long size = ftell(c->file);
    assert_true(size >= 0);
    char *text = calloc(1, (size_t)size + 1);
    assert_non_null(text);
    rewind(c->file);
    size_t got = fread(text, 1, (size_t)size, c->file);
    text[got] = '\0';
    fclose(c->file);
    return text;
}

static void assert_contains(const char *text, const char *needle)
{
    if (text == NULL || strstr(text, needle) == NULL)
        fail_msg("expected \"%s\" in: %s", needle, text != NULL ? text : "(null)");
}

/* A refused open must leave nothing behind: a later loader_close is harmless. */
static void assert_cleared(struct plugin *p)
{
    assert_null(p->dl_handle);
    assert_null(p->name);
    assert_null(p->path);
    loader_close(p);
}

/* A fresh directory for files the tests write; removed by remove_temp_dir. */
static char *make_temp_dir(void)
{
    char *dir = strdup("/tmp/kcycle-test-loader-XXXXXX");
    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

static char *write_temp_file(const char *dir, const char *name, const void *data, size_t size)
{
    char *path;
    assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void remove_temp(char *dir, char *file)
{
    if (file != NULL)
        unlink(file);
    rmdir(dir);
    free(file);
    free(dir);
}

/* ---- loader_open: files that are not acceptable plugins ---------------------------------- */

static void test_other_abi_major_is_refused_naming_file_and_both_versions(void **state)
{
    struct plugin p;
    struct kc_error err = {{0}};
    int rc = loader_open(TEST_PLUGIN("abi2"), &p, &err);
    assert_int_equal(rc, KC_ERR_ABI);
    char plugin_version[32], host_version[32];
    snprintf(plugin_version, sizeof(plugin_version), "ABI %u.0", KC_ABI_MAJOR + 1);
    snprintf(host_version, sizeof(host_version), "ABI %u.%u", KC_ABI_MAJOR, KC_ABI_MINOR);
    assert_contains(err.message, TEST_PLUGIN("abi2"));
    assert_contains(err.message, plugin_version);
    assert_contains(err.message, host_version);
    assert_cleared(&p);
}

static void test_newer_minor_is_refused(void **state)
{
    struct plugin p;
    struct kc_error err = {{0}};
    int rc = loader_open(TEST_PLUGIN("newerminor"), &p, &err);
    assert_int_equal(rc, KC_ERR_ABI);
    char plugin_version[32], host_version[32];
    snprintf(plugin_version, sizeof(plugin_version), "ABI %u.%u", KC_ABI_MAJOR, KC_ABI_MINOR + 1);
    snprintf(host_version, sizeof(host_version), "ABI %u.%u", KC_ABI_MAJOR, KC_ABI_MINOR);
    assert_contains(err.message, TEST_PLUGIN("newerminor"));
    assert_contains(err.message, plugin_version);
    assert_contains(err.message, host_version);
    assert_cleared(&p);
}

static void test_missing_entry_point_is_refused_naming_file_and_symbol(void **state)
{
    struct plugin p;
    struct kc_error err = {{0}};
    int rc = loader_open(TEST_PLUGIN("noquery"), &p, &err);
    assert_int_equal(rc, KC_ERR_NOT_PLUGIN);
    assert_contains(err.message, TEST_PLUGIN("noquery"));
    assert_contains(err.message, KC_PLUGIN_QUERY_SYMBOL);
    assert_cleared(&p);
}

static void test_file_that_is_not_a_shared_object_is_refused_naming_file(void **state)
{
    static const char garbage[] = "this is a text file, not an ELF shared object\n";
    char *dir = make_temp_dir();
    char *path = write_temp_file(dir, "garbage.so", garbage, sizeof(garbage) - 1);
    struct plugin p;
    struct kc_error err = {{0}};
    int rc = loader_open(path, &p, &err);
    assert_int_equal(rc, KC_ERR_NOT_PLUGIN);
    assert_contains(err.message, path);
    assert_contains(err.message, "shared object");
    assert_cleared(&p);
    remove_temp(dir, path);
}

static void test_empty_file_is_refused_naming_file(void **state)
{
    char *dir = make_temp_dir();
    char *path = write_temp_file(dir, "empty.so", "", 0);
    struct plugin p;
    struct kc_error err = {{0}};
    assert_int_equal(loader_open(path, &p, &err), KC_ERR_NOT_PLUGIN);
    assert_contains(err.message, path);
    assert_cleared(&p);
    remove_temp(dir, path);
}

static void test_nonexistent_file_is_refused_naming_file(void **state)
{
    struct plugin p;
    struct kc_error err = {{0}};
    const char *path = "/nonexistent/kcycle/plugins/ghost.so";
    assert_true(loader_open(path, &p, &err) < 0);
    assert_contains(err.message, path);
    assert_cleared(&p);
}

/* ---- loader_open: the shipped plugins ----------------------------------------------------- */

static void test_shipped_plugins_load_and_report_their_names(void **state)
{
    static const char *const names[] = {"prioritysort",    "noderesources",     "defaultbinder",
                                        "nodeunschedulable", "nodename", "tainttoleration",
                                        "nodeaffinity", "nodeports"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s/%s.so", KC_PLUGIN_BUILD_DIR, names[i], names[i]);
        struct plugin p;
        struct kc_error err = {{0}};
        int rc = loader_open(path, &p, &err);
        if (rc != 0)
            fail_msg("%s: %s", path, err.message);
        assert_string_equal(p.name, names[i]);
        assert_string_equal(p.path, path);
        assert_non_null(p.version);
        assert_true(p.version[0] != '\0');
        assert_int_equal(p.abi_major, KC_ABI_MAJOR);
        assert_true(p.abi_minor <= KC_ABI_MINOR);
        /* the copied table is always the host's full size, whatever the plugin's was */
        assert_int_equal(p.ops.struct_size, sizeof(kc_plugin_ops));
        assert_false(p.initialized);
        loader_close(&p);
        assert_null(p.dl_handle);
    }
}

static void test_loader_find_prefers_explicit_path_then_names_first_place_looked(void **state)
{
    char *path = loader_find("anything", "/explicit/anything.so", "/some/dir");
    assert_string_equal(path, "/explicit/anything.so");
    free(path);

    char *dir = make_temp_dir();
    unsetenv("KCYCLE_PLUGIN_DIR");
    path = loader_find("kcycle-no-such-plugin", NULL, dir);
    char expected[1024];
    snprintf(expected, sizeof(expected), "%s/kcycle-no-such-plugin.so", dir);
    assert_string_equal(path, expected);
    free(path);
    remove_temp(dir, NULL);
}

/* ---- framework_open ----------------------------------------------------------------------- */

static void test_shipped_plugins_open_through_the_framework(void **state)
{
    kc_host_api host;
    hostapi_fill(&host);
    struct test_config tc;
    test_config_init(&tc);
    test_config_add_defaults(&tc);
    struct framework fw;
    struct kc_error err = {{0}};
    int rc = framework_open(&fw, &tc.cfg, NULL, &host, &err);
    if (rc != 0)
        fail_msg("framework_open: %s", err.message);
    assert_int_equal(fw.count, 3);
    assert_string_equal(fw.plugins[0].name, "prioritysort");
    assert_string_equal(fw.plugins[1].name, "noderesources");
    assert_string_equal(fw.plugins[2].name, "defaultbinder");
    for (uint32_t i = 0; i < fw.count; i++)
        assert_true(fw.plugins[i].initialized);
    assert_ptr_equal(fw.queue_sort, &fw.plugins[0]);
    assert_int_equal(fw.phase_count[PHASE_FILTER], 1);
    assert_int_equal(fw.phase_count[PHASE_BIND], 1);
    framework_close(&fw);
}

static void test_init_failure_is_reported_naming_the_plugin(void **state)
{
    kc_host_api host;
    hostapi_fill(&host);
    struct test_config tc;
    test_config_init(&tc);
    test_config_add(&tc, "initfail", TEST_PLUGIN("initfail"), true);
    struct framework fw;
    struct kc_error err = {{0}};
    struct stderr_capture capture;
    capture_begin(&capture);
    int rc = framework_open(&fw, &tc.cfg, NULL, &host, &err);
    char *log = capture_end(&capture);
    assert_int_equal(rc, KC_ERR_PLUGIN);
    assert_contains(err.message, "initfail");
    assert_contains(err.message, "init failed");
    assert_contains(err.message, "-22");
    /* the plugin's own explanation reached the log, attributed to it */
    assert_contains(log, "plugin initfail");
    assert_contains(log, "refusing to start");
    free(log);
    /* a failed open leaves a closed framework: closing again is harmless */
    assert_int_equal(fw.count, 0);
    framework_close(&fw);
}

static void test_missing_plugin_error_names_the_path_looked_at(void **state)
{
    kc_host_api host;
    hostapi_fill(&host);
    char *dir = make_temp_dir();
    unsetenv("KCYCLE_PLUGIN_DIR");
    struct test_config tc;
    test_config_init(&tc);
    test_config_add(&tc, "kcycle-no-such-plugin", NULL, true);
    struct framework fw;
    struct kc_error err = {{0}};
    int rc = framework_open(&fw, &tc.cfg, dir, &host, &err);
    assert_true(rc < 0);
    char expected[1024];
    snprintf(expected, sizeof(expected), "%s/kcycle-no-such-plugin.so", dir);
    assert_contains(err.message, expected);
    framework_close(&fw);
    remove_temp(dir, NULL);
}

static void test_name_in_file_must_match_the_configured_name(void **state)
{
    kc_host_api host;
    hostapi_fill(&host);
    struct test_config tc;
    test_config_init(&tc);
    test_config_add(&tc, "notprioritysort", SHIPPED_PLUGIN("prioritysort"), true);
    struct framework fw;
    struct kc_error err = {{0}};
    assert_true(framework_open(&fw, &tc.cfg, NULL, &host, &err) < 0);
    assert_contains(err.message, SHIPPED_PLUGIN("prioritysort"));
    assert_contains(err.message, "'prioritysort'");
    assert_contains(err.message, "'notprioritysort'");
    framework_close(&fw);
}

static void test_optional_failing_plugins_are_left_out(void **state)
{
    kc_host_api host;
    hostapi_fill(&host);
    char *dir = make_temp_dir();
    static const char garbage[] = "\x7f"
                                  "ELF but not really";
    char *garbage_path = write_temp_file(dir, "garbage.so", garbage, sizeof(garbage) - 1);
    struct test_config tc;
    test_config_init(&tc);
    test_config_add(&tc, "prioritysort", SHIPPED_PLUGIN("prioritysort"), true);
    test_config_add(&tc, "abi2", TEST_PLUGIN("abi2"), false);
    test_config_add(&tc, "newerminor", TEST_PLUGIN("newerminor"), false);
    test_config_add(&tc, "noquery", TEST_PLUGIN("noquery"), false);
    test_config_add(&tc, "initfail", TEST_PLUGIN("initfail"), false);
    test_config_add(&tc, "garbage", garbage_path, false);
    test_config_add(&tc, "defaultbinder", SHIPPED_PLUGIN("defaultbinder"), true);
    struct framework fw;
    struct kc_error err = {{0}};
    struct stderr_capture capture;
    capture_begin(&capture);
    int rc = framework_open(&fw, &tc.cfg, NULL, &host, &err);
    char *log = capture_end(&capture);
    if (rc != 0)
        fail_msg("framework_open: %s", err.message);
    assert_int_equal(fw.count, 2);
    assert_string_equal(fw.plugins[0].name, "prioritysort");
    assert_string_equal(fw.plugins[1].name, "defaultbinder");
    for (uint32_t i = 0; i < fw.count; i++)
        assert_int_equal(fw.plugins[i].index, i);
    /* initfail's Filter must not be wired in: its init failed */
    assert_int_equal(fw.phase_count[PHASE_FILTER], 0);
    assert_int_equal(fw.phase_count[PHASE_BIND], 1);
    /* each one left out is named in the log, so an operator knows what is missing */
    assert_contains(log, TEST_PLUGIN("abi2"));
    assert_contains(log, TEST_PLUGIN("newerminor"));
    assert_contains(log, TEST_PLUGIN("noquery"));
    assert_contains(log, "initfail");
    assert_contains(log, garbage_path);
    free(log);
    framework_close(&fw);
    remove_temp(dir, garbage_path);
}

/* ---- scheduler_open ----------------------------------------------------------------------- */

static void test_scheduler_open_refuses_a_required_bad_plugin_and_can_open_again(void **state)
{
    struct test_config tc;
    test_config_init(&tc);
    test_config_add_defaults(&tc);
    test_config_add(&tc, "abi2", TEST_PLUGIN("abi2"), true);
    struct scheduler s;
    struct kc_error err = {{0}};
    assert_int_equal(scheduler_open(&s, &tc.cfg, NULL, NULL, NULL, &err), KC_ERR_ABI);
    assert_contains(err.message, TEST_PLUGIN("abi2"));
    scheduler_close(&s);

    /* the process is still usable: the good set opens and closes cleanly */
    test_config_init(&tc);
    test_config_add_defaults(&tc);
    memset(&err, 0, sizeof(err));
    int rc = scheduler_open(&s, &tc.cfg, NULL, NULL, NULL, &err);
    if (rc != 0)
        fail_msg("scheduler_open: %s", err.message);
    assert_int_equal(s.fw->count, 3);
    scheduler_close(&s);
}

static void test_scheduler_open_without_a_bind_plugin_is_refused(void **state)
{
    struct test_config tc;
    test_config_init(&tc);
    test_config_add(&tc, "prioritysort", SHIPPED_PLUGIN("prioritysort"), true);
    struct scheduler s;
    struct kc_error err = {{0}};
    assert_true(scheduler_open(&s, &tc.cfg, NULL, NULL, NULL, &err) < 0);
    assert_contains(err.message, "defaultbinder");
    scheduler_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_abi_major_is_refused_naming_file_and_both_versions),
        cmocka_unit_test(test_newer_minor_is_refused),
        cmocka_unit_test(test_missing_entry_point_is_refused_naming_file_and_symbol),
        cmocka_unit_test(test_file_that_is_not_a_shared_object_is_refused_naming_file),
        cmocka_unit_test(test_empty_file_is_refused_naming_file),
        cmocka_unit_test(test_nonexistent_file_is_refused_naming_file),
        cmocka_unit_test(test_shipped_plugins_load_and_report_their_names),
        cmocka_unit_test(test_loader_find_prefers_explicit_path_then_names_first_place_looked),
        cmocka_unit_test(test_shipped_plugins_open_through_the_framework),
        cmocka_unit_test(test_init_failure_is_reported_naming_the_plugin),
        cmocka_unit_test(test_missing_plugin_error_names_the_path_looked_at),
        cmocka_unit_test(test_name_in_file_must_match_the_configured_name),
        cmocka_unit_test(test_optional_failing_plugins_are_left_out),
        cmocka_unit_test(test_scheduler_open_refuses_a_required_bad_plugin_and_can_open_again),
        cmocka_unit_test(test_scheduler_open_without_a_bind_plugin_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
