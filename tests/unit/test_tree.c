/* tree: YAML/JSON loading with positions, rejected constructs, typed reads and their messages,
 * and the JSON rendering used for plugin args. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tree.h"

static struct tree *parse_ok(const char *name, const char *text)
{
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    int rc = tree_parse_buffer(name, text, strlen(text), &t, &err);
    if (rc != 0)
        fail_msg("parse of %s failed: %d %s", name, rc, err.message);
    return t;
}

static void assert_parse_error(const char *name, const char *text, const char *message)
{
    struct tree *t = (struct tree *)1;
    struct kc_error err = {{0}};
    assert_int_equal(tree_parse_buffer(name, text, strlen(text), &t, &err), -EINVAL);
    assert_null(t);
    assert_string_equal(err.message, message);
}

static void assert_position(const struct tree *t, uint32_t line, uint32_t column)
{
    assert_non_null(t);
    if (t->line != line || t->column != column)
        fail_msg("at %u:%u, want %u:%u", t->line, t->column, line, column);
}

/* ---- structure and positions ---- */

static void nested_yaml_nodes_have_one_based_positions(void **state)
{
    struct tree *root = parse_ok("nested.yaml", "top:\n"
                                                "  inner:\n"
                                                "    leaf: 1\n"
                                                "  list:\n"
                                                "    - first\n"
                                                "    - {k: v}\n");
    const struct tree *top = tree_get(root, "top");
    const struct tree *inner = tree_get(top, "inner");
    const struct tree *list = tree_get(top, "list");
    assert_position(root, 1, 1);
    assert_position(top, 2, 3);
    assert_position(inner->keys[0], 3, 5);
    assert_position(tree_get(inner, "leaf"), 3, 11);
    assert_string_equal(tree_get(inner, "leaf")->scalar, "1");
    assert_int_equal(list->type, TREE_SEQ);
    assert_int_equal(list->count, 2);
    assert_position(list->items[0], 5, 7);
    assert_position(list->items[1], 6, 7);
    assert_position(tree_get(list->items[1], "k"), 6, 11);
    assert_string_equal(list->items[0]->file, "nested.yaml");
    assert_ptr_equal(list->items[0]->file, root->file);
    tree_free(root);
}

static void tab_indented_json_parses_with_positions(void **state)
{
    struct tree *root = parse_ok("tabs.json", "{\n"
                                              "\t\"outer\": {\n"
                                              "\t\t\"list\": [1, \"two\"],\n"
                                              "\t\t\"flag\": true\n"
                                              "\t}\n"
                                              "}\n");
    const struct tree *outer = tree_get(root, "outer");
    const struct tree *list = tree_get(outer, "list");
    assert_int_equal(list->count, 2);
    assert_position(outer->keys[0], 3, 3);
    assert_position(list->items[1], 3, 15);
    assert_true(list->items[1]->quoted);
    assert_false(list->items[0]->quoted);
    assert_string_equal(tree_get(outer, "flag")->scalar, "true");
    tree_free(root);
}

/* Strict JSON takes the fast path; what it leaves (flow YAML, duplicate keys) the YAML loader
 * reads or words, so both give the same trees and messages. */
static void strict_json_and_flow_yaml_give_the_same_tree(void **state)
{
    const char *json = "{\"a\": {\"b\": [1, -2.5e3, \"x\\\"y\", null, false]}, \"big\": "
                       "123456789012345678901234567890}";
    const char *flow = "{a: {b: [1, -2.5e3, \"x\\\"y\", null, false]}, big: "
                       "123456789012345678901234567890}";
    struct tree *j = parse_ok("strict.json", json), *f = parse_ok("flow.json", flow);
    char *jt = tree_to_json(j), *ft = tree_to_json(f);
    assert_string_equal(jt, ft);
    assert_string_equal(jt, "{\"a\":{\"b\":[1,-2500.0,\"x\\\"y\",null,false]},\"big\":"
                            "1.2345678901234568e29}");
    const struct tree *b = tree_get(tree_get(j, "a"), "b");
    assert_position(b, 1, 13);
    assert_position(b->items[2], 1, 25);
    assert_true(b->items[2]->quoted);
    assert_false(b->items[3]->quoted);
    assert_true(tree_is_null(b->items[3]));
    free(jt);
    free(ft);
    tree_free(j);
    tree_free(f);
}

