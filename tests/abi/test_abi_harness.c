/* A plugin built against frozen SDK 1.0 or 1.1 headers (abi_plugin.c) behaves the same in a
 * 1.2 host in both isolation modes, through libkcycle-plugintest: the nodes it learned from
 * NODE_ADD events pass, the labelled one is rejected with its reason, the preferred one scores
 * 100. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness_test.h"

#if KC_ABI_PLUGIN_MINOR == 0
#define NAME "abi10"
#else
#define NAME "abi11"
#endif

static const char cluster[] = "nodes:\n"
                              "  - name: plain\n"
                              "  - name: rejected\n"
                              "    labels: {abi.kcycle.io/reject: 'true'}\n"
                              "  - name: preferred\n"
                              "    labels: {abi.kcycle.io/preferred: 'true'}\n"
                              "pods:\n"
                              "  - name: p\n";

static void filter_and_score_as_released(void **state)
{
    (void)state;
    harness_start("{}", cluster);
    harness_expect_status("evaluate", kc_harness_evaluate(harness, "p"), KC_SUCCESS);
    assert_true(kc_harness_feasible(harness, "plain"));
    assert_true(kc_harness_feasible(harness, "preferred"));
    assert_false(kc_harness_feasible(harness, "rejected"));
    assert_int_equal(kc_harness_reason_count(harness, NAME ": node labelled abi.kcycle.io/reject"),
                     1);
    assert_int_equal(kc_harness_score(harness, "preferred"), 100);
    assert_int_equal(kc_harness_score(harness, "plain"), 0);
    harness_expect_status("filter", kc_harness_filter(harness, "p", "rejected"), KC_UNSCHEDULABLE);
    assert_string_equal(kc_harness_message(harness), NAME ": node labelled abi.kcycle.io/reject");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        HARNESS_TEST(filter_and_score_as_released),
    };
    return HARNESS_RUN_BOTH_MODES(tests);
}
