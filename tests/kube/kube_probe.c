/* Test-only program: runs one reflector against an API server and prints what a consumer sees,
 * one JSON line per event, for tests/integration/test_kube_reflector.py. Also sends single
 * requests (--get) to test kube_request against a real server. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube.h"
#include "tree.h"

static atomic_bool stop_flag;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void print_json(json_t *line)
{
    char *text = json_dumps(line, JSON_COMPACT);
    json_decref(line);
    if (text == NULL)
        return;
    pthread_mutex_lock(&out_lock);
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
    free(text);
}

static const char *type_name(enum kube_event_type type)
{
    switch (type) {
    case KUBE_ADDED: return "ADDED";
    case KUBE_MODIFIED: return "MODIFIED";
    case KUBE_DELETED: return "DELETED";
    }
    return "?";
}

static const char *scalar(const struct tree *t)
{
    return t != NULL && t->type == TREE_SCALAR ? t->scalar : NULL;
}

static void on_event(void *ctx, enum kube_event_type type, const char *namespace, const char *name,
                     const char *uid, const struct tree *object)
{
    char key[600];
    snprintf(key, sizeof(key), "%s%s%s", namespace, namespace[0] != '\0' ? "/" : "", name);
    json_t *line = json_pack("{s:s, s:s, s:s}", "type", type_name(type), "key", key, "uid", uid);
    if (line == NULL)
        return;
    if (object != NULL) {
        const struct tree *metadata = tree_get(object, "metadata");
        const char *rv = scalar(tree_get(metadata, "resourceVersion"));
        const char *step = scalar(tree_get(tree_get(metadata, "labels"), "step"));
        /* the uid the object carries must be the one reported */
        const char *object_uid = scalar(tree_get(metadata, "uid"));
        json_object_set_new(line, "rv", rv != NULL ? json_string(rv) : json_null());
        if (step != NULL)
            json_object_set_new(line, "step", json_string(step));
        if (object_uid == NULL || strcmp(object_uid, uid) != 0)
            json_object_set_new(line, "uid_mismatch", json_true());
    } else {
        json_object_set_new(line, "rv", json_null());
        json_object_set_new(line, "relist", json_true());
    }
    print_json(line);
}

static void on_synced(void *ctx)
{
    print_json(json_pack("{s:s}", "type", "SYNCED"));
}

static void on_not_served(void *ctx)
{
    print_json(json_pack("{s:s}", "type", "NOT_SERVED"));
}

static void on_warn(void *ctx, const char *message)
{
    print_json(json_pack("{s:s, s:s}", "type", "WARN", "message", message));
}

static void on_signal(int sig)
{
    atomic_store(&stop_flag, true);
}

static void *run_reflector(void *arg)
{
    kube_reflector_run(arg);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: kube_probe --server URL [--ca FILE] [--token T | --token-file F]\n"
            "         [--client-cert F --client-key F] [--kubeconfig F]\n"
            "         [--resource pods|nodes|podgroups] [--seconds N] [--page-size N]\n"
            "         [--watch-timeout S] [--field-selector S] [--get PATH [--repeat N]]\n"
            "         [--timeout-retries N]\n");
}

/* retries: a request that times out is sent again this many times (said on stderr, not on
 * stdout): under memcheck on a busy machine a first TLS handshake can outlast the client's
 * connect timeout, which is not what the callers check. */
