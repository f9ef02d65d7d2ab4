/* The simulation timeline behind --report-html (sim_timeline.c) on small simulated runs:
 * reasons are grouped with their counts taken out, a long run is thinned to the sample limit
 * and still ends at the run's end, a heat map row is its nodes' load, repeated group statuses
 * are one change, and the page written from it holds every plot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "simulator.h"

#define CONFIG                                                                                     \
    "config:\n"                                                                                    \
    "  plugins: [{name: prioritysort}, {name: noderesources}, {name: defaultbinder}]\n"

struct run {
    char path[64];
    struct simulator sim;
};

/* Simulate body (nodes and workload after the config) with a timeline. */
static void run_start(struct run *r, const char *body)
{
    snprintf(r->path, sizeof(r->path), "/tmp/kcycle-timeline-XXXXXX");
    int fd = mkstemp(r->path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(CONFIG, f);
    fputs(body, f);
    fclose(f);
    struct sim_options opt = {
        .sim_path = r->path, .plugin_dir = KC_PLUGIN_BUILD_DIR, .report_html_path = "unused"};
    struct kc_error err = {{0}};
    int rc = simulator_open(&r->sim, &opt, &err);
    if (rc < 0)
        fail_msg("%s", err.message);
    assert_non_null(r->sim.timeline);
    assert_int_equal(simulator_run(&r->sim, false), 0);
}

static void run_end(struct run *r)
{
    simulator_close(&r->sim);
    unlink(r->path);
}

static uint32_t pending(const struct sim_sample *s)
{
    uint32_t sum = 0;
    for (uint32_t k = 0; k <= SIM_TIMELINE_MAX_REASONS; k++)
        sum += s->pending[k];
    return sum;
}

static void test_reasons_grouped_without_counts(void **state)
{
    (void)state;
    struct run r;
    run_start(&r, "nodes: [{name: n, count: 2, allocatable: {cpu: 1, pods: 10}}]\n"
                  "workload: [{name: p, count: 5, interval: 1s, requests: {cpu: 600m}}]\n");
    const struct sim_timeline *t = r.sim.timeline;
    assert_int_equal(t->reason_count, 1);
    assert_string_equal(t->reasons[0], "N/N nodes are available: N Insufficient cpu.");
    const struct sim_sample *last = &t->samples[t->sample_count - 1];
    assert_int_equal(last->pending[0], 3);
    assert_int_equal(pending(last), 3);
    assert_int_equal(last->at_ms, r.sim.now_ms);
    /* cpu first: 2 x 600m of 2 cores */
    assert_int_equal(t->resources[0], KC_RESOURCE_CPU);
    assert_int_equal(last->requested[0], 1200);
    assert_int_equal(last->allocatable[0], 2000);
    run_end(&r);
}

static void test_long_run_thinned_to_the_limit(void **state)
{
    (void)state;
    struct run r;
    run_start(&r, "nodes: [{name: n, count: 2, allocatable: {cpu: 100, pods: 5000}}]\n"
                  "workload: [{name: p, count: 3000, interval: 1s, requests: {cpu: 10m}}]\n");
    const struct sim_timeline *t = r.sim.timeline;
    assert_true(t->sample_count <= SIM_TIMELINE_MAX_SAMPLES);
    assert_true(t->sample_count >= SIM_TIMELINE_MAX_SAMPLES / 4);
    for (uint32_t i = 1; i < t->sample_count; i++)
        assert_true(t->samples[i].at_ms > t->samples[i - 1].at_ms);
    assert_true(t->samples[0].at_ms <= 16000);
    assert_int_equal(t->samples[t->sample_count - 1].at_ms, r.sim.now_ms);
    assert_int_equal(t->samples[t->sample_count - 1].requested[0], 30000);
    run_end(&r);
}

static void test_heat_map_row_is_its_nodes_load(void **state)
{
    (void)state;
    struct run r;
    /* 200 nodes in 128 rows, of one or two neighbouring nodes: the row of the node the one
     * pod fills is loaded, as the mean of its nodes' shares */
    run_start(&r, "nodes: [{name: n, count: 200, allocatable: {cpu: 1, pods: 10}}]\n"
                  "workload: [{name: p, count: 1, requests: {cpu: 1}}]\n");
    const struct sim_timeline *t = r.sim.timeline;
    assert_int_equal(t->row_count, SIM_TIMELINE_MAX_ROWS);
    const struct sim_sample *last = &t->samples[t->sample_count - 1];
    assert_non_null(last->rows);
    assert_non_null(r.sim.records[0].node);
    const struct cache_node *cn = cache_node(&r.sim.sched.cache, r.sim.records[0].node);
    assert_non_null(cn);
    for (uint32_t row = 0; row < t->row_count; row++) {
        uint32_t first = row * 200 / SIM_TIMELINE_MAX_ROWS;
        uint32_t end = (row + 1) * 200 / SIM_TIMELINE_MAX_ROWS;
        bool holds = cn->index >= first && cn->index < end;
        assert_int_equal(last->rows[row], holds ? (end - first == 1 ? 255 : 128) : 0);
    }
    run_end(&r);
}

static void test_repeated_group_status_is_one_change(void **state)
{
    (void)state;
    struct sim_timeline t;
    memset(&t, 0, sizeof(t));
    sim_timeline_group(&t, 0, "ml", "a", "Pending", 0);
    sim_timeline_group(&t, 5, "ml", "b", "Pending", 0);
    sim_timeline_group(&t, 10, "ml", "a", "Pending", 0); /* nothing new */
    sim_timeline_group(&t, 20, "ml", "a", "Scheduling", 3);
    sim_timeline_group(&t, 30, "ml", "a", "Scheduling", 3);
    sim_timeline_group(&t, 40, "ml", "b", "Failed", 0);
    assert_int_equal(t.group_count, 2);
    assert_string_equal(t.groups[0].name, "ml/a");
    assert_int_equal(t.change_count, 4);
    assert_int_equal(t.changes[2].at_ms, 20);
    assert_int_equal(t.changes[2].scheduled, 3);
    assert_string_equal(t.changes[3].phase, "Failed");
    assert_int_equal(t.changes[3].group, 1);
    sim_timeline_free(&t);
}

static void test_page_holds_every_plot(void **state)
{
    (void)state;
    struct run r;
    run_start(&r, "nodes: [{name: \"a<b>\", allocatable: {cpu: 1, pods: 10}}]\n"
                  "workload: [{name: p, count: 3, interval: 1s, requests: {cpu: 400m}}]\n");
    char out[64];
    snprintf(out, sizeof(out), "/tmp/kcycle-timeline-html-XXXXXX");
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    close(fd);
    struct kc_error err = {{0}};
    assert_int_equal(htmlreport_write(&r.sim, out, &err), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    static char page[1 << 20];
    size_t n = fread(page, 1, sizeof(page) - 1, f);
    page[n] = '\0';
    fclose(f);
    unlink(out);
    static const char *const wanted[] = {"id=\"plot-utilisation\"",
                                         "id=\"plot-heatmap\"",
                                         "id=\"plot-pending\"",
                                         "data-plot=\"groups\" data-state=\"absent\"",
                                         "data-plot=\"gpu\" data-state=\"absent\"",
                                         "data-plot=\"queue-shares\"",
                                         "id=\"placements\"",
                                         "a&lt;b&gt;",
                                         "Content-Security-Policy"};
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (strstr(page, wanted[i]) == NULL)
            fail_msg("the page lacks %s", wanted[i]);
    assert_null(strstr(page, "a<b>"));
    run_end(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reasons_grouped_without_counts),
        cmocka_unit_test(test_long_run_thinned_to_the_limit),
        cmocka_unit_test(test_heat_map_row_is_its_nodes_load),
        cmocka_unit_test(test_repeated_group_status_is_one_change),
        cmocka_unit_test(test_page_holds_every_plot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
