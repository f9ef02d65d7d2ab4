/* A plugin that claims SDK ABI 2.0: the host must refuse it with a message naming both
 * versions, without calling anything in its ops table. */
#include <kcycle/kcycle.h>

/* If the host ever ran this, a test would see the pod bound by a plugin it should refuse. */
static int abi2_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)host;
    (void)args_json;
    *self = NULL;
    return 0;
}

static const kc_plugin_ops abi2_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = abi2_init,
};

/* Written out by hand: KC_PLUGIN_DESCRIPTOR_INIT would stamp this SDK's own major. */
static const kc_plugin_descriptor abi2_descriptor = {
    .struct_size = sizeof(kc_plugin_descriptor),
    .abi_major = KC_ABI_MAJOR + 1,
    .abi_minor = 0,
    .name = "abi2",
    .version = "2.0.0",
    .ops = &abi2_ops,
};

/* A future-major plugin answers whatever host asks: the check is the host's job. */
KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &abi2_descriptor;
}
