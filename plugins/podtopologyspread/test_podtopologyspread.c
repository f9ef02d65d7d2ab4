/* podtopologyspread's internal functions, called directly: the constraint parser
 * (spread_constraints.c), which reads the pod's constraints through the host, so the fake host
 * serves it. Every test of the plugin through its phases runs on the plugin test harness in
 * both modes (test_podtopologyspread_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fake_host.h"
#include "spread_constraints.h"

#include "spread_cases.h"

static int setup(void **state)
{
    (void)state;
    fake_host_reset();
    kc_plugin_attach(fake_host_api());
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    fake_host_release();
    return 0;
}

/* The quick count of whenUnsatisfiable words goes wrong when the word is also a label key: the
 * JSON is parsed though no constraint is of the action asked for. Then nothing is handed over
 * (the array was once handed over with a count of 0, and leaked). */
static void no_constraint_of_the_action_hands_nothing(void **state)
{
    (void)state;
    kc_pod incoming;
    fake_pod_init(&incoming, "ns", "incoming");
    incoming.constraints_json =
        LIST1(SOFT(1, "zone", "{\"matchLabels\":{\"whenUnsatisfiable\":\"x\"}}"));
    struct spread_constraint *list = (struct spread_constraint *)&incoming; /* not NULL */
    uint32_t count = 7;
    char error[256] = "";
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_DO_NOT_SCHEDULE, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 0);
    assert_null(list);
    /* the other action finds its constraint */
    assert_int_equal(spread_constraints_parse(&incoming, SPREAD_SCHEDULE_ANYWAY, &list, &count,
                                              error, sizeof(error)),
                     0);
    assert_int_equal(count, 1);
    assert_non_null(list);
    assert_string_equal(list[0].topology_key, "zone");
    spread_constraints_free(list, count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(no_constraint_of_the_action_hands_nothing, setup),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
