/* kcycle-topology-agent: parse the command line and hand over to agent.c. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kcycle/version.h>

#include "agent.h"
#include "kubelet_config.h"
#include "podresources.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kcycle-topology-agent [options]\n"
            "Builds the node's NodeResourceTopology (topology.node.k8s.io/v1alpha2) from\n"
            "hwloc and the kubelet's podresources API; --once prints it, otherwise it is\n"
            "published through the API server on change and every --publish-seconds.\n"
            "\n"
            "  --once                       build one report, print it (or --output), exit\n"
            "  --output FILE|-              where --once writes (default -: standard output)\n"
            "  --node-name NAME             the object's name (default $NODE_NAME, else the\n"
            "                               host name)\n"
            "  --synthetic DESCRIPTION      describe another machine with hwloc's synthetic\n"
            "                               syntax, e.g. \"pack:2 numa:2 core:16 pu:2\"\n"
            "  --input-xml FILE             describe another machine from an hwloc XML export\n"
            "  --topology-manager-policy P  the kubelet's: none (default), best-effort,\n"
            "                               restricted or single-numa-node\n"
            "  --topology-manager-scope S   the kubelet's: container (default) or pod\n"
            "  --reserved-cpus LIST         the kubelet's reservedSystemCPUs, e.g. 0-1,48\n"
            "  --memory-manager-policy P    None or Static: the kubelet's (default Static)\n"
            "  --kubelet-config FILE        read the four settings above from the kubelet's\n"
            "                               KubeletConfiguration; a flag still wins\n"
            "  --device VENDOR:CLASS=NAME   count matching PCI devices as resource NAME (hex,\n"
            "                               e.g. 15b3:0200=mellanox.com/nic); repeatable\n"
            "  --podresources-socket PATH   the kubelet's podresources API (default: its\n"
            "                               socket when present); given, it must be readable\n"
            "  --kubeconfig FILE            how to reach the API server (default: in-cluster)\n"
            "  --poll-seconds N             how often the node is looked at (default 10)\n"
            "  --publish-seconds N          write the object at least this often (default 60)\n"
            "  --version                    print the version\n"
            "  -h, --help                   print this help\n");
}

static bool one_of(const char *value, const char *const *allowed)
{
    for (; *allowed != NULL; allowed++)
        if (strcmp(value, *allowed) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    static const char *const policies[] = {"none", "best-effort", "restricted",
                                           "single-numa-node", NULL};
    static const char *const scopes[] = {"container", "pod", NULL};
    static const char *const memory_policies[] = {"None", "Static", NULL};
    static const struct option options[] = {
        {"once", no_argument, NULL, 'o'},
        {"output", required_argument, NULL, 'O'},
        {"node-name", required_argument, NULL, 'n'},
        {"synthetic", required_argument, NULL, 's'},
        {"input-xml", required_argument, NULL, 'x'},
        {"topology-manager-policy", required_argument, NULL, 'p'},
        {"topology-manager-scope", required_argument, NULL, 'S'},
        {"reserved-cpus", required_argument, NULL, 'r'},
        {"memory-manager-policy", required_argument, NULL, 'M'},
        {"kubelet-config", required_argument, NULL, 'K'},
        {"device", required_argument, NULL, 'd'},
        {"podresources-socket", required_argument, NULL, 'P'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"poll-seconds", required_argument, NULL, 'l'},
        {"publish-seconds", required_argument, NULL, 'u'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct agent_options opt = {.output = "-", .poll_seconds = 10, .publish_seconds = 60};
    const char *memory_policy = NULL, *kubelet_config_path = NULL;
    bool once = false;
    /* --device adds to the default rules (NVIDIA and AMD GPUs) */
    for (; opt.rule_count < topology_default_rule_count; opt.rule_count++)
        opt.rules[opt.rule_count] = topology_default_rules[opt.rule_count];
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'o': once = true; break;
        case 'O': opt.output = optarg; break;
        case 'n': opt.node_name = optarg; break;
        case 's': opt.synthetic = optarg; break;
        case 'x': opt.xml = optarg; break;
        case 'p': opt.policy = optarg; break;
        case 'S': opt.scope = optarg; break;
        case 'r': opt.reserved_cpus = optarg; break;
        case 'M': memory_policy = optarg; break;
        case 'K': kubelet_config_path = optarg; break;
        case 'P':
            opt.podresources_socket = optarg;
            opt.podresources_required = true;
            break;
        case 'k': opt.kubeconfig = optarg; break;
        case 'l': opt.poll_seconds = atoi(optarg); break;
        case 'u': opt.publish_seconds = atoi(optarg); break;
        case 'd':
            if (opt.rule_count == AGENT_MAX_RULES ||
                topology_parse_rule(optarg, &opt.rules[opt.rule_count++]) < 0) {
                fprintf(stderr, "kcycle-topology-agent: --device %s: expected VENDOR:CLASS=NAME "
                        "in hex, e.g. 15b3:0200=mellanox.com/nic (at most %d)\n", optarg,
                        AGENT_MAX_RULES);
                return 2;
            }
            break;
        case 'V': printf("kcycle-topology-agent %s\n", KC_VERSION_STRING); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    /* the kubelet's own file, where a flag does not say otherwise */
    struct kubelet_config kubelet = {0};
    if (kubelet_config_path != NULL) {
        struct kc_error err = {{0}};
        if (kubelet_config_read(kubelet_config_path, &kubelet, &err) < 0) {
            fprintf(stderr, "kcycle-topology-agent: %s\n", err.message);
            return 1;
        }
        if (opt.policy == NULL)
            opt.policy = kubelet.topology_manager_policy;
        if (opt.scope == NULL)
            opt.scope = kubelet.topology_manager_scope;
        if (opt.reserved_cpus == NULL)
            opt.reserved_cpus = kubelet.reserved_cpus;
        /* the kubelet's default memory manager is None */
        if (memory_policy == NULL)
            memory_policy = kubelet.memory_manager_policy != NULL ? kubelet.memory_manager_policy
                                                                  : "None";
    }
    if (opt.policy == NULL)
        opt.policy = "none";
    if (opt.scope == NULL)
        opt.scope = "container";
    if (memory_policy == NULL)
        memory_policy = "Static"; /* memory in the zones, as NFD and RTE report it */
    /* without the Static memory manager the kubelet aligns no memory: report none */
    opt.without_memory = strcmp(memory_policy, "None") == 0;
    if (optind < argc || (opt.synthetic != NULL && opt.xml != NULL) ||
        !one_of(opt.policy, policies) || !one_of(opt.scope, scopes) ||
        !one_of(memory_policy, memory_policies) || opt.poll_seconds < 1 ||
        opt.publish_seconds < 1) {
        fprintf(stderr, "kcycle-topology-agent: policy \"%s\", scope \"%s\", memory manager "
                "policy \"%s\"\n", opt.policy, opt.scope, memory_policy);
        usage(stderr);
        kubelet_config_free(&kubelet);
        return 2;
    }
    char host[256];
    if (opt.node_name == NULL)
        opt.node_name = getenv("NODE_NAME");
    if (opt.node_name == NULL && gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = '\0';
        opt.node_name = host;
    }
    /* the kubelet's socket when it is there and this is the node itself */
    if (opt.podresources_socket == NULL && opt.synthetic == NULL && opt.xml == NULL &&
        access(PODRESOURCES_SOCKET, W_OK) == 0)
        opt.podresources_socket = PODRESOURCES_SOCKET;
    int rc = once ? agent_once(&opt) : agent_run(&opt);
    kubelet_config_free(&kubelet);
    return rc < 0 ? 1 : 0;
}
