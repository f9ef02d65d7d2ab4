/* A well-formed plugin whose init fails (-EINVAL after logging why), as a plugin given bad
 * args would: the host must report it naming the plugin and carry on without it when the
 * plugin is not required. */
#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "initfail"

static int initfail_init(const kc_host_api *host, const char *args_json, void **self)
{
    *self = NULL;
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    (void)args_json;
    kc_log(KC_LOG_ERROR, PLUGIN_NAME, "refusing to start: this test plugin always fails init");
    return -22; /* EINVAL, the SDK's code for bad args */
}

/* The host must never call a plugin whose init failed; if it did, every pod would be
 * rejected with this reason and the tests would see it. */
static kc_status initfail_filter(void *self, kc_cycle *cycle, const kc_pod *pod,
                                 const kc_node *node)
{
    (void)self;
    (void)pod;
    (void)node;
    kc_cycle_reject(cycle, "initfail: filter called on a plugin whose init failed");
    return KC_UNRESOLVABLE;
}

static const kc_plugin_ops initfail_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = initfail_init,
    .filter = initfail_filter,
};

static const kc_plugin_descriptor initfail_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, "1.0.0", &initfail_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &initfail_descriptor;
}
