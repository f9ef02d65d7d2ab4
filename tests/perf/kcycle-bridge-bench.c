/* Watch-event ingest: a recorded pod watch stream (JSON lines in chunks that do not respect
 * event boundaries) split, parsed, converted and queued by the bridge's own code, sent over
 * nng ipc and applied by a real scheduler through its bridge client. Reports events/s end to
 * end and for the parsing stage alone.
 *
 * usage: kcycle-bridge-bench [--events N] [--chunk BYTES] [--json] */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bridge.h"
#include "bridge_client.h"
#include "log.h"
#include "tree.h"

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A pod as the API server sends it: metadata with labels, annotations and managed fields,
 * two containers with requests, tolerations, a status with conditions. */
static int append_event(char **buf, size_t *len, size_t *cap, uint32_t i)
{
    char event[4096];
    int n = snprintf(
        event, sizeof(event),
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
        "\"name\":\"train-%u\",\"namespace\":\"team-%u\",\"uid\":\"6f1c2a7e-%04x-4b1e-9c3d-%012x\","
        "\"resourceVersion\":\"%u\",\"creationTimestamp\":\"2026-11-29T10:00:00Z\","
        "\"labels\":{\"app\":\"trainer\",\"job\":\"job-%u\",\"scheduling.x-k8s.io/pod-group\":"
        "\"job-%u\"},\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":"
        "\"{\\\"apiVersion\\\":\\\"v1\\\",\\\"kind\\\":\\\"Pod\\\"}\"},\"managedFields\":[{"
        "\"manager\":\"kubectl\",\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":"
        "\"2026-11-29T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{"
        "\"f:containers\":{}}}}]},\"spec\":{\"schedulerName\":\"kcycle\",\"priority\":%u,"
        "\"containers\":[{\"name\":\"main\",\"image\":\"registry.example/trainer:1.4\","
        "\"resources\":{\"requests\":{\"cpu\":\"500m\",\"memory\":\"2Gi\",\"nvidia.com/gpu\":"
        "\"1\"},\"limits\":{\"nvidia.com/gpu\":\"1\"}},\"ports\":[{\"containerPort\":8080}]},"
        "{\"name\":\"sidecar\",\"image\":\"registry.example/log:2\",\"resources\":{"
        "\"requests\":{\"cpu\":\"50m\",\"memory\":\"64Mi\"}}}],\"nodeSelector\":{"
        "\"pool\":\"gpu\"},\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":"
        "\"Exists\",\"effect\":\"NoSchedule\"}],\"restartPolicy\":\"Never\"},\"status\":{"
        "\"phase\":\"Pending\",\"qosClass\":\"Burstable\",\"conditions\":[{\"type\":"
        "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":"
        "\"0/10 nodes are available: 10 Insufficient nvidia.com/gpu.\"}]}}}\n",
        i, i % 8, i & 0xffff, i, i + 1, i / 16, i / 16, i % 3);
    if (*len + (size_t)n + 1 > *cap) {
        size_t grown = *cap ? *cap * 2 : 1 << 20;
        while (grown < *len + (size_t)n + 1)
            grown *= 2;
        char *moved = realloc(*buf, grown);
        if (moved == NULL)
            return -1;
        *buf = moved;
        *cap = grown;
    }
    memcpy(*buf + *len, event, (size_t)n);
    *len += (size_t)n;
    return 0;
}

struct stage {
    struct bridge_watch *watch;
    uint64_t events;
    int64_t parse_us; /* splitting and parsing only */
};

/* One watch event, as the reflector hands it to the bridge. */
static int on_value(void *ctx, const char *json, size_t len)
{
    struct stage *st = ctx;
    int64_t start = now_us();
    struct tree *t;
    struct kc_error err = {{0}};
    if (tree_parse_buffer("Pod watch event", json, len, &t, &err) < 0) {
        fprintf(stderr, "kcycle-bridge-bench: %s\n", err.message);
        return -1;
    }
    const struct tree *object = tree_get(t, "object");
    const struct tree *meta = tree_get(object, "metadata");
    st->parse_us += now_us() - start;
    bridge_watch_event(st->watch, KUBE_ADDED, tree_get(meta, "namespace")->scalar,
                       tree_get(meta, "name")->scalar, tree_get(meta, "uid")->scalar, object);
    tree_free(t);
    st->events++;
    return 0;
}

static void *send_main(void *arg)
{
    bridge_send_loop(arg);
    return NULL;
}

static atomic_bool bench_stop;

static void *client_main(void *arg)
{
    bridge_client_run(arg, &bench_stop);
    return NULL;
}

