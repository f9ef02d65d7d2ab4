/* kcycle-scheduler: parse arguments, then run the simulator (--simulate) or schedule a real
 * cluster through kcycle-kube-bridge (--bridge). */
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kcycle/version.h>

#include "bridge_client.h"
#include "crash.h"
#include "health.h"
#include "log.h"
#include "simulator.h"

static atomic_bool stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_requested, true);
}

static bool health_check(void *ctx, const char *path)
{
    struct bridge_client *b = ctx;
    if (strcmp(path, "/readyz") == 0)
        return bridge_client_ready(b);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return bridge_client_alive(b, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Schedule a real cluster until SIGTERM or SIGINT. */
static int run_bridge(const struct bridge_client_options *opt, int health_port)
{
    static struct bridge_client client;
    struct kc_error err = {{0}};
    int rc = bridge_client_open(&client, opt, &err);
    if (rc < 0) {
        fprintf(stderr, "kcycle-scheduler: %s\n", err.message[0] ? err.message : kc_strerror(rc));
        bridge_client_close(&client);
        return 1;
    }
    struct health_server *health = NULL;
    if (health_port > 0 && health_start(&health, health_port, health_check, &client, &err) < 0) {
        fprintf(stderr, "kcycle-scheduler: %s\n", err.message);
        bridge_client_close(&client);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    bridge_client_run(&client, &stop_requested);
    health_stop(health);
    const struct scheduler_stats *st = &client.sched.stats;
    log_info("stopping: %llu attempts, %llu scheduled, %llu binding failures",
             (unsigned long long)st->attempts, (unsigned long long)st->scheduled,
             (unsigned long long)st->bind_failures);
    bridge_client_close(&client);
    return 0;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kcycle-scheduler --simulate FILE [--report FILE.json] [options]\n"
            "       kcycle-scheduler --bridge URL [options]\n"
            "\n"
            "  --simulate FILE     schedule the cluster and workload described in FILE\n"
            "  --report FILE.json  write the placements and summary as JSON\n"
            "  --bridge URL        schedule the cluster kcycle-kube-bridge serves at URL\n"
            "                      (e.g. ipc:///run/kcycle/bridge.sock)\n"
            "  --health-port N     with --bridge: /healthz and /readyz (default 10260; 0 off)\n"
            "  --config FILE       scheduler configuration (YAML or JSON)\n"
            "  --plugin-dir DIR    where plugins are found (before pluginDir)\n"
            "  --watch-plugins     hot reload: load a changed plugin file as a new generation\n"
            "  --watch-config      hot reload: reload a changed --config file (SIGHUP also does)\n"
            "  --pace N            with --simulate: at most N pod arrivals per wall-clock second\n"
            "  --max-objects N     with --simulate: refuse a file that asks for more objects\n"
            "                      (nodes, pods, arrivals, groups; default 2000000)\n"
            "  --quiet             no placement table, only the summary\n"
            "  --no-progress       no progress lines on stderr (runs over a second)\n"
            "  -v, --verbose       more log output (repeat for debug)\n"
            "  --version           print the version\n");
}

int main(int argc, char **argv)
{
    /* an in-process plugin that crashes takes the scheduler down: say which one, and where */
    crash_handler_install("kcycle-scheduler",
                          "an in-process plugin that crashes ends the scheduler; with "
                          "isolation: process it would cost one attempt");
    static const struct option options[] = {
        {"simulate", required_argument, NULL, 's'},
        {"report", required_argument, NULL, 'r'},
        {"config", required_argument, NULL, 'c'},
        {"plugin-dir", required_argument, NULL, 'p'},
        {"quiet", no_argument, NULL, 'q'},
        {"no-progress", no_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {"bridge", required_argument, NULL, 'b'},
        {"health-port", required_argument, NULL, 'H'},
        {"watch-plugins", no_argument, NULL, 'W'},
        {"watch-config", no_argument, NULL, 'C'},
        {"pace", required_argument, NULL, 'A'},
        {"max-objects", required_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    const char *bridge_url = NULL;
    int health_port = 10260;
    struct sim_options opt = {.progress = true};
    int verbosity = 0, c;
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        switch (c) {
        case 's': opt.sim_path = optarg; break;
        case 'r': opt.report_path = optarg; break;
        case 'c': opt.config_path = optarg; break;
        case 'p': opt.plugin_dir = optarg; break;
        case 'q': opt.quiet = true; break;
        case 'b': bridge_url = optarg; break;
        case 'H': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end != '\0' || n < 0 || n > 65535) {
                fprintf(stderr, "kcycle-scheduler: --health-port '%s': expected 0..65535\n",
                        optarg);
                return 2;
            }
            health_port = (int)n;
            break;
        }
        case 'P': opt.progress = false; break;
        case 'W': opt.watch_plugins = true; break;
        case 'C': opt.watch_config = true; break;
        case 'A': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end != '\0' || n < 1 || n > 100000000) {
                fprintf(stderr,
                        "kcycle-scheduler: --pace '%s': expected pods per second, 1 or more\n",
                        optarg);
                return 2;
            }
            opt.pace = (uint32_t)n;
            break;
        }
        case 'M': {
            char *end;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (*end != '\0' || optarg[0] == '-' || n < 1) {
                fprintf(stderr,
                        "kcycle-scheduler: --max-objects '%s': expected a count, 1 or "
                        "more\n",
                        optarg);
                return 2;
            }
            opt.max_objects = n;
            break;
        }
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
    if ((opt.sim_path == NULL) == (bridge_url == NULL)) {
        fprintf(stderr, "kcycle-scheduler: give one of --simulate FILE or --bridge URL\n");
        usage(stderr);
        return 2;
    }
    log_set_level(verbosity >= 2 ? KC_LOG_DEBUG : verbosity == 1 ? KC_LOG_INFO : KC_LOG_WARN);
    if (bridge_url != NULL) {
        struct bridge_client_options bopt = {.url = bridge_url,
                                             .config_path = opt.config_path,
                                             .plugin_dir = opt.plugin_dir,
                                             .watch_plugins = opt.watch_plugins,
                                             .watch_config = opt.watch_config};
        watch_install_sighup(); /* a reload, never the default: the end of the process */
        return run_bridge(&bopt, health_port);
    }

    watch_install_sighup();
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
