/* The metrics registry and its Prometheus text rendering (see metrics.h). */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

struct series {
    char *labels;
    union {
        struct metric_counter counter;
        struct metric_gauge gauge;
        struct metric_histogram histogram;
    } u;
};

struct family {
    const char *name;
    const char *help;
    enum metric_type type;
    struct series **series;
    uint32_t series_count, series_capacity;
};

struct metrics {
    pthread_mutex_t lock; /* registration and rendering; never the updates */
    struct family *families;
    uint32_t family_count, family_capacity;
    void (*collect)(void *ctx);
    void *collect_ctx;
};

int metrics_open(struct metrics **out)
{
    *out = calloc(1, sizeof(**out));
    if (*out == NULL)
        return -ENOMEM;
    pthread_mutex_init(&(*out)->lock, NULL);
    return 0;
}

void metrics_close(struct metrics *m)
{
    if (m == NULL)
        return;
    for (uint32_t i = 0; i < m->family_count; i++) {
        struct family *f = &m->families[i];
        for (uint32_t k = 0; k < f->series_count; k++) {
            free(f->series[k]->labels);
            free(f->series[k]);
        }
        free(f->series);
    }
    free(m->families);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static struct family *family_find(struct metrics *m, const char *name, const char *help,
                                  enum metric_type type)
{
    for (uint32_t i = 0; i < m->family_count; i++)
        if (strcmp(m->families[i].name, name) == 0)
            return m->families[i].type == type ? &m->families[i] : NULL;
    if (m->family_count == m->family_capacity) {
        uint32_t capacity = m->family_capacity ? m->family_capacity * 2 : 32;
        struct family *grown = realloc(m->families, capacity * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        m->families = grown;
        m->family_capacity = capacity;
    }
    struct family *f = &m->families[m->family_count++];
    *f = (struct family){.name = name, .help = help, .type = type};
    return f;
}

/* The series of name{labels}, made when new; NULL without memory or when name is already a
 * family of another type (a programming error that must not corrupt the registry). */
struct histogram_shape {
    const double *bounds;
    uint32_t count;
    double scale;
};

static struct series *series_get(struct metrics *m, const char *name, const char *help,
                                 enum metric_type type, const char *labels,
                                 const struct histogram_shape *shape)
{
    if (m == NULL)
        return NULL;
    pthread_mutex_lock(&m->lock);
    struct series *s = NULL;
    struct family *f = family_find(m, name, help, type);
    if (f == NULL)
        goto out;
    for (uint32_t k = 0; k < f->series_count; k++)
        if (strcmp(f->series[k]->labels, labels) == 0) {
            s = f->series[k];
            goto out;
        }
    if (f->series_count == f->series_capacity) {
        uint32_t capacity = f->series_capacity ? f->series_capacity * 2 : 4;
        struct series **grown = realloc(f->series, capacity * sizeof(*grown));
        if (grown == NULL)
            goto out;
        f->series = grown;
        f->series_capacity = capacity;
    }
    s = calloc(1, sizeof(*s));
    if (s != NULL && (s->labels = strdup(labels)) == NULL) {
        free(s);
        s = NULL;
    }
    if (s != NULL) {
        if (shape != NULL) {
            /* filled before the series is published: a scrape renders it under this lock */
            struct metric_histogram *h = &s->u.histogram;
            h->bucket_count = shape->count;
            h->scale = shape->scale;
            for (uint32_t i = 0; i < shape->count; i++)
                h->bounds[i] = (int64_t)llround(shape->bounds[i] * shape->scale);
        }
        f->series[f->series_count++] = s;
    }
out:
    pthread_mutex_unlock(&m->lock);
    return s;
}

struct metric_counter *metrics_counter(struct metrics *m, const char *name, const char *help,
                                       const char *labels)
{
    struct series *s = series_get(m, name, help, METRIC_COUNTER, labels, NULL);
    return s != NULL ? &s->u.counter : NULL;
}

struct metric_gauge *metrics_gauge(struct metrics *m, const char *name, const char *help,
                                   const char *labels)
{
    struct series *s = series_get(m, name, help, METRIC_GAUGE, labels, NULL);
    return s != NULL ? &s->u.gauge : NULL;
}

struct metric_histogram *metrics_histogram(struct metrics *m, const char *name, const char *help,
                                           const char *labels, const double *bounds, uint32_t count,
                                           double scale)
{
    if (count > METRICS_MAX_BUCKETS)
        count = METRICS_MAX_BUCKETS;
    const struct histogram_shape shape = {.bounds = bounds, .count = count, .scale = scale};
    struct series *s = series_get(m, name, help, METRIC_HISTOGRAM, labels, &shape);
    return s != NULL ? &s->u.histogram : NULL;
}

void metrics_exponential_buckets(double *out, double start, double factor, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++, start *= factor)
        out[i] = start;
}

void metric_observe(struct metric_histogram *h, int64_t value)
{
    if (h == NULL)
        return;
    uint32_t i = 0;
    while (i < h->bucket_count && value > h->bounds[i])
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum, value, memory_order_relaxed);
}

