/* defaultbinder on the plugin test harness, in both isolation modes: Bind asks the runtime's
 * binder to bind the pod to the chosen node and succeeds, silently; a bind the runtime's binder
 * refuses is an error whose warning names the pod, the node and the error. */
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

/* The runtime's binder refuses (the API server said no): KC_ERROR, so the runtime unreserves
 * and retries with backoff, and a warning for operators naming the pod, node and error. */
static void a_failed_bind_is_an_error_naming_pod_and_node(void **state)
{
    (void)state;
    harness_start("{}", "nodes:\n  - name: node-1\n"
                        "pods:\n  - name: trainer-0\n    namespace: team-a\n");
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "team-a/trainer-0"), KC_SUCCESS);
    kc_harness_clear_logs(harness);
    kc_harness_set_bind_result(harness, -5);
    harness_expect_status(
        "bind", kc_harness_call(harness, "team-a/trainer-0", KC_HARNESS_BIND, "node-1"), KC_ERROR);
    assert_false(kc_harness_bind_requested(harness));
    assert_int_equal(kc_harness_log_count(harness), 1);
    assert_string_equal(kc_harness_log_at(harness, 0),
                        "WARN defaultbinder: binding pod team-a/trainer-0 to node node-1 failed "
                        "(error -5)");
    /* the binder answers again: the retry binds */
    kc_harness_set_bind_result(harness, 0);
    harness_expect_status("retry",
                          kc_harness_call(harness, "team-a/trainer-0", KC_HARNESS_BIND, "node-1"),
                          KC_SUCCESS);
    assert_true(kc_harness_bind_requested(harness));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(bind_asks_the_runtime_to_bind),
        HARNESS_TEST(a_failed_bind_is_an_error_naming_pod_and_node),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
