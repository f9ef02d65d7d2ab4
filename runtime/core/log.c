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
#include <stdlib.h>
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

/* ---- a line being built ----
 *
 * Pieces are appended whole or not at all, up to LINE_LIMIT; the bytes past it are kept for
 * the end of a cut line ("..." and the closing quote of the string being cut, then "}"), so
 * that a long JSON line is cut short but still parses. */

#define LINE_SIZE 4096
#define LINE_LIMIT (LINE_SIZE - 8)

struct line {
    char text[LINE_SIZE];
    size_t length;
    bool full; /* a piece did not fit: nothing more is appended but the end */
};

static bool add_bytes(struct line *l, const char *bytes, size_t n)
{
    if (l->full || l->length + n > LINE_LIMIT) {
        l->full = true;
        return false;
    }
    memcpy(l->text + l->length, bytes, n);
    l->length += n;
    return true;
}

/* The end of a line, in the reserved bytes: always fits. */
static void add_end(struct line *l, const char *text)
{
    size_t n = strlen(text);
    if (l->length + n < sizeof(l->text)) {
        memcpy(l->text + l->length, text, n);
        l->length += n;
    }
}

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct line *l, const char *fmt, ...)
{
    char piece[LINE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    if (n > 0)
        add_bytes(l, piece, (size_t)n < sizeof(piece) ? (size_t)n : sizeof(piece) - 1);
}

/* The length of the well-formed UTF-8 sequence at c (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 when the bytes there are not one. */
static size_t utf8_length(const unsigned char *c)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (c[0] >= 0xc2 && c[0] <= 0xdf)
        n = 2;
    else if (c[0] >= 0xe0 && c[0] <= 0xef) {
        n = 3;
        if (c[0] == 0xe0)
            lo = 0xa0;
        else if (c[0] == 0xed)
            hi = 0x9f;
    } else if (c[0] >= 0xf0 && c[0] <= 0xf4) {
        n = 4;
        if (c[0] == 0xf0)
            lo = 0x90;
        else if (c[0] == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (c[1] < lo || c[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (c[i] < 0x80 || c[i] > 0xbf)
            return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped, bytes that are not UTF-8
 * replaced by U+FFFD. Cut short with "..." (and still closed) when the line is full. */
static void add_json_string(struct line *l, const char *s)
{
    if (!add_bytes(l, "\"", 1))
        return;
    for (const unsigned char *c = (const unsigned char *)s; *c != '\0';) {
        char unit[8];
        size_t n = 1, step = 1;
        if (*c == '"' || *c == '\\')
            n = (size_t)snprintf(unit, sizeof(unit), "\\%c", *c);
        else if (*c == '\n')
            n = (size_t)snprintf(unit, sizeof(unit), "\\n");
        else if (*c < 0x20)
            n = (size_t)snprintf(unit, sizeof(unit), "\\u%04x", *c);
        else if (*c < 0x80)
            unit[0] = (char)*c;
        else if ((n = utf8_length(c)) > 0)
            memcpy(unit, c, step = n);
        else
            n = (size_t)snprintf(unit, sizeof(unit), "\\ufffd");
        if (!add_bytes(l, unit, n)) {
            add_end(l, "...\"");
            return;
        }
        c += step;
    }
    if (!add_bytes(l, "\"", 1))
        add_end(l, "...\"");
}

/* A number as JSON or text: an integer without a fraction, else the fewest digits that read
 * back as the same double. */
static void add_number(struct line *l, double x)
{
    if (x == (double)(long long)x && x > -9007199254740992.0 && x < 9007199254740992.0) {
        add(l, "%lld", (long long)x);
        return;
    }
    char text[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(text, sizeof(text), "%.*g", digits, x);
        if (strtod(text, NULL) == x)
            break;
    }
    if (x != x || x - x != 0)
        snprintf(text, sizeof(text), "null"); /* NaN and infinities are not JSON numbers */
    add(l, "%s", text);
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
        add_end(&l, "}");
    } else {
        add(&l, "kcycle: %s: %s%s", level_names[level], tag, message);
    }
    emit(&l);
}

/* ---- rate limiting of structured lines ---- */

#define RATE_WINDOW_MS 60000
#define RATE_LINES_PER_WINDOW 3

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* true: write the line, with *suppressed lines dropped since the last one written. */
static bool rate_allow(struct log_rate *rate, const char *key, uint32_t *suppressed)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    uint64_t h = hash_text(key);
    if (rate->hash != h || rate->lines == 0 || now - rate->window_start_ms >= RATE_WINDOW_MS) {
        /* another outcome or a new window: a new count, what was dropped is said now */
        rate->hash = h;
        rate->window_start_ms = now;
        rate->lines = 0;
    }
    if (rate->lines >= RATE_LINES_PER_WINDOW) {
        rate->suppressed++;
        return false;
    }
    rate->lines++;
    *suppressed = rate->suppressed;
    rate->suppressed = 0;
    return true;
}

static bool needs_quotes(const char *s)
{
    return s[0] == '\0' || strpbrk(s, " \"=\t\n") != NULL;
}

/* One field, "key": first, whole or not at all: a cut line never ends after a key. */
static void add_field(struct line *l, const struct log_field *f)
{
    char head[128];
    int n = snprintf(head, sizeof(head), json_format ? ",\"%s\":" : " %s=", f->key);
    if (n < 0 || (size_t)n >= sizeof(head))
        return;
    /* the key with room for its value's first bytes (a number, or a string cut to "...") */
    if (l->full || l->length + (size_t)n + (f->is_number ? 24 : 2) > LINE_LIMIT) {
        l->full = true;
        return;
    }
    add_bytes(l, head, (size_t)n);
    if (f->is_number)
        add_number(l, f->number);
    else if (json_format || needs_quotes(f->text))
        add_json_string(l, f->text); /* the same quoting in text: a reader can undo it */
    else if (!add_bytes(l, f->text, strlen(f->text)))
        add_end(l, "...");
}

void log_fields(kc_log_level level, const char *msg, const struct log_field *fields, uint32_t count,
                struct log_rate *rate, const char *rate_key)
{
    if (level > current_level)
        return;
    uint32_t suppressed = 0;
    if (rate != NULL && rate_key != NULL && !rate_allow(rate, rate_key, &suppressed))
        return;
    struct line l = {.length = 0};
    if (json_format) {
        add_json_head(&l, level);
        add(&l, ",\"msg\":");
        add_json_string(&l, msg);
    } else {
        add(&l, "kcycle: %s: %s%s", level_names[level], tag, msg);
    }
    for (uint32_t i = 0; i < count; i++)
        if (fields[i].is_number || fields[i].text != NULL)
            add_field(&l, &fields[i]);
    if (suppressed > 0)
        add_field(&l, &(struct log_field){
                          .key = "suppressed", .number = suppressed, .is_number = true});
    if (json_format)
        add_end(&l, "}");
    emit(&l);
}
