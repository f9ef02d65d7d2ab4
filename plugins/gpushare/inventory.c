/* A node's cards, read from what the cluster already publishes: HAMi's device-plugin
 * registration annotation (text or JSON), kcycle's own kcycle.io/gpus annotation, the
 * NodeResourceTopology zones, and NVIDIA GPU feature discovery labels. Each parser fills a
 * gpu_node without usage; the ledger recounts usage from its charges. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gpushare.h"

#define EINVAL_CODE (-22)
#define DEFAULT_SPLIT 10 /* HAMi's deviceSplitCount default */

static void copy_text(char *out, size_t size, const char *text, size_t length)
{
    if (length >= size)
        length = size - 1;
    memcpy(out, text, length);
    out[length] = '\0';
}

static void card_defaults(struct card *card, int32_t index)
{
    memset(card, 0, sizeof(*card));
    card->index = index;
    card->numa = -1;
    card->healthy = true;
    card->cores = 100;
    card->split = DEFAULT_SPLIT;
}

/* A MIG card's split is the seven instances the largest family allows. */
static void card_set_mode(struct card *card, enum card_mode mode)
{
    card->mode = mode;
    card->mig = mig_family_for(card->model, (uint32_t)card->memory_mib);
    if (mode == CARD_MIG)
        card->split = 7;
    if (mode == CARD_WHOLE)
        card->split = 1;
}

static bool parse_long(const char *text, size_t length, long long *out)
{
    char buffer[32];
    if (length == 0 || length >= sizeof(buffer))
        return false;
    memcpy(buffer, text, length);
    buffer[length] = '\0';
    char *end;
    *out = strtoll(buffer, &end, 10);
    return *end == '\0';
}

/* HAMi text: "UUID,count,devmem,devcore,type,numa,health[,index,mode]:" per device. */
static int hami_text_device(const char *text, size_t length, struct card *card, int32_t position,
                            char *why, size_t why_size)
{
    const char *fields[10];
    size_t sizes[10];
    uint32_t count = 0;
    const char *cursor = text, *end = text + length;
    for (;;) {
        const char *comma = memchr(cursor, ',', (size_t)(end - cursor));
        const char *stop = comma != NULL ? comma : end;
        if (count < 10) {
            fields[count] = cursor;
            sizes[count] = (size_t)(stop - cursor);
        }
        count++;
        if (comma == NULL)
            break;
        cursor = comma + 1;
    }
    long long split, memory, cores, numa, index = position;
    if (count != 7 && count != 9) {
        snprintf(why, why_size, "device %d has %u fields; expected 7 or 9", position, count);
        return EINVAL_CODE;
    }
    if (!parse_long(fields[1], sizes[1], &split) || !parse_long(fields[2], sizes[2], &memory) ||
        !parse_long(fields[3], sizes[3], &cores) || !parse_long(fields[5], sizes[5], &numa) ||
        (count == 9 && !parse_long(fields[7], sizes[7], &index)) || split < 0 || memory < 0 ||
        cores < 0) {
        snprintf(why, why_size,
                 "device %d: count, memory, cores, numa and index must be "
                 "non-negative integers",
                 position);
        return EINVAL_CODE;
    }
    card_defaults(card, (int32_t)index);
    copy_text(card->uuid, sizeof(card->uuid), fields[0], sizes[0]);
    copy_text(card->model, sizeof(card->model), fields[4], sizes[4]);
    card->split = (int32_t)split;
    card->memory_mib = memory;
    card->cores = (int32_t)cores;
    card->numa = (int32_t)numa;
    card->healthy = sizes[6] == 4 && strncmp(fields[6], "true", 4) == 0;
    enum card_mode mode = CARD_SHARED;
    if (count == 9 && sizes[8] == 3 && strncmp(fields[8], "mig", 3) == 0)
        mode = CARD_MIG;
    card_set_mode(card, mode);
    if (mode != CARD_MIG)
        card->split = (int32_t)split;
    return 0;
}

