/* A string-keyed hash map (open addressing, linear probing) for names and uids. */
#ifndef KC_CORE_STRMAP_H
#define KC_CORE_STRMAP_H

#include <stdint.h>

struct strmap_entry {
    const char *key; /* borrowed: the value's owner keeps it alive */
    void *value;
    uint64_t hash;
};

struct strmap {
    struct strmap_entry *entries;
    uint32_t capacity; /* power of two, or 0 */
    uint32_t count;
    uint32_t tombstones;
};

/* Keys are borrowed: they must live as long as the entry. */
void *strmap_get(const struct strmap *map, const char *key);
/* Insert or replace. 0 or -ENOMEM; replacing an existing key never fails. */
int strmap_put(struct strmap *map, const char *key, void *value);
/* Remove; returns the removed value or NULL. */
void *strmap_remove(struct strmap *map, const char *key);
void strmap_free(struct strmap *map);

#endif
