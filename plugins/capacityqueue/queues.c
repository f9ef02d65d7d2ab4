/* The queue tree: CapacityQueue objects read from their JSON, linked into a tree and checked
 * (plugins/capacityqueue/README.md, "Rules"), usage kept per queue, and admission. */
#include "queues.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define PLUGIN_NAME "capacityqueue"

void cq_log(kc_log_level level, const char *format, ...)
{
    char line[CQ_ERROR_MAX + 256];
    va_list ap;
    va_start(ap, format);
    vsnprintf(line, sizeof(line), format, ap);
    va_end(ap);
    kc_log(level, PLUGIN_NAME, line);
}

kc_status cq_reject(kc_cycle *cycle, kc_status status, const char *format, ...)
{
    char reason[768];
    va_list ap;
    va_start(ap, format);
    vsnprintf(reason, sizeof(reason), format, ap);
    va_end(ap);
    kc_cycle_reject(cycle, reason);
    return status;
}

/* ---- quantities ------------------------------------------------------------------------------ */

bool cq_parse_quantity(const char *text, kc_resource id, int64_t *out)
{
    static const struct {
        const char *suffix;
        long double factor;
    } units[] = {
        {"Ki", 1024.0L}, {"Mi", 1048576.0L}, {"Gi", 1073741824.0L}, {"Ti", 1099511627776.0L},
        {"Pi", 1125899906842624.0L}, {"Ei", 1152921504606846976.0L}, {"n", 1e-9L}, {"u", 1e-6L},
        {"m", 1e-3L}, {"k", 1e3L}, {"M", 1e6L}, {"G", 1e9L}, {"T", 1e12L}, {"P", 1e15L},
        {"E", 1e18L}, {"", 1.0L},
    };
    /* Kubernetes' grammar: an unsigned decimal number; strtold would also take a sign, leading
     * space, hex ("0x10"), "inf" and "nan" */
    if (text == NULL || !((text[0] >= '0' && text[0] <= '9') || text[0] == '.'))
        return false;
    for (const char *c = text; *c != '\0'; c++)
        if (*c == 'x' || *c == 'X' || *c == 'p' || *c == 'P')
            if (!(c[0] == 'P' && c[1] == '\0') && !(c[0] == 'P' && c[1] == 'i' && c[2] == '\0'))
                return false;
    char *end;
    long double value = strtold(text, &end);
    if (end == text || !isfinite(value))
        return false;
    long double factor = 0;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && factor == 0; i++)
        if (strcmp(end, units[i].suffix) == 0)
            factor = units[i].factor;
    if (factor == 0)
        return false; /* an exponent is read by strtold; anything else left over is not ours */
    long double base = value * factor * (id == KC_RESOURCE_CPU ? 1000.0L : 1.0L);
    base = ceill(base - 1e-9L);
    *out = base >= (long double)INT64_MAX ? INT64_MAX : (int64_t)base;
    return true;
}

/* ---- one queue from its object --------------------------------------------------------------- */

static void queue_clear(struct cq_queue *q)
{
    free(q->bands);
    free(q->spec_json);
    free(q->name);
    free(q->parent_name);
    free(q->error);
    memset(q, 0, sizeof(*q));
}

/* A resource list (spec.guaranteed, ...) into values; listed gets a bit per id read. */
static int read_resources(const char *queue, const char *field, const json_t *list,
                          int64_t *values, uint64_t *listed)
{
    const char *key;
    const json_t *value;
    if (list != NULL && !json_is_object(list)) {
        cq_log(KC_LOG_ERROR, "CapacityQueue %s: spec.%s must be a map of resource to quantity",
               queue, field);
        return -EINVAL;
    }
    json_object_foreach((json_t *)list, key, value)
    {
        char text[64];
        if (json_is_string(value))
            snprintf(text, sizeof(text), "%s", json_string_value(value));
        else if (json_is_integer(value))
            snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(value));
        else
            text[0] = '\0';
        kc_resource id = kc_resource_id(key);
        int64_t amount;
        if (id < 0 || id >= KC_RESOURCE_MAX || !cq_parse_quantity(text, id, &amount)) {
            cq_log(KC_LOG_ERROR, "CapacityQueue %s: spec.%s.%s is not a quantity", queue,
                   field, key);
            return -EINVAL;
        }
        values[id] = amount;
        if (listed != NULL)
            *listed |= 1ull << id;
    }
    return 0;
}