static void json_escapes_decode_to_utf8(void **state)
{
    struct tree *t = parse_ok("escapes.json", "{\"s\": \"caf\\u00e9 \\ud83d\\ude00 \\/\\t\"}");
    assert_string_equal(tree_get(t, "s")->scalar, "caf\xc3\xa9 \xf0\x9f\x98\x80 /\t");
    tree_free(t);
    /* a NUL cannot be carried in a C string, whichever loader reads it */
    struct tree *bad = (struct tree *)1;
    struct kc_error err = {{0}};
    const char *nul = "{\"s\": \"a\\u0000b\"}";
    assert_int_equal(tree_parse_buffer("nul.json", nul, strlen(nul), &bad, &err), -EINVAL);
    assert_null(bad);
}

static void json_maps_with_many_keys_still_find_duplicates(void **state)
{
    char text[4096] = "{";
    for (int i = 0; i < 100; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "\"k%d\": %d, ", i, i);
    strcat(text, "\"k7\": 0}");
    struct tree *t = (struct tree *)1;
    struct kc_error err = {{0}};
    assert_int_equal(tree_parse_buffer("many.json", text, strlen(text), &t, &err), -EINVAL);
    assert_non_null(strstr(err.message, "key 'k7': duplicate key"));
    text[strlen(text) - 9] = '}';
    text[strlen(text) - 8] = '\0';
    t = parse_ok("many.json", text);
    assert_int_equal(t->count, 100);
    tree_free(t);
}

static void tab_indented_yaml_is_still_an_error(void **state)
{
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    const char *text = "a:\n\tb: 1\n";
    assert_int_equal(tree_parse_buffer("tab.yaml", text, strlen(text), &t, &err), -EINVAL);
    assert_null(t);
    assert_non_null(strstr(err.message, "tab.yaml:2:"));
}

static void empty_documents_are_empty_maps(void **state)
{
    const char *texts[] = {"", "# only a comment\n", "---\n", "\n\n"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct tree *root = parse_ok("empty.yaml", texts[i]);
        assert_int_equal(root->type, TREE_MAP);
        assert_int_equal(root->count, 0);
        assert_true(root->line >= 1 && root->column >= 1);
        tree_free(root);
    }
}

static void duplicate_keys_name_both_positions(void **state)
{
    assert_parse_error("dup.yaml", "a: 1\nb: 2\na: 3\n",
                       "dup.yaml:3:1: key 'a': duplicate key, first defined at 1:1; expected each "
                       "key once in a map");
    assert_parse_error("dup.json", "{\"x\": {\"k\": 1,\n \"k\": 2}}",
                       "dup.json:2:2: key 'k': duplicate key, first defined at 1:8; expected each "
                       "key once in a map");
}

static void anchors_and_aliases_are_rejected(void **state)
{
    assert_parse_error("anchor.yaml", "a: &base 1\n",
                       "anchor.yaml:1:4: anchor '&base' is not supported; expected every value "
                       "written out in full");
    assert_parse_error("alias.yaml", "a: 1\nb: *base\n",
                       "alias.yaml:2:4: alias '*base' is not supported; expected the value "
                       "written out in full");
}

static void non_scalar_keys_are_rejected(void **state)
{
    assert_parse_error("key.yaml", "? [a, b]\n: 1\n",
                       "key.yaml:1:3: a map key is a list; expected a plain name");
}

static void second_document_is_rejected(void **state)
{
    assert_parse_error("two.yaml", "a: 1\n---\nb: 2\n",
                       "two.yaml:2:1: a second document starts here; expected one document per "
                       "file");
}

static void syntax_errors_name_file_line_and_column(void **state)
{
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    const char *text = "a: 1\nb: [1, 2\n";
    assert_int_equal(tree_parse_buffer("bad.yaml", text, strlen(text), &t, &err), -EINVAL);
    assert_null(t);
    assert_memory_equal(err.message, "bad.yaml:3:1: ", strlen("bad.yaml:3:1: "));
    assert_non_null(strstr(err.message, "flow sequence"));
}

static void nul_in_a_value_is_rejected(void **state)
{
    assert_parse_error("nul.yaml", "a: \"x\\0y\"\n",
                       "nul.yaml:1:4: value contains a NUL character; expected text");
}

static void deep_nesting_is_rejected(void **state)
{
    char text[700];
    memset(text, '[', 300);
    memset(text + 300, ']', 300);
    text[600] = '\0';
    struct tree *t = NULL;
    struct kc_error err = {{0}};
    assert_int_equal(tree_parse_buffer("deep.json", text, 600, &t, &err), -EINVAL);
    assert_non_null(strstr(err.message, "nesting deeper than 256 levels"));
}

