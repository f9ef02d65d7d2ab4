/* kcycle-scheduler: parse arguments, then run the simulator (the bridge mode comes later). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kcycle/version.h>

#include "log.h"
#include "simulator.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: kcycle-scheduler --simulate FILE [--report FILE.json] [options]\n"
                 "\n"
                 "  --simulate FILE     schedule the cluster and workload described in FILE\n"
                 "  --report FILE.json  write the placements and summary as JSON\n"
                 "  --config FILE       scheduler configuration (YAML or JSON)\n"
                 "  --plugin-dir DIR    where plugins are found (before pluginDir)\n"
                 "  --quiet             no placement table, only the summary\n"
                 "  --no-progress       no progress lines on stderr (runs over a second)\n"
                 "  -v, --verbose       more log output (repeat for debug)\n"
                 "  --version           print the version\n");
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"simulate", required_argument, NULL, 's'}, {"report", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},   {"plugin-dir", required_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},          {"no-progress", no_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    struct sim_options opt = {.progress = true};
    int verbosity = 0, c;
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        switch (c) {
        case 's': opt.sim_path = optarg; break;
        case 'r': opt.report_path = optarg; break;
        case 'c': opt.config_path = optarg; break;
        case 'p': opt.plugin_dir = optarg; break;
        case 'q': opt.quiet = true; break;
        case 'P': opt.progress = false; break;
        case 'v': verbosity++; break;
        case 'V':
            printf("kcycle-scheduler %s (SDK ABI %u.%u)\n", KC_VERSION_STRING, KC_ABI_MAJOR,
                   KC_ABI_MINOR);
            return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "kcycle-scheduler: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (opt.sim_path == NULL) {
        fprintf(stderr, "kcycle-scheduler: only --simulate FILE is available in this build; "
                        "the Kubernetes bridge mode is not built yet\n");
        usage(stderr);
        return 2;
    }
    log_set_level(verbosity >= 2 ? KC_LOG_DEBUG : verbosity == 1 ? KC_LOG_INFO : KC_LOG_WARN);

    struct simulator sim;
    struct kc_error err = {{0}};
    int rc = simulator_open(&sim, &opt, &err);
    if (rc < 0) {
        fprintf(stderr, "kcycle-scheduler: %s\n", err.message[0] ? err.message : kc_strerror(rc));
        simulator_close(&sim);
        return 1;
    }
    simulator_run(&sim, opt.progress);
    if (!opt.quiet)
        report_print_table(&sim, stdout);
    report_print_summary(&sim, stdout);
    if (opt.report_path != NULL && (rc = report_write_json(&sim, opt.report_path, &err)) < 0) {
        fprintf(stderr, "kcycle-scheduler: %s\n", err.message);
        simulator_close(&sim);
        return 1;
    }
    simulator_close(&sim);
    return 0;
}