static int queue_read(struct cq_queue *q, const char *name, const json_t *spec)
{
    for (int r = 0; r < KC_RESOURCE_MAX; r++)
        q->limit[r] = q->borrowing_limit[r] = q->lending_limit[r] = CQ_UNLIMITED;
    q->weight = 1;
    q->reclaimable = true;
    q->parent = -1;
    if ((q->name = strdup(name)) == NULL)
        return -ENOMEM;
    const char *parent = json_string_value(json_object_get(spec, "parent"));
    if (parent != NULL && parent[0] != '\0' && (q->parent_name = strdup(parent)) == NULL)
        return -ENOMEM;
    const json_t *weight = json_object_get(spec, "weight");
    if (json_is_integer(weight))
        q->weight = (int32_t)(json_integer_value(weight) > INT32_MAX ? INT32_MAX
                                                                     : json_integer_value(weight));
    else if (weight != NULL && !json_is_null(weight))
        q->weight = 0; /* the rule check names it */
    const json_t *reclaimable = json_object_get(spec, "reclaimable");
    if (json_is_boolean(reclaimable))
        q->reclaimable = json_is_true(reclaimable);
    int rc = read_resources(name, "guaranteed", json_object_get(spec, "guaranteed"),
                            q->guaranteed, &q->guaranteed_listed);
    if (rc == 0)
        rc = read_resources(name, "limit", json_object_get(spec, "limit"), q->limit, NULL);
    if (rc == 0)
        rc = read_resources(name, "borrowingLimit", json_object_get(spec, "borrowingLimit"),
                            q->borrowing_limit, NULL);
    if (rc == 0)
        rc = read_resources(name, "lendingLimit", json_object_get(spec, "lendingLimit"),
                            q->lending_limit, NULL);
    return rc;
}

int32_t cq_tree_find(const struct cq_tree *tree, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < tree->count; i++)
        if (strcmp(tree->queues[i].name, name) == 0)
            return (int32_t)i;
    return -1;
}

int cq_tree_put(struct cq_tree *tree, const char *name, const char *json)
{
    json_error_t error;
    json_t *root = json_loads(json != NULL ? json : "{}", 0, &error);
    if (!json_is_object(root)) {
        json_decref(root);
        cq_log(KC_LOG_ERROR, "CapacityQueue %s: not a JSON object: %s", name, error.text);
        return -EINVAL;
    }
    /* the scheduler's own status writes come back as updates: an unchanged spec changes
     * nothing (and costs no recount) */
    char *spec = json_dumps(json_object_get(root, "spec"), JSON_COMPACT | JSON_SORT_KEYS |
                                                               JSON_ENCODE_ANY);
    int32_t at = cq_tree_find(tree, name);
    if (at >= 0 && spec != NULL && tree->queues[at].spec_json != NULL &&
        strcmp(spec, tree->queues[at].spec_json) == 0) {
        free(spec);
        json_decref(root);
        return 1;
    }
    struct cq_queue q = {.spec_json = spec};
    int rc = queue_read(&q, name, json_object_get(root, "spec"));
    json_decref(root);
    if (rc != 0) {
        queue_clear(&q);
        return rc;
    }
    if (at < 0) {
        if (tree->count == tree->capacity) {
            uint32_t capacity = tree->capacity == 0 ? 8 : tree->capacity * 2;
            struct cq_queue *queues = realloc(tree->queues, capacity * sizeof(*queues));
            if (queues == NULL) {
                queue_clear(&q);
                return -ENOMEM;
            }
            tree->queues = queues;
            tree->capacity = capacity;
        }
        at = (int32_t)tree->count++;
    } else {
        q.bands = tree->queues[at].bands; /* the order of the pods waiting stays */
        q.band_count = tree->queues[at].band_count;
        tree->queues[at].bands = NULL;
        q.shown_used = tree->queues[at].shown_used;
        q.shown_borrowed = tree->queues[at].shown_borrowed;
        q.error = tree->queues[at].error; /* kept, so an unchanged error is not logged again */
        tree->queues[at].error = NULL;
        queue_clear(&tree->queues[at]);
    }
    tree->queues[at] = q;
    return 0;
}

