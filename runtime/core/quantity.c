/* Kubernetes quantities: apimachinery's ParseQuantity grammar, then the value scaled and rounded
 * up with exact integer arithmetic (no floating point, no allocation). */
#include "quantity.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* apimachinery keeps a parsed value to nano precision, rounding finer values away from zero. */
#define NANO_SCALE (-9)
/* The most decimal digits a value <= INT64_MAX can have. */
#define INT64_DIGITS 19

/* A quantity split the way apimachinery's parseQuantityString splits it. */
struct quantity_parts {
    bool negative;
    bool has_digit;  /* any digit before the suffix ("", "+", ".", "m" have none) */
    const char *num; /* integer digits, leading zeros stripped */
    size_t num_len;
    const char *frac; /* digits after '.' */
    size_t frac_len;
    bool binary; /* value * 2^exponent (Ki..Ei); otherwise value * 10^exponent */
    int32_t exponent;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_suffix_letter(char c)
{
    return c != '\0' && strchr("eEinumkKMGTP", c) != NULL;
}

static bool suffix_is(const char *s, size_t len, const char *name)
{
    return len == strlen(name) && memcmp(s, name, len) == 0;
}

/* strconv.ParseInt(s, 10, 64): optional sign, at least one digit, in int64 range. */
static int parse_go_int64(const char *s, size_t len, int64_t *out)
{
    bool negative = false;
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        negative = s[i] == '-';
        i++;
    }
    if (i == len)
        return -EINVAL;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (!is_digit(s[i]))
            return -EINVAL;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (limit - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

/* Go's int32(x): apimachinery keeps a parsed exponent as int32, dropping the high bits. */
static int32_t wrap_int32(int64_t v)
{
    uint32_t u = (uint32_t)(uint64_t)v;
    if (u <= (uint32_t)INT32_MAX)
        return (int32_t)u;
    return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* apimachinery's suffixer.interpret: exact table entries, then "e"/"E" + a Go int64. */
static int interpret_suffix(const char *s, size_t len, struct quantity_parts *q)
{
    static const struct {
        const char *name;
        bool binary;
        int32_t exponent;
    } table[] = {
        {"", false, 0},   {"n", false, -9}, {"u", false, -6}, {"m", false, -3},
        {"k", false, 3},  {"M", false, 6},  {"G", false, 9},  {"T", false, 12},
        {"P", false, 15}, {"E", false, 18}, {"Ki", true, 10}, {"Mi", true, 20},
        {"Gi", true, 30}, {"Ti", true, 40}, {"Pi", true, 50}, {"Ei", true, 60},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (suffix_is(s, len, table[i].name)) {
            q->binary = table[i].binary;
            q->exponent = table[i].exponent;
            return 0;
        }
    }
    if (len < 2 || (s[0] != 'e' && s[0] != 'E'))
        return -EINVAL;
    int64_t exponent;
    if (parse_go_int64(s + 1, len - 1, &exponent) != 0)
        return -EINVAL;
    q->binary = false;
    q->exponent = wrap_int32(exponent);
    return 0;
}

/* The suffix must be [eEinumkKMGTP]*[+-]?[0-9]* up to the end, as parseQuantityString scans. */
static bool suffix_shape_ok(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && is_suffix_letter(s[i]))
        i++;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    while (i < len && is_digit(s[i]))
        i++;
    return i == len;
}

static size_t skip_digits(const char *s, size_t pos, size_t len)
{
    while (pos < len && is_digit(s[pos]))
        pos++;
    return pos;
}

static int split_quantity(const char *s, size_t len, struct quantity_parts *q)
{
    size_t pos = 0;
    memset(q, 0, sizeof(*q));
    if (pos < len && (s[pos] == '+' || s[pos] == '-')) {
        q->negative = s[pos] == '-';
        pos++;
    }
    size_t zeros_start = pos;
    while (pos < len && s[pos] == '0')
        pos++;
    q->has_digit = pos > zeros_start;
    q->num = s + pos;
    pos = skip_digits(s, pos, len);
    q->num_len = (size_t)(s + pos - q->num);
    if (pos < len && s[pos] == '.') {
        pos++;
        q->frac = s + pos;
        pos = skip_digits(s, pos, len);
        q->frac_len = (size_t)(s + pos - q->frac);
    }
    q->has_digit = q->has_digit || q->num_len > 0 || q->frac_len > 0;
    if (!suffix_shape_ok(s + pos, len - pos))
        return -EINVAL;
    return interpret_suffix(s + pos, len - pos, q);
}

/* A number with no digit at all ("+", ".", "m", "Ki") is zero only on apimachinery's int64
 * fast path; its big-decimal fallback needs a digit and fails. */
static bool digitless_accepted(const struct quantity_parts *q)
{
    if (q->binary)
        return 15 - 1 - q->exponent * 3 / 10 - 1 >= 0; /* Ki..Ti yes, Pi and Ei no */
    return q->exponent >= NANO_SCALE;
}

static int digit_at(const struct quantity_parts *q, size_t i)
{
    return i < q->num_len ? q->num[i] - '0' : q->frac[i - q->num_len] - '0';
}

static int mul_check(uint64_t *v, uint64_t factor)
{
    if (factor != 0 && *v > (uint64_t)INT64_MAX / factor)
        return -ERANGE;
    *v *= factor;
    return 0;
}

static int add_check(uint64_t *v, uint64_t addend)
{
    if (*v > (uint64_t)INT64_MAX - addend)
        return -ERANGE;
    *v += addend;
    return 0;
}

static int mul_pow10(uint64_t *v, int64_t power)
{
    if (*v == 0)
        return 0;
    if (power > INT64_DIGITS)
        return -ERANGE;
    for (int64_t i = 0; i < power; i++) {
        if (mul_check(v, 10) != 0)
            return -ERANGE;
    }
    return 0;
}

/* The significant digits [first, end) of the number: leading and trailing zeros dropped. */
struct digit_span {
    size_t first, end;
    int64_t exponent10; /* value = digits[first, end) * 10^exponent10 (* 2^binary exponent) */
};

static bool significant_digits(const struct quantity_parts *q, struct digit_span *span)
{
    size_t total = q->num_len + q->frac_len;
    size_t first = 0;
    while (first < total && digit_at(q, first) == 0)
        first++;
    if (first == total)
        return false;
    size_t end = total;
    while (digit_at(q, end - 1) == 0)
        end--;
    span->first = first;
    span->end = end;
    span->exponent10 =
        (q->binary ? 0 : (int64_t)q->exponent) - (int64_t)q->frac_len + (int64_t)(total - end);
    return true;
}

static uint64_t digits_value(const struct quantity_parts *q, size_t from, size_t to)
{
    uint64_t v = 0;
    for (size_t i = from; i < to; i++)
        v = v * 10 + (uint64_t)digit_at(q, i);
    return v;
}

/* ceil(0.[zeros x 0][digits from..to) * 2^shift): multiply the decimal fraction by 2^shift from
 * its last digit up, as on paper; what carries past the point is the integer part. Digits are
 * below 10 and carries below 2^shift <= 2^60, so every step fits in uint64. */
static uint64_t fraction_times_pow2(const struct quantity_parts *q, size_t from, size_t to,
                                    int64_t zeros, unsigned shift, bool *inexact)
{
    uint64_t carry = 0;
    *inexact = false;
    for (size_t i = to; i > from; i--) {
        uint64_t t = ((uint64_t)digit_at(q, i - 1) << shift) + carry;
        *inexact = *inexact || t % 10 != 0;
        carry = t / 10;
    }
    for (; zeros > 0 && carry != 0; zeros--) {
        *inexact = *inexact || carry % 10 != 0;
        carry /= 10;
    }
    return carry;
}

/* |value| / 10^scale rounded up, for scale >= nano. */
static int magnitude_at(const struct quantity_parts *q, const struct digit_span *span,
                        int64_t scale, uint64_t *out)
{
    unsigned shift = q->binary ? (unsigned)q->exponent : 0;
    int64_t count = (int64_t)(span->end - span->first);
    int64_t k = span->exponent10 - scale; /* value / 10^scale = digits * 10^k * 2^shift */
    if (k >= 0) {
        if (count + k > INT64_DIGITS)
            return -ERANGE;
        uint64_t v = digits_value(q, span->first, span->end);
        if (mul_pow10(&v, k) != 0 || mul_check(&v, (uint64_t)1 << shift) != 0)
            return -ERANGE;
        *out = v;
        return 0;
    }
    int64_t int_digits = count + k;
    if (int_digits > INT64_DIGITS)
        return -ERANGE;
    size_t split = span->first + (size_t)(int_digits > 0 ? int_digits : 0);
    uint64_t v = digits_value(q, span->first, split);
    bool inexact;
    uint64_t carry =
        fraction_times_pow2(q, split, span->end, int_digits < 0 ? -int_digits : 0, shift, &inexact);
    if (v > ((uint64_t)INT64_MAX >> shift))
        return -ERANGE;
    v <<= shift;
    if (add_check(&v, carry) != 0 || add_check(&v, inexact ? 1 : 0) != 0)
        return -ERANGE;
    *out = v;
    return 0;
}

static int scaled_magnitude(const struct quantity_parts *q, int scale, uint64_t *out)
{
    struct digit_span span;
    if (!significant_digits(q, &span)) {
        *out = 0;
        return 0;
    }
    /* apimachinery clamps a binary-suffixed value above 2^63-1 units; we call it overflow. */
    uint64_t units;
    if (q->binary && scale > 0 && magnitude_at(q, &span, 0, &units) != 0)
        return -ERANGE;
    if (scale >= NANO_SCALE)
        return magnitude_at(q, &span, scale, out);
    /* Finer than nano: the value was already rounded up to whole nanos, so scale up exactly. */
    if (magnitude_at(q, &span, NANO_SCALE, out) != 0)
        return -ERANGE;
    return mul_pow10(out, (int64_t)NANO_SCALE - scale);
}

int quantity_parse(const char *text, size_t len, int scale, int64_t *out)
{
    struct quantity_parts q;
    if (text == NULL || len == 0 || out == NULL)
        return -EINVAL;
    if (split_quantity(text, len, &q) != 0)
        return -EINVAL;
    if (!q.has_digit && !digitless_accepted(&q))
        return -EINVAL;
    uint64_t magnitude;
    int rc = scaled_magnitude(&q, scale, &magnitude);
    if (rc != 0)
        return rc;
    *out = q.negative ? -(int64_t)magnitude : (int64_t)magnitude;
    return 0;
}

int quantity_scale_for(const char *resource_name)
{
    if (resource_name != NULL && strcmp(resource_name, "cpu") == 0)
        return -3;
    return 0;
}