static int hami_json(const char *value, struct gpu_node *out, char *why, size_t why_size)
{
    json_error_t error;
    json_t *root = json_loads(value, 0, &error);
    if (!json_is_array(root)) {
        snprintf(why, why_size, "not a JSON list of devices (%s)", root == NULL ? error.text : "");
        json_decref(root);
        return EINVAL_CODE;
    }
    size_t i;
    json_t *device;
    json_array_foreach(root, i, device)
    {
        if (out->card_count == GPU_MAX_CARDS)
            break;
        struct card *card = &out->cards[out->card_count];
        card_defaults(card, (int32_t)i);
        const char *id = json_string_value(json_object_get(device, "id"));
        const char *type = json_string_value(json_object_get(device, "type"));
        const char *mode = json_string_value(json_object_get(device, "mode"));
        if (id == NULL) {
            snprintf(why, why_size, "device %zu has no id", i);
            json_decref(root);
            return EINVAL_CODE;
        }
        copy_text(card->uuid, sizeof(card->uuid), id, strlen(id));
        copy_text(card->model, sizeof(card->model), type != NULL ? type : "",
                  type != NULL ? strlen(type) : 0);
        card->index = (int32_t)json_integer_value(json_object_get(device, "index"));
        card->memory_mib = json_integer_value(json_object_get(device, "devmem"));
        card->cores = (int32_t)json_integer_value(json_object_get(device, "devcore"));
        card->numa = (int32_t)json_integer_value(json_object_get(device, "numa"));
        card->healthy = json_is_true(json_object_get(device, "health"));
        int32_t split = (int32_t)json_integer_value(json_object_get(device, "count"));
        card_set_mode(card, mode != NULL && strcmp(mode, "mig") == 0 ? CARD_MIG : CARD_SHARED);
        if (card->mode != CARD_MIG)
            card->split = split;
        out->card_count++;
    }
    json_decref(root);
    return 0;
}

int inventory_from_hami(const char *value, struct gpu_node *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof(*out));
    if (value == NULL || value[0] == '\0')
        return 0;
    out->source = SOURCE_HAMI;
    const char *start = value;
    while (isspace((unsigned char)*start))
        start++;
    if (*start == '[')
        return hami_json(start, out, why, why_size);
    const char *cursor = start;
    int32_t position = 0;
    while (*cursor != '\0') {
        size_t length = strcspn(cursor, ":");
        if (length > 0) {
            if (out->card_count == GPU_MAX_CARDS) {
                snprintf(why, why_size, "more than %d devices", GPU_MAX_CARDS);
                return EINVAL_CODE;
            }
            if (hami_text_device(cursor, length, &out->cards[out->card_count], position, why,
                                 why_size) != 0)
                return EINVAL_CODE;
            out->card_count++;
            position++;
        }
        cursor += length;
        if (*cursor == ':')
            cursor++;
    }
    return 0;
}

/* MiB from an integer, or a string quantity such as "80Gi" or "81920Mi". */
static bool memory_mib_of(const json_t *value, int64_t *out)
{
    if (json_is_integer(value)) {
        *out = json_integer_value(value);
        return *out >= 0;
    }
    const char *text = json_string_value(value);
    if (text == NULL)
        return false;
    char *end;
    long long number = strtoll(text, &end, 10);
    if (end == text || number < 0)
        return false;
    if (strcmp(end, "Gi") == 0)
        *out = number * 1024;
    else if (strcmp(end, "Mi") == 0 || *end == '\0')
        *out = number;
    else if (strcmp(end, "Ti") == 0)
        *out = number * 1024 * 1024;
    else
        return false;
    return true;
}

