/* A test plugin for hot reload, built twice with different version strings
 * (-DVERSIONED_VERSION). Score prefers the nodes whose name starts with args "prefer" (100,
 * else 0). It keeps state from cluster events: Filter rejects every node while it has heard of
 * no node, so a generation that was not told the cluster before serving fails pods. With args
 * "hold", init waits (up to 60 s) until that file exists: a test replaces the plugin's file
 * while it is being loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kcycle/kcycle.h>

#ifndef VERSIONED_VERSION
#define VERSIONED_VERSION "1.0.0"
#endif

KC_PLUGIN_DEFINE_HOST;

struct versioned {
    char prefer[64];
    long nodes; /* nodes heard of through on_event */
};

static int init(const kc_host_api *host, const char *args, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -22;
#ifdef VERSIONED_INIT_FAILS /* a build whose init fails, as a bad new version would */
    kc_log(KC_LOG_ERROR, "versioned", "init refused on purpose (VERSIONED_INIT_FAILS)");
    return -22;
#endif
    struct versioned *v = calloc(1, sizeof(*v));
    if (v == NULL)
        return -12;
    const char *p = strstr(args, "\"prefer\"");
    if (p != NULL && (p = strchr(p + 8, '"')) != NULL) {
        size_t n = strcspn(p + 1, "\"");
        snprintf(v->prefer, sizeof(v->prefer), "%.*s", (int)n, p + 1);
    }
    if ((p = strstr(args, "\"hold\"")) != NULL && (p = strchr(p + 6, '"')) != NULL) {
        char hold[512];
        snprintf(hold, sizeof(hold), "%.*s", (int)strcspn(p + 1, "\""), p + 1);
        char line[600];
        snprintf(line, sizeof(line), "init holds until %s exists", hold);
        kc_log(KC_LOG_INFO, "versioned", line);
        for (int i = 0; i < 6000 && access(hold, F_OK) != 0; i++)
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
    *self = v;
    return 0;
}

static void fini(void *self)
{
    free(self);
}

static void on_event(void *self, const kc_event *event)
{
    struct versioned *v = self;
    if (event->type == KC_EVENT_NODE_ADD)
        v->nodes++;
    else if (event->type == KC_EVENT_NODE_DELETE)
        v->nodes--;
}

static kc_status filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct versioned *v = self;
    if (v->nodes > 0)
        return KC_SUCCESS;
    kc_cycle_reject(cycle, "versioned " VERSIONED_VERSION " heard of no node");
    return KC_UNSCHEDULABLE;
}

static kc_status score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                       int64_t *score)
{
    const struct versioned *v = self;
    size_t n = strlen(v->prefer);
    *score = n > 0 && strncmp(kc_node_name(node), v->prefer, n) == 0 ? 100 : 0;
    return KC_SUCCESS;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = init,
    .fini = fini,
    .filter = filter,
    .score = score,
    .on_event = on_event,
};

static const kc_plugin_descriptor descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT("versioned", VERSIONED_VERSION, &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &descriptor;
}
