/* YAML/JSON documents as trees with 1-based positions (libyaml event API), and typed reads whose
 * messages read "FILE:LINE:COL: key 'K': problem; what is expected". */
#include "tree.h"

#include "strmap.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <yaml.h>

#include "quantity.h"

/* Deep enough for any real config; bounded so a hostile file cannot exhaust the stack. */
#define TREE_MAX_DEPTH 256
/* Longest piece of a user's value quoted back in a message. */
#define QUOTE_MAX 64

struct loader {
    yaml_parser_t parser;
    const char *file;
    const char *data; /* the bytes being parsed, to place reader errors */
    size_t len;
    struct kc_error *err;
};

/* ---- nodes ---- */

/* The root carries the file name in the same allocation, so every node can point at it and
 * tree_free of the root releases it. */
static struct tree *root_new(const char *name)
{
    size_t len = strlen(name);
    struct tree *root = calloc(1, sizeof(*root) + len + 1);
    if (root == NULL)
        return NULL;
    char *file = (char *)(root + 1);
    memcpy(file, name, len + 1);
    root->file = file;
    return root;
}

static void tree_clear(struct tree *t)
{
    free(t->scalar);
    for (uint32_t i = 0; i < t->count; i++) {
        if (t->keys != NULL)
            tree_free(t->keys[i]);
        tree_free(t->items[i]);
    }
    free(t->keys);
    free(t->items);
}

void tree_free(struct tree *t)
{
    if (t == NULL)
        return;
    tree_clear(t);
    free(t);
}

static bool needs_growth(uint32_t count)
{
    return count == 0 || (count >= 4 && (count & (count - 1)) == 0);
}

/* Appends item (and key for maps); on failure the caller still owns both. */
static int tree_append(struct tree *t, struct tree *key, struct tree *item)
{
    if (t->count == UINT32_MAX)
        return -ENOMEM;
    if (needs_growth(t->count)) {
        size_t cap = t->count == 0 ? 4 : (size_t)t->count * 2;
        struct tree **items = realloc(t->items, cap * sizeof(*items));
        if (items == NULL)
            return -ENOMEM;
        t->items = items;
        if (t->type == TREE_MAP) {
            struct tree **keys = realloc(t->keys, cap * sizeof(*keys));
            if (keys == NULL)
                return -ENOMEM;
            t->keys = keys;
        }
    }
    if (t->type == TREE_MAP)
        t->keys[t->count] = key;
    t->items[t->count++] = item;
    return 0;
}

/* ---- loading ---- */

static int load_error(struct loader *ld, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int load_error(struct loader *ld, const yaml_mark_t *mark, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return kc_error_set(ld->err, -EINVAL, "%s:%zu:%zu: %s", ld->file, mark->line + 1,
                        mark->column + 1, what);
}

/* Reader errors (bad UTF-8, bad control characters) carry only a byte offset. */
static yaml_mark_t mark_at_offset(const struct loader *ld, size_t offset)
{
    yaml_mark_t mark = {0};
    for (size_t i = 0; i < offset && i < ld->len; i++) {
        if (ld->data[i] == '\n') {
            mark.line++;
            mark.column = 0;
        } else {
            mark.column++;
        }
    }
    return mark;
}

static int parser_error(struct loader *ld)
{
    yaml_parser_t *p = &ld->parser;
    if (p->error == YAML_MEMORY_ERROR)
        return kc_error_set(ld->err, -ENOMEM, "%s: out of memory while parsing", ld->file);
    const char *problem = p->problem != NULL ? p->problem : "malformed document";
    if (p->error == YAML_READER_ERROR) {
        yaml_mark_t mark = mark_at_offset(ld, p->problem_offset);
        return load_error(ld, &mark, "%s; expected UTF-8 text", problem);
    }
    if (p->context != NULL) {
        return load_error(ld, &p->problem_mark, "%s (%s started at %zu:%zu)", problem, p->context,
                          p->context_mark.line + 1, p->context_mark.column + 1);
    }
    return load_error(ld, &p->problem_mark, "%s", problem);
}

static int next_event(struct loader *ld, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&ld->parser, ev))
        return parser_error(ld);
    return 0;
}

static int reject_anchor(struct loader *ld, const yaml_event_t *ev, const yaml_char_t *anchor)
{
    if (anchor == NULL)
        return 0;
    return load_error(ld, &ev->start_mark,
                      "anchor '&%s' is not supported; expected every value written out in full",
                      (const char *)anchor);
}

static bool tag_is_str(const yaml_char_t *tag)
{
    return tag != NULL && strcmp((const char *)tag, YAML_STR_TAG) == 0;
}

