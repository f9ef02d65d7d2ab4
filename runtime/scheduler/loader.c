/* The in-process plugin loader: dlopen, kc_plugin_query, the ABI check, init. */
#include "framework.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crash.h"
#include "log.h"

#ifndef KC_PLUGIN_DIR
#define KC_PLUGIN_DIR "/usr/local/lib/kcycle/plugins"
#endif

/* The 1.0 ops table ends with on_event; anything shorter is not a 1.x plugin. */
#define OPS_MIN_SIZE (offsetof(kc_plugin_ops, on_event) + sizeof(void *))
#define DESCRIPTOR_MIN_SIZE (offsetof(kc_plugin_descriptor, ops) + sizeof(void *))

static bool file_exists(const char *path)
{
    return access(path, R_OK) == 0;
}

static char *try_dir(const char *dir, const char *name)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof(path), "%s/%s.so", dir, name);
    if (file_exists(path))
        return strdup(path);
    snprintf(path, sizeof(path), "%s/%s/%s.so", dir, name, name);
    if (file_exists(path))
        return strdup(path);
    return NULL;
}

/* The build tree: <build>/runtime/scheduler/kcycle-scheduler next to <build>/plugins. */
static char *try_beside_executable(const char *name)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return NULL;
    *slash = '\0';
    char dir[PATH_MAX + 32];
    snprintf(dir, sizeof(dir), "%s/../../plugins", exe);
    char *found = try_dir(dir, name);
    if (found == NULL) {
        snprintf(dir, sizeof(dir), "%s/../plugins", exe);
        found = try_dir(dir, name);
    }
    return found;
}

char *loader_find(const char *name, const char *explicit_path, const char *plugin_dir)
{
    if (explicit_path != NULL && strchr(explicit_path, '/') == NULL) {
        /* a bare file name means the current directory, not dlopen's library search path */
        char *path;
        return asprintf(&path, "./%s", explicit_path) < 0 ? NULL : path;
    }
    if (explicit_path != NULL)
        return strdup(explicit_path);
    char *found = NULL;
    if (plugin_dir != NULL && (found = try_dir(plugin_dir, name)) != NULL)
        return found;
    const char *env = getenv("KCYCLE_PLUGIN_DIR");
    if (env != NULL && env[0] != '\0' && (found = try_dir(env, name)) != NULL)
        return found;
    if ((found = try_dir(KC_PLUGIN_DIR, name)) != NULL)
        return found;
    if ((found = try_beside_executable(name)) != NULL)
        return found;
    /* Not found: return the first place we looked, so the error names a path. */
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s.so", plugin_dir != NULL ? plugin_dir : KC_PLUGIN_DIR, name);
    return strdup(path);
}

static int refuse(struct plugin *p, struct kc_error *err, int code, const char *path,
                  const char *fmt, const char *detail)
{
    char why[768];
    snprintf(why, sizeof(why), fmt, detail);
    loader_close(p);
    return kc_error_set(err, code, "plugin %s: %s", path, why);
}

/* Copy path into an anonymous memory file (memfd) of our own, so that the dynamic loader
 * cannot hand back an image it already has for the path, nothing lands in a shared or noexec
 * temporary directory, and nothing is left behind on any exit. Its name,
 * "kcycle-PID-gN-FILE", is what /proc/PID/maps shows. Returns the fd (the caller closes it
 * once the image is mapped) with its /proc/self/fd path in proc_path, or -errno. */
static int private_copy(const char *path, uint64_t generation, char *proc_path, size_t size)
{
    if (path == NULL)
        return -EINVAL;
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    char name[256];
    snprintf(name, sizeof(name), "kcycle-%ld-g%llu-%s", (long)getpid(),
             (unsigned long long)generation, base);
    int in = open(path, O_RDONLY | O_CLOEXEC);
    int out = in < 0 ? -1 : memfd_create(name, MFD_CLOEXEC);
    struct stat st;
    bool ok = out >= 0 && fstat(in, &st) == 0;
    for (off_t done = 0; ok && done < st.st_size;) {
        ssize_t n = sendfile(out, in, &done, (size_t)(st.st_size - done));
        ok = n > 0;
    }
    int saved = errno != 0 ? errno : EIO;
    if (in >= 0)
        close(in);
    if (!ok) {
        if (out >= 0)
            close(out);
        return -saved;
    }
    snprintf(proc_path, size, "/proc/self/fd/%d", out);
    return out;
}

