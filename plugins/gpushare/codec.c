/* The decision annotations on the Binding, and reading them back from bound pods after a
 * restart: HAMi's hami.io/vgpu-devices-to-allocate (what HAMi's device plugin reads on the
 * node to isolate each container) and kcycle's own kcycle.io/gpu-assignment (JSON, with card
 * indexes and MIG placements, which HAMi's format has no room for). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpushare.h"

#define EINVAL_CODE (-22)

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
append(char *out, size_t size, size_t *used, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int written = vsnprintf(out + *used, size - *used, format, ap);
    va_end(ap);
    if (written < 0 || (size_t)written >= size - *used)
        return -1;
    *used += (size_t)written;
    return 0;
}

int hami_encode(const struct gpu_node *node, const struct pod_request *request,
                const struct placement *placement, uint32_t app_containers, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (uint32_t index = 0; index < app_containers; index++) {
        for (uint32_t i = 0; i < placement->count; i++) {
            const struct assignment *a = &placement->items[i];
            if (request->containers[a->container].index != index)
                continue;
            /* the device type is HAMi's vendor word, as its scheduler writes it */
            if (append(out, size, &used, "%s,NVIDIA,%lld,%d:", node->cards[a->card].uuid,
                       (long long)a->memory_mib, a->cores) != 0)
                return -1;
        }
        if (append(out, size, &used, ";") != 0)
            return -1;
    }
    return (int)used;
}

int hami_decode(const char *value, struct charge *out)
{
    out->count = 0;
    const char *cursor = value;
    while (*cursor != '\0') {
        size_t length = strcspn(cursor, ":;");
        if (length > 0) {
            char device[GPU_UUID_LEN + 64];
            if (length >= sizeof(device) || out->count == GPU_MAX_ASSIGNMENTS)
                return EINVAL_CODE;
            memcpy(device, cursor, length);
            device[length] = '\0';
            char *type = strchr(device, ',');
            char *memory = type != NULL ? strchr(type + 1, ',') : NULL;
            char *cores = memory != NULL ? strchr(memory + 1, ',') : NULL;
            if (cores == NULL || strchr(cores + 1, ',') != NULL)
                return EINVAL_CODE;
            *type = '\0';
            char *end_memory, *end_cores;
            long long mib = strtoll(memory + 1, &end_memory, 10);
            long long percent = strtoll(cores + 1, &end_cores, 10);
            if (*end_memory != ',' || *end_cores != '\0' || mib < 0 || mib > GPU_MAX_MEMORY_MIB ||
                percent < 0 || percent > 100 ||
                strlen(device) >= GPU_UUID_LEN || device[0] == '\0')
                return EINVAL_CODE;
            struct charge_item *item = &out->items[out->count++];
            memset(item, 0, sizeof(*item));
            snprintf(item->uuid, sizeof(item->uuid), "%s", device);
            item->mig_start = -1;
            item->memory_mib = mib;
            item->cores = (int32_t)percent;
            item->exclusive = percent >= 100;
        }
        cursor += length;
        if (*cursor != '\0')
            cursor++;
    }
    return 0;
}

static json_t *card_json(const struct gpu_node *node, const struct pod_request *request,
                         const struct assignment *a)
{
    const struct card *card = &node->cards[a->card];
    json_t *entry = json_pack("{s:s, s:i, s:I, s:i}", "uuid", card->uuid, "index", card->index,
                              "memory", (json_int_t)a->memory_mib, "cores", a->cores);
    if (entry != NULL && a->mig_start >= 0) {
        const char *profile_name = request->containers[a->container].mig_profile;
        const struct mig_profile *profile = mig_profile_find(card->mig, profile_name);
        json_object_set_new(entry, "mig", json_string(profile_name));
        json_object_set_new(entry, "migStart", json_integer(a->mig_start));
        json_object_set_new(entry, "migSlots", json_integer(profile != NULL ? profile->slots : 0));
    }
    return entry;
}

int assignment_encode(const struct gpu_node *node, const struct pod_request *request,
                      const struct placement *placement, char *out, size_t size)
{
    json_t *containers = json_array();
    for (uint32_t c = 0; c < request->count; c++) {
        json_t *cards = json_array();
        for (uint32_t i = 0; i < placement->count; i++) {
            if (placement->items[i].container == c)
                json_array_append_new(cards, card_json(node, request, &placement->items[i]));
        }
        json_array_append_new(containers, json_pack("{s:s, s:o}", "name",
                                                    request->containers[c].name, "cards", cards));
    }
    json_t *root = json_pack("{s:s, s:o}", "node", node->name, "containers", containers);
    if (root != NULL && placement->zone >= 0)
        json_object_set_new(root, "numaZone", json_integer(placement->zone));
    char *text = root != NULL ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (text == NULL || strlen(text) >= size) {
        free(text);
        return -1;
    }
    int length = (int)strlen(text);
    memcpy(out, text, (size_t)length + 1);
    free(text);
    return length;
}

/* An integer member within [least, most]; anything else (absent, a string, out of range)
 * is refused. */
static bool integer_in(const json_t *object, const char *key, json_int_t least, json_int_t most,
                       json_int_t *value)
{
    const json_t *member = json_object_get(object, key);
    if (!json_is_integer(member))
        return false;
    *value = json_integer_value(member);
    return *value >= least && *value <= most;
}

/* One card of the annotation. Anyone who may create a pod with spec.nodeName may write this
 * annotation, so only values a placement can produce are taken: a negative memory or core
 * count would lower the card's usage, and an out-of-range MIG start or size has no slices. */
static int card_item(const json_t *card, const char *uuid, struct charge_item *item)
{
    memset(item, 0, sizeof(*item));
    snprintf(item->uuid, sizeof(item->uuid), "%s", uuid);
    json_int_t memory, cores, start, slots;
    if (!integer_in(card, "memory", 0, GPU_MAX_MEMORY_MIB, &memory) ||
        !integer_in(card, "cores", 0, 100, &cores))
        return EINVAL_CODE;
    item->memory_mib = memory;
    item->cores = (int32_t)cores;
    item->exclusive = cores >= 100;
    item->mig_start = -1;
    if (json_object_get(card, "migStart") == NULL)
        return 0;
    if (!integer_in(card, "migStart", 0, MIG_SLOTS - 1, &start) ||
        !integer_in(card, "migSlots", 1, MIG_SLOTS, &slots) || start + slots > MIG_SLOTS)
        return EINVAL_CODE;
    item->mig_start = (int8_t)start;
    item->mig_slots = (uint8_t)slots;
    item->exclusive = false;
    return 0;
}

int assignment_decode(const char *json, struct charge *out)
{
    out->count = 0;
    json_t *root = json_loads(json, 0, NULL);
    const json_t *containers = json_object_get(root, "containers");
    if (!json_is_array(containers)) {
        json_decref(root);
        return EINVAL_CODE;
    }
    size_t c, i;
    const json_t *container, *card;
    int rc = 0;
    json_array_foreach(containers, c, container)
    {
        json_array_foreach(json_object_get(container, "cards"), i, card)
        {
            const char *uuid = json_string_value(json_object_get(card, "uuid"));
            if (uuid == NULL || strlen(uuid) >= GPU_UUID_LEN || out->count == GPU_MAX_ASSIGNMENTS) {
                rc = EINVAL_CODE;
                break;
            }
            struct charge_item *item = &out->items[out->count++];
            if (card_item(card, uuid, item) != 0) {
                rc = EINVAL_CODE;
                break;
            }
        }
        if (rc != 0)
            break;
    }
    json_decref(root);
    return rc;
}