void metrics_label(char *buf, size_t size, const char *name, const char *value)
{
    size_t at = strnlen(buf, size);
    if (at >= size)
        return;
    int n = snprintf(buf + at, size - at, "%s%s=\"", at > 0 ? "," : "", name);
    if (n < 0 || (size_t)n + 2 > size - at) { /* no room for the pair and its closing quote */
        buf[at] = '\0';
        return;
    }
    at += (size_t)n;
    for (const char *c = value != NULL ? value : ""; *c != '\0' && at + 3 < size; c++) {
        if (*c == '\\' || *c == '"' || *c == '\n') {
            buf[at++] = '\\';
            buf[at++] = *c == '\n' ? 'n' : *c;
        } else {
            buf[at++] = *c;
        }
    }
    if (at + 1 < size)
        buf[at++] = '"';
    buf[at] = '\0';
}

/* ---- rendering ---- */

struct text {
    char *data;
    size_t length, capacity;
    bool failed;
};

static void text_add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(struct text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data + t->length, t->capacity - t->length, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->capacity - t->length) {
            t->length += (size_t)n;
            return;
        }
        size_t capacity = t->capacity * 2 + (size_t)n;
        char *grown = realloc(t->data, capacity);
        if (grown == NULL) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->capacity = capacity;
    }
}

/* HELP text escapes backslash and newline only (the exposition format's rule). */
static void add_help(struct text *t, const struct family *f)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    text_add(t, "# HELP %s ", f->name);
    for (const char *c = f->help; *c != '\0'; c++)
        text_add(t, "%s", *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : (char[]){*c, '\0'});
    text_add(t, "\n# TYPE %s %s\n", f->name, types[f->type]);
}

static void add_histogram(struct text *t, const char *name, const struct series *s)
{
    const struct metric_histogram *h = &s->u.histogram;
    const char *comma = s->labels[0] != '\0' ? "," : "";
    uint64_t cumulative = 0;
    for (uint32_t i = 0; i <= h->bucket_count; i++) {
        cumulative += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        if (i < h->bucket_count)
            text_add(t, "%s_bucket{%s%sle=\"%.9g\"} %llu\n", name, s->labels, comma,
                     (double)h->bounds[i] / h->scale, (unsigned long long)cumulative);
        else
            text_add(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, s->labels, comma,
                     (unsigned long long)cumulative);
    }
    /* the count is the +Inf bucket, read once, so the two always agree */
    const char *open = s->labels[0] != '\0' ? "{" : "", *close = s->labels[0] != '\0' ? "}" : "";
    text_add(t, "%s_sum%s%s%s %.9g\n", name, open, s->labels, close,
             (double)atomic_load_explicit(&h->sum, memory_order_relaxed) / h->scale);
    text_add(t, "%s_count%s%s%s %llu\n", name, open, s->labels, close,
             (unsigned long long)cumulative);
}

void metrics_collector(struct metrics *m, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&m->lock);
    m->collect = fn;
    m->collect_ctx = ctx;
    pthread_mutex_unlock(&m->lock);
}

char *metrics_render(struct metrics *m, size_t *length)
{
    struct text t = {.data = malloc(4096), .capacity = 4096};
    if (t.data == NULL)
        return NULL;
    t.data[0] = '\0';
    if (m != NULL) {
        pthread_mutex_lock(&m->lock);
        if (m->collect != NULL)
            m->collect(m->collect_ctx);
        for (uint32_t i = 0; i < m->family_count; i++) {
            const struct family *f = &m->families[i];
            add_help(&t, f);
            for (uint32_t k = 0; k < f->series_count; k++) {
                const struct series *s = f->series[k];
                const char *open = s->labels[0] != '\0' ? "{" : "";
                const char *close = s->labels[0] != '\0' ? "}" : "";
                if (f->type == METRIC_COUNTER)
                    text_add(&t, "%s%s%s%s %llu\n", f->name, open, s->labels, close,
                             (unsigned long long)atomic_load_explicit(&s->u.counter.value,
                                                                      memory_order_relaxed));
                else if (f->type == METRIC_GAUGE)
                    text_add(
                        &t, "%s%s%s%s %lld\n", f->name, open, s->labels, close,
                        (long long)atomic_load_explicit(&s->u.gauge.value, memory_order_relaxed));
                else
                    add_histogram(&t, f->name, s);
            }
        }
        pthread_mutex_unlock(&m->lock);
    }
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    if (length != NULL)
        *length = t.length;
    return t.data;
}
