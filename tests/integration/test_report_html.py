#!/usr/bin/env python3
"""kcycle-scheduler --simulate FILE --report-html OUT: the page holds every plot, agrees with the
JSON report of the same run, escapes the input's strings, and opens in headless Chromium
without loading anything from the network.

The page of examples/sim/gang.yaml is parsed for each plot (section data-plot=NAME, svg
id=plot-NAME) and its marks are checked against the JSON report (placement rows, groups, the
utilisation at the end); examples/sim/gpu.yaml must draw its GPU cards, and
examples/sim/queues-reclaim.yaml one share, borrowed and pending line per CapacityQueue whose
final figures are the JSON report's objectStatus. Chromium, driven over
the DevTools protocol, then opens the page: every plot must have a drawn size, a screenshot must
not be blank (the PNG is decoded here), clicking a table heading must sort the table, and the
page must send no network request and raise no Content-Security-Policy violation (Chromium
does not report a request its policy blocked, so the page's securitypolicyviolation events are
collected). Two control pages prove both are seen: one without a policy (an http image and an
https fetch) must show both requests, one under the report's policy (its script, allowed by
hash, fetches; an image) must raise a violation for each.

usage: test_report_html.py SCHEDULER SOURCE_DIR
Chromium is found as $KCYCLE_CHROMIUM, chromium or chromium-browser; without it the browser
part is skipped with exit status 77 after the other checks passed (./dev.sh deps installs it).
"""
import base64
import fcntl
import hashlib
import html.parser
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SCHEDULER, SOURCE = sys.argv[1], sys.argv[2]
SKIP = 77
BROWSER_WAIT_S = 30  # for each answer or event awaited from the browser
WINDOW = (1100, 1600)
SHOT = (1100, 1000)  # the top of the page, at half scale: the first plots
PLOTS = ["utilisation", "heatmap", "pending", "groups", "gpu", "queue-shares", "placements"]
GANG_DRAWN = ["utilisation", "heatmap", "pending", "groups", "placements"]
FAILURES = []
PASSED = [0]


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return
    FAILURES.append(message)
    print("FAIL: " + message)


