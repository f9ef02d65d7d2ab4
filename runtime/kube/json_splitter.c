/* Splits a byte stream (a watch body) into its top-level JSON values whatever the chunking, with
 * memory bounded by the largest value plus one chunk. */
#include "kube.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Above this, a buffer that has emptied out is given back. */
#define SPLITTER_KEEP_CAPACITY (64 * 1024)

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Characters of numbers and of true/false/null. */
static bool is_scalar_char(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           ch == '-' || ch == '+' || ch == '.';
}

static int append(struct json_splitter *s, const char *data, size_t len)
{
    if (s->len + len + 1 > s->capacity) {
        size_t capacity = s->capacity < 4096 ? 4096 : s->capacity;
        while (capacity < s->len + len + 1) {
            if (capacity > SIZE_MAX / 2)
                return -ENOMEM;
            capacity *= 2;
        }
        char *buf = realloc(s->buf, capacity);
        if (buf == NULL)
            return -ENOMEM;
        s->buf = buf;
        s->capacity = capacity;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    s->buf[s->len] = '\0';
    return 0;
}

/* Drop what is done: everything before the current value (or everything scanned when between
 * values), and give back a large buffer that is mostly empty. */
static void compact(struct json_splitter *s)
{
    size_t keep_from = s->in_value ? s->start : s->scanned;
    if (keep_from > 0) {
        memmove(s->buf, s->buf + keep_from, s->len - keep_from);
        s->len -= keep_from;
        s->scanned -= keep_from;
        s->start = s->in_value ? 0 : s->scanned;
        s->buf[s->len] = '\0';
    }
    if (s->capacity > SPLITTER_KEEP_CAPACITY && s->len + 1 < s->capacity / 4) {
        size_t capacity = s->capacity / 2;
        while (capacity > SPLITTER_KEEP_CAPACITY && s->len + 1 < capacity / 4)
            capacity /= 2;
        char *buf = realloc(s->buf, capacity);
        if (buf != NULL) {
            s->buf = buf;
            s->capacity = capacity;
        }
    }
}

/* Hand buf[start, end) to fn and go back to between values. */
static int emit(struct json_splitter *s, size_t end, kube_value_fn fn, void *ctx)
{
    size_t start = s->start;
    if (s->max_value != 0 && end - start > s->max_value)
        return -EFBIG;
    s->in_value = false;
    s->in_string = false;
    s->escape = false;
    s->depth = 0;
    s->scanned = end;
    s->start = end;
    /* NUL-terminated during the call, so fn may use string functions on it. */
    char saved = s->buf[end];
    s->buf[end] = '\0';
    int rc = fn(ctx, s->buf + start, end - start);
    s->buf[end] = saved;
    return rc;
}

/* A byte outside any value: whitespace, or the first byte of one. */
static int begin_value(struct json_splitter *s, size_t i)
{
    char ch = s->buf[i];
    if (is_space(ch))
        return 0;
    s->start = i;
    if (ch == '{' || ch == '[') {
        s->in_value = true;
        s->depth = 1;
        return 0;
    }
    if (ch == '"') {
        s->in_value = true;
        s->in_string = true;
        return 0;
    }
    if (is_scalar_char(ch)) {
        s->in_value = true;
        return 0;
    }
    return -EPROTO;
}

static int scan(struct json_splitter *s, kube_value_fn fn, void *ctx)
{
    size_t i = s->scanned;
    while (i < s->len) {
        char ch = s->buf[i];
        if (!s->in_value) {
            int rc = begin_value(s, i);
            if (rc != 0) {
                s->scanned = i;
                return rc;
            }
            i++;
            continue;
        }
        if (s->in_string) {
            if (s->escape) {
                s->escape = false;
            } else if (ch == '\\') {
                s->escape = true;
            } else if (ch == '"') {
                s->in_string = false;
                if (s->depth == 0) {
                    int rc = emit(s, i + 1, fn, ctx);
                    if (rc != 0)
                        return rc;
                }
            }
            i++;
            continue;
        }
        if (s->depth == 0) {
            /* A top-level number or literal ends at whitespace or where the next value starts;
             * that byte is then read again as the start of what follows. */
            if (is_scalar_char(ch)) {
                i++;
                continue;
            }
            if (!is_space(ch) && ch != '{' && ch != '[' && ch != '"') {
                s->scanned = i;
                return -EPROTO;
            }
            int rc = emit(s, i, fn, ctx);
            if (rc != 0)
                return rc;
            continue;
        }
        if (ch == '"') {
            s->in_string = true;
        } else if (ch == '{' || ch == '[') {
            s->depth++;
        } else if (ch == '}' || ch == ']') {
            if (--s->depth == 0) {
                int rc = emit(s, i + 1, fn, ctx);
                if (rc != 0)
                    return rc;
            }
        }
        i++;
    }
    s->scanned = i;
    return 0;
}

int json_splitter_feed(struct json_splitter *s, const char *data, size_t len, kube_value_fn fn,
                       void *ctx)
{
    int rc = append(s, data, len);
    if (rc != 0)
        return rc;
    rc = scan(s, fn, ctx);
    /* An unfinished value already over the limit will not shrink: stop before it grows on. */
    if (rc == 0 && s->in_value && s->max_value != 0 && s->len - s->start > s->max_value)
        rc = -EFBIG;
    compact(s);
    return rc;
}

int json_splitter_finish(struct json_splitter *s, kube_value_fn fn, void *ctx)
{
    int rc = 0;
    if (s->in_value && !s->in_string && s->depth == 0)
        rc = emit(s, s->len, fn, ctx);
    else if (s->in_value)
        rc = -EPROTO;
    compact(s);
    return rc;
}

void json_splitter_free(struct json_splitter *s)
{
    free(s->buf);
    memset(s, 0, sizeof(*s));
}
