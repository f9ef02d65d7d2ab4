/* A plugin built against a newer minor of the SDK than the host serves (1.(N+1) on a 1.N
 * host): it may read host-table members the host does not have, so it must be refused. */
#include <kcycle/kcycle.h>

static int newerminor_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)host;
    (void)args_json;
    *self = NULL;
    return 0;
}

static const kc_plugin_ops newerminor_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = newerminor_init,
};

static const kc_plugin_descriptor newerminor_descriptor = {
    .struct_size = sizeof(kc_plugin_descriptor),
    .abi_major = KC_ABI_MAJOR,
    .abi_minor = KC_ABI_MINOR + 1,
    .name = "newerminor",
    .version = "1.0.0",
    .ops = &newerminor_ops,
};

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    (void)host_abi_version;
    return &newerminor_descriptor;
}
