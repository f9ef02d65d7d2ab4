/* json_splitter: the same values whatever the chunking, strings that hide structure, nesting,
 * top-level scalars, garbage, and memory that stays bounded over a long stream. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube.h"

#define MAX_VALUES 64

struct collected {
    char *values[MAX_VALUES];
    size_t count;
    int stop_at; /* return non-zero for this value (1-based); 0: never */
};

static int collect(void *ctx, const char *json, size_t len)
{
    struct collected *c = ctx;
    assert_true(c->count < MAX_VALUES);
    assert_int_equal(json[len], '\0'); /* NUL-terminated during the call */
    c->values[c->count] = strndup(json, len);
    c->count++;
    return c->stop_at != 0 && (size_t)c->stop_at == c->count ? 7 : 0;
}

static void collected_free(struct collected *c)
{
    for (size_t i = 0; i < c->count; i++)
        free(c->values[i]);
    memset(c, 0, sizeof(*c));
}

static void assert_values(const struct collected *c, const char *const *want, size_t count)
{
    assert_int_equal(c->count, count);
    for (size_t i = 0; i < count; i++)
        assert_string_equal(c->values[i], want[i]);
}

/* Feed text in the pieces that cuts[] (sorted offsets) make. */
static int feed_cut(struct json_splitter *s, const char *text, const size_t *cuts, size_t ncuts,
                    struct collected *c)
{
    size_t len = strlen(text);
    size_t from = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        int rc = json_splitter_feed(s, text + from, to - from, collect, c);
        if (rc != 0)
            return rc;
        from = to;
    }
    return 0;
}

static const char watch_stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p{1}\",\"resourceVersion\":\"5\"},"
    "\"spec\":{\"containers\":[{\"args\":[\"a]\",\"\\\"b\\\"\",\"c\\\\\"]}]}}}\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"6\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"q\\\\\",\"labels\":{\"x\":"
    "\"}}}\"}}}}\n";

static const char *const watch_values[] = {
    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p{1}\",\"resourceVersion\":\"5\"},"
    "\"spec\":{\"containers\":[{\"args\":[\"a]\",\"\\\"b\\\"\",\"c\\\\\"]}]}}}",
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"6\"}}}",
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"q\\\\\",\"labels\":{\"x\":"
    "\"}}}\"}}}}",
};

static void every_split_point_gives_the_same_values(void **state)
{
    size_t len = strlen(watch_stream);
    for (size_t a = 0; a <= len; a++) {
        for (size_t b = a; b <= len; b += 7) {
            struct json_splitter s = {0};
            struct collected c = {0};
            size_t cuts[2] = {a, b};
            assert_int_equal(feed_cut(&s, watch_stream, cuts, 2, &c), 0);
            assert_values(&c, watch_values, 3);
            assert_false(s.in_value);
            collected_free(&c);
            json_splitter_free(&s);
        }
    }
}

static void one_byte_at_a_time_gives_the_same_values(void **state)
{
    struct json_splitter s = {0};
    struct collected c = {0};
    for (size_t i = 0; watch_stream[i] != '\0'; i++)
        assert_int_equal(json_splitter_feed(&s, watch_stream + i, 1, collect, &c), 0);
    assert_values(&c, watch_values, 3);
    collected_free(&c);
    json_splitter_free(&s);
}

static void many_values_in_one_piece_all_arrive(void **state)
{
    struct json_splitter s = {0};
    struct collected c = {0};
    char twice[sizeof(watch_stream) * 2];
    snprintf(twice, sizeof(twice), "%s%s", watch_stream, watch_stream);
    assert_int_equal(json_splitter_feed(&s, twice, strlen(twice), collect, &c), 0);
    assert_int_equal(c.count, 6);
    assert_string_equal(c.values[5], watch_values[2]);
    collected_free(&c);
    json_splitter_free(&s);
}

static void strings_hide_braces_escaped_quotes_and_backslashes(void **state)
{
    static const char text[] = "{\"a\":\"}{][\",\"b\":\"\\\"}\",\"c\":\"\\\\\",\"d\":\"\\\\\\\"{\"}"
                               "\"top \\\" {\"\"\\\\\"";
    static const char *const want[] = {
        "{\"a\":\"}{][\",\"b\":\"\\\"}\",\"c\":\"\\\\\",\"d\":\"\\\\\\\"{\"}",
        "\"top \\\" {\"",
        "\"\\\\\"",
    };
    size_t len = strlen(text);
    for (size_t a = 0; a <= len; a++) {
        struct json_splitter s = {0};
        struct collected c = {0};
        assert_int_equal(feed_cut(&s, text, &a, 1, &c), 0);
        assert_values(&c, want, 3);
        collected_free(&c);
        json_splitter_free(&s);
    }
}

