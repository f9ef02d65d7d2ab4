/* quantity_parse against apimachinery's ParseQuantity: every row is one named cmocka test.
 * Accept/reject decisions follow apimachinery's quantity.go scanner and quantity_test.go. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "quantity.h"

struct quantity_case {
    const char *name; /* the behaviour the row proves */
    const char *input;
    int scale;
    int rc;
    int64_t value; /* checked only when rc == 0 */
};

#define MILLI (-3)
#define UNIT 0

static const struct quantity_case cases[] = {
    /* Plain numbers and signs */
    {"plain_one_is_one_unit", "1", UNIT, 0, 1},
    {"plain_one_is_thousand_milli", "1", MILLI, 0, 1000},
    {"zero_is_zero", "0", UNIT, 0, 0},
    {"negative_one", "-1", UNIT, 0, -1},
    {"explicit_plus_sign", "+1", UNIT, 0, 1},
    {"leading_zeros_ignored", "007", UNIT, 0, 7},
    {"int64_max_fits", "9223372036854775807", UNIT, 0, INT64_MAX},
    {"int64_max_plus_one_overflows", "9223372036854775808", UNIT, -ERANGE, 0},
    {"int64_min_overflows_magnitude_limit", "-9223372036854775808", UNIT, -ERANGE, 0},
    {"many_digits_still_exact", "123456789012345678", UNIT, 0, 123456789012345678},

    /* Decimal SI suffixes */
    {"milli_at_milli_scale", "500m", MILLI, 0, 500},
    {"milli_rounds_up_to_one_unit", "500m", UNIT, 0, 1},
    {"one_milli_rounds_up_to_one_unit", "1m", UNIT, 0, 1},
    {"nano_rounds_up_to_one_milli", "1n", MILLI, 0, 1},
    {"nano_rounds_up_to_one_unit", "1n", UNIT, 0, 1},
    {"micro_rounds_up_to_one_milli", "1u", MILLI, 0, 1},
    {"kilo_lowercase", "1k", UNIT, 0, 1000},
    {"mega_decimal", "100M", UNIT, 0, 100000000},
    {"exa_decimal", "1E", UNIT, 0, 1000000000000000000},
    {"ten_exa_overflows_units", "10E", UNIT, -ERANGE, 0},
    {"fraction_with_decimal_suffix", "100.035k", UNIT, 0, 100035},

    /* Binary SI suffixes */
    {"kibi", "1Ki", UNIT, 0, 1024},
    {"mebi", "1Mi", UNIT, 0, 1048576},
    {"gibi", "1Gi", UNIT, 0, 1073741824},
    {"tebi", "1Ti", UNIT, 0, 1099511627776},
    {"fractional_gibi", "1.5Gi", UNIT, 0, 1610612736},
    {"fractional_kibi_rounds_up", "0.1Ki", UNIT, 0, 103},
    {"exbi_fits", "1Ei", UNIT, 0, 1152921504606846976},
    {"eight_exbi_overflows_units", "8Ei", UNIT, -ERANGE, 0},
    {"binary_clamp_is_overflow_even_at_kilo_scale", "8Ei", 3, -ERANGE, 0},
    {"tiny_binary_rounds_to_nano_before_finer_scale", "0.000000000001Ki", -12, 0, 2000},

    /* Decimal exponents */
    {"exponent_lowercase", "1e3", UNIT, 0, 1000},
    {"exponent_uppercase", "1E3", UNIT, 0, 1000},
    {"negative_exponent_at_milli", "1e-3", MILLI, 0, 1},
    {"negative_exponent_rounds_up_to_unit", "1E-3", UNIT, 0, 1},
    {"exponent_with_plus_sign", "1.3E+6", UNIT, 0, 1300000},
    {"fraction_with_negative_exponent", "0.5e-2", MILLI, 0, 5},
    {"exponent_wraps_like_go_int32", "1e4294967296", UNIT, 0, 1},

    /* Fractions and rounding */
    {"leading_dot_fraction", ".5", MILLI, 0, 500},
    {"zero_point_five_rounds_up", "0.5", UNIT, 0, 1},
    {"ten_thousandth_rounds_up_to_one_milli", "0.0001", MILLI, 0, 1},
    {"ten_thousandth_rounds_up_to_one_unit", "0.0001", UNIT, 0, 1},
    {"negative_rounds_away_from_zero", "-1.5", UNIT, 0, -2},
    {"negative_hundredths_round_away_from_zero", "-9.01", UNIT, 0, -10},
    {"negative_tiny_rounds_to_minus_one_milli", "-0.0001", MILLI, 0, -1},
    {"finer_than_nano_rounds_up_to_nano", "3.001n", -9, 0, 4},
    {"milli_max_scaled_to_units_rounds_up", "9223372036854775807m", UNIT, 0, 9223372036854776},
    {"trailing_dot_is_accepted", "1.", UNIT, 0, 1},
    {"trailing_dot_before_suffix_is_accepted", "1.G", UNIT, 0, 1000000000},

    /* Numbers without digits that apimachinery still reads as zero (its int64 fast path) */
    {"lone_dot_is_zero", ".", UNIT, 0, 0},
    {"lone_plus_is_zero", "+", UNIT, 0, 0},
    {"lone_suffix_is_zero", "m", MILLI, 0, 0},
    {"lone_pebi_suffix_is_rejected", "Pi", UNIT, -EINVAL, 0},

    /* Rejected text */
    {"empty_is_rejected", "", UNIT, -EINVAL, 0},
    {"leading_space_is_rejected", " 1", UNIT, -EINVAL, 0},
    {"trailing_space_is_rejected", "1 ", UNIT, -EINVAL, 0},
    {"uppercase_kilo_is_rejected", "1K", UNIT, -EINVAL, 0},
    {"letters_are_rejected", "abc", UNIT, -EINVAL, 0},
    {"byte_unit_after_gibi_is_rejected", "1GiB", UNIT, -EINVAL, 0},
    {"lowercase_b_after_gibi_is_rejected", "1Gib", UNIT, -EINVAL, 0},
    {"bare_exponent_marker_is_rejected", "1e", UNIT, -EINVAL, 0},
    {"exponent_without_digits_is_rejected", "1e+", UNIT, -EINVAL, 0},
    {"fraction_exponent_without_digits_is_rejected", "-3.01e-", UNIT, -EINVAL, 0},
    {"two_dots_are_rejected", "1.1.M", UNIT, -EINVAL, 0},
    {"sign_inside_number_is_rejected", "1+1.0M", UNIT, -EINVAL, 0},
    {"milli_with_binary_i_is_rejected", "0.1mi", UNIT, -EINVAL, 0},
    {"lone_i_suffix_is_rejected", ".5i", UNIT, -EINVAL, 0},
    {"double_sign_is_rejected", "--1", UNIT, -EINVAL, 0},
    {"exponent_after_suffix_is_rejected", "1Ee3", UNIT, -EINVAL, 0},
    {"hex_is_rejected", "0x10", UNIT, -EINVAL, 0},
    {"underscore_is_rejected", "1_000", UNIT, -EINVAL, 0},
    {"exponent_beyond_int64_is_rejected", "1e9223372036854775808", UNIT, -EINVAL, 0},
};