class Page(html.parser.HTMLParser):
    """What the checks need from a report page: sections, SVG marks, table rows, and every
    attribute that could make a browser load something."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = {}  # data-plot -> data-state
        self.svgs = {}  # id -> {tag or tag.class: count}
        self.svg = None
        self.groups = []
        self.rows = []  # placement table rows as lists of cell texts
        self.row = None
        self.cell = None
        self.csp = None
        self.loads = []  # (tag, attribute, value) that name a resource
        self.tags = set()
        self.legend = []
        self.li = None
        self.in_table = False
        self.scripts = []  # each <script>'s text
        self.in_script = False
        self.resources = []  # data-resource of the utilisation lines
        self.polylines = []  # (svg id, attributes) of every line drawn
        self.title = self.summary = None  # texts of <title> (the page's) and p#summary
        self.text_of = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "poster", "data", "action") or (
                    value is not None and re.search(r"url\(|https?:|//", value)
                    and name not in ("content",)):
                self.loads.append((tag, name, value))
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy":
            self.csp = a.get("content", "")
        if tag == "section":
            self.sections[a.get("data-plot")] = a.get("data-state")
        if tag == "svg":
            self.svg = a.get("id")
            self.svgs[self.svg] = {}
        elif self.svg is not None:
            counts = self.svgs[self.svg]
            counts[tag] = counts.get(tag, 0) + 1
            if "class" in a:
                key = tag + "." + a["class"]
                counts[key] = counts.get(key, 0) + 1
            if tag == "g" and a.get("class") == "group":
                self.groups.append(a.get("data-group"))
            if tag == "polyline":
                counts.setdefault("points", []).append(len(a.get("points", "").split()))
                self.polylines.append((self.svg, a))
        if tag == "table" and a.get("id") == "placements":
            self.in_table = True
        if tag == "tr" and self.in_table and self.row is None:
            self.row = []
        if tag == "td" and self.row is not None:
            self.cell = []
        if tag == "li":
            self.li = []
        if tag == "script":
            self.scripts.append("")
            self.in_script = True
        if tag == "polyline" and "data-resource" in a:
            self.resources.append(a["data-resource"])
        if (tag == "title" and self.svg is None) or (tag == "p" and a.get("id") == "summary"):
            self.text_of = (tag, [])

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False
        if self.text_of is not None and tag == self.text_of[0]:
            if tag == "title":
                self.title = "".join(self.text_of[1])
            else:
                self.summary = "".join(self.text_of[1])
            self.text_of = None
        if tag == "svg":
            self.svg = None
        if tag == "table":
            self.in_table = False
        if tag == "td" and self.row is not None and self.cell is not None:
            self.row.append("".join(self.cell))
            self.cell = None
        if tag == "tr" and self.row is not None:
            if self.row:
                self.rows.append(self.row)
            self.row = None
        if tag == "li" and self.li is not None:
            self.legend.append("".join(self.li))
            self.li = None

    def handle_data(self, data):
        if self.in_script:
            self.scripts[-1] += data
        if self.text_of is not None:
            self.text_of[1].append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.li is not None:
            self.li.append(data)


def parse(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def csp_directives(csp):
    """A policy as {directive: its sources}."""
    return {parts[0]: " ".join(parts[1:]) for parts in (d.split() for d in csp.split(";"))
            if parts}


def script_hash(text):
    """The CSP source that allows an inline script of exactly this text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def simulate(sim, tmp, tag):
    out_html = os.path.join(tmp, tag + ".html")
    out_json = os.path.join(tmp, tag + ".json")
    run = subprocess.run([SCHEDULER, "--simulate", sim, "--quiet", "--no-progress", "--report",
                          out_json, "--report-html", out_html],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: {sim}: exit {run.returncode}\n{run.stderr}")
    with open(out_json) as f:
        return out_html, json.load(f)


def quantity(text):
    """cpu as the JSON report writes it, in millicores."""
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def check_static(page, name):
    """No way for the page to load anything, whatever the browser."""
    check(page.csp is not None and "default-src 'none'" in page.csp,
          f"{name}: a Content-Security-Policy with default-src 'none'")
    # one script, allowed by its hash alone (recomputed here, so it cannot go stale)
    directives = csp_directives(page.csp or "")
    check(len(page.scripts) == 1, f"{name}: exactly one <script> ({len(page.scripts)})")
    check(page.scripts and directives.get("script-src") == script_hash(page.scripts[0]),
          f"{name}: script-src is the one script's hash, no 'unsafe-inline' "
          f"({directives.get('script-src')})")
    check(page.loads == [], f"{name}: no attribute names a resource: {page.loads[:5]}")
    for tag in ("link", "img", "iframe", "object", "embed", "image", "use"):
        check(tag not in page.tags, f"{name}: no <{tag}> element")


def check_gang(path, report):
    page = parse(path)
    check_static(page, "gang")
    for plot in PLOTS:
        check(plot in page.sections, f"gang: a section for the {plot} plot")
    for plot in GANG_DRAWN:
        check(page.sections.get(plot) == "drawn", f"gang: the {plot} plot is drawn")
    for plot in GANG_DRAWN[:-1]:
        check("plot-" + plot in page.svgs, f"gang: <svg id=plot-{plot}>")
    util = page.svgs.get("plot-utilisation", {})
    check(util.get("polyline.series") == 3, f"gang: cpu, memory and pods lines ({util})")
    check(all(n >= 2 for n in util.get("points", [0])), "gang: every utilisation line has points")
    heat = page.svgs.get("plot-heatmap", {})
    check(heat.get("rect.cell", 0) >= len(report["nodes"]) * 2,
          f"gang: a heat map cell per node and time column ({heat.get('rect.cell')})")
    check(page.svgs.get("plot-pending", {}).get("polygon.band", 0) >= 2,
          "gang: pending pods drawn in bands by reason")
    groups = sorted(f"{g['namespace']}/{g['name']}" for g in report["podGroups"])
    check(sorted(page.groups) == groups, f"gang: one timeline per pod group: {page.groups}")
    # the placement table is the JSON report's pods, in order
    pods = report["pods"]
    check(len(page.rows) == len(pods), f"gang: {len(page.rows)} table rows for {len(pods)} pods")
    mismatched = [i for i, (row, pod) in enumerate(zip(page.rows, pods))
                  if row[:3] != [pod["namespace"], pod["name"], pod["node"] or ""]]
    check(not mismatched, f"gang: table rows match the JSON report's pods ({mismatched[:3]})")
    unbound = [row for row in page.rows if row[2] == ""]
    check(unbound and all(row[7] for row in unbound), "gang: every pending pod shows its reason")
    # the cpu line ends where the cluster's cpu stands in the JSON report
    requested = sum(quantity(n["requested"]["cpu"]) for n in report["nodes"])
    allocatable = sum(quantity(n["allocatable"]["cpu"]) for n in report["nodes"])
    expected = 100.0 * requested / allocatable
    shown = [float(m.group(1)) for item in page.legend
             for m in [re.fullmatch(r"cpu ([0-9.]+)% at the end", " ".join(item.split()))] if m]
    check(len(shown) == 1 and abs(shown[0] - expected) < 0.051,
          f"gang: the legend's cpu at the end {shown} is the JSON report's {expected:.2f}%")


def check_gpu(path):
    page = parse(path)
    check(page.sections.get("gpu") == "drawn", "gpu: the GPU card plot is drawn")
    cards = page.svgs.get("plot-gpu", {}).get("g.card", 0)
    check(cards == 40, f"gpu: 40 cards drawn (examples/sim/gpu.yaml has 5 nodes of 8): {cards}")


def last_y(line):
    return float(line["points"].split()[-1].split(",")[1])


def check_queues(path, report):
    """examples/sim/queues-reclaim.yaml: one share line, one borrowed line and one pending line
    per CapacityQueue, whose final figures are the JSON report's objectStatus, and whose final
    share (drawn at its height) is the dominant used/allocatable computed here from the report."""
    page = parse(path)
    check(page.sections.get("queue-shares") == "drawn", "queues: the queue-shares plot is drawn")
    statuses = {o["name"]: o for o in report.get("objectStatus", [])
                if o["kind"] == "CapacityQueue"}
    check(sorted(statuses) == ["prod", "research"], f"queues: two queues reported {statuses}")
    lines = {}
    for svg, a in page.polylines:
        lines.setdefault((svg, a.get("data-series")), []).append(a)
    for svg, series in (("plot-queue-shares", "used"), ("plot-queue-shares", "borrowed"),
                        ("plot-queue-pending", "pending")):
        names = sorted(a["data-queue"] for a in lines.get((svg, series), []))
        check(names == sorted(statuses), f"queues: one {series} line per queue ({names})")
    # the cluster: four nodes of 8 CPUs and 64Gi (the example's header)
    allocatable = {"cpu": 32000, "memory": 4 * 64 * 2**30, "pods": 440}
    top, height = 12, 260 - 12 - 36  # the page's margins: 0% at top + height
    for a in lines.get(("plot-queue-shares", "used"), []):
        final = statuses.get(a["data-queue"], {}).get("status", {})
        used = json.loads(a["data-final-used"])
        check(used == final.get("used"), f"queues: {a['data-queue']} used {used} == report "
              f"{final.get('used')}")
        check(json.loads(a["data-final-borrowed"]) == final.get("borrowed"),
              f"queues: {a['data-queue']} borrowed == report {final.get('borrowed')}")
        check(int(a["data-final-pending"]) == final.get("pending")
              and int(a["data-final-admitted"]) == final.get("admitted"),
              f"queues: {a['data-queue']} pending/admitted == report {final}")
        share = max((quantity(v) if k == "cpu" else int(v)) / allocatable[k]
                    for k, v in final.get("used", {}).items())
        check(abs(float(a["data-final-value"]) - share) < 1e-4,
              f"queues: {a['data-queue']} final share {a['data-final-value']} == {share:.4f}")
        check(abs(last_y(a) - (top + height * (1 - share))) < 0.11,
              f"queues: {a['data-queue']} line ends at its share's height ({last_y(a)})")
    # research borrowed prod's 16 CPUs before the reclaim: half the cluster, then none
    research = [a for a in lines.get(("plot-queue-shares", "borrowed"), [])
                if a["data-queue"] == "research"]
    ys = [float(p.split(",")[1]) for p in research[0]["points"].split()] if research else []
    check(ys and min(ys) < top + height * 0.51 and abs(ys[-1] - (top + height)) < 0.11,
          f"queues: research's borrowed line rises to half the cluster, ends at 0 ({ys[:4]}..)")
    pending = [a for a in lines.get(("plot-queue-pending", "pending"), [])]
    check(all(int(a["data-final-pending"]) == statuses[a["data-queue"]]["status"]["pending"]
              for a in pending if a["data-queue"] in statuses),
          "queues: pending lines end at the report's pending")


def check_queue_escaping(tmp):
    """A CapacityQueue whose name would be markup: its lines and legend entry come out escaped
    and read back as given; its pod left waiting shows as 1 pending at the end."""
    sim = os.path.join(tmp, "queue-escape.yaml")
    with open(sim, "w") as f:
        f.write("config:\n  plugins:\n    - name: capacityqueue\n    - name: noderesources\n"
                "    - name: defaultbinder\n"
                "nodes:\n  - {name: node, allocatable: {cpu: 2, memory: 4Gi, pods: 10}}\n"
                "objects:\n  - {apiVersion: scheduling.kcycle.io/v1alpha1, kind: CapacityQueue, "
                f"metadata: {{name: {json.dumps(QUEUE)}}}, spec: {{weight: 1}}}}\n"
                "workload:\n  - {name: a, namespace: t, count: 3, labels: {kcycle.io/queue: "
                f"{json.dumps(QUEUE)}}}, requests: {{cpu: 1}}}}\n")
    path, report = simulate(sim, tmp, "queue-escape")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check("<b>" not in text and text.count("<script") == 1, "queue escape: no markup from input")
    page = parse(path)
    names = {a.get("data-queue") for _, a in page.polylines if "data-queue" in a}
    check(names == {QUEUE}, f"queue escape: the queue's name read back as given ({names})")
    check(QUEUE in page.legend,
          f"queue escape: the legend names the queue ({page.legend})")
    pending = [a for _, a in page.polylines if a.get("data-series") == "pending"]
    check(len(pending) == 1 and int(pending[0]["data-final-pending"]) == 1 ==
          report["objectStatus"][0]["status"]["pending"],
          f"queue escape: one pod left pending, as the report says ({pending})")


# Input strings that would be markup, or break out of an attribute, if written unescaped.
RESOURCE = 'x"><script>document.title="pwned"</script><b x="'
GROUP = "g<s>&\"'"
QUEUE = "q<b>\"&'"


def check_escaping(tmp):
    """Every string of the input the page shows comes out escaped: node, namespace, pod and
    pod-group names, an extended resource's name (an attribute), a reason that names the group,
    and the --simulate path (title and summary). Returns the page's path."""
    folder = os.path.join(tmp, 'in<p>"&')
    os.mkdir(folder)
    sim = os.path.join(folder, "escape.yaml")
    with open(sim, "w") as f:
        f.write("config:\n  plugins:\n    - name: coscheduling\n"
                "      args: {permitWaitingTimeSeconds: 1, podGroupBackoffSeconds: 0}\n"
                "    - name: noderesources\n    - name: defaultbinder\n"
                'nodes:\n  - name: "n<b>&\\"x\'"\n    allocatable: {cpu: 1, memory: 1Gi, '
                + json.dumps(RESOURCE) + ': 2}\n'
                'workload:\n  - name: "p<i>"\n    namespace: "ns&<script>"\n    count: 2\n'
                '    requests: {cpu: 600m}\n'
                "  - name: " + json.dumps(GROUP) + "\n    namespace: ml\n    count: 2\n"
                "    at: 1s\n    gang: {minMember: 3, scheduleTimeoutSeconds: 1}\n"
                "    requests: {cpu: 100m}\n")
    path, report = simulate(sim, tmp, "escape")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    check("<b>" not in text and "<i>" not in text and "ns&<" not in text and "<s>" not in text
          and "in<p>" not in text, "escape: no markup from the input")
    check(text.count("<script") == 1, f"escape: one <script> only ({text.count('<script')})")
    check("pwned" not in text.replace("&quot;pwned&quot;", ""),
          "escape: the resource name cannot leave its attribute")
    check("n&lt;b&gt;&amp;&quot;x&#39;" in text, "escape: the node name is escaped")
    page = parse(path)
    check_static(page, "escape")
    check([r[:3] for r in page.rows[:2]] == [["ns&<script>", "p<i>-0", "n<b>&\"x'"],
                                             ["ns&<script>", "p<i>-1", ""]],
          f"escape: the names read back as given: {[r[:3] for r in page.rows[:2]]}")
    series = page.svgs.get("plot-utilisation", {})
    check(series.get("polyline.series") == 4 and RESOURCE in page.resources,
          f"escape: the resource's line, its name read back as given ({page.resources})")
    check(page.groups == ["ml/" + GROUP], f"escape: the group's name read back ({page.groups})")
    reasons = {p["reason"] for p in report["pods"] if p["namespace"] == "ml" and p["reason"]}
    shown = {row[7] for row in page.rows if row[0] == "ml"}
    check(reasons and any(GROUP in r for r in reasons) and shown == reasons,
          f"escape: the group's reason, which names it, read back as given ({shown})")
    check(page.title.startswith("kcycle simulation: " + sim) and page.summary.startswith(sim),
          f"escape: the --simulate path read back in title and summary ({page.title!r})")
    return path


# ---- the browser part: Chromium driven over the DevTools protocol on a pipe ----

class Browser:
    """Headless Chromium with --remote-debugging-pipe: commands on fd 3, replies and events on
    fd 4, each message JSON ended by a NUL byte. Network events of the page's own session name
    every request the page makes; the browser's background traffic (component updates) belongs
    to no page and is kept from the network by a proxy address where nothing listens."""

    def __init__(self, exe, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():  # in the child: its ends as fds 3 and 4, whatever numbers they had
            read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        cmd = [exe, "--headless", "--remote-debugging-pipe", "--disable-gpu",
               "--hide-scrollbars", "--no-first-run", "--no-default-browser-check",
               "--disable-background-networking", "--disable-component-update",
               "--disable-default-apps", "--disable-sync", "--disable-extensions",
               "--user-data-dir=" + profile, "--proxy-server=http://127.0.0.1:9",
               "--proxy-bypass-list=<-loopback>",
               "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "about:blank"]
        # The page is this test's own file: no sandbox (Chromium refuses one as root, and
        # containers often lack the namespaces it needs), and no /dev/shm (often 64 MiB there).
        cmd[1:1] = ["--no-sandbox", "--disable-dev-shm-usage"]
        # stderr to a file: a pipe nobody reads while waiting on fd 4 could fill and stall it
        self.log_path = os.path.join(os.path.dirname(profile), "chromium.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log,
                                         preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id, self.buffer, self.events = 0, b"", []

    def receive(self, what):
        """The next message; what is awaited, for the error when none comes in time."""
        deadline = time.monotonic() + BROWSER_WAIT_S
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.from_browser], [], [], max(left, 0))
            if not ready:
                raise Failed(f"chromium: no {what} within {BROWSER_WAIT_S} s")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise Failed("chromium closed its pipe: " + self.log()[-2000:])
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def call(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive("answer to " + method)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise Failed(f"chromium: {method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session):
        seen = [e for e in self.events if e.get("method") == method and e.get("sessionId") == session]
        while not seen:
            event = self.receive(method)
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        return seen[0]

    def open(self, url):
        """A new page showing url, loaded; returns its session."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Network.enable", session)
        self.call("Page.enable", session)
        # Chromium does not report a request its CSP blocked as a network request: the page's
        # own securitypolicyviolation events count them, from before its first script
        self.call("Page.addScriptToEvaluateOnNewDocument", session, source=WATCH_VIOLATIONS)
        self.call("Emulation.setDeviceMetricsOverride", session, width=WINDOW[0],
                  height=WINDOW[1], deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        return session

    def evaluate(self, session, expression):
        result = self.call("Runtime.evaluate", session, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failed(f"chromium: {expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def violations(self, session, at_least=0):
        """The page's CSP violations ("directive blocked-uri"); with at_least, polled until that
        many are there or a deadline passes (events come after the load, asynchronously)."""
        deadline = time.monotonic() + 10
        seen = self.evaluate(session, "window.__cspViolations || null")
        while seen is not None and len(seen) < at_least and time.monotonic() < deadline:
            self.evaluate(session, "new Promise(function(done) { setTimeout(done, 50); })")
            seen = self.evaluate(session, "window.__cspViolations || null")
        return seen

    def requests(self, session):
        """URLs the page asked the network for (file: and data: are not the network)."""
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == session
                and not e["params"]["request"]["url"].startswith(("file:", "data:", "about:"))]

    def close(self):
        try:
            self.call("Browser.close")
        except (Failed, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser)
        os.close(self.from_browser)


class Failed(Exception):
    pass


def browser():
    for name in (os.environ.get("KCYCLE_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, without libraries."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG: depth {depth} colour {colour}")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, previous = zlib.decompress(idat), width * channels, [], None
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        prior = previous or bytearray(stride)
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = prior[i], prior[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(line)
        previous = line
    return width, height, [bytes(r[i:i + 3]) for r in rows for i in range(0, stride, channels)]


def check_screenshot(path):
    try:
        width, height, pixels = png_pixels(path)
    except (OSError, ValueError, zlib.error) as e:
        check(False, f"screenshot: a PNG was written ({e})")
        return
    check((width, height) == (SHOT[0] // 2, SHOT[1] // 2),
          f"screenshot: {width}x{height}, the top of the page at half scale")
    inked = sum(1 for p in pixels if p != b"\xff\xff\xff")
    colours = len(set(pixels))
    # the plots fill much of the first screen: lines, bands and the heat map's cells
    check(inked > len(pixels) // 10,
          f"screenshot: not blank ({inked} of {len(pixels)} pixels are not white)")
    check(colours >= 20, f"screenshot: the plots' colours are there ({colours} distinct)")


# Run in each page before its own scripts: collects the CSP violations the page raises.
WATCH_VIOLATIONS = """window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', function(e) {
  window.__cspViolations.push(e.effectiveDirective + ' ' + e.blockedURI);
});"""
# The CSP control: the report's policy, its script allowed by hash, and a script fetch and an
# image that the policy must block (and report) as it would the report's own.
CONTROL_SCRIPT = 'fetch("https://report-test.invalid/data").catch(function() {});'

# What the browser reports of each plot: its state, its SVG's drawn size, and marks in it.
PLOTS_IN_DOM = """Array.from(document.querySelectorAll('section[data-plot]')).map(function(s) {
  var svg = s.querySelector('svg'), box = svg ? svg.getBoundingClientRect() : null;
  return [s.getAttribute('data-plot'), s.getAttribute('data-state'),
          box ? Math.round(box.width) : 0, box ? Math.round(box.height) : 0,
          svg ? svg.querySelectorAll('polyline,polygon,rect,g').length : 0];
})"""
# Click "Waited (s)" and read that column back.
SORT_BY_WAIT = """(function() {
  document.querySelectorAll('#placements th')[5].click();
  return Array.from(document.querySelectorAll('#placements tbody tr')).map(function(r) {
    return r.cells[5].textContent; });
})()"""


def check_browser(exe, report_path, escape_path, queues_path, tmp):
    # The controls: a page without a policy that does load, an http image and an https fetch,
    # both of which must be seen as requests; and a page under the report's policy whose
    # allowed script fetches and which shows an image, which must raise violations. Without
    # them the checks on the report prove nothing.
    control_path = os.path.join(tmp, "control.html")
    with open(control_path, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><body><img src="http://report-test.invalid/pixel.png" '
                'alt=""><script>' + CONTROL_SCRIPT + '</script></body></html>\n')
    report_csp = parse(report_path).csp or ""
    csp_control_path = os.path.join(tmp, "csp-control.html")
    with open(csp_control_path, "w", encoding="utf-8") as f:
        policy = re.sub(r"script-src [^;]*", "script-src " + script_hash(CONTROL_SCRIPT),
                        report_csp)
        f.write('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
                f'content="{policy}"></head><body><img src="http://report-test.invalid/p.png" '
                'alt=""><script>' + CONTROL_SCRIPT + '</script></body></html>\n')
    chrome = Browser(exe, os.path.join(tmp, "profile"))
    try:
        page = chrome.open("file://" + report_path)
        plots = {p[0]: p[1:] for p in chrome.evaluate(page, PLOTS_IN_DOM)}
        for plot in PLOTS:
            check(plot in plots, f"chromium: the {plot} section is in the page")
        for plot in GANG_DRAWN[:-1]:
            state, width, height, marks = plots.get(plot, ("", 0, 0, 0))
            check(state == "drawn" and width > 500 and height > 40 and marks > 2,
                  f"chromium: the {plot} plot is drawn ({state}, {width}x{height}, {marks} marks)")
        # half scale: a quarter of the pixels to decode, the plots still plain
        clip = {"x": 0, "y": 0, "width": SHOT[0], "height": SHOT[1], "scale": 0.5}
        shot = chrome.call("Page.captureScreenshot", page, format="png", clip=clip)["data"]
        path = os.path.join(tmp, "gang.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot))
        check_screenshot(path)
        waited = chrome.evaluate(page, SORT_BY_WAIT)
        numbers = [float(w) for w in waited if w != ""]
        check(len(waited) > 0 and numbers == sorted(numbers) and len(set(numbers)) > 1
              and waited == [w for w in waited if w != ""] + [w for w in waited if w == ""],
              f"chromium: clicking 'Waited (s)' sorts the table ({waited[:3]}...{waited[-3:]})")
        check(chrome.requests(page) == [], f"report: no network request ({chrome.requests(page)})")
        check(chrome.violations(page) == [],
              f"report: no CSP violation, its script ran by hash ({chrome.violations(page)})")
        escape = chrome.open("file://" + escape_path)
        check(chrome.evaluate(escape, "document.title").startswith("kcycle simulation: ")
              and chrome.evaluate(escape, "document.scripts.length") == 1,
              "escape: in the browser, the input's markup is text (title kept, one script)")
        check(chrome.violations(escape) == [],
              f"escape: no CSP violation ({chrome.violations(escape)})")
        queues = chrome.open("file://" + queues_path)
        state, width, height, marks = {p[0]: p[1:] for p in chrome.evaluate(
            queues, PLOTS_IN_DOM)}.get("queue-shares", ("", 0, 0, 0))
        check(state == "drawn" and width > 500 and height > 40 and marks > 2,
              f"chromium: the queue-shares plot is drawn ({state}, {width}x{height}, {marks})")
        check(chrome.requests(queues) == [] and chrome.violations(queues) == [],
              "queues: no network request, no CSP violation")
        control_page = chrome.open("file://" + control_path)
        # the fetch may start after the load event: poll for it, with a deadline
        poll_until = time.monotonic() + 10
        asked = chrome.requests(control_page)
        while len(asked) < 2 and time.monotonic() < poll_until:
            chrome.evaluate(control_page, "new Promise(function(done) { setTimeout(done, 50); })")
            asked = chrome.requests(control_page)
        check(any(u.startswith("http://report-test.invalid/") for u in asked)
              and any(u.startswith("https://report-test.invalid/") for u in asked),
              f"control: the page's http and https requests are seen ({asked})")
        csp_page = chrome.open("file://" + csp_control_path)
        blocked = chrome.violations(csp_page, at_least=2) or []
        check(any(v.startswith("connect-src https://report-test.invalid/") for v in blocked)
              and any(v.startswith("img-src http://report-test.invalid/") for v in blocked),
              f"csp control: the report's policy blocks a script's fetch and an image, and "
              f"both are seen ({blocked})")
    except Failed as e:
        check(False, str(e))
    finally:
        chrome.close()


def main():
    with tempfile.TemporaryDirectory(prefix="kcycle-report-html-") as tmp:
        gang, report = simulate(os.path.join(SOURCE, "examples/sim/gang.yaml"), tmp, "gang")
        check_gang(gang, report)
        gpu, _ = simulate(os.path.join(SOURCE, "examples/sim/gpu.yaml"), tmp, "gpu")
        check_gpu(gpu)
        queues, queues_report = simulate(os.path.join(SOURCE, "examples/sim/queues-reclaim.yaml"),
                                         tmp, "queues")
        check_queues(queues, queues_report)
        check_queue_escaping(tmp)
        escape = check_escaping(tmp)
        exe = browser()
        if exe is not None:
            check_browser(exe, gang, escape, queues, tmp)
    print(f"{PASSED[0]} checks passed, {len(FAILURES)} failed")
    if FAILURES:
        return 1
    if exe is None:
        print("SKIP: no chromium (./dev.sh deps installs Debian's chromium): the page was "
              "checked, but not opened in a browser")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
