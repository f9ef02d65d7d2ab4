#!/usr/bin/env python3
"""Hot reload end to end, on a simulated workload paced to wall time (--pace):
1. a plugin file replaced by a new build (rename into place, or a copy over it) serves the pods
   scheduled after the switch within one second, with no pod failed or lost;
2. each kind of bad file (not a shared object, another ABI, a newer minor, no entry point, init
   failing) leaves the old version serving, with a log line naming the file and the reason;
3. a configuration reload (SIGHUP) that changes a weight changes later placements; an invalid
   one is refused with file:line:column and changes nothing;
4. fifty reloads in a row under load leave no file descriptors, mapped copies, copies on disk
   or processes behind.
Every step waits for the log line that says the scheduler did the previous one (polled, with a
deadline), never a fixed time: on a loaded machine a reload can take a second. Deadlines and
the pace of the runs that must outlast a series of reloads scale with --time-scale (ASan and
UBSan builds are several times slower). Under `meson test --setup valgrind`
(tests/valgrind/wrap.sh sets KCYCLE_TEST_WRAPPER) the scheduler and its plugin hosts run under
memcheck, tens of times slower: the time scale is at least 20, the runs are shorter (PODS),
the fifty reloads are RELOADS, and a file is replaced only once the run has bound pods (its
progress lines say so): a memcheck run may bind none in its first seconds."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prometheus_text  # noqa: E402

SCHEDULER, TEST_PLUGINS = sys.argv[1], sys.argv[2]
SCALE = float(sys.argv[sys.argv.index("--time-scale") + 1]) if "--time-scale" in sys.argv else 1.0
WRAPPED = bool(os.environ.get("KCYCLE_TEST_WRAPPER"))
if WRAPPED:
    SCALE = max(SCALE, 20.0)
PODS = 4000 if WRAPPED else 20000
RELOADS = 6 if WRAPPED else 50
FAILURES = []
PASSED = [0]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


def paced(pods_per_s):
    """A pace for a run that must outlast reloads: a sanitized build reloads (loads, starts
    plugin hosts) a few times slower, so its run is made longer in proportion. Under memcheck
    one reload takes 5 to 15 s on a busy machine: every such run lasts about 70 s there."""
    if WRAPPED:
        return PODS // 70
    return max(50, int(pods_per_s / (1 + (SCALE - 1) / 3)))


def plugin(name):
    return os.path.join(TEST_PLUGINS, name + ".so")


def replace(src, dst, how):
    """Put src at dst the way a developer's build would."""
    if how == "rename":
        tmp = dst + ".new"
        shutil.copyfile(src, tmp)
        os.rename(tmp, dst)
    elif how == "new file":  # removed, then written again: a new inode
        os.unlink(dst)
        shutil.copyfile(src, dst)
    else:  # a copy over the file, in place
        with open(src, "rb") as f:
            data = f.read()
        with open(dst, "r+b" if os.path.exists(dst) else "wb") as f:
            f.truncate(0)
            f.write(data)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def workload(tmp, pods):
    return write(os.path.join(tmp, "sim.yaml"),
                 "nodes:\n"
                 "  - {name: a, count: 100, allocatable: {cpu: 64, memory: 256Gi, pods: 250}}\n"
                 "  - {name: b, count: 100, allocatable: {cpu: 64, memory: 256Gi, pods: 250}}\n"
                 "workload:\n"
                 f"  - {{name: w, count: {pods}, interval: 0ms, "
                 "requests: {cpu: 100m, memory: 128Mi}}\n")


def config(tmp, isolation="inprocess", versioned_weight=1, resources_weight=1, extra=""):
    so = os.path.join(tmp, "versioned.so")
    return write(os.path.join(tmp, "config.yaml"),
                 "percentageOfNodesToScore: 100\n"
                 "plugins:\n"
                 "  - {name: prioritysort}\n"
                 f"  - {{name: noderesources, weight: {resources_weight}}}\n"
                 f"  - {{name: versioned, path: {json.dumps(so)}, weight: {versioned_weight}, "
                 f"isolation: {isolation}, args: {{prefer: a-}}}}\n"
                 "  - {name: defaultbinder}\n" + extra)


