/* kcycle-topology-agent: one report (discovery + podresources -> NodeResourceTopology), and
 * the publishing loop against the API server through runtime/kube. */
#include "agent.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kube.h"
#include "log.h"
#include "podresources.h"

#define NRT_PATH "/apis/topology.node.k8s.io/v1alpha2/noderesourcetopologies"

static atomic_bool stopping;

/* The CPUs the kubelet will not hand out: its answer when it gives one, else --reserved-cpus. */
static int reserved_cpus(const struct agent_options *opt, const struct topology_machine *m,
                         const struct podresources_usage *usage, uint64_t *reserved,
                         char *error, size_t error_size)
{
    memset(reserved, 0, TOPOLOGY_MAX_CPUS / 8);
    if (usage->has_allocatable_cpus) {
        for (uint32_t z = 0; z < m->zone_count; z++)
            for (uint32_t i = 0; i < TOPOLOGY_MAX_CPUS / 64; i++)
                reserved[i] |= m->zones[z].cpus[i] & ~usage->allocatable_cpus[i];
        return 0;
    }
    if (opt->reserved_cpus != NULL && topology_parse_cpu_list(opt->reserved_cpus, reserved) < 0) {
        snprintf(error, error_size, "--reserved-cpus \"%s\" is not a CPU list such as 0-1,8",
                 opt->reserved_cpus);
        return -EINVAL;
    }
    return 0;
}

int agent_build(const struct agent_options *opt, json_t **out, char *error, size_t error_size)
{
    *out = NULL;
    struct topology_machine *m = malloc(sizeof(*m));
    if (m == NULL) {
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    int rc = topology_discover(opt->synthetic, opt->xml, opt->rule_count ? opt->rules : NULL,
                               opt->rule_count, m, error, error_size);
    struct podresources_usage usage = {0};
    if (rc == 0 && opt->podresources_socket != NULL) {
        rc = podresources_read(opt->podresources_socket, m, &usage, error, error_size);
        if (rc < 0 && !opt->podresources_required) {
            log_warn("podresources unavailable (%s): available = allocatable", error);
            rc = 0;
        }
    }
    uint64_t reserved[TOPOLOGY_MAX_CPUS / 64];
    if (rc == 0)
        rc = reserved_cpus(opt, m, &usage, reserved, error, error_size);
    if (rc == 0) {
        struct topology_options nrt = {
            .node_name = opt->node_name,
            .policy = opt->policy,
            .scope = opt->scope,
            .reserved_cpus = reserved,
            .allocations = usage.allocations,
            .allocation_count = usage.allocation_count,
            .allocatable = usage.allocatable,
            .allocatable_count = usage.allocatable_count,
            .without_memory = opt->without_memory,
            .accounted_pods = usage.pods,
        };
        *out = topology_nrt(m, &nrt);
        if (*out == NULL) {
            snprintf(error, error_size, "out of memory");
            rc = -ENOMEM;
        }
    }
    podresources_free(&usage);
    free(m);
    return rc;
}

int agent_once(const struct agent_options *opt)
{
    char error[512];
    json_t *nrt;
    int rc = agent_build(opt, &nrt, error, sizeof(error));
    if (rc < 0) {
        log_error("%s", error);
        return rc;
    }
    FILE *f = strcmp(opt->output, "-") == 0 ? stdout : fopen(opt->output, "w");
    if (f == NULL) {
        log_error("%s: %s", opt->output, strerror(errno));
        json_decref(nrt);
        return -errno;
    }
    json_dumpf(nrt, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(nrt);
    if (f != stdout && fclose(f) != 0)
        return -EIO;
    return 0;
}

/* ---- publishing --------------------------------------------------------------------------- */

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stopping, true);
}

static void sleep_seconds(int seconds)
{
    for (int i = 0; i < seconds * 10 && !atomic_load(&stopping); i++)
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
}

/* Create the object, or replace it with the resourceVersion just read. */
static int publish(struct kube_client *client, const char *node, json_t *nrt)
{
    char path[512];
    snprintf(path, sizeof(path), NRT_PATH "/%s", node);
    struct kc_error err = {0};
    for (int attempt = 0; attempt < 3; attempt++) {
        struct kube_response r = {0};
        int rc = kube_request(client, "GET", path, NULL, NULL, 0, 10000, &r, &err);
        if (rc < 0) {
            log_warn("topology agent: %s", err.message);
            return rc;
        }
        json_t *current = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
        long status = r.status;
        kube_response_free(&r);
        if (status != 200 && status != 404) {
            json_decref(current);
            log_warn("topology agent: GET %s: HTTP %ld", path, status);
            return -EIO;
        }
        json_t *metadata = json_object_get(nrt, "metadata");
        const char *rv = json_string_value(
            json_object_get(json_object_get(current, "metadata"), "resourceVersion"));
        if (rv != NULL)
            json_object_set_new(metadata, "resourceVersion", json_string(rv));
        else
            json_object_del(metadata, "resourceVersion");
        json_decref(current);
        char *body = json_dumps(nrt, JSON_COMPACT);
        if (body == NULL)
            return -ENOMEM;
        bool create = status == 404;
        rc = kube_request(client, create ? "POST" : "PUT", create ? NRT_PATH : path,
                          "application/json", body, strlen(body), 10000, &r, &err);
        free(body);
        if (rc < 0) {
            log_warn("topology agent: %s", err.message);
            return rc;
        }
        status = r.status;
        kube_response_free(&r);
        if (status == 200 || status == 201)
            return 0;
        if (status != 409) {
            log_warn("topology agent: %s %s: HTTP %ld", create ? "POST" : "PUT", path, status);
            return -EIO;
        }
        /* 409: someone else wrote it (or created it first): read again and retry */
    }
    return -EAGAIN;
}

int agent_run(const struct agent_options *opt)
{
    struct kube_config cfg = {0};
    struct kc_error err = {0};
    int rc = opt->kubeconfig != NULL ? kube_config_from_kubeconfig(opt->kubeconfig, NULL, &cfg, &err)
                                     : kube_config_in_cluster(NULL, &cfg, &err);
    struct kube_client *client = NULL;
    if (rc == 0)
        rc = kube_client_new(&cfg, "kcycle-topology-agent", &client, &err);
    if (rc < 0) {
        log_error("%s", err.message);
        kube_config_free(&cfg);
        return rc;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    json_t *last = NULL;
    time_t last_publish = 0;
    while (!atomic_load(&stopping)) {
        char error[512];
        json_t *nrt;
        if (agent_build(opt, &nrt, error, sizeof(error)) < 0) {
            log_warn("topology agent: %s", error);
        } else if (last == NULL || !json_equal(nrt, last) ||
                   time(NULL) - last_publish >= opt->publish_seconds) {
            json_t *compare = json_deep_copy(nrt);
            if (publish(client, opt->node_name, nrt) == 0) {
                log_info("published NodeResourceTopology %s", opt->node_name);
                json_decref(last);
                last = compare;
                last_publish = time(NULL);
            } else {
                json_decref(compare);
            }
        }
        json_decref(nrt);
        sleep_seconds(opt->poll_seconds);
    }
    json_decref(last);
    kube_client_free(client);
    kube_config_free(&cfg);
    return 0;
}
