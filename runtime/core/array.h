/* Growing arrays: one rule (double, from 16) for every dynamic array of the runtime. */
#ifndef KC_CORE_ARRAY_H
#define KC_CORE_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for `needed` items of `size` bytes in items (capacity *capacity). Returns the array,
 * possibly moved, with *capacity updated; or NULL, leaving items and *capacity as they were. */
static inline void *array_grow(void *items, uint32_t *capacity, uint32_t needed, size_t size)
{
    if (needed <= *capacity && items != NULL)
        return items;
    uint32_t grown = *capacity < 16 ? 16 : *capacity;
    while (grown < needed)
        grown *= 2;
    void *moved = realloc(items, (size_t)grown * size);
    if (moved != NULL)
        *capacity = grown;
    return moved;
}

#endif
