/* prioritysort: kube-scheduler's PrioritySort QueueSort, made total so the order of the
 * active queue never depends on insertion order or heap layout. */
#include <string.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

#define PLUGIN_NAME "prioritysort"

/* Absent strings sort as "", so a pod without a namespace still has a place. */
static int compare_strings(const char *a, const char *b)
{
    return strcmp(a != NULL ? a : "", b != NULL ? b : "");
}

static int compare_int64(int64_t a, int64_t b)
{
    return (a > b) - (a < b);
}

static int prioritysort_init(const kc_host_api *host, const char *args_json, void **self)
{
    (void)args_json; /* no args */
    int rc = kc_plugin_attach(host);
    if (rc != 0)
        return rc;
    *self = NULL;
    return 0;
}

/* Negative when a goes first. Namespace/name is unique per pod, which makes the order
 * total; identical keys (the same pod) compare equal. */
static int compare_pods(const kc_pod *a, const kc_pod *b)
{
    int32_t priority_a = kc_pod_priority(a);
    int32_t priority_b = kc_pod_priority(b);
    if (priority_a != priority_b)
        return priority_a > priority_b ? -1 : 1;
    int order = compare_int64(kc_pod_enqueue_ms(a), kc_pod_enqueue_ms(b));
    if (order != 0)
        return order;
    order = compare_int64(kc_pod_creation_ms(a), kc_pod_creation_ms(b));
    if (order != 0)
        return order;
    order = compare_strings(kc_pod_namespace(a), kc_pod_namespace(b));
    if (order != 0)
        return order;
    return compare_strings(kc_pod_name(a), kc_pod_name(b));
}

static int prioritysort_queue_less(void *self, const kc_pod *a, const kc_pod *b)
{
    (void)self;
    return compare_pods(a, b) < 0;
}

static const kc_plugin_ops prioritysort_ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = prioritysort_init,
    .queue_less = prioritysort_queue_less,
};

static const kc_plugin_descriptor prioritysort_descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT(PLUGIN_NAME, KC_VERSION_STRING, &prioritysort_ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &prioritysort_descriptor;
}