static int load_scalar(struct loader *ld, const yaml_event_t *ev, struct tree *t)
{
    int rc = reject_anchor(ld, ev, ev->data.scalar.anchor);
    if (rc != 0)
        return rc;
    size_t len = ev->data.scalar.length;
    if (memchr(ev->data.scalar.value, '\0', len) != NULL)
        return load_error(ld, &ev->start_mark, "value contains a NUL character; expected text");
    t->scalar = malloc(len + 1);
    if (t->scalar == NULL)
        return kc_error_set(ld->err, -ENOMEM, "%s: out of memory", ld->file);
    memcpy(t->scalar, ev->data.scalar.value, len);
    t->scalar[len] = '\0';
    t->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || tag_is_str(ev->data.scalar.tag);
    return 0;
}

static int load_node(struct loader *ld, yaml_event_t *ev, struct tree *t, int depth);

/* Loads the node that starts with the next event into a new child; *out is NULL at the end of
 * the enclosing collection (end_type). */
static int load_child(struct loader *ld, yaml_event_type_t end_type, struct tree *parent, int depth,
                      struct tree **out)
{
    yaml_event_t ev;
    *out = NULL;
    int rc = next_event(ld, &ev);
    if (rc != 0)
        return rc;
    if (ev.type == end_type) {
        yaml_event_delete(&ev);
        return 0;
    }
    struct tree *child = calloc(1, sizeof(*child));
    if (child == NULL) {
        yaml_event_delete(&ev);
        return kc_error_set(ld->err, -ENOMEM, "%s: out of memory", ld->file);
    }
    child->file = parent->file;
    rc = load_node(ld, &ev, child, depth);
    yaml_event_delete(&ev);
    if (rc != 0) {
        tree_free(child);
        return rc;
    }
    *out = child;
    return 0;
}

static int load_sequence(struct loader *ld, struct tree *t, int depth)
{
    for (;;) {
        struct tree *item;
        int rc = load_child(ld, YAML_SEQUENCE_END_EVENT, t, depth + 1, &item);
        if (rc != 0)
            return rc;
        if (item == NULL)
            return 0;
        if (tree_append(t, NULL, item) != 0) {
            tree_free(item);
            return kc_error_set(ld->err, -ENOMEM, "%s: out of memory", ld->file);
        }
    }
}

/* Keys seen so far in one map are in `seen` (name -> first key), so a large map is checked in
 * linear time. */
static int check_key(struct loader *ld, const struct strmap *seen, const struct tree *key)
{
    if (key->type != TREE_SCALAR) {
        yaml_mark_t mark = {.line = key->line - 1, .column = key->column - 1};
        return load_error(ld, &mark, "a map key is a %s; expected a plain name",
                          key->type == TREE_MAP ? "map" : "list");
    }
    const struct tree *first = strmap_get(seen, key->scalar);
    if (first == NULL)
        return 0;
    yaml_mark_t mark = {.line = key->line - 1, .column = key->column - 1};
    return load_error(ld, &mark,
                      "key '%.*s': duplicate key, first defined at %u:%u; expected each key "
                      "once in a map",
                      QUOTE_MAX, key->scalar, first->line, first->column);
}

static int load_mapping_into(struct loader *ld, struct tree *t, int depth, struct strmap *seen)
{
    for (;;) {
        struct tree *key, *value;
        int rc = load_child(ld, YAML_MAPPING_END_EVENT, t, depth + 1, &key);
        if (rc != 0)
            return rc;
        if (key == NULL)
            return 0;
        rc = check_key(ld, seen, key);
        if (rc == 0)
            rc = load_child(ld, YAML_MAPPING_END_EVENT, t, depth + 1, &value);
        if (rc != 0) {
            tree_free(key);
            return rc;
        }
        if (tree_append(t, key, value) != 0) {
            tree_free(key);
            tree_free(value);
            return kc_error_set(ld->err, -ENOMEM, "%s: out of memory", ld->file);
        }
        /* the key now belongs to t, which outlives `seen` */
        if (strmap_put(seen, key->scalar, key) < 0)
            return kc_error_set(ld->err, -ENOMEM, "%s: out of memory", ld->file);
    }
}

static int load_mapping(struct loader *ld, struct tree *t, int depth)
{
    struct strmap seen = {0};
    int rc = load_mapping_into(ld, t, depth, &seen);
    strmap_free(&seen);
    return rc;
}

static int load_node(struct loader *ld, yaml_event_t *ev, struct tree *t, int depth)
{
    t->line = (uint32_t)ev->start_mark.line + 1;
    t->column = (uint32_t)ev->start_mark.column + 1;
    if (depth > TREE_MAX_DEPTH) {
        return load_error(ld, &ev->start_mark,
                          "nesting deeper than %d levels; expected a "
                          "flatter document",
                          TREE_MAX_DEPTH);
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: t->type = TREE_SCALAR; return load_scalar(ld, ev, t);
    case YAML_SEQUENCE_START_EVENT:
        t->type = TREE_SEQ;
        if (reject_anchor(ld, ev, ev->data.sequence_start.anchor) != 0)
            return -EINVAL;
        return load_sequence(ld, t, depth);
    case YAML_MAPPING_START_EVENT:
        t->type = TREE_MAP;
        if (reject_anchor(ld, ev, ev->data.mapping_start.anchor) != 0)
            return -EINVAL;
        return load_mapping(ld, t, depth);
    case YAML_ALIAS_EVENT:
        return load_error(ld, &ev->start_mark,
                          "alias '*%s' is not supported; expected the "
                          "value written out in full",
                          (const char *)ev->data.alias.anchor);
    default: return load_error(ld, &ev->start_mark, "unexpected YAML event; expected a value");
    }
}