static int get_requests(struct kube_client *client, const char *path, int repeat, int retries)
{
    int failures = 0;
    for (int i = 0; i < repeat; i++) {
        struct kube_response response;
        struct kc_error err = {{0}};
        int rc = kube_request(client, "GET", path, NULL, NULL, 0, 10000, &response, &err);
        for (int r = 0; rc == -ETIMEDOUT && r < retries; r++) {
            fprintf(stderr, "kube_probe: %s; sending it again\n", err.message);
            rc = kube_request(client, "GET", path, NULL, NULL, 0, 10000, &response, &err);
        }
        if (rc != 0) {
            print_json(
                json_pack("{s:s, s:i, s:s}", "type", "ERROR", "code", rc, "message", err.message));
            failures++;
            continue;
        }
        char text[512];
        kube_status_text(response.body, text, sizeof(text));
        print_json(json_pack("{s:s, s:i, s:I, s:s}", "type", "RESPONSE", "status",
                             (int)response.status, "len", (json_int_t)response.len, "status_text",
                             text));
        kube_response_free(&response);
        if (i + 1 < repeat) {
            struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"server", required_argument, NULL, 's'},
        {"ca", required_argument, NULL, 'c'},
        {"token", required_argument, NULL, 't'},
        {"token-file", required_argument, NULL, 'f'},
        {"client-cert", required_argument, NULL, 'C'},
        {"client-key", required_argument, NULL, 'K'},
        {"kubeconfig", required_argument, NULL, 'k'},
        {"resource", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 'n'},
        {"page-size", required_argument, NULL, 'p'},
        {"watch-timeout", required_argument, NULL, 'w'},
        {"field-selector", required_argument, NULL, 'F'},
        {"get", required_argument, NULL, 'g'},
        {"repeat", required_argument, NULL, 'R'},
        {"timeout-retries", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    struct kube_config cfg = {0};
    const char *kubeconfig = NULL, *resource_name = "pods", *field_selector = NULL;
    const char *get_path = NULL;
    double seconds = 10;
    unsigned long page_size = 0, watch_timeout = 0;
    int repeat = 1, timeout_retries = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 's': cfg.server = strdup(optarg); break;
        case 'c': cfg.ca_file = strdup(optarg); break;
        case 't': cfg.token = strdup(optarg); break;
        case 'f': cfg.token_file = strdup(optarg); break;
        case 'C': cfg.client_cert_file = strdup(optarg); break;
        case 'K': cfg.client_key_file = strdup(optarg); break;
        case 'k': kubeconfig = optarg; break;
        case 'r': resource_name = optarg; break;
        case 'n': seconds = atof(optarg); break;
        case 'p': page_size = strtoul(optarg, NULL, 10); break;
        case 'w': watch_timeout = strtoul(optarg, NULL, 10); break;
        case 'F': field_selector = optarg; break;
        case 'g': get_path = optarg; break;
        case 'R': repeat = atoi(optarg); break;
        case 'T': timeout_retries = atoi(optarg); break;
        default: usage(); return 2;
        }
    }
    struct kc_error err = {{0}};
    if (kubeconfig != NULL) {
        kube_config_free(&cfg);
        if (kube_config_from_kubeconfig(kubeconfig, NULL, &cfg, &err) != 0) {
            fprintf(stderr, "kube_probe: %s\n", err.message);
            return 1;
        }
    }
    if (cfg.server == NULL) {
        usage();
        return 2;
    }
    struct kube_resource resource = {.kind = "Pod", .path = "/api/v1/pods"};
    if (strcmp(resource_name, "nodes") == 0) {
        resource.kind = "Node";
        resource.path = "/api/v1/nodes";
    } else if (strcmp(resource_name, "podgroups") == 0) {
        resource.kind = "PodGroup"; /* a CRD: may not be served */
        resource.path = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups";
    } else if (strcmp(resource_name, "pods") != 0) {
        usage();
        return 2;
    }
    resource.field_selector = field_selector;
    resource.page_size = (uint32_t)page_size;

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct kube_client *client;
    int rc = kube_client_new(&cfg, "kcycle-kube-probe/1.0", &client, &err);
    kube_config_free(&cfg);
    if (rc != 0) {
        fprintf(stderr, "kube_probe: %s\n", err.message);
        return 1;
    }
    if (get_path != NULL) {
        rc = get_requests(client, get_path, repeat, timeout_retries);
        kube_client_free(client);
        return rc;
    }

    struct kube_reflector_ops ops = {
        .event = on_event, .synced = on_synced, .warn = on_warn, .not_served = on_not_served};
    struct kube_reflector reflector;
    if (kube_reflector_init(&reflector, &resource, &ops, client, &stop_flag) != 0) {
        fprintf(stderr, "kube_probe: cannot set up the reflector\n");
        kube_client_free(client);
        return 1;
    }
    reflector.watch_timeout_s = (uint32_t)watch_timeout;
    pthread_t thread;
    if (pthread_create(&thread, NULL, run_reflector, &reflector) != 0) {
        fprintf(stderr, "kube_probe: cannot start a thread\n");
        return 1;
    }
    double end = now_s() + seconds;
    while (!atomic_load(&stop_flag) && now_s() < end) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    double stop_started = now_s();
    atomic_store(&stop_flag, true);
    pthread_join(thread, NULL);
    double stop_ms = (now_s() - stop_started) * 1000;
    print_json(json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "type", "COUNTERS",
                         "lists", (json_int_t)reflector.lists, "watches",
                         (json_int_t)reflector.watches, "relists_after_expired",
                         (json_int_t)reflector.relists_after_expired, "events",
                         (json_int_t)reflector.events, "bookmarks", (json_int_t)reflector.bookmarks,
                         "bad_objects", (json_int_t)reflector.bad_objects, "store",
                         (json_int_t)reflector.store.count, "stop_ms", stop_ms));
    kube_reflector_free(&reflector);
    kube_client_free(client);
    return 0;
}
