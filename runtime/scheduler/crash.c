/* The fatal-signal handler. It only writes to stderr with write(2) and formats by hand (no
 * stdio, no malloc: the heap may be what broke), then lets the signal kill the process as it
 * would have: SA_RESETHAND restores the default action and the signal is raised again. */
#include "crash.h"

#include "framework.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

_Thread_local struct crash_calls crash_calls CRASH_TLS;

#define ALT_STACK_BYTES (64 * 1024)

static const char *program = "kcycle";
static const char *advice_text;
static atomic_bool installed;

struct line {
    char text[512];
    size_t len;
};

static void put(struct line *l, const char *s)
{
    while (s != NULL && *s != '\0' && l->len < sizeof(l->text) - 1)
        l->text[l->len++] = *s++;
}

static void put_number(struct line *l, int n)
{
    char digits[12];
    int count = 0;
    unsigned v = n < 0 ? 0u - (unsigned)n : (unsigned)n;
    do
        digits[count++] = (char)('0' + v % 10);
    while ((v /= 10) != 0 && count < 11);
    if (n < 0)
        put(l, "-");
    while (count > 0 && l->len < sizeof(l->text) - 1)
        l->text[l->len++] = digits[--count];
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
    }
}

static void on_fatal_signal(int sig)
{
    struct line l = {.len = 0};
    unsigned depth = crash_calls.depth;
    unsigned inner = depth > CRASH_DEPTH ? CRASH_DEPTH - 1 : depth - 1;
    const char *plugin = depth > 0 ? crash_calls.plugin[inner] : NULL;
    const char *phase = depth > 0 ? crash_calls.phase[inner] : NULL;
    put(&l, program);
    put(&l, ": fatal signal ");
    put_number(&l, sig);
    put(&l, " (");
    put(&l, signal_name(sig));
    put(&l, ")");
    if (plugin != NULL) {
        put(&l, " in plugin ");
        put(&l, plugin);
        put(&l, ", phase ");
        put(&l, phase != NULL ? phase : "unknown");
        for (unsigned i = inner; i-- > 0;) {
            put(&l, ", called from plugin ");
            put(&l, crash_calls.plugin[i]);
            put(&l, " in ");
            put(&l, crash_calls.phase[i]);
        }
        if (advice_text != NULL) {
            put(&l, "; ");
            put(&l, advice_text);
        }
    } else {
        put(&l, " outside any plugin call");
    }
    put(&l, "\n");
    ssize_t ignored = write(STDERR_FILENO, l.text, l.len);
    (void)ignored;
    raise(sig); /* the default action now: delivered when this handler returns */
}

const char *crash_phase(int phase)
{
    static const char *const names[PHASE_COUNT] = {
        [PHASE_PRE_ENQUEUE] = "PreEnqueue", [PHASE_PRE_FILTER] = "PreFilter",
        [PHASE_FILTER] = "Filter",          [PHASE_POST_FILTER] = "PostFilter",
        [PHASE_PRE_SCORE] = "PreScore",     [PHASE_SCORE] = "Score",
        [PHASE_RESERVE] = "Reserve",        [PHASE_PERMIT] = "Permit",
        [PHASE_PRE_BIND] = "PreBind",       [PHASE_BIND] = "Bind",
        [PHASE_POST_BIND] = "PostBind",     [PHASE_EVENT] = "OnEvent",
        [PHASE_UNRESERVE] = "Unreserve",
    };
    return phase >= 0 && phase < PHASE_COUNT ? names[phase] : "unknown";
}

void crash_handler_install(const char *who, const char *advice)
{
    if (atomic_exchange(&installed, true))
        return;
    /* the installing (main) thread's: the scheduler's cycle runs there. A worker thread's
     * handler runs on the worker's own stack, which serves every fault but an overflow. */
    static char alt_stack[ALT_STACK_BYTES];
    stack_t st = {.ss_sp = alt_stack, .ss_size = sizeof(alt_stack)};
    sigaltstack(&st, NULL);
    if (who != NULL)
        program = who;
    advice_text = advice;
    static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(signals[i], &sa, NULL);
    }
}
