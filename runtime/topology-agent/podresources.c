/* A gRPC client for two unary calls, without a gRPC library: each request is an HTTP/2 POST
 * (prior knowledge, over the kubelet's unix socket) of one length-prefixed protobuf message;
 * the answer is one length-prefixed message and a grpc-status trailer. libcurl hands trailers
 * to the header callback, which is where grpc-status is read. */
#include "podresources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "podresources.pb-c.h"

#define MAX_RESPONSE (16u << 20)

struct call {
    uint8_t *body;
    size_t len;
    bool too_big;
    int grpc_status; /* -1 until seen */
    char grpc_message[256];
};

static size_t on_body(char *data, size_t size, size_t count, void *ctx)
{
    struct call *c = ctx;
    size_t n = size * count;
    if (c->len + n > MAX_RESPONSE) {
        c->too_big = true;
        return 0;
    }
    uint8_t *grown = realloc(c->body, c->len + n);
    if (grown == NULL)
        return 0;
    memcpy(grown + c->len, data, n);
    c->body = grown;
    c->len += n;
    return n;
}

/* Headers and trailers alike: only grpc-status and grpc-message matter. */
static size_t on_header(char *data, size_t size, size_t count, void *ctx)
{
    struct call *c = ctx;
    size_t n = size * count;
    if (n > 12 && strncasecmp(data, "grpc-status:", 12) == 0)
        c->grpc_status = atoi(data + 12);
    else if (n > 13 && strncasecmp(data, "grpc-message:", 13) == 0) {
        size_t len = n - 13;
        while (len > 0 && (data[13 + len - 1] == '\r' || data[13 + len - 1] == '\n'))
            len--;
        snprintf(c->grpc_message, sizeof(c->grpc_message), "%.*s", (int)len, data + 13);
    }
    return n;
}

/* One unary call: request is the serialized message, *reply the answer's message bytes. */
static int grpc_call(const char *socket, const char *method, const uint8_t *request,
                     size_t request_len, struct call *c, const uint8_t **reply, size_t *reply_len,
                     char *error, size_t error_size)
{
    memset(c, 0, sizeof(*c));
    c->grpc_status = -1;
    uint8_t *frame = malloc(request_len + 5);
    CURL *curl = curl_easy_init();
    if (frame == NULL || curl == NULL) {
        free(frame);
        curl_easy_cleanup(curl);
        snprintf(error, error_size, "out of memory");
        return -ENOMEM;
    }
    frame[0] = 0; /* not compressed */
    frame[1] = (uint8_t)(request_len >> 24), frame[2] = (uint8_t)(request_len >> 16);
    frame[3] = (uint8_t)(request_len >> 8), frame[4] = (uint8_t)request_len;
    if (request_len > 0)
        memcpy(frame + 5, request, request_len);
    char url[256];
    snprintf(url, sizeof(url), "http://localhost/v1.PodResourcesLister/%s", method);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/grpc");
    headers = curl_slist_append(headers, "TE: trailers");
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, frame);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)(request_len + 5));
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(curl);
    long http = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(frame);
    if (rc != CURLE_OK) {
        snprintf(error, error_size, "%s: %s: %s", socket, method,
                 c->too_big ? "response over 16 MiB" : curl_easy_strerror(rc));
        return -EIO;
    }
    if (http != 200 || c->grpc_status != 0) {
        snprintf(error, error_size, "%s: %s: HTTP %ld, grpc-status %d %s", socket, method, http,
                 c->grpc_status, c->grpc_message);
        return c->grpc_status == 12 ? -ENOSYS : -EPROTO; /* 12: UNIMPLEMENTED */
    }
    if (c->len < 5 || c->body[0] != 0) {
        snprintf(error, error_size, "%s: %s: no uncompressed message in the answer", socket,
                 method);
        return -EPROTO;
    }
    size_t len = (size_t)c->body[1] << 24 | (size_t)c->body[2] << 16 | (size_t)c->body[3] << 8 |
                 c->body[4];
    if (len > c->len - 5) {
        snprintf(error, error_size, "%s: %s: truncated message", socket, method);
        return -EPROTO;
    }
    *reply = c->body + 5;
    *reply_len = len;
    return 0;
}

