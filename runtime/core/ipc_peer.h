/* The peer check on nng ipc connections between the scheduler and the bridge: a connection
 * from another uid is closed before the socket sees it, and logged naming the uid. */
#ifndef KC_CORE_IPC_PEER_H
#define KC_CORE_IPC_PEER_H

#include <stdatomic.h>
#include <stdint.h>

#include <nng/nng.h>

/* The largest message either side accepts: the bridge splits a full sync into messages of
 * about 1 MiB, and a batch of bindings is far smaller. */
#define IPC_PEER_RECV_MAX_BYTES ((size_t)64 << 20)

struct ipc_peer_guard {
    const char *who;       /* for the log line: "bridge", "scheduler" */
    atomic_uint refused;   /* connections closed so far */
};

/* Check every new pipe of sock (NNG_PIPE_EV_ADD_PRE; the guard must outlive sock) and bound
 * NNG_OPT_RECVMAXSZ. A pipe whose transport reports no peer uid (tcp) is let through. 0, or
 * an nng error. */
int ipc_peer_guard(nng_socket sock, struct ipc_peer_guard *guard, const char *who);

#endif