class Run:
    """The scheduler in the background; its stderr collected."""

    def __init__(self, tmp, cfg, sim, pace, extra=()):
        self.report = os.path.join(tmp, "report.json")
        if os.path.exists(self.report):
            os.unlink(self.report)
        self.copies = os.path.join(tmp, "copies")
        os.makedirs(self.copies, exist_ok=True)
        env = dict(os.environ, TMPDIR=self.copies)
        self.proc = subprocess.Popen(
            [SCHEDULER, "--config", cfg, "--simulate", sim, "--report", self.report, "--quiet",
             *([] if WRAPPED else ["--no-progress"]), "-v", "--pace", str(pace), *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.started = time.time()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def count(self, text):
        return sum(text in line for line in list(self.lines))

    def wait_for(self, text, timeout=10.0, times=1):
        """Wait until `times` log lines contain text (timeout scaled by --time-scale); False if
        they did not come or the run ended without them."""
        deadline = time.time() + timeout * SCALE
        while time.time() < deadline:
            if self.count(text) >= times:
                return True
            if self.proc.poll() is not None:
                self.reader.join(timeout=5)
                return self.count(text) >= times
            time.sleep(0.01)
        return False

    def ready(self, label):
        """Wait until the plugins are loaded, the files watched and SIGHUP reloads: a file
        changed before that would be the one loaded at the start, not a reload."""
        ok = self.wait_for("hot reload: ready", timeout=30.0)
        check(ok, f"{label}: the scheduler says it is ready for reloads "
                  f"({''.join(self.lines[-3:])!r})")
        if ok and WRAPPED:
            ok = self.wait_bound()
            check(ok, f"{label}: the run binds pods before the change "
                      f"({''.join(self.lines[-3:])!r})")
        return ok

    def bound(self):
        """Pods bound so far, from the last progress line (one a second); 0 before the first."""
        for line in reversed(list(self.lines)):
            m = re.search(r"kcycle: simulate: .* bound (\d+) ", line)
            if m:
                return int(m.group(1))
        return 0

    def wait_bound(self, timeout=30.0):
        """Under memcheck, until a progress line says pods were bound: a change made before
        any would leave no pod to show the old version served until the switch."""
        deadline = time.time() + timeout * SCALE
        while time.time() < deadline and self.proc.poll() is None:
            if self.bound() > 0:
                return True
            time.sleep(0.05)
        return self.bound() > 0

    def step(self, label, what, text, times=1):
        """Wait for the line of one step; a step that did not come is a failure of its own."""
        ok = self.wait_for(text, times=times)
        check(ok, f"{label}: {what} ({''.join(self.lines[-3:])!r})")
        return ok

    def wait(self, timeout=120):
        timeout *= SCALE
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=10)
        self.stderr = "".join(self.lines)
        data = None
        if self.proc.returncode == 0 and os.path.exists(self.report):
            with open(self.report) as f:
                data = json.load(f)
        return data


def nothing_lost(label, data, pods):
    s = data["summary"]
    check(s["pods"] == pods and s["scheduled"] == pods,
          f"{label}: all {pods} pods bound ({s['scheduled']} of {s['pods']})")
    check(s["error_attempts"] == 0 and s["unschedulable_attempts"] == 0,
          f"{label}: no attempt failed (errors {s['error_attempts']}, "
          f"unschedulable {s['unschedulable_attempts']})")


def finish(label, run, pods):
    """The run's report, with every pod bound and no attempt failed; None without one."""
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is not None:
        nothing_lost(label, data, pods)
    return data


def scheduling_went_on(label, data):
    """Pods were bound in every second of the run: scheduling never stopped."""
    times = sorted(p["bound_wall_ms"] for p in data["pods"] if p.get("bound_wall_ms") is not None)
    gaps = [b - a for a, b in zip(times, times[1:])]
    # under memcheck a reload (a plugin host started under it) takes seconds, not ms
    limit = 1000 * (SCALE if WRAPPED else 1)
    check(times and max(gaps) < limit, f"{label}: scheduling never stopped "
                                      f"(longest gap {max(gaps) if gaps else None} ms, "
                                      f"limit {limit:g})")


def test_new_version(tmp, isolation, how):
    label = f"new version ({isolation}, {how})"
    pods = PODS
    shutil.copyfile(plugin("versioned1"), os.path.join(tmp, "versioned.so"))
    cfg = config(tmp, isolation)
    run = Run(tmp, cfg, workload(tmp, pods), pace=10000, extra=["--watch-plugins"])
    run.ready(label)
    replaced_at = time.time()
    replace(plugin("versioned2"), os.path.join(tmp, "versioned.so"), how)
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is None:
        return
    nothing_lost(label, data, pods)
    gens = data["summary"]["plugin_generations"]
    check(len(gens) == 2 and gens[1]["plugin_versions"]["versioned"] == "2.0.0",
          f"{label}: a second generation serves versioned 2.0.0 ({gens})")
    if len(gens) < 2:
        return
    start = data["summary"]["wall_start_unix_ms"] / 1000.0
    switch = start + gens[1]["active_wall_ms"] / 1000.0
    check(switch - replaced_at < 1.0 * SCALE,
          f"{label}: the switch came {switch - replaced_at:.3f} s after the file changed "
          f"(< {SCALE:g} s)")
    # pods whose cycle was open at the switch finish on 1.0.0 just after it; every later one
    # (from 100 ms after the switch, itself well within 1 s of the change) uses 2.0.0
    settled = gens[1]["active_wall_ms"] + 100 * SCALE
    after = [p for p in data["pods"] if p["bound_wall_ms"] > settled]
    before = [p for p in data["pods"] if p["bound_wall_ms"] < gens[1]["active_wall_ms"]]
    in_flight = [p for p in data["pods"] if gens[1]["active_wall_ms"] <= p["bound_wall_ms"]
                 <= settled and p["plugin_versions"]["versioned"] == "1.0.0"]
    check(after and all(p["plugin_versions"]["versioned"] == "2.0.0" for p in after),
          f"{label}: every one of the {len(after)} pods bound from 100 ms after the switch "
          f"used 2.0.0")
    check(before and all(p["plugin_versions"]["versioned"] == "1.0.0" for p in before),
          f"{label}: the {len(before)} pods bound before it used 1.0.0")
    print(f"{label}: switch {1000 * (switch - replaced_at):.0f} ms after the change; "
          f"{len(before)} pods on 1.0.0, {len(after)} on 2.0.0, {len(in_flight)} open at the "
          "switch finished on 1.0.0")


BAD = [
    ("a text file", None, "cannot be loaded as a shared object"),
    ("another ABI major", "abi2", "built for SDK ABI 2."),
    ("a newer ABI minor", "newerminor", "this host serves ABI"),
    ("no entry point", "noquery", "does not export kc_plugin_query"),
    ("init failing", "versionedinitfail", "init failed"),
]


def test_bad_files(tmp, isolation):
    label = f"bad files ({isolation})"
    pods = PODS
    so = os.path.join(tmp, "versioned.so")
    shutil.copyfile(plugin("versioned1"), so)
    # long enough for five refusals and a reload, each of which may start a plugin host
    run = Run(tmp, config(tmp, isolation), workload(tmp, pods), pace=paced(2000),
              extra=["--watch-plugins"])
    run.ready(label)
    for i, (kind, name, _) in enumerate(BAD):
        if name is None:
            write(so + ".new", "this is not a shared object\n")
            os.rename(so + ".new", so)
        else:
            replace(plugin(name), so, "rename")
        # one file at a time: two changes within the debounce window would be one reload
        run.step(label, f"{kind}: refused", "hot reload refused", times=i + 1)
    replace(plugin("versioned2"), so, "rename")  # the watch still works afterwards
    # a refused reload uses a generation number too: the count of switches is what tells
    run.step(label, "the good file reloaded", "hot reload: plugin generation")
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is None:
        return
    nothing_lost(label, data, pods)
    scheduling_went_on(label, data)
    for kind, name, needle in BAD:
        lines = [l for l in run.stderr.splitlines() if so in l and needle in l]
        check(lines, f"{label}: {kind}: a log line names {so} and says '{needle}'")
    gens = data["summary"]["plugin_generations"]
    check([g["plugin_versions"]["versioned"] for g in gens] == ["1.0.0", "2.0.0"],
          f"{label}: 1.0.0 served until the good file came, then 2.0.0 ({gens})")
    check(data["summary"]["plugin_reloads_refused"] == len(BAD),
          f"{label}: {len(BAD)} reloads refused ({data['summary']['plugin_reloads_refused']})")


def test_bad_file_of_optional_plugin(tmp):
    """A bad new file of a plugin with required: false refuses the reload too: no generation
    runs without the plugin."""
    label = "bad file of a required: false plugin"
    pods = PODS
    so = os.path.join(tmp, "versioned.so")
    shutil.copyfile(plugin("versioned1"), so)
    cfg = config(tmp)
    with open(cfg) as f:
        text = f.read().replace("args: {prefer: a-}}", "args: {prefer: a-}, required: false}")
    check("required: false" in text, f"{label}: the configuration marks it optional")
    write(cfg, text)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(5000), extra=["--watch-plugins"])
    run.ready(label)
    write(so + ".new", "this is not a shared object\n")
    os.rename(so + ".new", so)
    run.step(label, "the bad file refused", "hot reload refused")
    replace(plugin("versioned2"), so, "rename")
    # a refused reload uses a generation number too: the count of switches is what tells
    run.step(label, "the good file reloaded", "hot reload: plugin generation")
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is None:
        return
    nothing_lost(label, data, pods)
    check([l for l in run.stderr.splitlines() if "refused" in l and so in l],
          f"{label}: the refusal names {so} ({run.stderr[-1000:]})")
    gens = data["summary"]["plugin_generations"]
    versions = [g["plugin_versions"].get("versioned") for g in gens]
    check(versions == ["1.0.0", "2.0.0"],
          f"{label}: 1.0.0 served until the good file came, then 2.0.0 ({versions})")
    check(data["summary"]["plugin_reloads_refused"] == 1,
          f"{label}: one reload refused ({data['summary']['plugin_reloads_refused']})")


