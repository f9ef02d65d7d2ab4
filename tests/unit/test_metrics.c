/* The metrics registry: series found again by name and labels, the text format it renders
 * (escaping, cumulative buckets, +Inf, _sum and _count), updates from several threads, the
 * collector hook, and NULL-safety for a scheduler without metrics. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

static struct metrics *open_registry(void)
{
    struct metrics *m = NULL;
    assert_int_equal(metrics_open(&m), 0);
    return m;
}

static void same_name_and_labels_is_the_same_series(void **state)
{
    (void)state;
    struct metrics *m = open_registry();
    struct metric_counter *a = metrics_counter(m, "x_total", "X.", "result=\"a\"");
    struct metric_counter *b = metrics_counter(m, "x_total", "X.", "result=\"b\"");
    assert_non_null(a);
    assert_ptr_not_equal(a, b);
    assert_ptr_equal(metrics_counter(m, "x_total", "X.", "result=\"a\""), a);
    /* a family keeps its type: a gauge of the counter's name is refused */
    assert_null(metrics_gauge(m, "x_total", "X.", "result=\"c\""));
    metrics_close(m);
}

static void renders_counters_and_gauges_with_help_and_type(void **state)
{
    (void)state;
    struct metrics *m = open_registry();
    metric_add(metrics_counter(m, "c_total", "A counter.", ""), 41);
    metric_inc(metrics_counter(m, "c_total", "A counter.", ""));
    metric_set(metrics_gauge(m, "g", "A gauge\\with\nnewline.", "q=\"x\""), -3);
    char *text = metrics_render(m, NULL);
    assert_non_null(text);
    assert_string_equal(text, "# HELP c_total A counter.\n"
                              "# TYPE c_total counter\n"
                              "c_total 42\n"
                              "# HELP g A gauge\\\\with\\nnewline.\n"
                              "# TYPE g gauge\n"
                              "g{q=\"x\"} -3\n");
    free(text);
    metrics_close(m);
}

static void histogram_buckets_are_cumulative_with_inf_sum_and_count(void **state)
{
    (void)state;
    struct metrics *m = open_registry();
    double bounds[3];
    metrics_exponential_buckets(bounds, 0.001, 2, 3); /* 1 ms, 2 ms, 4 ms */
    struct metric_histogram *h =
        metrics_histogram(m, "d_seconds", "D.", "r=\"ok\"", bounds, 3, 1e6);
    metric_observe(h, 1000); /* exactly on a bound: counted in it (le) */
    metric_observe(h, 1500);
    metric_observe(h, 9000); /* over the last bound: only +Inf */
    char *text = metrics_render(m, NULL);
    assert_non_null(strstr(text, "d_seconds_bucket{r=\"ok\",le=\"0.001\"} 1\n"));
    assert_non_null(strstr(text, "d_seconds_bucket{r=\"ok\",le=\"0.002\"} 2\n"));
    assert_non_null(strstr(text, "d_seconds_bucket{r=\"ok\",le=\"0.004\"} 2\n"));
    assert_non_null(strstr(text, "d_seconds_bucket{r=\"ok\",le=\"+Inf\"} 3\n"));
    assert_non_null(strstr(text, "d_seconds_sum{r=\"ok\"} 0.0115\n"));
    assert_non_null(strstr(text, "d_seconds_count{r=\"ok\"} 3\n"));
    free(text);
    metrics_close(m);
}

static void label_values_are_escaped(void **state)
{
    (void)state;
    char labels[128] = "";
    metrics_label(labels, sizeof(labels), "plugin", "a\"b\\c\nd");
    metrics_label(labels, sizeof(labels), "status", "Success");
    assert_string_equal(labels, "plugin=\"a\\\"b\\\\c\\nd\",status=\"Success\"");
    char small[12] = "";
    metrics_label(small, sizeof(small), "plugin", "a-very-long-value");
    assert_true(strlen(small) < sizeof(small)); /* truncated, never overflowed */
}

/* Whatever the buffer's size, a pair is written whole with its closing quote or not at all
 * (a value may be cut short): an unclosed quote would break every line of the series. */
static void a_label_that_does_not_fit_keeps_its_closing_quote(void **state)
{
    (void)state;
    for (size_t size = 1; size <= 40; size++) {
        char buf[40];
        memset(buf, 'x', sizeof(buf));
        buf[0] = '\0';
        metrics_label(buf, size, "pluginx", "value");
        metrics_label(buf, size, "status", "Success");
        size_t length = strlen(buf);
        assert_true(length < size);
        size_t quotes = 0;
        for (size_t i = 0; i < length; i++)
            quotes += buf[i] == '"';
        assert_int_equal(quotes % 2, 0);
        if (length > 0)
            assert_int_equal(buf[length - 1], '"');
    }
}

struct adder {
    struct metric_counter *counter;
    struct metric_histogram *histogram;
};

static void *add_many(void *arg)
{
    struct adder *a = arg;
    for (int i = 0; i < 100000; i++) {
        metric_inc(a->counter);
        metric_observe(a->histogram, i % 3);
    }
    return NULL;
}

static void updates_from_several_threads_are_all_counted(void **state)
{
    (void)state;
    struct metrics *m = open_registry();
    double bounds[] = {1, 2};
    struct adder a = {metrics_counter(m, "n_total", "N.", ""),
                      metrics_histogram(m, "h", "H.", "", bounds, 2, 1)};
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, add_many, &a), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    char *text = metrics_render(m, NULL);
    assert_non_null(strstr(text, "n_total 400000\n"));
    assert_non_null(strstr(text, "h_count 400000\n"));
    free(text);
    metrics_close(m);
}

static void collect(void *ctx)
{
    metric_store(ctx, 7);
}

static void the_collector_runs_before_each_render(void **state)
{
    (void)state;
    struct metrics *m = open_registry();
    struct metric_counter *c = metrics_counter(m, "kept_total", "Kept elsewhere.", "");
    metrics_collector(m, collect, c);
    char *text = metrics_render(m, NULL);
    assert_non_null(strstr(text, "kept_total 7\n"));
    free(text);
    metrics_close(m);
}

static void without_a_registry_nothing_is_recorded_and_nothing_crashes(void **state)
{
    (void)state;
    assert_null(metrics_counter(NULL, "x_total", "X.", ""));
    metric_inc(NULL);
    metric_set(NULL, 1);
    metric_observe(NULL, 1);
    char *text = metrics_render(NULL, NULL);
    assert_string_equal(text, "");
    free(text);
    metrics_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_name_and_labels_is_the_same_series),
        cmocka_unit_test(renders_counters_and_gauges_with_help_and_type),
        cmocka_unit_test(histogram_buckets_are_cumulative_with_inf_sum_and_count),
        cmocka_unit_test(label_values_are_escaped),
        cmocka_unit_test(a_label_that_does_not_fit_keeps_its_closing_quote),
        cmocka_unit_test(updates_from_several_threads_are_all_counted),
        cmocka_unit_test(the_collector_runs_before_each_render),
        cmocka_unit_test(without_a_registry_nothing_is_recorded_and_nothing_crashes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
