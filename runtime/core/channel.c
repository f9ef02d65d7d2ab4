/* Messages over a SOCK_SEQPACKET socketpair. A message is one record (an 8-byte header, the
 * magic and the total length, then the first bytes) followed by as many continuation records
 * as its length needs; the kernel keeps records whole and in order, so nothing else is
 * framed. Every wait is a poll() with the time left to the caller's deadline. */
#include "channel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define CHANNEL_MAGIC 0x314d434bu /* "KCM1" */
#define HEADER_BYTES 8

/* How long a receiver polls the socket before it sleeps in poll(). A peer on another core that
 * sleeps is woken by an inter-processor interrupt; in a virtual machine whose idle vCPUs halt
 * that costs tens of microseconds each way, several times the round trip itself
 * (docs/benchmarks.md). A short spin keeps both ends awake across the round trip; it is
 * bounded, and never used on a machine with one core, where it would only delay the peer. */
#define SPIN_DEFAULT_US 40
#define SPIN_MAX_US 1000

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The whole cores a cgroup v2 CPU quota (cpu.max of the process's cgroup: "QUOTA PERIOD" or
 * "max PERIOD") allows at once, or LONG_MAX without a quota or a readable cgroup. A container
 * limited to one core's time has one usable core whatever its affinity mask says. */
static long quota_cores(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL)
        return LONG_MAX;
    char line[512], path[600];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strncmp(line, "0::", 3) == 0;
    fclose(f);
    if (!found)
        return LONG_MAX;
    line[strcspn(line, "\n")] = '\0';
    snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.max", line + 3);
    f = fopen(path, "re");
    if (f == NULL)
        return LONG_MAX;
    long quota = 0, period = 0;
    int got = fscanf(f, "%ld %ld", &quota, &period);
    fclose(f);
    return got == 2 && quota > 0 && period > 0 ? quota / period : LONG_MAX;
}

/* The cores this process may run on at once: its affinity mask (taskset, a cgroup's cpuset)
 * and its cgroup's CPU quota. */
static long usable_cores(void)
{
    cpu_set_t set;
    long cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                              : sysconf(_SC_NPROCESSORS_ONLN);
    long quota = quota_cores();
    return quota < cores ? quota : cores;
}

/* The spin in nanoseconds: KCYCLE_CHANNEL_SPIN_US (0 turns it off) or the default; 0 with one
 * usable core. Read once. */
static int64_t spin_ns(void)
{
    static _Atomic int64_t cached = -1;
    int64_t v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (v >= 0)
        return v;
    long cores = usable_cores();
    long us = SPIN_DEFAULT_US;
    const char *env = getenv("KCYCLE_CHANNEL_SPIN_US");
    if (env != NULL && env[0] != '\0') {
        char *end;
        long parsed = strtol(env, &end, 10);
        if (*end == '\0' && parsed >= 0)
            us = parsed > SPIN_MAX_US ? SPIN_MAX_US : parsed;
    }
    v = cores > 1 ? (int64_t)us * 1000 : 0;
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v;
}

int64_t channel_spin_ns(void)
{
    return spin_ns();
}

long channel_usable_cores(void)
{
    return usable_cores();
}

/* The spin adapts as haltpoll does: one that saw the message come doubles the next one (up to
 * the configured spin), one that ran out halves it, down to SPIN_FLOOR_NS (several looks, so a
 * shrunk spin still sees a quick peer and grows again). On a loaded machine, where the peer is
 * off the CPU and a spin only burns time, it shrinks within a few messages. A message that
 * came, after a spin ran out, sooner than the configured spin would have waited restores the
 * whole spin (spin_waited): the wait, not a single look, says whether spinning pays. */
#define SPIN_FLOOR_NS 2000
/* Per thread: each waiting thread has its own peer, whose pace is its own. */
static _Thread_local int64_t spin_budget_ns = -1;

/* A thread's own spin (channel_set_spin_us), in ns; -1: the process's (spin_ns). */
static _Thread_local int64_t thread_spin_ns = -1;

/* A thread allowed on one CPU only never spins: the peer it waits for may be placed on the same
 * CPU (remote.c co-locates the evaluating host with the cycle thread) and could not run until
 * the spin ran out. The mask is looked at again after AFFINITY_RECHECK_NS, or at once after
 * channel_affinity_changed. */
#define AFFINITY_RECHECK_NS 16000000
static _Thread_local int64_t affinity_checked_ns;
static _Thread_local bool affinity_known, affinity_one_cpu, spin_pinned;

static _Atomic uint64_t spins;

