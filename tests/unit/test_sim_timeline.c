/* The simulation timeline behind --report-html (sim_timeline.c) on small simulated runs:
 * reasons are grouped with their counts taken out, a long run is thinned to the sample limit
 * and still starts and ends with the run, a heat map row is its nodes' load, repeated group
 * statuses are one change, long group names stay apart, and the page written from it holds
 * every plot and runs its one script by hash. */
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
    char path[4096];
    struct simulator sim;
};

/* A new empty file in $TMPDIR (or /tmp), named after prefix; its path is in path. */
static void temp_file(char *path, size_t size, const char *prefix)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, size, "%s/%s-XXXXXX", dir != NULL && dir[0] != '\0' ? dir : "/tmp", prefix);
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

/* Simulate body (nodes and workload after the config) with a timeline. The input file is
 * removed before any check, so a failing test leaves nothing behind. */
static void run_start(struct run *r, const char *body)
{
    temp_file(r->path, sizeof(r->path), "kcycle-timeline");
    FILE *f = fopen(r->path, "w");
    assert_non_null(f);
    fputs(CONFIG, f);
    fputs(body, f);
    fclose(f);
    struct sim_options opt = {
        .sim_path = r->path, .plugin_dir = KC_PLUGIN_BUILD_DIR, .report_html_path = "unused"};
    struct kc_error err = {{0}};
    int rc = simulator_open(&r->sim, &opt, &err);
    unlink(r->path);
    if (rc < 0)
        fail_msg("%s", err.message);
    assert_non_null(r->sim.timeline);
    assert_int_equal(simulator_run(&r->sim, false), 0);
}

static void run_end(struct run *r)
{
    simulator_close(&r->sim);
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
    /* thinning keeps the run's first sample: the plots start where the run did */
    assert_int_equal(t->samples[0].at_ms, 0);
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

/* A pending pod parked at Permit keeps its last refusal as its reason (what kube shows on the
 * pod until it is bound); one never refused says where it waits rather than "not attempted
 * yet": the scheduler's waiting cycles are looked at (one is put there by hand). */
static void test_reason_of_a_pod_waiting_at_permit(void **state)
{
    (void)state;
    struct run r;
    run_start(&r, "nodes: [{name: n, allocatable: {cpu: 1, pods: 10}}]\n"
                  "workload: [{name: p, count: 2, requests: {cpu: 600m}}]\n");
    const struct sim_record *pending = r.sim.records[0].node == NULL ? &r.sim.records[0]
                                                                     : &r.sim.records[1];
    assert_null(pending->node);
    const char *before = report_record_reason(&r.sim, pending);
    assert_non_null(before);
    assert_null(strstr(before, "Permit"));
    struct sched_pod *sp = strmap_get(&r.sim.sched.pods, pending->uid);
    assert_non_null(sp);
    struct kc_cycle cycle = {.sp = sp};
    struct kc_waiting_pod waiting = {.cycle = &cycle, .group_hold = true};
    struct kc_waiting_pod *list[] = {&waiting};
    struct scheduler *s = &r.sim.sched;
    struct kc_waiting_pod **saved = s->waiting;
    uint32_t saved_count = s->waiting_count;
    s->waiting = list;
    s->waiting_count = 1;
    const char *during = report_record_reason(&r.sim, pending);
    char *refused = sp->reason;
    sp->reason = NULL; /* as for a pod whose first attempt waits */
    const char *first_wait = report_record_reason(&r.sim, pending);
    sp->reason = refused;
    s->waiting = saved;
    s->waiting_count = saved_count;
    assert_string_equal(during, before);
    assert_string_equal(first_wait, "waiting at Permit for its pod group");
    run_end(&r);
}

/* Group names are kept whole: two long names that differ only at the end are two groups. */
static void test_long_group_names_stay_apart(void **state)
{
    (void)state;
    char a[700], b[700];
    memset(a, 'x', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    memcpy(b, a, sizeof(b));
    a[sizeof(a) - 2] = 'a';
    b[sizeof(b) - 2] = 'b';
    struct sim_timeline t;
    memset(&t, 0, sizeof(t));
    sim_timeline_group(&t, 0, "ml", a, "Pending", 0);
    sim_timeline_group(&t, 10, "ml", b, "Scheduling", 2);
    assert_int_equal(t.group_count, 2);
    assert_int_equal(t.change_count, 2);
    assert_int_equal(strlen(t.groups[1].name), strlen("ml/") + strlen(b));
    assert_int_equal(t.changes[1].group, 1);
    sim_timeline_free(&t);
}

static void test_page_holds_every_plot(void **state)
{
    (void)state;
    struct run r;
    run_start(&r, "nodes: [{name: \"a<b>\", allocatable: {cpu: 1, pods: 10}}]\n"
                  "workload: [{name: p, count: 3, interval: 1s, requests: {cpu: 400m}}]\n");
    char out[4096];
    temp_file(out, sizeof(out), "kcycle-timeline-html");
    struct kc_error err = {{0}};
    int rc = htmlreport_write(&r.sim, out, &err);
    FILE *f = fopen(out, "r");
    unlink(out);
    assert_int_equal(rc, 0);
    assert_non_null(f);
    static char page[1 << 20];
    size_t n = fread(page, 1, sizeof(page) - 1, f);
    page[n] = '\0';
    fclose(f);
    static const char *const wanted[] = {"id=\"plot-utilisation\"",
                                         "id=\"plot-heatmap\"",
                                         "id=\"plot-pending\"",
                                         "data-plot=\"groups\" data-state=\"absent\"",
                                         "data-plot=\"gpu\" data-state=\"absent\"",
                                         "data-plot=\"queue-shares\"",
                                         "id=\"placements\"",
                                         "a&lt;b&gt;",
                                         "Content-Security-Policy",
                                         "script-src 'sha256-"};
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (strstr(page, wanted[i]) == NULL)
            fail_msg("the page lacks %s", wanted[i]);
    assert_null(strstr(page, "a<b>"));
    assert_null(strstr(page, "script-src 'unsafe-inline'"));
    run_end(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reasons_grouped_without_counts),
        cmocka_unit_test(test_long_run_thinned_to_the_limit),
        cmocka_unit_test(test_heat_map_row_is_its_nodes_load),
        cmocka_unit_test(test_repeated_group_status_is_one_change),
        cmocka_unit_test(test_reason_of_a_pod_waiting_at_permit),
        cmocka_unit_test(test_long_group_names_stay_apart),
        cmocka_unit_test(test_page_holds_every_plot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