/* dlerror() names the file it opened: say path instead of our copy's name. */
static const char *without_copy_name(const char *why, const char *copy)
{
    size_t n = copy != NULL ? strlen(copy) : 0;
    if (n > 0 && strncmp(why, copy, n) == 0 && why[n] == ':')
        return why + n + 1 + (why[n + 1] == ' ');
    return why;
}

int loader_open(const char *path, struct plugin *p, struct kc_error *err)
{
    return loader_open_as(path, p, NULL, err);
}

int loader_open_as(const char *path, struct plugin *p, const struct framework_load *how,
                   struct kc_error *err)
{
    memset(p, 0, sizeof(*p));
    char proc_path[64] = "";
    const char *copy = NULL;
    int copy_fd = -1;
    if (how != NULL && how->private_copy) {
        copy_fd = private_copy(path, how->generation, proc_path, sizeof(proc_path));
        if (copy_fd < 0)
            return refuse(p, err, KC_ERR_NOT_PLUGIN, path, "cannot be copied: %s",
                          strerror(-copy_fd));
        copy = proc_path;
    }
    dlerror();
    p->dl_handle = dlopen(copy != NULL ? copy : path, RTLD_NOW | RTLD_LOCAL);
    if (p->dl_handle == NULL && copy_fd >= 0)
        close(copy_fd);
    else if (copy_fd >= 0)
        p->copy_fd = copy_fd; /* closed after dlclose (loader_close) */
    if (p->dl_handle == NULL) {
        const char *why = dlerror();
        why = why != NULL ? without_copy_name(why, copy) : "unknown dlopen error";
        return refuse(p, err, KC_ERR_NOT_PLUGIN, path, "cannot be loaded as a shared object: %s",
                      why);
    }
    kc_plugin_query_fn query;
    *(void **)&query = dlsym(p->dl_handle, KC_PLUGIN_QUERY_SYMBOL);
    if (query == NULL)
        return refuse(p, err, KC_ERR_NOT_PLUGIN, path,
                      "not a kcycle plugin: it does not export %s()", KC_PLUGIN_QUERY_SYMBOL);
    const kc_plugin_descriptor *desc = query(KC_ABI_VERSION);
    char detail[256];
    if (desc == NULL) {
        snprintf(detail, sizeof(detail), "%u.%u", KC_ABI_MAJOR, KC_ABI_MINOR);
        return refuse(p, err, KC_ERR_ABI, path,
                      "the plugin refused this host (host ABI %s): kc_plugin_query returned NULL",
                      detail);
    }
    if (desc->struct_size < DESCRIPTOR_MIN_SIZE)
        return refuse(p, err, KC_ERR_ABI, path, "%s", "descriptor too small for ABI 1.0");
    if (desc->abi_major != KC_ABI_MAJOR || desc->abi_minor > KC_ABI_MINOR) {
        snprintf(detail, sizeof(detail),
                 "built for SDK ABI %u.%u, this host serves ABI %u.%u (same major, host minor "
                 ">= plugin minor required)",
                 desc->abi_major, desc->abi_minor, KC_ABI_MAJOR, KC_ABI_MINOR);
        return refuse(p, err, KC_ERR_ABI, path, "%s", detail);
    }
    if (desc->name == NULL || desc->name[0] == '\0' || desc->ops == NULL)
        return refuse(p, err, KC_ERR_ABI, path, "%s", "descriptor without a name or ops table");
    if (desc->ops->struct_size < OPS_MIN_SIZE)
        return refuse(p, err, KC_ERR_ABI, path, "%s", "ops table too small for ABI 1.0");
    size_t size = desc->ops->struct_size < sizeof(p->ops) ? desc->ops->struct_size : sizeof(p->ops);
    memcpy(&p->ops, desc->ops, size);
    p->ops.struct_size = sizeof(p->ops);
    p->name = strdup(desc->name);
    p->version = strdup(desc->version != NULL ? desc->version : "");
    p->path = strdup(path);
    p->abi_major = desc->abi_major;
    p->abi_minor = desc->abi_minor;
    if (p->name == NULL || p->version == NULL || p->path == NULL)
        return refuse(p, err, -ENOMEM, path, "%s", "out of memory");
    return 0;
}

void loader_close(struct plugin *p)
{
    if (p->initialized && p->ops.fini != NULL) {
        crash_enter(p->name, "fini");
        p->ops.fini(p->self);
        crash_leave();
    }
    if (p->dl_handle != NULL)
        dlclose(p->dl_handle);
    if (p->copy_fd > 0)
        close(p->copy_fd);
    free(p->name);
    free(p->path);
    free(p->version);
    free(p->args_json);
    free(p->host_group);
    memset(p, 0, sizeof(*p));
}