def test_optional_plugin_fixed(tmp):
    """A required: false plugin whose file could not be loaded at the start is watched: a
    good file put there later is loaded by a reload."""
    label = "required: false plugin fixed after the start"
    pods = PODS
    so = os.path.join(tmp, "versioned.so")
    write(so, "this is not a shared object\n")
    cfg = config(tmp)
    with open(cfg) as f:
        text = f.read().replace("args: {prefer: a-}}", "args: {prefer: a-}, required: false}")
    check("required: false" in text, f"{label}: the configuration marks it optional")
    write(cfg, text)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(5000), extra=["--watch-plugins"])
    run.step(label, "the bad file left out", "continuing without it")
    run.ready(label)
    replace(plugin("versioned2"), so, "rename")
    run.step(label, "the good file loaded", "hot reload: plugin generation")
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is None:
        return
    nothing_lost(label, data, pods)
    versions = [g["plugin_versions"].get("versioned")
                for g in data["summary"]["plugin_generations"]]
    check(versions == [None, "2.0.0"],
          f"{label}: served without it, then with 2.0.0 ({versions})")


def test_replaced_while_loading(tmp):
    """A plugin file replaced after it was read for loading and before the watch started is
    a change: the plugin's init holds until the test has replaced the file."""
    label = "file replaced while it was being loaded"
    pods = PODS
    so = os.path.join(tmp, "versioned.so")
    hold = os.path.join(tmp, "hold")
    if os.path.exists(hold):
        os.unlink(hold)
    shutil.copyfile(plugin("versioned1"), so)
    cfg = config(tmp)
    with open(cfg) as f:
        text = f.read().replace("args: {prefer: a-}}",
                                f"args: {{prefer: a-, hold: {json.dumps(hold)}}}}}")
    check("hold" in text, f"{label}: the configuration holds the plugin's init")
    write(cfg, text)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(5000), extra=["--watch-plugins"])
    run.step(label, "the plugin's init holds", "init holds until")
    replace(plugin("versioned2"), so, "rename")
    write(hold, "")
    run.ready(label)
    run.step(label, "the change seen", "changed since it was loaded")
    run.step(label, "the new file loaded", "hot reload: plugin generation")
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    if data is None:
        return
    nothing_lost(label, data, pods)
    versions = [g["plugin_versions"].get("versioned")
                for g in data["summary"]["plugin_generations"]]
    check(versions == ["1.0.0", "2.0.0"], f"{label}: 1.0.0 then 2.0.0 ({versions})")


