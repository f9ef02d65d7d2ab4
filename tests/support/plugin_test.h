/* What a plugin's cmocka test starts with: the plugin's ops and its state, started with "{}"
 * on a freshly reset fake host before each test and stopped after it, and the check that the
 * plugin refuses a host of another ABI major. Include after <cmocka.h>, with PLUGIN_TEST_NAME
 * defined as the plugin's name. */
#ifndef KC_TESTS_PLUGIN_TEST_H
#define KC_TESTS_PLUGIN_TEST_H

#include "fake_host.h"

static const kc_plugin_ops *ops;
static void *self;

/* Stop the running instance, if any, and start one with args on the full fake host. */
static inline void plugin_start(const char *args)
{
    if (self != NULL && ops->fini != NULL)
        ops->fini(self);
    self = NULL;
    assert_int_equal(ops->init(fake_host_api(), args, &self), 0);
}

static inline int plugin_setup(void **state)
{
    (void)state;
    fake_host_reset();
    fake_host.calling_plugin = PLUGIN_TEST_NAME;
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    self = NULL;
    plugin_start("{}");
    return 0;
}

static inline int plugin_teardown(void **state)
{
    (void)state;
    if (self != NULL && ops->fini != NULL)
        ops->fini(self);
    self = NULL;
    return 0;
}

static inline int plugin_group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

static inline void query_refuses_other_abi_major(void **state)
{
    (void)state;
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
    assert_string_equal(kc_plugin_query(KC_ABI_VERSION)->name, PLUGIN_TEST_NAME);
}

/* Score then NormalizeScore over count nodes in one cycle, as the runtime runs them for the
 * feasible nodes; the normalized scores must equal want (case names the failing case). */
static inline void plugin_check_scores(const char *name, const kc_pod *pod, const kc_node *nodes,
                                       uint32_t count, const int64_t *want)
{
    const kc_node *handles[FAKE_MAX_NODES];
    int64_t scores[FAKE_MAX_NODES];
    kc_cycle cycle;
    assert_true(count <= FAKE_MAX_NODES);
    fake_cycle_init(&cycle);
    for (uint32_t n = 0; n < count; n++) {
        handles[n] = &nodes[n];
        assert_int_equal(ops->score(self, &cycle, pod, &nodes[n], &scores[n]), KC_SUCCESS);
    }
    assert_int_equal(ops->normalize_score(self, &cycle, pod, handles, scores, count), KC_SUCCESS);
    for (uint32_t n = 0; n < count; n++)
        if (scores[n] != want[n])
            fail_msg("%s: node %u scores %lld, want %lld", name, n, (long long)scores[n],
                     (long long)want[n]);
    fake_cycle_clear(&cycle);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, plugin_setup, plugin_teardown)

#endif