static int kcycle_card(const json_t *entry, size_t position, const char *node_name,
                       struct gpu_node *out, char *why, size_t why_size)
{
    static const char *const known[] = {"index",   "uuid", "model", "memory",    "cores", "numa",
                                        "healthy", "mode", "split", "migFamily", "count", NULL};
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)entry, key, value)
    {
        bool found = false;
        for (size_t k = 0; known[k] != NULL && !found; k++)
            found = strcmp(known[k], key) == 0;
        if (!found) {
            snprintf(why, why_size, "card %zu: unknown key \"%s\"", position, key);
            return EINVAL_CODE;
        }
    }
    int64_t memory = 0;
    if (!memory_mib_of(json_object_get(entry, "memory"), &memory) || memory == 0) {
        snprintf(why, why_size,
                 "card %zu: memory must be MiB (an integer) or a quantity "
                 "such as \"80Gi\"",
                 position);
        return EINVAL_CODE;
    }
    const char *mode_text = json_string_value(json_object_get(entry, "mode"));
    enum card_mode mode = CARD_SHARED;
    if (mode_text != NULL && strcmp(mode_text, "whole") == 0)
        mode = CARD_WHOLE;
    else if (mode_text != NULL && strcmp(mode_text, "mig") == 0)
        mode = CARD_MIG;
    else if (mode_text != NULL && strcmp(mode_text, "shared") != 0) {
        snprintf(why, why_size, "card %zu: mode \"%s\"; expected shared, whole or mig", position,
                 mode_text);
        return EINVAL_CODE;
    }
    const json_t *count_json = json_object_get(entry, "count");
    int64_t repeat = count_json != NULL ? json_integer_value(count_json) : 1;
    if (repeat < 1 || out->card_count + repeat > GPU_MAX_CARDS) {
        snprintf(why, why_size, "card %zu: count must be 1 or more, at most %d cards a node",
                 position, GPU_MAX_CARDS);
        return EINVAL_CODE;
    }
    const char *model = json_string_value(json_object_get(entry, "model"));
    const char *uuid = json_string_value(json_object_get(entry, "uuid"));
    const char *family = json_string_value(json_object_get(entry, "migFamily"));
    const json_t *index_json = json_object_get(entry, "index");
    int32_t first =
        index_json != NULL ? (int32_t)json_integer_value(index_json) : (int32_t)out->card_count;
    for (int64_t r = 0; r < repeat; r++) {
        struct card *card = &out->cards[out->card_count];
        card_defaults(card, first + (int32_t)r);
        if (uuid != NULL && repeat == 1)
            snprintf(card->uuid, sizeof(card->uuid), "%s", uuid);
        else
            snprintf(card->uuid, sizeof(card->uuid), "%s-gpu%d", node_name, card->index);
        snprintf(card->model, sizeof(card->model), "%s", model != NULL ? model : "NVIDIA");
        card->memory_mib = memory;
        if (json_object_get(entry, "cores") != NULL)
            card->cores = (int32_t)json_integer_value(json_object_get(entry, "cores"));
        if (json_object_get(entry, "numa") != NULL)
            card->numa = (int32_t)json_integer_value(json_object_get(entry, "numa"));
        if (json_object_get(entry, "healthy") != NULL)
            card->healthy = json_is_true(json_object_get(entry, "healthy"));
        card_set_mode(card, mode);
        if (family != NULL)
            card->mig = mig_family_find(family);
        if (mode == CARD_SHARED && json_object_get(entry, "split") != NULL)
            card->split = (int32_t)json_integer_value(json_object_get(entry, "split"));
        if (mode == CARD_MIG && card->mig == NULL) {
            snprintf(why, why_size,
                     "card %zu: mode mig, but model \"%s\" is no MIG-capable "
                     "GPU known here; give migFamily (e.g. \"A100-80GB\")",
                     position, card->model);
            return EINVAL_CODE;
        }
        out->card_count++;
    }
    return 0;
}

int inventory_from_kcycle(const char *json, const char *node_name, struct gpu_node *out, char *why,
                          size_t why_size)
{
    memset(out, 0, sizeof(*out));
    if (json == NULL)
        return 0;
    out->source = SOURCE_KCYCLE;
    json_error_t error;
    json_t *root = json_loads(json, 0, &error);
    if (!json_is_array(root)) {
        snprintf(why, why_size, "expected a JSON list of cards%s%s", root == NULL ? ": " : "",
                 root == NULL ? error.text : "");
        json_decref(root);
        return EINVAL_CODE;
    }
    size_t i;
    json_t *entry;
    int rc = 0;
    json_array_foreach(root, i, entry)
    {
        if (!json_is_object(entry)) {
            snprintf(why, why_size, "card %zu is not an object", i);
            rc = EINVAL_CODE;
            break;
        }
        if ((rc = kcycle_card(entry, i, node_name, out, why, why_size)) != 0)
            break;
    }
    json_decref(root);
    return rc;
}

