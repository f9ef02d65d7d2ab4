/* Hot reload triggers: inotify watches on the directories of the plugin files and of the
 * configuration file (a file replaced by rename has a new inode, so the directory is what is
 * watched), debounced, and a SIGHUP flag. */
#include "watch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static volatile sig_atomic_t hangup;

static void on_hangup(int sig)
{
    (void)sig;
    hangup = 1;
}

void watch_install_sighup(void)
{
    struct sigaction sa = {.sa_handler = on_hangup};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &sa, NULL);
}

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int add_file(struct watch *w, const char *path, bool config)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash == NULL ? strdup(".") : strndup(path, (size_t)(slash - path));
    char *base = strdup(slash == NULL ? path : slash + 1);
    struct watch_file *grown = realloc(w->files, (w->file_count + 1) * sizeof(*grown));
    if (dir == NULL || base == NULL || grown == NULL) {
        free(dir);
        free(base);
        if (grown != NULL)
            w->files = grown;
        return -ENOMEM;
    }
    w->files = grown;
    if (dir[0] == '\0') { /* a file in / */
        free(dir);
        dir = strdup("/");
    }
    int wd = dir == NULL ? -1
                         : inotify_add_watch(w->fd, dir,
                                             IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR);
    if (wd < 0) {
        int rc = dir == NULL ? -ENOMEM : -errno;
        log_warn("hot reload: cannot watch %s: %s", path, strerror(-rc));
        free(dir);
        free(base);
        return rc;
    }
    w->files[w->file_count++] = (struct watch_file){wd, dir, base, config};
    return 0;
}

int watch_open(struct watch *w, const struct framework *fw, bool plugins, const char *config_path)
{
    watch_close(w);
    if (!plugins && config_path == NULL)
        return 0;
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0)
        return -errno;
    for (uint32_t i = 0; plugins && i < fw->count; i++) {
        const struct plugin *p = &fw->plugins[i];
        /* in process or in a plugin host (a reload starts a new host generation) alike */
        if (p->path != NULL)
            add_file(w, p->path, false);
    }
    if (config_path != NULL)
        add_file(w, config_path, true);
    return 0;
}

void watch_close(struct watch *w)
{
    if (w->fd > 0)
        close(w->fd);
    for (uint32_t i = 0; i < w->file_count; i++) {
        free(w->files[i].dir);
        free(w->files[i].base);
    }
    free(w->files);
    memset(w, 0, sizeof(*w));
    w->fd = -1;
}

static void note(struct watch *w, const struct inotify_event *ev, int64_t now)
{
    if (ev->len == 0)
        return;
    for (uint32_t i = 0; i < w->file_count; i++) {
        const struct watch_file *f = &w->files[i];
        if (f->wd != ev->wd || strcmp(f->base, ev->name) != 0)
            continue;
        if (f->config)
            w->config_due_us = now + WATCH_DEBOUNCE_MS * 1000;
        else
            w->plugins_due_us = now + WATCH_DEBOUNCE_MS * 1000;
    }
}

int watch_poll(struct watch *w)
{
    int64_t now = now_us();
    if (w->fd > 0) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n;
        while ((n = read(w->fd, buf, sizeof(buf))) > 0)
            for (char *p = buf; p < buf + n;) {
                const struct inotify_event *ev = (const struct inotify_event *)p;
                note(w, ev, now);
                p += sizeof(*ev) + ev->len;
            }
    }
    int changes = WATCH_NONE;
    if (hangup) {
        hangup = 0;
        changes |= WATCH_CONFIG;
    }
    if (w->plugins_due_us != 0 && now >= w->plugins_due_us) {
        w->plugins_due_us = 0;
        changes |= WATCH_PLUGINS;
    }
    if (w->config_due_us != 0 && now >= w->config_due_us) {
        w->config_due_us = 0;
        changes |= WATCH_CONFIG;
    }
    return changes;
}
