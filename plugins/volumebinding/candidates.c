/* The volumes of a class compiled for matching (candidates.h). */
#include "candidates.h"

#include <stdlib.h>
#include <string.h>

static void class_clear(struct class_candidates *cc)
{
    for (uint32_t i = 0; i < cc->count; i++) {
        free(cc->items[i].name);
        json_decref(cc->items[i].volume);
    }
    free(cc->items);
    cc->items = NULL;
    cc->count = 0;
}

static const char *ref_field(const json_t *ref, const char *key)
{
    const char *s = json_string_value(json_object_get(ref, key));
    return s != NULL && s[0] != '\0' ? s : NULL;
}

/* One In expression on one key, alone in the one term: a label lookup decides. */
static void compile_affinity(struct candidate *c)
{
    const json_t *required = json_object_get(
        json_object_get(json_object_get(c->volume, "spec"), "nodeAffinity"), "required");
    c->has_affinity = required != NULL && !json_is_null(required);
    if (!c->has_affinity)
        return;
    const json_t *terms = json_object_get(required, "nodeSelectorTerms");
    const json_t *term = json_array_size(terms) == 1 ? json_array_get(terms, 0) : NULL;
    const json_t *expressions = json_object_get(term, "matchExpressions");
    const json_t *e = json_array_size(expressions) == 1 ? json_array_get(expressions, 0) : NULL;
    const char *op = json_string_value(json_object_get(e, "operator"));
    if (e == NULL || json_array_size(json_object_get(term, "matchFields")) > 0 || op == NULL ||
        strcmp(op, "In") != 0)
        return;
    c->fast_key = json_string_value(json_object_get(e, "key"));
    c->fast_values = json_object_get(e, "values");
}

static int compile(struct candidate *c, const char *name, json_t *volume)
{
    memset(c, 0, sizeof(*c));
    if ((c->name = strdup(name)) == NULL)
        return -12;
    c->volume = json_incref(volume);
    c->capacity = vo_volume_capacity(volume);
    c->modes = vo_access_modes(volume);
    const char *mode = vo_string(volume, "spec.volumeMode");
    c->filesystem = mode == NULL || strcmp(mode, "Filesystem") == 0;
    const char *phase = vo_string(volume, "status.phase");
    c->available = phase != NULL && strcmp(phase, "Available") == 0;
    c->deleting = vo_deleting(volume);
    const json_t *ref = json_object_get(json_object_get(volume, "spec"), "claimRef");
    if (json_is_object(ref)) {
        c->ref_namespace = ref_field(ref, "namespace");
        c->ref_name = ref_field(ref, "name");
        c->ref_uid = ref_field(ref, "uid");
    }
    compile_affinity(c);
    return 0;
}

static int by_capacity(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->capacity != y->capacity)
        return x->capacity < y->capacity ? -1 : 1;
    return strcmp(x->name, y->name); /* a fixed order among equals */
}

static int rebuild(struct class_candidates *cc, const struct volume_objects *vo)
{
    class_clear(cc);
    const json_t *volumes = vo_volumes_of_class(vo, cc->class_name);
    size_t size = json_object_size(volumes);
    if (size == 0)
        return 0;
    if ((cc->items = calloc(size, sizeof(*cc->items))) == NULL)
        return -12;
    const char *name;
    json_t *volume;
    json_object_foreach((json_t *)volumes, name, volume)
    {
        if (compile(&cc->items[cc->count], name, volume) < 0)
            return -12;
        cc->count++;
    }
    qsort(cc->items, cc->count, sizeof(*cc->items), by_capacity);
    return 0;
}

const struct class_candidates *candidates_of(struct candidate_cache *cache,
                                             const struct volume_objects *vo,
                                             const char *class_name)
{
    struct class_candidates *cc = NULL;
    for (uint32_t i = 0; i < cache->count && cc == NULL; i++)
        if (strcmp(cache->classes[i]->class_name, class_name) == 0)
            cc = cache->classes[i];
    if (cc == NULL) {
        struct class_candidates **grown =
            realloc(cache->classes, (cache->count + 1) * sizeof(*grown));
        if (grown == NULL)
            return NULL;
        cache->classes = grown;
        if ((cc = calloc(1, sizeof(*cc))) == NULL || (cc->class_name = strdup(class_name)) == NULL) {
            free(cc);
            return NULL;
        }
        cc->generation = cache->generation + 1; /* never built */
        cache->classes[cache->count++] = cc;
    }
    if (cc->generation != cache->generation) {
        if (rebuild(cc, vo) < 0) {
            class_clear(cc);
            return NULL;
        }
        cc->generation = cache->generation;
    }
    return cc;
}

bool candidate_fits(const struct candidate *c, const kc_node *node, struct label_memo *memo)
{
    if (!c->has_affinity)
        return true;
    if (c->fast_key == NULL)
        return vo_volume_fits_node(c->volume, node);
    if (memo->key == NULL || strcmp(memo->key, c->fast_key) != 0) {
        memo->key = c->fast_key;
        memo->value = kc_node_label(node, c->fast_key);
    }
    return memo->value != NULL && vo_value_in(c->fast_values, memo->value);
}

void candidate_cache_free(struct candidate_cache *cache)
{
    for (uint32_t i = 0; i < cache->count; i++) {
        class_clear(cache->classes[i]);
        free(cache->classes[i]->class_name);
        free(cache->classes[i]);
    }
    free(cache->classes);
    memset(cache, 0, sizeof(*cache));
}
