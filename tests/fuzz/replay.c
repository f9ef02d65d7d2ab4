/* Runs a fuzz target without libFuzzer: each file named on the command line, and each file in
 * each directory named there, goes once through LLVMFuzzerTestOneInput. The `fuzz` test suite
 * runs this over the seed corpus, so every build (gcc included) replays it as a regression test. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fuzz.h"

struct stats {
    unsigned inputs;
    double slowest_s;
    char slowest[512];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The buffer holds exactly the file, as libFuzzer's does, so a read past the end is caught by
 * ASan or valgrind; a zero-length input still gets a valid pointer. */
static int read_input(const char *path, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -errno;
    struct stat st;
    int rc = fstat(fileno(f), &st) == 0 ? 0 : -errno;
    *size = rc == 0 ? (size_t)st.st_size : 0;
    *data = rc == 0 ? malloc(*size > 0 ? *size : 1) : NULL;
    if (rc == 0 && *data == NULL)
        rc = -ENOMEM;
    if (rc == 0 && fread(*data, 1, *size, f) != *size)
        rc = ferror(f) ? -EIO : -ENODATA; /* the file shrank while being read */
    fclose(f);
    if (rc != 0) {
        free(*data);
        *data = NULL;
    }
    return rc;
}

static int run_file(const char *path, struct stats *stats)
{
    uint8_t *data;
    size_t size;
    int rc = read_input(path, &data, &size);
    if (rc != 0) {
        fprintf(stderr, "replay: %s: cannot read: %s\n", path, strerror(-rc));
        return rc;
    }
    /* Named before it runs: if the target crashes, the last line says which input did it. */
    if (getenv("KCYCLE_FUZZ_VERBOSE") != NULL)
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
    double start = now_s();
    LLVMFuzzerTestOneInput(data, size);
    double took = now_s() - start;
    free(data);
    stats->inputs++;
    if (took > stats->slowest_s) {
        stats->slowest_s = took;
        snprintf(stats->slowest, sizeof(stats->slowest), "%s", path);
    }
    return 0;
}

static int visible_entry(const struct dirent *entry)
{
    return entry->d_name[0] != '.';
}

/* Sorted, so every run replays in the same order. Subdirectories are not entered. */
static int run_directory(const char *dir, struct stats *stats)
{
    struct dirent **entries;
    int count = scandir(dir, &entries, visible_entry, alphasort);
    if (count < 0) {
        fprintf(stderr, "replay: %s: cannot list: %s\n", dir, strerror(errno));
        return -errno;
    }
    unsigned before = stats->inputs;
    int rc = 0;
    for (int i = 0; i < count; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", dir, entries[i]->d_name);
        if (rc == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            rc = run_file(path, stats);
        free(entries[i]);
    }
    free(entries);
    /* An empty corpus would make the test pass while testing nothing: a wrong path, say. */
    if (rc == 0 && stats->inputs == before) {
        fprintf(stderr, "replay: %s: no inputs\n", dir);
        rc = -ENOENT;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    struct stats stats = {0};
    double start = now_s();
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_directory(argv[i], &stats) : run_file(argv[i], &stats);
        if (rc != 0)
            return 1;
    }
    printf("replay: %u inputs in %.3f s; slowest %.3f s: %s\n", stats.inputs, now_s() - start,
           stats.slowest_s, stats.slowest);
    return 0;
}
