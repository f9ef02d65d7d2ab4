/* kube_url_encode (query values) and kube_status_text (Status bodies for logs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kube.h"

static void the_scheduler_field_selector_is_percent_encoded(void **state)
{
    char out[128];
    const char *selector = "status.phase!=Succeeded,status.phase!=Failed";
    const char *want = "status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
    assert_int_equal(kube_url_encode(out, sizeof(out), selector), strlen(want));
    assert_string_equal(out, want);
}

static void unreserved_characters_stay_and_the_rest_is_encoded(void **state)
{
    char out[128];
    kube_url_encode(out, sizeof(out), "AZaz09-._~ /?&=+%\xc3\xa9");
    assert_string_equal(out, "AZaz09-._~%20%2F%3F%26%3D%2B%25%C3%A9");
}

static void a_short_buffer_gets_whole_characters_and_the_needed_length(void **state)
{
    char out[6];
    /* "a%21b" needs 5 + NUL: fits exactly */
    assert_int_equal(kube_url_encode(out, sizeof(out), "a!b"), 5);
    assert_string_equal(out, "a%21b");
    /* "ab%21" would need 6 + NUL: the %21 does not fit and is not cut in half */
    assert_int_equal(kube_url_encode(out, sizeof(out), "abc!"), 6);
    assert_string_equal(out, "abc");
    assert_int_equal(kube_url_encode(NULL, 0, "!!"), 6);
    assert_int_equal(kube_url_encode(out, sizeof(out), ""), 0);
    assert_string_equal(out, "");
}

static void status_text_has_reason_and_message(void **state)
{
    char out[128];
    kube_status_text("{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"too old resource "
                     "version: 5 (100)\",\"reason\":\"Expired\",\"code\":410}",
                     out, sizeof(out));
    assert_string_equal(out, "Expired: too old resource version: 5 (100)");
    kube_status_text("{\"kind\":\"Status\",\"message\":\"only a message\"}", out, sizeof(out));
    assert_string_equal(out, "only a message");
    kube_status_text("{\"kind\":\"Status\",\"reason\":\"Forbidden\"}", out, sizeof(out));
    assert_string_equal(out, "Forbidden");
}

static void status_text_is_empty_for_other_bodies(void **state)
{
    char out[16] = "x";
    kube_status_text("<html>bad gateway</html>", out, sizeof(out));
    assert_string_equal(out, "");
    kube_status_text(NULL, out, sizeof(out));
    assert_string_equal(out, "");
    kube_status_text("{\"kind\":\"Status\",\"code\":500}", out, sizeof(out));
    assert_string_equal(out, "");
    kube_status_text("{\"reason\":\"AVeryLongReasonThatIsCut\"}", out, sizeof(out));
    assert_string_equal(out, "AVeryLongReason");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_scheduler_field_selector_is_percent_encoded),
        cmocka_unit_test(unreserved_characters_stay_and_the_rest_is_encoded),
        cmocka_unit_test(a_short_buffer_gets_whole_characters_and_the_needed_length),
        cmocka_unit_test(status_text_has_reason_and_message),
        cmocka_unit_test(status_text_is_empty_for_other_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
