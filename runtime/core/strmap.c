/* Open-addressing string map. Deleted slots become tombstones; the table is rebuilt when
 * live entries plus tombstones pass 3/4 of the capacity. */
#include "strmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOMBSTONE ((const char *)&tombstone_marker)
static const char tombstone_marker;

static uint64_t hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static struct strmap_entry *find_slot(const struct strmap *map, const char *key, uint64_t hash)
{
    uint32_t mask = map->capacity - 1;
    for (uint32_t i = (uint32_t)hash & mask;; i = (i + 1) & mask) {
        struct strmap_entry *e = &map->entries[i];
        if (e->key == NULL)
            return e;
        if (e->key != TOMBSTONE && e->hash == hash && strcmp(e->key, key) == 0)
            return e;
    }
}

void *strmap_get(const struct strmap *map, const char *key)
{
    if (map->count == 0)
        return NULL;
    struct strmap_entry *e = find_slot(map, key, hash_string(key));
    return e->key != NULL ? e->value : NULL;
}

static int grow(struct strmap *map)
{
    uint32_t capacity = map->capacity == 0 ? 16 : map->capacity;
    while ((map->count + 1) * 2 > capacity)
        capacity *= 2;
    struct strmap_entry *entries = calloc(capacity, sizeof(*entries));
    if (entries == NULL)
        return -ENOMEM;
    struct strmap old = *map;
    map->entries = entries;
    map->capacity = capacity;
    map->tombstones = 0;
    for (uint32_t i = 0; i < old.capacity; i++) {
        struct strmap_entry *e = &old.entries[i];
        if (e->key != NULL && e->key != TOMBSTONE)
            *find_slot(map, e->key, e->hash) = *e;
    }
    free(old.entries);
    return 0;
}

int strmap_put(struct strmap *map, const char *key, void *value)
{
    if (map->count > 0) {
        /* replacing never grows the table, so it cannot fail */
        uint64_t hash = hash_string(key);
        struct strmap_entry *e = find_slot(map, key, hash);
        if (e->key != NULL) {
            e->key = key;
            e->value = value;
            return 0;
        }
    }
    if ((map->count + map->tombstones + 1) * 4 > map->capacity * 3) {
        int rc = grow(map);
        if (rc < 0)
            return rc;
    }
    uint64_t hash = hash_string(key);
    struct strmap_entry *e = find_slot(map, key, hash);
    if (e->key == NULL)
        map->count++;
    e->key = key;
    e->value = value;
    e->hash = hash;
    return 0;
}

void *strmap_remove(struct strmap *map, const char *key)
{
    if (map->count == 0)
        return NULL;
    struct strmap_entry *e = find_slot(map, key, hash_string(key));
    if (e->key == NULL)
        return NULL;
    void *value = e->value;
    e->key = TOMBSTONE;
    e->value = NULL;
    map->count--;
    map->tombstones++;
    return value;
}

void strmap_free(struct strmap *map)
{
    free(map->entries);
    memset(map, 0, sizeof(*map));
}
