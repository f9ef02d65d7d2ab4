/* What a pod asks of GPUs, read the way HAMi's scheduler reads it (limits first, then
 * requests; memory per card in MiB or as a percentage; cores in percent of a card) plus MIG
 * profiles as NVIDIA's device plugin names them, kcycle's synonyms, and the selection and
 * policy annotations. A value the plugin cannot honour is refused with a reason that names the
 * container and the value, never clamped in silence. */
#include <stdio.h>
#include <string.h>

#include <kcycle/kcycle.h>

#include "gpushare.h"

#define EINVAL_CODE (-22)
#define MIG_PREFIX "nvidia.com/mig-"

struct ids {
    kc_resource cards, memory, percent, cores, kc_memory, kc_cores;
};

static void intern_ids(struct ids *ids)
{
    ids->cards = kc_resource_id("nvidia.com/gpu");
    ids->memory = kc_resource_id("nvidia.com/gpumem");
    ids->percent = kc_resource_id("nvidia.com/gpumem-percentage");
    ids->cores = kc_resource_id("nvidia.com/gpucores");
    ids->kc_memory = kc_resource_id("kcycle.io/gpu-memory");
    ids->kc_cores = kc_resource_id("kcycle.io/gpu-cores");
}

/* HAMi reads a container's limit, and its request when there is no limit. */
static int64_t container_value(const kc_pod *pod, int init, uint32_t index, kc_resource id)
{
    if (id < 0)
        return 0;
    int64_t limit = kc_pod_container_limit(pod, init, index, id);
    return limit > 0 ? limit : kc_pod_container_request(pod, init, index, id);
}

/* A HAMi name and its kcycle synonym: either, or both when they agree. */
static int synonym_value(const kc_pod *pod, uint32_t index, kc_resource hami, kc_resource own,
                         const char *hami_name, const char *own_name, const char *container,
                         int64_t *value, char *reason, size_t size)
{
    int64_t a = container_value(pod, 0, index, hami);
    int64_t b = container_value(pod, 0, index, own);
    if (a > 0 && b > 0 && a != b) {
        snprintf(reason, size, "container \"%s\": %s is %lld but %s is %lld; give one of them",
                 container, hami_name, (long long)a, own_name, (long long)b);
        return EINVAL_CODE;
    }
    *value = a > 0 ? a : b;
    return 0;
}

/* The MIG profile a container asks for, if any; refuses two profiles or a malformed name. */
static int container_mig(const kc_pod *pod, uint32_t index, const char *container,
                         const char **profile, int64_t *count, char *reason, size_t size)
{
    *profile = NULL;
    *count = 0;
    uint32_t requests = kc_pod_request_count(pod);
    for (uint32_t r = 0; r < requests; r++) {
        kc_resource id;
        int64_t pod_value;
        if (kc_pod_request_at(pod, r, &id, &pod_value) != 0)
            continue;
        const char *name = kc_resource_name(id);
        if (name == NULL || strncmp(name, MIG_PREFIX, strlen(MIG_PREFIX)) != 0)
            continue;
        int64_t value = container_value(pod, 0, index, id);
        if (value <= 0)
            continue;
        const char *suffix = name + strlen(MIG_PREFIX);
        if (!mig_name_valid(suffix)) {
            snprintf(reason, size,
                     "container \"%s\": %s is not a MIG profile; expected e.g. "
                     "nvidia.com/mig-1g.10gb or nvidia.com/mig-3g.40gb",
                     container, name);
            return EINVAL_CODE;
        }
        if (*profile != NULL) {
            snprintf(reason, size,
                     "container \"%s\": asks for two MIG profiles (%s%s and %s); one "
                     "profile per container",
                     container, MIG_PREFIX, *profile, name);
            return EINVAL_CODE;
        }
        *profile = suffix;
        *count = value;
    }
    return 0;
}

static int check_range(const char *container, const char *name, int64_t value, int64_t most,
                       const char *expected, char *reason, size_t size)
{
    if (value <= most)
        return 0;
    snprintf(reason, size, "container \"%s\": %s is %lld; expected %s", container, name,
             (long long)value, expected);
    return EINVAL_CODE;
}

