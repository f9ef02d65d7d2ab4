#!/usr/bin/env python3
"""/metrics and the decision log of a simulated run.

1. A run with a plugin host that crashes (misbehave in its own host, crash_in_filter_after)
   and pods that never fit, started with --health-port and --hold: /metrics is scraped while
   the run is going (it answers and parses), then once the run is over and the report is
   written; the exposition is read with a strict reader of the text format
   (prometheus_text.py) and its counts agree with the report: attempts by result, bound pods,
   unschedulable attempts, plugin host restarts, the pods left pending.
2. The HTTP endpoints: /healthz, /livez, /readyz, 404 for other paths, 405 for POST, HEAD,
   an oversized request refused, a connection limit that holds and then frees.
3. The decision log: -v -v --log-format json writes only JSON lines (the plugin hosts' too);
   one attempt line per attempt with pod, result, node or reason, duration and generation;
   score lines for the top nodes; the text format says the same in key=value form.
4. Per-queue gauges (kcycle_queue_*) of a capacity-queue run agree with the report's
   objectStatus."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prometheus_text  # noqa: E402

SCHEDULER, SOURCE, TEST_PLUGINS = sys.argv[1], sys.argv[2], sys.argv[3]
MISBEHAVE = os.path.join(TEST_PLUGINS, "misbehave.so")
FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL: " + message)


def served_port(port_file, proc):
    """The port a process started with --health-port 0 --health-port-file FILE bound: the
    kernel picks it, so two tests never race for one (as picking a free port first would)."""
    def read():
        try:
            with open(port_file) as f:
                text = f.read()
            return int(text) if text.endswith("\n") else None
        except (OSError, ValueError):
            return None
    return wait_for("the port file", read, proc)


def get(port, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), r.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("Content-Type")


def wait_for(what, predicate, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"the scheduler exited ({proc.returncode}) waiting for {what}")
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def workload(tmp):
    path = os.path.join(tmp, "workload.yaml")
    with open(path, "w") as f:
        f.write("nodes:\n"
                "  - {name: n, count: 30, allocatable: {cpu: 4, memory: 16Gi, pods: 40}}\n"
                "workload:\n"
                "  - {name: small, count: 600, interval: 1ms, "
                "requests: {cpu: 100m, memory: 256Mi}}\n"
                "  - {name: huge, count: 5, interval: 1ms, requests: {cpu: 64, memory: 1Gi}}\n")
    config = os.path.join(tmp, "config.yaml")
    with open(config, "w") as f:
        f.write("plugins:\n"
                "  - {name: prioritysort}\n"
                "  - {name: noderesources}\n"
                "  - {name: defaultbinder}\n"
                f"  - {{name: misbehave, path: {MISBEHAVE}, isolation: process, "
                "failurePolicy: Fail, args: {crash_in_filter_after: 3000}}\n")
    return path, config


def log_text(path):
    with open(path, errors="replace") as f:
        return f.read()


def scrape(port):
    status, body, ctype = get(port, "/metrics")
    check(status == 200, f"/metrics answers 200, got {status}")
    check(ctype is not None and ctype.startswith("text/plain") and "version=0.0.4" in ctype,
          f"/metrics Content-Type names the text format 0.0.4, got {ctype}")
    return prometheus_text.parse(body)


def check_against_report(fams, report):
    v = lambda name, **l: prometheus_text.value(fams, name, **l)  # noqa: E731
    s = report["summary"]
    attempts = {r: v("scheduler_schedule_attempts_total", result=r, profile="kcycle")
                for r in ("scheduled", "unschedulable", "error")}
    check(attempts["scheduled"] == s["scheduled"],
          f"attempts{{scheduled}} {attempts['scheduled']} == bound pods {s['scheduled']}")
    check(attempts["unschedulable"] == s["unschedulable_attempts"],
          f"attempts{{unschedulable}} {attempts['unschedulable']} == report "
          f"{s['unschedulable_attempts']}")
    check(attempts["error"] == s["error_attempts"],
          f"attempts{{error}} {attempts['error']} == report {s['error_attempts']}")
    check(s["error_attempts"] >= 1, "the crashing host cost at least one attempt (error)")
    check(v("kcycle_bindings_total", result="bound") == s["scheduled"],
          "kcycle_bindings_total{bound} == bound pods")
    hosts = {h["name"]: h for h in s["plugin_hosts"]}
    check(hosts["misbehave"]["restarts"] >= 1, f"the host restarted: {hosts['misbehave']}")
    check(v("kcycle_plugin_host_restarts_total", host="misbehave") ==
          hosts["misbehave"]["restarts"],
          f"restarts {v('kcycle_plugin_host_restarts_total', host='misbehave')} == report "
          f"{hosts['misbehave']['restarts']}")
    check(v("kcycle_plugin_host_circuit_open", host="misbehave") ==
          (1 if hosts["misbehave"]["state"] == "broken" else 0), "circuit state as reported")
    pending = sum(v("scheduler_pending_pods", queue=q) for q in
                  ("active", "backoff", "unschedulable", "gated"))
    check(pending == s["unschedulable"],
          f"pending pods {pending} == pods the report leaves unbound {s['unschedulable']}")
    check(v("scheduler_queue_incoming_pods_total", queue="active", event="PodAdd") ==
          len(report["pods"]), "every pod came in through activeQ once")
    failures = sum(v("scheduler_queue_incoming_pods_total", queue=q,
                     event="ScheduleAttemptFailure") for q in ("backoff", "unschedulable"))
    check(failures == s["unschedulable_attempts"] + s["error_attempts"],
          f"every failed attempt requeued its pod (backoff or unschedulable): {failures}")
    # an attempt is timed where it is counted (bound, or failed in either cycle), as kube
    # does: the histogram's count per result is the counter's; the SLI one pod per bound pod
    for r in ("scheduled", "unschedulable", "error"):
        timed = v("scheduler_scheduling_attempt_duration_seconds_count", result=r,
                  profile="kcycle")
        check(timed == attempts[r], f"attempt durations{{{r}}} {timed} == attempts {attempts[r]}")
    sli = sum(value for name, _, value in
              fams["scheduler_pod_scheduling_sli_duration_seconds"]["samples"]
              if name.endswith("_count"))
    check(sli == s["scheduled"], f"SLI observations {sli} == bound pods {s['scheduled']}")
    check(v("kcycle_plugin_generation") == 1, "plugin generation 1")
    eps = {l["extension_point"] for n, l, _ in
           fams["scheduler_framework_extension_point_duration_seconds"]["samples"]}
    check({"PreFilter", "Filter", "PreScore", "Score", "Reserve", "Bind"} <= eps,
          f"extension points timed: {sorted(eps)}")
    # extension points are timed on every attempt (kube does): their Bind count is the bound pods
    bind = sum(value for name, l, value in
               fams["scheduler_framework_extension_point_duration_seconds"]["samples"]
               if name.endswith("_count") and l["extension_point"] == "Bind")
    check(bind == s["scheduled"], f"Bind timed {bind} times == bound pods {s['scheduled']}")
    plugins = {l["plugin"] for n, l, _ in
               fams["scheduler_plugin_execution_duration_seconds"]["samples"]}
    check("defaultbinder" in plugins, f"sampled plugin timings: {sorted(plugins)}")
    # about 1 attempt in 10 of some 600 is sampled: the chance that none is, below 1e-20
    plugin_eps = {(l["plugin"], l["extension_point"]) for n, l, _ in
                  fams["scheduler_plugin_execution_duration_seconds"]["samples"]}
    check({("noderesources", "PreFilter"), ("noderesources", "Score")} <= plugin_eps,
          f"PreFilter and Score timed per plugin: {sorted(plugin_eps)}")
    check(v("kcycle_plugin_host_round_trip_seconds_count") > 0, "round trips timed")
    for name, fam in fams.items():
        check(fam["help"], f"{name} has HELP")
        check(fam["type"] in ("counter", "gauge", "histogram"), f"{name} has a TYPE")


def scenario_metrics(tmp):
    sim, config = workload(tmp)
    port_file = os.path.join(tmp, "port")
    report_path = os.path.join(tmp, "report.json")
    err_path = os.path.join(tmp, "stderr.log")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([SCHEDULER, "--config", config, "--simulate", sim, "--report",
                                 report_path, "--quiet", "--no-progress", "--health-port",
                                 "0", "--health-port-file", port_file, "--hold", "--pace",
                                 "2000"],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = served_port(port_file, proc)
        # during the run: the endpoint answers and parses (the run is paced to last)
        wait_for("/metrics during the run", lambda: _answers(port), proc)
        during = scrape(port)
        check("scheduler_schedule_attempts_total" in during, "series present during the run")
        held = wait_for("the hold line", lambda: "holding" in log_text(err_path), proc)
        check(held, "the scheduler says it holds")
        with open(report_path) as f:
            report = json.load(f)
        check_against_report(scrape(port), report)
        check_http(port)
        check_port_taken(tmp, sim, config, port)
    finally:
        proc.terminate()
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
    check(code == 0, f"the held scheduler exits 0 on SIGTERM, got {code}: "
          f"{log_text(err_path)[-500:]}")


def _answers(port):
    try:
        return get(port, "/metrics")[0] == 200
    except OSError:
        return False


def check_http(port):
    for path in ("/healthz", "/livez", "/readyz"):
        status, body, _ = get(port, path)
        check(status == 200 and body == "ok\n", f"{path}: 200 ok, got {status} {body!r}")
    status, _, _ = get(port, "/readyz?verbose")
    check(status == 200, f"a query string is ignored, got {status}")
    check(get(port, "/nope")[0] == 404, "an unknown path is 404")
    check(get(port, "/metrics", method="POST")[0] == 405, "POST is 405")
    status, body, _ = get(port, "/healthz", method="HEAD")
    check(status == 200 and body == "", f"HEAD: 200 without a body, got {status} {body!r}")
    # a request bigger than the server's buffer is refused, not read without end
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 +
                      b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may stop reading and close before all of it is sent
        answer = _read_all(s)
    check(not answer.startswith(b"HTTP/1.1 200"),
          f"a 40 KB header is refused, got {answer[:60]!r}")
    # the connection limit: while 16 idle connections are open, a 17th waits unanswered in the
    # backlog; it is answered once they close
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(16)]
    extra = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        extra.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        extra.settimeout(0.5)
        try:
            early = extra.recv(100)
        except socket.timeout:
            early = b""
        # an early answer is a failure only while all 16 are still open: on a loaded machine
        # the server's idle timeout (5 s) may close some before the 17th is looked at
        check(early == b"" or any(_closed_by_server(s) for s in idle),
              f"a 17th connection is not served while 16 are open: {early!r}")
    finally:
        for s in idle:
            s.close()
    extra.settimeout(30)
    answer = _read_all(extra)
    extra.close()
    check(answer.startswith(b"HTTP/1.0 200") or answer.startswith(b"HTTP/1.1 200"),
          f"the 17th is answered once the others closed: {answer[:40]!r}")
    # a client that sends nothing is dropped by the server (its idle timeout)
    with socket.create_connection(("127.0.0.1", port), timeout=60) as silent:
        check(_read_all(silent) == b"", "a silent client is disconnected by the server")


def _closed_by_server(s):
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def check_port_taken(tmp, sim, config, port):
    """A second scheduler on the port the first one serves fails and says why: the port is
    never shared (no SO_REUSEPORT), or scrapes would reach either process at random."""
    proc = subprocess.run([SCHEDULER, "--config", config, "--simulate", sim, "--report",
                           os.path.join(tmp, "second.json"), "--quiet", "--no-progress",
                           "--health-port", str(port)],
                          capture_output=True, text=True, timeout=120)
    check(proc.returncode != 0, "a second scheduler on a taken health port fails")
    check(f"port {port}" in proc.stderr and "in use" in proc.stderr,
          f"it names the port and says it is in use: {proc.stderr[-300:]!r}")


def _read_all(s):
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data
            data += chunk
    except (ConnectionResetError, socket.timeout):
        return data


def scenario_decision_log(tmp):
    sim = os.path.join(SOURCE, "examples", "sim", "small.yaml")
    report_path = os.path.join(tmp, "small.json")
    proc = subprocess.run([SCHEDULER, "--simulate", sim, "--report", report_path, "--quiet",
                           "--no-progress", "-v", "-v", "--log-format", "json"],
                          capture_output=True, text=True, timeout=120)
    check(proc.returncode == 0, f"json log run exits 0: {proc.stderr[-300:]}")
    with open(report_path) as f:
        report = json.load(f)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    objects = []
    for line in lines:
        try:
            objects.append(json.loads(line))
        except ValueError:
            check(False, f"--log-format json: a line that is not JSON: {line!r}")
    check(all({"ts", "level", "msg"} <= set(o) for o in objects), "every line has ts, level, msg")
    attempts = [o for o in objects if o["msg"] == "attempt"]
    s = report["summary"]
    # every attempt is logged unless rate-limited: the suppressed counts make up the rest
    logged = len(attempts) + sum(o.get("suppressed", 0) for o in attempts)
    check(len(attempts) <= s["attempts"] <= logged + 3 * s["unschedulable"],
          f"{len(attempts)} attempt lines for {s['attempts']} attempts")
    placed = {p["namespace"] + "/" + p["name"]: p["node"] for p in report["pods"] if p["node"]}
    scheduled = [o for o in attempts if o["result"] == "scheduled"]
    check(len(scheduled) == s["scheduled"], f"{len(scheduled)} scheduled lines for "
          f"{s['scheduled']} bound pods")
    for o in scheduled:
        check(placed.get(o["pod"]) == o["node"], f"the logged node is the report's: {o}")
        check(isinstance(o["duration_ms"], (int, float)) and o["generation"] == 1,
              f"duration and generation: {o}")
    failed = [o for o in attempts if o["result"] == "unschedulable"]
    check(failed and all("nodes are available" in o["reason"] for o in failed),
          f"unschedulable lines give the aggregated reason: {failed[:1]}")
    scores = [o for o in objects if o["msg"] == "scores"]
    check(scores and all({"pod", "rank", "node", "total", "scores"} <= set(o) for o in scores),
          f"-v -v: score lines for the top nodes: {scores[:1]}")
    by_pod = {}
    for o in scores:
        by_pod.setdefault(o["pod"], []).append(o)
    check(all(r[0]["total"] >= r[-1]["total"] for r in by_pod.values()),
          "score lines go from the best node down")
    # the text format: the same decision as key=value
    proc = subprocess.run([SCHEDULER, "--simulate", sim, "--quiet", "--no-progress", "-v"],
                          capture_output=True, text=True, timeout=120)
    text = [l for l in proc.stderr.splitlines() if "attempt pod=" in l]
    check(len(text) == len(attempts) or len(text) >= len(scheduled),
          f"text attempt lines: {len(text)}")
    check(all(l.startswith("kcycle: info: attempt pod=") for l in text),
          f"text lines read 'kcycle: info: attempt pod=...': {text[:1]}")
    # plugin hosts log JSON too when the scheduler does, each line naming its host
    config = os.path.join(tmp, "hosts.yaml")
    with open(config, "w") as f:
        f.write("plugins:\n  - {name: prioritysort}\n"
                "  - {name: noderesources, isolation: process}\n"
                "  - {name: defaultbinder, isolation: process}\n")
    proc = subprocess.run([SCHEDULER, "--config", config, "--simulate", sim, "--quiet",
                           "--no-progress", "-v", "--log-format", "json"],
                          capture_output=True, text=True, timeout=120)
    components = set()
    for line in proc.stderr.splitlines():
        try:
            components.add(json.loads(line).get("component"))
        except ValueError:
            check(False, f"with plugin hosts, a line that is not JSON: {line!r}")
    check({"plugin host noderesources", "plugin host defaultbinder"} <= components,
          f"the plugin hosts' JSON lines name them: {components}")
    bad = subprocess.run([SCHEDULER, "--simulate", sim, "--log-format", "xml"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 2 and "--log-format" in bad.stderr, "an unknown log format is refused")


def scenario_queues(tmp):
    """Per-queue gauges: a held run of examples/sim/queues-reclaim.yaml (research borrows, then
    prod reclaims) ends with kcycle_queue_* equal to the report's objectStatus of each queue."""
    sim = os.path.join(SOURCE, "examples", "sim", "queues-reclaim.yaml")
    report_path = os.path.join(tmp, "queues.json")
    err_path = os.path.join(tmp, "queues.log")
    port_file = os.path.join(tmp, "queues.port")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([SCHEDULER, "--simulate", sim, "--report", report_path,
                                 "--quiet", "--no-progress", "--health-port", "0",
                                 "--health-port-file", port_file, "--hold"],
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        port = served_port(port_file, proc)
        wait_for("the hold line", lambda: "holding" in log_text(err_path), proc)
        with open(report_path) as f:
            report = json.load(f)
        fams = scrape(port)
        v = lambda name, **l: prometheus_text.value(fams, name, **l)  # noqa: E731
        queues = {o["name"]: o["status"] for o in report.get("objectStatus", [])
                  if o["kind"] == "CapacityQueue"}
        check(sorted(queues) == ["prod", "research"], f"queues in the report: {sorted(queues)}")
        exported = sorted({l["queue"] for _, l, _ in
                           fams.get("kcycle_queue_pending_pods", {"samples": []})["samples"]})
        check(exported == sorted(queues), f"one kcycle_queue_pending_pods per queue: {exported}")
        for name, status in queues.items():
            check(v("kcycle_queue_pending_pods", queue=name) == status["pending"],
                  f"{name}: pending {v('kcycle_queue_pending_pods', queue=name)} == report "
                  f"{status['pending']}")
            check(v("kcycle_queue_admitted_pods", queue=name) == status["admitted"],
                  f"{name}: admitted == report {status['admitted']}")
            for gauge, key in (("kcycle_queue_used", "used"),
                               ("kcycle_queue_borrowed", "borrowed")):
                for resource, text in status[key].items():
                    want = int(text[:-1]) if text.endswith("m") else int(text)
                    got = v(gauge, queue=name, resource=resource)
                    check(got == want, f"{name}: {gauge}{{{resource}}} {got} == report {text}")
        # the story of the example: research ends at its guarantee, borrowing nothing
        check(v("kcycle_queue_used", queue="research", resource="cpu") == 16000,
              "research ends at its 16 CPUs (16000 millicores)")
        check(v("kcycle_queue_borrowed", queue="research", resource="cpu") in (0, None),
              "research borrows nothing at the end")
    finally:
        proc.terminate()
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = None
    check(code == 0, f"the held queues run exits 0 on SIGTERM, got {code}: "
          f"{log_text(err_path)[-500:]}")


def main():
    prometheus_text.self_test()
    with tempfile.TemporaryDirectory() as tmp:
        scenario_metrics(tmp)
        scenario_decision_log(tmp)
        scenario_queues(tmp)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("metrics: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
