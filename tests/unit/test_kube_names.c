/* kube_check_name: namespaces and object names checked before they go into an API path. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include "kube.h"

static bool name_ok(const char *value)
{
    char why[256];
    return kube_check_name("name", value, false, why, sizeof(why)) == 0;
}

static bool namespace_ok(const char *value)
{
    char why[256];
    return kube_check_name("namespace", value, true, why, sizeof(why)) == 0;
}

static void kubernetes_names_pass(void **state)
{
    (void)state;
    assert_true(name_ok("web-0"));
    assert_true(name_ok("pvc-1.example.com"));
    assert_true(name_ok("0"));
    assert_true(namespace_ok("default"));
    assert_true(namespace_ok("kube-system"));
    char longest[254];
    /* 253 bytes: labels of 63 joined by dots */
    memset(longest, 'a', 253);
    longest[63] = longest[127] = longest[191] = '.';
    longest[253] = '\0';
    assert_true(name_ok(longest));
}

static void path_breaking_names_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "../../../api/v1/namespaces/kube-system/secrets/x", "a/b", "a%2Fb",
                         "a?watch=1", "a#frag", "..", "a..b", ".a", "a.", "-a", "a-", "Web",
                         "a b", "a\nb", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(name_ok(bad[i]));
        assert_false(namespace_ok(bad[i]));
    }
    assert_false(name_ok(NULL));
    char toolong[256];
    memset(toolong, 'a', 254);
    toolong[63] = toolong[127] = toolong[191] = '.';
    toolong[254] = '\0';
    assert_false(name_ok(toolong));
    /* a namespace is one label: no dots, at most 63 */
    assert_false(namespace_ok("a.b"));
    memset(toolong, 'a', 64);
    toolong[64] = '\0';
    assert_false(namespace_ok(toolong));
    toolong[63] = '\0';
    assert_true(namespace_ok(toolong));
}

static void the_message_names_what_and_the_value(void **state)
{
    (void)state;
    char why[256];
    assert_int_equal(kube_check_name("namespace", "a/b", true, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "namespace \"a/b\""));
    assert_non_null(strstr(why, "DNS-1123 label"));
    assert_int_equal(kube_check_name("name", "x\ny", false, why, sizeof(why)), -EINVAL);
    assert_non_null(strstr(why, "name \"x?y\"")); /* a control character is not copied */
    assert_int_equal(kube_check_name("name", "", false, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "name is empty");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kubernetes_names_pass),
        cmocka_unit_test(path_breaking_names_are_refused),
        cmocka_unit_test(the_message_names_what_and_the_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