static int read_container(const kc_pod *pod, const struct ids *ids, uint32_t index,
                          struct container_request *out, bool *asks, char *reason, size_t size)
{
    const char *name = kc_pod_container_name(pod, 0, index);
    snprintf(out->name, sizeof(out->name), "%s", name != NULL ? name : "");
    out->index = index;
    int64_t cards = container_value(pod, 0, index, ids->cards);
    int64_t memory = 0, cores = 0, mig_count = 0;
    int64_t percent = container_value(pod, 0, index, ids->percent);
    if (synonym_value(pod, index, ids->memory, ids->kc_memory, "nvidia.com/gpumem",
                      "kcycle.io/gpu-memory", out->name, &memory, reason, size) != 0 ||
        synonym_value(pod, index, ids->cores, ids->kc_cores, "nvidia.com/gpucores",
                      "kcycle.io/gpu-cores", out->name, &cores, reason, size) != 0 ||
        container_mig(pod, index, out->name, &out->mig_profile, &mig_count, reason, size) != 0)
        return EINVAL_CODE;
    *asks = cards > 0 || memory > 0 || percent > 0 || cores > 0 || mig_count > 0;
    if (!*asks)
        return 0;
    if (out->mig_profile != NULL && (cards > 0 || memory > 0 || percent > 0 || cores > 0)) {
        snprintf(reason, size,
                 "container \"%s\": nvidia.com/mig-%s cannot be combined with nvidia.com/gpu, "
                 "gpumem or gpucores; a MIG instance has its own memory and compute",
                 out->name, out->mig_profile);
        return EINVAL_CODE;
    }
    if (out->mig_profile != NULL)
        cards = mig_count;
    if (check_range(out->name,
                    out->mig_profile != NULL ? "the MIG instance count" : "nvidia.com/gpu", cards,
                    GPU_MAX_CARDS, "at most 16 (the most cards a node has)", reason, size) != 0 ||
        check_range(out->name, "nvidia.com/gpumem", memory, GPU_MAX_MEMORY_MIB,
                    "MiB per card (e.g. 8192 for 8 GiB), not bytes", reason, size) != 0 ||
        check_range(out->name, "nvidia.com/gpumem-percentage", percent, 100,
                    "1 to 100 (percent of each card's memory)", reason, size) != 0 ||
        check_range(out->name, "nvidia.com/gpucores", cores, 100,
                    "0 to 100 (percent of each card's compute; 100 holds the card alone)", reason,
                    size) != 0)
        return EINVAL_CODE;
    /* HAMi's defaults: one card when only memory or cores are given, the card's whole memory
     * when neither memory nor a percentage is, and then the whole card (100 cores) too */
    out->cards = cards > 0 ? (int32_t)cards : 1;
    out->memory_mib = memory;
    out->memory_percent = memory == 0 ? (percent > 0 ? (int32_t)percent : 100) : 0;
    bool whole_memory = memory == 0 && out->memory_percent == 100;
    out->cores = cores > 0 ? (int32_t)cores : (whole_memory ? 100 : 0);
    return 0;
}

static int read_policy(const kc_pod *pod, const char *key, enum gpu_policy fallback,
                       enum gpu_policy *out, char *reason, size_t size)
{
    const char *value = kc_pod_annotation(pod, key);
    *out = fallback;
    if (value == NULL)
        return 0;
    if (strcmp(value, "binpack") == 0) {
        *out = POLICY_BINPACK;
    } else if (strcmp(value, "spread") == 0) {
        *out = POLICY_SPREAD;
    } else {
        snprintf(reason, size, "annotation %s is \"%s\"; expected binpack or spread", key, value);
        return EINVAL_CODE;
    }
    return 0;
}

/* Taken whole or refused: a list cut short would drop the names after the cut, and a cut
 * nouse list lets those cards through. */
