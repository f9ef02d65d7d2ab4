/* Logging: the text and JSON formats, structured fields and their quoting, and the rate limit
 * of structured lines that share a key. stderr goes to a temporary file the tests read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

static FILE *captured;

static int capture(void **state)
{
    (void)state;
    fflush(stderr);
    captured = tmpfile();
    assert_non_null(captured);
    assert_true(dup2(fileno(captured), STDERR_FILENO) >= 0);
    log_set_level(KC_LOG_DEBUG);
    return 0;
}

/* What was written since the last call (malloc'd). */
static char *written(void)
{
    fflush(stderr);
    static long start;
    long end = (long)lseek(STDERR_FILENO, 0, SEEK_CUR); /* shared with captured: a dup */
    char *text = calloc(1, (size_t)(end - start) + 1);
    assert_int_equal(pread(fileno(captured), text, (size_t)(end - start), start), end - start);
    start = end;
    return text;
}

static void text_lines_keep_their_form(void **state)
{
    (void)state;
    log_set_format("text");
    log_info("hello %d", 1);
    char *text = written();
    assert_string_equal(text, "kcycle: info: hello 1\n");
    free(text);
}

static void json_lines_are_objects_with_escaped_strings(void **state)
{
    (void)state;
    assert_int_equal(log_set_format("json"), 0);
    log_warn("a \"quoted\"\tword");
    char *text = written();
    assert_non_null(strstr(text, "\"level\":\"warning\""));
    assert_non_null(strstr(text, "\"msg\":\"a \\\"quoted\\\"\\u0009word\"}\n"));
    assert_true(strncmp(text, "{\"ts\":\"", 7) == 0);
    free(text);
    log_set_format("text");
    assert_int_equal(log_set_format("xml"), -EINVAL);
}

static void fields_are_key_value_in_text_and_members_in_json(void **state)
{
    (void)state;
    struct log_field fields[] = {
        {.key = "pod", .text = "ns/a"},
        {.key = "reason", .text = "0/3 nodes are available"},
        {.key = "node", .text = NULL}, /* left out */
        {.key = "duration_ms", .number = 1.5, .is_number = true},
    };
    log_set_format("text");
    log_fields(KC_LOG_INFO, "attempt", fields, 4, NULL);
    char *text = written();
    assert_string_equal(
        text,
        "kcycle: info: attempt pod=ns/a reason=\"0/3 nodes are available\" duration_ms=1.5\n");
    free(text);
    log_set_format("json");
    log_fields(KC_LOG_INFO, "attempt", fields, 4, NULL);
    text = written();
    assert_non_null(strstr(text, ",\"msg\":\"attempt\",\"pod\":\"ns/a\",\"reason\":\"0/3 nodes "
                                 "are available\",\"duration_ms\":1.5}\n"));
    free(text);
    log_set_format("text");
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, what)) != NULL; at++)
        n++;
    return n;
}

static void lines_with_one_key_are_rate_limited(void **state)
{
    (void)state;
    struct log_field fields[] = {{.key = "pod", .text = "ns/retried"}};
    for (int i = 0; i < 10; i++)
        log_fields(KC_LOG_INFO, "attempt", fields, 1, "ns/retried unschedulable");
    /* another key is not held back by the first one's limit */
    log_fields(KC_LOG_INFO, "attempt", fields, 1, "ns/other unschedulable");
    char *text = written();
    assert_int_equal(count(text, "attempt pod=ns/retried"), 4);
    free(text);
}

static void the_below_level_lines_are_not_written(void **state)
{
    (void)state;
    log_set_level(KC_LOG_WARN);
    log_info("not shown");
    struct log_field f = {.key = "k", .text = "v"};
    log_fields(KC_LOG_INFO, "attempt", &f, 1, NULL);
    char *text = written();
    assert_string_equal(text, "");
    free(text);
    log_set_level(KC_LOG_DEBUG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_lines_keep_their_form),
        cmocka_unit_test(json_lines_are_objects_with_escaped_strings),
        cmocka_unit_test(fields_are_key_value_in_text_and_members_in_json),
        cmocka_unit_test(lines_with_one_key_are_rate_limited),
        cmocka_unit_test(the_below_level_lines_are_not_written),
    };
    return cmocka_run_group_tests(tests, capture, NULL);
}
