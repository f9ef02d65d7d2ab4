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

#endif