static int zone_of_cpu(const struct topology_machine *m, int64_t cpu)
{
    if (cpu < 0 || cpu >= TOPOLOGY_MAX_CPUS)
        return -1;
    for (uint32_t z = 0; z < m->zone_count; z++)
        if ((m->zones[z].cpus[cpu / 64] >> (cpu % 64)) & 1)
            return m->zones[z].id;
    return -1;
}

/* Add amount to the list's entry for (zone, resource). */
static int add(struct topology_allocation **list, uint32_t *count, int zone_id,
               const char *resource, int64_t amount)
{
    for (uint32_t i = 0; i < *count; i++)
        if ((*list)[i].zone_id == zone_id && strcmp((*list)[i].resource, resource) == 0) {
            (*list)[i].amount += amount;
            return 0;
        }
    struct topology_allocation *grown = realloc(*list, (*count + 1) * sizeof(*grown));
    if (grown == NULL)
        return -ENOMEM;
    *list = grown;
    struct topology_allocation *a = &grown[(*count)++];
    a->zone_id = zone_id;
    snprintf(a->resource, sizeof(a->resource), "%s", resource);
    a->amount = amount;
    return 0;
}

/* Memory and devices into their zones: memory spread over several zones is divided among
 * them, devices go to their first zone. */
static int add_memory_and_devices(struct topology_allocation **list, uint32_t *count,
                                  V1__ContainerMemory *const *memory, size_t n_memory,
                                  V1__ContainerDevices *const *devices, size_t n_devices)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_memory; i++) {
        const V1__ContainerMemory *mem = memory[i];
        size_t nodes = mem->topology != NULL ? mem->topology->n_nodes : 0;
        for (size_t k = 0; rc == 0 && k < nodes && mem->memory_type != NULL; k++)
            rc = add(list, count, (int)mem->topology->nodes[k]->id, mem->memory_type,
                     (int64_t)(mem->size / nodes));
    }
    for (size_t i = 0; rc == 0 && i < n_devices; i++) {
        const V1__ContainerDevices *d = devices[i];
        if (d->topology != NULL && d->topology->n_nodes > 0 && d->resource_name != NULL)
            rc = add(list, count, (int)d->topology->nodes[0]->id, d->resource_name,
                     (int64_t)d->n_device_ids);
    }
    return rc;
}

/* A container's exclusive CPUs, memory and devices into their zones. */
static int add_container(struct podresources_usage *u, const struct topology_machine *m,
                         const V1__ContainerResources *c)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->n_cpu_ids; i++) {
        int zone = zone_of_cpu(m, c->cpu_ids[i]);
        if (zone >= 0)
            rc = add(&u->allocations, &u->allocation_count, zone, "cpu", 1);
    }
    if (rc == 0)
        rc = add_memory_and_devices(&u->allocations, &u->allocation_count, c->memory,
                                    c->n_memory, c->devices, c->n_devices);
    return rc;
}

static int append_pod(char **list, const char *ns, const char *name)
{
    char *grown;
    if (asprintf(&grown, "%s%s%s/%s", *list != NULL ? *list : "", *list != NULL ? "," : "",
                 ns != NULL ? ns : "", name != NULL ? name : "") < 0)
        return -ENOMEM;
    free(*list);
    *list = grown;
    return 0;
}

/* By namespace, then name: the kubelet lists pods in no fixed order, and a report that only
 * reorders its accounted pods is no change worth publishing. */
