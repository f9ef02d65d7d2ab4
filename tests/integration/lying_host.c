/* A plugin host that lies: it serves requests like kcycle-plugin-host, then adds a node the
 * request did not ask about to every evaluation it answers. The scheduler must take that as a
 * protocol error (test_isolation.py runs it through KCYCLE_PLUGIN_HOST). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "host.h"
#include "plugin.pb-c.h"

/* The evaluation with one more feasible node, beyond (scores are left as they are: the
 * scheduler must refuse the reply before it looks at them). */
static int lie(uint8_t **reply, size_t *len, uint32_t beyond)
{
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, *len, *reply);
    if (r == NULL || r->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE ||
        r->evaluate->status != 0) {
        if (r != NULL)
            kcycle__v1__reply__free_unpacked(r, NULL);
        return 0;
    }
    Kcycle__V1__EvaluateReply *e = r->evaluate;
    uint32_t *feasible = calloc(e->n_feasible + 1, sizeof(*feasible));
    memcpy(feasible, e->feasible, e->n_feasible * sizeof(*feasible));
    feasible[e->n_feasible] = beyond;
    uint32_t *old = e->feasible;
    e->feasible = feasible;
    e->n_feasible++;
    size_t size = kcycle__v1__reply__get_packed_size(r);
    uint8_t *out = malloc(size + 1);
    *len = kcycle__v1__reply__pack(r, out);
    free(*reply);
    *reply = out;
    e->feasible = old;
    e->n_feasible--;
    free(feasible);
    kcycle__v1__reply__free_unpacked(r, NULL);
    return 1;
}

int main(void)
{
    struct plugin_host_options opts = {0};
    struct plugin_host *host;
    struct kc_error err = {{0}};
    if (plugin_host_open(&opts, &host, &err) < 0)
        return 1;
    struct channel c;
    channel_init(&c, CHANNEL_HOST_FD);
    for (;;) {
        const uint8_t *request;
        size_t len;
        if (channel_recv(&c, CHANNEL_REQUEST_MAX_BYTES, -1, &request, &len) < 0)
            break;
        Kcycle__V1__Request *req = kcycle__v1__request__unpack(NULL, len, request);
        /* the first node that is not a candidate; past any cluster of the test when every
         * node is one */
        uint32_t beyond = 1u << 20;
        if (req != NULL && req->call_case == KCYCLE__V1__REQUEST__CALL_EVALUATE &&
            req->evaluate->n_candidates > 0) {
            for (uint32_t node = 0; beyond == 1u << 20; node++) {
                bool candidate = false;
                for (size_t k = 0; k < req->evaluate->n_candidates && !candidate; k++)
                    candidate = req->evaluate->candidates[k] == node;
                if (!candidate)
                    beyond = node;
            }
        }
        if (req != NULL)
            kcycle__v1__request__free_unpacked(req, NULL);
        uint8_t *reply;
        size_t reply_len;
        if (plugin_host_handle(host, request, len, &reply, &reply_len) < 0)
            break;
        lie(&reply, &reply_len, beyond);
        int rc = channel_send(&c, reply, reply_len, -1);
        free(reply);
        if (rc < 0)
            break;
    }
    channel_close(&c);
    plugin_host_close(host);
    return 0;
}
