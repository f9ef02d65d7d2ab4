/* The typed args behind <kcycle/args.h>: values by type, fallbacks for absent keys, the first
 * bad value and unknown keys reported by finish with the key's name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plugin_args.h"

static void reads_each_type_and_falls_back_for_absent_keys(void **state)
{
    (void)state;
    char error[128] = "";
    kc_args *args = plugin_args_parse(
        "{\"weight\": 3, \"label\": \"gpu\", \"strict\": true, \"memory\": \"4Gi\","
        " \"cpu\": \"500m\", \"whole\": 2.0, \"gone\": null}",
        error, sizeof(error));
    assert_non_null(args);
    int64_t weight, memory, cpu, whole, missing, gone;
    const char *label, *other;
    int strict, flag;
    assert_int_equal(plugin_args_int(args, "weight", 1, &weight), 0);
    assert_int_equal(weight, 3);
    assert_int_equal(plugin_args_string(args, "label", "x", &label), 0);
    assert_string_equal(label, "gpu");
    assert_int_equal(plugin_args_bool(args, "strict", 0, &strict), 0);
    assert_int_equal(strict, 1);
    assert_int_equal(plugin_args_quantity(args, "memory", 0, 0, &memory), 0);
    assert_int_equal(memory, 4LL << 30);
    assert_int_equal(plugin_args_quantity(args, "cpu", -3, 0, &cpu), 0);
    assert_int_equal(cpu, 500);
    assert_int_equal(plugin_args_int(args, "whole", 0, &whole), 0);
    assert_int_equal(whole, 2);
    assert_int_equal(plugin_args_int(args, "absent", 7, &missing), 0);
    assert_int_equal(missing, 7);
    assert_int_equal(plugin_args_int(args, "gone", 9, &gone), 0);
    assert_int_equal(gone, 9);
    assert_int_equal(plugin_args_string(args, "other", "dflt", &other), 0);
    assert_string_equal(other, "dflt");
    assert_int_equal(plugin_args_bool(args, "flag", 1, &flag), 0);
    assert_int_equal(flag, 1);
    assert_int_equal(plugin_args_finish(args, error, sizeof(error)), 0);
}

static void wrong_type_names_the_key_and_keeps_the_fallback(void **state)
{
    (void)state;
    char error[128] = "";
    kc_args *args = plugin_args_parse("{\"weight\": \"heavy\", \"strict\": 1, \"size\": \"4 Gi\"}",
                                      error, sizeof(error));
    assert_non_null(args);
    int64_t weight, size;
    int strict;
    assert_int_equal(plugin_args_int(args, "weight", 5, &weight), -22);
    assert_int_equal(weight, 5);
    assert_int_equal(plugin_args_bool(args, "strict", 0, &strict), -22);
    assert_int_equal(plugin_args_quantity(args, "size", 0, 0, &size), -22);
    assert_int_equal(plugin_args_finish(args, error, sizeof(error)), -22);
    /* the first bad value is the one reported */
    assert_string_equal(error, "args: key \"weight\": want an integer");
}

static void a_key_nothing_read_is_an_error(void **state)
{
    (void)state;
    char error[128] = "";
    kc_args *args = plugin_args_parse("{\"weight\": 2, \"wieght\": 3}", error, sizeof(error));
    int64_t weight;
    assert_int_equal(plugin_args_int(args, "weight", 1, &weight), 0);
    assert_int_equal(plugin_args_finish(args, error, sizeof(error)), -22);
    assert_string_equal(error, "args: unknown key \"wieght\"");
}

static void bad_json_or_not_an_object_fails_parse(void **state)
{
    (void)state;
    char error[128] = "";
    assert_null(plugin_args_parse("{\"weight\": ", error, sizeof(error)));
    assert_non_null(strstr(error, "args: line 1"));
    assert_null(plugin_args_parse("[1]", error, sizeof(error)));
    assert_string_equal(error, "args: want a JSON object");
    /* NULL and "" read as {} */
    kc_args *args = plugin_args_parse(NULL, error, sizeof(error));
    assert_non_null(args);
    assert_int_equal(plugin_args_finish(args, error, sizeof(error)), 0);
    assert_int_equal(plugin_args_finish(NULL, error, sizeof(error)), 0);
}