static int compare_pods(const void *a, const void *b)
{
    const V1__PodResources *x = *(V1__PodResources *const *)a, *y = *(V1__PodResources *const *)b;
    int by_namespace = strcmp(x->namespace_ != NULL ? x->namespace_ : "",
                              y->namespace_ != NULL ? y->namespace_ : "");
    return by_namespace != 0 ? by_namespace
                             : strcmp(x->name != NULL ? x->name : "", y->name != NULL ? y->name : "");
}

static int read_list(const char *socket, const struct topology_machine *m,
                     struct podresources_usage *out, char *error, size_t error_size)
{
    struct call c;
    const uint8_t *reply;
    size_t reply_len;
    int rc = grpc_call(socket, "List", NULL, 0, &c, &reply, &reply_len, error, error_size);
    V1__ListPodResourcesResponse *list =
        rc == 0 ? v1__list_pod_resources_response__unpack(NULL, reply_len, reply) : NULL;
    if (rc == 0 && list == NULL) {
        snprintf(error, error_size, "%s: List: the answer is not a ListPodResourcesResponse",
                 socket);
        rc = -EPROTO;
    }
    if (rc == 0 && list->n_pod_resources > 1)
        qsort(list->pod_resources, list->n_pod_resources, sizeof(*list->pod_resources),
              compare_pods);
    for (size_t p = 0; rc == 0 && p < list->n_pod_resources; p++) {
        const V1__PodResources *pod = list->pod_resources[p];
        rc = append_pod(&out->pods, pod->namespace_, pod->name);
        for (size_t k = 0; rc == 0 && k < pod->n_containers; k++)
            rc = add_container(out, m, pod->containers[k]);
    }
    if (rc == 0 && out->pods == NULL && (out->pods = strdup("")) == NULL)
        rc = -ENOMEM;
    if (rc == -ENOMEM)
        snprintf(error, error_size, "out of memory");
    if (list != NULL)
        v1__list_pod_resources_response__free_unpacked(list, NULL);
    free(c.body);
    return rc;
}

/* The CPUs the kubelet may hand out exclusively (its reserved CPUs are not among them), and
 * its allocatable memory, hugepages and devices per zone (reserved memory and unhealthy
 * devices left out). A kubelet too old for the call leaves everything at the capacity. */
static void read_allocatable(const char *socket, struct podresources_usage *out)
{
    struct call c;
    const uint8_t *reply;
    size_t reply_len;
    char ignored[256];
    if (grpc_call(socket, "GetAllocatableResources", NULL, 0, &c, &reply, &reply_len, ignored,
                  sizeof(ignored)) == 0) {
        V1__AllocatableResourcesResponse *a =
            v1__allocatable_resources_response__unpack(NULL, reply_len, reply);
        if (a != NULL && a->n_cpu_ids > 0) {
            out->has_allocatable_cpus = true;
            for (size_t i = 0; i < a->n_cpu_ids; i++)
                if (a->cpu_ids[i] >= 0 && a->cpu_ids[i] < TOPOLOGY_MAX_CPUS)
                    out->allocatable_cpus[a->cpu_ids[i] / 64] |= 1ull << (a->cpu_ids[i] % 64);
        }
        /* a failure here only leaves allocatable at the capacity */
        if (a != NULL)
            add_memory_and_devices(&out->allocatable, &out->allocatable_count, a->memory,
                                   a->n_memory, a->devices, a->n_devices);
        if (a != NULL)
            v1__allocatable_resources_response__free_unpacked(a, NULL);
    }
    free(c.body);
}

int podresources_read(const char *socket, const struct topology_machine *m,
                      struct podresources_usage *out, char *error, size_t error_size)
{
    memset(out, 0, sizeof(*out));
    int rc = read_list(socket, m, out, error, error_size);
    if (rc == 0)
        read_allocatable(socket, out);
    else
        podresources_free(out);
    return rc;
}

void podresources_free(struct podresources_usage *u)
{
    free(u->allocations);
    free(u->allocatable);
    free(u->pods);
    memset(u, 0, sizeof(*u));
}