uint64_t channel_spins(void)
{
    return atomic_load_explicit(&spins, memory_order_relaxed);
}

void channel_affinity_changed(void)
{
    affinity_known = false;
}

void channel_spin_when_pinned(bool spin)
{
    spin_pinned = spin;
}

static bool thread_on_one_cpu(int64_t now)
{
    if (!affinity_known || now - affinity_checked_ns >= AFFINITY_RECHECK_NS) {
        cpu_set_t set;
        affinity_one_cpu = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
        affinity_checked_ns = now;
        affinity_known = true;
    }
    return affinity_one_cpu;
}

void channel_set_spin_us(int64_t us)
{
    if (us < 0) {
        thread_spin_ns = -1;
        return;
    }
    thread_spin_ns = (us > SPIN_MAX_US ? SPIN_MAX_US : us) * 1000;
    spin_budget_ns = -1; /* a new pace: start from the whole spin */
}

/* The calling thread's spin in ns: its own when set, else the process's; 0 with one core. */
static int64_t thread_spin(void)
{
    int64_t process = spin_ns();
    return process == 0 || thread_spin_ns < 0 ? process : thread_spin_ns;
}

/* Poll without sleeping for up to the spin: true as soon as one of events is ready (or the
 * peer hung up), false when the spin ran out first. */
static bool spin_for(int fd, short events)
{
    int64_t spin = thread_spin();
    if (spin == 0)
        return false;
    int64_t start = now_ns();
    if (!spin_pinned && thread_on_one_cpu(start))
        return false;
    atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
    int64_t budget = spin_budget_ns;
    if (budget < 0 || budget > spin)
        budget = spin;
    do {
        struct pollfd p = {.fd = fd, .events = events};
        if (poll(&p, 1, 0) > 0) {
            int64_t grown = budget < SPIN_FLOOR_NS ? SPIN_FLOOR_NS : budget * 2;
            spin_budget_ns = grown > spin ? spin : grown;
            return true;
        }
    } while (now_ns() - start < budget);
    int64_t halved = budget / 2 < SPIN_FLOOR_NS ? SPIN_FLOOR_NS : budget / 2;
    spin_budget_ns = halved > spin ? spin : halved;
    return false;
}

/* After a spin that ran out, the message came `since` ns after the spin began: within the
 * configured spin, a whole spin would have caught it awake, so the next one spins in full. */
static void spin_waited(int64_t since)
{
    int64_t spin = thread_spin();
    if (spin > 0 && since <= spin)
        spin_budget_ns = spin;
}

