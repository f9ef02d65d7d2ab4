/* The topology settings of a KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, e.g.
 * /var/lib/kubelet/config.yaml), so the agent reports what the kubelet really enforces. */
#ifndef KC_TOPOLOGY_KUBELET_CONFIG_H
#define KC_TOPOLOGY_KUBELET_CONFIG_H

#include "error.h"

/* Each string is malloc'd, or NULL when the file does not set it (the kubelet's default). */
struct kubelet_config {
    char *topology_manager_policy; /* topologyManagerPolicy */
    char *topology_manager_scope;  /* topologyManagerScope */
    char *reserved_cpus;           /* reservedSystemCPUs */
    char *memory_manager_policy;   /* memoryManagerPolicy */
};

/* 0, or -errno with err naming the file (and line:column of a bad value). */
int kubelet_config_read(const char *path, struct kubelet_config *out, struct kc_error *err);
void kubelet_config_free(struct kubelet_config *c);

#endif