/* Expects the event of the given type; anything else is a parser bug or a second document. */
static int expect_event(struct loader *ld, yaml_event_type_t type, yaml_event_t *ev)
{
    int rc = next_event(ld, ev);
    if (rc != 0)
        return rc;
    if (ev->type == type)
        return 0;
    yaml_mark_t mark = ev->start_mark;
    bool second = ev->type == YAML_DOCUMENT_START_EVENT;
    yaml_event_delete(ev);
    if (second) {
        return load_error(ld, &mark,
                          "a second document starts here; expected one document "
                          "per file");
    }
    return load_error(ld, &mark, "unexpected content; expected the end of the document");
}

/* A document with no content ("", comments only, a lone "---") is an empty map. */
static void make_empty_map(struct tree *root)
{
    tree_clear(root);
    root->type = TREE_MAP;
    root->scalar = NULL;
    root->keys = root->items = NULL;
    root->count = 0;
    root->quoted = false;
    if (root->line == 0)
        root->line = root->column = 1;
}

static int load_document(struct loader *ld, struct tree *root)
{
    yaml_event_t ev;
    int rc = expect_event(ld, YAML_STREAM_START_EVENT, &ev);
    if (rc != 0)
        return rc;
    yaml_event_delete(&ev);
    if ((rc = next_event(ld, &ev)) != 0)
        return rc;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        make_empty_map(root);
        return 0;
    }
    yaml_event_delete(&ev); /* DOCUMENT_START */
    if ((rc = next_event(ld, &ev)) != 0)
        return rc;
    rc = load_node(ld, &ev, root, 0);
    yaml_event_delete(&ev);
    if (rc != 0)
        return rc;
    if (root->type == TREE_SCALAR && !root->quoted && root->scalar[0] == '\0')
        make_empty_map(root);
    if ((rc = expect_event(ld, YAML_DOCUMENT_END_EVENT, &ev)) != 0)
        return rc;
    yaml_event_delete(&ev);
    if ((rc = expect_event(ld, YAML_STREAM_END_EVENT, &ev)) != 0)
        return rc;
    yaml_event_delete(&ev);
    return 0;
}

/* JSON never has a raw tab inside a string, so a document that opens like JSON can have its
 * tab indentation (which YAML forbids) turned into spaces. */
static bool looks_like_json(const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        return c == '{' || c == '[';
    }
    return false;
}

/* ---- strict JSON: the fast path ----
 *
 * JSON that is exactly RFC 8259 (every API object, most JSON files) is read directly into the
 * tree, with positions, several times faster than through libyaml. Anything else, including
 * JSON with a duplicate key, is handed to the YAML loader, which reads what YAML's flow style
 * allows and words the error when there is one. */

struct json_reader {
    const char *p, *end;
    const char *line_start;
    uint32_t line;
    const char *file;
};

#define JSON_LINEAR_KEYS 32 /* maps up to this size check duplicates by scanning */

static void jr_skip_space(struct json_reader *r)
{
    while (r->p < r->end) {
        char c = *r->p;
        if (c == '\n') {
            r->line++;
            r->line_start = ++r->p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            r->p++;
        } else {
            break;
        }
    }
}

static int hex4(const char *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -EINVAL;
    }
    *out = v;
    return 0;
}

static size_t utf8_put(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF), as libyaml and
 * jansson require. */
