/* nodename's descriptor, called directly (no host): which phases the plugin has, and that it
 * refuses a host of another ABI major (an ABI test). Every test of the plugin through its
 * phases runs on the plugin test harness in both modes (test_nodename_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <kcycle/plugin.h>

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static void has_no_score_or_binding_phases(void **state)
{
    (void)state;
    const kc_plugin_ops *ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_non_null(ops->pre_filter);
    assert_non_null(ops->filter);
    assert_null(ops->score);
    assert_null(ops->normalize_score);
    assert_null(ops->bind);
    assert_null(ops->reserve);
}

static void query_refuses_other_abi_major(void **state)
{
    (void)state;
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
    assert_string_equal(kc_plugin_query(KC_ABI_VERSION)->name, "nodename");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(has_no_score_or_binding_phases),
        cmocka_unit_test(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
