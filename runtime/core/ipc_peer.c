/* SO_PEERCRED through nng: NNG_OPT_IPC_PEER_UID on a new ipc pipe, compared with our effective
 * uid before the pipe joins the socket (closing it there means the socket never sees it). */
#include "ipc_peer.h"

#include <unistd.h>

#include "log.h"

static void check_pipe(nng_pipe pipe, nng_pipe_ev event, void *arg)
{
    (void)event;
    struct ipc_peer_guard *guard = arg;
    uint64_t uid = 0;
    int rv = nng_pipe_get_uint64(pipe, NNG_OPT_IPC_PEER_UID, &uid);
    if (rv == NNG_ENOTSUP || (rv == 0 && uid == (uint64_t)geteuid()))
        return;
    atomic_fetch_add(&guard->refused, 1);
    if (rv == 0)
        log_error("%s: refused a connection from uid %llu: only uid %u (this process's) may "
                  "connect",
                  guard->who, (unsigned long long)uid, (unsigned)geteuid());
    else
        log_error("%s: refused a connection whose peer uid cannot be read: %s", guard->who,
                  nng_strerror(rv));
    nng_pipe_close(pipe);
}

int ipc_peer_guard(nng_socket sock, struct ipc_peer_guard *guard, const char *who)
{
    guard->who = who;
    atomic_init(&guard->refused, 0);
    int rv = nng_pipe_notify(sock, NNG_PIPE_EV_ADD_PRE, check_pipe, guard);
    if (rv == 0)
        rv = nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ, IPC_PEER_RECV_MAX_BYTES);
    return rv;
}