def test_config_reload(tmp):
    label = "config reload"
    pods = PODS
    shutil.copyfile(plugin("versioned1"), os.path.join(tmp, "versioned.so"))
    cfg = config(tmp, versioned_weight=1, resources_weight=1)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(10000))
    run.ready(label)
    # an invalid configuration: refused whole, with the position of the bad key
    bad = config(tmp, versioned_weight=1000, resources_weight=1000,
                 extra="percentageOfNodeToScore: 50\n")
    with open(bad) as f:
        bad_line = 1 + f.read().splitlines().index("percentageOfNodeToScore: 50")
    run.proc.send_signal(signal.SIGHUP)
    run.step(label, "the invalid file rejected", "rejected, the running one stays")
    # noderesources weight 1 -> 1000: LeastAllocated now outweighs versioned's preference
    config(tmp, versioned_weight=1, resources_weight=1000)
    run.proc.send_signal(signal.SIGHUP)
    run.step(label, "the valid file reloaded", "reloaded: plugin generation")
    data = finish(label, run, pods)
    if data is None:
        return
    check(f"{bad}:{bad_line}:1" in run.stderr and "rejected" in run.stderr,
          f"{label}: the invalid file is rejected with {bad}:{bad_line}:1 ({run.stderr[-600:]})")
    gens = data["summary"]["plugin_generations"]
    check(len(gens) == 2, f"{label}: one switch, for the valid file only ({len(gens)} generations)")
    if len(gens) != 2:
        return
    switch = gens[1]["active_wall_ms"]
    before = [p for p in data["pods"] if p["bound_wall_ms"] < switch]
    after = [p for p in data["pods"] if p["bound_wall_ms"] > switch]
    on_a = lambda ps: sum(p["node"].startswith("a-") for p in ps) / max(1, len(ps))
    check(before and on_a(before) > 0.99,
          f"{label}: weight 1: versioned's preferred nodes take the pods ({on_a(before):.3f})")
    # an even spread (versioned's weight 1 still breaks ties towards a-); how far below one
    # half depends on how many pods the a- nodes took before the switch, which is timing
    check(after and on_a(after) < 0.6,
          f"{label}: noderesources weight 1000: later pods spread over both kinds of nodes "
          f"({on_a(after):.3f} on a-)")
    print(f"{label}: {len(before)} pods before the switch, {100 * on_a(before):.1f}% on a-; "
          f"{len(after)} after, {100 * on_a(after):.1f}% on a-")


