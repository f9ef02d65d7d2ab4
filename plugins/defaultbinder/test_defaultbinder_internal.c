/* defaultbinder's descriptor, called directly (no host at all): the plugin answers a host of
 * its ABI major and refuses any other. Its phases run on the harness
 * (test_defaultbinder_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <kcycle/kcycle.h>

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static void query_refuses_other_abi_major(void **state)
{
    (void)state;
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "defaultbinder");
    assert_non_null(descriptor->ops->bind);
    assert_null(descriptor->ops->queue_less);
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