static void nested_arrays_and_objects_end_at_depth_zero(void **state)
{
    static const char text[] = "[[1,[2,[3]]],{\"a\":[{\"b\":[]}]}][]{}[{}]";
    static const char *const want[] = {"[[1,[2,[3]]],{\"a\":[{\"b\":[]}]}]", "[]", "{}", "[{}]"};
    struct json_splitter s = {0};
    struct collected c = {0};
    assert_int_equal(json_splitter_feed(&s, text, strlen(text), collect, &c), 0);
    assert_values(&c, want, 4);
    collected_free(&c);
    json_splitter_free(&s);
}

static void top_level_scalars_end_at_whitespace_or_the_next_value(void **state)
{
    static const char text[] = "1 -2.5e+3\ttrue\nfalse null \"s\" 12{\"a\":1}7[2]8\"x\"42";
    static const char *const want[] = {"1",     "-2.5e+3", "true",      "false", "null",
                                       "\"s\"", "12",      "{\"a\":1}", "7",     "[2]",
                                       "8",     "\"x\"",   "42"};
    size_t len = strlen(text);
    for (size_t a = 0; a <= len; a++) {
        struct json_splitter s = {0};
        struct collected c = {0};
        assert_int_equal(feed_cut(&s, text, &a, 1, &c), 0);
        /* the last number waits for the byte that ends it, or for the end of the stream */
        assert_int_equal(c.count, 12);
        assert_int_equal(json_splitter_finish(&s, collect, &c), 0);
        assert_values(&c, want, 13);
        collected_free(&c);
        json_splitter_free(&s);
    }
}

static void a_number_split_across_pieces_is_one_value(void **state)
{
    struct json_splitter s = {0};
    struct collected c = {0};
    assert_int_equal(json_splitter_feed(&s, "12", 2, collect, &c), 0);
    assert_int_equal(json_splitter_feed(&s, "34", 2, collect, &c), 0);
    assert_int_equal(c.count, 0);
    assert_int_equal(json_splitter_feed(&s, "\n", 1, collect, &c), 0);
    static const char *const want[] = {"1234"};
    assert_values(&c, want, 1);
    collected_free(&c);
    json_splitter_free(&s);
}

static void whitespace_and_newlines_between_values_are_skipped(void **state)
{
    static const char text[] = "\n\n  {\"a\":1}\r\n\t {\"b\":2}\n\n\n   \t";
    static const char *const want[] = {"{\"a\":1}", "{\"b\":2}"};
    struct json_splitter s = {0};
    struct collected c = {0};
    assert_int_equal(json_splitter_feed(&s, text, strlen(text), collect, &c), 0);
    assert_values(&c, want, 2);
    assert_int_equal(s.len, 0);
    assert_int_equal(json_splitter_finish(&s, collect, &c), 0);
    assert_int_equal(c.count, 2);
    collected_free(&c);
    json_splitter_free(&s);
}

static void garbage_is_a_protocol_error(void **state)
{
    static const char *const garbage[] = {"}", "]", ":", ",", "{}]", "1,2", "<html>", "\x01", "1}"};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        struct json_splitter s = {0};
        struct collected c = {0};
        int rc = json_splitter_feed(&s, garbage[i], strlen(garbage[i]), collect, &c);
        if (rc != -EPROTO)
            fail_msg("'%s': got %d, want -EPROTO", garbage[i], rc);
        collected_free(&c);
        json_splitter_free(&s);
    }
}

static void an_unfinished_value_at_the_end_is_a_protocol_error(void **state)
{
    static const char *const unfinished[] = {"{\"a\":", "[1,2", "\"open", "{\"s\":\"\\\"}"};
    for (size_t i = 0; i < sizeof(unfinished) / sizeof(unfinished[0]); i++) {
        struct json_splitter s = {0};
        struct collected c = {0};
        assert_int_equal(json_splitter_feed(&s, unfinished[i], strlen(unfinished[i]), collect, &c),
                         0);
        assert_int_equal(c.count, 0);
        assert_int_equal(json_splitter_finish(&s, collect, &c), -EPROTO);
        collected_free(&c);
        json_splitter_free(&s);
    }
}

static void a_non_zero_return_stops_and_the_rest_waits(void **state)
{
    static const char text[] = "{\"a\":1} {\"b\":2} {\"c\":3}\n";
    struct json_splitter s = {0};
    struct collected c = {.stop_at = 2};
    assert_int_equal(json_splitter_feed(&s, text, strlen(text), collect, &c), 7);
    assert_int_equal(c.count, 2);
    c.stop_at = 0;
    assert_int_equal(json_splitter_feed(&s, "", 0, collect, &c), 0);
    static const char *const want[] = {"{\"a\":1}", "{\"b\":2}", "{\"c\":3}"};
    assert_values(&c, want, 3);
    collected_free(&c);
    json_splitter_free(&s);
}

struct counter {
    uint64_t values;
    uint64_t bytes;
};

static int count_value(void *ctx, const char *json, size_t len)
{
    struct counter *n = ctx;
    n->values++;
    n->bytes += len;
    return 0;
}