static void missing_file_is_enoent(void **state)
{
    struct tree *t = (struct tree *)1;
    struct kc_error err = {{0}};
    assert_int_equal(tree_parse_file("/nonexistent/kcycle.yaml", &t, &err), -ENOENT);
    assert_null(t);
    assert_string_equal(err.message, "/nonexistent/kcycle.yaml: cannot open: No such file or "
                                     "directory; expected a readable YAML or JSON file");
}

static void lookups_and_nulls(void **state)
{
    struct tree *root = parse_ok("n.yaml", "a: ~\nb:\nc: null\nd: \"null\"\ne: x\n");
    assert_true(tree_is_null(tree_get(root, "a")));
    assert_true(tree_is_null(tree_get(root, "b")));
    assert_true(tree_is_null(tree_get(root, "c")));
    assert_false(tree_is_null(tree_get(root, "d")));
    assert_false(tree_is_null(tree_get(root, "e")));
    assert_false(tree_is_null(NULL));
    assert_null(tree_get(root, "missing"));
    assert_null(tree_get(tree_get(root, "e"), "x"));
    tree_free(root);
}

/* ---- typed reads ---- */

static const struct tree *value(struct tree *root, const char *key)
{
    const struct tree *v = tree_get(root, key);
    assert_non_null(v);
    return v;
}

static void int_reads_and_their_errors(void **state)
{
    struct tree *root = parse_ok("i.yaml", "good: -42\nword: abc\nquoted: \"7\"\n"
                                           "big: 9223372036854775808\nmap: {}\n");
    struct kc_error err = {{0}};
    int64_t v = 0;
    assert_int_equal(tree_int64(value(root, "good"), "good", &v, &err), 0);
    assert_int_equal(v, -42);
    assert_int_equal(tree_int64(value(root, "word"), "parallelism", &v, &err), -EINVAL);
    assert_string_equal(err.message, "i.yaml:2:7: key 'parallelism': 'abc' is not a whole "
                                     "number; expected a whole number such as 42, without quotes");
    assert_int_equal(tree_int64(value(root, "quoted"), "seed", &v, &err), -EINVAL);
    assert_string_equal(err.message, "i.yaml:3:9: key 'seed': \"7\" is quoted; expected a whole "
                                     "number such as 42, without quotes");
    assert_int_equal(tree_int64(value(root, "big"), "seed", &v, &err), -EINVAL);
    assert_string_equal(err.message, "i.yaml:4:6: key 'seed': 9223372036854775808 does not fit "
                                     "in 64 bits; expected a whole number such as 42, without "
                                     "quotes");
    assert_int_equal(tree_int64(value(root, "map"), "seed", &v, &err), -EINVAL);
    assert_string_equal(err.message, "i.yaml:5:6: key 'seed': got a map; expected a whole "
                                     "number such as 42, without quotes");
    tree_free(root);
}

static void bool_and_string_reads(void **state)
{
    struct tree *root = parse_ok("b.yaml", "yes1: true\nno1: False\nbad: yes\nname: kcycle\n"
                                           "list: [a]\nnothing:\n");
    struct kc_error err = {{0}};
    bool b = false;
    const char *s = NULL;
    assert_int_equal(tree_bool(value(root, "yes1"), "yes1", &b, &err), 0);
    assert_true(b);
    assert_int_equal(tree_bool(value(root, "no1"), "no1", &b, &err), 0);
    assert_false(b);
    assert_int_equal(tree_bool(value(root, "bad"), "required", &b, &err), -EINVAL);
    assert_string_equal(err.message, "b.yaml:3:6: key 'required': 'yes' is not a boolean; "
                                     "expected true or false, without quotes");
    assert_int_equal(tree_string(value(root, "name"), "name", &s, &err), 0);
    assert_string_equal(s, "kcycle");
    assert_int_equal(tree_string(value(root, "list"), "schedulerName", &s, &err), -EINVAL);
    assert_string_equal(err.message, "b.yaml:5:7: key 'schedulerName': got a list; expected a "
                                     "string");
    assert_int_equal(tree_string(value(root, "nothing"), "pluginDir", &s, &err), -EINVAL);
    assert_string_equal(err.message, "b.yaml:6:9: key 'pluginDir': got no value; expected a "
                                     "string");
    tree_free(root);
}

