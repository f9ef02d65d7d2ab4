/* A test plugin that misbehaves on purpose, as args ask, to prove the runtime survives it:
 *   {"crash_in_filter_after": N}  abort() on the Nth Filter call (0: never)
 *   {"segfault_in_filter_after": N}  write through a null pointer on the Nth Filter call
 *   {"hang_in_score_after": N}    block forever in the Nth Score call
 *   {"crash_in_init": true}       abort() in init
 *   {"leak_per_call": N}          leak N bytes on every Filter call
 *   {"garbage_status": true}      Filter returns a status that does not exist
 *   {"escape_write": true}        PreBind writes a claim whose name climbs out of its path
 *                                 ("../../../api/v1/namespaces/kube-system/secrets/x"): the
 *                                 bridge must refuse the binding and send nothing
 * Otherwise it passes every node and scores it 50. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kcycle/kcycle.h>

KC_PLUGIN_DEFINE_HOST;

struct misbehave {
    long crash_in_filter_after;
    long segfault_in_filter_after;
    long hang_in_score_after;
    long leak_per_call;
    int garbage_status;
    int escape_write;
    _Atomic long filter_calls;
    _Atomic long score_calls;
};

/* Test-only args reader: the number after "key": (true counts as 1). */
static long arg(const char *json, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\"", key);
    const char *p = strstr(json, pattern);
    if (p == NULL)
        return 0;
    p += strlen(pattern);
    while (*p == ' ' || *p == ':')
        p++;
    return strncmp(p, "true", 4) == 0 ? 1 : strtol(p, NULL, 10);
}

static int init(const kc_host_api *host, const char *args, void **self)
{
    if (kc_plugin_attach(host) != 0)
        return -22;
    if (arg(args, "crash_in_init"))
        abort();
    struct misbehave *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return -12;
    m->crash_in_filter_after = arg(args, "crash_in_filter_after");
    m->segfault_in_filter_after = arg(args, "segfault_in_filter_after");
    m->hang_in_score_after = arg(args, "hang_in_score_after");
    m->leak_per_call = arg(args, "leak_per_call");
    m->garbage_status = (int)arg(args, "garbage_status");
    m->escape_write = (int)arg(args, "escape_write");
    if (m->escape_write && !KC_HOST_HAS(host, cycle_write_object)) {
        free(m);
        return -95; /* EOPNOTSUPP: a host before 1.2 cannot write objects */
    }
    *self = m;
    return 0;
}

static void fini(void *self)
{
    free(self);
}

/* A real fault: the sanitizers' checks of this store are off, so a sanitized build faults as
 * a plain one does instead of reporting the null store itself. */
#if defined(__GNUC__)
__attribute__((no_sanitize("undefined", "address")))
#endif
static void write_through_null(void)
{
    volatile int *nowhere = NULL;
    *nowhere = 1;
}

static kc_status filter(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct misbehave *m = self;
    long calls = atomic_fetch_add(&m->filter_calls, 1) + 1;
    if (m->crash_in_filter_after > 0 && calls == m->crash_in_filter_after)
        abort();
    if (m->segfault_in_filter_after > 0 && calls == m->segfault_in_filter_after)
        write_through_null();
    if (m->leak_per_call > 0) {
        volatile char *leak = malloc((size_t)m->leak_per_call);
        if (leak != NULL)
            leak[0] = 1;
    }
    if (m->garbage_status)
        return (kc_status)77;
    return KC_SUCCESS;
}

static kc_status score(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node,
                       int64_t *out)
{
    struct misbehave *m = self;
    long calls = atomic_fetch_add(&m->score_calls, 1) + 1;
    if (m->hang_in_score_after > 0 && calls >= m->hang_in_score_after)
        for (;;)
            pause();
    *out = 50;
    return KC_SUCCESS;
}

static kc_status pre_bind(void *self, kc_cycle *cycle, const kc_pod *pod, const kc_node *node)
{
    struct misbehave *m = self;
    if (m->escape_write &&
        kc_cycle_write_object(cycle, "PersistentVolumeClaim", kc_pod_namespace(pod),
                              "../../../api/v1/namespaces/kube-system/secrets/x", "{}") != 0)
        return KC_ERROR;
    return KC_SUCCESS;
}

static const kc_plugin_ops ops = {
    .struct_size = sizeof(kc_plugin_ops),
    .init = init,
    .fini = fini,
    .filter = filter,
    .score = score,
    .pre_bind = pre_bind,
};

static const kc_plugin_descriptor descriptor =
    KC_PLUGIN_DESCRIPTOR_INIT("misbehave", "1.0.0", &ops);

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version)
{
    if (KC_ABI_VERSION_MAJOR(host_abi_version) != KC_ABI_MAJOR)
        return NULL;
    return &descriptor;
}
