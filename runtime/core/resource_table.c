/* Interned resource names. Names are appended under a lock and never change afterwards, so
 * readers of an id they were given need no lock. */
#include "resource_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[KC_RESOURCE_MAX] = {"cpu", "memory", "pods", "ephemeral-storage"};
static _Atomic uint32_t name_count = 4;

static kc_resource find(const char *name, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return (kc_resource)i;
    return -1;
}

kc_resource resource_lookup(const char *name)
{
    if (name == NULL)
        return -1;
    return find(name, atomic_load_explicit(&name_count, memory_order_acquire));
}

kc_resource resource_intern(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return -1;
    kc_resource id = resource_lookup(name);
    if (id >= 0)
        return id;
    pthread_mutex_lock(&table_lock);
    uint32_t count = atomic_load_explicit(&name_count, memory_order_relaxed);
    id = find(name, count);
    if (id < 0 && count < KC_RESOURCE_MAX) {
        char *copy = strdup(name);
        if (copy != NULL) {
            names[count] = copy;
            atomic_store_explicit(&name_count, count + 1, memory_order_release);
            id = (kc_resource)count;
        }
    }
    pthread_mutex_unlock(&table_lock);
    return id;
}

const char *resource_name(kc_resource id)
{
    if (id < 0 || (uint32_t)id >= atomic_load_explicit(&name_count, memory_order_acquire))
        return NULL;
    return names[id];
}

uint32_t resource_count(void)
{
    return atomic_load_explicit(&name_count, memory_order_acquire);
}
