/* defaultbinder: kube-scheduler's DefaultBinder. Binds through the runtime's binder (the API
 * server's Binding subresource, or the simulator), carrying the cycle's binding annotations. */
#include <stdio.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "defaultbinder"

static int defaultbinder_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    *self = NULL;
    return 0;
}

static const char *or_empty(const char *text)
{
    return text != NULL ? text : "";
}

/* A failed bind is an error, not a rejection: the runtime unreserves and retries the pod
 * with backoff, as kube-scheduler does. The log line names the pod and node for operators. */
static kc_status defaultbinder_bind(void *self, kc_cycle *cycle, const kc_pod *pod,
                                    const kc_node *node)
{
    (void)self;
    int rc = kc_bind(cycle, pod, node);
    if (rc == 0)
        return KC_SUCCESS;
    char message[512];
    snprintf(message, sizeof(message), "binding pod %s/%s to node %s failed (error %d)",
             or_empty(kc_pod_namespace(pod)), or_empty(kc_pod_name(pod)),
             or_empty(kc_node_name(node)), rc);
    kc_log(KC_LOG_WARN, PLUGIN_NAME, message);
    return KC_ERROR;
}

static const kc_plugin_ops defaultbinder_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = defaultbinder_init,
    .bind = defaultbinder_bind,
};

static const kc_plugin_descriptor defaultbinder_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &defaultbinder_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &defaultbinder_descriptor;
}
