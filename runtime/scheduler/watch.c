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
#include <fcntl.h>
#include <sys/stat.h>
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

/* The size and FNV-1a hash of what fd holds, read from offset 0 (pread: a plugin's private
 * copy stays mapped, and its offset is nobody's business); present when it was read whole. */
static void identify_fd(struct watch_file *f, int fd)
{
    f->present = false;
    f->size = 0;
    f->hash = 0xcbf29ce484222325ull;
    if (fd < 0)
        return;
    unsigned char buf[65536];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof(buf), (off_t)f->size)) > 0) {
        f->size += (uint64_t)n;
        for (ssize_t i = 0; i < n; i++)
            f->hash = (f->hash ^ buf[i]) * 0x100000001b3ull;
    }
    f->present = n == 0;
}

/* The content path names now, following symlinks (a Kubernetes ConfigMap volume swaps a
 * "..data" symlink and never touches the file's own name). */
static void identify(struct watch_file *f)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    identify_fd(f, fd);
    if (fd >= 0)
        close(fd);
}

/* Look again; true when the content is not what it was. */
static bool changed(struct watch_file *f)
{
    struct watch_file before = *f;
    identify(f);
    return f->present != before.present || f->size != before.size || f->hash != before.hash;
}

/* loaded_fd: the content that was loaded (a plugin's private copy), or -1. The file is
 * watched from that content, not from what the path holds now: a file replaced between its
 * load and this call is a change, seen at the next poll. */
static int add_file(struct watch *w, const char *path, bool config, int loaded_fd)
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
    char *copy = strdup(path);
    if (wd < 0 || copy == NULL) {
        int rc = dir == NULL || copy == NULL ? -ENOMEM : -errno;
        log_warn("hot reload: cannot watch %s: %s", path, strerror(-rc));
        free(dir);
        free(base);
        free(copy);
        return rc;
    }
    struct watch_file *f = &w->files[w->file_count++];
    *f = (struct watch_file){.wd = wd, .dir = dir, .base = base, .path = copy, .config = config};
    identify(f);
    if (loaded_fd >= 0) {
        struct watch_file now = *f;
        identify_fd(f, loaded_fd);
        if (now.present != f->present || now.size != f->size || now.hash != f->hash) {
            log_info("hot reload: %s changed since it was loaded", path);
            w->plugins_due_us = now_us();
        }
    }
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
            add_file(w, p->path, false, !p->remote && p->copy_fd > 0 ? p->copy_fd : -1);
    }
    /* a required: false plugin that failed to load: a fixed file is loaded by the reload
     * its change starts */
    for (uint32_t i = 0; plugins && i < FRAMEWORK_MAX_PLUGINS; i++)
        if (fw->error_paths[i] != NULL)
            add_file(w, fw->error_paths[i], false, -1);
    if (config_path != NULL)
        add_file(w, config_path, true, -1);
    return 0;
}

void watch_close(struct watch *w)
{
    if (w->fd > 0)
        close(w->fd);
    for (uint32_t i = 0; i < w->file_count; i++) {
        free(w->files[i].dir);
        free(w->files[i].base);
        free(w->files[i].path);
    }
    free(w->files);
    memset(w, 0, sizeof(*w));
    w->fd = -1;
}

/* Any write finished or rename into a watched directory (ours, or a symlink's target swapped
 * by a rename, as the kubelet does) restarts the quiet period of the files watched there; a
 * file created by open is only done once closed, so its IN_CREATE alone does not (a new
 * symlink in place of the file does). An overflowed queue may have lost anything. Whether a
 * file really changed is decided when the quiet period ends (changed()). */
static void note(struct watch *w, const struct inotify_event *ev, int64_t now)
{
    int64_t due = now + WATCH_DEBOUNCE_MS * 1000;
    if (ev->mask & IN_Q_OVERFLOW) {
        w->plugins_due_us = w->config_due_us = due;
        return;
    }
    for (uint32_t i = 0; i < w->file_count; i++) {
        const struct watch_file *f = &w->files[i];
        if (f->wd != ev->wd)
            continue;
        if ((ev->mask & IN_CREATE) &&
            !(ev->len > 0 && strcmp(f->base, ev->name) == 0 && !(ev->mask & IN_ISDIR)))
            continue;
        if (f->config)
            w->config_due_us = due;
        else
            w->plugins_due_us = due;
    }
}

/* The files of one kind (config or plugins) that name something new; their identity is
 * taken anew. */
static bool any_changed(struct watch *w, bool config)
{
    bool any = false;
    for (uint32_t i = 0; i < w->file_count; i++)
        if (w->files[i].config == config && changed(&w->files[i]))
            any = true;
    return any;
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
        if (any_changed(w, false))
            changes |= WATCH_PLUGINS;
    }
    if (w->config_due_us != 0 && now >= w->config_due_us) {
        w->config_due_us = 0;
        if (any_changed(w, true))
            changes |= WATCH_CONFIG;
    }
    return changes;
}
