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
#include <jansson.h>

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
    log_fields(KC_LOG_INFO, "attempt", fields, 4, NULL, NULL);
    char *text = written();
    assert_string_equal(
        text,
        "kcycle: info: attempt pod=ns/a reason=\"0/3 nodes are available\" duration_ms=1.5\n");
    free(text);
    log_set_format("json");
    log_fields(KC_LOG_INFO, "attempt", fields, 4, NULL, NULL);
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
    struct log_rate rate = {0};
    for (int i = 0; i < 10; i++)
        log_fields(KC_LOG_INFO, "attempt", fields, 1, &rate, "unschedulable");
    /* another outcome of the same pod is not held back by the first one's limit, and says
     * what was dropped */
    log_fields(KC_LOG_INFO, "attempt", fields, 1, &rate, "scheduled");
    char *text = written();
    assert_int_equal(count(text, "attempt pod=ns/retried"), 4);
    assert_non_null(strstr(text, "suppressed=7"));
    free(text);
}

/* The limit's state is per pod: 1000 pods failing at once, each retried, are each written 3
 * times a window (a table of hashed slots shared by all pods would evict and write them all). */
static void many_pods_are_each_limited(void **state)
{
    (void)state;
    enum { PODS = 1000 };
    static struct log_rate rates[PODS];
    struct log_field fields[] = {{.key = "pod", .text = "ns/p"}};
    for (int round = 0; round < 5; round++)
        for (int i = 0; i < PODS; i++) {
            char key[32];
            snprintf(key, sizeof(key), "ns/p%d unschedulable", i);
            log_fields(KC_LOG_INFO, "attempt", fields, 1, &rates[i], key);
        }
    char *text = written();
    assert_int_equal(count(text, "attempt pod=ns/p"), 3 * PODS);
    free(text);
}

/* A JSON line longer than the line buffer is cut but still parses, its cut string ends with
 * "...", and bytes that are not UTF-8 come out as U+FFFD (jansson rejects invalid UTF-8). */
static void json_lines_cut_short_or_with_bad_bytes_still_parse(void **state)
{
    (void)state;
    log_set_format("json");
    for (size_t length = 3900; length < 4200; length += 1) {
        char *reason = malloc(length + 1);
        assert_non_null(reason);
        for (size_t i = 0; i < length; i++)
            reason[i] = (char)(i % 7 == 0 ? '\x01' : i % 11 == 0 ? '"' : 'a'); /* escapes */
        reason[length] = '\0';
        struct log_field fields[] = {
            {.key = "reason", .text = reason},
            {.key = "attempt", .number = 3, .is_number = true},
        };
        log_fields(KC_LOG_INFO, "attempt", fields, 2, NULL, NULL);
        free(reason);
        char *text = written();
        json_error_t error;
        json_t *line = json_loads(text, 0, &error);
        if (line == NULL)
            fail_msg("length %zu: %s in %s", length, error.text, text + strlen(text) - 40);
        const char *cut = json_string_value(json_object_get(line, "reason"));
        assert_non_null(cut);
        assert_true(strlen(text) <= 4096);
        json_decref(line);
        free(text);
    }
    struct log_field bad[] = {{.key = "reason", .text = "caf\xc3\xa9 \xff \xc3( \xed\xa0\x80 "
                                                         "\xf0\x9f\x98\x80 \xe2\x82"}};
    log_fields(KC_LOG_INFO, "attempt", bad, 1, NULL, NULL);
    char *text = written();
    json_error_t error;
    json_t *line = json_loads(text, 0, &error);
    if (line == NULL)
        fail_msg("%s in %s", error.text, text);
    assert_string_equal(json_string_value(json_object_get(line, "reason")),
                        "caf\xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd"
                        "\xef\xbf\xbd \xf0\x9f\x98\x80 \xef\xbf\xbd\xef\xbf\xbd");
    json_decref(line);
    free(text);
    log_set_format("text");
}

/* Numbers keep their digits: integers as integers, fractions as many digits as they need. */
static void numbers_keep_their_digits(void **state)
{
    (void)state;
    struct log_field fields[] = {
        {.key = "generation", .number = 12345678, .is_number = true},
        {.key = "duration_ms", .number = 1234.5678, .is_number = true},
    };
    log_fields(KC_LOG_INFO, "attempt", fields, 2, NULL, NULL);
    char *text = written();
    assert_string_equal(text, "kcycle: info: attempt generation=12345678 duration_ms=1234.5678\n");
    free(text);
}

static void the_below_level_lines_are_not_written(void **state)
{
    (void)state;
    log_set_level(KC_LOG_WARN);
    log_info("not shown");
    struct log_field f = {.key = "k", .text = "v"};
    log_fields(KC_LOG_INFO, "attempt", &f, 1, NULL, NULL);
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
        cmocka_unit_test(many_pods_are_each_limited),
        cmocka_unit_test(json_lines_cut_short_or_with_bad_bytes_still_parse),
        cmocka_unit_test(numbers_keep_their_digits),
        cmocka_unit_test(the_below_level_lines_are_not_written),
    };
    return cmocka_run_group_tests(tests, capture, NULL);
}
