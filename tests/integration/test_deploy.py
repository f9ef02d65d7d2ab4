#!/usr/bin/env python3
"""examples/deploy is well formed: every manifest is YAML with apiVersion, kind and
metadata.name; the ConfigMap carries examples/deploy/config.yaml verbatim and the scheduler
accepts that file; RBAC grants exactly the rules a secondary scheduler needs (docs/operations.md,
like kube-scheduler's system:kube-scheduler role); the Deployment runs both
containers with only the flags the programs take, one shared emptyDir at /run/kcycle, the
config where --config looks, and probes on the health ports; the CRDs have the fields the
plugins read; the examples are a pod and a gang for kcycle.

usage: test_deploy.py SCHEDULER SOURCE_DIR [PLUGIN_DIR]

No PyYAML is needed: the files are read by the small YAML reader below (block and flow
collections, quoted, plain and block scalars; anything else is an error). When kubectl is
installed and works without a server (`kubectl label --local`), and when PyYAML happens to be
importable, every file is also read by them and must give the same objects.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCHEDULER, SOURCE = sys.argv[1], sys.argv[2]
PLUGIN_DIR = sys.argv[3] if len(sys.argv) > 3 else None
DEPLOY = os.path.join(SOURCE, "examples", "deploy")
OPERATIONS = os.path.join(SOURCE, "docs", "operations.md")
TIMEOUT_S = 30
FAILURES = []
PASSED = [0]

# The flags of the two programs (docs/operations.md). Value flags take one argument.
BRIDGE_VALUE_FLAGS = {"--listen", "--config", "--kubeconfig", "--context", "--scheduler-name", "--lease-name",
                      "--lease-namespace", "--identity", "--lease-duration", "--renew-deadline",
                      "--retry-period", "--workers", "--health-port"}
BRIDGE_BARE_FLAGS = {"--leader-elect", "--no-leader-elect", "-v"}
SCHEDULER_VALUE_FLAGS = {"--bridge", "--config", "--plugin-dir", "--health-port"}
SCHEDULER_BARE_FLAGS = {"-v", "--watch-plugins", "--watch-config"}

# (API group, resource) -> verbs: what the scheduler's account must be granted, and all it may be.
REQUIRED_RULES = {
    ("", "events"): {"create", "patch", "update"},
    ("events.k8s.io", "events"): {"create", "patch", "update"},
    ("", "nodes"): {"get", "list", "watch"},
    ("", "pods"): {"get", "list", "watch", "delete"},
    ("", "pods/binding"): {"create"},
    ("", "bindings"): {"create"},
    ("", "pods/status"): {"patch", "update"},
    ("scheduling.x-k8s.io", "podgroups"): {"get", "list", "watch"},
    ("scheduling.x-k8s.io", "podgroups/status"): {"update", "patch"},
    ("scheduling.kcycle.io", "capacityqueues"): {"get", "list", "watch"},
    ("scheduling.kcycle.io", "capacityqueues/status"): {"update", "patch"},
    ("topology.node.k8s.io", "noderesourcetopologies"): {"get", "list", "watch"},
    # volumes: what system:kube-scheduler reads plus the writes of system:volume-scheduler, as
    # merge patches only (the bridge never sends an update)
    ("", "persistentvolumeclaims"): {"get", "list", "watch", "patch"},
    ("", "persistentvolumes"): {"get", "list", "watch", "patch"},
    ("storage.k8s.io", "storageclasses"): {"get", "list", "watch"},
    ("storage.k8s.io", "csinodes"): {"get", "list", "watch"},
    ("policy", "poddisruptionbudgets"): {"get", "list", "watch"},
    ("", "namespaces"): {"get", "list", "watch"},
    # the selectors of podtopologyspread's default constraints (kube's DefaultSelector)
    ("", "services"): {"get", "list", "watch"},
    ("", "replicationcontrollers"): {"get", "list", "watch"},
    ("apps", "replicasets"): {"get", "list", "watch"},
    ("apps", "statefulsets"): {"get", "list", "watch"},
}


def check(condition, message):
    if condition:
        PASSED[0] += 1
        return True
    FAILURES.append(message)
    print("FAIL: " + message)
    return False


# ---- a small YAML reader -------------------------------------------------------------------

class YamlError(Exception):
    pass


AMBIGUOUS = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
             "on", "On", "ON", "off", "Off", "OFF"}
INT = re.compile(r"[-+]?(0|[1-9][0-9]*)$")
FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+\.[0-9]*)([eE][-+]?[0-9]+)?$")


def resolve_plain(text, where):
    """A plain scalar's type, as YAML 1.1 and 1.2 agree on it; the forms they disagree on
    (yes/no/on/off, 0755, 0x1F) are refused: quote them."""
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in AMBIGUOUS or re.match(r"[-+]?0[0-9]+$", text) or re.match(r"[-+]?0[xXoObB]", text):
        raise YamlError(f"{where}: '{text}' reads differently in YAML 1.1 and 1.2; quote it")
    if INT.match(text):
        return int(text)
    if FLOAT.match(text):
        return float(text)
    if text[0] in "&*!%@`|>":
        raise YamlError(f"{where}: '{text}': anchors, aliases, tags and directives are not "
                        "supported here")
    return text


def strip_comment(text):
    """text up to a ' #' comment that is outside quotes."""
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                if text[i + 1:i + 2] == "'":
                    i += 1
                else:
                    quote = None
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = None
        elif c in "'\"" and (i == 0 or text[i - 1] in " \t[{,:"):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "/": "/", " ": " ",
           "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}


def read_quoted(text, i, where):
    """The quoted scalar starting at text[i]; returns (value, index after it)."""
    quote = text[i]
    out = []
    i += 1
    while i < len(text):
        c = text[i]
        if quote == "'" and c == "'":
            if text[i + 1:i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), i + 1
        if quote == '"' and c == '"':
            return "".join(out), i + 1
        if quote == '"' and c == "\\":
            e = text[i + 1:i + 2]
            if e in ESCAPES:
                out.append(ESCAPES[e])
                i += 2
                continue
            if e == "u" and re.match(r"[0-9a-fA-F]{4}$", text[i + 2:i + 6]):
                out.append(chr(int(text[i + 2:i + 6], 16)))
                i += 6
                continue
            raise YamlError(f"{where}: unsupported escape '\\{e}'")
        out.append(c)
        i += 1
    raise YamlError(f"{where}: unterminated quoted scalar (multi-line quotes are not supported)")


class FlowReader:
    """[a, b] and {k: v} on one logical line."""

    def __init__(self, text, where):
        self.text, self.i, self.where = text, 0, where

    def skip(self):
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1

    def value(self):
        self.skip()
        c = self.text[self.i:self.i + 1]
        if c == "[":
            return self.sequence()
        if c == "{":
            return self.mapping()
        if c in ("'", '"'):
            value, self.i = read_quoted(self.text, self.i, self.where)
            return value
        start = self.i
        while self.i < len(self.text):
            c = self.text[self.i]
            if c in ",]}" or (c == ":" and self.text[self.i + 1:self.i + 2] in (" ", ",", "]",
                                                                                "}", "")):
                break
            if c in "[{":
                raise YamlError(f"{self.where}: '{c}' inside a plain scalar of a flow collection")
            self.i += 1
        return resolve_plain(self.text[start:self.i].strip(), self.where)

    def expect(self, c):
        self.skip()
        if self.text[self.i:self.i + 1] != c:
            raise YamlError(f"{self.where}: expected '{c}' at column {self.i + 1} of "
                            f"'{self.text}'")
        self.i += 1

    def sequence(self):
        self.expect("[")
        items = []
        self.skip()
        if self.text[self.i:self.i + 1] == "]":
            self.i += 1
            return items
        while True:
            items.append(self.value())
            self.skip()
            if self.text[self.i:self.i + 1] == ",":
                self.i += 1
                continue
            self.expect("]")
            return items

    def mapping(self):
        self.expect("{")
        out = {}
        self.skip()
        if self.text[self.i:self.i + 1] == "}":
            self.i += 1
            return out
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise YamlError(f"{self.where}: flow mapping key {key!r} is not a string")
            self.expect(":")
            value = self.value()
            if key in out:
                raise YamlError(f"{self.where}: duplicate key '{key}'")
            out[key] = value
            self.skip()
            if self.text[self.i:self.i + 1] == ",":
                self.i += 1
                continue
            self.expect("}")
            return out


def split_key(content, where):
    """('key', rest) when the line is 'key: rest' or 'key:', else None."""
    if content[0] in ("'", '"'):
        key, i = read_quoted(content, 0, where)
        rest = content[i:]
        if rest == ":" or rest.startswith(": "):
            return key, rest[1:].strip()
        return None
    if content[0] in "[{":
        return None
    for m in re.finditer(r":( |$)", content):
        key = content[:m.start()]
        if " #" in key:
            return None
        return key.rstrip(), content[m.end():].strip()
    return None


class Reader:
    def __init__(self, lines, path, first_line):
        self.lines, self.path, self.first = lines, path, first_line
        self.i = 0

    def where(self, i=None):
        return f"{self.path}:{self.first + (self.i if i is None else i)}"

    def indent(self, line):
        stripped = line.lstrip(" ")
        if stripped.startswith("\t"):
            raise YamlError(f"{self.where()}: tab in indentation")
        return len(line) - len(stripped)

    def next_content(self):
        """Skip blank and comment lines; the index of the next content line or None."""
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                return self.i
            self.i += 1
        return None

    def node(self, min_indent):
        if self.next_content() is None:
            return None
        line = self.lines[self.i]
        n = self.indent(line)
        if n < min_indent:
            return None
        content = strip_comment(line[n:])
        if content == "-" or content.startswith("- "):
            return self.sequence(n)
        if split_key(content, self.where()) is not None:
            return self.mapping(n)
        self.i += 1
        return self.inline(content, n)

    def inline(self, content, n):
        """The value written after 'key: ' or '- ' (the line is already consumed)."""
        where = self.where(self.i - 1)
        if content[0] in "[{":
            # a flow collection may go on over more lines, more indented
            while content.count("[") + content.count("{") > content.count("]") + \
                    content.count("}") and self.i < len(self.lines):
                content += " " + strip_comment(self.lines[self.i].strip())
                self.i += 1
            reader = FlowReader(content, where)
            value = reader.value()
            reader.skip()
            if reader.i != len(content):
                raise YamlError(f"{where}: text after a flow collection: '{content[reader.i:]}'")
            return value
        if content[0] in "|>":
            return self.block_scalar(content, n, where)
        if content[0] in ("'", '"'):
            value, end = read_quoted(content, 0, where)
            if content[end:].strip():
                raise YamlError(f"{where}: text after a quoted scalar: '{content[end:]}'")
            return value
        at = self.next_content()
        if at is not None and self.indent(self.lines[at]) > n:
            raise YamlError(f"{self.where()}: more indented line after a plain scalar (multi-line "
                            "plain scalars are not supported)")
        return resolve_plain(content, where)

    def block_scalar(self, header, n, where):
        m = re.match(r"([|>])([-+]?)$", header)
        if m is None:
            raise YamlError(f"{where}: unsupported block scalar header '{header}'")
        style, chomp = m.groups()
        raw = []
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if line.strip() and self.indent(line) <= n:
                break
            raw.append(line)
            self.i += 1
        content = [l for l in raw if l.strip()]
        if not content:
            return ""
        width = min(self.indent(l) for l in content)
        if self.indent(content[0]) != width:
            raise YamlError(f"{where}: block scalar's first line is more indented than the rest")
        lines = [l[width:] if l.strip() else "" for l in raw]
        while lines and lines[-1] == "":
            lines.pop()
        trailing = len(raw) - len(lines)
        if style == "|":
            text = "\n".join(lines)
        else:
            if any(l.startswith((" ", "\t")) for l in lines):
                raise YamlError(f"{where}: more indented lines in a folded scalar are not "
                                "supported")
            text, blank = "", False
            for k, l in enumerate(lines):
                if l == "":
                    text += "\n"
                    blank = True
                    continue
                if k > 0 and not blank:
                    text += " "
                text += l
                blank = False
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" * (1 + trailing)
        return text + "\n"

    def mapping(self, n):
        out = {}
        while self.next_content() is not None:
            line = self.lines[self.i]
            indent = self.indent(line)
            if indent < n:
                break
            if indent > n:
                raise YamlError(f"{self.where()}: unexpected indentation")
            content = strip_comment(line[n:])
            if content == "-" or content.startswith("- "):
                break
            kv = split_key(content, self.where())
            if kv is None:
                raise YamlError(f"{self.where()}: expected 'key: value', got '{content}'")
            key, rest = kv
            if key in out:
                raise YamlError(f"{self.where()}: duplicate key '{key}'")
            self.i += 1
            if rest:
                out[key] = self.inline(rest, n)
                continue
            at = self.next_content()
            if at is None:
                out[key] = None
                continue
            deeper = self.indent(self.lines[at])
            sub = strip_comment(self.lines[at][deeper:])
            if deeper > n or (deeper == n and (sub == "-" or sub.startswith("- "))):
                out[key] = self.node(n if deeper == n else n + 1)
            else:
                out[key] = None
        return out

    def sequence(self, n):
        items = []
        while self.next_content() is not None:
            line = self.lines[self.i]
            indent = self.indent(line)
            if indent < n:
                break
            if indent > n:
                raise YamlError(f"{self.where()}: unexpected indentation")
            content = strip_comment(line[n:])
            if not (content == "-" or content.startswith("- ")):
                break
            body = line[n + 1:]
            if not strip_comment(body).strip():
                self.i += 1
                items.append(self.node(n + 1))
                continue
            # "- key: v" is a mapping indented to where "key" starts: rewrite the dash away.
            offset = n + 1 + (len(body) - len(body.lstrip(" ")))
            self.lines[self.i] = " " * offset + body.lstrip(" ")
            items.append(self.node(offset))
        return items


def load_yaml_documents(path):
    """Every document of the file, in order (empty documents left out)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    docs, current, start = [], [], 1
    for number, line in enumerate(text.split("\n"), 1):
        if re.match(r"(---|\.\.\.)\s*(#.*)?$", line):
            docs.append((current, start))
            current, start = [], number + 1
            continue
        if line.startswith("---") or line.startswith("%"):
            raise YamlError(f"{path}:{number}: content after '---' and directives are not "
                            "supported")
        current.append(line)
    docs.append((current, start))
    out = []
    for lines, first in docs:
        reader = Reader(lines, path, first)
        value = reader.node(0)
        if reader.next_content() is not None:
            raise YamlError(f"{reader.where()}: text after the end of the document")
        if value is not None:
            out.append(value)
    return out


