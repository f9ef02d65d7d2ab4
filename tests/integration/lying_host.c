/* A plugin host that lies: it serves requests like kcycle-plugin-host, then changes every
 * successful evaluation it answers as LYING_HOST_MODE says:
 *   beyond (default)  adds a node the request did not ask about to the feasible nodes;
 *   no-rejectors      drops the per-node verdicts (node_rejectors) the request asked for;
 *   bad-plugin        gives every node a verdict naming a plugin the host does not have;
 *   high-bits         gives every node a verdict with bits no verdict may carry;
 *   no-feasible       lists no feasible node while its verdicts reject none;
 *   what-if-nameless  refuses every node of a what-if (preemption) without naming a plugin;
 *   what-if-skip      answers every node of a what-if Skip (no Filter verdict), naming its
 *                     plugin;
 *   what-if-wait      the same with Wait.
 * The scheduler must take each as a protocol error (test_isolation.py runs it through
 * KCYCLE_PLUGIN_HOST). Modes for a group's answer (EvaluateGroup), its evaluations left honest:
 *   group-short       answers one member fewer than asked (a protocol error);
 *   group-far         places the first placed member on a node out of range (a protocol error);
 *   group-picked-far  says the first member's pick is a node out of range (the scheduler
 *                     drops the group's answer; the members go one by one). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "host.h"
#include "plugin.pb-c.h"

/* The evaluation changed as `mode` says (scores are left as they are: the scheduler must
 * refuse the reply before it looks at them). */
static int lie(uint8_t **reply, size_t *len, uint32_t beyond, const char *mode)
{
    if (strncmp(mode, "what-if", 7) == 0 || strncmp(mode, "group-", 6) == 0)
        return 0; /* honest evaluations: lie_what_if */
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, *len, *reply);
    if (r == NULL || r->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE ||
        r->evaluate->status != 0) {
        if (r != NULL)
            kcycle__v1__reply__free_unpacked(r, NULL);
        return 0;
    }
    Kcycle__V1__EvaluateReply *e = r->evaluate;
    uint32_t *old = e->feasible;
    size_t old_count = e->n_feasible, old_rejectors = e->n_node_rejectors;
    uint32_t *feasible = calloc(e->n_feasible + 1, sizeof(*feasible));
    if (feasible == NULL)
        abort();
    if (strcmp(mode, "beyond") == 0) {
        memcpy(feasible, e->feasible, e->n_feasible * sizeof(*feasible));
        feasible[e->n_feasible] = beyond;
        e->feasible = feasible;
        e->n_feasible++;
    } else if (strcmp(mode, "no-rejectors") == 0) {
        e->n_node_rejectors = 0;
    } else if (strcmp(mode, "no-feasible") == 0) {
        e->n_feasible = 0;
        for (size_t i = 0; i < e->n_node_rejectors; i++)
            e->node_rejectors[i] = 0;
    } else {
        uint32_t value = strcmp(mode, "bad-plugin") == 0 ? 0xffu : 0x400u;
        for (size_t i = 0; i < e->n_node_rejectors; i++)
            e->node_rejectors[i] = value;
    }
    size_t size = kcycle__v1__reply__get_packed_size(r);
    uint8_t *out = malloc(size + 1);
    if (out == NULL)
        abort();
    *len = kcycle__v1__reply__pack(r, out);
    free(*reply);
    *reply = out;
    e->feasible = old;
    e->n_feasible = old_count;
    e->n_node_rejectors = old_rejectors;
    free(feasible);
    kcycle__v1__reply__free_unpacked(r, NULL);
    return 1;
}

/* A what-if answered as mode says (what-if-*); other replies are left alone. */
static void lie_what_if(uint8_t **reply, size_t *len, const char *mode)
{
    int32_t status = 1; /* KC_UNSCHEDULABLE */
    uint32_t plugin = 0;
    if (strcmp(mode, "what-if-skip") == 0 || strcmp(mode, "what-if-wait") == 0) {
        status = mode[8] == 's' ? 4 : 3; /* KC_SKIP, KC_WAIT */
        plugin = 1;
    } else if (strcmp(mode, "what-if-nameless") != 0) {
        return;
    }
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, *len, *reply);
    if (r == NULL || r->result_case != KCYCLE__V1__REPLY__RESULT_WHAT_IF) {
        if (r != NULL)
            kcycle__v1__reply__free_unpacked(r, NULL);
        return;
    }
    for (size_t i = 0; i < r->what_if->n_verdicts; i++) {
        r->what_if->verdicts[i]->status = status;
        r->what_if->verdicts[i]->plugin = plugin;
    }
    size_t size = kcycle__v1__reply__get_packed_size(r);
    uint8_t *out = malloc(size + 1);
    if (out == NULL)
        abort();
    *len = kcycle__v1__reply__pack(r, out);
    free(*reply);
    *reply = out;
    kcycle__v1__reply__free_unpacked(r, NULL);
}

/* A group's answer changed as mode says (group-*); other replies are left alone. */
static void lie_group(uint8_t **reply, size_t *len, const char *mode)
{
    if (strncmp(mode, "group-", 6) != 0)
        return;
    Kcycle__V1__Reply *r = kcycle__v1__reply__unpack(NULL, *len, *reply);
    if (r == NULL || r->result_case != KCYCLE__V1__REPLY__RESULT_EVALUATE_GROUP ||
        r->evaluate_group->n_members == 0) {
        if (r != NULL)
            kcycle__v1__reply__free_unpacked(r, NULL);
        return;
    }
    Kcycle__V1__EvaluateGroupReply *g = r->evaluate_group;
    size_t members = g->n_members;
    int32_t chosen = 0;
    size_t placed = 0;
    while (placed < g->n_chosen && g->chosen[placed] < 0)
        placed++;
    if (strcmp(mode, "group-short") == 0) {
        g->n_members--;
    } else if (strcmp(mode, "group-far") == 0 && placed < g->n_chosen) {
        chosen = g->chosen[placed];
        g->chosen[placed] = 1 << 20;
    } else if (strcmp(mode, "group-picked-far") == 0) {
        g->members[0]->picked = true;
        g->members[0]->n_feasible = 0;
        g->members[0]->n_scores = 0;
        g->members[0]->found = 1;
        g->members[0]->chosen = 1u << 20;
    }
    size_t size = kcycle__v1__reply__get_packed_size(r);
    uint8_t *out = malloc(size + 1);
    if (out == NULL)
        abort();
    *len = kcycle__v1__reply__pack(r, out);
    free(*reply);
    *reply = out;
    g->n_members = members; /* what the free walks */
    if (strcmp(mode, "group-far") == 0 && placed < g->n_chosen)
        g->chosen[placed] = chosen;
    kcycle__v1__reply__free_unpacked(r, NULL);
}

int main(void)
{
    struct plugin_host_options opts = {0};
    struct plugin_host *host;
    struct kc_error err = {{0}};
    if (plugin_host_open(&opts, &host, &err) < 0)
        return 1;
    const char *mode = getenv("LYING_HOST_MODE");
    if (mode == NULL || mode[0] == '\0')
        mode = "beyond";
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
        lie(&reply, &reply_len, beyond, mode);
        lie_what_if(&reply, &reply_len, mode);
        lie_group(&reply, &reply_len, mode);
        int rc = channel_send(&c, reply, reply_len, -1);
        free(reply);
        if (rc < 0)
            break;
    }
    channel_close(&c);
    plugin_host_close(host);
    return 0;
}
