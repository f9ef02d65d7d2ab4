/* coscheduling's descriptor, called directly (no host at all): it declares group_of, which is
 * ABI 1.1, with the minor of the SDK it is built with, and refuses another ABI major. Its phases
 * run on the harness (test_coscheduling_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <kcycle/kcycle.h>

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

static void query_declares_group_of_in_abi_1_1(void **state)
{
    (void)state;
    const kc_plugin_descriptor *descriptor = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(descriptor->name, "coscheduling");
    /* group_of is 1.1: the plugin declares the minor of the SDK it is built with, at least 1.1 */
    assert_int_equal(descriptor->abi_minor, KC_ABI_MINOR);
    assert_true(descriptor->abi_minor >= 1);
    assert_true(descriptor->ops->struct_size >= offsetof(kc_plugin_ops, group_of) + sizeof(void *));
    assert_non_null(descriptor->ops->group_of);
    assert_non_null(descriptor->ops->queue_less);
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_declares_group_of_in_abi_1_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