static int copy_annotation(const kc_pod *pod, const char *key, char *out, size_t size,
                           char *reason, size_t reason_size)
{
    const char *value = kc_pod_annotation(pod, key);
    size_t length = value != NULL ? strlen(value) : 0;
    if (length >= size) {
        snprintf(reason, reason_size,
                 "annotation %s is %zu bytes long; at most %zu are read, shorten the list", key,
                 length, size - 1);
        return EINVAL_CODE;
    }
    memcpy(out, value != NULL ? value : "", length + 1);
    return 0;
}

static int read_annotations(const kc_pod *pod, enum gpu_policy default_policy,
                            struct pod_request *out, char *reason, size_t size)
{
    if (copy_annotation(pod, "nvidia.com/use-gputype", out->use_type, sizeof(out->use_type),
                        reason, size) != 0 ||
        copy_annotation(pod, "nvidia.com/nouse-gputype", out->nouse_type, sizeof(out->nouse_type),
                        reason, size) != 0 ||
        copy_annotation(pod, "nvidia.com/use-gpuuuid", out->use_uuid, sizeof(out->use_uuid),
                        reason, size) != 0 ||
        copy_annotation(pod, "nvidia.com/nouse-gpuuuid", out->nouse_uuid, sizeof(out->nouse_uuid),
                        reason, size) != 0)
        return EINVAL_CODE;
    const char *bind = kc_pod_annotation(pod, "nvidia.com/numa-bind");
    out->numa_bind = bind != NULL && strcmp(bind, "true") == 0;
    const char *numa = kc_pod_annotation(pod, "kcycle.io/numa-policy");
    if (numa != NULL && strcmp(numa, "single-numa-node") != 0 && strcmp(numa, "none") != 0) {
        snprintf(reason, size,
                 "annotation kcycle.io/numa-policy is \"%s\"; expected single-numa-node or none",
                 numa);
        return EINVAL_CODE;
    }
    out->single_numa_node = numa != NULL && strcmp(numa, "single-numa-node") == 0;
    out->cpu_milli = kc_pod_request(pod, KC_RESOURCE_CPU);
    /* first-fit is an args-only baseline; annotations choose binpack or spread */
    enum gpu_policy fallback = default_policy;
    if (read_policy(pod, "hami.io/gpu-scheduler-policy", fallback, &out->card_policy, reason,
                    size) != 0)
        return EINVAL_CODE;
    return read_policy(pod, "hami.io/node-scheduler-policy", fallback, &out->node_policy, reason,
                       size);
}

int request_parse(const kc_pod *pod, enum gpu_policy default_policy, struct pod_request *out,
                  char *reason, size_t reason_size)
{
    struct ids ids;
    intern_ids(&ids);
    memset(out, 0, sizeof(*out));
    uint32_t init_count = kc_pod_container_count(pod, 1);
    for (uint32_t i = 0; i < init_count; i++) {
        if (container_value(pod, 1, i, ids.cards) > 0 ||
            container_value(pod, 1, i, ids.memory) > 0 ||
            container_value(pod, 1, i, ids.kc_memory) > 0) {
            const char *name = kc_pod_container_name(pod, 1, i);
            snprintf(reason, reason_size,
                     "init container \"%s\" asks for GPUs; gpushare gives GPUs to app "
                     "containers only",
                     name != NULL ? name : "");
            return EINVAL_CODE;
        }
    }
    uint32_t count = kc_pod_container_count(pod, 0);
    for (uint32_t i = 0; i < count; i++) {
        struct container_request container;
        memset(&container, 0, sizeof(container));
        bool asks = false;
        if (read_container(pod, &ids, i, &container, &asks, reason, reason_size) != 0)
            return EINVAL_CODE;
        if (!asks)
            continue;
        if (out->count == GPU_MAX_CONTAINERS) {
            snprintf(reason, reason_size, "more than %d containers ask for GPUs",
                     GPU_MAX_CONTAINERS);
            return EINVAL_CODE;
        }
        out->containers[out->count++] = container;
    }
    if (out->count == 0)
        return 0;
    return read_annotations(pod, default_policy, out, reason, reason_size);
}