# ---- other readers, when present, must agree ----------------------------------------------

PROBE_LABEL = "kcycle-deploy-test.invalid/probe"


def kubectl_reader():
    """A function reading a manifest file with kubectl, when kubectl works without a server."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("note: kubectl not installed; the files are read by the built-in reader only")
        return None
    env = dict(os.environ, KUBECONFIG=os.devnull)

    def read(path):
        run = subprocess.run([kubectl, "label", "--local", "-o", "json", "-f", path,
                              PROBE_LABEL + "=1"], capture_output=True, text=True, env=env,
                             timeout=TIMEOUT_S)
        if run.returncode != 0:
            raise YamlError(run.stderr.strip())
        decoder, text, objects, i = json.JSONDecoder(), run.stdout, [], 0
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i == len(text):
                break
            obj, i = decoder.raw_decode(text, i)
            objects.extend(obj["items"] if obj.get("kind") == "List" and "items" in obj
                           else [obj])
        for obj in objects:
            labels = obj.get("metadata", {}).get("labels", {})
            labels.pop(PROBE_LABEL, None)
            if not labels and "labels" in obj.get("metadata", {}):
                del obj["metadata"]["labels"]
        return objects

    try:
        read(os.path.join(DEPLOY, "namespace.yaml"))
    except (YamlError, subprocess.TimeoutExpired, ValueError) as e:
        print(f"note: kubectl does not work without a server here ({e}); not used")
        return None
    return read


def pyyaml_reader():
    try:
        import yaml  # noqa: F401 (optional)
    except ImportError:
        return None

    def read(path):
        with open(path, encoding="utf-8") as f:
            return [d for d in yaml.safe_load_all(f) if d is not None]
    return read


# ---- the checks ----------------------------------------------------------------------------

def manifest_files():
    files = []
    for folder in ("", "crds", "examples"):
        base = os.path.join(DEPLOY, folder)
        for name in sorted(os.listdir(base)):
            rel = os.path.join(folder, name) if folder else name
            if name.endswith(".yaml") and name not in ("kustomization.yaml", "config.yaml"):
                files.append(rel)
    return files


def read_all(files, readers):
    objects = {}
    for rel in files:
        path = os.path.join(DEPLOY, rel)
        try:
            docs = load_yaml_documents(path)
        except (YamlError, OSError, ValueError) as e:
            check(False, f"{rel}: valid YAML in the supported subset: {e}")
            continue
        check(len(docs) > 0, f"{rel}: holds at least one object")
        for reader, read in readers:
            try:
                other = read(path)
            except Exception as e:  # noqa: BLE001 (any reader failure is a finding)
                check(False, f"{rel}: {reader} reads it: {e}")
                continue
            check(other == docs, f"{rel}: {reader} reads the same objects as the built-in reader"
                  + ("" if other == docs else f"\n  built-in: {json.dumps(docs)[:600]}"
                     f"\n  {reader}: {json.dumps(other)[:600]}"))
        for k, doc in enumerate(docs):
            what = f"{rel} document {k + 1}"
            if not check(isinstance(doc, dict), f"{what}: is a mapping"):
                continue
            check(isinstance(doc.get("apiVersion"), str) and
                  (doc["apiVersion"] == "v1" or "/" in doc["apiVersion"]),
                  f"{what}: apiVersion is group/version or v1, got {doc.get('apiVersion')!r}")
            check(isinstance(doc.get("kind"), str) and doc["kind"][:1].isupper(),
                  f"{what}: kind is set, got {doc.get('kind')!r}")
            meta = doc.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if check(isinstance(name, str) and
                     re.match(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", name) is not None,
                     f"{what}: metadata.name is a DNS name, got {name!r}"):
                objects.setdefault(rel, []).append(doc)
    return objects


def find(objects, kind, name=None):
    found = [d for docs in objects.values() for d in docs
             if d.get("kind") == kind and (name is None or d["metadata"].get("name") == name)]
    return found


def one(objects, kind, name):
    found = find(objects, kind, name)
    check(len(found) == 1, f"exactly one {kind} {name}, found {len(found)}")
    return found[0] if found else {}


def parse_args(args, value_flags, bare_flags, program):
    """flag -> value (True for bare flags); every flag must be one the program takes."""
    out, i = {}, 0
    while i < len(args):
        arg = str(args[i])
        flag, eq, inline = arg.partition("=")
        if flag in value_flags:
            if eq:
                value = inline
            else:
                i += 1
                value = str(args[i]) if i < len(args) else None
            check(value is not None, f"{program}: {flag} has a value")
            out[flag] = value
        elif flag in bare_flags and not eq:
            out[flag] = True
        else:
            check(False, f"{program}: '{arg}' is one of its flags "
                  f"({', '.join(sorted(value_flags | bare_flags))})")
        i += 1
    return out


def duration_ms(text):
    m = re.match(r"([0-9]+)(ms|s|m)$", text or "")
    if m is None:
        return None
    return int(m.group(1)) * {"ms": 1, "s": 1000, "m": 60000}[m.group(2)]


def check_kustomization(files):
    path = os.path.join(DEPLOY, "kustomization.yaml")
    docs = load_yaml_documents(path)
    k = docs[0] if docs else {}
    resources = k.get("resources") or []
    with open(path) as f:
        commented = re.findall(r"^\s*#\s*-\s*(\S+\.yaml)\s*$", f.read(), re.M)
    manifests = [f for f in files if not f.startswith("examples/")]
    for rel in manifests:
        check(rel in resources or rel in commented,
              f"kustomization.yaml lists {rel} (or names it in a comment, as not ready)")
    check(commented == [], f"kustomization.yaml leaves out nothing, got {commented}")
    for rel in resources:
        check(os.path.isfile(os.path.join(DEPLOY, rel)), f"kustomization.yaml: {rel} exists")
    crds = [i for i, r in enumerate(resources) if r.startswith("crds/")]
    check(crds and "deployment.yaml" in resources and
          max(crds) < resources.index("deployment.yaml"),
          "kustomization.yaml: the CRDs come before the Deployment")
    kubectl = shutil.which("kubectl")
    if kubectl is not None:
        run = subprocess.run([kubectl, "kustomize", DEPLOY], capture_output=True, text=True,
                             env=dict(os.environ, KUBECONFIG=os.devnull), timeout=TIMEOUT_S)
        check(run.returncode == 0, f"kubectl kustomize examples/deploy succeeds: {run.stderr}")


def check_config(objects, tmp):
    config_path = os.path.join(DEPLOY, "config.yaml")
    with open(config_path, encoding="utf-8") as f:
        config_text = f.read()
    cm = one(objects, "ConfigMap", "kcycle-scheduler-config")
    check(cm.get("data", {}).get("config.yaml") == config_text,
          "configmap.yaml: data.config.yaml is examples/deploy/config.yaml verbatim")

    extra = ["--plugin-dir", PLUGIN_DIR] if PLUGIN_DIR else []
    sim = os.path.join(SOURCE, "examples", "sim", "small.yaml")
    run = subprocess.run([SCHEDULER, "--config", config_path, "--simulate", sim, "--quiet",
                          "--no-progress", *extra],
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    check(run.returncode == 0,
          f"kcycle-scheduler accepts examples/deploy/config.yaml (exit {run.returncode}): "
          f"{run.stderr.strip()}")
    check("scheduled" in run.stdout, f"the simulation with it schedules pods: {run.stdout!r}")

    # The same file with a key the loader does not know must be refused: the check above
    # really reads the file.
    bad = os.path.join(tmp, "config-bad.yaml")
    with open(bad, "w", encoding="utf-8") as f:
        f.write(config_text + "notAKey: 1\n")
    run = subprocess.run([SCHEDULER, "--config", bad, "--simulate", sim, "--quiet",
                          "--no-progress", *extra],
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    check(run.returncode != 0 and "notAKey" in run.stderr,
          f"the scheduler refuses an unknown key in the config (exit {run.returncode}): "
          f"{run.stderr.strip()}")

    config = load_yaml_documents(config_path)[0]
    shipped = {n for n in os.listdir(os.path.join(SOURCE, "plugins"))
               if os.path.isdir(os.path.join(SOURCE, "plugins", n))}
    for entry in config.get("plugins", []):
        check(entry.get("name") in shipped,
              f"config.yaml: plugin {entry.get('name')} is shipped in plugins/ (others must stay "
              "commented out until they are)")
    return config


def check_rbac(objects, bridge):
    account = ("kcycle-system", "kcycle-scheduler")
    lease_name = bridge.get("--lease-name", "kcycle-scheduler")
    granted, rules = set(), []

    def bound(binding_kind, role_kind, namespace=None):
        roles = []
        for b in find(objects, binding_kind):
            if namespace and b["metadata"].get("namespace") != namespace:
                continue
            subjects = {(s.get("namespace"), s.get("name")) for s in b.get("subjects", [])
                        if s.get("kind") == "ServiceAccount"}
            if account in subjects and b.get("roleRef", {}).get("kind") == role_kind:
                roles.append((b["roleRef"]["name"], b["metadata"].get("namespace")))
        return roles

    for name, _ in bound("ClusterRoleBinding", "ClusterRole"):
        for role in find(objects, "ClusterRole", name):
            rules += [(r, "cluster") for r in role.get("rules", [])]
    for name, ns in bound("RoleBinding", "Role"):
        for role in find(objects, "Role", name):
            if role["metadata"].get("namespace") == ns:
                rules += [(r, ns) for r in role.get("rules", [])]
    check(rules, "RBAC: roles are bound to ServiceAccount kcycle-system/kcycle-scheduler")

    lease_create = lease_get = lease_update = False
    for rule, scope in rules:
        groups, resources, verbs = (rule.get("apiGroups", []), rule.get("resources", []),
                                    set(rule.get("verbs", [])))
        names = rule.get("resourceNames")
        check("*" not in groups and "*" not in resources and "*" not in verbs,
              f"RBAC: no wildcards ({rule})")
        check(not rule.get("nonResourceURLs"), f"RBAC: no nonResourceURLs ({rule})")
        for group in groups:
            for resource in resources:
                if (group, resource) == ("coordination.k8s.io", "leases"):
                    in_namespace = scope in ("cluster", "kcycle-system")
                    if "create" in verbs:
                        lease_create = lease_create or (in_namespace and not names)
                    if verbs & {"get", "update", "patch", "delete", "list", "watch"}:
                        check(names == [lease_name],
                              f"RBAC: lease rights other than create are limited by "
                              f"resourceNames to [{lease_name}], got {names}")
                        check(not verbs & {"patch", "delete", "list", "watch"},
                              f"RBAC: leases get/update only, got {sorted(verbs)}")
                        lease_get = lease_get or ("get" in verbs and in_namespace)
                        lease_update = lease_update or ("update" in verbs and in_namespace)
                    continue
                check(names is None, f"RBAC: {group}/{resource} is not limited by name")
                check(scope == "cluster", f"RBAC: {group or 'core'}/{resource} is cluster-wide")
                for verb in verbs:
                    granted.add((group, resource, verb))
    check(lease_create, "RBAC: leases create in kcycle-system (create cannot take resourceNames)")
    check(lease_get and lease_update, f"RBAC: leases get and update on {lease_name}")
    required = {(g, r, v) for (g, r), verbs in REQUIRED_RULES.items() for v in verbs}
    for missing in sorted(required - granted):
        check(False, f"RBAC: grants {missing[2]} on {missing[0] or 'core'}/{missing[1]}")
    for extra in sorted(granted - required):
        check(False, f"RBAC: least privilege: {extra[2]} on {extra[0] or 'core'}/{extra[1]} is "
              "not needed")
    check(required <= granted, "RBAC: every rule the reference lists is granted")


def containers_by_command(pod_spec):
    out = {}
    for c in pod_spec.get("containers", []):
        command = c.get("command") or []
        out[os.path.basename(str(command[0])) if command else c.get("name")] = c
    return out


def check_probe(container, probe, path, port, program):
    p = container.get(probe, {}).get("httpGet", {})
    check(p.get("path") == path, f"{program}: {probe} is GET {path}, got {p.get('path')}")
    target = p.get("port")
    if isinstance(target, str):
        ports = {q.get("name"): q.get("containerPort") for q in container.get("ports", [])}
        target = ports.get(target)
    check(str(target) == str(port), f"{program}: {probe} targets the health port {port}, "
          f"got {target}")


def check_deployment(objects, config):
    d = one(objects, "Deployment", "kcycle-scheduler")
    spec = d.get("spec", {})
    check(spec.get("replicas") == 2, "deployment: 2 replicas (leader and standby)")
    pod = spec.get("template", {}).get("spec", {})
    check(pod.get("serviceAccountName") == "kcycle-scheduler",
          "deployment: runs as ServiceAccount kcycle-scheduler")
    check(pod.get("schedulerName") in (None, "default-scheduler"),
          "deployment: placed by the default scheduler, not by kcycle itself")
    check(d["metadata"].get("namespace") == "kcycle-system", "deployment: in kcycle-system")
    containers = containers_by_command(pod)
    bridge_c = containers.get("kcycle-kube-bridge")
    sched_c = containers.get("kcycle-scheduler")
    check(bridge_c is not None and bridge_c["command"] == ["/usr/bin/kcycle-kube-bridge"],
          "deployment: a container runs /usr/bin/kcycle-kube-bridge")
    check(sched_c is not None and sched_c["command"] == ["/usr/bin/kcycle-scheduler"],
          "deployment: a container runs /usr/bin/kcycle-scheduler")
    check(len(pod.get("containers", [])) == 2, "deployment: exactly two containers")
    if bridge_c is None or sched_c is None:
        return {}
    bridge = parse_args(bridge_c.get("args", []), BRIDGE_VALUE_FLAGS, BRIDGE_BARE_FLAGS,
                        "kcycle-kube-bridge")
    sched = parse_args(sched_c.get("args", []), SCHEDULER_VALUE_FLAGS, SCHEDULER_BARE_FLAGS,
                       "kcycle-scheduler")

    # Where the bridge listens is where the scheduler connects (flag, or its config).
    listen = bridge.get("--listen", "ipc:///run/kcycle/bridge.sock")
    check(sched.get("--bridge") == listen,
          f"deployment: the scheduler's --bridge is where the bridge listens ({listen})")
    check(config.get("bridge", {}).get("address") == listen,
          "config.yaml: bridge.address is the bridge's --listen URL")
    check(listen.startswith("ipc:///run/kcycle/"), "deployment: the socket is under /run/kcycle")
    check(bridge.get("--scheduler-name", "kcycle") == config.get("schedulerName", "kcycle"),
          "deployment: the bridge's --scheduler-name is the config's schedulerName")
    check(not bridge.get("--no-leader-elect"), "deployment: leader election is on (2 replicas)")
    lease, renew, retry = (duration_ms(bridge.get("--lease-duration", "15s")),
                           duration_ms(bridge.get("--renew-deadline", "10s")),
                           duration_ms(bridge.get("--retry-period", "2s")))
    check(None not in (lease, renew, retry) and retry < renew < lease,
          "deployment: retry-period < renew-deadline < lease-duration")
    check(bridge.get("--lease-namespace", "$(POD_NAMESPACE)") in ("$(POD_NAMESPACE)",
                                                                   "kcycle-system"),
          "deployment: the lease is in the pod's namespace, where the Role grants it")
    for flag in ("--workers", "--health-port"):
        if flag in bridge:
            check(re.match(r"[0-9]+$", bridge[flag]) is not None,
                  f"kcycle-kube-bridge: {flag} is a number")
    check(re.match(r"[0-9]+$", sched.get("--health-port", "10260")) is not None,
          "kcycle-scheduler: --health-port is a number")

    # One emptyDir, mounted by both at /run/kcycle.
    volumes = {v.get("name"): v for v in pod.get("volumes", [])}
    run_mounts = [next((m["name"] for m in c.get("volumeMounts", [])
                        if m.get("mountPath") == "/run/kcycle"), None)
                  for c in (bridge_c, sched_c)]
    check(run_mounts[0] is not None and run_mounts[0] == run_mounts[1],
          f"deployment: both containers mount the same volume at /run/kcycle, got {run_mounts}")
    check("emptyDir" in volumes.get(run_mounts[0], {}),
          "deployment: the /run/kcycle volume is an emptyDir")

    # --config names the file the ConfigMap volume puts there.
    config_flag = sched.get("--config", "")
    folder, base = os.path.split(config_flag)
    mount = next((m for m in sched_c.get("volumeMounts", []) if m.get("mountPath") == folder), {})
    source = volumes.get(mount.get("name"), {}).get("configMap", {})
    check(source.get("name") == "kcycle-scheduler-config",
          f"deployment: {folder} is the ConfigMap kcycle-scheduler-config")
    items = source.get("items")
    keys = {i["key"]: i["path"] for i in items} if items else None
    check((keys is None and base == "config.yaml") or (keys or {}).get("config.yaml") == base,
          f"deployment: --config {config_flag} is the ConfigMap key config.yaml")
    check(sched.get("--plugin-dir", "/usr/lib/kcycle/plugins") == "/usr/lib/kcycle/plugins",
          "deployment: plugins from /usr/lib/kcycle/plugins, where the image installs them")

    # The downward API gives the bridge its identity and namespace.
    env = {e.get("name"): e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
           for e in bridge_c.get("env", [])}
    check(env.get("POD_NAME") == "metadata.name", "deployment: POD_NAME from metadata.name")
    check(env.get("POD_NAMESPACE") == "metadata.namespace",
          "deployment: POD_NAMESPACE from metadata.namespace")

    # Probes on the health ports; the two ports differ.
    bridge_port = bridge.get("--health-port", "10259")
    sched_port = sched.get("--health-port", "10260")
    check(bridge_port != sched_port and "0" not in (bridge_port, sched_port),
          "deployment: two distinct, enabled health ports")
    for container, port, program in ((bridge_c, bridge_port, "kcycle-kube-bridge"),
                                     (sched_c, sched_port, "kcycle-scheduler")):
        check_probe(container, "livenessProbe", "/healthz", port, program)
        check_probe(container, "readinessProbe", "/readyz", port, program)
        resources = container.get("resources", {})
        check(resources.get("requests", {}).get("memory") and
              resources.get("limits", {}).get("memory"),
              f"{program}: memory request and limit")
        sc = container.get("securityContext", {})
        check(sc.get("readOnlyRootFilesystem") is True, f"{program}: read-only root filesystem")
        check(sc.get("allowPrivilegeEscalation") is False, f"{program}: no privilege escalation")
        check("ALL" in sc.get("capabilities", {}).get("drop", []), f"{program}: drops ALL")
        check(sc.get("runAsNonRoot", pod.get("securityContext", {}).get("runAsNonRoot")) is True,
              f"{program}: runs as non-root")

    # Only the bridge holds API credentials.
    token_path = "/var/run/secrets/kubernetes.io/serviceaccount"
    if pod.get("automountServiceAccountToken") is False:
        mount = next((m for m in bridge_c.get("volumeMounts", [])
                      if m.get("mountPath") == token_path), {})
        sources = volumes.get(mount.get("name"), {}).get("projected", {}).get("sources", [])
        check(any("serviceAccountToken" in s for s in sources) and
              any(s.get("configMap", {}).get("name") == "kube-root-ca.crt" for s in sources),
              "deployment: the bridge mounts a service account token and the cluster CA")
        check(all(m.get("mountPath") != token_path for m in sched_c.get("volumeMounts", [])),
              "deployment: the scheduler (which loads plugins) gets no API token")
    return bridge


def check_crds(objects):
    def crd(name, group, plural, kind, scope, version, short):
        c = one(objects, "CustomResourceDefinition", name)
        s = c.get("spec", {})
        check(s.get("group") == group, f"{name}: group {group}")
        check(s.get("scope") == scope, f"{name}: scope {scope}")
        names = s.get("names", {})
        check(names.get("plural") == plural and names.get("kind") == kind,
              f"{name}: plural {plural}, kind {kind}")
        check(short in names.get("shortNames", []), f"{name}: short name {short}")
        versions = s.get("versions", [])
        check(sum(1 for v in versions if v.get("storage")) == 1, f"{name}: one storage version")
        v = next((v for v in versions if v.get("name") == version), {})
        check(v.get("served") is True, f"{name}: serves {version}")
        return v, v.get("schema", {}).get("openAPIV3Schema", {}), c

    def props(schema, *path):
        for p in path:
            schema = schema.get("properties", {}).get(p, {}) if p != "[]" else \
                schema.get("items", {})
        return schema.get("properties", {})

    v, schema, _ = crd("podgroups.scheduling.x-k8s.io", "scheduling.x-k8s.io", "podgroups",
                       "PodGroup", "Namespaced", "v1alpha1", "pg")
    check(v.get("subresources", {}).get("status") == {}, "PodGroup: status subresource")
    check({"minMember", "minResources", "scheduleTimeoutSeconds"} <= set(props(schema, "spec")),
          "PodGroup: spec.minMember, minResources, scheduleTimeoutSeconds")
    check({"phase", "occupiedBy", "scheduled", "running", "succeeded", "failed",
           "scheduleStartTime"} <= set(props(schema, "status")),
          "PodGroup: status phase, occupiedBy, scheduled, running, succeeded, failed, "
          "scheduleStartTime")

    v, schema, _ = crd("capacityqueues.scheduling.kcycle.io", "scheduling.kcycle.io",
                       "capacityqueues", "CapacityQueue", "Cluster", "v1alpha1", "cq")
    check(v.get("subresources", {}).get("status") == {}, "CapacityQueue: status subresource")
    spec = props(schema, "spec")
    check({"parent", "guaranteed", "limit", "weight", "reclaimable", "borrowingLimit",
           "lendingLimit"} <= set(spec),
          "CapacityQueue: spec parent, guaranteed, limit, weight, reclaimable, borrowingLimit, "
          "lendingLimit (what capacityqueue reads: a real API server prunes unlisted fields)")
    check(spec.get("weight", {}).get("default") == 1, "CapacityQueue: weight defaults to 1")
    check({"used", "borrowed", "pending", "admitted", "valid"} <= set(props(schema, "status")),
          "CapacityQueue: status used, borrowed, pending, admitted, valid (what capacityqueue "
          "writes)")

    v, schema, c = crd("noderesourcetopologies.topology.node.k8s.io", "topology.node.k8s.io",
                       "noderesourcetopologies", "NodeResourceTopology", "Cluster", "v1alpha2",
                       "node-res-topo")
    check("api-approved.kubernetes.io" in c.get("metadata", {}).get("annotations", {}),
          "NodeResourceTopology: api-approved annotation (required for a k8s.io group)")
    check({"zones", "attributes", "topologyPolicies"} <= set(schema.get("properties", {})),
          "NodeResourceTopology: zones, attributes, topologyPolicies")
    check({"name", "type", "resources", "costs", "attributes"} <= set(props(schema, "zones",
                                                                            "[]")),
          "NodeResourceTopology: zones[] name, type, resources, costs, attributes")
    check({"name", "capacity", "allocatable", "available"} <=
          set(props(schema, "zones", "[]", "resources", "[]")),
          "NodeResourceTopology: resources[] name, capacity, allocatable, available")
    check({"name", "value"} <= set(props(schema, "attributes", "[]")),
          "NodeResourceTopology: attributes[] name, value")


def check_topology_agent(objects):
    ds = one(objects, "DaemonSet", "kcycle-topology-agent")
    pod = ds.get("spec", {}).get("template", {}).get("spec", {})
    c = (pod.get("containers") or [{}])[0]
    check(c.get("command") == ["/usr/bin/kcycle-topology-agent"],
          "topology-agent: runs /usr/bin/kcycle-topology-agent")
    env = {e.get("name"): e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
           for e in c.get("env", [])}
    check(env.get("NODE_NAME") == "spec.nodeName", "topology-agent: NODE_NAME from spec.nodeName")
    volumes = {v.get("name"): v for v in pod.get("volumes", [])}
    sys_mounts = [m for m in c.get("volumeMounts", [])
                  if volumes.get(m.get("name"), {}).get("hostPath", {}).get("path") == "/sys"]
    check(len(sys_mounts) == 1 and sys_mounts[0].get("readOnly") is True,
          "topology-agent: the node's /sys, read-only")
    host_paths = sorted(v.get("hostPath", {}).get("path") for v in pod.get("volumes", [])
                        if "hostPath" in v)
    check(host_paths == ["/sys", "/var/lib/kubelet/pod-resources"],
          f"topology-agent: only /sys and the podresources socket's folder, got {host_paths}")
    sc = c.get("securityContext", {})
    check(sc.get("allowPrivilegeEscalation") is False and sc.get("readOnlyRootFilesystem") and
          sc.get("capabilities", {}).get("drop") == ["ALL"],
          "topology-agent: no capabilities, no privilege escalation, read-only root")
    account = pod.get("serviceAccountName")
    check(account == "kcycle-topology-agent", "topology-agent: its own ServiceAccount")
    role = one(objects, "ClusterRole", "kcycle-topology-agent")
    rules = {(g, r, v) for rule in role.get("rules", []) for g in rule.get("apiGroups", [])
             for r in rule.get("resources", []) for v in rule.get("verbs", [])}
    check(rules == {("topology.node.k8s.io", "noderesourcetopologies", v)
                    for v in ("create", "get", "update")},
          f"topology-agent: create/get/update on noderesourcetopologies only, got {rules}")
    binding = one(objects, "ClusterRoleBinding", "kcycle-topology-agent")
    check({(s.get("namespace"), s.get("name")) for s in binding.get("subjects", [])} ==
          {("kcycle-system", account)}, "topology-agent: its role is bound to its account")


def check_examples(objects):
    pods = find({"p": objects.get("examples/pod.yaml", [])}, "Pod")
    check(len(pods) == 1 and pods[0].get("spec", {}).get("schedulerName") == "kcycle",
          "examples/pod.yaml: one pod with schedulerName kcycle")
    gang = objects.get("examples/gang.yaml", [])
    groups = [d for d in gang if d.get("kind") == "PodGroup"]
    check(len(groups) == 1 and groups[0].get("apiVersion") == "scheduling.x-k8s.io/v1alpha1" and
          groups[0].get("spec", {}).get("minMember") == 3,
          "examples/gang.yaml: a PodGroup with minMember 3")
    if not groups:
        return
    group = groups[0]["metadata"]
    members = [d for d in gang if d.get("kind") == "Pod"]
    check(len(members) == 3, f"examples/gang.yaml: three pods, got {len(members)}")
    for p in members:
        m = p["metadata"]
        check(m.get("labels", {}).get("scheduling.x-k8s.io/pod-group") == group["name"] and
              m.get("namespace") == group.get("namespace") and
              p.get("spec", {}).get("schedulerName") == "kcycle",
              f"examples/gang.yaml: {m['name']} joins {group['name']} in its namespace and asks "
              "for kcycle")


def check_containerfile():
    path = os.path.join(DEPLOY, "Containerfile")
    with open(path) as f:
        text = f.read()
    stages = re.findall(r"^FROM\s+(\S+)", text, re.M)
    check(stages[:1] == ["debian:bookworm"] and stages[-1:] == ["debian:bookworm-slim"],
          f"Containerfile: builds on debian:bookworm, runs on debian:bookworm-slim, got {stages}")
    check(re.search(r"^USER\s+65532(:65532)?\s*$", text, re.M) is not None,
          "Containerfile: runs as user 65532")
    check("-Dtests=false" in text and "--prefix=/usr" in text,
          "Containerfile: --prefix=/usr -Dtests=false")
    check("-Dplugindir=/usr/lib/kcycle/plugins" in text,
          "Containerfile: plugins installed in /usr/lib/kcycle/plugins")
    runtime = text[text.rfind("FROM"):]
    for lib in ("libnng1", "libprotobuf-c1", "libjansson4", "libyaml-0-2", "libcurl4",
                "libhwloc15", "ca-certificates"):
        check(re.search(r"\b" + re.escape(lib) + r"\b", runtime) is not None,
              f"Containerfile: the runtime stage installs {lib}")
    check(not re.search(r"-dev\b", runtime), "Containerfile: no -dev packages at runtime")


def check_docs():
    if not check(os.path.isfile(OPERATIONS), "docs/operations.md exists"):
        return
    with open(OPERATIONS, encoding="utf-8") as f:
        text = f.read()
    for flag in sorted(BRIDGE_VALUE_FLAGS | BRIDGE_BARE_FLAGS | SCHEDULER_VALUE_FLAGS):
        check(f"`{flag}" in text, f"docs/operations.md documents {flag}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        files = manifest_files()
        readers = [(n, r) for n, r in (("kubectl", kubectl_reader()), ("PyYAML", pyyaml_reader()))
                   if r is not None]
        objects = read_all(files, readers)
        try:
            check_kustomization(files)
            config = check_config(objects, tmp)
        except YamlError as e:
            check(False, f"kustomization.yaml and config.yaml are valid YAML: {e}")
            config = {}
        bridge = check_deployment(objects, config)
        check_rbac(objects, bridge)
        check_crds(objects)
        check_topology_agent(objects)
        check_examples(objects)
        check_containerfile()
        check_docs()
    print(f"{PASSED[0]} passed, {len(FAILURES)} failed")
    return 1 if FAILURES or PASSED[0] == 0 else 0  # a run that checked nothing fails


if __name__ == "__main__":
    sys.exit(main())
