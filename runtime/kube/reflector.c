/* List + watch of one resource: pages of a consistent list diffed against what the consumer
 * was told, then a watch from the list's resourceVersion that resumes after cuts and relists
 * only when the server says the version is gone (410). */
#include "kube.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "tree.h"

#define DEFAULT_PAGE_SIZE 500
#define BACKOFF_FIRST_MS 200
#define BACKOFF_MAX_MS 30000
#define SLEEP_SLICE_MS 100
/* A list page that sends nothing for this long is given up. */
#define LIST_IDLE_TIMEOUT_MS 60000
/* A watch is given up when silent this long past the timeout it asked the server for. */
#define WATCH_IDLE_GRACE_S 60
/* A watch that lasted this long was healthy even when it delivered nothing. */
#define WATCH_HEALTHY_MS 10000
#define PATH_MAX_LEN 8192

/* ---- small helpers ---- */

static bool stopped(const struct kube_reflector *r)
{
    return r->stop != NULL && atomic_load(r->stop);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*, one state per thread: jitter needs no quality, only no lockstep between
 * reflectors. */
static uint64_t random_u64(void)
{
    static _Thread_local uint64_t state;
    if (state == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&state ^
                0x9E3779B97F4A7C15ull;
    }
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
}

static void warn(struct kube_reflector *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct kube_reflector *r, const char *fmt, ...)
{
    char message[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    if (r->ops.warn != NULL)
        r->ops.warn(r->ops.ctx, message);
    else
        log_warn("%s", message);
}

/* Sleep ms in slices, returning early once *stop is set. */
static void sleep_ms(const struct kube_reflector *r, int64_t ms)
{
    int64_t end = now_ms() + ms;
    for (;;) {
        if (stopped(r))
            return;
        int64_t left = end - now_ms();
        if (left <= 0)
            return;
        if (left > SLEEP_SLICE_MS)
            left = SLEEP_SLICE_MS;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)left * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The next step of the backoff (200 ms doubling to 30 s), slept with +-20 % jitter. */
static void backoff(struct kube_reflector *r)
{
    int64_t next = r->backoff_ms == 0 ? BACKOFF_FIRST_MS : r->backoff_ms * 2;
    if (next > BACKOFF_MAX_MS)
        next = BACKOFF_MAX_MS;
    r->backoff_ms = next;
    int64_t spread = next * 2 / 5; /* the width of +-20 % */
    int64_t jittered = next - next / 5 + (int64_t)(random_u64() % (uint64_t)(spread + 1));
    sleep_ms(r, jittered);
}

static int set_string(char **field, const char *value)
{
    char *copy = strdup(value);
    if (copy == NULL)
        return -ENOMEM;
    free(*field);
    *field = copy;
    return 0;
}

/* ---- objects ---- */

/* The metadata the store keeps; the strings point into the parsed object. */
struct object_meta {
    const char *namespace; /* "" when cluster-scoped */
    const char *name;
    const char *uid; /* "" when the object has none */
    const char *resource_version;
};

static const char *scalar_or(const struct tree *t, const char *fallback)
{
    return t != NULL && t->type == TREE_SCALAR && !tree_is_null(t) ? t->scalar : fallback;
}

/* Whatever naming the object carries, valid or not, for messages. */
static void partial_meta(const struct tree *object, struct object_meta *m)
{
    const struct tree *metadata = tree_get(object, "metadata");
    m->namespace = scalar_or(tree_get(metadata, "namespace"), "");
    m->name = scalar_or(tree_get(metadata, "name"), "");
    m->uid = scalar_or(tree_get(metadata, "uid"), "");
    m->resource_version = scalar_or(tree_get(metadata, "resourceVersion"), NULL);
}

static int required_scalar(const struct tree *parent, const char *key, const char *what,
                           const char *expected, const char **out, struct kc_error *err)
{
    const struct tree *value = tree_get(parent, key);
    if (value == NULL)
        return tree_error(parent, err, -EINVAL, what, "missing; expected %s", expected);
    if (value->type != TREE_SCALAR || tree_is_null(value) || value->scalar[0] == '\0')
        return tree_error(value, err, -EINVAL, what, "expected %s", expected);
    *out = value->scalar;
    return 0;
}

static int object_meta(const struct tree *object, struct object_meta *m, struct kc_error *err)
{
    if (object == NULL)
        return kc_error_set(err, -EINVAL, "key 'object': missing; expected the changed object");
    if (object->type != TREE_MAP)
        return tree_error(object, err, -EINVAL, "object", "expected a map");
    const struct tree *metadata = tree_get(object, "metadata");
    if (metadata == NULL || metadata->type != TREE_MAP)
        return tree_error(metadata != NULL ? metadata : object, err, -EINVAL, "metadata",
                          "%s; expected a map with name and resourceVersion",
                          metadata != NULL ? "not a map" : "missing");
    int rc = required_scalar(metadata, "name", "metadata.name", "the object's name", &m->name, err);
    if (rc != 0)
        return rc;
    rc = required_scalar(metadata, "resourceVersion", "metadata.resourceVersion",
                         "the object's resourceVersion", &m->resource_version, err);
    if (rc != 0)
        return rc;
    const struct tree *namespace = tree_get(metadata, "namespace");
    const struct tree *uid = tree_get(metadata, "uid");
    if ((namespace != NULL && namespace->type != TREE_SCALAR) ||
        (uid != NULL && uid->type != TREE_SCALAR))
        return tree_error(namespace != NULL && namespace->type != TREE_SCALAR ? namespace : uid,
                          err, -EINVAL,
                          namespace != NULL && namespace->type != TREE_SCALAR ? "metadata.namespace"
                                                                              : "metadata.uid",
                          "expected a string");
    m->namespace = scalar_or(namespace, "");
    m->uid = scalar_or(uid, "");
    /* The store keys objects by namespace/name, so a '/' inside either would let a cluster-scoped
     * "a/b" and the namespaced a/b share a key; Kubernetes allows '/' in neither. */
    if (strchr(m->name, '/') != NULL)
        return tree_error(tree_get(metadata, "name"), err, -EINVAL, "metadata.name",
                          "'%s' contains '/', which no Kubernetes name may", m->name);
    if (strchr(m->namespace, '/') != NULL)
        return tree_error(namespace, err, -EINVAL, "metadata.namespace",
                          "'%s' contains '/', which no Kubernetes namespace may", m->namespace);
    return 0;
}

/* The naming of a JSON text that tree_parse_buffer refused, read by jansson when it can; the
 * strings live in the returned json_t (NULL when jansson refuses it too). `object` selects the
 * event's object rather than the text itself. */
static json_t *fallback_meta(const char *json, size_t len, bool event, struct object_meta *m,
                             const char **type)
{
    *m = (struct object_meta){.namespace = "", .name = "", .uid = ""};
    *type = NULL;
    json_t *root = json_loadb(json, len, JSON_ALLOW_NUL, NULL);
    if (root == NULL)
        return NULL;
    json_t *object = root;
    if (event) {
        *type = json_string_value(json_object_get(root, "type"));
        object = json_object_get(root, "object");
    }
    json_t *metadata = json_object_get(object, "metadata");
    const char *value;
    if ((value = json_string_value(json_object_get(metadata, "namespace"))) != NULL)
        m->namespace = value;
    if ((value = json_string_value(json_object_get(metadata, "name"))) != NULL)
        m->name = value;
    if ((value = json_string_value(json_object_get(metadata, "uid"))) != NULL)
        m->uid = value;
    m->resource_version = json_string_value(json_object_get(metadata, "resourceVersion"));
    return root;
}

/* ---- JSON text ---- */

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The code unit of the \uXXXX escape at s[i], or -1. */
static long unicode_escape(const char *s, size_t len, size_t i)
{
    if (i + 6 > len || s[i] != '\\' || s[i + 1] != 'u')
        return -1;
    long value = 0;
    for (size_t k = i + 2; k < i + 6; k++) {
        int digit = hex_digit(s[k]);
        if (digit < 0)
            return -1;
        value = value << 4 | digit;
    }
    return value;
}

static bool is_surrogate(long unit)
{
    return unit >= 0xD800 && unit <= 0xDFFF;
}

static size_t put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* JSON may spell characters beyond the BMP as a surrogate pair of escapes ("\ud83d\ude00": what
 * Python and Java write), which the YAML loader refuses. Write them as UTF-8 instead, and a lone
 * surrogate as U+FFFD as Go's decoder does. NULL when the text has none (or out of memory). */
static char *surrogates_to_utf8(const char *s, size_t len, size_t *out_len)
{
    size_t i = 0;
    for (; i < len; i++) {
        if (s[i] == '\\') {
            if (is_surrogate(unicode_escape(s, len, i)))
                break;
            i++; /* skip the escaped character, which may itself be a backslash */
        }
    }
    if (i >= len)
        return NULL;
    char *out = malloc(len + 1); /* the rewrite never grows the text */
    if (out == NULL)
        return NULL;
    memcpy(out, s, i);
    size_t n = i;
    while (i < len) {
        if (s[i] != '\\') {
            out[n++] = s[i++];
            continue;
        }
        long unit = unicode_escape(s, len, i);
        if (!is_surrogate(unit)) {
            out[n++] = s[i++];
            if (i < len)
                out[n++] = s[i++];
            continue;
        }
        long low = unit <= 0xDBFF ? unicode_escape(s, len, i + 6) : -1;
        if (low >= 0xDC00 && low <= 0xDFFF) {
            n += put_utf8(out + n, 0x10000 + (((unsigned long)unit - 0xD800) << 10) +
                                       ((unsigned long)low - 0xDC00));
            i += 12;
        } else {
            n += put_utf8(out + n, 0xFFFD);
            i += 6;
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

static int parse_json(const char *name, const char *json, size_t len, struct tree **out,
                      struct kc_error *err)
{
    size_t fixed_len;
    char *fixed = surrogates_to_utf8(json, len, &fixed_len);
    int rc = tree_parse_buffer(name, fixed != NULL ? fixed : json, fixed != NULL ? fixed_len : len,
                               out, err);
    free(fixed);
    return rc;
}

/* ---- the store ---- */

static void item_free(struct kube_store_item *item)
{
    if (item == NULL)
        return;
    free(item->uid);
    free(item->resource_version);
    free(item);
}

/* -EINVAL for a naming that would not be a unique key (object_meta refuses those; mark_seen
 * gets the naming of objects object_meta refused). */
static int key_of(const char *namespace, const char *name, char *out, size_t size)
{
    if (strchr(namespace, '/') != NULL || strchr(name, '/') != NULL)
        return -EINVAL;
    int n = namespace[0] != '\0' ? snprintf(out, size, "%s/%s", namespace, name)
                                 : snprintf(out, size, "%s", name);
    return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* key, namespace and name share the item's allocation; uid and RV change and are their own. */
static struct kube_store_item *item_new(const char *key, const struct object_meta *m)
{
    size_t key_len = strlen(key) + 1;
    size_t namespace_len = strlen(m->namespace) + 1;
    size_t name_len = strlen(m->name) + 1;
    struct kube_store_item *item = calloc(1, sizeof(*item) + key_len + namespace_len + name_len);
    if (item == NULL)
        return NULL;
    char *text = (char *)(item + 1);
    item->key = memcpy(text, key, key_len);
    item->namespace = memcpy(text + key_len, m->namespace, namespace_len);
    item->name = memcpy(text + key_len + namespace_len, m->name, name_len);
    item->uid = strdup(m->uid);
    item->resource_version = strdup(m->resource_version);
    if (item->uid == NULL || item->resource_version == NULL) {
        item_free(item);
        return NULL;
    }
    return item;
}

static void emit(struct kube_reflector *r, enum kube_event_type type, const char *namespace,
                 const char *name, const char *uid, const struct tree *object)
{
    r->events++;
    if (r->ops.event != NULL)
        r->ops.event(r->ops.ctx, type, namespace, name, uid, object);
}

/* An object as it is now (a list item, an ADDED or MODIFIED event): tell the consumer what
 * changed since what it was last told. */
static int apply_object(struct kube_reflector *r, const struct object_meta *m,
                        const struct tree *object)
{
    char key[1024];
    if (key_of(m->namespace, m->name, key, sizeof(key)) != 0)
        return -ENAMETOOLONG;
    struct kube_store_item *item = strmap_get(&r->store, key);
    if (item == NULL) {
        item = item_new(key, m);
        if (item == NULL || strmap_put(&r->store, item->key, item) != 0) {
            item_free(item);
            return -ENOMEM;
        }
        item->seen = true;
        emit(r, KUBE_ADDED, m->namespace, m->name, m->uid, object);
        return 0;
    }
    item->seen = true;
    if (strcmp(item->uid, m->uid) != 0) {
        /* Deleted and created again under the same name while we were not looking. */
        emit(r, KUBE_DELETED, item->namespace, item->name, item->uid, NULL);
        if (set_string(&item->uid, m->uid) != 0 ||
            set_string(&item->resource_version, m->resource_version) != 0) {
            strmap_remove(&r->store, key);
            item_free(item);
            return -ENOMEM;
        }
        emit(r, KUBE_ADDED, m->namespace, m->name, m->uid, object);
        return 0;
    }
    if (strcmp(item->resource_version, m->resource_version) == 0)
        return 0;
    if (set_string(&item->resource_version, m->resource_version) != 0)
        return -ENOMEM;
    emit(r, KUBE_MODIFIED, m->namespace, m->name, m->uid, object);
    return 0;
}

static void apply_delete(struct kube_reflector *r, const struct object_meta *m,
                         const struct tree *object)
{
    char key[1024];
    if (key_of(m->namespace, m->name, key, sizeof(key)) != 0)
        return;
    struct kube_store_item *item = strmap_remove(&r->store, key);
    if (item == NULL)
        return; /* never told: nothing to take back */
    emit(r, KUBE_DELETED, m->namespace, m->name, m->uid[0] != '\0' ? m->uid : item->uid, object);
    item_free(item);
}

/* Mark a key seen during a relist without changing it (an item we could not read). */
static void mark_seen(struct kube_reflector *r, const char *namespace, const char *name)
{
    char key[1024];
    if (name[0] == '\0' || key_of(namespace, name, key, sizeof(key)) != 0)
        return;
    struct kube_store_item *item = strmap_get(&r->store, key);
    if (item != NULL)
        item->seen = true;
}

static void for_each_item(struct kube_reflector *r,
                          void (*fn)(struct kube_reflector *r, struct kube_store_item *item))
{
    /* Removal leaves a tombstone in place, so fn may remove the item it is given. */
    for (uint32_t i = 0; i < r->store.capacity; i++) {
        struct kube_store_item *item = r->store.entries[i].value;
        if (item != NULL)
            fn(r, item);
    }
}

static void clear_seen(struct kube_reflector *r, struct kube_store_item *item)
{
    item->seen = false;
}

static void delete_unseen(struct kube_reflector *r, struct kube_store_item *item)
{
    if (item->seen)
        return;
    strmap_remove(&r->store, item->key);
    emit(r, KUBE_DELETED, item->namespace, item->name, item->uid, NULL);
    item_free(item);
}

static void free_item(struct kube_reflector *r, struct kube_store_item *item)
{
    item_free(item);
}

/* ---- paths ---- */

/* Append "&name=encoded(value)" (or "?..." first) to path. */
static int add_query(char *path, size_t size, const char *name, const char *value)
{
    size_t len = strlen(path);
    int n = snprintf(path + len, size - len, "%c%s=", strchr(path, '?') != NULL ? '&' : '?', name);
    if (n < 0 || (size_t)n >= size - len)
        return -ENAMETOOLONG;
    len += (size_t)n;
    if (kube_url_encode(path + len, size - len, value) >= size - len)
        return -ENAMETOOLONG;
    return 0;
}

/* ---- list ---- */

/* Index just past the JSON string at s[i] (a '"'), or 0 when it does not end. */
static size_t string_end(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* Index just past the JSON value at s[i], or 0 when it is malformed or does not end. */
static size_t value_end(const char *s, size_t len, size_t i)
{
    if (i >= len)
        return 0;
    if (s[i] == '"')
        return string_end(s, len, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        while (i < len) {
            char ch = s[i];
            if (ch == '"') {
                if ((i = string_end(s, len, i)) == 0)
                    return 0;
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if ((ch == '}' || ch == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return 0;
    }
    size_t start = i;
    while (i < len && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
           s[i] != '\r' && s[i] != '\t')
        i++;
    return i > start ? i : 0;
}

static size_t skip_space(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
        i++;
    return i;
}

/* One page: where its items are and its metadata. */
struct page {
    const char *items;
    size_t items_len;
    char *resource_version;
    char *continue_token;
};

/* Read the list envelope {"metadata": {...}, "items": [...], ...} without parsing the items,
 * which are parsed one by one so one bad item costs only itself. */
static int scan_page(const char *s, size_t len, struct page *p)
{
    size_t i = skip_space(s, len, 0);
    if (i >= len || s[i] != '{')
        return -EPROTO;
    i = skip_space(s, len, i + 1);
    while (i < len && s[i] != '}') {
        if (s[i] != '"')
            return -EPROTO;
        size_t key_end = string_end(s, len, i);
        if (key_end == 0)
            return -EPROTO;
        const char *key = s + i + 1;
        size_t key_len = key_end - i - 2;
        i = skip_space(s, len, key_end);
        if (i >= len || s[i] != ':')
            return -EPROTO;
        i = skip_space(s, len, i + 1);
        size_t end = value_end(s, len, i);
        if (end == 0)
            return -EPROTO;
        if (key_len == 5 && memcmp(key, "items", 5) == 0) {
            p->items = s + i;
            p->items_len = end - i;
        } else if (key_len == 8 && memcmp(key, "metadata", 8) == 0) {
            /* a second metadata key replaces the first, as in a JSON parser */
            free(p->resource_version);
            free(p->continue_token);
            p->resource_version = p->continue_token = NULL;
            json_t *metadata = json_loadb(s + i, end - i, 0, NULL);
            const char *rv = json_string_value(json_object_get(metadata, "resourceVersion"));
            const char *token = json_string_value(json_object_get(metadata, "continue"));
            if ((rv != NULL && (p->resource_version = strdup(rv)) == NULL) ||
                (token != NULL && (p->continue_token = strdup(token)) == NULL)) {
                json_decref(metadata);
                return -ENOMEM;
            }
            json_decref(metadata);
        }
        i = skip_space(s, len, end);
        if (i < len && s[i] == ',')
            i = skip_space(s, len, i + 1);
        else if (i >= len || s[i] != '}')
            return -EPROTO;
    }
    return i < len ? 0 : -EPROTO;
}

static int list_item(struct kube_reflector *r, const char *json, size_t len)
{
    char name[128];
    snprintf(name, sizeof(name), "%s list item", r->resource->kind);
    struct tree *object;
    struct kc_error err = {{0}};
    if (parse_json(name, json, len, &object, &err) != 0) {
        struct object_meta m;
        const char *type;
        json_t *held = fallback_meta(json, len, false, &m, &type);
        r->bad_objects++;
        warn(r, "%s %s%s%s: skipped an object that cannot be read: %s", r->resource->kind,
             m.namespace, m.namespace[0] != '\0' ? "/" : "", m.name, err.message);
        mark_seen(r, m.namespace, m.name);
        json_decref(held);
        return 0;
    }
    struct object_meta m;
    int rc = object_meta(object, &m, &err);
    if (rc != 0) {
        partial_meta(object, &m);
        r->bad_objects++;
        warn(r, "%s %s%s%s: skipped a bad object: %s", r->resource->kind, m.namespace,
             m.namespace[0] != '\0' ? "/" : "", m.name, err.message);
        mark_seen(r, m.namespace, m.name);
        rc = 0;
    } else {
        rc = apply_object(r, &m, object);
        if (rc == -ENAMETOOLONG) {
            r->bad_objects++;
            warn(r, "%s %s/%s: skipped: the name is too long", r->resource->kind, m.namespace,
                 m.name);
            rc = 0;
        }
    }
    tree_free(object);
    return rc;
}

static int list_items(struct kube_reflector *r, const char *s, size_t len)
{
    size_t i = skip_space(s, len, 0);
    if (i >= len || s[i] == 'n') /* "items": null */
        return 0;
    if (s[i] != '[')
        return -EPROTO;
    i = skip_space(s, len, i + 1);
    while (i < len && s[i] != ']') {
        size_t end = value_end(s, len, i);
        if (end == 0)
            return -EPROTO;
        int rc = list_item(r, s + i, end - i);
        if (rc != 0)
            return rc;
        i = skip_space(s, len, end);
        if (i < len && s[i] == ',')
            i = skip_space(s, len, i + 1);
        else if (i >= len || s[i] != ']')
            return -EPROTO;
    }
    return 0;
}

struct page_state {
    struct kube_reflector *r;
    struct page page;
    bool done;
    int rc;
    size_t *list_bytes; /* decoded bytes of the list's pages so far, this one included; NULL:
                         * not counted */
};

static int on_page(void *ctx, const char *json, size_t len)
{
    struct page_state *ps = ctx;
    if (ps->done)
        return 0; /* one value per page; anything after it is ignored */
    ps->done = true;
    /* each page is bounded by the client; the pages of one list together are bounded here,
     * before the items reach the store, or endless continue tokens would grow it forever */
    if (ps->list_bytes != NULL) { /* NULL when fed (kube_reflector_feed_list): no client */
        *ps->list_bytes += len;
        if (*ps->list_bytes > kube_client_limits(ps->r->client)->list_bytes) {
            ps->rc = -EFBIG;
            return 0;
        }
    }
    ps->rc = scan_page(json, len, &ps->page);
    if (ps->rc == 0 && ps->page.items != NULL)
        ps->rc = list_items(ps->r, ps->page.items, ps->page.items_len);
    /* Let the response end by itself, so its connection can be used again. */
    return 0;
}

enum list_result { LIST_OK, LIST_FAILED, LIST_NOT_SERVED, LIST_STOPPED };

/* The pages of one list together passed --max-list-bytes: worded as the client's own
 * too-large errors, naming the limit and the flag that raises it. */
static void list_too_large(const struct kube_reflector *r, char *text, size_t size)
{
    size_t limit = kube_client_limits(r->client)->list_bytes;
    snprintf(text, size,
             "the list's pages together are larger than the limit of %zu bytes (%.1f MiB, "
             "decoded); if the cluster really needs more, raise --max-list-bytes",
             limit, (double)limit / (1 << 20));
}

/* Build the path of one list page. */
static int list_path(const struct kube_reflector *r, const char *continue_token, char *path,
                     size_t size)
{
    char limit[16];
    snprintf(limit, sizeof(limit), "%" PRIu32,
             r->resource->page_size != 0 ? r->resource->page_size : DEFAULT_PAGE_SIZE);
    snprintf(path, size, "%s", r->resource->path);
    int rc = add_query(path, size, "limit", limit);
    if (rc == 0 && r->resource->field_selector != NULL)
        rc = add_query(path, size, "fieldSelector", r->resource->field_selector);
    if (rc == 0 && continue_token != NULL)
        rc = add_query(path, size, "continue", continue_token);
    return rc;
}

/* All pages of one consistent list, each item diffed as it comes; then the keys the list did
 * not have are deleted. A 410 on a continue token starts over. */
static enum list_result list_all(struct kube_reflector *r)
{
    const char *kind = r->resource->kind;
    char *path = malloc(PATH_MAX_LEN);
    if (path == NULL) {
        warn(r, "%s list: out of memory", kind);
        return LIST_FAILED;
    }
    enum list_result result = LIST_FAILED;
    char *continue_token = NULL;
    size_t list_bytes = 0;
    r->lists++;
    for_each_item(r, clear_seen);
    for (;;) {
        if (list_path(r, continue_token, path, PATH_MAX_LEN) != 0) {
            warn(r, "%s list: the request path is too long", kind);
            break;
        }
        struct page_state ps = {.r = r, .list_bytes = &list_bytes};
        long status = 0;
        char *error_body = NULL;
        struct kc_error err = {{0}};
        int rc = kube_stream(r->client, path, KUBE_STREAM_LIST, LIST_IDLE_TIMEOUT_MS, r->stop,
                             on_page, &ps, &status, &error_body, &err);
        if (stopped(r)) {
            free(error_body);
            free(ps.page.resource_version);
            free(ps.page.continue_token);
            result = LIST_STOPPED;
            break;
        }
        if (rc == 0 && status == 410 && continue_token != NULL) {
            /* The snapshot behind the token is gone: start over from a fresh one. */
            free(error_body);
            free(continue_token);
            continue_token = NULL;
            list_bytes = 0;
            r->lists++;
            for_each_item(r, clear_seen);
            warn(r, "%s list: the continue token expired (410); listing again", kind);
            continue;
        }
        if (rc == 0 && status == 404 && r->ops.not_served != NULL) {
            /* not an error to retry loudly: the resource does not exist on this server, so
             * neither do its objects */
            free(error_body);
            free(ps.page.resource_version);
            free(ps.page.continue_token);
            for_each_item(r, clear_seen);
            for_each_item(r, delete_unseen);
            result = LIST_NOT_SERVED;
            break;
        }
        if (rc != 0 || status != 200 || !ps.done || ps.rc != 0) {
            char text[sizeof(err.message)] = "";
            if (rc != 0)
                snprintf(text, sizeof(text), "%s", err.message);
            else if (status != 200)
                kube_status_text(error_body, text, sizeof(text));
            else if (!ps.done)
                snprintf(text, sizeof(text), "the response ended before the list did");
            else if (ps.rc == -EFBIG)
                list_too_large(r, text, sizeof(text));
            else
                snprintf(text, sizeof(text), "%s",
                         ps.rc == -ENOMEM ? "out of memory" : "the response is not a list");
            warn(r, "%s list %s failed (HTTP %ld): %s; retrying", kind, path, status, text);
            free(error_body);
            free(ps.page.resource_version);
            free(ps.page.continue_token);
            break;
        }
        free(error_body);
        free(continue_token);
        continue_token = ps.page.continue_token;
        if (continue_token != NULL && continue_token[0] != '\0') {
            free(ps.page.resource_version);
            continue;
        }
        for_each_item(r, delete_unseen);
        free(r->resource_version);
        r->resource_version = ps.page.resource_version;
        if (r->resource_version == NULL)
            r->resource_version = strdup("");
        result = r->resource_version != NULL ? LIST_OK : LIST_FAILED;
        break;
    }
    free(continue_token);
    free(path);
    return result;
}

/* ---- watch ---- */

enum watch_result { WATCH_ENDED, WATCH_EXPIRED, WATCH_FAILED, WATCH_RELIST, WATCH_STOPPED };

struct watch_state {
    struct kube_reflector *r;
    uint64_t delivered; /* events of any type, bookmarks included */
    bool expired;
    bool failed;
    bool relist; /* the store may be behind (out of memory): only a relist puts it right */
};

static int advance_rv(struct kube_reflector *r, const char *resource_version)
{
    if (resource_version == NULL || resource_version[0] == '\0')
        return 0;
    return set_string(&r->resource_version, resource_version);
}

static bool is_expired_status(const struct tree *status)
{
    const char *code = scalar_or(tree_get(status, "code"), "");
    const char *reason = scalar_or(tree_get(status, "reason"), "");
    return strcmp(code, "410") == 0 || strcmp(reason, "Expired") == 0 ||
           strcmp(reason, "Gone") == 0;
}

/* An event whose JSON tree_parse_buffer refused: warn, and still move past its RV. */
static void unreadable_event(struct kube_reflector *r, const char *json, size_t len,
                             const char *problem)
{
    struct object_meta m;
    const char *type;
    json_t *held = fallback_meta(json, len, true, &m, &type);
    r->bad_objects++;
    warn(r, "%s %s%s%s: skipped a watch event that cannot be read: %s", r->resource->kind,
         m.namespace, m.namespace[0] != '\0' ? "/" : "", m.name, problem);
    if (type != NULL && strcmp(type, "ERROR") != 0)
        advance_rv(r, m.resource_version);
    json_decref(held);
}

static int watch_event(struct watch_state *w, const struct tree *event)
{
    struct kube_reflector *r = w->r;
    const char *kind = r->resource->kind;
    struct kc_error err = {{0}};
    const struct tree *type_node = tree_get(event, "type");
    const struct tree *object = tree_get(event, "object");
    const char *type = scalar_or(type_node, NULL);
    if (type == NULL) {
        r->bad_objects++;
        tree_error(type_node != NULL ? type_node : event, &err, -EINVAL, "type",
                   "expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR");
        warn(r, "%s watch: skipped an event: %s", kind, err.message);
        return 0;
    }
    if (strcmp(type, "ERROR") == 0) {
        if (is_expired_status(object)) {
            w->expired = true;
        } else {
            w->failed = true;
            warn(r, "%s watch: the server sent an error: %s%s%s", kind,
                 scalar_or(tree_get(object, "reason"), ""),
                 tree_get(object, "reason") != NULL ? ": " : "",
                 scalar_or(tree_get(object, "message"), "(no message)"));
        }
        return 1;
    }
    if (strcmp(type, "BOOKMARK") == 0) {
        r->bookmarks++;
        w->delivered++;
        const char *rv = scalar_or(tree_get(tree_get(object, "metadata"), "resourceVersion"), NULL);
        return advance_rv(r, rv) == 0 ? 0 : -ENOMEM;
    }
    bool deleted = strcmp(type, "DELETED") == 0;
    if (!deleted && strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0) {
        r->bad_objects++;
        tree_error(type_node, &err, -EINVAL, "type",
                   "'%s' is not an event type; expected ADDED, MODIFIED, DELETED, BOOKMARK or "
                   "ERROR",
                   type);
        warn(r, "%s watch: skipped an event: %s", kind, err.message);
        return 0;
    }
    w->delivered++;
    struct object_meta m;
    if (object_meta(object, &m, &err) != 0) {
        partial_meta(object, &m);
        r->bad_objects++;
        warn(r, "%s %s%s%s: skipped a bad object in a %s event: %s", kind, m.namespace,
             m.namespace[0] != '\0' ? "/" : "", m.name, type, err.message);
        return advance_rv(r, m.resource_version) == 0 ? 0 : -ENOMEM;
    }
    int rc = 0;
    if (deleted)
        apply_delete(r, &m, object);
    else
        rc = apply_object(r, &m, object);
    if (rc == -ENAMETOOLONG) {
        r->bad_objects++;
        warn(r, "%s %s/%s: skipped: the name is too long", kind, m.namespace, m.name);
        rc = 0;
    }
    if (rc == 0)
        rc = advance_rv(r, m.resource_version);
    return rc;
}

static int on_watch_value(void *ctx, const char *json, size_t len)
{
    struct watch_state *w = ctx;
    struct kube_reflector *r = w->r;
    if (stopped(r))
        return 1;
    char name[128];
    snprintf(name, sizeof(name), "%s watch event", r->resource->kind);
    struct tree *event;
    struct kc_error err = {{0}};
    if (parse_json(name, json, len, &event, &err) != 0) {
        unreadable_event(r, json, len, err.message);
        return 0;
    }
    int rc = watch_event(w, event);
    tree_free(event);
    if (rc < 0) {
        /* Out of memory: the store may be behind; only a relist puts it right. */
        warn(r, "%s watch: out of memory; relisting", r->resource->kind);
        w->relist = true;
        return 1;
    }
    return rc;
}

static int watch_path(const struct kube_reflector *r, uint32_t timeout_s, char *path, size_t size)
{
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%" PRIu32, timeout_s);
    snprintf(path, size, "%s", r->resource->path);
    int rc = add_query(path, size, "watch", "1");
    if (rc == 0)
        rc = add_query(path, size, "allowWatchBookmarks", "true");
    if (rc == 0)
        rc = add_query(path, size, "resourceVersion", r->resource_version);
    if (rc == 0)
        rc = add_query(path, size, "timeoutSeconds", timeout);
    if (rc == 0 && r->resource->field_selector != NULL)
        rc = add_query(path, size, "fieldSelector", r->resource->field_selector);
    return rc;
}

static enum watch_result watch_once(struct kube_reflector *r, uint64_t *delivered)
{
    const char *kind = r->resource->kind;
    *delivered = 0;
    uint32_t timeout_s = r->watch_timeout_s;
    if (timeout_s == 0)
        timeout_s = 300 + (uint32_t)(random_u64() % 301);
    char path[PATH_MAX_LEN];
    if (watch_path(r, timeout_s, path, sizeof(path)) != 0) {
        warn(r, "%s watch: the request path is too long", kind);
        return WATCH_FAILED;
    }
    r->watches++;
    struct watch_state w = {.r = r};
    long status = 0;
    char *error_body = NULL;
    struct kc_error err = {{0}};
    int rc = kube_stream(r->client, path, KUBE_STREAM_WATCH,
                         ((long)timeout_s + WATCH_IDLE_GRACE_S) * 1000, r->stop, on_watch_value, &w,
                         &status, &error_body, &err);
    *delivered = w.delivered;
    enum watch_result result = WATCH_ENDED;
    if (stopped(r)) {
        result = WATCH_STOPPED;
    } else if (w.relist) {
        result = WATCH_RELIST;
    } else if (w.expired || (rc == 0 && status == 410)) {
        warn(r, "%s watch: resourceVersion %s is too old (410); listing again", kind,
             r->resource_version);
        result = WATCH_EXPIRED;
    } else if (w.failed) {
        result = WATCH_FAILED;
    } else if (rc != 0) {
        warn(r, "%s watch: %s; resuming from resourceVersion %s", kind, err.message,
             r->resource_version);
        result = WATCH_FAILED;
    } else if (status == 404 && r->ops.not_served != NULL) {
        result = WATCH_RELIST; /* the resource went away (a CRD deleted): the list says so */
    } else if (status != 200) {
        char text[512];
        kube_status_text(error_body, text, sizeof(text));
        warn(r, "%s watch %s: HTTP %ld%s%s; retrying", kind, path, status,
             text[0] != '\0' ? ": " : "", text);
        result = WATCH_FAILED;
    }
    free(error_body);
    return result;
}

/* ---- the loop ---- */

int kube_reflector_init(struct kube_reflector *r, const struct kube_resource *resource,
                        const struct kube_reflector_ops *ops, struct kube_client *client,
                        const atomic_bool *stop)
{
    memset(r, 0, sizeof(*r));
    if (resource == NULL || resource->kind == NULL || resource->path == NULL || ops == NULL ||
        client == NULL)
        return -EINVAL;
    r->resource = resource;
    r->ops = *ops;
    r->client = client;
    r->stop = stop;
    return 0;
}

int kube_reflector_run(struct kube_reflector *r)
{
    bool need_list = true;
    bool fresh_list = false;
    while (!stopped(r)) {
        if (need_list) {
            enum list_result listed = list_all(r);
            if (listed == LIST_STOPPED)
                break;
            if (listed == LIST_NOT_SERVED)
                r->ops.not_served(r->ops.ctx);
            if (listed != LIST_OK) {
                backoff(r);
                continue;
            }
            need_list = false;
            fresh_list = true;
            if (r->ops.synced != NULL)
                r->ops.synced(r->ops.ctx);
        }
        int64_t started = now_ms();
        uint64_t delivered;
        enum watch_result watched = watch_once(r, &delivered);
        if (watched == WATCH_STOPPED)
            break;
        bool healthy = delivered > 0 || now_ms() - started >= WATCH_HEALTHY_MS;
        if (healthy)
            r->backoff_ms = 0;
        if (watched == WATCH_EXPIRED) {
            r->relists_after_expired++;
            need_list = true;
            /* Relist at once, unless the list we just made is already too old: then the
             * server is in trouble and gets a pause. */
            if (fresh_list && !healthy)
                backoff(r);
        } else {
            need_list = need_list || watched == WATCH_RELIST;
            backoff(r);
        }
        fresh_list = false;
    }
    return 0;
}

void kube_reflector_free(struct kube_reflector *r)
{
    if (r == NULL)
        return;
    for_each_item(r, free_item);
    strmap_free(&r->store);
    free(r->resource_version);
    r->resource_version = NULL;
}

/* ---- fed by hand: the fuzz target of list and watch bodies (tests/fuzz/fuzz_kube.c) ---- */

int kube_reflector_feed_list(struct kube_reflector *r, const char *body, size_t len)
{
    struct page_state ps = {.r = r};
    struct json_splitter s = {0};
    r->lists++;
    for_each_item(r, clear_seen);
    int rc = json_splitter_feed(&s, body, len, on_page, &ps);
    if (rc == 0)
        rc = json_splitter_finish(&s, on_page, &ps);
    json_splitter_free(&s);
    if (rc == 0 && !ps.done)
        rc = -EPROTO;
    if (rc == 0)
        rc = ps.rc;
    /* a page with a continue token is not the end of the list: nothing is known gone yet */
    if (rc == 0 && (ps.page.continue_token == NULL || ps.page.continue_token[0] == '\0')) {
        for_each_item(r, delete_unseen);
        free(r->resource_version);
        r->resource_version = ps.page.resource_version;
        ps.page.resource_version = NULL;
    }
    free(ps.page.resource_version);
    free(ps.page.continue_token);
    return rc;
}

int kube_reflector_feed_watch(struct kube_reflector *r, const char *stream, size_t len)
{
    struct watch_state w = {.r = r};
    struct json_splitter s = {0};
    r->watches++;
    int rc = json_splitter_feed(&s, stream, len, on_watch_value, &w);
    if (rc == 0)
        rc = json_splitter_finish(&s, on_watch_value, &w);
    json_splitter_free(&s);
    if (rc > 0)
        rc = 0; /* the stream stopped at an ERROR event, as a watch does */
    return rc < 0 ? rc : w.relist ? -ENOMEM : 0;
}
