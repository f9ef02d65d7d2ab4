/* Fuzz target for the scheduler's handling of what the bridge sends (ToScheduler over nng):
 * each frame of the input (fuzz.h) is one message, applied as bridge_client does, followed by
 * a few scheduling cycles, and the ToBridge the scheduler would answer is packed and read back.
 * One scheduler serves every input (opening one loads every plugin: too slow per input). Each
 * input starts from a fresh connection (bridge_client_feed_connect: session 0, binding ids from
 * 1, not in sync and not leader, nothing waiting for an answer), so what it does does not depend
 * on the inputs before it; after each input an empty sync deletes what the input created, so
 * inputs do not pile up, and must leave no node and no pod behind. In between, the books
 * balance (books.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.pb-c.h"
#include "books.h"
#include "bridge_client.h"
#include "fuzz.h"
#include "log.h"
#include "model.h"

#define CYCLES_PER_MESSAGE 16

static struct bridge_client client;

static void open_once(void)
{
    static int opened;
    if (opened)
        return;
    opened = 1;
    log_set_level(getenv("KCYCLE_FUZZ_LOG") != NULL ? KC_LOG_DEBUG : KC_LOG_ERROR);
    /* inproc: nothing on the machine, and a dial that never connects */
    struct bridge_client_options opt = {.url = "inproc://kcycle-fuzz-sched"};
    struct kc_error err = {{0}};
    fuzz_check(bridge_client_open(&client, &opt, &err) == 0, "bridge_client_open", err.message);
}

static size_t answered; /* bytes of ToBridge the scheduler made during this input */

/* One message; a scheduler that is not in sync or not the leader when it would schedule (after
 * the message) decides nothing: it binds no pod and parks none. */
static void feed(const uint8_t *data, size_t len)
{
    uint8_t *out = NULL;
    size_t out_len = 0;
    int rc = bridge_client_feed(&client, data, len, CYCLES_PER_MESSAGE, &out, &out_len);
    fuzz_check(rc == 0 || rc == -ENOMEM, "bridge_client_feed", "the answer does not decode");
    answered += out_len;
    if (out != NULL && !(client.synced && client.leader)) {
        Kcycle__V1__ToBridge *m = kcycle__v1__to_bridge__unpack(NULL, out_len, out);
        fuzz_check(m != NULL, "bridge_client_feed", "the answer does not decode");
        fuzz_check(m->n_bindings == 0 && m->n_unschedulable == 0 && m->n_nominations == 0 &&
                       m->n_evictions == 0,
                   "bridge_client_feed", "decisions made while not in sync or not leader");
        kcycle__v1__to_bridge__free_unpacked(m, NULL);
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_once();
    const uint8_t *frame;
    size_t len;
    answered = 0;
    /* session 0 (what an input's messages carry unless they say otherwise), bindings 1, 2, ...
     * (an input can answer them), not leader until the input says so */
    bridge_client_feed_connect(&client, 0, 0);
    fuzz_check(!client.leader && !client.synced, "bridge_client_feed_connect",
               "an input starts as leader or in sync");
    while (fuzz_next_frame(&data, &size, &frame, &len))
        feed(frame, len);
    fuzz_check_books(&client.sched);
    /* KCYCLE_FUZZ_VERBOSE (replay.c): say what the input did, to see that seeds reach the
     * scheduling cycle */
    if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "sched: %u nodes, %u pods in the cache, %zu bytes to the bridge\n",
                client.sched.cache.node_count, client.sched.cache.pods.count, answered);
    /* an empty sync: everything the input created is gone */
    static const uint8_t reset[] = {0x10, 0x01, 0x18, 0x01}; /* sync_begin, sync_end */
    feed(reset, sizeof(reset));
    fuzz_check(client.sched.cache.node_count == 0, "reset", "a node outlived an empty sync");
    fuzz_check(client.sched.cache.pods.count == 0, "reset",
               "a pod (assumed or assigned) outlived an empty sync");
    fuzz_check(client.sched.pods.count == 0, "reset", "a pending pod outlived an empty sync");
    return 0;
}
