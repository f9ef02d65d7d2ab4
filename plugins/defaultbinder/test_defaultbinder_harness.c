/* defaultbinder on the plugin test harness, in both isolation modes: Bind asks the runtime's
 * binder to bind the pod to the chosen node and succeeds, silently. A failing binder stays in
 * test_defaultbinder.c (the fake host's binder can fail on demand). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "harness_test.h"

static void bind_asks_the_runtime_to_bind(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: node-1\n  - name: node-2\n"
                        "pods:\n  - name: trainer-0\n    namespace: team-a\n");
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "team-a/trainer-0"), KC_SUCCESS);
    kc_harness_clear_logs(harness);
    harness_expect_status("bind",
                          kc_harness_call(harness, "team-a/trainer-0", KC_HARNESS_BIND, "node-1"),
                          KC_SUCCESS);
    assert_true(kc_harness_bind_requested(harness));
    assert_int_equal(kc_harness_log_count(harness), 0);
    /* the other phases are not its business */
    harness_expect_status(
        "reserve", kc_harness_call(harness, "team-a/trainer-0", KC_HARNESS_RESERVE, "node-1"),
        KC_SUCCESS);
    assert_false(kc_harness_bind_requested(harness));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(bind_asks_the_runtime_to_bind),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