static int64_t duration_of(const char *text, int *rc, struct kc_error *err)
{
    char doc[128];
    snprintf(doc, sizeof(doc), "d: %s\n", text);
    struct tree *root = parse_ok("d.yaml", doc);
    int64_t ms = -1;
    *rc = tree_duration_ms(value(root, "d"), "leaseDuration", &ms, err);
    tree_free(root);
    return ms;
}

static void durations_accept_the_go_subset(void **state)
{
    static const struct {
        const char *text;
        int64_t ms;
    } good[] = {
        {"10s", 10000},          {"1.5s", 1500},     {"250ms", 250},
        {"2m", 120000},          {"1h30m", 5400000}, {"10", 10000},
        {"1.5", 1500},           {"0", 0},           {".5s", 500},
        {"1m30s", 90000},        {"\"15s\"", 15000}, {"0.001s", 1},
        {"1.0000000000s", 1000},
    };
    struct kc_error err = {{0}};
    int rc;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t ms = duration_of(good[i].text, &rc, &err);
        if (rc != 0 || ms != good[i].ms)
            fail_msg("%s: rc %d, %lld ms: %s", good[i].text, rc, (long long)ms, err.message);
    }
}

static void durations_reject_other_forms_with_the_expected_text(void **state)
{
    static const char *const bad[] = {"10x", "-1s",  "s",       "1.2.3s", "10 s",
                                      "1d",  "\"\"", "0.0001s", "1.5ms",  "9999999999999999999h"};
    struct kc_error err = {{0}};
    int rc;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        duration_of(bad[i], &rc, &err);
        if (rc != -EINVAL)
            fail_msg("%s accepted", bad[i]);
        assert_non_null(strstr(err.message, "expected a duration such as 10s, 1.5s, 250ms, 2m "
                                            "or 1h30m (a plain number is seconds)"));
    }
    duration_of("10x", &rc, &err);
    assert_string_equal(err.message, "d.yaml:1:4: key 'leaseDuration': '10x' is not a duration; "
                                     "expected a duration such as 10s, 1.5s, 250ms, 2m or 1h30m "
                                     "(a plain number is seconds)");
    duration_of("1.5ms", &rc, &err);
    assert_non_null(strstr(err.message, "'1.5ms' is not a whole number of milliseconds"));
}

static void quantities_from_strings_and_numbers(void **state)
{
    struct tree *root = parse_ok("q.yaml", "cpu: 500m\nwhole: 2\nmem: \"1Gi\"\nhalf: 0.5\n"
                                           "bad: 1K\nhuge: 10E\n");
    struct kc_error err = {{0}};
    int64_t v = 0;
    assert_int_equal(tree_quantity(value(root, "cpu"), "cpu", &v, &err), 0);
    assert_int_equal(v, 500);
    assert_int_equal(tree_quantity(value(root, "whole"), "cpu", &v, &err), 0);
    assert_int_equal(v, 2000);
    assert_int_equal(tree_quantity(value(root, "mem"), "memory", &v, &err), 0);
    assert_int_equal(v, 1073741824);
    assert_int_equal(tree_quantity(value(root, "half"), "nvidia.com/gpu", &v, &err), 0);
    assert_int_equal(v, 1);
    assert_int_equal(tree_quantity(value(root, "bad"), "memory", &v, &err), -EINVAL);
    assert_string_equal(err.message, "q.yaml:5:6: key 'memory': '1K' is not a quantity; expected "
                                     "a Kubernetes quantity such as 500m, 2, 1.5, 100M or 1Gi "
                                     "(suffixes are case-sensitive)");
    assert_int_equal(tree_quantity(value(root, "huge"), "memory", &v, &err), -EINVAL);
    assert_string_equal(err.message, "q.yaml:6:7: key 'memory': '10E' is too large to account "
                                     "for; expected a value that fits in 64 bits at units");
    tree_free(root);
}

static void check_keys_lists_the_allowed_keys(void **state)
{
    static const char *const allowed[] = {"name", "weight", NULL};
    struct tree *root = parse_ok("k.yaml", "name: a\n  # comment\nwieght: 3\n");
    struct kc_error err = {{0}};
    assert_int_equal(tree_check_keys(root, "a plugin entry", allowed, &err), -EINVAL);
    assert_string_equal(err.message, "k.yaml:3:1: key 'wieght': unknown key in a plugin entry; "
                                     "expected one of: name, weight");
    assert_int_equal(tree_check_keys(tree_get(root, "name"), "plugins", allowed, &err), -EINVAL);
    assert_string_equal(err.message, "k.yaml:1:7: key 'plugins': got a value; expected a map");
    tree_free(root);
    root = parse_ok("k.yaml", "weight: 1\n");
    assert_int_equal(tree_check_keys(root, "a plugin entry", allowed, &err), 0);
    tree_free(root);
}

