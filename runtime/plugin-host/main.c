/* kcycle-plugin-host: serves the plugins of one scheduler over the socketpair it inherits from
 * it; the scheduler starts it (docs/architecture.md). The work is in host.c. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kcycle/version.h>

#include "crash.h"
#include "host.h"
#include "log.h"

static struct plugin_host *volatile running;
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
    if (running != NULL)
        plugin_host_stop(running);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: kcycle-plugin-host --fd N [--name NAME] [--plugin-dir DIR] [-v]... "
                 "[--log-format F]\n"
                 "\n"
                 "  --fd N            the connected SOCK_SEQPACKET socket inherited from the\n"
                 "                    scheduler (it passes 3)\n"
                 "  --name NAME       the host group, put in every log line\n"
                 "  --plugin-dir DIR  where plugins without a path are found\n"
                 "  -v, --verbose     more log lines (repeat for debug)\n"
                 "  --version         print the version\n"
                 "  -h, --help        print this help\n"
                 "  --log-format F    text (default) or json, as the scheduler's\n"
                 "The scheduler starts this program; it stops on SIGTERM or when the scheduler "
                 "exits.\n");
}

int main(int argc, char **argv)
{
    struct plugin_host_options opts = {0};
    int verbosity = 0;
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
            char *end;
            long fd = strtol(argv[++i], &end, 10);
            if (*end != '\0' || fd <= 0 || fd > 1 << 20) {
                fprintf(stderr, "kcycle-plugin-host: --fd wants a descriptor number, not '%s'\n",
                        argv[i]);
                return 2;
            }
            opts.fd = (int)fd;
        } else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
            name = argv[++i];
        } else if (strcmp(argv[i], "--plugin-dir") == 0 && i + 1 < argc) {
            opts.plugin_dir = argv[++i];
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            verbosity++;
        } else if (strcmp(argv[i], "--log-format") == 0 && i + 1 < argc) {
            if (log_set_format(argv[++i]) < 0) {
                fprintf(stderr, "kcycle-plugin-host: --log-format text|json, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("kcycle-plugin-host %s (plugin ABI %u.%u)\n", KC_VERSION_STRING, KC_ABI_MAJOR,
                   KC_ABI_MINOR);
            return 0;
        } else {
            fprintf(stderr, "kcycle-plugin-host: unknown or incomplete argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    int type = 0;
    socklen_t type_len = sizeof(type);
    if (opts.fd <= 0 ||
        getsockopt(opts.fd, SOL_SOCKET, SO_TYPE, &type, &type_len) < 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "kcycle-plugin-host: --fd N is required and must be a SOCK_SEQPACKET "
                        "socket; the scheduler starts this program\n");
        usage(stderr);
        return 2;
    }
    fcntl(opts.fd, F_SETFD, FD_CLOEXEC); /* not for whatever a plugin may start */
    log_set_level(verbosity >= 2 ? KC_LOG_DEBUG : verbosity == 1 ? KC_LOG_INFO : KC_LOG_WARN);

    /* The scheduler's death ends us: SIGTERM from the kernel, and a re-parenting check in the
     * serve loop for the window before prctl took effect. */
    opts.parent = getppid();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != opts.parent)
        return 0;

    /* every line says which host it comes from, the crash line included */
    static char who[128] = "kcycle-plugin-host", tag[128];
    if (name != NULL) {
        snprintf(who, sizeof(who), "kcycle-plugin-host %s", name);
        snprintf(tag, sizeof(tag), "plugin host %s", name);
        log_set_tag(tag);
    }
    crash_handler_install(who, NULL); /* names the plugin before the host dies */
    struct kc_error err = {{0}};
    struct plugin_host *host;
    if (plugin_host_open(&opts, &host, &err) < 0) {
        log_error("%s", err.message);
        return 1;
    }
    running = host;
    if (stop_requested)
        plugin_host_stop(host);
    int rc = plugin_host_serve(host);
    running = NULL;
    plugin_host_close(host);
    return rc < 0 ? 1 : 0;
}
