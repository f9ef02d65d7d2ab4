/* The table behind "a field no enabled plugin handles is refused with a reason naming it": for
 * each pod field that kube-scheduler's default plugins read, the kcycle plugin(s) that read it.
 * A pod using a field none of the enabled plugins handles would otherwise be placed as if the
 * field were absent, where kube-scheduler could refuse the node (docs/configuration.md). */
#include "pod_fields.h"

#include <stdio.h>
#include <string.h>

struct pod_field_info {
    uint32_t bit;
    const char *name;
    const char *handler; /* the plugin that reads it, NULL when no shipped plugin does */
};

static const struct pod_field_info table[] = {
    {POD_FIELD_HOST_PORTS, "spec.containers[].ports[].hostPort", "nodeports"},
    {POD_FIELD_NODE_SELECTOR, "spec.nodeSelector", "nodeaffinity"},
    {POD_FIELD_NODE_AFFINITY, "spec.affinity.nodeAffinity", "nodeaffinity"},
    {POD_FIELD_POD_AFFINITY, "spec.affinity.podAffinity", "interpodaffinity"},
    {POD_FIELD_POD_ANTI_AFFINITY, "spec.affinity.podAntiAffinity", "interpodaffinity"},
    {POD_FIELD_TOPOLOGY_SPREAD, "spec.topologySpreadConstraints", "podtopologyspread"},
    {POD_FIELD_RESOURCE_CLAIMS, "spec.resourceClaims", "dynamicresources"},
    {POD_FIELD_PVC_VOLUMES, "spec.volumes[].persistentVolumeClaim", "volumebinding"},
    {POD_FIELD_EPHEMERAL_VOLUMES, "spec.volumes[].ephemeral", "volumebinding"},
    {POD_FIELD_CSI_VOLUMES, "spec.volumes[].csi", "nodevolumelimits"},
    {POD_FIELD_GCE_PD_VOLUMES, "spec.volumes[].gcePersistentDisk", "volumerestrictions"},
    {POD_FIELD_AWS_EBS_VOLUMES, "spec.volumes[].awsElasticBlockStore", "volumerestrictions"},
    {POD_FIELD_RBD_VOLUMES, "spec.volumes[].rbd", "volumerestrictions"},
    {POD_FIELD_ISCSI_VOLUMES, "spec.volumes[].iscsi", "volumerestrictions"},
    /* pod-level resources change what NodeResourcesFit counts; no kcycle plugin reads them */
    {POD_FIELD_POD_RESOURCES, "spec.resources", NULL},
};

#define TABLE_SIZE (sizeof(table) / sizeof(table[0]))

static const struct pod_field_info *find_bit(uint32_t bit)
{
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (table[i].bit == bit)
            return &table[i];
    return NULL;
}

uint32_t pod_fields_all(void)
{
    uint32_t all = 0;
    for (size_t i = 0; i < TABLE_SIZE; i++)
        all |= table[i].bit;
    return all;
}

const char *pod_field_name(uint32_t bit)
{
    const struct pod_field_info *f = find_bit(bit);
    return f != NULL ? f->name : NULL;
}

uint32_t pod_field_by_name(const char *name)
{
    for (size_t i = 0; name != NULL && i < TABLE_SIZE; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].bit;
    return 0;
}

const char *pod_field_handlers(uint32_t bit)
{
    const struct pod_field_info *f = find_bit(bit);
    return f != NULL && f->handler != NULL ? f->handler : "";
}

static int handled_by(const struct pod_field_info *f, const char *const *names, uint32_t count)
{
    for (uint32_t i = 0; f->handler != NULL && i < count; i++)
        if (names[i] != NULL && strcmp(names[i], f->handler) == 0)
            return 1;
    return 0;
}

uint32_t pod_fields_unhandled_by(const char *const *names, uint32_t count)
{
    uint32_t unhandled = 0;
    for (size_t i = 0; i < TABLE_SIZE; i++)
        if (!handled_by(&table[i], names, count))
            unhandled |= table[i].bit;
    return unhandled;
}

void pod_fields_format(uint32_t mask, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < TABLE_SIZE && used < size; i++) {
        if (!(mask & table[i].bit))
            continue;
        int n = snprintf(buf + used, size - used, "%s%s", used > 0 ? ", " : "", table[i].name);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}