static bool utf8_valid(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = cp << 6 | (p[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

/* A string at r->p (the opening quote) into a malloc'd, unescaped copy. Strings never hold a
 * NUL: \u0000 is refused, as the YAML loader refuses it. */
static int jr_string(struct json_reader *r, char **out)
{
    const char *start = ++r->p, *q = start;
    bool escapes = false;
    while (q < r->end && *q != '"') {
        if ((unsigned char)*q < 0x20)
            return -EINVAL;
        if (*q == '\\') {
            escapes = true;
            q++;
        }
        q++;
    }
    if (q >= r->end || !utf8_valid((const unsigned char *)start, (size_t)(q - start)))
        return -EINVAL;
    size_t len = (size_t)(q - start);
    char *s = malloc(len + 1), *w = s;
    if (s == NULL)
        return -ENOMEM;
    if (!escapes) {
        memcpy(s, start, len);
        w = s + len;
    }
    for (const char *p = start; escapes && p < q; p++) {
        if (*p != '\\') {
            *w++ = *p;
            continue;
        }
        char c = *++p;
        uint32_t cp, low;
        switch (c) {
        case '"':
        case '\\':
        case '/': *w++ = c; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u':
            if (q - p < 5 || hex4(p + 1, &cp) < 0 || cp == 0)
                goto bad;
            p += 4;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                goto bad; /* a lone low surrogate */
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (q - p < 7 || p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &low) < 0 ||
                    low < 0xdc00 || low > 0xdfff)
                    goto bad;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                p += 6;
            }
            w += utf8_put(w, cp); /* never longer than the escape it replaces */
            break;
        default: goto bad;
        }
    }
    *w = '\0';
    *out = s;
    r->p = q + 1;
    return 0;
bad:
    free(s);
    return -EINVAL;
}

/* true, false, null or a number: kept as the plain scalar text, as the YAML loader keeps it. */
static int jr_literal(struct json_reader *r, char **out)
{
    const char *start = r->p, *p = start;
    while (p < r->end && strchr(",}] \t\r\n", *p) == NULL)
        p++;
    size_t len = (size_t)(p - start);
    bool ok = (len == 4 && (memcmp(start, "true", 4) == 0 || memcmp(start, "null", 4) == 0)) ||
              (len == 5 && memcmp(start, "false", 5) == 0);
    if (!ok) {
        /* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
        const char *n = start;
        if (n < p && *n == '-')
            n++;
        if (n < p && *n == '0')
            n++;
        else if (n < p && *n >= '1' && *n <= '9')
            while (n < p && *n >= '0' && *n <= '9')
                n++;
        else
            return -EINVAL;
        if (n < p && *n == '.') {
            const char *digits = ++n;
            while (n < p && *n >= '0' && *n <= '9')
                n++;
            if (n == digits)
                return -EINVAL;
        }
        if (n < p && (*n == 'e' || *n == 'E')) {
            n++;
            if (n < p && (*n == '+' || *n == '-'))
                n++;
            const char *digits = n;
            while (n < p && *n >= '0' && *n <= '9')
                n++;
            if (n == digits)
                return -EINVAL;
        }
        if (n != p)
            return -EINVAL;
    }
    *out = strndup(start, len);
    if (*out == NULL)
        return -ENOMEM;
    r->p = p;
    return 0;
}

static int jr_value(struct json_reader *r, struct tree *t, int depth);

static struct tree *jr_child(struct json_reader *r)
{
    struct tree *child = calloc(1, sizeof(*child));
    if (child != NULL) {
        child->file = r->file;
        child->line = r->line;
        child->column = (uint32_t)(r->p - r->line_start) + 1;
    }
    return child;
}

static bool jr_duplicate(const struct tree *map, const char *key, struct strmap *seen)
{
    if (map->count < JSON_LINEAR_KEYS) {
        for (uint32_t i = 0; i < map->count; i++)
            if (strcmp(map->keys[i]->scalar, key) == 0)
                return true;
        return false;
    }
    if (seen->count == 0) /* the map just grew past the linear scan: index what it has */
        for (uint32_t i = 0; i < map->count; i++)
            if (strmap_put(seen, map->keys[i]->scalar, map->keys[i]) < 0)
                return true; /* out of memory: let the YAML loader have it */
    return strmap_get(seen, key) != NULL;
}

static int jr_members(struct json_reader *r, struct tree *t, int depth, struct strmap *seen)
{
    bool map = t->type == TREE_MAP;
    char close = map ? '}' : ']';
    r->p++;
    jr_skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
    }
    for (;;) {
        struct tree *key = NULL;
        int rc;
        jr_skip_space(r);
        if (map) {
            if (r->p >= r->end || *r->p != '"')
                return -EINVAL;
            if ((key = jr_child(r)) == NULL)
                return -ENOMEM;
            key->quoted = true;
            if ((rc = jr_string(r, &key->scalar)) < 0 ||
                (rc = jr_duplicate(t, key->scalar, seen) ? -EINVAL : 0) < 0) {
                tree_free(key);
                return rc;
            }
            jr_skip_space(r);
            if (r->p >= r->end || *r->p != ':') {
                tree_free(key);
                return -EINVAL;
            }
            r->p++;
            jr_skip_space(r);
        }
        struct tree *item = jr_child(r);
        if (item == NULL || (rc = jr_value(r, item, depth + 1)) < 0 ||
            (rc = tree_append(t, key, item)) < 0) {
            tree_free(key);
            tree_free(item);
            return item == NULL ? -ENOMEM : rc;
        }
        if (map && t->count > JSON_LINEAR_KEYS && strmap_put(seen, key->scalar, key) < 0)
            return -ENOMEM;
        jr_skip_space(r);
        if (r->p >= r->end)
            return -EINVAL;
        if (*r->p == close) {
            r->p++;
            return 0;
        }
        if (*r->p != ',')
            return -EINVAL;
        r->p++;
    }
}

static int jr_value(struct json_reader *r, struct tree *t, int depth)
{
    if (depth > TREE_MAX_DEPTH || r->p >= r->end)
        return -EINVAL;
    switch (*r->p) {
    case '{':
    case '[': {
        t->type = *r->p == '{' ? TREE_MAP : TREE_SEQ;
        struct strmap seen = {0};
        int rc = jr_members(r, t, depth, &seen);
        strmap_free(&seen);
        return rc;
    }
    case '"':
        t->type = TREE_SCALAR;
        t->quoted = true;
        return jr_string(r, &t->scalar);
    default: t->type = TREE_SCALAR; return jr_literal(r, &t->scalar);
    }
}

/* 0 with the document in root; -EINVAL when the text is not strict JSON; -ENOMEM. */
static int jr_load(struct tree *root, const char *data, size_t len)
{
    struct json_reader r = {
        .p = data, .end = data + len, .line_start = data, .line = 1, .file = root->file};
    jr_skip_space(&r);
    root->line = r.line;
    root->column = (uint32_t)(r.p - r.line_start) + 1;
    int rc = jr_value(&r, root, 0);
    if (rc < 0)
        return rc;
    jr_skip_space(&r);
    return r.p == r.end ? 0 : -EINVAL;
}

int tree_parse_buffer(const char *name, const char *data, size_t len, struct tree **out,
                      struct kc_error *err)
{
    *out = NULL;
    if (name == NULL)
        name = "<buffer>";
    if (data == NULL) {
        data = ""; /* libyaml asserts on a NULL input */
        len = 0;
    }
    char *detabbed = NULL;
    if (looks_like_json(data, len)) {
        struct tree *root = root_new(name);
        int rc = root != NULL ? jr_load(root, data, len) : -ENOMEM;
        if (rc == 0) {
            *out = root;
            return 0;
        }
        tree_free(root);
        if (rc == -ENOMEM)
            return kc_error_set(err, -ENOMEM, "%s: out of memory", name);
        /* not strict JSON: YAML's flow style may still read it, or say what is wrong */
        detabbed = malloc(len);
        if (detabbed == NULL && len > 0)
            return kc_error_set(err, -ENOMEM, "%s: out of memory", name);
        for (size_t i = 0; i < len; i++)
            detabbed[i] = data[i] == '\t' ? ' ' : data[i];
        data = detabbed;
    }
    struct tree *root = root_new(name);
    struct loader ld = {.data = data, .len = len, .err = err};
    int rc = -ENOMEM;
    if (root != NULL && yaml_parser_initialize(&ld.parser)) {
        ld.file = root->file;
        yaml_parser_set_input_string(&ld.parser, (const unsigned char *)data, len);
        rc = load_document(&ld, root);
        yaml_parser_delete(&ld.parser);
    } else {
        kc_error_set(err, rc, "%s: out of memory", name);
    }
    free(detabbed);
    if (rc != 0) {
        tree_free(root);
        return rc;
    }
    *out = root;
    return 0;
}

static int read_all(FILE *f, char **data, size_t *len)
{
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap);
    if (buf == NULL)
        return -ENOMEM;
    for (;;) {
        if (used == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                return -ENOMEM;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t n = fread(buf + used, 1, cap - used, f);
        used += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        return -EIO;
    }
    *data = buf;
    *len = used;
    return 0;
}

int tree_parse_file(const char *path, struct tree **out, struct kc_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int code = -errno;
        return kc_error_set(err, code,
                            "%s: cannot open: %s; expected a readable YAML or JSON "
                            "file",
                            path, strerror(-code));
    }
    char *data;
    size_t len;
    int rc = read_all(f, &data, &len);
    fclose(f);
    if (rc != 0)
        return kc_error_set(err, rc, "%s: cannot read: %s", path, strerror(-rc));
    rc = tree_parse_buffer(path, data, len, out, err);
    free(data);
    return rc;
}