#define CASE_COUNT (sizeof(cases) / sizeof(cases[0]))

static void run_case(void **state)
{
    const struct quantity_case *c = *state;
    int64_t value = INT64_MIN + 7; /* a value no row expects: proves it was written */
    int rc = quantity_parse(c->input, strlen(c->input), c->scale, &value);
    if (rc != c->rc)
        fail_msg("\"%s\" at scale %d: rc %d, want %d", c->input, c->scale, rc, c->rc);
    if (rc == 0 && value != c->value)
        fail_msg("\"%s\" at scale %d: %lld, want %lld", c->input, c->scale, (long long)value,
                 (long long)c->value);
}

/* The length bounds the text: bytes after it are never read. */
static void length_bounds_the_text(void **state)
{
    int64_t value = 0;
    assert_int_equal(quantity_parse("250mXYZ", 4, MILLI, &value), 0);
    assert_int_equal(value, 250);
}

static void cpu_is_accounted_in_milli(void **state)
{
    assert_int_equal(quantity_scale_for("cpu"), -3);
    assert_int_equal(quantity_scale_for("memory"), 0);
    assert_int_equal(quantity_scale_for("nvidia.com/gpu"), 0);
    assert_int_equal(quantity_scale_for(NULL), 0);
}

int main(void)
{
    static struct CMUnitTest tests[CASE_COUNT + 2];
    for (size_t i = 0; i < CASE_COUNT; i++) {
        tests[i] = (struct CMUnitTest){
            .name = cases[i].name,
            .test_func = run_case,
            .initial_state = (void *)&cases[i],
        };
    }
    tests[CASE_COUNT] = (struct CMUnitTest)cmocka_unit_test(length_bounds_the_text);
    tests[CASE_COUNT + 1] = (struct CMUnitTest)cmocka_unit_test(cpu_is_accounted_in_milli);
    return _cmocka_run_group_tests("quantity", tests, CASE_COUNT + 2, NULL, NULL);
}
