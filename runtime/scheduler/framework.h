/* Loaded plugins and the per-phase lists the cycle walks. */
#ifndef KC_SCHED_FRAMEWORK_H
#define KC_SCHED_FRAMEWORK_H

#include <stdint.h>

#include <kcycle/kcycle.h>

#include "config.h"
#include "error.h"

/* The most plugins one scheduler runs: a pod's rejecting plugins are a 64-bit mask. */
#define FRAMEWORK_MAX_PLUGINS 64

struct plugin {
    char *name;
    char *path;
    char *version;
    uint32_t index; /* position in framework.plugins */
    int32_t weight;
    enum failure_policy failure_policy;
    uint16_t abi_major, abi_minor;
    kc_plugin_ops ops; /* the plugin's table copied up to its struct_size, the rest NULL */
    void *self;
    void *dl_handle;
    int copy_fd; /* the private copy (memfd) while mapped, else 0: the dynamic loader knows
                  * images by name, so /proc/self/fd/N must not be reused while loaded */
    uint32_t requeue_mask;
    bool initialized;
    char default_reason[160]; /* Filter rejected without kc_cycle_reject: "node(s) were ..." */
    /* isolation: process: the plugin runs in a plugin host; ops stay NULL here */
    bool remote;
    bool required;
    bool disabled; /* its host could not load it (required: false) */
    char *args_json;
    char *host_group;
    struct remote_host *host;
    uint32_t remote_index;  /* position in the host's Hello */
    uint32_t remote_phases; /* Phase bits the host reported */
};

enum phase {
    PHASE_PRE_ENQUEUE,
    PHASE_PRE_FILTER,
    PHASE_FILTER,
    PHASE_POST_FILTER,
    PHASE_PRE_SCORE,
    PHASE_SCORE,
    PHASE_RESERVE,
    PHASE_PERMIT,
    PHASE_PRE_BIND,
    PHASE_BIND,
    PHASE_POST_BIND,
    PHASE_EVENT,
    PHASE_UNRESERVE,
    PHASE_COUNT
};

struct framework {
    struct plugin *plugins;
    uint32_t count;
    struct plugin *queue_sort; /* NULL: FIFO by enqueue time */
    struct plugin **phase[PHASE_COUNT];
    uint32_t phase_count[PHASE_COUNT];
    struct plugin **reserve_all; /* plugins with reserve or unreserve, in config order */
    uint32_t reserve_all_count;
    /* Why each plugin left out (required: false) failed, by configuration position; NULL for
     * the others. Owned, freed by framework_close. The plugin host reports them per plugin. */
    char *errors[FRAMEWORK_MAX_PLUGINS];
    char *error_paths[FRAMEWORK_MAX_PLUGINS]; /* the file each of those was looked for at */
    /* Hot reload: each load of the plugins is a generation, numbered from 1. The scheduler
     * holds one reference to the active generation and each open cycle one to the generation
     * it started on; a replaced generation is closed when its last cycle ends. */
    uint64_t generation;
    uint32_t refs;
    int64_t loaded_ms; /* scheduler time when it became active */
    /* The plugin hosts that serve this generation's isolation: process plugins (owned by
     * struct remote; the array is freed by framework_free). */
    struct remote_host **hosts;
    uint32_t host_count;
    /* pod_field bits no plugin of this generation handles (nor declares with `handles:`) and
     * the configuration does not ignore: a pod using one is refused before PreFilter. */
    uint32_t refused_fields;
};

/* How framework_load opens the in-process plugins. */
struct framework_load {
    uint64_t generation;
    /* dlopen a private copy of each file (in $TMPDIR, named after the pid, the generation and
     * the plugin, unlinked once mapped), so the dynamic loader never hands back an image it
     * already has and a file copied over later cannot change the code that runs. */
    bool private_copy;
    /* A reload: any configured in-process plugin that fails to load or init fails the whole
     * load, required or not, so that a bad new file changes nothing (the old generation keeps
     * serving). Without it a plugin with required: false is logged and left out. */
    bool strict;
};

/* Open a plugin file and check it: a shared object with kc_plugin_query whose ABI this host
 * serves. Fills p (name from the descriptor, ops copied). The error names the file and why. */
int loader_open(const char *path, struct plugin *p, struct kc_error *err);
/* As loader_open; with private_copy the file is copied first to a path unique to this process,
 * generation and plugin, which is opened and unlinked at once (the mapping stays until
 * loader_close). Errors name path, never the copy. */
int loader_open_as(const char *path, struct plugin *p, const struct framework_load *how,
                   struct kc_error *err);
void loader_close(struct plugin *p);
/* Where the plugin called name is: explicit path, else <dir>/<name>.so, else
 * <dir>/<name>/<name>.so (the build tree), for each dir of the search list. malloc'd. */
char *loader_find(const char *name, const char *explicit_path, const char *plugin_dir);

/* Load and init every plugin of cfg. A required plugin that fails is an error; others are
 * logged and left out (with how->strict: an error too). */
int framework_open(struct framework *fw, const struct config *cfg, const char *plugin_dir,
                   const kc_host_api *host, struct kc_error *err);
/* As framework_open, as generation how->generation (framework_open: generation 1, no copy). */
int framework_load(struct framework *fw, const struct config *cfg, const char *plugin_dir,
                   const kc_host_api *host, const struct framework_load *how, struct kc_error *err);
void framework_close(struct framework *fw);
/* A heap generation: framework_load into a new struct with one reference, in *out. */
int framework_new(const struct config *cfg, const char *plugin_dir, const kc_host_api *host,
                  const struct framework_load *how, struct framework **out, struct kc_error *err);
/* Drop one reference; returns the count left. At zero the caller frees it (framework_free). */
uint32_t framework_unref(struct framework *fw);
void framework_free(struct framework *fw);
/* The plugin called name, or NULL. */
struct plugin *framework_plugin(const struct framework *fw, const char *name);

#endif
