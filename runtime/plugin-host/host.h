/* kcycle-plugin-host: runs plugins for one scheduler in another process (docs/architecture.md),
 * keeping a replica of the scheduler's cache exact from the deltas of every request and
 * answering proto/kcycle/v1/plugin.proto over the socketpair the scheduler gave it
 * (core/channel.h). */
#ifndef KC_PLUGIN_HOST_HOST_H
#define KC_PLUGIN_HOST_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct plugin_host;

struct plugin_host_options {
    int fd;                 /* > 0: the connected SOCK_SEQPACKET socket to serve (the
                               host owns it from now on); 0: none, only plugin_host_handle
                               is usable */
    const char *plugin_dir; /* where plugins without a path are looked up; NULL: the default
                               search list (KCYCLE_PLUGIN_DIR, the install dir, the build tree) */
    pid_t parent;           /* > 0: plugin_host_serve returns once getppid() is no longer this
                               (the scheduler died and the host was re-parented) */
};

/* Create a host serving opts->fd. 0 with *out set (free it with plugin_host_close), or a
 * negative code with err saying why. The strings of opts are copied. */
int plugin_host_open(const struct plugin_host_options *opts, struct plugin_host **out,
                     struct kc_error *err);

/* Receive requests and send their replies, one at a time, until plugin_host_stop is called
 * (0), the parent goes away or closes the channel (0), or the channel fails (-EIO, logged). */
int plugin_host_serve(struct plugin_host *host);

/* Ask plugin_host_serve to return; it does so within about 100 ms. Safe from any thread and
 * from a signal handler. */
void plugin_host_stop(struct plugin_host *host);

/* Unload the plugins, free the replica and close the channel. NULL is a no-op. */
void plugin_host_close(struct plugin_host *host);

/* Serve one packed kcycle.v1.Request: apply its deltas to the replica, run its call, and
 * return the packed kcycle.v1.Reply in *reply (malloc'd, the caller frees it) of *reply_len
 * bytes. Every request gets a reply, bad input included (the reply's `error` says what was
 * wrong); the only failure is -ENOMEM, with *reply NULL. */
int plugin_host_handle(struct plugin_host *host, const uint8_t *request, size_t len,
                       uint8_t **reply, size_t *reply_len);

/* What the replica applied since the host opened, for tests and benchmarks: assigned pods
 * that came whole (pod_put) and as the short PodBound of a pod bound as it was assumed. Read it
 * when plugin_host_serve is not running (it has returned, or was never called). */
struct plugin_host_counts {
    uint64_t pod_puts;
    uint64_t pods_bound;
};
void plugin_host_counts(const struct plugin_host *host, struct plugin_host_counts *out);

#endif