int inventory_from_gfd(const char *product, const char *memory, const char *count,
                       const char *mig_config, const char *node_name, struct gpu_node *out)
{
    memset(out, 0, sizeof(*out));
    if (product == NULL || memory == NULL || count == NULL)
        return 0;
    /* a card cut by mig-parted is not whole: its instances are plain extended resources */
    if (mig_config != NULL && strcmp(mig_config, "all-disabled") != 0)
        return 0;
    long long cards = atoll(count), mib = atoll(memory);
    if (cards <= 0 || mib <= 0)
        return 0;
    out->source = SOURCE_GFD;
    for (long long i = 0; i < cards && i < GPU_MAX_CARDS; i++) {
        struct card *card = &out->cards[out->card_count++];
        card_defaults(card, (int32_t)i);
        snprintf(card->uuid, sizeof(card->uuid), "%s-gpu%lld", node_name, i);
        snprintf(card->model, sizeof(card->model), "%s", product);
        card->memory_mib = mib;
        card_set_mode(card, CARD_WHOLE);
    }
    return 0;
}

/* cpu quantities: "16", 16, "15500m". */
static int64_t milli_of(const json_t *value)
{
    if (json_is_integer(value))
        return json_integer_value(value) * 1000;
    const char *text = json_string_value(value);
    if (text == NULL)
        return -1;
    char *end;
    double number = strtod(text, &end);
    if (end == text)
        return -1;
    return *end == 'm' ? (int64_t)number : (int64_t)(number * 1000.0);
}

static int64_t count_of(const json_t *value)
{
    if (json_is_integer(value))
        return json_integer_value(value);
    const char *text = json_string_value(value);
    return text != NULL ? atoll(text) : 0;
}

int inventory_from_nrt(const char *json, struct zone_cpus *zones, int32_t gpus_per_zone[],
                       char *why, size_t why_size)
{
    memset(zones, 0, sizeof(*zones));
    json_error_t error;
    json_t *root = json_loads(json, 0, &error);
    const json_t *list = json_object_get(root, "zones");
    if (!json_is_array(list)) {
        snprintf(why, why_size, "NodeResourceTopology without a zones list");
        json_decref(root);
        return EINVAL_CODE;
    }
    size_t i;
    const json_t *zone;
    json_array_foreach(list, i, zone)
    {
        const char *name = json_string_value(json_object_get(zone, "name"));
        const char *digits = name != NULL ? strpbrk(name, "0123456789") : NULL;
        if (digits == NULL || zones->count == GPU_MAX_ZONES)
            continue;
        uint32_t z = zones->count++;
        zones->id[z] = atoi(digits);
        gpus_per_zone[z] = 0;
        size_t r;
        const json_t *resource;
        json_array_foreach(json_object_get(zone, "resources"), r, resource)
        {
            const char *resource_name = json_string_value(json_object_get(resource, "name"));
            if (resource_name == NULL)
                continue;
            const json_t *available = json_object_get(resource, "available");
            if (available == NULL)
                available = json_object_get(resource, "allocatable");
            if (strcmp(resource_name, "cpu") == 0)
                zones->available_milli[z] = milli_of(available);
            else if (strcmp(resource_name, "nvidia.com/gpu") == 0)
                gpus_per_zone[z] = (int32_t)count_of(json_object_get(resource, "capacity"));
        }
    }
    json_decref(root);
    return 0;
}

static int64_t days_from_civil(int64_t year, int64_t month, int64_t day)
{
    year -= month <= 2;
    int64_t era = (year >= 0 ? year : year - 399) / 400;
    int64_t yoe = year - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int64_t parse_hami_time(const char *text)
{
    int year, month, day, hour, minute, second;
    char tail;
    char dash[2];
    /* HAMi writes Go's time.DateTime ("2006-01-02 15:04:05"); older releases "2006.01.02" */
    if (sscanf(text, "%4d%1[.-]%2d%*1[.-]%2d %2d:%2d:%2d%c", &year, dash, &month, &day, &hour,
               &minute, &second, &tail) != 7)
        return -1;
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60)
        return -1;
    int64_t days = days_from_civil(year, month, day);
    return ((days * 24 + hour) * 60 + minute) * 60000LL + second * 1000LL;
}

void inventory_handshake(const char *value, struct gpu_node *node)
{
    node->requesting_ms = 0;
    node->deleted = false;
    if (value == NULL)
        return;
    if (strncmp(value, "Deleted", 7) == 0) {
        node->deleted = true;
    } else if (strncmp(value, "Requesting_", 11) == 0) {
        int64_t at = parse_hami_time(value + 11);
        node->requesting_ms = at > 0 ? at : 1; /* unreadable: as old as can be */
    }
}