/* ---- lookups ---- */

const struct tree *tree_get(const struct tree *t, const char *key)
{
    if (t == NULL || t->type != TREE_MAP || key == NULL)
        return NULL;
    for (uint32_t i = 0; i < t->count; i++) {
        if (strcmp(t->keys[i]->scalar, key) == 0)
            return t->items[i];
    }
    return NULL;
}

static bool text_in(const char *s, const char *const *words)
{
    for (; *words != NULL; words++) {
        if (strcmp(s, *words) == 0)
            return true;
    }
    return false;
}

static const char *const null_words[] = {"", "~", "null", "Null", "NULL", NULL};
static const char *const true_words[] = {"true", "True", "TRUE", NULL};
static const char *const false_words[] = {"false", "False", "FALSE", NULL};

bool tree_is_null(const struct tree *t)
{
    return t != NULL && t->type == TREE_SCALAR && !t->quoted && text_in(t->scalar, null_words);
}

/* ---- typed reads ---- */

int tree_error(const struct tree *t, struct kc_error *err, int code, const char *key,
               const char *fmt, ...)
{
    char problem[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof(problem), fmt, ap);
    va_end(ap);
    if (t == NULL)
        return kc_error_set(err, code, "key '%s': %s", key, problem);
    return kc_error_set(err, code, "%s:%u:%u: key '%s': %s", t->file != NULL ? t->file : "<input>",
                        t->line, t->column, key, problem);
}

