/* What a fatal signal says about an in-process plugin: the plugin and phase each thread is
 * calling, recorded at the plugin-call boundary, and a handler that prints them before the
 * process dies of the signal as it would have (docs/operations.md, "A crash"). */
#ifndef KC_SCHED_CRASH_H
#define KC_SCHED_CRASH_H

/* The plugin calls in progress on this thread, innermost last (a plugin's host call may sort
 * the queue, which calls the QueueSort plugin). Strings that outlive the call: the handler
 * reads them while the process is dying. */
#define CRASH_DEPTH 4
struct crash_calls {
    unsigned depth;
    const char *plugin[CRASH_DEPTH];
    const char *phase[CRASH_DEPTH];
};

/* initial-exec in the executables: a static offset from the thread pointer, not a
 * __tls_get_addr call (which the compiler must assume clobbers registers) around every plugin
 * call. A shared library that carries the runtime (libkcycle-plugintest, which third parties
 * may dlopen) is built with KC_TLS_GLOBAL_DYNAMIC and keeps the default model: initial-exec
 * there would mark it STATIC_TLS, and dlopen refuses such a library once the static TLS space
 * is used up. */
#ifdef KC_TLS_GLOBAL_DYNAMIC
#define CRASH_TLS
#else
#define CRASH_TLS __attribute__((tls_model("initial-exec")))
#endif
extern _Thread_local struct crash_calls crash_calls CRASH_TLS;

static inline void crash_enter(const char *plugin, const char *phase)
{
    unsigned d = crash_calls.depth;
    if (d < CRASH_DEPTH) {
        crash_calls.plugin[d] = plugin;
        crash_calls.phase[d] = phase;
    }
    crash_calls.depth = d + 1;
}

static inline void crash_leave(void)
{
    crash_calls.depth--;
}

/* The name of a framework phase (enum phase of framework.h), for crash_enter. */
const char *crash_phase(int phase);

/* Install the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, with an alternate
 * signal stack for the calling thread so a stack overflow there is reported too. Once per
 * process, from the main thread; later calls do nothing. who: the program, first word of the
 * line it writes; advice: appended when a plugin was running (NULL: none). Both static. */
void crash_handler_install(const char *who, const char *advice);

#endif
