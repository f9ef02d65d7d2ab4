/* kcycle-kube-bridge: parse arguments, then run the bridge until SIGTERM or SIGINT. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kcycle/version.h>

#include "bridge.h"
#include "config.h"
#include "log.h"
#include "quantity.h"
#include "tree.h"

static struct bridge the_bridge;

static void on_signal(int sig)
{
    (void)sig;
    bridge_stop(&the_bridge);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kcycle-kube-bridge [options]\n"
            "\n"
            "  --config FILE          the scheduler config: schedulerName, leaderElection and\n"
            "                         bridge.address are read from it; flags win\n"
            "  --listen URL           where the scheduler connects (default: bridge.address,\n"
            "                         ipc:///tmp/kcycle-UID/bridge.ipc, a 0700 directory)\n"
            "  --kubeconfig FILE      (default: in-cluster service account, then $KUBECONFIG)\n"
            "  --context NAME         kubeconfig context (default: current-context)\n"
            "  --scheduler-name NAME  reported in events (default: schedulerName, kcycle)\n"
            "  --leader-elect         hold a Lease; only the holder binds (default:\n"
            "                         leaderElection.leaderElect, true)\n"
            "  --no-leader-elect      bind without a lease (one replica only)\n"
            "  --lease-name NAME      (default: leaderElection.resourceName, kcycle)\n"
            "  --lease-namespace NS   (default: leaderElection.resourceNamespace, else the\n"
            "                         namespace this pod runs in)\n"
            "  --identity ID          (default: $POD_NAME, else the host name)\n"
            "  --lease-duration D     (default: leaderElection.leaseDuration, 15s)\n"
            "  --renew-deadline D     (default: leaderElection.renewDeadline, 10s)\n"
            "  --retry-period D       (default: leaderElection.retryPeriod, 2s)\n"
            "  --workers N            API writer threads (default 8)\n"
            "  --health-port N        /healthz, /livez, /readyz and /metrics over HTTP\n"
            "                         (default 10259; 0 off)\n"
            "  --health-port-file FILE  write the port served to FILE; with it, --health-port\n"
            "                         0 picks a free port instead of turning the endpoints off\n"
            "  --log-format F         text (default) or json: one JSON object per log line\n"
            "  --max-response-bytes Q the most one API response (a list page) may bring, decoded\n"
            "                         (default 256Mi); a larger one is an error, then a retry\n"
            "  --max-event-bytes Q    the most one watch event may bring (default 16Mi)\n"
            "  --max-list-bytes Q     the most all the pages of one list may bring, decoded\n"
            "                         (default 4 x --max-response-bytes, 1Gi)\n"
            "  -v, --verbose          more log output (repeat for debug)\n"
            "  --version              print the version\n"
            "  -h, --help             print this help\n");
}

/* A size flag: a quantity ("256Mi", "16M", "1048576") of at least 1 KiB. */
static int parse_size(const char *flag, const char *text, size_t *out)
{
    int64_t v = 0;
    if (quantity_parse(text, strlen(text), 0, &v) < 0 || v < 1024 || (uint64_t)v > SIZE_MAX) {
        fprintf(stderr,
                "kcycle-kube-bridge: --%s '%s': expected a size of at least 1Ki (e.g. "
                "256Mi)\n",
                flag, text);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

/* A duration flag ("15s", "1500ms") through the config file's duration rules. */
static int parse_duration(const char *flag, const char *text, int64_t *out)
{
    struct tree t = {.type = TREE_SCALAR, .scalar = (char *)text, .file = "command line"};
    struct kc_error err = {{0}};
    if (tree_duration_ms(&t, flag, out, &err) < 0 || *out <= 0) {
        fprintf(stderr, "kcycle-kube-bridge: --%s '%s': not a duration (e.g. 15s, 500ms)\n", flag,
                text);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    enum {
        O_LISTEN = 256,
        O_CONFIG,
        O_KUBECONFIG,
        O_CONTEXT,
        O_NAME,
        O_ELECT,
        O_NO_ELECT,
        O_LEASE_NAME,
        O_LEASE_NS,
        O_IDENTITY,
        O_DURATION,
        O_RENEW,
        O_RETRY,
        O_WORKERS,
        O_HEALTH,
        O_VERSION,
        O_LOG_FORMAT,
        O_MAX_RESPONSE,
        O_MAX_EVENT,
        O_HEALTH_FILE,
        O_MAX_LIST
    };
    static const struct option options[] = {
        {"listen", required_argument, NULL, O_LISTEN},
        {"config", required_argument, NULL, O_CONFIG},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"context", required_argument, NULL, O_CONTEXT},
        {"scheduler-name", required_argument, NULL, O_NAME},
        {"leader-elect", no_argument, NULL, O_ELECT},
        {"no-leader-elect", no_argument, NULL, O_NO_ELECT},
        {"lease-name", required_argument, NULL, O_LEASE_NAME},
        {"lease-namespace", required_argument, NULL, O_LEASE_NS},
        {"identity", required_argument, NULL, O_IDENTITY},
        {"lease-duration", required_argument, NULL, O_DURATION},
        {"renew-deadline", required_argument, NULL, O_RENEW},
        {"retry-period", required_argument, NULL, O_RETRY},
        {"workers", required_argument, NULL, O_WORKERS},
        {"health-port", required_argument, NULL, O_HEALTH},
        {"log-format", required_argument, NULL, O_LOG_FORMAT},
        {"max-response-bytes", required_argument, NULL, O_MAX_RESPONSE},
        {"max-event-bytes", required_argument, NULL, O_MAX_EVENT},
        {"health-port-file", required_argument, NULL, O_HEALTH_FILE},
        {"max-list-bytes", required_argument, NULL, O_MAX_LIST},
        {"verbose", no_argument, NULL, 'v'},
        {"version", no_argument, NULL, O_VERSION},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct bridge_options opt = {
        .listen_url = NULL,
        .scheduler_name = NULL,
        .workers = 8,
        .health_port = 10259,
    };
    const char *config_path = NULL;
    int elect_flag = -1, verbosity = 0, c;
    bool durations_set[3] = {false, false, false};
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        switch (c) {
        case O_LISTEN: opt.listen_url = optarg; break;
        case O_CONFIG: config_path = optarg; break;
        case O_KUBECONFIG: opt.kubeconfig = optarg; break;
        case O_CONTEXT: opt.context = optarg; break;
        case O_NAME: opt.scheduler_name = optarg; break;
        case O_ELECT: elect_flag = 1; break;
        case O_NO_ELECT: elect_flag = 0; break;
        case O_LEASE_NAME: opt.lease_name = optarg; break;
        case O_LEASE_NS: opt.lease_namespace = optarg; break;
        case O_IDENTITY: opt.identity = optarg; break;
        case O_DURATION:
            if (parse_duration("lease-duration", optarg, &opt.lease_duration_ms) < 0)
                return 2;
            durations_set[0] = true;
            break;
        case O_RENEW:
            if (parse_duration("renew-deadline", optarg, &opt.renew_deadline_ms) < 0)
                return 2;
            durations_set[1] = true;
            break;
        case O_RETRY:
            if (parse_duration("retry-period", optarg, &opt.retry_period_ms) < 0)
                return 2;
            durations_set[2] = true;
            break;
        case O_WORKERS: {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end != '\0' || n < 1 || n > 256) {
                fprintf(stderr, "kcycle-kube-bridge: --workers '%s': expected 1..256\n", optarg);
                return 2;
            }
            opt.workers = (uint32_t)n;
            break;
        }
        case O_HEALTH: {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end != '\0' || n < 0 || n > 65535) {
                fprintf(stderr, "kcycle-kube-bridge: --health-port '%s': expected 0..65535\n",
                        optarg);
                return 2;
            }
            opt.health_port = n == 0 ? -1 : (int)n;
            break;
        }
        case O_HEALTH_FILE: opt.health_port_file = optarg; break;
        case O_LOG_FORMAT:
            if (log_set_format(optarg) < 0) {
                fprintf(stderr, "kcycle-kube-bridge: --log-format '%s': expected text or json\n",
                        optarg);
                return 2;
            }
            break;
        case O_MAX_RESPONSE:
            if (parse_size("max-response-bytes", optarg, &opt.limits.response_bytes) < 0)
                return 2;
            break;
        case O_MAX_EVENT:
            if (parse_size("max-event-bytes", optarg, &opt.limits.event_bytes) < 0)
                return 2;
            break;
        case O_MAX_LIST:
            if (parse_size("max-list-bytes", optarg, &opt.limits.list_bytes) < 0)
                return 2;
            break;
        case 'v': verbosity++; break;
        case O_VERSION: printf("kcycle-kube-bridge %s\n", KC_VERSION_STRING); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "kcycle-kube-bridge: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    log_set_level(verbosity >= 2 ? KC_LOG_DEBUG : verbosity == 1 ? KC_LOG_INFO : KC_LOG_WARN);
    if (opt.health_port_file != NULL && opt.health_port < 0)
        opt.health_port = 0; /* --health-port 0 with a port file: a free port, not off */

    /* the scheduler config (or its defaults) supplies what flags did not: one source of truth
     * for the scheduler name, the bridge address and leader election */
    struct config cfg = {0};
    struct kc_error err = {{0}};
    int rc = config_path != NULL ? config_load_file(config_path, &cfg, &err) : config_default(&cfg);
    if (rc < 0) {
        fprintf(stderr, "kcycle-kube-bridge: %s\n", err.message[0] ? err.message : kc_strerror(rc));
        return 1;
    }
    const struct leader_election *le = &cfg.leader_election;
    if (opt.listen_url == NULL)
        opt.listen_url = cfg.bridge_address;
    if (opt.scheduler_name == NULL)
        opt.scheduler_name = cfg.scheduler_name;
    opt.leader_elect = elect_flag >= 0 ? elect_flag == 1 : le->enabled;
    if (!durations_set[0])
        opt.lease_duration_ms = le->lease_duration_ms;
    if (!durations_set[1])
        opt.renew_deadline_ms = le->renew_deadline_ms;
    if (!durations_set[2])
        opt.retry_period_ms = le->retry_period_ms;
    if (opt.lease_name == NULL)
        opt.lease_name = le->lease_name;
    if (opt.lease_namespace == NULL && le->lease_namespace[0] != '\0')
        opt.lease_namespace = le->lease_namespace; /* else the namespace we run in */
    if (opt.renew_deadline_ms >= opt.lease_duration_ms ||
        opt.retry_period_ms >= opt.renew_deadline_ms) {
        fprintf(stderr, "kcycle-kube-bridge: leader election needs retry period < renew "
                        "deadline < lease duration\n");
        config_free(&cfg);
        return 2;
    }
    char host[256] = "kcycle";
    if (opt.identity == NULL) {
        const char *pod = getenv("POD_NAME");
        if (pod != NULL && pod[0] != '\0')
            opt.identity = pod;
        else {
            gethostname(host, sizeof(host) - 1);
            opt.identity = host;
        }
    }

    rc = bridge_open(&the_bridge, &opt, &err);
    if (rc < 0) {
        fprintf(stderr, "kcycle-kube-bridge: %s\n", err.message[0] ? err.message : kc_strerror(rc));
        bridge_close(&the_bridge);
        config_free(&cfg);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = bridge_run(&the_bridge);
    bridge_close(&the_bridge);
    config_free(&cfg);
    return rc < 0 ? 1 : 0;
}