static const char *kind_name(const struct tree *t)
{
    if (t->type == TREE_MAP)
        return "a map";
    if (t->type == TREE_SEQ)
        return "a list";
    return tree_is_null(t) ? "no value" : "a value";
}

/* A non-null scalar, or -EINVAL naming what was found instead. */
static int want_scalar(const struct tree *t, const char *what, const char *expected,
                       struct kc_error *err)
{
    if (t == NULL)
        return tree_error(t, err, -EINVAL, what, "missing; expected %s", expected);
    if (t->type != TREE_SCALAR || tree_is_null(t))
        return tree_error(t, err, -EINVAL, what, "got %s; expected %s", kind_name(t), expected);
    return 0;
}

int tree_string(const struct tree *t, const char *what, const char **out, struct kc_error *err)
{
    int rc = want_scalar(t, what, "a string", err);
    if (rc != 0)
        return rc;
    *out = t->scalar;
    return 0;
}

/* Decimal [-+]?[0-9]+ into int64; -ERANGE when it does not fit, -EINVAL when not a number. */
static int parse_int64(const char *s, int64_t *out)
{
    bool negative = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    if (*s == '\0')
        return -EINVAL;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    bool overflow = false;
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (limit - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow)
        return -ERANGE;
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int tree_int64(const struct tree *t, const char *what, int64_t *out, struct kc_error *err)
{
    static const char expected[] = "a whole number such as 42, without quotes";
    int rc = want_scalar(t, what, expected, err);
    if (rc != 0)
        return rc;
    if (t->quoted)
        return tree_error(t, err, -EINVAL, what, "\"%.*s\" is quoted; expected %s", QUOTE_MAX,
                          t->scalar, expected);
    rc = parse_int64(t->scalar, out);
    if (rc == -ERANGE) {
        return tree_error(t, err, -EINVAL, what, "%.*s does not fit in 64 bits; expected %s",
                          QUOTE_MAX, t->scalar, expected);
    }
    if (rc != 0)
        return tree_error(t, err, -EINVAL, what, "'%.*s' is not a whole number; expected %s",
                          QUOTE_MAX, t->scalar, expected);
    return 0;
}

int tree_bool(const struct tree *t, const char *what, bool *out, struct kc_error *err)
{
    static const char expected[] = "true or false, without quotes";
    int rc = want_scalar(t, what, expected, err);
    if (rc != 0)
        return rc;
    if (t->quoted)
        return tree_error(t, err, -EINVAL, what, "\"%.*s\" is quoted; expected %s", QUOTE_MAX,
                          t->scalar, expected);
    if (text_in(t->scalar, true_words)) {
        *out = true;
        return 0;
    }
    if (text_in(t->scalar, false_words)) {
        *out = false;
        return 0;
    }
    return tree_error(t, err, -EINVAL, what, "'%.*s' is not a boolean; expected %s", QUOTE_MAX,
                      t->scalar, expected);
}

/* ---- durations ---- */

struct duration_unit {
    const char *name;
    int64_t ms;
};

/* Longest names first, so "ms" is not read as "m" followed by junk. */
static const struct duration_unit duration_units[] = {
    {"ms", 1},
    {"h", 3600000},
    {"m", 60000},
    {"s", 1000},
};

static const struct duration_unit *match_unit(const char *s, size_t *len)
{
    for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
        size_t n = strlen(duration_units[i].name);
        if (strncmp(s, duration_units[i].name, n) == 0) {
            *len = n;
            return &duration_units[i];
        }
    }
    return NULL;
}

/* Digits after the point, as frac / frac_scale with trailing zeros dropped; -EDOM when they are
 * too fine to ever make whole milliseconds (beyond 10^-8 of an hour). */
static int duration_fraction(const char **sp, uint64_t *frac, uint64_t *frac_scale)
{
    const char *s = *sp;
    *frac = 0;
    *frac_scale = 1;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (*frac_scale >= 100000000ULL) {
            if (*s != '0')
                return -EDOM;
            continue;
        }
        *frac = *frac * 10 + (uint64_t)(*s - '0');
        *frac_scale *= 10;
    }
    while (*frac_scale > 1 && *frac % 10 == 0) {
        *frac /= 10;
        *frac_scale /= 10;
    }
    *sp = s;
    return 0;
}