void cq_tree_delete(struct cq_tree *tree, const char *name)
{
    int32_t at = cq_tree_find(tree, name);
    if (at < 0)
        return;
    queue_clear(&tree->queues[at]);
    tree->queues[at] = tree->queues[--tree->count];
}

void cq_tree_free(struct cq_tree *tree)
{
    for (uint32_t i = 0; i < tree->count; i++)
        queue_clear(&tree->queues[i]);
    free(tree->queues);
    memset(tree, 0, sizeof(*tree));
}

/* a + b for non-negative quantities, saturating at CQ_UNLIMITED instead of overflowing */
static int64_t add_capped(int64_t a, int64_t b)
{
    return a > CQ_UNLIMITED - b ? CQ_UNLIMITED : a + b;
}

/* ---- the rules ------------------------------------------------------------------------------- */

static void set_error(struct cq_queue *q, char **fresh, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static void set_error(struct cq_queue *q, char **fresh, const char *format, ...)
{
    if (*fresh != NULL)
        return; /* the first rule broken is the one reported */
    char text[CQ_ERROR_MAX];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof(text), format, ap);
    va_end(ap);
    *fresh = strdup(text);
    (void)q;
}

/* Walk up from i; true when the walk comes back to a queue it already passed. */
static bool in_cycle(const struct cq_tree *tree, uint32_t i, char *path, size_t size)
{
    int32_t at = (int32_t)i;
    size_t used = (size_t)snprintf(path, size, "%s", tree->queues[i].name);
    for (uint32_t steps = 0; steps <= tree->count; steps++) {
        at = tree->queues[at].parent;
        if (at < 0)
            return false;
        if (used < size)
            used += (size_t)snprintf(path + used, size - used, " -> %s", tree->queues[at].name);
        if (at == (int32_t)i)
            return true;
    }
    return false; /* a cycle above i, not through it: that queue reports it */
}

static void check_rules(const struct cq_tree *tree, uint32_t i, char **fresh)
{
    const struct cq_queue *q = &tree->queues[i];
    char path[CQ_ERROR_MAX / 2];
    if (q->parent_name != NULL && q->parent < 0)
        set_error(NULL, fresh, "queue %s: parent %s does not exist (spec.parent)", q->name,
                  q->parent_name);
    if (in_cycle(tree, i, path, sizeof(path)))
        set_error(NULL, fresh, "queue %s: cycle in the queue tree (%s); a queue cannot be its own "
                  "ancestor", q->name, path);
    uint32_t levels = 1;
    for (int32_t at = q->parent; at >= 0 && levels <= tree->count; at = tree->queues[at].parent)
        levels++;
    if (levels > CQ_DEPTH_MAX && levels <= tree->count) /* (longer: a cycle, named above) */
        set_error(NULL, fresh, "queue %s: %u levels from its root; a queue tree is at most %d "
                  "levels deep", q->name, levels, CQ_DEPTH_MAX);
    if (q->weight < 1)
        set_error(NULL, fresh, "queue %s: spec.weight must be an integer of at least 1", q->name);
    for (kc_resource r = 0; r < KC_RESOURCE_MAX; r++) {
        if (q->guaranteed[r] > q->limit[r])
            set_error(NULL, fresh,
                      "queue %s: guaranteed %s (%lld) is above its limit (%lld); guaranteed "
                      "must not exceed limit",
                      q->name, kc_resource_name(r), (long long)q->guaranteed[r],
                      (long long)q->limit[r]);
        if (q->lending_limit[r] != CQ_UNLIMITED && q->lending_limit[r] > q->guaranteed[r])
            set_error(NULL, fresh,
                      "queue %s: lendingLimit %s (%lld) is above its guaranteed (%lld); a queue "
                      "can lend only what it is guaranteed",
                      q->name, kc_resource_name(r), (long long)q->lending_limit[r],
                      (long long)q->guaranteed[r]);
        /* a parent that lists no guarantee of r is guaranteed none: children guaranteed some
         * would be promised what no ancestor holds */
        int64_t children = 0;
        for (uint32_t c = 0; c < tree->count; c++)
            if (tree->queues[c].parent == (int32_t)i && c != i)
                children = add_capped(children, tree->queues[c].guaranteed[r]);
        if (children > q->guaranteed[r])
            set_error(NULL, fresh,
                      "queue %s: its children's guaranteed %s (%lld together) is above its own "
                      "(%lld); children's guarantees must fit in the parent's",
                      q->name, kc_resource_name(r), (long long)children,
                      (long long)q->guaranteed[r]);
    }
}

