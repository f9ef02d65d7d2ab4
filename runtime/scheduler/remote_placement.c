/* Where the evaluating plugin host runs while pods are evaluated one at a time: pinned to the
 * cycle thread's CPU, or spread over two CPUs with both polling, whichever the last trials
 * measured faster (docs/architecture.md, "plugin hosts"). */
#include "remote_placement.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel.h"
#include "log.h"
#include "scheduler.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A host evaluating a pod and the cycle thread waiting for its answer never run at the same
 * time: one blocking round trip. Left to the kernel, the two run on different CPUs (the other
 * one is idle), and every hand-off wakes a CPU that went idle: about 45 us each way on a
 * virtual machine whose idle vCPUs halt, more than the round trip itself (docs/benchmarks.md,
 * "Where the evaluating host runs, and binding batches in the air"). Two placements avoid
 * that, and which one is faster depends on the machine's load, so the cycle thread measures
 * both while pods are evaluated one at a time and keeps the faster:
 * - pinned: the cycle thread pins itself, and the host it sends its evaluations to, to the CPU
 *   it is running on; neither spins while pinned (core/channel.c), each hand-off is a switch
 *   on one CPU. Best when other work keeps the machine's CPUs busy.
 * - spread: both left to the kernel, which puts them on two CPUs, and both poll for the other's
 *   message (REMOTE_SPREAD_SPIN_US: the cycle thread for the answer, the host for its next
 *   request, told by Request.spin_us) instead of sleeping. Each keeps its own CPU's caches;
 *   best with an idle CPU to spare.
 * The pace of each is the mean time between consecutive evaluations over a trial of
 * PLACEMENT_TRIAL_EVALS evaluations (at most PLACEMENT_TRIAL_MAX_MS; an interval over
 * PLACEMENT_GAP_NS is a gap in the work, not counted): after PLACEMENT_WARMUP_EVALS pinned
 * evaluations (a new scheduler's first warm its caches), spread, then pinned (pinned where the
 * thread runs after the spread trial), then the faster one (spread only when at least 5 %
 * faster) for hold_ms, then both trials again, so a change of load is followed within about a
 * second. Pins are let go when the queue runs empty (remote_colocation_release), before a host
 * is started and before a reload (threads started then would inherit the pin), and when the
 * thread finds itself elsewhere than its pin (a cpuset changed under it). Group requests
 * (milliseconds of work each) are neither pinned nor measured. KCYCLE_HOST_COLOCATE=0 turns
 * both off (the kernel decides, the default short spin), =1 always pins (then released at the
 * first evaluation hold_ms after the pin and pinned again where the thread runs
 * COLOCATE_SETTLE_MS later); off with one usable core, and both are off (the kernel decides,
 * the usual spin) once a pin is refused. */
#define COLOCATE_HOLD_MS 1000
#define COLOCATE_SETTLE_MS 20
#define PLACEMENT_TRIAL_EVALS 256
#define PLACEMENT_WARMUP_EVALS 128
#define PLACEMENT_TRIAL_MAX_MS 250
#define PLACEMENT_MIN_SAMPLES 16
#define PLACEMENT_GAP_NS 20000000

enum { PLACEMENT_TRIAL_SPREAD, PLACEMENT_TRIAL_PIN, PLACEMENT_RUN };

