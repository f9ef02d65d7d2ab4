/* A string-keyed open-addressing table for numaalign's nodes and pods: slots keep the
 * hash, so a lookup touches an entry only when the hashes match. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numaalign.h"

static uint32_t hash_key(const char *key)
{
    uint32_t h = 2166136261u;
    while (*key != '\0')
        h = (h ^ (uint8_t)*key++) * 16777619u;
    return h;
}

static const char *entry_key(void *entry)
{
    return *(char **)entry;
}

static struct table_slot *table_slot(const struct table *t, const char *key, uint32_t hash)
{
    uint32_t mask = t->capacity - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        struct table_slot *slot = &t->slots[i];
        if (slot->entry == NULL ||
            (slot->hash == hash && strcmp(entry_key(slot->entry), key) == 0))
            return slot;
    }
}

void *table_get(const struct table *t, const char *key)
{
    return t->capacity == 0 || key == NULL ? NULL : table_slot(t, key, hash_key(key))->entry;
}

int table_put(struct table *t, void *entry)
{
    if ((t->count + 1) * 2 > t->capacity) {
        uint32_t capacity = t->capacity ? t->capacity * 2 : 64;
        struct table bigger = {calloc(capacity, sizeof(struct table_slot)), capacity, t->count};
        if (bigger.slots == NULL)
            return -ENOMEM;
        for (uint32_t i = 0; i < t->capacity; i++)
            if (t->slots[i].entry != NULL)
                *table_slot(&bigger, entry_key(t->slots[i].entry), t->slots[i].hash) =
                    t->slots[i];
        free(t->slots);
        *t = bigger;
    }
    uint32_t hash = hash_key(entry_key(entry));
    struct table_slot *slot = table_slot(t, entry_key(entry), hash);
    t->count += slot->entry == NULL;
    *slot = (struct table_slot){hash, entry};
    return 0;
}

/* Removal with backward-shift, so lookups never need tombstones. */
void table_remove(struct table *t, const char *key)
{
    if (t->capacity == 0)
        return;
    uint32_t mask = t->capacity - 1;
    struct table_slot *slot = table_slot(t, key, hash_key(key));
    if (slot->entry == NULL)
        return;
    uint32_t hole = (uint32_t)(slot - t->slots);
    t->slots[hole].entry = NULL;
    t->count--;
    for (uint32_t i = (hole + 1) & mask; t->slots[i].entry != NULL; i = (i + 1) & mask) {
        struct table_slot moving = t->slots[i];
        t->slots[i].entry = NULL;
        *table_slot(t, entry_key(moving.entry), moving.hash) = moving;
    }
}