/* ---- JSON ---- */

static void to_json_prints_reals_exactly_and_briefly(void **state)
{
    struct tree *root = parse_ok("r.yaml", "short: {a: 0.1, b: 2.5}\n"
                                           "long: {c: 0.30000000000000004}\n");
    char *short_json = tree_to_json(tree_get(root, "short"));
    char *long_json = tree_to_json(tree_get(root, "long"));
    assert_string_equal(short_json, "{\"a\":0.1,\"b\":2.5}");
    assert_string_equal(long_json, "{\"c\":0.30000000000000004}");
    free(short_json);
    free(long_json);
    tree_free(root);
}

static void to_json_types_scalars_like_yaml_and_round_trips(void **state)
{
    struct tree *root = parse_ok("args.yaml", "s: hello\n"
                                              "q: \"42\"\n"
                                              "i: 42\n"
                                              "neg: -7\n"
                                              "f: 1.5\n"
                                              "exp: 1e3\n"
                                              "t: true\n"
                                              "F: False\n"
                                              "n: null\n"
                                              "e:\n"
                                              "tilde: ~\n"
                                              "list: [1, \"two\", 3.0, false]\n"
                                              "nested: {a: {b: []}}\n"
                                              "hex: 0x1F\n"
                                              "oct: 0o17\n"
                                              "ver: 1.2.3\n"
                                              "yes: yes\n"
                                              "text: |\n"
                                              "  line \"one\"\n");
    char *json = tree_to_json(root);
    assert_non_null(json);
    assert_string_equal(json, "{\"s\":\"hello\",\"q\":\"42\",\"i\":42,\"neg\":-7,\"f\":1.5,"
                              "\"exp\":1e3,\"t\":true,\"F\":false,\"n\":null,\"e\":null,"
                              "\"tilde\":null,\"list\":[1,\"two\",3.0,false],"
                              "\"nested\":{\"a\":{\"b\":[]}},\"hex\":31,\"oct\":15,"
                              "\"ver\":\"1.2.3\",\"yes\":\"yes\","
                              "\"text\":\"line \\\"one\\\"\\n\"}");
    struct tree *again = parse_ok("args.json", json);
    char *json_again = tree_to_json(again);
    assert_string_equal(json_again, json);
    free(json_again);
    tree_free(again);
    free(json);

    char *sub = tree_to_json(tree_get(root, "list"));
    assert_string_equal(sub, "[1,\"two\",3.0,false]");
    free(sub);
    char *scalar = tree_to_json(tree_get(root, "s"));
    assert_string_equal(scalar, "\"hello\"");
    free(scalar);
    tree_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nested_yaml_nodes_have_one_based_positions),
        cmocka_unit_test(tab_indented_json_parses_with_positions),
        cmocka_unit_test(tab_indented_yaml_is_still_an_error),
        cmocka_unit_test(strict_json_and_flow_yaml_give_the_same_tree),
        cmocka_unit_test(json_escapes_decode_to_utf8),
        cmocka_unit_test(json_maps_with_many_keys_still_find_duplicates),
        cmocka_unit_test(empty_documents_are_empty_maps),
        cmocka_unit_test(duplicate_keys_name_both_positions),
        cmocka_unit_test(anchors_and_aliases_are_rejected),
        cmocka_unit_test(non_scalar_keys_are_rejected),
        cmocka_unit_test(second_document_is_rejected),
        cmocka_unit_test(syntax_errors_name_file_line_and_column),
        cmocka_unit_test(nul_in_a_value_is_rejected),
        cmocka_unit_test(deep_nesting_is_rejected),
        cmocka_unit_test(missing_file_is_enoent),
        cmocka_unit_test(lookups_and_nulls),
        cmocka_unit_test(int_reads_and_their_errors),
        cmocka_unit_test(bool_and_string_reads),
        cmocka_unit_test(durations_accept_the_go_subset),
        cmocka_unit_test(durations_reject_other_forms_with_the_expected_text),
        cmocka_unit_test(quantities_from_strings_and_numbers),
        cmocka_unit_test(check_keys_lists_the_allowed_keys),
        cmocka_unit_test(to_json_types_scalars_like_yaml_and_round_trips),
        cmocka_unit_test(to_json_prints_reals_exactly_and_briefly),
    };
    return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