/* Decided once: on unless turned off or pointless. */
bool remote_placement_enabled(struct remote_colocation *c)
{
    if (c->enabled == 0) {
        const char *env = getenv("KCYCLE_HOST_COLOCATE");
        bool off = env != NULL && strcmp(env, "0") == 0;
        c->forced = env != NULL && strcmp(env, "1") == 0;
        c->cpu = -1;
        if (c->hold_ms <= 0)
            c->hold_ms = COLOCATE_HOLD_MS;
        c->enabled = !off && channel_usable_cores() > 1 ? 1 : -1;
    }
    return c->enabled > 0;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The mean interval the phase's window measured; 0 when too few to tell. */
static int64_t placement_pace(const struct remote_colocation *c)
{
    return c->window_count >= PLACEMENT_MIN_SAMPLES ? c->window_ns / c->window_count : 0;
}

static void placement_phase(struct remote_colocation *c, int phase, int64_t now)
{
    c->phase = phase;
    c->phase_ns = now;
    c->window_ns = 0;
    c->window_count = 0;
    c->last_ns = 0; /* the first interval of a phase carries the switch: not counted */
}

bool remote_placement_spread_wins(int64_t spread_ns, int64_t pin_ns)
{
    return spread_ns > 0 && (pin_ns == 0 || spread_ns * 100 < pin_ns * 95);
}

/* This evaluation counted in its phase's window, the phase moved on when done: true when it
 * goes spread. */
static bool placement_spread(struct remote_colocation *c, int64_t now)
{
    if (c->last_ns > 0 && now - c->last_ns < PLACEMENT_GAP_NS) {
        c->window_ns += now - c->last_ns;
        c->window_count++;
    }
    c->last_ns = now;
    bool done = c->window_count >= PLACEMENT_TRIAL_EVALS ||
                now - c->phase_ns >= (int64_t)PLACEMENT_TRIAL_MAX_MS * 1000000;
    if (c->phase_ns == 0) {
        /* the first evaluations warm caches and fault pages in: neither trial's pace */
        placement_phase(c, PLACEMENT_RUN, now);
        c->run_spread = false;
        c->warming = PLACEMENT_WARMUP_EVALS;
    } else if (c->warming > 0) {
        if (--c->warming == 0)
            placement_phase(c, PLACEMENT_TRIAL_SPREAD, now);
    } else if (c->phase == PLACEMENT_TRIAL_SPREAD && done) {
        c->spread_ns = placement_pace(c);
        placement_phase(c, PLACEMENT_TRIAL_PIN, now);
    } else if (c->phase == PLACEMENT_TRIAL_PIN && done) {
        c->pin_ns = placement_pace(c);
        c->run_spread = remote_placement_spread_wins(c->spread_ns, c->pin_ns);
        c->decisions++;
        c->spread_decisions += c->run_spread;
        placement_phase(c, PLACEMENT_RUN, now);
    } else if (c->phase == PLACEMENT_RUN && c->hold_ms < INT64_MAX / 1000000 &&
               now - c->phase_ns >= c->hold_ms * 1000000) {
        placement_phase(c, PLACEMENT_TRIAL_SPREAD, now);
    }
    return c->phase == PLACEMENT_TRIAL_SPREAD || (c->phase == PLACEMENT_RUN && c->run_spread);
}

/* Every CPU: the kernel limits a mask to the task's cpuset. */
static void all_cpus(cpu_set_t *set)
{
    CPU_ZERO(set);
    for (int i = 0; i < CPU_SETSIZE; i++)
        CPU_SET(i, set);
}

/* A task back on the mask from before the pin (every CPU when that is refused). */
static void unpin(pid_t tid, const cpu_set_t *allowed)
{
    if (sched_setaffinity(tid, sizeof(*allowed), allowed) == 0)
        return;
    cpu_set_t all;
    all_cpus(&all);
    if (sched_setaffinity(tid, sizeof(all), &all) != 0 && errno != ESRCH)
        log_warn("plugin hosts: cannot give task %d its CPUs back: %s", (int)tid,
                 strerror(errno));
}

/* The host pinned beside the cycle thread lets go of its CPU, every thread of it (a plugin may
 * have started some while it was pinned), unless it is gone (a stopped or dead host's pid is
 * 0 in its entry, and the number may belong to another process now). */
static void colocated_host_free(struct remote *r)
{
    struct remote_colocation *c = &r->colocation;
    for (uint32_t i = 0; c->pid > 0 && i < r->host_count; i++) {
        if (r->hosts[i]->pid != c->pid)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/task", (int)c->pid);
        DIR *tasks = opendir(path);
        struct dirent *e;
        while (tasks != NULL && (e = readdir(tasks)) != NULL) {
            if (e->d_name[0] != '.')
                unpin((pid_t)atoi(e->d_name), &c->allowed);
        }
        if (tasks != NULL)
            closedir(tasks);
        else
            unpin(c->pid, &c->allowed);
        break;
    }
    c->pid = 0;
}

void remote_placement_unpin(struct remote *r)
{
    struct remote_colocation *c = &r->colocation;
    if (c->enabled <= 0 || c->cpu < 0)
        return;
    unpin(0, &c->allowed);
    colocated_host_free(r);
    channel_affinity_changed();
    c->cpu = -1;
    c->since_ms = now_ms();
}

void remote_colocation_release(struct scheduler *s)
{
    struct remote_colocation *c = &s->remote.colocation;
    remote_placement_unpin(&s->remote);
    c->last_ns = 0; /* the time until the next evaluation is no pace of either placement */
    if (c->spreading)
        channel_set_spin_us(-1); /* the thread's other waits: the usual spin */
    c->spreading = false;
}

/* Pin the cycle thread where it runs: false when it cannot be (the pin is off from then on). */
static bool colocation_pin_thread(struct remote_colocation *c, int64_t now)
{
    cpu_set_t one;
    int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE ||
        sched_getaffinity(0, sizeof(c->allowed), &c->allowed) != 0 ||
        !CPU_ISSET(cpu, &c->allowed) || CPU_COUNT(&c->allowed) < 2)
        return false;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
        c->enabled = -1; /* not allowed here (a seccomp profile): left to the kernel */
        return false;
    }
    channel_affinity_changed();
    c->cpu = cpu;
    c->since_ms = now;
    return true;
}

