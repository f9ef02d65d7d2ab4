/* kcycle-bench --metrics compare (see bench_metrics.h). */
#include "bench_metrics.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_ipc.h"

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *values, uint32_t count)
{
    double *sorted = malloc(count * sizeof(*sorted));
    if (sorted == NULL || count == 0) {
        free(sorted);
        return 0;
    }
    memcpy(sorted, values, count * sizeof(*sorted));
    qsort(sorted, count, sizeof(*sorted), compare_double);
    double m = count % 2 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2;
    free(sorted);
    return m;
}

/* One child run with --metrics on or off, in process, with --json: its pods/s and pods per
 * CPU-second (the figure that a loaded machine disturbs least), or -1. */
static int run_child(int argc, char **argv, const char *metrics, double *pods_per_second,
                     double *per_cpu_second)
{
    char **args = calloc((size_t)argc + 6, sizeof(*args));
    if (args == NULL)
        return -1;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        bool valued = strcmp(argv[i], "--metrics") == 0 || strcmp(argv[i], "--isolation") == 0;
        if (valued && i + 1 < argc) {
            i++;
            continue;
        }
        if (strcmp(argv[i], "--json") != 0 && strncmp(argv[i], "--metrics=", 10) != 0 &&
            strncmp(argv[i], "--isolation=", 12) != 0)
            args[n++] = argv[i];
    }
    char *extra[] = {"--metrics", (char *)metrics, "--isolation", "inprocess", "--json"};
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
        args[n++] = extra[i];
    json_t *report = bench_child_json(args);
    free(args);
    json_t *pps = json_object_get(report, "pods_per_second_avg");
    json_t *cpu = json_object_get(report, "pods_per_cpu_second");
    int rc = json_is_number(pps) && json_is_number(cpu) ? 0 : -1;
    if (rc == 0) {
        *pods_per_second = json_number_value(pps);
        *per_cpu_second = json_number_value(cpu);
    }
    json_decref(report);
    return rc;
}

static void print_list(const char *name, const double *values, uint32_t count)
{
    printf("\"%s\": [", name);
    for (uint32_t i = 0; i < count; i++)
        printf("%s%.0f", i ? ", " : "", values[i]);
    printf("], ");
}

int bench_metrics_compare(int argc, char **argv, uint32_t rounds)
{
    if (rounds == 0)
        rounds = 1;
    double *off = calloc(rounds, sizeof(*off)), *on = calloc(rounds, sizeof(*on));
    double *cpu_off = calloc(rounds, sizeof(*off)), *cpu_on = calloc(rounds, sizeof(*on));
    int failed = off == NULL || on == NULL || cpu_off == NULL || cpu_on == NULL;
    for (uint32_t r = 0; r < rounds && !failed; r++) {
        /* off first in even rounds, on first in odd ones */
        bool on_first = r % 2 == 1;
        for (int k = 0; k < 2 && !failed; k++) {
            bool metrics_on = (k == 0) == on_first;
            if (run_child(argc, argv, metrics_on ? "on" : "off", metrics_on ? &on[r] : &off[r],
                          metrics_on ? &cpu_on[r] : &cpu_off[r]) < 0) {
                fprintf(stderr, "kcycle-bench: the run with metrics %s gave no figure\n",
                        metrics_on ? "on" : "off");
                failed = 1;
            }
        }
    }
    if (!failed) {
        double median_off = median(off, rounds), median_on = median(on, rounds);
        double cpu_median_off = median(cpu_off, rounds), cpu_median_on = median(cpu_on, rounds);
        printf("{\"compare\": \"metrics\", \"rounds\": %u, ", rounds);
        print_list("pods_per_second_metrics_off", off, rounds);
        print_list("pods_per_second_metrics_on", on, rounds);
        print_list("pods_per_cpu_second_metrics_off", cpu_off, rounds);
        print_list("pods_per_cpu_second_metrics_on", cpu_on, rounds);
        printf("\"median_off\": %.0f, \"median_on\": %.0f, \"on_over_off\": %.3f, "
               "\"cpu_median_off\": %.0f, \"cpu_median_on\": %.0f, \"cpu_on_over_off\": %.3f}\n",
               median_off, median_on, median_off > 0 ? median_on / median_off : 0, cpu_median_off,
               cpu_median_on, cpu_median_off > 0 ? cpu_median_on / cpu_median_off : 0);
    }
    free(off);
    free(on);
    free(cpu_off);
    free(cpu_on);
    return failed;
}
