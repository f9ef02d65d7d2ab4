/* kcycle-bench's machine figures (bench_machine.h): the huge pages under the node array. */
#include "bench_machine.h"

#include <inttypes.h>
#include <stdio.h>

int64_t bench_huge_page_bytes(const void *start, size_t bytes)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (f == NULL)
        return -1;
    uintptr_t lo = (uintptr_t)start, hi = lo + bytes;
    uintptr_t map_lo = 0, map_hi = 0;
    int64_t total = 0;
    char line[512];
    while (fgets(line, sizeof(line), f) != NULL) {
        uintptr_t a, b;
        int64_t kb;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &a, &b) == 2) { /* a mapping's header */
            map_lo = a;
            map_hi = b;
        } else if (sscanf(line, "AnonHugePages: %" SCNd64 " kB", &kb) == 1 && map_hi > lo &&
                   map_lo < hi) {
            /* a mapping larger than the range: count at most the overlap */
            uintptr_t from = map_lo > lo ? map_lo : lo, to = map_hi < hi ? map_hi : hi;
            int64_t huge = kb * 1024, overlap = (int64_t)(to - from);
            total += huge < overlap ? huge : overlap;
        }
    }
    fclose(f);
    return total;
}