int64_t channel_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int channel_pair(int ends[2])
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) < 0)
        return -errno;
    /* room for a few records in flight; the kernel caps it at its own maximum */
    int size = 4 * CHANNEL_RECORD_BYTES;
    for (int i = 0; i < 2; i++) {
        setsockopt(ends[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        setsockopt(ends[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    return 0;
}

int channel_spawn(const char *const argv[], const char *cannot_run, struct channel *c,
                  pid_t *pid)
{
    int ends[2];
    int rc = channel_pair(ends);
    if (rc < 0)
        return rc;
    size_t cannot_run_len = strlen(cannot_run);
    pid_t child = fork();
    if (child < 0) {
        rc = -errno;
        close(ends[0]);
        close(ends[1]);
        return rc;
    }
    if (child == 0) {
        if (ends[1] == CHANNEL_HOST_FD)
            fcntl(ends[1], F_SETFD, 0);
        else if (dup2(ends[1], CHANNEL_HOST_FD) < 0)
            _exit(127);
        execvp(argv[0], (char *const *)argv);
        ssize_t ignored = write(2, cannot_run, cannot_run_len);
        (void)ignored;
        _exit(127);
    }
    close(ends[1]);
    *pid = child;
    channel_close(c);
    channel_init(c, ends[0]);
    return 0;
}

void channel_init(struct channel *c, int fd)
{
    c->fd = fd;
    c->buf = NULL;
    c->capacity = 0;
}

void channel_close(struct channel *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->capacity = 0;
}

/* Wait for events on the fd until the deadline: 0 ready, -ETIMEDOUT, -EPIPE (hung up). */
static int wait_for(const struct channel *c, short events, int64_t deadline_ms)
{
    for (;;) {
        int timeout = -1;
        if (deadline_ms >= 0) {
            int64_t left = deadline_ms - channel_now_ms();
            if (left <= 0)
                return -ETIMEDOUT;
            timeout = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd p = {.fd = c->fd, .events = events};
        int n = poll(&p, 1, timeout);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            continue; /* the loop checks the deadline */
        if (p.revents & events)
            return 0; /* readable data comes before a hang-up */
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
            return -EPIPE;
    }
}

static int send_record(struct channel *c, struct iovec *iov, int iov_count, int64_t deadline_ms)
{
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iov_count};
    for (;;) {
        ssize_t n = sendmsg(c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return -EPIPE;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        int rc = wait_for(c, POLLOUT, deadline_ms);
        if (rc < 0)
            return rc;
    }
}

int channel_send(struct channel *c, const void *data, size_t len, int64_t deadline_ms)
{
    if (c->fd < 0)
        return -EPIPE;
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    uint32_t header[2] = {CHANNEL_MAGIC, (uint32_t)len};
    const uint8_t *at = data;
    size_t room = CHANNEL_RECORD_BYTES - HEADER_BYTES; /* for bytes in the first record */
    size_t first = len < room ? len : room;
    struct iovec iov[2] = {{header, HEADER_BYTES}, {(void *)at, first}};
    int rc = send_record(c, iov, first > 0 ? 2 : 1, deadline_ms);
    for (size_t sent = first; rc == 0 && sent < len;) {
        size_t n = len - sent < CHANNEL_RECORD_BYTES ? len - sent : CHANNEL_RECORD_BYTES;
        struct iovec part = {(void *)(at + sent), n};
        rc = send_record(c, &part, 1, deadline_ms);
        sent += n;
    }
    return rc;
}

static int grow(struct channel *c, size_t size)
{
    if (size <= c->capacity)
        return 0;
    uint8_t *bigger = realloc(c->buf, size);
    if (bigger == NULL)
        return -ENOMEM;
    c->buf = bigger;
    c->capacity = size;
    return 0;
}

/* One record into iov: its length, or -errno (-EPIPE at EOF, -EPROTO if it was cut). */
static ssize_t recv_record(struct channel *c, struct iovec *iov, int iov_count, int64_t deadline_ms)
{
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)iov_count};
    bool spun = false;
    int64_t spin_started = 0;
    for (;;) {
        ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT);
        if (n > 0) {
            if (msg.msg_flags & MSG_TRUNC)
                return -EPROTO;
            return n;
        }
        if (n == 0)
            return -EPIPE; /* no empty records are ever sent: this is the end of the stream */
        if (errno == EINTR)
            continue;
        if (errno == ECONNRESET || errno == ENOTCONN)
            return -EPIPE;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        if (!spun) {
            spun = true; /* once per record: a second EAGAIN sleeps */
            spin_started = now_ns();
            if (spin_for(c->fd, POLLIN))
                continue;
        }
        int rc = wait_for(c, POLLIN, deadline_ms);
        if (rc < 0)
            return rc;
        if (spin_started > 0) {
            spin_waited(now_ns() - spin_started);
            spin_started = 0;
        }
    }
}

int channel_recv(struct channel *c, size_t max_bytes, int64_t deadline_ms, const uint8_t **data,
                 size_t *len)
{
    if (c->fd < 0)
        return -EPIPE;
    int rc = grow(c, CHANNEL_RECORD_BYTES);
    if (rc < 0)
        return rc;
    uint32_t header[2];
    struct iovec iov[2] = {{header, HEADER_BYTES}, {c->buf, CHANNEL_RECORD_BYTES - HEADER_BYTES}};
    ssize_t n = recv_record(c, iov, 2, deadline_ms);
    if (n < 0)
        return (int)n;
    if (n < HEADER_BYTES || header[0] != CHANNEL_MAGIC)
        return -EPROTO;
    size_t total = header[1], have = (size_t)n - HEADER_BYTES;
    if (total > max_bytes)
        return -EMSGSIZE;
    if (have > total || (have < total && have != CHANNEL_RECORD_BYTES - HEADER_BYTES))
        return -EPROTO;
    if ((rc = grow(c, total)) < 0)
        return rc;
    while (have < total) {
        struct iovec part = {c->buf + have, total - have < CHANNEL_RECORD_BYTES
                                                ? total - have
                                                : CHANNEL_RECORD_BYTES};
        n = recv_record(c, &part, 1, deadline_ms);
        if (n < 0)
            return (int)n;
        if ((size_t)n != part.iov_len)
            return -EPROTO;
        have += (size_t)n;
    }
    *data = c->buf;
    *len = total;
    return 0;
}

int channel_wait(const struct channel *c, int timeout_ms)
{
    int64_t spin_started = now_ns();
    if (timeout_ms != 0 && spin_for(c->fd, POLLIN))
        return 1;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    if (n > 0 && timeout_ms != 0)
        spin_waited(now_ns() - spin_started);
    return n > 0 ? 1 : 0;
}
