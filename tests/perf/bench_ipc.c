/* The figures kcycle-bench --isolation process adds (docs/benchmarks.md): a bare socketpair
 * echo between two processes, and the same shape scheduled in process by a child run. */
#include "bench_ipc.h"

#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel.h"

#define RAW_MESSAGE_BYTES 256

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One end of the echo: the bare socket, or with spin the plugin-host channel itself
 * (runtime/core/channel.c), whose receive spins and adapts its spin as kcycle's does. */
struct echo_end {
    int fd;
    struct channel *c; /* NULL: the bare socket */
};

/* One message into buf (at most size bytes): its length, or < 0. */
static ssize_t echo_recv(const struct echo_end *e, char *buf, size_t size)
{
    if (e->c == NULL)
        return recv(e->fd, buf, size, 0);
    const uint8_t *data;
    size_t len;
    if (channel_recv(e->c, size, -1, &data, &len) < 0)
        return -1;
    memcpy(buf, data, len);
    return (ssize_t)len;
}

static ssize_t echo_send(const struct echo_end *e, const char *buf, size_t len)
{
    if (e->c == NULL)
        return send(e->fd, buf, len, MSG_NOSIGNAL);
    return channel_send(e->c, buf, len, -1) == 0 ? (ssize_t)len : -1;
}

static void pin_to(int cpu)
{
    if (cpu < 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* The median of `samples` 256-byte round trips to a forked child that echoes them; each end on
 * its cpu (-1: wherever the kernel puts it), spinning before it sleeps or not. */
static int echo_p50(uint32_t samples, const int cpu[2], bool spin, double *p50_us)
{
    int ends[2];
    if (samples == 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) < 0)
        return -EINVAL;
    /* the channel decides its spin from the cores before the ends pin themselves to one each,
     * as a scheduler and its host spawned unpinned do */
    channel_spin_ns();
    pid_t pid = fork();
    if (pid < 0) {
        close(ends[0]);
        close(ends[1]);
        return -errno;
    }
    if (pid == 0) {
        close(ends[0]);
        pin_to(cpu[1]);
        channel_spin_when_pinned(spin);
        struct channel child;
        channel_init(&child, ends[1]);
        struct echo_end e = {ends[1], spin ? &child : NULL};
        char buf[RAW_MESSAGE_BYTES];
        ssize_t n;
        while ((n = echo_recv(&e, buf, sizeof(buf))) > 0)
            if (echo_send(&e, buf, (size_t)n) != n)
                break;
        _exit(0);
    }
    close(ends[1]);
    struct channel parent;
    channel_init(&parent, ends[0]);
    struct echo_end e = {ends[0], spin ? &parent : NULL};
    cpu_set_t allowed;
    bool pinned = cpu[0] >= 0 && sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
    pin_to(cpu[0]);
    channel_spin_when_pinned(spin);
    int64_t *times = calloc(samples, sizeof(*times));
    char msg[RAW_MESSAGE_BYTES] = {1}, back[RAW_MESSAGE_BYTES];
    uint32_t done = 0;
    for (; times != NULL && done < samples; done++) {
        int64_t start = now_ns();
        if (echo_send(&e, msg, sizeof(msg)) != (ssize_t)sizeof(msg) ||
            echo_recv(&e, back, sizeof(back)) != (ssize_t)sizeof(back))
            break;
        times[done] = now_ns() - start;
    }
    channel_close(&parent);
    waitpid(pid, NULL, 0);
    channel_spin_when_pinned(false);
    if (pinned)
        sched_setaffinity(0, sizeof(allowed), &allowed);
    int rc = times != NULL && done == samples ? 0 : -EIO;
    if (rc == 0) {
        qsort(times, done, sizeof(*times), compare_int64);
        *p50_us = (double)times[done / 2] / 1000.0;
    }
    free(times);
    return rc;
}

int bench_ipc_raw_round_trip_us(uint32_t samples, double *p50_us)
{
    static const int anywhere[2] = {-1, -1};
    return echo_p50(samples, anywhere, false, p50_us);
}

int bench_ipc_cross_core_us(uint32_t samples, bool spin, double *p50_us)
{
    cpu_set_t allowed;
    int cpus[2], found = 0;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
        return -errno;
    for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[found++] = c;
    return found < 2 ? -ENOTSUP : echo_p50(samples, cpus, spin, p50_us);
}

/* A figure that could not be measured (one usable core: no cross-core echo) is null. */
void bench_ipc_cross_core_json(char *out, size_t size, double sleeping_us, double spinning_us)
{
    char sleeping[32] = "null", spinning[32] = "null";
    if (sleeping_us >= 0)
        snprintf(sleeping, sizeof(sleeping), "%.1f", sleeping_us);
    if (spinning_us >= 0)
        snprintf(spinning, sizeof(spinning), "%.1f", spinning_us);
    snprintf(out, size, ", \"raw_cross_core_us_p50\": %s, \"raw_cross_core_spin_us_p50\": %s",
             sleeping, spinning);
}

int bench_ipc_inprocess_baseline(int argc, char **argv, double *pods_per_second,
                                 double *group_latency_ms_p50)
{
    char **args = calloc((size_t)argc + 4, sizeof(*args));
    if (args == NULL)
        return -ENOMEM;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--isolation") == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--isolation=", 12) == 0 || strcmp(argv[i], "--json") == 0)
            continue;
        args[n++] = argv[i];
    }
    args[n++] = "--isolation";
    args[n++] = "inprocess";
    args[n++] = "--json";
    int out[2];
    if (pipe(out) < 0) {
        free(args);
        return -errno;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    free(args);
    close(out[1]);
    if (pid < 0) {
        close(out[0]);
        return -errno;
    }
    char text[8192];
    size_t len = 0;
    ssize_t got;
    while (len < sizeof(text) - 1 && (got = read(out[0], text + len, sizeof(text) - 1 - len)) > 0)
        len += (size_t)got;
    text[len] = '\0';
    close(out[0]);
    int status;
    waitpid(pid, &status, 0);
    json_t *report = json_loads(text, 0, NULL);
    json_t *pps = json_object_get(report, "pods_per_second_avg");
    if (pps == NULL)
        pps = json_object_get(report, "pods_per_second");
    int rc = json_is_number(pps) ? 0 : -EPROTO;
    if (rc == 0) {
        *pods_per_second = json_number_value(pps);
        json_t *group = json_object_get(report, "group_latency_ms_p50");
        *group_latency_ms_p50 = json_is_number(group) ? json_number_value(group) : 0;
    }
    json_decref(report);
    return rc;
}

void bench_ipc_json(char *out, size_t size, double raw_us, double baseline_pods_per_second,
                    double pods_per_second, double baseline_group_ms)
{
    double overhead = 0, ratio = 0;
    if (baseline_pods_per_second > 0 && pods_per_second > 0) {
        overhead = 1e6 / pods_per_second - 1e6 / baseline_pods_per_second;
        ratio = pods_per_second / baseline_pods_per_second;
    }
    snprintf(out, size,
             ", \"raw_round_trip_us_p50\": %.1f, \"inprocess_pods_per_second\": %.0f, "
             "\"per_pod_overhead_us\": %.1f, \"process_to_inprocess_ratio\": %.3f, "
             "\"inprocess_group_latency_ms_p50\": %.1f",
             raw_us, baseline_pods_per_second, overhead, ratio, baseline_group_ms);
}