uint32_t cq_tree_link(struct cq_tree *tree)
{
    for (uint32_t i = 0; i < tree->count; i++) {
        struct cq_queue *q = &tree->queues[i];
        q->parent = q->parent_name != NULL ? cq_tree_find(tree, q->parent_name) : -1;
        memset(q->usage, 0, sizeof(q->usage));
        memset(q->leaving, 0, sizeof(q->leaving));
        memset(q->claimed, 0, sizeof(q->claimed));
        q->admitted = q->pending = 0;
        for (uint32_t b = 0; b < q->band_count; b++)
            q->bands[b].pending = 0;
        q->status_dirty = true;
    }
    uint32_t invalid = 0;
    for (uint32_t i = 0; i < tree->count; i++) {
        struct cq_queue *q = &tree->queues[i];
        char *fresh = NULL;
        check_rules(tree, i, &fresh);
        if (fresh != NULL && (q->error == NULL || strcmp(q->error, fresh) != 0))
            cq_log(KC_LOG_ERROR, "invalid CapacityQueue: %s", fresh);
        if (fresh == NULL && q->error != NULL)
            cq_log(KC_LOG_INFO, "CapacityQueue %s is valid again", q->name);
        free(q->error);
        q->error = fresh;
        invalid += fresh != NULL;
    }
    return invalid;
}

/* ---- usage and admission --------------------------------------------------------------------- */

void cq_tree_account(struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
                     int sign, int pods)
{
    for (uint32_t steps = 0; index >= 0; index = cq_tree_up(tree, index, &steps)) {
        struct cq_queue *q = &tree->queues[index];
        for (uint64_t m = mask; m != 0; m &= m - 1) {
            int r = __builtin_ctzll(m);
            /* saturating: a pod asking an absurd quantity must not wrap a queue's usage */
            q->usage[r] = sign > 0 ? add_capped(q->usage[r], request[r])
                                   : q->usage[r] - (request[r] < q->usage[r] ? request[r]
                                                                             : q->usage[r]);
        }
        q->admitted += (uint32_t)(sign * pods);
        q->status_dirty = true;
    }
}

void cq_tree_hold(struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
                  int sign, enum cq_hold which)
{
    for (uint32_t steps = 0; index >= 0; index = cq_tree_up(tree, index, &steps)) {
        struct cq_queue *q = &tree->queues[index];
        int64_t *total = which == CQ_LEAVING ? q->leaving : q->claimed;
        for (uint64_t m = mask; m != 0; m &= m - 1) {
            int r = __builtin_ctzll(m);
            total[r] = sign > 0 ? add_capped(total[r], request[r])
                                : total[r] - (request[r] < total[r] ? request[r] : total[r]);
        }
    }
}

int64_t cq_effective_usage(const struct cq_queue *q, int r)
{
    int64_t staying = q->usage[r] > q->leaving[r] ? q->usage[r] - q->leaving[r] : 0;
    return add_capped(staying, q->claimed[r]);
}

uint64_t cq_borrowing(const struct cq_queue *q, uint64_t mask)
{
    uint64_t over = 0;
    for (uint64_t m = mask; m != 0; m &= m - 1) {
        int r = __builtin_ctzll(m);
        if (q->usage[r] > q->guaranteed[r])
            over |= 1ull << r;
    }
    return over;
}

/* What a queue keeps for itself of resource r, whoever asks: what it uses (less what its
 * reclaim victims are giving back, plus what its nominated preemptors are about to take), and
 * the part of its guarantee it does not lend (guaranteed - lendingLimit). */
