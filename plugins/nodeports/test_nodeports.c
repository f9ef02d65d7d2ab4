/* nodeports' functions called directly on the fake host, for what no runtime does: Filter
 * without its PreFilter; and an older (1.1) host table and the descriptor's ABI check, ABI
 * tests. Every test of the plugin through its phases runs on the harness in both modes
 * (test_nodeports_harness.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_host.h"

KC_API const kc_plugin_descriptor *kc_plugin_query(uint32_t host_abi_version);

#define MAX_PORTS 4

static const kc_plugin_ops *ops;
static void *self;

static int setup(void **state)
{
    fake_host_reset();
    ops = kc_plugin_query(KC_ABI_VERSION)->ops;
    assert_int_equal(ops->init(fake_host_api(), "{}", &self), 0);
    return 0;
}

static int teardown(void **state)
{
    if (self != NULL)
        ops->fini(self);
    self = NULL;
    return 0;
}

static int group_teardown(void **state)
{
    fake_host_release();
    return 0;
}

/* "PROTO/IP/PORT" ("TCP/127.0.0.1/8080"); an empty protocol or IP is left NULL, which the host
 * reads as the API defaults (TCP, 0.0.0.0). Strings point into static storage of the table. */
static void add_ports(kc_pod *pod, const char *const *specs)
{
    static char buffers[64][64];
    static uint32_t next;
    for (uint32_t i = 0; i < MAX_PORTS && specs[i] != NULL; i++) {
        char *buf = buffers[next++ % 64];
        snprintf(buf, 64, "%s", specs[i]);
        char *ip = strchr(buf, '/');
        assert_non_null(ip);
        *ip++ = '\0';
        char *port = strchr(ip, '/');
        assert_non_null(port);
        *port++ = '\0';
        fake_pod_add_host_port(pod, ip[0] != '\0' ? ip : NULL, buf[0] != '\0' ? buf : NULL,
                               (int32_t)atoi(port));
    }
}

/* Filter without PreFilter -------------------------------------------------------------- */

static void filter_without_prefilter_state_is_an_error(void **state)
{
    kc_pod pod;
    kc_node node;
    kc_cycle cycle;
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//80", NULL});
    fake_node_init(&node, "n1");
    fake_cycle_init(&cycle);
    assert_int_equal(ops->filter(self, &cycle, &pod, &node), KC_ERROR);
    fake_cycle_clear(&cycle);
}

/* Lifecycle ------------------------------------------------------------------------------ */

static void a_host_without_host_port_accessors_is_refused(void **state)
{
    kc_host_api old = *fake_host_api();
    old.struct_size = offsetof(kc_host_api, pod_host_port_count); /* a 1.1 host */
    void *other = NULL;
    assert_int_not_equal(ops->init(&old, "{}", &other), 0);
    assert_null(other);
    assert_non_null(strstr(fake_host.last_log, "SDK 1.2"));
    /* the SDK's inline accessors answer "no ports" there, never a wild read */
    kc_plugin_attach(&old);
    kc_pod pod;
    fake_pod_init(&pod, "default", "p");
    add_ports(&pod, (const char *const[]){"TCP//1", NULL});
    assert_int_equal(kc_pod_host_port_count(&pod), 0);
    kc_host_port hp = {.struct_size = sizeof(hp)};
    assert_int_equal(kc_pod_host_port_at(&pod, 0, &hp), -1);
    kc_plugin_attach(fake_host_api());
}

static void query_refuses_other_abi_major(void **state)
{
    assert_null(kc_plugin_query(KC_ABI_MAKE(KC_ABI_MAJOR + 1, 0)));
    const kc_plugin_descriptor *d = kc_plugin_query(KC_ABI_VERSION);
    assert_string_equal(d->name, "nodeports");
    assert_int_equal(d->abi_minor, KC_ABI_MINOR);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TEST(filter_without_prefilter_state_is_an_error),
        TEST(a_host_without_host_port_accessors_is_refused),
        TEST(query_refuses_other_abi_major),
    };
    return cmocka_run_group_tests(tests, NULL, group_teardown);
}
