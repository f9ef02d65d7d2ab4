/* What the fuzz targets share: libFuzzer's entry point, and a check that turns a broken
 * invariant into a crash, since a crash is the only finding a fuzzer can report. */
#ifndef KC_TESTS_FUZZ_H
#define KC_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* abort() rather than return: libFuzzer saves the input as a crash-* reproducer, and the
 * corpus replay fails the test. */
static inline void fuzz_check(int ok, const char *what, const char *detail)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz: invariant broken: %s%s%s\n", what, detail != NULL ? ": " : "",
            detail != NULL ? detail : "");
    abort();
}

/* Inputs that carry several messages (a bridge's stream, a host's requests) are frames: a
 * 2-byte little-endian length, then that many bytes. A last frame longer than what is left is
 * cut to what is left, so every input is some sequence of messages. Returns the next frame's
 * start and length in *frame / *len, or 0 at the end. */
static inline int fuzz_next_frame(const uint8_t **data, size_t *size, const uint8_t **frame,
                                  size_t *len)
{
    if (*size < 2)
        return 0;
    size_t want = (size_t)(*data)[0] | (size_t)(*data)[1] << 8;
    *data += 2;
    *size -= 2;
    *len = want < *size ? want : *size;
    *frame = *data;
    *data += *len;
    *size -= *len;
    return 1;
}

#endif