static int64_t reserved(const struct cq_queue *q, int r)
{
    int64_t kept = q->lending_limit[r] == CQ_UNLIMITED ? 0 : q->guaranteed[r] - q->lending_limit[r];
    int64_t used = cq_effective_usage(q, r);
    return used > kept ? used : kept;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The most of resource r queue index may hold given its parent's pool: its limit, its
 * guarantee plus borrowingLimit, and above its guarantee only what the other children of the
 * pool do not keep. */
static int64_t queue_pool(const struct cq_tree *tree, int32_t index, int64_t parent_pool, int r)
{
    const struct cq_queue *q = &tree->queues[index];
    int64_t others = 0;
    for (uint32_t i = 0; i < tree->count; i++)
        if ((int32_t)i != index && tree->queues[i].parent == q->parent)
            others = add_capped(others, reserved(&tree->queues[i], r));
    int64_t lendable = parent_pool - others;
    int64_t pool = lendable > q->guaranteed[r] ? lendable : q->guaranteed[r];
    pool = min64(pool, q->limit[r]);
    if (q->borrowing_limit[r] != CQ_UNLIMITED)
        pool = min64(pool, add_capped(q->guaranteed[r], q->borrowing_limit[r]));
    return pool;
}

static const char *unit_of(int r)
{
    return r == KC_RESOURCE_CPU ? "m" : "";
}

/* Explain why queue q's pool for r is pool (the first rule that bounds it). */
static void explain(const struct cq_tree *tree, const struct cq_queue *q, int r, int64_t want,
                    int64_t pool, char *why, size_t size)
{
    const char *name = kc_resource_name(r);
    if (pool == q->limit[r])
        snprintf(why, size, "queue %s: %s limit %lld%s exceeded (%lld%s if admitted)", q->name,
                 name, (long long)q->limit[r], unit_of(r), (long long)want, unit_of(r));
    else if (q->borrowing_limit[r] != CQ_UNLIMITED &&
             pool == add_capped(q->guaranteed[r], q->borrowing_limit[r]))
        snprintf(why, size,
                 "queue %s: %s borrowingLimit %lld%s exceeded (guaranteed %lld%s, %lld%s if "
                 "admitted)",
                 q->name, name, (long long)q->borrowing_limit[r], unit_of(r),
                 (long long)q->guaranteed[r], unit_of(r), (long long)want, unit_of(r));
    else
        snprintf(why, size,
                 "queue %s: %s above its guarantee (%lld%s) can only be borrowed from what other "
                 "queues%s%s leave unused: %lld%s available, %lld%s wanted",
                 q->name, name, (long long)q->guaranteed[r], unit_of(r),
                 q->parent >= 0 ? " under " : "",
                 q->parent >= 0 ? tree->queues[q->parent].name : "",
                 (long long)pool, unit_of(r), (long long)want, unit_of(r));
}

bool cq_admit(const struct cq_tree *tree, int32_t index, const int64_t *request, uint64_t mask,
              char *why, size_t why_size)
{
    return cq_admit_at(tree, index, request, mask, why, why_size, NULL);
}

bool cq_admit_at(const struct cq_tree *tree, int32_t index, const int64_t *request,
                 uint64_t mask, char *why, size_t why_size, int32_t *refusing)
{
    int32_t path[CQ_DEPTH_MAX];
    uint32_t depth = 0, steps = 0;
    for (int32_t at = index; at >= 0 && depth < CQ_DEPTH_MAX; at = cq_tree_up(tree, at, &steps))
        path[depth++] = at;
    for (uint64_t m = mask; m != 0; m &= m - 1) {
        int r = __builtin_ctzll(m);
        int64_t pool = tree->cluster[r] > 0 ? tree->cluster[r] : CQ_UNLIMITED;
        for (uint32_t level = depth; level-- > 0;) {
            const struct cq_queue *q = &tree->queues[path[level]];
            pool = queue_pool(tree, path[level], pool, r);
            int64_t want = add_capped(q->usage[r], request[r]);
            if (want > pool) {
                explain(tree, q, r, want, pool, why, why_size);
                if (refusing != NULL)
                    *refusing = path[level];
                return false;
            }
        }
    }
    return true;
}

double cq_dominant_share(const struct cq_tree *tree, const int64_t *usage, int32_t weight)
{
    double share = 0;
    for (int r = 0; r < KC_RESOURCE_MAX; r++)
        if (r != KC_RESOURCE_PODS && tree->cluster[r] > 0 && usage[r] > 0) {
            double s = (double)usage[r] / (double)tree->cluster[r];
            share = s > share ? s : share;
        }
    return share / (weight > 0 ? weight : 1);
}
