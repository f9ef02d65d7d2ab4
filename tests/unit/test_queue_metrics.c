/* The per-queue gauges (kcycle_queue_*) that sched_metrics sets from the capacityqueue plugin's
 * object status: figures as reported, a resource that leaves the status drops to 0, other kinds
 * and unreadable status are ignored, and the number of queues exported is capped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "metrics.h"
#include "sched_metrics.h"
#include "scheduler.h"

struct fixture {
    struct config cfg;
    struct scheduler s;
    struct metrics *registry;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->cfg.scheduler_name = "kcycle";
    f->s.cfg = &f->cfg;
    assert_int_equal(metrics_open(&f->registry), 0);
    assert_int_equal(sched_metrics_open(&f->s, f->registry), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    sched_metrics_close(&f->s);
    metrics_close(f->registry);
    free(f);
    return 0;
}

static char *render(struct fixture *f)
{
    size_t length = 0;
    char *text = metrics_render(f->registry, &length);
    assert_non_null(text);
    return text;
}

static unsigned count(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void a_status_sets_the_queue_gauges(void **state)
{
    struct fixture *f = *state;
    sched_metrics_object_status(&f->s, "CapacityQueue", "research",
                                "{\"used\":{\"cpu\":\"8000m\",\"memory\":\"1073741824\"},"
                                "\"borrowed\":{\"cpu\":\"4000m\"},\"pending\":2,\"admitted\":8,"
                                "\"valid\":true}");
    char *text = render(f);
    assert_non_null(strstr(text, "kcycle_queue_used{queue=\"research\",resource=\"cpu\"} 8000\n"));
    assert_non_null(
        strstr(text, "kcycle_queue_used{queue=\"research\",resource=\"memory\"} 1073741824\n"));
    assert_non_null(
        strstr(text, "kcycle_queue_borrowed{queue=\"research\",resource=\"cpu\"} 4000\n"));
    assert_non_null(strstr(text, "kcycle_queue_pending_pods{queue=\"research\"} 2\n"));
    assert_non_null(strstr(text, "kcycle_queue_admitted_pods{queue=\"research\"} 8\n"));
    assert_non_null(strstr(text, "# TYPE kcycle_queue_used gauge\n"));
    free(text);
    /* the reclaim: borrowed gone from the status, used down */
    sched_metrics_object_status(&f->s, "CapacityQueue", "research",
                                "{\"used\":{\"cpu\":\"4000m\"},\"borrowed\":{},\"pending\":0,"
                                "\"admitted\":4}");
    text = render(f);
    assert_non_null(strstr(text, "kcycle_queue_used{queue=\"research\",resource=\"cpu\"} 4000\n"));
    assert_non_null(strstr(text, "kcycle_queue_used{queue=\"research\",resource=\"memory\"} 0\n"));
    assert_non_null(strstr(text, "kcycle_queue_borrowed{queue=\"research\",resource=\"cpu\"} 0\n"));
    assert_non_null(strstr(text, "kcycle_queue_pending_pods{queue=\"research\"} 0\n"));
    assert_non_null(strstr(text, "kcycle_queue_admitted_pods{queue=\"research\"} 4\n"));
    free(text);
}

static void other_kinds_and_unreadable_status_are_ignored(void **state)
{
    struct fixture *f = *state;
    sched_metrics_object_status(&f->s, "PodGroup", "g", "{\"pending\":3}");
    sched_metrics_object_status(&f->s, "CapacityQueue", "broken", "{\"pending\":");
    char *text = render(f);
    assert_null(strstr(text, "kcycle_queue_"));
    free(text);
}

static void queues_beyond_the_cap_get_no_series(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < SCHED_METRICS_MAX_QUEUES + 44; i++) {
        char name[32];
        snprintf(name, sizeof(name), "q-%03d", i);
        sched_metrics_object_status(&f->s, "CapacityQueue", name,
                                    "{\"used\":{\"cpu\":\"1000m\"},\"pending\":1,\"admitted\":1}");
    }
    char *text = render(f);
    assert_int_equal(count(text, "kcycle_queue_pending_pods{"), SCHED_METRICS_MAX_QUEUES);
    assert_int_equal(count(text, "kcycle_queue_used{"), SCHED_METRICS_MAX_QUEUES);
    assert_non_null(strstr(text, "kcycle_queue_pending_pods{queue=\"q-255\"} 1\n"));
    assert_null(strstr(text, "queue=\"q-256\""));
    free(text);
    /* a queue already exported keeps updating past the cap */
    sched_metrics_object_status(&f->s, "CapacityQueue", "q-000",
                                "{\"used\":{\"cpu\":\"0m\"},\"pending\":5,\"admitted\":0}");
    text = render(f);
    assert_non_null(strstr(text, "kcycle_queue_pending_pods{queue=\"q-000\"} 5\n"));
    free(text);
}

static void without_metrics_nothing_happens(void **state)
{
    (void)state;
    struct config cfg = {.scheduler_name = "kcycle"};
    struct scheduler s = {.cfg = &cfg};
    sched_metrics_object_status(&s, "CapacityQueue", "q", "{\"pending\":1}");
    assert_null(s.metrics);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_status_sets_the_queue_gauges, setup, teardown),
        cmocka_unit_test_setup_teardown(other_kinds_and_unreadable_status_are_ignored, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(queues_beyond_the_cap_get_no_series, setup, teardown),
        cmocka_unit_test(without_metrics_nothing_happens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