/* One "<digits>[.<digits>]" number times unit_ms, exactly: -EDOM when it is not a whole number
 * of milliseconds, -ERANGE on overflow, -EINVAL when there is no digit. */
static int duration_number(const char **sp, int64_t unit_ms, int64_t *out)
{
    const char *s = *sp;
    const char *start = s;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    bool overflow = false;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        overflow = overflow || whole > ((uint64_t)INT64_MAX - d) / 10;
        whole = overflow ? whole : whole * 10 + d;
    }
    bool digits = s != start;
    if (*s == '.') {
        const char *frac_start = ++s;
        int rc = duration_fraction(&s, &frac, &frac_scale);
        if (rc != 0)
            return rc;
        digits = digits || s != frac_start;
    }
    if (!digits)
        return -EINVAL;
    *sp = s;
    uint64_t unit = (uint64_t)unit_ms;
    if (overflow || whole > (uint64_t)INT64_MAX / unit)
        return -ERANGE;
    /* frac < 10^8 and unit <= 3.6e6: the product fits */
    if (frac * unit % frac_scale != 0)
        return -EDOM;
    uint64_t total = whole * unit + frac * unit / frac_scale;
    if (total > (uint64_t)INT64_MAX)
        return -ERANGE;
    *out = (int64_t)total;
    return 0;
}

static bool is_plain_number(const char *s)
{
    size_t whole = strspn(s, "0123456789");
    bool point = s[whole] == '.';
    size_t frac = point ? strspn(s + whole + 1, "0123456789") : 0;
    return s[whole + point + frac] == '\0' && whole + frac > 0;
}

static int parse_duration_ms(const char *s, int64_t *out)
{
    if (is_plain_number(s))
        return duration_number(&s, 1000, out);
    int64_t total = 0;
    if (*s == '\0')
        return -EINVAL;
    while (*s != '\0') {
        const char *number = s;
        while ((*s >= '0' && *s <= '9') || *s == '.')
            s++;
        size_t unit_len;
        const struct duration_unit *unit = match_unit(s, &unit_len);
        if (unit == NULL)
            return -EINVAL;
        int64_t part;
        const char *end = number;
        int rc = duration_number(&end, unit->ms, &part);
        if (rc != 0)
            return rc;
        if (end != s)
            return -EINVAL; /* "1.2.3s" */
        if (part > INT64_MAX - total)
            return -ERANGE;
        total += part;
        s += unit_len;
    }
    *out = total;
    return 0;
}

int tree_duration_ms(const struct tree *t, const char *what, int64_t *out, struct kc_error *err)
{
    static const char expected[] =
        "a duration such as 10s, 1.5s, 250ms, 2m or 1h30m (a plain number is seconds)";
    int rc = want_scalar(t, what, expected, err);
    if (rc != 0)
        return rc;
    rc = parse_duration_ms(t->scalar, out);
    if (rc == -ERANGE)
        return tree_error(t, err, -EINVAL, what, "'%.*s' is too long; expected %s", QUOTE_MAX,
                          t->scalar, expected);
    if (rc == -EDOM)
        return tree_error(t, err, -EINVAL, what,
                          "'%.*s' is not a whole number of milliseconds; "
                          "expected %s",
                          QUOTE_MAX, t->scalar, expected);
    if (rc != 0)
        return tree_error(t, err, -EINVAL, what, "'%.*s' is not a duration; expected %s", QUOTE_MAX,
                          t->scalar, expected);
    return 0;
}

int tree_quantity(const struct tree *t, const char *resource_name, int64_t *out,
                  struct kc_error *err)
{
    static const char expected[] =
        "a Kubernetes quantity such as 500m, 2, 1.5, 100M or 1Gi (suffixes are case-sensitive)";
    int rc = want_scalar(t, resource_name, expected, err);
    if (rc != 0)
        return rc;
    rc = quantity_parse(t->scalar, strlen(t->scalar), quantity_scale_for(resource_name), out);
    if (rc == -ERANGE) {
        return tree_error(t, err, -EINVAL, resource_name,
                          "'%.*s' is too large to account for; expected "
                          "a value that fits in 64 bits at %s",
                          QUOTE_MAX, t->scalar,
                          quantity_scale_for(resource_name) == -3 ? "milli-units" : "units");
    }
    if (rc != 0)
        return tree_error(t, err, -EINVAL, resource_name, "'%.*s' is not a quantity; expected %s",
                          QUOTE_MAX, t->scalar, expected);
    return 0;
}

/* ---- key checks ---- */

static void list_keys(char *buf, size_t size, const char *const *allowed)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; allowed[i] != NULL && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : ", ", allowed[i]);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