def test_config_reload_process(tmp):
    """isolation: process: a configuration reload that changes a host plugin's args starts a
    new host generation; one whose new plugin crashes in init is refused, the old hosts serve."""
    label = "config reload (process)"
    pods = PODS
    shutil.copyfile(plugin("versioned1"), os.path.join(tmp, "versioned.so"))
    cfg = config(tmp, "process", versioned_weight=10)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(10000))
    run.ready(label)
    crash = (f"  - {{name: misbehave, path: {json.dumps(plugin('misbehave'))}, "
             "isolation: process, args: {crash_in_init: true}}\n")
    config(tmp, "process", versioned_weight=10, extra=crash)
    run.proc.send_signal(signal.SIGHUP)
    run.step(label, "the crashing plugin refused", "rejected, the running one stays")
    config(tmp, "process", versioned_weight=10)
    with open(cfg) as f:
        text = f.read().replace("prefer: a-", "prefer: b-")
    write(cfg, text)
    run.proc.send_signal(signal.SIGHUP)
    run.step(label, "the good file reloaded", "reloaded: plugin generation")
    data = finish(label, run, pods)
    if data is None:
        return
    scheduling_went_on(label, data)
    refused = [l for l in run.stderr.splitlines()
               if "rejected, the running one stays" in l and plugin("misbehave") in l]
    check(refused, f"{label}: the crash in init is refused naming the file ({run.stderr[-1500:]})")
    gens = data["summary"]["plugin_generations"]
    check(len(gens) == 2, f"{label}: one switch, for the good file only ({len(gens)} generations)")
    if len(gens) != 2:
        return
    switch = gens[1]["active_wall_ms"]
    before = [p for p in data["pods"] if p["bound_wall_ms"] < switch]
    after = [p for p in data["pods"] if p["bound_wall_ms"] > switch + 100]
    on_b = lambda ps: sum(p["node"].startswith("b-") for p in ps) / max(1, len(ps))
    check(before and on_b(before) < 0.01, f"{label}: prefer a- before ({on_b(before):.3f} on b-)")
    check(after and on_b(after) > 0.99, f"{label}: the new host's args prefer b- after "
                                        f"({on_b(after):.3f} on b-)")
    print(f"{label}: {len(before)} pods before the switch, {100 * on_b(before):.1f}% on b-; "
          f"{len(after)} after, {100 * on_b(after):.1f}% on b-")