int main(int argc, char **argv)
{
    uint32_t events = 50000;
    size_t chunk = 16384;
    bool json = false;
    static const struct option options[] = {{"events", required_argument, NULL, 'e'},
                                            {"chunk", required_argument, NULL, 'c'},
                                            {"json", no_argument, NULL, 'j'},
                                            {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (c) {
        case 'e': events = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'c': chunk = strtoul(optarg, NULL, 10); break;
        case 'j': json = true; break;
        default:
            fprintf(stderr, "usage: kcycle-bridge-bench [--events N] [--chunk B] [--json]\n");
            return 2;
        }
    }
    if (events == 0 || chunk == 0)
        return 2;
    log_set_level(KC_LOG_ERROR);

    char *stream = NULL;
    size_t len = 0, cap = 0;
    for (uint32_t i = 0; i < events; i++)
        if (append_event(&stream, &len, &cap, i) < 0)
            return 1;

    /* a bridge without watches: a kubeconfig that is never dialed, a socket in a temp dir */
    char dir[] = "/tmp/kcycle-bridge-bench-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    char kubeconfig[256], url[300];
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", dir);
    snprintf(url, sizeof(url), "ipc://%s/bridge.sock", dir);
    FILE *f = fopen(kubeconfig, "w");
    if (f == NULL)
        return 1;
    fputs("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
          "https://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n"
          "  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
          f);
    fclose(f);
    static struct bridge b;
    struct bridge_options opt = {.listen_url = url,
                                 .kubeconfig = kubeconfig,
                                 .scheduler_name = "kcycle",
                                 .leader_elect = true, /* never elected: nothing is bound */
                                 .lease_name = "bench",
                                 .identity = "bench",
                                 .workers = 1,
                                 .health_port = -1};
    struct kc_error err = {{0}};
    if (bridge_open(&b, &opt, &err) < 0) {
        fprintf(stderr, "kcycle-bridge-bench: %s\n", err.message);
        return 1;
    }
    for (uint32_t i = 0; i < b.watch_count; i++)
        atomic_store(&b.watches[i].synced, true);
    struct bridge_watch *pods = NULL;
    for (uint32_t i = 0; i < b.watch_count; i++)
        if (b.watches[i].kind == 'p')
            pods = &b.watches[i];
    pthread_t sender, client_thread;
    if (bridge_start_receiver(&b, &err) < 0 || pthread_create(&sender, NULL, send_main, &b) != 0)
        return 1;

    static struct bridge_client client;
    struct bridge_client_options copt = {.url = url};
    if (bridge_client_open(&client, &copt, &err) < 0) {
        fprintf(stderr, "kcycle-bridge-bench: %s\n", err.message);
        return 1;
    }
    if (pthread_create(&client_thread, NULL, client_main, &client) != 0)
        return 1;
    /* wait for the (empty) sync, so that every event below is a live change */
    for (int i = 0; i < 500 && client.stats.syncs == 0; i++)
        usleep(10000);
    if (client.stats.syncs == 0) {
        fprintf(stderr, "kcycle-bridge-bench: the scheduler did not connect\n");
        return 1;
    }

    struct stage st = {.watch = pods};
    struct json_splitter splitter = {0};
    int64_t start = now_us();
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        int rc = json_splitter_feed(&splitter, stream + off, n, on_value, &st);
        if (rc != 0) {
            fprintf(stderr, "kcycle-bridge-bench: the stream did not split (%d)\n", rc);
            return 1;
        }
    }
    int64_t queued = now_us();
    while (client.stats.changes < events && now_us() - start < 120 * 1000000ll)
        usleep(200);
    int64_t end = now_us();
    uint64_t delivered = client.stats.changes;
    uint32_t pending = client.sched.pods.count;

    double seconds = (double)(end - start) / 1e6;
    double rate = (double)delivered / seconds;
    double parse_rate = st.parse_us > 0 ? (double)st.events / ((double)st.parse_us / 1e6) : 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (json)
        printf("{\"shape\":\"watch-ingest\",\"events\":%u,\"stream_bytes\":%zu,"
               "\"delivered\":%llu,\"pending_pods_in_scheduler\":%u,\"seconds\":%.3f,"
               "\"events_per_second\":%.0f,\"parse_events_per_second\":%.0f,"
               "\"queue_seconds\":%.3f,\"peak_rss_mb\":%.1f}\n",
               events, len, (unsigned long long)delivered, pending, seconds, rate, parse_rate,
               (double)(queued - start) / 1e6, (double)ru.ru_maxrss / 1024.0);
    else
        printf("watch ingest: %llu of %u events (%.1f MB) delivered in %.3f s: %.0f events/s "
               "(splitting and parsing alone: %.0f events/s); %u pods pending in the "
               "scheduler; peak RSS %.1f MB\n",
               (unsigned long long)delivered, events, (double)len / 1e6, seconds, rate, parse_rate,
               pending, (double)ru.ru_maxrss / 1024.0);

    atomic_store(&bench_stop, true);
    pthread_join(client_thread, NULL);
    bridge_stop(&b);
    pthread_join(sender, NULL);
    bridge_client_close(&client);
    bridge_close(&b);
    json_splitter_free(&splitter);
    free(stream);
    unlink(kubeconfig);
    char sock[300];
    snprintf(sock, sizeof(sock), "%s/bridge.sock", dir);
    unlink(sock);
    rmdir(dir);
    return delivered == events && pending == events ? 0 : 1;
}