static void memory_stays_bounded_over_100k_values(void **state)
{
    char event[256];
    int event_len = snprintf(event, sizeof(event),
                             "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"pod\","
                             "\"resourceVersion\":\"%d\"},\"status\":{\"phase\":\"Running\"}}}\n",
                             123456);
    /* Build a long stream and feed it in pieces of uneven sizes that never line up with the
     * values. */
    size_t stream_len = (size_t)event_len * 1000;
    char *stream = malloc(stream_len);
    assert_non_null(stream);
    for (size_t i = 0; i < 1000; i++)
        memcpy(stream + i * (size_t)event_len, event, (size_t)event_len);
    struct json_splitter s = {0};
    struct counter n = {0};
    size_t max_capacity = 0;
    static const size_t pieces[] = {1, 7, 100, 333, 4096, 9000, 17};
    size_t piece = 0;
    for (int round = 0; round < 100; round++) {
        size_t at = 0;
        while (at < stream_len) {
            size_t take = pieces[piece++ % (sizeof(pieces) / sizeof(pieces[0]))];
            if (take > stream_len - at)
                take = stream_len - at;
            assert_int_equal(json_splitter_feed(&s, stream + at, take, count_value, &n), 0);
            at += take;
            if (s.capacity > max_capacity)
                max_capacity = s.capacity;
            /* never more than the largest piece plus one unfinished value */
            assert_true(s.len <= 9000 + (size_t)event_len);
        }
    }
    assert_int_equal(n.values, 100000);
    assert_int_equal(n.bytes, (uint64_t)100000 * (uint64_t)(event_len - 1));
    assert_true(max_capacity <= 16384);
    free(stream);
    json_splitter_free(&s);
}

static void a_large_value_is_given_back_after_it_is_done(void **state)
{
    size_t big = 1 << 20;
    char *value = malloc(big + 3);
    assert_non_null(value);
    value[0] = '"';
    memset(value + 1, 'x', big);
    value[big + 1] = '"';
    value[big + 2] = '\n';
    struct json_splitter s = {0};
    struct counter n = {0};
    for (size_t at = 0; at < big + 3; at += 4096) {
        size_t take = big + 3 - at < 4096 ? big + 3 - at : 4096;
        assert_int_equal(json_splitter_feed(&s, value + at, take, count_value, &n), 0);
    }
    assert_int_equal(n.values, 1);
    assert_int_equal(n.bytes, big + 2);
    assert_true(s.capacity <= 64 * 1024);
    free(value);
    json_splitter_free(&s);
}

/* A watch event over max_value fails the feed whether it arrives whole or in pieces, and the
 * buffer never holds much more than the limit plus one piece. */
static void a_value_over_the_limit_is_refused_before_it_grows_on(void **state)
{
    struct json_splitter s = {.max_value = 64};
    struct collected c = {0};
    const char *small = "{\"a\":1} {\"b\":2}";
    assert_int_equal(json_splitter_feed(&s, small, strlen(small), collect, &c), 0);
    assert_int_equal(c.count, 2);
    char whole[256];
    memset(whole, ' ', sizeof(whole));
    memcpy(whole, "{\"x\":\"", 6);
    memcpy(whole + sizeof(whole) - 3, "\"}\n", 3);
    assert_int_equal(json_splitter_feed(&s, whole, sizeof(whole), collect, &c), -EFBIG);
    assert_int_equal(c.count, 2);
    json_splitter_free(&s);

    /* an endless string fed 16 bytes at a time: refused as soon as it passes the limit */
    s = (struct json_splitter){.max_value = 1024};
    assert_int_equal(json_splitter_feed(&s, "{\"pad\":\"", 8, collect, &c), 0);
    size_t fed = 8;
    int rc = 0;
    while (rc == 0 && fed < 1024 * 1024) {
        rc = json_splitter_feed(&s, "xxxxxxxxxxxxxxxx", 16, collect, &c);
        fed += 16;
    }
    assert_int_equal(rc, -EFBIG);
    assert_true(fed <= 1024 + 16);
    assert_true(s.capacity <= 4096);
    assert_int_equal(c.count, 2);
    json_splitter_free(&s);
    collected_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_split_point_gives_the_same_values),
        cmocka_unit_test(one_byte_at_a_time_gives_the_same_values),
        cmocka_unit_test(many_values_in_one_piece_all_arrive),
        cmocka_unit_test(strings_hide_braces_escaped_quotes_and_backslashes),
        cmocka_unit_test(nested_arrays_and_objects_end_at_depth_zero),
        cmocka_unit_test(top_level_scalars_end_at_whitespace_or_the_next_value),
        cmocka_unit_test(a_number_split_across_pieces_is_one_value),
        cmocka_unit_test(whitespace_and_newlines_between_values_are_skipped),
        cmocka_unit_test(garbage_is_a_protocol_error),
        cmocka_unit_test(an_unfinished_value_at_the_end_is_a_protocol_error),
        cmocka_unit_test(a_non_zero_return_stops_and_the_rest_waits),
        cmocka_unit_test(memory_stays_bounded_over_100k_values),
        cmocka_unit_test(a_large_value_is_given_back_after_it_is_done),
        cmocka_unit_test(a_value_over_the_limit_is_refused_before_it_grows_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