def test_crash_in_init_inprocess(tmp):
    """isolation: inprocess: a new build that crashes in init is tried first in a throwaway
    plugin host, refused naming the file, and the scheduler goes on serving."""
    label = "crash in init (inprocess)"
    pods = PODS
    shutil.copyfile(plugin("versioned1"), os.path.join(tmp, "versioned.so"))
    cfg = config(tmp, "inprocess", versioned_weight=10)
    run = Run(tmp, cfg, workload(tmp, pods), pace=paced(10000))
    run.ready(label)
    crash = (f"  - {{name: misbehave, path: {json.dumps(plugin('misbehave'))}, "
             "isolation: inprocess, args: {crash_in_init: true}}\n")
    config(tmp, "inprocess", versioned_weight=10, extra=crash)
    run.proc.send_signal(signal.SIGHUP)
    run.step(label, "the crashing plugin refused", "crashed or hung in init")
    data = finish(label, run, pods)
    if data is None:
        return
    scheduling_went_on(label, data)
    refused = [l for l in run.stderr.splitlines()
               if "crashed or hung in init" in l and plugin("misbehave") in l]
    check(refused, f"{label}: refused naming the file ({run.stderr[-1500:]})")
    gens = data["summary"]["plugin_generations"]
    check(len(gens) == 1, f"{label}: no switch ({len(gens)} generations)")
    print(f"{label}: refused, the scheduler served all {pods} pods")


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def resources(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    with open(f"/proc/{pid}/maps") as f:
        copies = {l.split()[-2] if l.rstrip().endswith("(deleted)") else l.split()[-1]
                  for l in f if f"kcycle-{pid}-g" in l}
    return fds, len(copies), len(children(pid))


def settled(pid, timeout=5.0):
    """The resources once three looks 50 ms apart agree (a stopped host takes a moment to
    go), or the last look at the deadline."""
    looks, deadline = [resources(pid)], time.time() + timeout * SCALE
    while time.time() < deadline and (len(looks) < 3 or len(set(looks[-3:])) > 1):
        time.sleep(0.05)
        looks.append(resources(pid))
    return looks[-1]


def check_metrics_after_reloads(label, port_file, isolation):
    """/metrics after RELOADS + 1 reloads: generation RELOADS + 2 serves, and (process) the
    host's series is still published under its name (slots are per name, not per host instance)."""
    # the gauges are refreshed at most every 100 ms: poll until the last generation shows
    deadline, generation = time.time() + 10.0 * SCALE, None
    while generation != RELOADS + 2 and time.time() < deadline:
        try:
            with open(port_file) as f:
                port = int(f.read())
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                fams = prometheus_text.parse(r.read().decode())
        except (OSError, ValueError, prometheus_text.FormatError) as e:
            check(False, f"{label}: /metrics scraped after the reloads ({e})")
            return
        generation = prometheus_text.value(fams, "kcycle_plugin_generation")
        time.sleep(0.05)
    check(generation == RELOADS + 2, f"{label}: kcycle_plugin_generation {generation}, "
                                     f"{RELOADS + 2} after {RELOADS + 1} reloads")
    if isolation == "process":
        check(prometheus_text.value(fams, "kcycle_plugin_host_circuit_open", host="versioned")
              == 0, f"{label}: the host's circuit series is published after {RELOADS + 1} new "
                    "instances")


def test_fifty_reloads(tmp, isolation):
    label = f"{RELOADS} reloads ({isolation})"
    pods = PODS
    so = os.path.join(tmp, "versioned.so")
    shutil.copyfile(plugin("versioned1"), so)
    # RELOADS + 1 reloads one after another, each a debounce and a load (process: a new plugin host),
    # and the run must still go on after them: 50 s at this pace in a normal build
    # metrics on: the per-plugin and per-host series must outlive the plugins and hosts of the
    # generations they were made for (a sanitized build catches a use after free)
    port_file = os.path.join(tmp, "port")
    if os.path.exists(port_file):
        os.unlink(port_file)
    # under memcheck each reload takes up to 15 s: a 200 s run keeps going past them
    run = Run(tmp, config(tmp, isolation), workload(tmp, pods),
              pace=PODS // 200 if WRAPPED else paced(400),
              extra=["--watch-plugins", "--health-port", "0", "--health-port-file", port_file])
    run.ready(label)
    # one reload first: the trial host of an in-process reload starts nng's own threads and
    # poller (a few descriptors, once per process); the baseline is taken after it, once the
    # first generation has closed and the count has settled
    replace(plugin("versioned2"), so, "rename")
    run.step(label, "the first reload is done", "plugin generation 2 serves")
    run.step(label, "the first generation closed", "plugins: generation 1 closed")
    first = settled(run.proc.pid)
    started = time.time()
    for i in range(1, RELOADS + 1):
        replace(plugin("versioned2" if i % 2 == 0 else "versioned1"), so, "rename")
        # one change at a time: two within the debounce window are one reload
        if not run.step(label, f"reload {i + 1} done", f"plugin generation {i + 2} serves"):
            break
    took = time.time() - started
    # a replaced generation closes when its last open cycle ends; its plugin hosts (process)
    # take a moment to stop after SIGTERM: a leak never settles back
    run.step(label, "every replaced generation closed",
             f"plugins: generation {RELOADS + 1} closed")
    check_metrics_after_reloads(label, port_file, isolation)
    last, deadline = None, time.time() + 5.0 * SCALE
    while run.proc.poll() is None:
        last = resources(run.proc.pid)
        if last == first or time.time() > deadline:
            break
        time.sleep(0.05)
    data = run.wait()
    check(data is not None, f"{label}: the run ends with a report ({run.stderr[-2000:]})")
    check(last is not None, f"{label}: the run still went on after {RELOADS} reloads")
    if data is None or last is None:
        return
    nothing_lost(label, data, pods)
    check(data["summary"]["plugin_switches"] == RELOADS + 1,
          f"{label}: {RELOADS + 1} switches ({data['summary']['plugin_switches']})")
    check(last == first, f"{label}: fds, mapped copies and child processes "
                         f"{last} equal those before the reloads {first}")
    check(os.listdir(run.copies) == [], f"{label}: no copy left on disk "
                                        f"({os.listdir(run.copies)})")
    print(f"{label}: before (fds, mapped copies, children) {first}, after {RELOADS} reloads "
          f"{last}; the {RELOADS} reloads took {took:.1f} s")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for how in ("rename", "copy", "new file"):
            test_new_version(tmp, "inprocess", how)
        test_bad_files(tmp, "inprocess")
        test_bad_file_of_optional_plugin(tmp)
        test_optional_plugin_fixed(tmp)
        test_replaced_while_loading(tmp)
        test_config_reload(tmp)
        test_crash_in_init_inprocess(tmp)
        test_fifty_reloads(tmp, "inprocess")
        # isolation: process: each reload starts a new plugin host generation
        for how in ("rename", "copy", "new file"):
            test_new_version(tmp, "process", how)
        test_bad_files(tmp, "process")
        test_config_reload_process(tmp)
        test_fifty_reloads(tmp, "process")
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
