/* interpodaffinity's PreFilter called directly on the fake host with terms that are not JSON,
 * which no runtime sends (the runtime writes a pod's terms as JSON): the plugin refuses the pod
 * with its reason rather than failing. Every test of the plugin through its phases runs on the
 * plugin test harness in both modes (test_interpodaffinity_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#define PLUGIN_TEST_NAME "interpodaffinity"
#include "plugin_test.h"

static void terms_that_are_not_json_are_unresolvable(void **state)
{
    (void)state;
    kc_pod pod;
    fake_pod_init(&pod, "ns", "incoming");
    pod.constraints_json = "{\"podAntiAffinity\": not json";
    kc_cycle cycle;
    fake_cycle_init(&cycle);
    assert_int_equal(ops->pre_filter(self, &cycle, &pod), KC_UNRESOLVABLE);
    assert_int_equal(cycle.reason_count, 1);
    assert_non_null(strstr(cycle.reasons[0], "interpodaffinity: "));
    fake_cycle_clear(&cycle);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(terms_that_are_not_json_are_unresolvable),
    };
    return cmocka_run_group_tests(tests, NULL, plugin_group_teardown);
}
