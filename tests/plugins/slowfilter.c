/* A Filter plugin that takes its time: each Filter call sleeps `sleep_us` microseconds (its
 * args, {"sleep_us": N}) and lets the node through. The plugin-host tests use it to make one
 * evaluation cost a known share of the plugin timeout, so a request that carries many
 * evaluations (a group's members) must be sized to fit the deadline. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kcycle/kcycle.h>

struct slowfilter {
    long sleep_us;
};

static int slowfilter_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)host;
    struct slowfilter *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -12;
    const char *at = args_json != NULL ? strstr(args_json, "\"sleep_us\"") : NULL;
    if (at != NULL && (at = strchr(at, ':')) != NULL)
        p->sleep_us = strtol(at + 1, NULL, 10);
    *self = p;
    return 0;
}

static void slowfilter_fini(void *self)
{
    free(self);
}

static kc_status slowfilter_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                   const kc_node *node)
{
    const struct slowfilter *p = self;
    (void)cycle;
    (void)pod;
    (void)node;
    struct timespec ts = {p->sleep_us / 1000000, (p->sleep_us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0)
        ;
    return KC_SUCCESS;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = slowfilter_init,
    .fini = slowfilter_fini,
    .filter = slowfilter_filter,
};

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    static const kc_plugin_descriptor descriptor =
        KC_PLUGIN_DESCRIPTOR_INIT("slowfilter", "1.0.0", &ops);
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &descriptor;
}