/* Before the cycle thread sends h an evaluation: true when the two share a CPU now
 * (c->spreading: they are spread, both polling). */
bool remote_placement_colocate(struct scheduler *s, struct remote_host *h)
{
    struct remote_colocation *c = &s->remote.colocation;
    if (h->pid <= 0 || !remote_placement_enabled(c))
        return false;
    bool spread = !c->forced && placement_spread(c, now_ns());
    if (spread != c->spreading)
        channel_set_spin_us(spread ? REMOTE_SPREAD_SPIN_US : -1);
    c->spreading = spread;
    if (spread) {
        remote_placement_unpin(&s->remote);
        return false;
    }
    int64_t now = now_ms();
    if (c->cpu >= 0 &&
        ((c->forced && now - c->since_ms >= c->hold_ms) || sched_getcpu() != c->cpu))
        remote_placement_unpin(&s->remote);
    if (c->cpu < 0 &&
        ((c->forced && c->since_ms != 0 && now - c->since_ms < COLOCATE_SETTLE_MS) ||
         !colocation_pin_thread(c, now)))
        return false;
    if (c->pid != h->pid) {
        colocated_host_free(&s->remote); /* another host had the place: free again */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c->cpu, &one);
        if (sched_setaffinity(h->pid, sizeof(one), &one) != 0) {
            /* not ours to move (a wrapper running the host as another user): no pin at all */
            log_info("plugin host %s: cannot share the scheduling thread's CPU (%s); both "
                     "left to the kernel",
                     h->name, strerror(errno));
            remote_placement_unpin(&s->remote);
            c->enabled = -1;
            return false;
        }
        c->pid = h->pid;
    }
    return true;
}

/* The host of the round to pin: the one pinned now when it is asked too (so that rounds asking
 * other hosts do not move the pin back and forth), else the first one asked. */
struct remote_host *remote_placement_choice(const struct scheduler *s, const struct framework *fw,
                                             uint32_t phases, const bool *ask)
{
    struct remote_host *first = NULL;
    for (uint32_t k = 0; k < fw->host_count; k++) {
        struct remote_host *h = fw->hosts[k];
        if (!(h->phases & phases) || (ask != NULL && !ask[k]) || h->pid <= 0)
            continue;
        if (h->pid == s->remote.colocation.pid)
            return h;
        if (first == NULL)
            first = h;
    }
    return first;
}
