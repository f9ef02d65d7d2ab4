/* Runtime logging to stderr: text lines ("kcycle: info: ...") or JSON lines (--log-format
 * json), and structured lines with fields (the scheduler's decision log), rate-limited per key
 * so that a pod retried every second does not flood the log with the same decision. */
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static kc_log_level current_level = KC_LOG_WARN;
static bool json_format;
static char tag[96]; /* "plugin host NAME: " in a plugin host, so its lines say whose they are */
static const char *const level_names[] = {"error", "warning", "info", "debug"};

void log_set_tag(const char *text)
{
    snprintf(tag, sizeof(tag), "%s%s", text != NULL ? text : "", text != NULL ? ": " : "");
}

void log_set_level(kc_log_level level)
{
    current_level = level;
}

kc_log_level log_level(void)
{
    return current_level;
}

int log_set_format(const char *name)
{
    if (strcmp(name, "text") == 0)
        json_format = false;
    else if (strcmp(name, "json") == 0)
        json_format = true;
    else
        return -EINVAL;
    return 0;
}

bool log_json(void)
{
    return json_format;
}

/* ---- a line being built ---- */

struct line {
    char text[4096];
    size_t length;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct line *l, const char *fmt, ...)
{
    if (l->length >= sizeof(l->text) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->text + l->length, sizeof(l->text) - l->length, fmt, ap);
    va_end(ap);
    if (n > 0)
        l->length +=
            (size_t)n < sizeof(l->text) - l->length ? (size_t)n : sizeof(l->text) - 1 - l->length;
}

/* A JSON string: quotes, backslashes and control characters escaped. */
static void add_json_string(struct line *l, const char *s)
{
    add(l, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c != '\0'; c++) {
        if (*c == '"' || *c == '\\')
            add(l, "\\%c", *c);
        else if (*c == '\n')
            add(l, "\\n");
        else if (*c < 0x20)
            add(l, "\\u%04x", *c);
        else
            add(l, "%c", *c);
    }
    add(l, "\"");
}

static void add_json_head(struct line *l, kc_log_level level)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40];
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    add(l, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\"", when, ts.tv_nsec / 1000000,
        level_names[level]);
    if (tag[0] != '\0') {
        char component[sizeof(tag)];
        snprintf(component, sizeof(component), "%s", tag);
        component[strlen(component) - 2] = '\0'; /* without ": " */
        add(l, ",\"component\":");
        add_json_string(l, component);
    }
}

static void emit(const struct line *l)
{
    fprintf(stderr, "%.*s\n", (int)l->length, l->text);
}

void log_msg(kc_log_level level, const char *fmt, ...)
{
    if (level > current_level)
        return;
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    struct line l = {.length = 0};
    if (json_format) {
        add_json_head(&l, level);
        add(&l, ",\"msg\":");
        add_json_string(&l, message);
        add(&l, "}");
    } else {
        add(&l, "kcycle: %s: %s%s", level_names[level], tag, message);
    }
    emit(&l);
}

/* ---- rate limiting of structured lines ---- */

#define RATE_SLOTS 256
#define RATE_WINDOW_MS 60000
#define RATE_LINES_PER_WINDOW 3

struct rate_slot {
    uint64_t hash;
    int64_t window_start_ms;
    uint32_t lines;      /* written in this window */
    uint32_t suppressed; /* dropped in this window, reported with the next line written */
};

static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rate_slot rate_slots[RATE_SLOTS];

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* true: write the line, with *suppressed lines of its key dropped since the last one written. */
static bool rate_allow(const char *key, uint32_t *suppressed)
{
    *suppressed = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    uint64_t h = hash_text(key);
    pthread_mutex_lock(&rate_lock);
    struct rate_slot *slot = &rate_slots[h % RATE_SLOTS];
    if (slot->hash != h || now - slot->window_start_ms >= RATE_WINDOW_MS) {
        /* a new key (it takes the slot over) or a new window: what was dropped is said now */
        *suppressed = slot->hash == h ? slot->suppressed : 0;
        *slot = (struct rate_slot){.hash = h, .window_start_ms = now};
    }
    bool allow = slot->lines < RATE_LINES_PER_WINDOW;
    if (allow) {
        slot->lines++;
        if (*suppressed == 0) {
            *suppressed = slot->suppressed;
            slot->suppressed = 0;
        }
    } else {
        slot->suppressed++;
    }
    pthread_mutex_unlock(&rate_lock);
    return allow;
}

static bool needs_quotes(const char *s)
{
    return s[0] == '\0' || strpbrk(s, " \"=\t\n") != NULL;
}

void log_fields(kc_log_level level, const char *msg, const struct log_field *fields, uint32_t count,
                const char *rate_key)
{
    if (level > current_level)
        return;
    uint32_t suppressed = 0;
    if (rate_key != NULL && !rate_allow(rate_key, &suppressed))
        return;
    struct line l = {.length = 0};
    if (json_format) {
        add_json_head(&l, level);
        add(&l, ",\"msg\":");
        add_json_string(&l, msg);
    } else {
        add(&l, "kcycle: %s: %s%s", level_names[level], tag, msg);
    }
    for (uint32_t i = 0; i < count; i++) {
        const struct log_field *f = &fields[i];
        if (!f->is_number && f->text == NULL)
            continue;
        if (json_format) {
            add(&l, ",");
            add_json_string(&l, f->key);
            add(&l, ":");
            if (f->is_number)
                add(&l, "%.6g", f->number);
            else
                add_json_string(&l, f->text);
        } else if (f->is_number) {
            add(&l, " %s=%.6g", f->key, f->number);
        } else if (needs_quotes(f->text)) {
            add(&l, " %s=", f->key);
            add_json_string(&l, f->text); /* the same quoting: a reader can undo it */
        } else {
            add(&l, " %s=%s", f->key, f->text);
        }
    }
    if (suppressed > 0)
        add(&l, json_format ? ",\"suppressed\":%u" : " suppressed=%u", suppressed);
    if (json_format)
        add(&l, "}");
    emit(&l);
}
