/* Fuzz target for the plugin host's handling of requests (kcycle.v1.Request, what a scheduler
 * sends over the socketpair): each frame of the input (fuzz.h) is one request to one host,
 * which starts empty for every input. The host's promise (runtime/plugin-host/host.h): every
 * request gets a reply that decodes, answers the request's id, says what was wrong with a
 * request that does not decode, and, when it has no error, holds one reply per call of a
 * batch and one valid verdict per node of a what-if.
 *
 * Each input loads and unloads the plugins its hello names. libFuzzer cannot follow
 * instrumented code unloaded under it, so ./dev.sh fuzz points KCYCLE_PLUGIN_DIR at the
 * plugins of the ordinary build for this target (README.md). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/status.h>

#include "fuzz.h"
#include "host.h"
#include "log.h"
#include "plugin.pb-c.h"

static void check_reply(const uint8_t *request, size_t len, const uint8_t *reply, size_t reply_len)
{
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, reply_len, reply);
    fuzz_check(r != NULL, "plugin_host_handle", "a reply that does not decode");
    Kcycle__V1__Request *q = kcycle__v1__request__unpack(NULL, len, request);
    if (q == NULL)
        fuzz_check(r->error != NULL && r->error[0] != '\0', "plugin_host_handle",
                   "a request that does not decode answered without an error");
    else
        fuzz_check(r->id == q->id, "plugin_host_handle", "a reply to another request id");
    /* a batch is answered phase call by phase call, unless the request as a whole failed */
    if (q != NULL && (r->error == NULL || r->error[0] == '\0'))
        fuzz_check(r->n_batch == q->n_batch, "plugin_host_handle",
                   "a batch answered with another number of replies");
    /* the test harness's calls (a queue call, PostFilter's choice) are answered in kind, and a
     * preemption is reported only by a harness host for a PostFilter call */
    if (q != NULL && (r->error == NULL || r->error[0] == '\0') &&
        q->call_case == KCYCLE__V1__REQUEST__CALL_QUEUE)
        fuzz_check(r->result_case == KCYCLE__V1__REPLY__RESULT_QUEUE, "plugin_host_handle",
                   "a queue call answered with something else");
    if (r->result_case == KCYCLE__V1__REPLY__RESULT_PHASE && r->phase->preempted)
        fuzz_check(q != NULL && q->call_case == KCYCLE__V1__REQUEST__CALL_PHASE &&
                       q->phase->phase == KCYCLE__V1__PHASE__PHASE_POST_FILTER,
                   "plugin_host_handle", "a preemption reported outside PostFilter");
    /* preemption's what-if: one verdict per node asked, each a known status, naming the
     * refusing plugin exactly when it refuses (the scheduler refuses any other answer) */
    if (q != NULL && (r->error == NULL || r->error[0] == '\0') &&
        q->call_case == KCYCLE__V1__REQUEST__CALL_WHAT_IF) {
        fuzz_check(r->result_case == KCYCLE__V1__REPLY__RESULT_WHAT_IF &&
                       r->what_if->n_verdicts == q->what_if->n_nodes,
                   "plugin_host_handle", "a what-if answered without one verdict per node");
        for (size_t i = 0; i < r->what_if->n_verdicts; i++) {
            const Kcycle__V1__WhatIfVerdict *v = r->what_if->verdicts[i];
            fuzz_check(v->status >= 0 && v->status <= KC_STATUS_MAX &&
                           (v->status == KC_SUCCESS) == (v->plugin == 0),
                       "plugin_host_handle", "a what-if verdict the scheduler would refuse");
        }
    }
    if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "host: request %llu: reply %d%s%s\n",
                q != NULL ? (unsigned long long)q->id : 0ull, (int)r->result_case,
                r->error[0] != '\0' ? ", error: " : "", r->error);
    if (q != NULL)
        kcycle__v1__request__free_unpacked(q, NULL);
    kcycle__v1__reply__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int quiet;
    if (!quiet) {
        log_set_level(KC_LOG_ERROR);
        quiet = 1;
    }
    struct plugin_host_options opts = {.fd = 0};
    struct plugin_host *host;
    struct kc_error err = {{0}};
    fuzz_check(plugin_host_open(&opts, &host, &err) == 0, "plugin_host_open", err.message);
    const uint8_t *frame;
    size_t len;
    while (fuzz_next_frame(&data, &size, &frame, &len)) {
        uint8_t *reply = NULL;
        size_t reply_len = 0;
        int rc = plugin_host_handle(host, frame, len, &reply, &reply_len);
        fuzz_check(rc == 0 || rc == -ENOMEM, "plugin_host_handle", "an undocumented failure");
        fuzz_check((rc == 0) == (reply != NULL), "plugin_host_handle", "reply and code disagree");
        if (rc == 0)
            check_reply(frame, len, reply, reply_len);
        free(reply);
    }
    plugin_host_close(host);
    return 0;
}
