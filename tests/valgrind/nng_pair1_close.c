/* Shows, without kcycle, the message libnng 1.5.2 (Debian bookworm) loses when a pair1 peer
 * closes its end while the other end sends: every message here is either taken by
 * nng_sendmsg or freed, yet memcheck reports some definitely lost (allocated in nng_msg_alloc),
 * typically a few per 30 disconnects. The bridge and the scheduler meet the same race when the
 * other one stops while they send (see docs/security.md, valgrind). Not part of any suite; run
 * by hand:
 *   cc nng_pair1_close.c -o /tmp/nng-pair1-close -lnng -lpthread
 *   valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \
 *       /tmp/nng-pair1-close ipc:///tmp/nng-pair1-close.sock */
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static atomic_bool stop;
static nng_socket server;

static void *send_all(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        nng_msg *msg;
        if (nng_msg_alloc(&msg, 500) != 0)
            break;
        if (nng_sendmsg(server, msg, 0) != 0)
            nng_msg_free(msg); /* not taken: ours to free */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "ipc:///tmp/nng-pair1-close.sock";
    if (nng_pair1_open(&server) != 0 || nng_listen(server, url, NULL, 0) != 0)
        return 1;
    nng_socket_set_ms(server, NNG_OPT_SENDTIMEO, 100);
    pthread_t sender;
    if (pthread_create(&sender, NULL, send_all, NULL) != 0)
        return 1;
    for (int i = 0; i < 30; i++) {
        nng_socket peer;
        if (nng_pair1_open(&peer) != 0)
            break;
        nng_dial(peer, url, NULL, 0);
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (2000 + (i % 7) * 500) * 1000L};
        nanosleep(&ts, NULL);
        nng_close(peer); /* mid-send, now and then */
    }
    atomic_store(&stop, true);
    pthread_join(sender, NULL);
    nng_close(server);
    return 0;
}
