/* A metrics registry for /metrics: counters, gauges and histograms updated with relaxed atomics
 * on the hot path, written out in the Prometheus text exposition format (version 0.0.4).
 *
 * Series are registered (under a mutex, not on the hot path) by family name and a label string;
 * registering the same name and labels again returns the same series, so a caller may register
 * lazily. Every series lives as long as the registry: callers keep the pointers. Updates never
 * lock and never allocate; a scrape reads each value once, so a scrape during updates may see
 * a histogram's count and buckets a few observations apart, as Prometheus clients allow. */
#ifndef KC_CORE_METRICS_H
#define KC_CORE_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct metrics;

struct metric_counter {
    _Atomic uint64_t value;
};

struct metric_gauge {
    _Atomic int64_t value;
};

#define METRICS_MAX_BUCKETS 24

/* Observations are integers in a unit of the caller's choice (microseconds, a count); scale
 * turns them into the exported unit (1e6 for seconds from microseconds). */
struct metric_histogram {
    uint32_t bucket_count;
    double scale;
    int64_t bounds[METRICS_MAX_BUCKETS]; /* upper bounds in the observed unit, ascending */
    _Atomic uint64_t buckets[METRICS_MAX_BUCKETS + 1]; /* not cumulative; the last is +Inf */
    _Atomic int64_t sum;
};

/* 0 or -ENOMEM. metrics_close(NULL) is fine. */
int metrics_open(struct metrics **out);
void metrics_close(struct metrics *m);

/* Register (or find) a series. labels is the inside of the braces, already escaped (see
 * metrics_label), or "" for none. NULL when m is NULL or memory runs out: the update functions
 * accept NULL, so a caller without metrics needs no branches. name and help must be string
 * literals or otherwise outlive the registry. */
struct metric_counter *metrics_counter(struct metrics *m, const char *name, const char *help,
                                       const char *labels);
struct metric_gauge *metrics_gauge(struct metrics *m, const char *name, const char *help,
                                   const char *labels);
/* bounds: count upper bounds in the exported unit (seconds), ascending, at most
 * METRICS_MAX_BUCKETS; scale: observed units per exported unit. */
struct metric_histogram *metrics_histogram(struct metrics *m, const char *name, const char *help,
                                           const char *labels, const double *bounds, uint32_t count,
                                           double scale);

/* Prometheus's ExponentialBuckets(start, factor, count) into out (count entries). */
void metrics_exponential_buckets(double *out, double start, double factor, uint32_t count);

/* Append name="value" (value escaped: backslash, quote, newline) to buf of size bytes, with a
 * comma first when buf is not empty. Truncates rather than overflows. */
void metrics_label(char *buf, size_t size, const char *name, const char *value);

static inline void metric_add(struct metric_counter *c, uint64_t n)
{
    if (c != NULL)
        atomic_fetch_add_explicit(&c->value, n, memory_order_relaxed);
}

static inline void metric_inc(struct metric_counter *c)
{
    metric_add(c, 1);
}

/* Set a counter to a total another module keeps (a collector's job: see metrics_collector). */
static inline void metric_store(struct metric_counter *c, uint64_t v)
{
    if (c != NULL)
        atomic_store_explicit(&c->value, v, memory_order_relaxed);
}

static inline void metric_set(struct metric_gauge *g, int64_t v)
{
    if (g != NULL)
        atomic_store_explicit(&g->value, v, memory_order_relaxed);
}

static inline void metric_gauge_add(struct metric_gauge *g, int64_t v)
{
    if (g != NULL)
        atomic_fetch_add_explicit(&g->value, v, memory_order_relaxed);
}

void metric_observe(struct metric_histogram *h, int64_t value);

/* fn(ctx) runs at the start of every render, on the rendering thread, to copy figures that
 * another module keeps as totals of its own into their series (metric_store, metric_set). It
 * must not register series. One collector per registry; NULL removes it. */
void metrics_collector(struct metrics *m, void (*fn)(void *ctx), void *ctx);

/* The exposition text of every series (malloc'd, the caller frees), or NULL without memory. */
char *metrics_render(struct metrics *m, size_t *length);

#endif
