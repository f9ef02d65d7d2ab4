/* The link between the scheduler and one plugin host: a connected
 * socketpair(AF_UNIX, SOCK_SEQPACKET) the host inherits, carrying whole messages (packed
 * kcycle.v1 protobufs) in both directions. No filesystem path exists, so no other process can
 * reach it, and no thread stands between the caller and the kernel (docs/architecture.md). */
#ifndef KC_CORE_CHANNEL_H
#define KC_CORE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest record written: well under the default AF_UNIX send buffer, so one record
 * always fits. A longer message (a cluster snapshot) is split into several records. */
#define CHANNEL_RECORD_BYTES (64 * 1024)

/* The plugin host protocol's caps: a request carries a whole cluster snapshot at most (tens of
 * MB for a large cluster); a reply carries results for the request's candidates. */
#define CHANNEL_REQUEST_MAX_BYTES ((size_t)512 << 20)
#define CHANNEL_REPLY_MAX_BYTES ((size_t)64 << 20)

/* The fd number a plugin host finds its channel on (kcycle-plugin-host --fd). */
#define CHANNEL_HOST_FD 3

struct channel {
    int fd;       /* -1: closed */
    uint8_t *buf; /* the last message received; owned, reused by the next receive */
    size_t capacity;
};

/* Both ends of a new pair: ends[0] for this process, ends[1] for the child (both close on
 * exec; the spawner moves the child's end to a fixed number). 0 or -errno. */
int channel_pair(int ends[2]);

/* Start argv (argv[0] looked up on PATH when it has no slash) with the child's end of a new
 * pair on CHANNEL_HOST_FD: 0 with *pid and c open on this process's end, or -errno (nothing
 * started, c untouched). The child writes cannot_run to stderr and exits 127 when exec fails.
 * Only async-signal-safe calls run between fork and exec: the caller may have threads. */
int channel_spawn(const char *const argv[], const char *cannot_run, struct channel *c,
                  pid_t *pid);
/* An open channel on fd (taking ownership of it). */
void channel_init(struct channel *c, int fd);

/* Close the fd and free the buffer; safe twice and on a channel never opened. */
void channel_close(struct channel *c);

/* Send one message of len bytes (max_bytes: the peer's cap). deadline_ms: CLOCK_MONOTONIC
 * milliseconds (channel_now_ms) after which it gives up, or < 0 to wait as long as it takes.
 * 0; -EMSGSIZE (over max_bytes), -ETIMEDOUT, -EPIPE (the peer is gone), or another -errno. */
int channel_send(struct channel *c, const void *data, size_t len, int64_t deadline_ms);

/* Receive one message of at most max_bytes. 0 with *data (c's buffer, valid until the next
 * receive or close) and *len; -ETIMEDOUT; -EPIPE (the peer closed its end: EOF); -EMSGSIZE
 * (the announced length is over max_bytes); -EPROTO (records that do not form a message). */
int channel_recv(struct channel *c, size_t max_bytes, int64_t deadline_ms, const uint8_t **data,
                 size_t *len);

/* Wait until a message starts arriving (or the peer closes): 1, 0 at the timeout, -errno. */
int channel_wait(const struct channel *c, int timeout_ms);

int64_t channel_now_ms(void);

/* The receive spin this process uses, in ns (0: off), decided once from its usable cores and
 * KCYCLE_CHANNEL_SPIN_US. A thread whose affinity is one CPU does not spin whatever this says
 * (its mask is read again every 16 ms). */
int64_t channel_spin_ns(void);

/* The cores this process may use at once: its affinity mask and its cgroup's CPU quota. */
long channel_usable_cores(void);

/* Spins begun in this process so far (tests). */
uint64_t channel_spins(void);

/* The calling thread changed its CPU affinity: its next wait reads the mask again. */
void channel_affinity_changed(void);

/* The calling thread's own receive spin, in microseconds (capped at the process's maximum;
 * still 0 with one usable core), or the process's again with us < 0. A thread whose peer is
 * known to answer after a while on another CPU (remote.c, the evaluating host spread beside
 * the cycle thread) spins long enough to catch it awake. */
void channel_set_spin_us(int64_t us);

/* The calling thread spins even while its affinity is one CPU (a benchmark that pins its two
 * ends to two CPUs on purpose). */
void channel_spin_when_pinned(bool spin);

#endif
