/* Fuzz target for quantity_parse: any bytes are parsed or refused without reading past the
 * length, and the results at different scales agree, since each is the same value rounded up. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz.h"
#include "quantity.h"

struct scaled {
    int scale;
    int rc;
    int64_t value;
};

/* Coarse to fine, each step a factor of 1000; -12 is below the nano precision that
 * apimachinery keeps, so it must be exactly 1000 times the value at -9. */
static const int scales[] = {3, 0, -3, -6, -9, -12};
#define SCALE_COUNT (sizeof(scales) / sizeof(scales[0]))

static void fail_pair(const char *what, const struct scaled *coarse, const struct scaled *fine)
{
    char detail[160];
    snprintf(detail, sizeof(detail),
             "scale %d: rc %d value %" PRId64 "; scale %d: rc %d value %" PRId64, coarse->scale,
             coarse->rc, coarse->value, fine->scale, fine->rc, fine->value);
    fuzz_check(false, what, detail);
}

static uint64_t magnitude(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* The value at the coarser scale implied by the finer one: |fine| / 1000 rounded up, same sign
 * (rounding up twice is rounding up once, so this is exact). */
static int64_t coarser(int64_t fine)
{
    uint64_t m = magnitude(fine);
    uint64_t c = m / 1000 + (m % 1000 != 0);
    return fine < 0 ? -(int64_t)c : (int64_t)c;
}

/* fine is 1000 times finer than coarse; below nano (sub_nano) the value is only scaled, not
 * rounded again, so it must be exactly 1000 times the coarser one. */
static void check_pair(const struct scaled *coarse, const struct scaled *fine, bool sub_nano)
{
    /* The grammar does not depend on the scale. */
    if ((coarse->rc == -EINVAL) != (fine->rc == -EINVAL))
        fail_pair("a scale changed whether the text is a quantity", coarse, fine);
    if (fine->rc == 0 && coarse->rc != 0)
        fail_pair("fits at a finer scale but overflows at a coarser one", coarse, fine);
    if (fine->rc != 0 && coarse->rc == 0 && sub_nano &&
        magnitude(coarse->value) <= (uint64_t)INT64_MAX / 1000)
        fail_pair("overflowed below nano although 1000 times the value fits", coarse, fine);
    if (fine->rc != 0)
        return;
    /* Unsigned, so a bug that overflows is reported rather than undefined. */
    bool agree = sub_nano ? (uint64_t)fine->value == (uint64_t)coarse->value * 1000u
                          : coarse->value == coarser(fine->value);
    if (!agree)
        fail_pair("the scales disagree on the value", coarse, fine);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct scaled results[SCALE_COUNT];
    for (size_t i = 0; i < SCALE_COUNT; i++) {
        struct scaled *r = &results[i];
        r->scale = scales[i];
        r->value = 0;
        r->rc = quantity_parse(text, size, r->scale, &r->value);
        fuzz_check(r->rc == 0 || r->rc == -EINVAL || r->rc == -ERANGE,
                   "quantity_parse returned an undocumented code", NULL);
        /* A leading '-' is the only way to a negative value, and it never makes a positive one. */
        bool minus = size > 0 && text[0] == '-';
        fuzz_check(r->rc != 0 || (minus ? r->value <= 0 : r->value >= 0),
                   "value has the wrong sign", NULL);
    }
    for (size_t i = 0; i + 1 < SCALE_COUNT; i++)
        check_pair(&results[i], &results[i + 1], scales[i + 1] < -9);
    return 0;
}