int tree_check_keys(const struct tree *t, const char *what, const char *const *allowed,
                    struct kc_error *err)
{
    if (t == NULL || t->type != TREE_MAP)
        return tree_error(t, err, -EINVAL, what, "got %s; expected a map",
                          t ? kind_name(t) : "nothing");
    for (uint32_t i = 0; i < t->count; i++) {
        const struct tree *key = t->keys[i];
        if (text_in(key->scalar, allowed))
            continue;
        char keys[512];
        list_keys(keys, sizeof(keys), allowed);
        return kc_error_set(err, -EINVAL,
                            "%s:%u:%u: key '%.*s': unknown key in %s; expected "
                            "one of: %s",
                            key->file, key->line, key->column, QUOTE_MAX, key->scalar, what, keys);
    }
    return 0;
}

/* ---- JSON ---- */

static bool all_digits(const char *s, const char *digits)
{
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        if (strchr(digits, *s) == NULL)
            return false;
    }
    return true;
}

/* YAML 1.2 core schema int (decimal, 0o octal, 0x hex) as json integer, or NULL if not one. */
static int shortest_digits(double v);

static json_t *json_from_int(const char *s, int *precision)
{
    const char *body = s + (*s == '-' || *s == '+');
    int base = 10;
    if (s == body && strncmp(s, "0o", 2) == 0 && all_digits(s + 2, "01234567")) {
        base = 8;
        body = s + 2;
    } else if (s == body && strncmp(s, "0x", 2) == 0 &&
               all_digits(s + 2, "0123456789abcdefABCDEF")) {
        base = 16;
        body = s + 2;
    } else if (!all_digits(body, "0123456789")) {
        return NULL;
    }
    errno = 0;
    char *end;
    if (base == 10) {
        long long v = strtoll(s, &end, 10);
        if (errno == 0)
            return json_integer(v);
        /* beyond int64: still a number (NULL if infinite), printed with every digit it has */
        double big = strtod(s, &end);
        int digits = shortest_digits(big);
        *precision = digits > *precision ? digits : *precision;
        return json_real(big);
    }
    unsigned long long v = strtoull(body, &end, base);
    if (errno == 0 && v <= (unsigned long long)LLONG_MAX)
        return json_integer((json_int_t)v);
    return NULL;
}

/* YAML 1.2 core schema float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_yaml_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    size_t int_digits = strspn(s, "0123456789");
    s += int_digits;
    size_t frac_digits = 0;
    if (*s == '.') {
        s++;
        frac_digits = strspn(s, "0123456789");
        s += frac_digits;
    }
    if (int_digits == 0 && frac_digits == 0)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        size_t exp_digits = strspn(s, "0123456789");
        if (exp_digits == 0)
            return false;
        s += exp_digits;
    }
    return *s == '\0';
}

/* The fewest significant digits that print v so it reads back exactly. */
static int shortest_digits(double v)
{
    char buf[40];
    for (int digits = 1; digits < 17; digits++) {
        snprintf(buf, sizeof(buf), "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return digits;
    }
    return 17;
}

/* precision: the most digits any real so far needs, so the dump is exact yet "0.1" stays 0.1. */
static json_t *json_from_scalar(const struct tree *t, int *precision)
{
    const char *s = t->scalar;
    if (t->quoted)
        return json_string(s);
    if (text_in(s, null_words))
        return json_null();
    if (text_in(s, true_words))
        return json_true();
    if (text_in(s, false_words))
        return json_false();
    json_t *number = json_from_int(s, precision);
    if (number != NULL)
        return number;
    if (is_yaml_float(s)) {
        double v = strtod(s, NULL);
        json_t *real = json_real(v); /* NULL for an infinity such as 1e999 */
        if (real != NULL) {
            int digits = shortest_digits(v);
            *precision = digits > *precision ? digits : *precision;
            return real;
        }
    }
    return json_string(s);
}

static json_t *json_from_tree(const struct tree *t, int *precision);

/* Adds child i of t to out; jansson releases the item itself when adding fails. */
static int json_add_child(json_t *out, const struct tree *t, uint32_t i, int *precision)
{
    json_t *item = json_from_tree(t->items[i], precision);
    if (item == NULL)
        return -ENOMEM;
    if (t->type == TREE_MAP)
        return json_object_set_new(out, t->keys[i]->scalar, item) == 0 ? 0 : -ENOMEM;
    return json_array_append_new(out, item) == 0 ? 0 : -ENOMEM;
}

static json_t *json_from_tree(const struct tree *t, int *precision)
{
    if (t->type == TREE_SCALAR)
        return json_from_scalar(t, precision);
    json_t *out = t->type == TREE_MAP ? json_object() : json_array();
    for (uint32_t i = 0; out != NULL && i < t->count; i++) {
        if (json_add_child(out, t, i, precision) != 0) {
            json_decref(out);
            out = NULL;
        }
    }
    return out;
}

char *tree_to_json(const struct tree *t)
{
    if (t == NULL)
        return NULL;
    int precision = 1;
    json_t *json = json_from_tree(t, &precision);
    if (json == NULL)
        return NULL;
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(precision);
    char *text = json_dumps(json, flags);
    json_decref(json);
    return text;
}
