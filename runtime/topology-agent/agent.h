/* kcycle-topology-agent's work: build the node's NodeResourceTopology (hwloc, plus the
 * kubelet's podresources when its socket is there) and print it, or publish it through the
 * API server on change and every minute. main.c only parses the command line. */
#ifndef KC_TOPOLOGY_AGENT_H
#define KC_TOPOLOGY_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "topology.h"

#define AGENT_MAX_RULES 16

struct agent_options {
    const char *node_name;
    const char *synthetic;     /* --synthetic, or NULL */
    const char *xml;           /* --input-xml, or NULL */
    const char *policy;        /* --topology-manager-policy (kubelet's flag) */
    const char *scope;         /* --topology-manager-scope */
    const char *reserved_cpus; /* --reserved-cpus (kubelet's reservedSystemCPUs) */
    bool without_memory;       /* --memory-manager-policy None */
    struct topology_device_rule rules[AGENT_MAX_RULES];
    uint32_t rule_count; /* 0: topology_default_rules */
    const char *podresources_socket; /* NULL: none */
    bool podresources_required;      /* --podresources-socket given: failing to read is an error */
    const char *output;              /* --output FILE or "-" */
    const char *kubeconfig;          /* NULL: in-cluster */
    int poll_seconds;                /* how often to look for a change */
    int publish_seconds;             /* republish at least this often */
};

/* One report as a new JSON reference. 0, or -errno with the reason in error. */
int agent_build(const struct agent_options *opt, json_t **out, char *error, size_t error_size);

/* --once: build and write the object to opt->output. 0 or -errno (the reason logged). */
int agent_once(const struct agent_options *opt);

/* Publish until SIGTERM/SIGINT: create or update the object (resourceVersion preconditions),
 * when it changes and every publish_seconds. 0 on a clean stop. */
int agent_run(const struct agent_options *opt);

#endif