/* A getter after a failed parse (args == NULL) answers the fallback instead of crashing. */
static void null_args_give_the_fallback(void **state)
{
    (void)state;
    int64_t n = 0, q = 0;
    const char *s = NULL;
    int b = 0;
    assert_int_equal(plugin_args_int(NULL, "weight", 5, &n), 0);
    assert_int_equal(n, 5);
    assert_int_equal(plugin_args_string(NULL, "label", "gpu", &s), 0);
    assert_string_equal(s, "gpu");
    assert_int_equal(plugin_args_bool(NULL, "strict", 1, &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(plugin_args_quantity(NULL, "memory", 0, 7, &q), 0);
    assert_int_equal(q, 7);
    assert_int_equal(plugin_args_finish(NULL, NULL, 0), 0);
}

/* Every key read counts as read, however many a plugin has (the list grows past its first
 * allocation); one key left unread is still named. */
static void many_keys_read_are_all_known(void **state)
{
    (void)state;
    enum { KEYS = 200 };
    char json[KEYS * 16 + 16], key[16], error[128] = "";
    size_t used = 0;
    used += (size_t)snprintf(json + used, sizeof(json) - used, "{");
    for (int i = 0; i < KEYS; i++)
        used += (size_t)snprintf(json + used, sizeof(json) - used, "%s\"k%d\": %d",
                                 i > 0 ? ", " : "", i, i);
    snprintf(json + used, sizeof(json) - used, "}");
    for (int unread = -1; unread < KEYS; unread += KEYS / 2 + 1) {
        kc_args *args = plugin_args_parse(json, error, sizeof(error));
        assert_non_null(args);
        for (int i = 0; i < KEYS; i++) {
            int64_t v = -1;
            snprintf(key, sizeof(key), "k%d", i);
            if (i == unread)
                continue;
            assert_int_equal(plugin_args_int(args, key, 0, &v), 0);
            assert_int_equal(v, i);
        }
        int rc = plugin_args_finish(args, error, sizeof(error));
        if (unread < 0) {
            assert_int_equal(rc, 0);
        } else {
            snprintf(key, sizeof(key), "\"k%d\"", unread);
            assert_int_equal(rc, -22);
            assert_non_null(strstr(error, key));
        }
    }
}

/* A JSON real is a quantity too, rounded up at the scale asked for; a decimal the config wrote
 * reads as written (0.1 cpu is 100m, not 101m). */
static void quantity_accepts_json_reals(void **state)
{
    (void)state;
    char error[128] = "";
    kc_args *args = plugin_args_parse(
        "{\"half\": 0.5, \"tenth\": 0.1, \"tiny\": 0.0001, \"big\": 1e9, \"neg\": -0.25,"
        " \"huge\": 1e30}",
        error, sizeof(error));
    assert_non_null(args);
    int64_t half, half_units, tenth, tiny, big, neg, huge = 3;
    assert_int_equal(plugin_args_quantity(args, "half", -3, 0, &half), 0);
    assert_int_equal(half, 500);
    assert_int_equal(plugin_args_quantity(args, "half", 0, 0, &half_units), 0);
    assert_int_equal(half_units, 1); /* rounded up */
    assert_int_equal(plugin_args_quantity(args, "tenth", -3, 0, &tenth), 0);
    assert_int_equal(tenth, 100);
    assert_int_equal(plugin_args_quantity(args, "tiny", -3, 0, &tiny), 0);
    assert_int_equal(tiny, 1); /* 0.1m rounds up to 1m */
    assert_int_equal(plugin_args_quantity(args, "big", 0, 0, &big), 0);
    assert_int_equal(big, 1000000000);
    assert_int_equal(plugin_args_quantity(args, "neg", -3, 0, &neg), 0);
    assert_int_equal(neg, -250);
    assert_int_equal(plugin_args_quantity(args, "huge", 0, 0, &huge), -22);
    assert_int_equal(huge, 0);
    assert_int_equal(plugin_args_finish(args, error, sizeof(error)), -22);
    assert_non_null(strstr(error, "\"huge\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_each_type_and_falls_back_for_absent_keys),
        cmocka_unit_test(wrong_type_names_the_key_and_keeps_the_fallback),
        cmocka_unit_test(a_key_nothing_read_is_an_error),
        cmocka_unit_test(bad_json_or_not_an_object_fails_parse),
        cmocka_unit_test(null_args_give_the_fallback),
        cmocka_unit_test(many_keys_read_are_all_known),
        cmocka_unit_test(quantity_accepts_json_reals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
