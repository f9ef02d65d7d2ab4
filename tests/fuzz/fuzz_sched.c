/* Fuzz target for the scheduler's handling of what the bridge sends (ToScheduler over nng):
 * each frame of the input (fuzz.h) is one message, applied as bridge_client does, followed by
 * a few scheduling cycles, and the ToBridge the scheduler would answer is packed and read back.
 * One scheduler serves every input (opening one loads every plugin: too slow per input); after
 * each input an empty sync deletes what the input created, so inputs do not pile up, and must
 * leave no node and no pod behind. In between, the cache's books balance: what a node counts
 * as requested is the sum of the pods it holds. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge.pb-c.h"
#include "bridge_client.h"
#include "fuzz.h"
#include "cache.h"
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

/* The cache's books balance: what a node counts as requested is the sum of its pods'
 * requests, and each of those pods names the node. */
static void check_cache(void)
{
    const struct cache *c = &client.sched.cache;
    for (uint32_t i = 0; i < c->node_count; i++) {
        const struct cache_node *n = &c->nodes[i];
        int64_t sum[KC_RESOURCE_MAX] = {0};
        for (uint32_t p = 0; p < n->pod_count; p++) {
            const struct cache_pod *cp = n->pods[p];
            fuzz_check(cp->node_name != NULL && strcmp(cp->node_name, n->node->name) == 0,
                       "cache", "a pod counted on another node than its own");
            for (uint32_t r = 0; r < cp->request.count; r++) {
                int64_t *to = &sum[cp->request.items[r].id];
                if (__builtin_add_overflow(*to, cp->request.items[r].value, to))
                    return; /* wrapped: the comparison below means nothing */
            }
        }
        for (uint32_t r = 0; r < KC_RESOURCE_MAX; r++)
            fuzz_check(sum[r] == n->requested[r], "cache",
                       "a node's requested total is not the sum of its pods");
    }
}

static size_t answered; /* bytes of ToBridge the scheduler made during this input */

static void feed(const uint8_t *data, size_t len)
{
    client.session = 0;
    size_t out_len = 0;
    int rc = bridge_client_feed(&client, data, len, CYCLES_PER_MESSAGE, NULL, &out_len);
    fuzz_check(rc == 0 || rc == -ENOMEM, "bridge_client_feed", "the answer does not decode");
    answered += out_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    open_once();
    const uint8_t *frame;
    size_t len;
    answered = 0;
    client.next_bind_id = 0; /* bindings 1, 2, ...: an input can answer them */
    while (fuzz_next_frame(&data, &size, &frame, &len))
        feed(frame, len);
    check_cache();
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
