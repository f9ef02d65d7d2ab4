#!/usr/bin/env python3
"""A fake Kubernetes API server for kcycle's tests: an etcd-like in-memory store behind the real
wire format (lists, paging, chunked watches, binding, status patches, leases, discovery for
kubectl), plus admin endpoints under /fake/ to load objects, read what clients did and inject
faults. Standard library only. See README.md next to this file."""

import argparse
import base64
import bisect
import calendar
import http.client
import json
import os
import random
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import uuid
import zlib
from collections import OrderedDict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CERT_DIR = os.path.join(HERE, "certs")

POD_FIELDS = frozenset([
    "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
    "spec.schedulerName", "spec.serviceAccountName", "status.phase", "status.podIP",
    "status.nominatedNodeName"])
META_FIELDS = frozenset(["metadata.name", "metadata.namespace"])
CORE_EVENT_FIELDS = META_FIELDS | frozenset([
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
    "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
    "involvedObject.fieldPath", "reason", "reportingComponent", "type"])

OBJECT_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]

# Every resource the server knows. "builtin" kinds omit kind/apiVersion on list items, as the
# real server does for compiled-in types; custom resources keep them.
RESOURCE_DEFS = [
    dict(group="", version="v1", plural="pods", singular="pod", kind="Pod", namespaced=True,
         short=["po"], categories=["all"], subresources=["binding", "status"],
         fields=POD_FIELDS),
    dict(group="", version="v1", plural="nodes", singular="node", kind="Node", namespaced=False,
         short=["no"], subresources=["status"],
         fields=frozenset(["metadata.name", "spec.unschedulable"])),
    dict(group="", version="v1", plural="namespaces", singular="namespace", kind="Namespace",
         namespaced=False, short=["ns"], subresources=["status"],
         fields=frozenset(["metadata.name", "status.phase"])),
    dict(group="", version="v1", plural="events", singular="event", kind="Event",
         namespaced=True, short=["ev"], fields=CORE_EVENT_FIELDS),
    dict(group="events.k8s.io", version="v1", plural="events", singular="event", kind="Event",
         namespaced=True, short=["ev"]),
    dict(group="coordination.k8s.io", version="v1", plural="leases", singular="lease",
         kind="Lease", namespaced=True),
    dict(group="scheduling.x-k8s.io", version="v1alpha1", plural="podgroups",
         singular="podgroup", kind="PodGroup", namespaced=True, short=["pg", "pgs"],
         subresources=["status"], builtin=False),
    dict(group="scheduling.kcycle.io", version="v1alpha1", plural="capacityqueues",
         singular="capacityqueue", kind="CapacityQueue", namespaced=False, short=["cq"],
         subresources=["status"], builtin=False),
    dict(group="topology.node.k8s.io", version="v1alpha2", plural="noderesourcetopologies",
         singular="noderesourcetopology", kind="NodeResourceTopology", namespaced=False,
         short=["node-res-topo"], builtin=False),
    # storage: what the volume plugins read and volume binding writes
    dict(group="", version="v1", plural="persistentvolumeclaims",
         singular="persistentvolumeclaim", kind="PersistentVolumeClaim", namespaced=True,
         short=["pvc"], subresources=["status"]),
    dict(group="", version="v1", plural="persistentvolumes", singular="persistentvolume",
         kind="PersistentVolume", namespaced=False, short=["pv"], subresources=["status"]),
    dict(group="storage.k8s.io", version="v1", plural="storageclasses", singular="storageclass",
         kind="StorageClass", namespaced=False, short=["sc"]),
    dict(group="storage.k8s.io", version="v1", plural="csinodes", singular="csinode",
         kind="CSINode", namespaced=False),
    # preemption: the budgets defaultpreemption respects
    dict(group="policy", version="v1", plural="poddisruptionbudgets",
         singular="poddisruptionbudget", kind="PodDisruptionBudget", namespaced=True,
         short=["pdb"], subresources=["status"]),
    # the selectors of podtopologyspread's default constraints
    dict(group="", version="v1", plural="services", singular="service", kind="Service",
         namespaced=True, short=["svc"], categories=["all"], subresources=["status"]),
    dict(group="", version="v1", plural="replicationcontrollers",
         singular="replicationcontroller", kind="ReplicationController", namespaced=True,
         short=["rc"], categories=["all"], subresources=["status"]),
    dict(group="apps", version="v1", plural="replicasets", singular="replicaset",
         kind="ReplicaSet", namespaced=True, short=["rs"], categories=["all"],
         subresources=["status"]),
    dict(group="apps", version="v1", plural="statefulsets", singular="statefulset",
         kind="StatefulSet", namespaced=True, short=["sts"], categories=["all"],
         subresources=["status"]),
]

# Strategic merge patch: list fields merged by a key instead of replaced (by field name; the
# real server uses per-type struct tags, these are the ones that matter for pods, nodes, CRDs).
MERGE_KEYS = {
    "conditions": "type", "containers": "name", "initContainers": "name",
    "ephemeralContainers": "name", "volumes": "name", "env": "name", "volumeMounts": "mountPath",
    "containerStatuses": "name", "initContainerStatuses": "name",
    "ephemeralContainerStatuses": "name", "ownerReferences": "uid", "imagePullSecrets": "name",
    "schedulingGates": "name", "taints": "key", "addresses": "type", "podIPs": "ip",
    "hostIPs": "ip", "resourceClaims": "name", "readinessGates": "conditionType",
}

DEFAULT_FAULTS = {
    "watch_cut_after_s": None, "bind_conflict_every": 0, "bind_unavailable_every": 0,
    "slow_ms": 0, "split_chunks": False, "bookmark_interval_s": None,
    "volume_patch_conflict_every": 0,
    "list_delay_ms": {},
    # a pod DELETE (an eviction) answered with this HTTP code instead (0: none), e.g. 403
    "pod_delete_fail_code": 0,
    # hostile responses (Hostile below): {"<group/>plural": {"mode": ..., "bytes": N}}
    "hostile": {},
}

JSON_SEPARATORS = (",", ":")
TABLE_CTYPE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def dumps(obj):
    return json.dumps(obj, separators=JSON_SEPARATORS).encode()


def copy_json(value):
    """Deep copy of a JSON value; several times faster than copy.deepcopy."""
    if type(value) is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if type(value) is list:
        return [copy_json(v) for v in value]
    return value


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_rfc3339_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details


def status_body(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def not_found(res, name):
    return ApiError(404, "NotFound", f'{res.qualified} "{name}" not found',
                    {"name": name, "group": res.group, "kind": res.plural})


def validate_event(res, namespace, body):
    """kube-apiserver's create validation of an events.k8s.io/v1 Event, the part a writer can
    get wrong: it must carry eventTime, a type of Normal or Warning, regarding in its own
    namespace, and (with eventTime) who reported it and why."""
    if res.group != "events.k8s.io" or res.plural != "events" or not isinstance(body, dict):
        return
    meta = body.get("metadata") or {}
    regarding = body.get("regarding") or {}
    errors = []
    if regarding.get("kind") not in ("Node", "Namespace", "PersistentVolume") and \
            (regarding.get("namespace") or "") != namespace:
        given = regarding.get("namespace") or ""
        errors.append(f'involvedObject.namespace: Invalid value: "{given}": does not match '
                      "event.namespace")
    if not body.get("eventTime"):
        errors.append("eventTime: Required value")
    else:
        for field in ("reportingController", "reportingInstance", "action", "reason"):
            if not body.get(field):
                errors.append(f"{field}: Required value")
    if body.get("type") not in ("Normal", "Warning"):
        errors.append(f'type: Invalid value: "{body.get("type") or ""}": has invalid value: '
                      f'{body.get("type") or ""}')
    if errors:
        raise ApiError(422, "Invalid", f'Event "{meta.get("name", "")}" is invalid: '
                       f'[{", ".join(errors)}]', {"name": meta.get("name", ""),
                                                  "group": res.group, "kind": "Event"})


def conflict(qualified, name, why, res=None):
    details = {"name": name, "kind": qualified.split(".")[0]}
    if res is not None:
        details["group"] = res.group
    message = f'Operation cannot be fulfilled on {qualified} "{name}": {why}'
    return ApiError(409, "Conflict", message, details)


def written(res, name, sub, old, body, want_rv):
    """What an update or patch of res/name (sub "status" or None) stores: the status
    subresource changes only status, the main resource everything else (when the resource
    has a status subresource); a stale resourceVersion is a 409."""
    if want_rv and want_rv != old["metadata"]["resourceVersion"]:
        raise modified_conflict(res, name)
    if sub == "status":
        new = dict(old)
        if body.get("status") is not None:
            new["status"] = body["status"]
        else:
            new.pop("status", None)
        return new
    if "status" in res.subresources:
        new = dict(body)
        new.pop("status", None)
        if "status" in old:
            new["status"] = old["status"]
        return new
    return body


def modified_conflict(res, name):
    return conflict(res.qualified, name, "the object has been modified; please apply your "
                    "changes to the latest version and try again", res)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


# ---------------------------------------------------------------------------------------------
# Selectors

def field_value(obj, path):
    value = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def parse_field_selector(res, text):
    """[(field, op, value)] with op "=" or "!="; 400 for a field the kind does not index."""
    terms = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        for op in ("!=", "==", "="):
            if op in term:
                field, value = term.split(op, 1)
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field = field.strip()
        if field not in res.fields:
            raise bad_request(f"field label not supported: {field}")
        terms.append((field, "!=" if op == "!=" else "=", value.strip()))
    return terms


LABEL_SET_TERM = re.compile(r"^\s*([^\s!=,()]+)\s+(in|notin)\s+\((.*)\)\s*$")


def split_outside_parens(text):
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_label_selector(text):
    terms = []
    for term in split_outside_parens(text):
        m = LABEL_SET_TERM.match(term)
        if m:
            values = {v.strip() for v in m.group(3).split(",") if v.strip()}
            terms.append((m.group(1), m.group(2), values))
        elif "!=" in term:
            key, value = term.split("!=", 1)
            terms.append((key.strip(), "!=", value.strip()))
        elif "==" in term or "=" in term:
            key, value = term.split("==" if "==" in term else "=", 1)
            terms.append((key.strip(), "=", value.strip()))
        elif term.startswith("!"):
            terms.append((term[1:].strip(), "!", None))
        elif re.match(r"^[A-Za-z0-9._/-]+$", term):
            terms.append((term, "exists", None))
        else:
            raise bad_request(f"unable to parse requirement: invalid label selector: {term!r}")
    return terms


def label_matches(obj, terms):
    labels = obj.get("metadata", {}).get("labels") or {}
    for key, op, value in terms:
        have = labels.get(key)
        if op == "=" and have != value:
            return False
        if op == "!=" and have == value:
            return False
        if op == "exists" and key not in labels:
            return False
        if op == "!" and key in labels:
            return False
        if op == "in" and have not in value:
            return False
        if op == "notin" and have in value:
            return False
    return True


def field_matches(obj, terms):
    for field, op, value in terms:
        if (field_value(obj, field) == value) != (op == "="):
            return False
    return True


class Filter:
    """What one list or watch asks for: namespace, field and label selectors."""

    def __init__(self, namespace, fields, labels):
        self.namespace, self.fields, self.labels = namespace, fields, labels
        self.prefix = namespace + "/" if namespace else None

    def matches(self, key, obj):
        if obj is None:
            return False
        if self.prefix and not key.startswith(self.prefix):
            return False
        if self.fields and not field_matches(obj, self.fields):
            return False
        return not self.labels or label_matches(obj, self.labels)


# ---------------------------------------------------------------------------------------------
# Patches

def merge_patch(target, patch):
    """RFC 7386. Returns a new value; never mutates target or patch."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(target, patch):
    """Strategic merge patch: maps merge, lists named in MERGE_KEYS merge by their key, other
    lists are replaced; understands $patch, $setElementOrder, $retainKeys and
    $deleteFromPrimitiveList directives well enough for client-go generated patches."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy_json(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = strategic_merge(result.get(key), value)
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = merge_list(result.get(key) or [], value, MERGE_KEYS[key])
        else:
            result[key] = copy_json(value)
    return result


def merge_list(old, patch, merge_key):
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy_json(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    out = list(old)
    for item in patch:
        if not isinstance(item, dict):
            out.append(copy_json(item))
            continue
        key = item.get(merge_key)
        index = next((i for i, o in enumerate(out)
                      if isinstance(o, dict) and o.get(merge_key) == key), None)
        if item.get("$patch") == "delete":
            if index is not None:
                del out[index]
        elif index is not None:
            out[index] = strategic_merge(out[index], item)
        else:
            out.append(strategic_merge({}, item))
    return out


def json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902 on a deep copy of doc."""
    doc = copy_json(doc)
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")

    def parent(parts):
        node = doc
        for part in parts[:-1]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def get(parts):
        node = doc
        for part in parts:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def remove(parts):
        node = parent(parts)
        if isinstance(node, list):
            return node.pop(int(parts[-1]))
        return node.pop(parts[-1])

    def add(parts, value):
        node = parent(parts)
        if isinstance(node, list):
            node.insert(len(node) if parts[-1] == "-" else int(parts[-1]), value)
        else:
            node[parts[-1]] = value

    try:
        for op in ops:
            name, parts = op.get("op"), json_pointer(op.get("path", ""))
            if name == "add":
                add(parts, copy_json(op.get("value")))
            elif name == "remove":
                remove(parts)
            elif name == "replace":
                remove(parts)
                add(parts, copy_json(op.get("value")))
            elif name == "move":
                add(parts, remove(json_pointer(op.get("from", ""))))
            elif name == "copy":
                add(parts, copy_json(get(json_pointer(op.get("from", "")))))
            elif name == "test":
                if get(parts) != op.get("value"):
                    raise ApiError(422, "Invalid", f"test operation failed at {op.get('path')}")
            else:
                raise bad_request(f"unknown json patch op {name!r}")
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise ApiError(422, "Invalid", f"json patch could not be applied: {err!r}")
    return doc


# ---------------------------------------------------------------------------------------------
# Tables (kubectl get)

def human_age(created):
    try:
        then = calendar.timegm(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return "<unknown>"
    s = max(0, int(time.time() - then))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if d < 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    return f"{d}d"


def column(name, ctype="string", fmt="", priority=0, description=""):
    return {"name": name, "type": ctype, "format": fmt, "description": description,
            "priority": priority}


NAME_COLUMN = column("Name", fmt="name", description="Name must be unique within a namespace.")
AGE_COLUMN = column("Age", description="CreationTimestamp is a timestamp representing the "
                    "server time when this object was created.")


def pod_cells(obj):
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    phase = status.get("reason") or status.get("phase") or ""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        phase = "Terminating"
    elif not spec.get("nodeName") and spec.get("schedulingGates"):
        phase = "SchedulingGated"
    return [obj["metadata"].get("name", ""), f"{ready}/{len(spec.get('containers') or [])}",
            phase, restarts, human_age(obj["metadata"].get("creationTimestamp")),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>"]


def node_cells(obj):
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready":
            ready = "Ready" if cond.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        ready += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (obj["metadata"].get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    return [obj["metadata"].get("name", ""), ready, ",".join(roles) or "<none>",
            human_age(obj["metadata"].get("creationTimestamp")),
            (status.get("nodeInfo") or {}).get("kubeletVersion", "")]


TABLE_LAYOUTS = {
    "pods": ([NAME_COLUMN, column("Ready", description="The aggregate readiness state of this "
                                  "pod for accepting traffic."),
              column("Status", description="The aggregate status of the containers in this pod."),
              column("Restarts", "string", description="The number of times the containers in "
                     "this pod have been restarted."), AGE_COLUMN,
              column("IP", priority=1, description="IP address allocated to the pod."),
              column("Node", priority=1, description="Name of the node the pod is assigned to."),
              column("Nominated Node", priority=1, description="Nominated node name.")],
             pod_cells),
    "nodes": ([NAME_COLUMN, column("Status", description="The status of the node"),
               column("Roles", description="The roles of the node"), AGE_COLUMN,
               column("Version", description="Kubelet Version reported by the node.")],
              node_cells),
    "namespaces": ([NAME_COLUMN, column("Status", description="The status of the namespace"),
                    AGE_COLUMN],
                   lambda o: [o["metadata"].get("name", ""),
                              (o.get("status") or {}).get("phase", ""),
                              human_age(o["metadata"].get("creationTimestamp"))]),
}
DEFAULT_LAYOUT = ([NAME_COLUMN, AGE_COLUMN],
                  lambda o: [o["metadata"].get("name", ""),
                             human_age(o["metadata"].get("creationTimestamp"))])


def partial_metadata(obj):
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def to_table(res, objects, include_object, metadata=None):
    columns, cells = TABLE_LAYOUTS.get(res.plural if res.group == "" else "", DEFAULT_LAYOUT)
    rows = []
    for obj in objects:
        row = {"cells": cells(obj)}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata or {},
            "columnDefinitions": columns, "rows": rows}


def response_format(accept):
    """'table', 'metadata' or 'json' from the Accept header, the first usable type winning."""
    for media in (accept or "").split(","):
        params = dict(p.strip().split("=", 1) for p in media.split(";")[1:] if "=" in p)
        kind = params.get("as", "")
        if kind == "Table" and params.get("g") == "meta.k8s.io":
            return "table"
        if kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return "metadata"
        if kind:
            continue  # e.g. aggregated discovery: not served, fall through to plain JSON
        mtype = media.split(";")[0].strip()
        if mtype in ("application/json", "*/*", "application/*", ""):
            return "json"
    return "json"


# ---------------------------------------------------------------------------------------------
# The store

class Hostile:
    """The `hostile` fault: answers a client must survive without its memory following them.
    Per resource, one of
      endless_list  a list (200, chunked) whose items never end;
      gzip_bomb     a list sent gzip-encoded that expands ~1000:1 into one endless string;
      huge_event    a watch whose first event is one object of `bytes` bytes;
      endless_continue  every list page (about `bytes` bytes, default 1 MiB, of items named
                    after the page) ends with a continue token to one more page, forever.
    `bytes` (default 4 GiB) bounds what is sent, decoded, should the client never stop; a
    client that stops reading ends the response (the write fails)."""

    CHUNK = 1 << 20
    DEFAULT_BYTES = 4 << 30

    @staticmethod
    def serve(handler, res, verb):
        """Answer the request if a hostile mode applies to it; True when answered."""
        spec = (handler.server.store.faults.get("hostile") or {}).get(res.path)
        if not isinstance(spec, dict):
            return False
        mode = spec.get("mode")
        total = int(spec.get("bytes") or Hostile.DEFAULT_BYTES)
        modes = {"list": {"endless_list": Hostile.endless_list, "gzip_bomb": Hostile.gzip_bomb,
                          "endless_continue": Hostile.endless_continue},
                 "watch": {"huge_event": Hostile.huge_event}}
        answer = modes.get(verb, {}).get(mode)
        if answer is None:
            return False
        head = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                "Cache-Control: no-cache, private\r\nTransfer-Encoding: chunked\r\n")
        if mode == "gzip_bomb":
            head += "Content-Encoding: gzip\r\n"
        if mode == "endless_continue":
            total = int(spec.get("bytes") or Hostile.CHUNK)
        handler.close_connection = True
        handler.code = 200
        try:
            handler.wfile.write((head + "\r\n").encode())
            answer(handler, res, total)
            handler.end_stream()
        except (OSError, ssl.SSLError):
            pass  # the client gave up: what the test wants
        return True

    @staticmethod
    def chunk(handler, data):
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    @staticmethod
    def list_head(res):
        return ('{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"1"},'
                % (res.list_kind, res.api_version)).encode()

    @staticmethod
    def endless_list(handler, res, total):
        # one chunk of distinct items, built once and sent again and again: the client never
        # gets far enough to mind the repeated names, and the server stays cheap
        items, index, size = [], 0, 0
        while size < Hostile.CHUNK:
            item = dumps({"apiVersion": res.api_version, "kind": res.kind,
                          "metadata": {"name": "endless-%d" % index, "uid": "endless-%d" % index,
                                       "resourceVersion": "1"}})
            items.append(item)
            size += len(item) + 1
            index += 1
        data = b"," + b",".join(items)
        Hostile.chunk(handler, Hostile.list_head(res) + b'"items":[' + data[1:])
        sent = len(data)
        while sent < total:
            Hostile.chunk(handler, data)
            sent += len(data)
        Hostile.chunk(handler, b"]}")

    @staticmethod
    def endless_continue(handler, res, total):
        # one well-formed page per request: the client only ever asks for the next one
        token = dict(parse_qsl(urlsplit(handler.path).query)).get("continue", "0")
        page = int(token) if token.isdigit() else 0
        items, size = [], 0
        while size < total:
            name = "page-%d-%d" % (page, len(items))
            item = dumps({"apiVersion": res.api_version, "kind": res.kind,
                          "metadata": {"name": name, "uid": name, "resourceVersion": "1"}})
            items.append(item)
            size += len(item) + 1
        head = ('{"kind":"%s","apiVersion":"%s","metadata":{"resourceVersion":"1",'
                '"continue":"%d"},' % (res.list_kind, res.api_version, page + 1)).encode()
        Hostile.chunk(handler, head + b'"items":[' + b",".join(items) + b"]}")

    @staticmethod
    def gzip_bomb(handler, res, total):
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
        Hostile.chunk(handler, packer.compress(Hostile.list_head(res) + b'"items":[],"pad":"'))
        spaces = b" " * Hostile.CHUNK
        sent = 0
        while sent < total:
            data = packer.compress(spaces) + packer.flush(zlib.Z_SYNC_FLUSH)
            if data:
                Hostile.chunk(handler, data)
            sent += len(spaces)
        Hostile.chunk(handler, packer.compress(b'"}') + packer.flush())

    @staticmethod
    def huge_event(handler, res, total):
        with handler.server.store.lock:
            rv = handler.server.store.rv + 1
        head = {"type": "ADDED", "object": {"apiVersion": res.api_version, "kind": res.kind,
                                            "metadata": {"name": "huge", "uid": "huge",
                                                         "resourceVersion": str(rv),
                                                         "annotations": {"pad": ""}}}}
        text = dumps(head)
        cut = text.index(b'"pad":""') + len(b'"pad":"')
        Hostile.chunk(handler, text[:cut])
        filler = b"x" * Hostile.CHUNK
        sent = 0
        while sent < total:
            Hostile.chunk(handler, filler)
            sent += len(filler)
        Hostile.chunk(handler, text[cut:] + b"\n")


class Resource:
    def __init__(self, d):
        self.group, self.version, self.plural = d["group"], d["version"], d["plural"]
        self.singular, self.kind, self.namespaced = d["singular"], d["kind"], d["namespaced"]
        self.short = d.get("short", [])
        self.categories = d.get("categories", [])
        self.subresources = d.get("subresources", [])
        self.builtin = d.get("builtin", True)
        self.fields = d.get("fields", META_FIELDS if d["namespaced"] else
                            frozenset(["metadata.name"]))
        self.api_version = f"{self.group}/{self.version}" if self.group else self.version
        self.qualified = f"{self.plural}.{self.group}" if self.group else self.plural
        self.path = (f"{self.group}/" if self.group else "") + self.plural
        self.list_kind = self.kind + "List"
        self.objects = {}           # key ("ns/name" or "name") -> immutable stored object
        self.history = deque()      # (rv, type, object, previous object) oldest first
        self.compacted_rv = 0       # watches from an rv below this get 410 Expired

    def key(self, namespace, name):
        return f"{namespace}/{name}" if self.namespaced else name

    def key_of(self, obj):
        meta = obj["metadata"]
        return self.key(meta.get("namespace", ""), meta["name"])


class Watch:
    def __init__(self, connection):
        self.connection = connection
        self.cut = False
        self.started = time.monotonic()


class Store:
    """All objects behind one lock. Stored objects are never mutated: every write stores a new
    dict, so history entries, list snapshots and watch threads can share them safely."""

    def __init__(self, history_limit):
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.rv = 0
        self.history_limit = max(1, history_limit)
        self.resources = [Resource(d) for d in RESOURCE_DEFS]
        self.by_path = {(r.group, r.version, r.plural): r for r in self.resources}
        self.by_kind = {(r.api_version, r.kind): r for r in self.resources}
        self.snapshots = OrderedDict()   # (plural path, rv) -> (keys, objects) for paging
        self.epoch = 0                   # bumped by compact: older continue tokens expire
        self.faults = dict(DEFAULT_FAULTS)
        self.tokens = frozenset()
        self.watches = set()
        self.stopping = False
        self.binding_attempt_count = 0
        self.held_requests = []  # requests inside the slow_ms delay now (stats: held_requests)
        self.reset_stats()

    def reset_stats(self):
        self.binding_attempts, self.bindings, self.status_patches = [], [], []
        self.events, self.lease_writes, self.requests = [], [], {}
        self.deletions = []  # every DELETE of a pod: who, the uid precondition, the answer

    # -- writes (caller holds the lock) --

    def _record(self, res, etype, obj, previous):
        history = res.history
        if len(history) >= self.history_limit:
            res.compacted_rv = history.popleft()[0]
        history.append((self.rv, etype, obj, previous))

    def _stamp(self, meta):
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)

    def create(self, res, namespace, obj):
        if not isinstance(obj, dict):
            raise bad_request("the body of the request was not an object")
        meta = obj.get("metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        name = meta.get("name")
        if not name and meta.get("generateName"):
            name = meta["generateName"] + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789")
                                                  for _ in range(5))
            meta["name"] = name
        if not name or not isinstance(name, str):
            raise ApiError(422, "Invalid", f"{res.kind}.{res.api_version} is invalid: "
                           "metadata.name: Required value: name or generateName is required")
        if res.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        key = res.key(namespace, name)
        if key in res.objects:
            raise ApiError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists',
                           {"name": name, "group": res.group, "kind": res.plural})
        meta.pop("resourceVersion", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        meta["generation"] = 1
        self._stamp(meta)
        stored = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        for k, v in obj.items():
            if k not in ("kind", "apiVersion", "metadata"):
                stored[k] = v
        if res.plural == "pods" and res.group == "":
            spec = stored["spec"] = dict(stored.get("spec") or {})
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("priority", 0)
            status = stored["status"] = dict(stored.get("status") or {})
            status.setdefault("phase", "Pending")
        elif res.plural == "namespaces" and res.group == "":
            status = stored["status"] = dict(stored.get("status") or {})
            status.setdefault("phase", "Active")
        res.objects[key] = stored
        self._record(res, "ADDED", stored, None)
        if res.plural == "events":
            self.events.append(stored)
        return stored

    def require_namespace(self, res, namespace):
        """kube-apiserver refuses to create an object in a namespace that does not exist."""
        if res.namespaced and res.plural != "namespaces" and \
                namespace not in self.by_path[("", "v1", "namespaces")].objects:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                           {"name": namespace, "kind": "namespaces"})

    def ensure_namespace(self, namespace):
        namespaces = self.by_path[("", "v1", "namespaces")]
        if namespace not in namespaces.objects:
            self.create(namespaces, None, {"metadata": {"name": namespace}})

    def replace(self, res, key, old, new):
        """Store new in place of old (both for key); no-op writes keep the old object."""
        meta = dict(new.get("metadata") or {})
        old_meta = old["metadata"]
        for field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        stored = {"kind": res.kind, "apiVersion": res.api_version, "metadata": meta}
        for k, v in new.items():
            if k not in ("kind", "apiVersion", "metadata"):
                stored[k] = v
        if stored == old:
            return old
        if {k: v for k, v in stored.items() if k not in ("metadata", "status")} != \
                {k: v for k, v in old.items() if k not in ("metadata", "status")}:
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        self._stamp(meta)
        res.objects[key] = stored
        self._record(res, "MODIFIED", stored, old)
        return stored

    def delete(self, res, key):
        old = res.objects.pop(key)
        gone = dict(old)
        gone["metadata"] = dict(old["metadata"])
        self._stamp(gone["metadata"])
        self._record(res, "DELETED", gone, old)
        return gone

    def compact(self):
        for res in self.resources:
            res.history.clear()
            res.compacted_rv = self.rv
        self.snapshots.clear()
        self.epoch += 1

    # -- reads (caller holds the lock) --

    def snapshot(self, res, rv):
        """Sorted (keys, objects) of res as of rv, kept for continue tokens."""
        cache_key = (res.path, rv)
        snap = self.snapshots.get(cache_key)
        if snap is not None:
            self.snapshots.move_to_end(cache_key)
            return snap
        if rv < res.compacted_rv or rv > self.rv:
            return None
        state = dict(res.objects)
        for event_rv, etype, obj, previous in reversed(res.history):
            if event_rv <= rv:
                break
            key = res.key_of(obj)
            if etype == "ADDED":
                state.pop(key, None)
            else:
                state[key] = previous
        keys = sorted(state)
        snap = (keys, [state[k] for k in keys])
        self.snapshots[cache_key] = snap
        while len(self.snapshots) > 16:
            self.snapshots.popitem(last=False)
        return snap

    def events_after(self, res, rv):
        """History events of res newer than rv, oldest first; None when rv was compacted."""
        if rv < res.compacted_rv:
            return None
        out = []
        for event in reversed(res.history):
            if event[0] <= rv:
                break
            out.append(event)
        out.reverse()
        return out


def encode_continue(rv, epoch, last_key):
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": last_key + "\x00", "e": epoch}
    return base64.urlsafe_b64encode(dumps(token)).decode()


def decode_continue(text):
    try:
        padded = text + "=" * (-len(text) % 4)
        token = json.loads(base64.urlsafe_b64decode(padded.encode()))
        return int(token["rv"]), int(token["e"]), str(token["start"])
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                          "(version meta.k8s.io/v1)")


# ---------------------------------------------------------------------------------------------
# HTTP

class WatchEnded(Exception):
    """The watch stream is over (client gone or connection cut); close the connection."""


class FastHeaders:
    """Request headers without the email parser that http.server uses (a third of the time
    of a small request). Case-insensitive get/[]/in/items, as http.server needs."""

    def __init__(self, pairs):
        self.pairs = pairs
        self.index = {}
        for name, value in pairs:
            self.index.setdefault(name.lower(), value)

    def get(self, name, default=None):
        return self.index.get(name.lower(), default)

    def __getitem__(self, name):
        return self.index.get(name.lower())

    def __contains__(self, name):
        return name.lower() in self.index

    def __len__(self):
        return len(self.pairs)

    def get_all(self, name, default=None):
        found = [v for k, v in self.pairs if k.lower() == name.lower()]
        return found or default

    def items(self):
        return list(self.pairs)

    def keys(self):
        return [k for k, _ in self.pairs]

    def values(self):
        return [v for _, v in self.pairs]

    def __str__(self):
        return "".join(f"{k}: {v}\r\n" for k, v in self.pairs) + "\r\n"


def parse_headers_fast(fp, _class=None):
    """Drop-in for http.client.parse_headers in this server process."""
    pairs = []
    while True:
        line = fp.readline(65537)
        if len(line) > 65536:
            raise http.client.LineTooLong("header line")
        if line in (b"\r\n", b"\n", b""):
            break
        if len(pairs) >= 100:
            raise http.client.HTTPException("got more than 100 headers")
        text = line.decode("iso-8859-1").rstrip("\r\n")
        if text[:1] in (" ", "\t") and pairs:  # obsolete folded continuation line
            name, value = pairs[-1]
            pairs[-1] = (name, value + " " + text.strip())
            continue
        name, sep, value = text.partition(":")
        if sep:
            pairs.append((name.strip(), value.strip()))
    return FastHeaders(pairs)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "fakeapi"

    # -- connection setup: TLS handshake in the connection's own thread --

    def setup(self):
        self.client_cert = False
        context = self.server.ssl_context
        if context is not None:
            self.request.settimeout(10)
            self.request = context.wrap_socket(self.request, server_side=True)
            self.request.settimeout(None)
            self.client_cert = bool(self.request.getpeercert())
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (OSError, ssl.SSLError, WatchEnded):
            pass

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fakeapi: %s\n" % (fmt % args))

    # -- responses --

    def send_bytes(self, code, body, ctype="application/json", extra_headers=()):
        reason = self.responses.get(code, ("",))[0]
        head = [f"HTTP/1.1 {code} {reason}", f"Content-Type: {ctype}",
                f"Content-Length: {len(body)}", "Cache-Control: no-cache, private"]
        head.extend(extra_headers)
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        self.code = code

    def send_json(self, code, obj, ctype="application/json"):
        self.send_bytes(code, dumps(obj), ctype)

    def send_error_status(self, err):
        self.send_json(err.code, status_body(err.code, err.reason, err.message, err.details))

    # -- request plumbing --

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def json_body(self, raw):
        if not raw:
            raise bad_request("the request body is empty")
        try:
            return json.loads(raw)
        except ValueError as err:
            raise bad_request(f"the body of the request could not be decoded: {err}")

    def authenticated(self):
        if self.client_cert:
            return True
        auth = self.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and auth[7:].strip() in self.server.store.tokens

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        started = time.monotonic()
        self.code = 0
        try:
            url = urlsplit(self.path)
            path = url.path
            query = dict(parse_qsl(url.query, keep_blank_values=True))
            raw = self.read_body()
            if path in ("/fake/healthz", "/healthz", "/livez", "/readyz"):
                self.send_bytes(200, b"ok", "text/plain; charset=utf-8")
                return
            if not self.authenticated():
                raise ApiError(401, "Unauthorized", "Unauthorized")
            watching = query.get("watch") in ("1", "true")
            slow = self.server.store.faults["slow_ms"]
            if slow and not watching and not path.startswith("/fake/"):
                self.slow_down(slow)
            if path.startswith("/fake/"):
                self.admin(method, path, query, raw)
            else:
                self.route(method, path, query, raw, watching)
        except ApiError as err:
            self.send_error_status(err)
        except WatchEnded:
            self.close_connection = True
        except (BrokenPipeError, ConnectionError, ssl.SSLError, socket.timeout):
            self.close_connection = True
        except Exception:  # a bug in the fake: say so loudly, keep serving
            traceback.print_exc()
            try:
                self.send_error_status(ApiError(500, "InternalError", "fakeapi internal error"))
            except OSError:
                self.close_connection = True
        finally:
            if self.server.verbose:
                sys.stderr.write("fakeapi: %s %s -> %s %.1fms ua=%s\n" % (
                    method, self.path, self.code, (time.monotonic() - started) * 1000,
                    self.headers.get("User-Agent", "")))

    # -- routing --

    def route(self, method, path, query, raw, watching):
        store = self.server.store
        segs = [unquote(s) for s in path.split("/") if s]
        if path == "/version":
            return self.send_json(200, self.server.version_info())
        if not segs or segs[0] not in ("api", "apis"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if segs[0] == "api":
            if len(segs) == 1:
                return self.send_json(200, self.server.api_versions())
            group, version, rest = "", segs[1], segs[2:]
        else:
            if len(segs) == 1:
                return self.send_json(200, self.server.group_list())
            if len(segs) == 2:
                return self.send_json(200, self.server.group(segs[1]))
            group, version, rest = segs[1], segs[2], segs[3:]
        if not rest:
            return self.send_json(200, self.server.resource_list(group, version))
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (
                (group, version, rest[2]) == ("", "v1", "bindings") or
                ((group, version, rest[2]) in store.by_path and
                 store.by_path[(group, version, rest[2])].namespaced)):
            namespace, rest = rest[1], rest[2:]
        if group == "" and version == "v1" and rest[0] == "bindings" and namespace \
                and len(rest) == 1 and method == "POST":
            return self.bind(namespace, None, raw)
        res = store.by_path.get((group, version, rest[0]))
        if res is None or len(rest) > 3 or (namespace is not None and not res.namespaced):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in res.subresources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if res.namespaced and name is not None and namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if name is not None and sub is None and method == "GET" and watching:
            # watch of one object: the same as a watch with metadata.name=<name>
            selector = query.get("fieldSelector", "")
            query["fieldSelector"] = f"metadata.name={name}" + (f",{selector}" if selector
                                                                 else "")
            name = None
        verb = {"GET": "watch" if watching else "list", "POST": "create"}.get(method) \
            if name is None else \
            {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
             "DELETE": "delete"}.get(method)
        if verb is None:
            raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on "
                           f"the requested resource")
        counter = f"{verb} {res.path}" + (f"/{sub}" if sub else "")
        with store.lock:
            store.requests[counter] = store.requests.get(counter, 0) + 1
        fmt = response_format(self.headers.get("Accept"))
        if verb in ("list", "watch") and Hostile.serve(self, res, verb):
            return
        if verb == "list":
            return self.list(res, namespace, query, fmt)
        if verb == "watch":
            return self.watch(res, namespace, query, fmt)
        if verb == "get":
            if sub == "binding":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.get(res, namespace, name, fmt)
        if sub == "binding":
            if verb != "create":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.bind(namespace, name, raw)
        if verb == "create":
            if name is not None:
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method "
                               "on the requested resource")
            return self.create(res, namespace, raw)
        if verb == "update":
            return self.update(res, namespace, name, sub, raw)
        if verb == "patch":
            return self.patch(res, namespace, name, sub, raw)
        return self.delete(res, namespace, name, raw)

    # -- verbs --

    def render_object(self, res, obj, fmt):
        if fmt == "table":
            return self.send_json(200, to_table(res, [obj], "Metadata"), TABLE_CTYPE)
        if fmt == "metadata":
            return self.send_json(200, partial_metadata(obj))
        return self.send_json(200, obj)

    def get(self, res, namespace, name, fmt):
        obj = res.objects.get(res.key(namespace, name))
        if obj is None:
            raise not_found(res, name)
        return self.render_object(res, obj, fmt)

    def list_delay(self, res):
        """The list_delay_ms fault: a served resource slow to answer its list. Clearing the
        fault answers the lists it holds at once."""
        store = self.server.store
        deadline = None
        with store.changed:
            while not store.stopping:
                delay = (store.faults["list_delay_ms"] or {}).get(res.path)
                if not delay:
                    return
                deadline = deadline or time.monotonic() + delay / 1000.0
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                store.changed.wait(left)

    def list(self, res, namespace, query, fmt):
        store = self.server.store
        if not query.get("continue"):
            self.list_delay(res)
        flt = Filter(namespace, parse_field_selector(res, query.get("fieldSelector", "")),
                     parse_label_selector(query.get("labelSelector", "")))
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise bad_request("limit must be an integer")
        token = query.get("continue")
        with store.lock:
            if token:
                list_rv, epoch, start = decode_continue(token)
                snap = store.snapshot(res, list_rv) if epoch == store.epoch else None
                if snap is None:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old "
                                   "to display a consistent list result. You can start a new "
                                   "list without the continue parameter.")
            else:
                list_rv, start = store.rv, ""
                snap = store.snapshot(res, list_rv) if limit > 0 else None
                if snap is None:
                    keys = sorted(res.objects)
                    snap = (keys, [res.objects[k] for k in keys])
            epoch = store.epoch
        keys, objects = snap
        index = bisect.bisect_left(keys, start) if start else 0
        if flt.prefix and not start:
            index = bisect.bisect_left(keys, flt.prefix)
        items, last_key, more = [], None, False
        unfiltered = not flt.fields and not flt.labels
        n = len(keys)
        while index < n:
            key = keys[index]
            if flt.prefix and not key.startswith(flt.prefix):
                if key > flt.prefix:
                    break
                index += 1
                continue
            if flt.matches(key, objects[index]):
                if limit > 0 and len(items) >= limit:
                    more = True
                    break
                items.append(objects[index])
                last_key = key
            index += 1
        metadata = {"resourceVersion": str(list_rv)}
        if more:
            metadata["continue"] = encode_continue(list_rv, epoch, last_key)
            if unfiltered:
                remaining = n - index
                if flt.prefix:
                    remaining = bisect.bisect_left(keys, flt.prefix[:-1] + "0") - index
                metadata["remainingItemCount"] = remaining
        if fmt == "table":
            return self.send_json(200, to_table(res, items, query.get("includeObject",
                                                                         "Metadata"), metadata),
                                  TABLE_CTYPE)
        if fmt == "metadata":
            return self.send_json(200, {"kind": "PartialObjectMetadataList",
                                        "apiVersion": "meta.k8s.io/v1", "metadata": metadata,
                                        "items": [partial_metadata(o) for o in items]})
        if res.builtin:
            items = [{k: v for k, v in o.items() if k != "kind" and k != "apiVersion"}
                     for o in items]
        return self.send_json(200, {"kind": res.list_kind, "apiVersion": res.api_version,
                                    "metadata": metadata, "items": items})

    def create(self, res, namespace, raw):
        store = self.server.store
        code, holder, name = 0, None, None
        try:
            body = self.json_body(raw)
            if isinstance(body, dict):
                holder = (body.get("spec") or {}).get("holderIdentity")
                name = (body.get("metadata") or {}).get("name")
            validate_event(res, namespace, body)
            with store.changed:
                store.require_namespace(res, namespace)
                obj = store.create(res, namespace, body)
                store.changed.notify_all()
            code = 201
            return self.send_json(201, obj)
        except ApiError as err:
            code = err.code
            raise
        finally:
            if res.plural == "leases":
                self.record_lease(namespace, name, holder, code, "create")

    def update(self, res, namespace, name, sub, raw):
        store = self.server.store
        code, holder, body = 0, None, None
        try:
            body = self.json_body(raw)
            if not isinstance(body, dict):
                raise bad_request("the body of the request was not an object")
            holder = (body.get("spec") or {}).get("holderIdentity")
            meta = body.get("metadata") or {}
            if meta.get("name") and meta["name"] != name:
                raise bad_request("the name of the object (%s) does not match the name on the "
                                  "URL (%s)" % (meta["name"], name))
            key = res.key(namespace, name)
            with store.changed:
                old = res.objects.get(key)
                if old is None:
                    raise not_found(res, name)
                obj = store.replace(res, key, old,
                                    written(res, name, sub, old, body, meta.get("resourceVersion")))
                if sub == "status":
                    self.record_status_patch(res, namespace, name, "update", body, 200)
                store.changed.notify_all()
            code = 200
            return self.send_json(200, obj)
        except ApiError as err:
            code = err.code
            if sub == "status":
                with store.lock:
                    self.record_status_patch(res, namespace, name, "update", body, code)
            raise
        finally:
            if res.plural == "leases":
                self.record_lease(namespace, name, holder, code, "update")

    def patch(self, res, namespace, name, sub, raw):
        store = self.server.store
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        body = None
        try:
            body = self.json_body(raw)
            if ctype == "application/strategic-merge-patch+json":
                if not isinstance(body, dict):
                    raise bad_request("strategic merge patch must be a JSON object")
                apply = lambda old: strategic_merge(old, body)  # noqa: E731
            elif ctype == "application/merge-patch+json":
                apply = lambda old: merge_patch(old, body)  # noqa: E731
            elif ctype == "application/json-patch+json":
                apply = lambda old: json_patch(old, body)  # noqa: E731
            else:
                raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in "
                               f"an unknown format - accepted media types include: "
                               f"application/json-patch+json, application/merge-patch+json, "
                               f"application/strategic-merge-patch+json")
            key = res.key(namespace, name)
            with store.changed:
                old = res.objects.get(key)
                if old is None:
                    raise not_found(res, name)
                self.volume_patch_fault(store, res, name, sub)
                patched = apply(old)
                if not isinstance(patched, dict):
                    raise bad_request("the patch did not produce an object")
                want = (patched.get("metadata") or {}).get("resourceVersion")
                obj = store.replace(res, key, old, written(res, name, sub, old, patched, want))
                if sub == "status":
                    self.record_status_patch(res, namespace, name, "patch", body, 200)
                store.changed.notify_all()
            return self.send_json(200, obj)
        except ApiError as err:
            if sub == "status":
                with store.lock:
                    self.record_status_patch(res, namespace, name, "patch", body, err.code)
            raise

    def volume_patch_fault(self, store, res, name, sub):
        """Fault volume_patch_conflict_every: every Nth patch of a claim or volume is a 409, as
        when another writer changed it first (caller holds the lock)."""
        every = store.faults["volume_patch_conflict_every"]
        if not every or sub or res.path not in ("persistentvolumeclaims", "persistentvolumes"):
            return
        store.volume_patches = getattr(store, "volume_patches", 0) + 1
        if store.volume_patches % every == 0:
            raise modified_conflict(res, name)

    def delete(self, res, namespace, name, raw):
        store = self.server.store
        options = {}
        if raw.strip():
            options = self.json_body(raw)
            if not isinstance(options, dict):
                options = {}
        key = res.key(namespace, name)
        pre = options.get("preconditions") or {}
        with store.changed:
            old = res.objects.get(key)
            record = {"namespace": namespace, "name": name, "precondition_uid": pre.get("uid"),
                      "uid": old["metadata"].get("uid") if old else None}
            if res.plural == "pods":
                store.deletions.append(record)
                fail = store.faults["pod_delete_fail_code"]
                if fail and old is not None:
                    record["code"] = fail
                    raise ApiError(fail, "Forbidden" if fail == 403 else "InternalError",
                                   f"pods \"{name}\" cannot be deleted (injected fault)")
            record["code"] = 404
            if old is None:
                raise not_found(res, name)
            meta = old["metadata"]
            if pre.get("uid") and pre["uid"] != meta.get("uid"):
                record["code"] = 409
                raise conflict(res.qualified, name, "Precondition failed: UID in precondition: "
                               f"{pre['uid']}, UID in object meta: {meta.get('uid')}", res)
            record["code"] = 200
            if pre.get("resourceVersion") and pre["resourceVersion"] != meta["resourceVersion"]:
                raise conflict(res.qualified, name, "Precondition failed: ResourceVersion in "
                               f"precondition: {pre['resourceVersion']}, ResourceVersion in "
                               f"object meta: {meta['resourceVersion']}", res)
            gone = store.delete(res, key)
            store.changed.notify_all()
        return self.send_json(200, gone)

    # -- binding --

    def bind(self, namespace, url_name, raw):
        store = self.server.store
        pods = store.by_path[("", "v1", "pods")]
        ua = self.headers.get("User-Agent", "")
        if url_name is None:
            with store.lock:
                store.requests["create bindings"] = store.requests.get("create bindings", 0) + 1
        body = self.json_body(raw)
        if not isinstance(body, dict):
            raise bad_request("the body of the request was not an object")
        meta = body.get("metadata") or {}
        target = body.get("target") or {}
        name = url_name if url_name is not None else meta.get("name", "")
        node = target.get("name", "")
        attempt = {"ns": namespace, "name": name, "uid": meta.get("uid"), "node": node,
                   "code": 0, "time": 0.0, "user_agent": ua}
        with store.changed:
            store.binding_attempt_count += 1
            count = store.binding_attempt_count
            try:
                obj = self.bind_locked(store, pods, namespace, url_name, meta, target, count)
                attempt["code"] = 201
                attempt["time"] = time.monotonic()
                store.binding_attempts.append(attempt)
                accepted = dict(attempt)
                accepted["rv"] = obj["metadata"]["resourceVersion"]
                store.bindings.append(accepted)
                store.changed.notify_all()
            except ApiError as err:
                attempt["code"] = err.code
                attempt["time"] = time.monotonic()
                store.binding_attempts.append(attempt)
                raise
        return self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201})

    def bind_locked(self, store, pods, namespace, url_name, meta, target, count):
        faults = store.faults
        name = meta.get("name") or ""
        every = faults["bind_conflict_every"]
        if every and count % every == 0:
            raise conflict("pods/binding", name or url_name or "", "the object has been "
                           "modified; please apply your changes to the latest version and try "
                           "again")
        every = faults["bind_unavailable_every"]
        if every and count % every == 0:
            raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle "
                           "the request (injected fault)", {"retryAfterSeconds": 1})
        if url_name is not None and name != url_name:
            raise bad_request("name in URL does not match name in Binding object")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        if not name:
            raise ApiError(422, "Invalid", "Binding.v1 is invalid: metadata.name: Required value")
        if target.get("kind", "Node") not in ("", "Node"):
            raise ApiError(422, "Invalid", "Binding \"%s\" is invalid: target.kind: Invalid "
                           "value: %r: must be empty or 'Node'" % (name, target.get("kind")))
        node = target.get("name") or ""
        if not node:
            raise ApiError(422, "Invalid", f'Binding "{name}" is invalid: target.name: '
                           "Required value")
        key = pods.key(namespace, name)
        pod = pods.objects.get(key)
        if pod is None:
            raise not_found(pods, name)
        pmeta, spec = pod["metadata"], pod.get("spec") or {}
        if meta.get("uid") and meta["uid"] != pmeta.get("uid"):
            # kube-apiserver passes on its storage layer's error, key and all
            raise conflict("pods", name, "StorageError: invalid object, Code: 4, Key: "
                           f"/registry/pods/{namespace}/{name}, ResourceVersion: 0, "
                           "AdditionalErrorMsg: Precondition failed: UID in precondition: "
                           f"{meta['uid']}, UID in object meta: {pmeta.get('uid')}")
        if meta.get("resourceVersion") and meta["resourceVersion"] != pmeta["resourceVersion"]:
            raise conflict("pods", name, "Precondition failed: ResourceVersion in precondition: "
                           f"{meta['resourceVersion']}, ResourceVersion in object meta: "
                           f"{pmeta['resourceVersion']}")
        if pmeta.get("deletionTimestamp"):
            raise conflict("pods/binding", name, f"pod {name} is being deleted, cannot be "
                           "assigned to a host")
        if spec.get("nodeName"):
            raise conflict("pods/binding", name, f"pod {name} is already assigned to node "
                           f"\"{spec['nodeName']}\"")
        if spec.get("schedulingGates"):
            raise conflict("pods/binding", name, f"pod {name} has non-empty "
                           ".spec.schedulingGates")
        new = dict(pod)
        new_meta = new["metadata"] = dict(pmeta)
        if meta.get("annotations"):
            annotations = dict(pmeta.get("annotations") or {})
            annotations.update(meta["annotations"])
            new_meta["annotations"] = annotations
        new_spec = new["spec"] = dict(spec)
        new_spec["nodeName"] = node
        status = new["status"] = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or []]
        scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": now_rfc3339()}
        for i, cond in enumerate(conditions):
            if cond.get("type") == "PodScheduled":
                if cond.get("status") == "True":
                    scheduled["lastTransitionTime"] = cond.get("lastTransitionTime")
                conditions[i] = scheduled
                break
        else:
            conditions.append(scheduled)
        status["conditions"] = conditions
        new_meta["generation"] = int(pmeta.get("generation") or 0) + 1
        store._stamp(new_meta)
        pods.objects[key] = new
        store._record(pods, "MODIFIED", new, pod)
        return new

    # -- stats helpers (caller holds the lock or takes it here) --

    def record_lease(self, namespace, name, holder, code, verb):
        store = self.server.store
        with store.lock:
            store.lease_writes.append({"ns": namespace, "name": name, "holder": holder,
                                       "code": code, "verb": verb, "time": time.monotonic()})

    def record_status_patch(self, res, namespace, name, verb, body, code):
        """Caller holds the store lock."""
        self.server.store.status_patches.append({
            "ns": namespace, "name": name, "resource": res.path, "verb": verb,
            "content_type": self.headers.get("Content-Type", ""), "body": body, "code": code,
            "time": time.monotonic()})

    # -- watch --

    def write_chunks(self, payloads, split):
        """Frame payloads as HTTP chunks; with split, cut events across chunks at random
        offsets and sometimes put two events in one chunk. The first event of a write is
        always cut and the next two always joined, so a stream of three events or more shows
        both whatever the random draws."""
        if not split:
            self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in payloads))
            return
        pieces, i = [], 0
        while i < len(payloads):
            data = payloads[i]
            i += 1
            if i < len(payloads) and i > 1 and (i == 2 or random.random() < 0.3):
                pieces.append(data + payloads[i])
                i += 1
                continue
            count = random.choice((2, 3)) if len(data) >= 3 else 1
            cuts = sorted(random.sample(range(1, len(data)), count - 1)) if count > 1 else []
            start = 0
            for cut in cuts + [len(data)]:
                pieces.append(data[start:cut])
                start = cut
        for piece in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")

    def abort(self):
        """Close the connection without the terminating chunk (nor a TLS close_notify)."""
        self.close_connection = True
        try:
            socket.socket.shutdown(self.connection, socket.SHUT_RDWR)
        except OSError:
            pass
        raise WatchEnded()

    def client_gone(self):
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return False
            if isinstance(sock, ssl.SSLSocket):
                sock.settimeout(0.0)
                try:
                    return sock.recv(1) == b""
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    return False
                finally:
                    sock.settimeout(None)
            return sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def event_bytes(self, res, etype, obj, fmt):
        if fmt == "table" and etype != "BOOKMARK" and obj.get("kind") != "Status":
            obj = to_table(res, [obj], "Metadata")
        return dumps({"type": etype, "object": obj}) + b"\n"

    def watch(self, res, namespace, query, fmt):
        store = self.server.store
        flt = Filter(namespace, parse_field_selector(res, query.get("fieldSelector", "")),
                     parse_label_selector(query.get("labelSelector", "")))
        rv_text = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        initial_end = query.get("sendInitialEvents") == "true"
        try:
            since = int(rv_text) if rv_text not in ("", "0") else None
            timeout = float(query.get("timeoutSeconds") or 0)
            if timeout <= 0:  # like the real server: a random 30-60 minutes
                timeout = random.uniform(1800, 3600)
        except ValueError:
            raise bad_request(f"invalid watch parameters: resourceVersion={rv_text!r}")
        watch = Watch(self.connection)
        deadline = watch.started + timeout
        initial, expired = [], None
        with store.lock:
            if since is None or initial_end:
                keys = sorted(res.objects)
                initial = [res.objects[k] for k in keys if flt.matches(k, res.objects[k])]
                last = store.rv
            elif since < res.compacted_rv:
                expired = since, res.compacted_rv
            else:
                last = since
            store.watches.add(watch)
        ctype = TABLE_CTYPE if fmt == "table" else "application/json"
        try:
            self.wfile.write(("HTTP/1.1 200 OK\r\nContent-Type: %s\r\nCache-Control: no-cache, "
                              "private\r\nTransfer-Encoding: chunked\r\n\r\n" % ctype).encode())
            self.code = 200
            if expired:
                self.send_too_old(*expired)
                return
            if initial:
                self.write_chunks([self.event_bytes(res, "ADDED", o, fmt) for o in initial],
                                  store.faults["split_chunks"])
            if initial_end:
                self.write_chunks([self.bookmark(res, last, initial_end=True)], False)
            self.watch_loop(res, flt, fmt, watch, last, deadline, bookmarks)
        except (OSError, ssl.SSLError):
            self.close_connection = True
            raise WatchEnded()
        finally:
            with store.lock:
                store.watches.discard(watch)

    def send_too_old(self, since, oldest):
        error = status_body(410, "Expired", f"too old resource version: {since} ({oldest})")
        self.write_chunks([dumps({"type": "ERROR", "object": error}) + b"\n"], False)
        self.end_stream()

    def bookmark(self, res, rv, initial_end=False):
        meta = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return dumps({"type": "BOOKMARK", "object": {"kind": res.kind,
                                                     "apiVersion": res.api_version,
                                                     "metadata": meta}}) + b"\n"

    def watch_loop(self, res, flt, fmt, watch, last, deadline, bookmarks):
        store = self.server.store
        last_bookmark = last_poll = time.monotonic()
        while True:
            with store.changed:
                events = store.events_after(res, last)
                if events == [] and not watch.cut and not store.stopping:
                    now = time.monotonic()
                    wake = min(deadline, last_poll + 0.5)
                    cut_after = store.faults["watch_cut_after_s"]
                    if cut_after is not None:
                        wake = min(wake, watch.started + cut_after)
                    if bookmarks:
                        wake = min(wake, last_bookmark + self.bookmark_interval())
                    if wake > now:
                        store.changed.wait(wake - now)
                    events = store.events_after(res, last)
                current_rv = store.rv
                cut_after = store.faults["watch_cut_after_s"]
                split = store.faults["split_chunks"]
            now = time.monotonic()
            if store.stopping:
                self.end_stream()
                self.close_connection = True
                return
            if watch.cut or (cut_after is not None and now >= watch.started + cut_after):
                self.abort()
            if events is None:
                self.send_too_old(last, res.compacted_rv)
                return
            payloads = []
            for event_rv, etype, obj, previous in events:
                key = res.key_of(obj)
                etype = self.filtered_type(flt, key, etype, obj, previous)
                if etype:
                    payloads.append(self.event_bytes(res, etype, obj, fmt))
                last = event_rv
            if payloads:
                self.write_chunks(payloads, split)
            if now >= deadline:
                self.end_stream()
                return
            if bookmarks and now >= last_bookmark + self.bookmark_interval():
                # every event of res up to current_rv was in `events`, so this rv is safe
                last = max(last, current_rv)
                self.write_chunks([self.bookmark(res, last)], split)
                last_bookmark = now
            if now >= last_poll + 0.5:
                last_poll = now
                if not payloads and self.client_gone():
                    self.close_connection = True
                    raise WatchEnded()

    def bookmark_interval(self):
        value = self.server.store.faults["bookmark_interval_s"]
        return max(0.01, float(value if value is not None else self.server.bookmark_interval))

    @staticmethod
    def filtered_type(flt, key, etype, obj, previous):
        """The event a selector-filtered watch sees: objects entering the selection are
        ADDED, objects leaving it DELETED, as the real watch cache does."""
        if etype == "ADDED":
            return "ADDED" if flt.matches(key, obj) else None
        if etype == "DELETED":
            return "DELETED" if flt.matches(key, previous) else None
        was, now = flt.matches(key, previous), flt.matches(key, obj)
        if was and now:
            return "MODIFIED"
        if now:
            return "ADDED"
        if was:
            return "DELETED"
        return None

    def slow_down(self, ms):
        """The slow_ms fault: hold the request, listed in held_requests meanwhile so that a test
        sees which client's request is in flight before it acts."""
        store = self.server.store
        held = {"method": self.command, "path": self.path,
                "user_agent": self.headers.get("User-Agent", "")}
        with store.lock:
            store.held_requests.append(held)
        try:
            time.sleep(ms / 1000.0)
        finally:
            with store.lock:
                store.held_requests.remove(held)

    # -- admin --

    def admin(self, method, path, query, raw):
        store = self.server.store
        route = (method, path.rstrip("/"))
        if route == ("GET", "/fake/stats") and query.get("summary") in ("1", "true"):
            with store.lock:
                stats = {
                    "binding_attempts": len(store.binding_attempts),
                    "bindings": len(store.bindings),
                    "status_patches": len(store.status_patches),
                    "events": len(store.events),
                    "lease_writes": len(store.lease_writes),
                    "requests": dict(store.requests),
                    "open_watches": len(store.watches),
                    "held_requests": list(store.held_requests),
                    "resource_version": str(store.rv),
                    "objects": {r.path: len(r.objects) for r in store.resources},
                    "faults": dict(store.faults),
                }
            return self.send_json(200, stats)
        if route == ("GET", "/fake/stats"):
            with store.lock:
                stats = {
                    "binding_attempts": list(store.binding_attempts),
                    "bindings": list(store.bindings),
                    "status_patches": list(store.status_patches),
                    "deletions": list(store.deletions),
                    "events": list(store.events),
                    "lease_writes": list(store.lease_writes),
                    "requests": dict(store.requests),
                    "open_watches": len(store.watches),
                    "held_requests": list(store.held_requests),
                    "resource_version": str(store.rv),
                    "objects": {r.path: len(r.objects) for r in store.resources},
                    "faults": dict(store.faults),
                }
            return self.send_json(200, stats)
        if route == ("POST", "/fake/stats/reset"):
            with store.lock:
                store.reset_stats()
            return self.send_json(200, {"reset": True})
        if route == ("POST", "/fake/bulk"):
            return self.bulk(self.json_body(raw))
        if route == ("POST", "/fake/faults"):
            body = self.json_body(raw)
            if not isinstance(body, dict):
                raise bad_request("faults must be a JSON object")
            unknown = sorted(set(body) - set(DEFAULT_FAULTS))
            if unknown:
                raise bad_request(f"unknown faults: {', '.join(unknown)}")
            with store.changed:
                store.faults.update(body)
                store.changed.notify_all()
                faults = dict(store.faults)
            return self.send_json(200, faults)
        if route == ("POST", "/fake/served"):
            body = self.json_body(raw)
            unserved = body.get("unserved") if isinstance(body, dict) else None
            if not isinstance(unserved, list):
                raise bad_request('expected {"unserved": ["<group/>plural", ...]}')
            with store.changed:
                set_unserved(store, unserved)
                store.changed.notify_all()
            return self.send_json(200, {"unserved": sorted(unserved)})
        if route == ("POST", "/fake/faults/reset"):
            with store.changed:
                store.faults = dict(DEFAULT_FAULTS)
                store.changed.notify_all()
            return self.send_json(200, dict(DEFAULT_FAULTS))
        if route == ("POST", "/fake/cut-watches"):
            with store.changed:
                watches = list(store.watches)
                for watch in watches:
                    watch.cut = True
                store.changed.notify_all()
            for watch in watches:  # also unblocks a watch stuck writing to a slow client
                try:
                    socket.socket.shutdown(watch.connection, socket.SHUT_RDWR)
                except OSError:
                    pass
            return self.send_json(200, {"cut": len(watches)})
        if route == ("POST", "/fake/compact"):
            with store.changed:
                store.compact()
                rv = store.rv
            return self.send_json(200, {"compacted_rv": str(rv)})
        if route == ("POST", "/fake/tokens"):
            body = self.json_body(raw)
            tokens = body.get("tokens") if isinstance(body, dict) else None
            if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
                raise bad_request('expected {"tokens": ["..."]}')
            store.tokens = frozenset(tokens)
            return self.send_json(200, {"tokens": len(tokens)})
        raise ApiError(404, "NotFound", f"no admin endpoint {method} {path}")

    def bulk(self, body):
        store = self.server.store
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise bad_request('expected {"items": [...]}')
        created, errors = {}, []
        with store.changed:
            for i, item in enumerate(items):
                if not isinstance(item, dict):
                    errors.append({"index": i, "message": "not an object"})
                    continue
                res = store.by_kind.get((item.get("apiVersion"), item.get("kind")))
                if res is None:
                    errors.append({"index": i, "message": f"unknown kind {item.get('kind')!r} "
                                   f"of apiVersion {item.get('apiVersion')!r}"})
                    continue
                namespace = (item.get("metadata") or {}).get("namespace") or "default"
                try:
                    if res.namespaced:
                        store.ensure_namespace(namespace)   # loaded as a cluster that has it
                    store.create(res, namespace if res.namespaced else None, copy_json(item))
                    created[res.path] = created.get(res.path, 0) + 1
                except ApiError as err:
                    errors.append({"index": i, "code": err.code, "message": err.message})
            store.changed.notify_all()
            rv = store.rv
        return self.send_json(200, {"created": sum(created.values()), "by_resource": created,
                                    "failed": len(errors), "errors": errors[:50],
                                    "resource_version": str(rv)})


# ---------------------------------------------------------------------------------------------
# Server and discovery

class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, args, store):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.store = store
        self.verbose = args.verbose
        self.bookmark_interval = args.bookmark_interval
        self.ssl_context = None
        if not args.plain_http:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(os.path.join(args.cert_dir, "server.crt"),
                                    os.path.join(args.cert_dir, "server.key"))
            context.load_verify_locations(os.path.join(args.cert_dir, "ca.crt"))
            context.verify_mode = ssl.CERT_OPTIONAL
            context.set_alpn_protocols(["http/1.1"])  # no HTTP/2 here, unlike a real server
            self.ssl_context = context

    def handle_error(self, request, client_address):
        """Connection-level failures (a failed TLS handshake, a client gone mid-request)."""
        if self.verbose:
            err = sys.exc_info()[1]
            sys.stderr.write(f"fakeapi: connection from {client_address[0]}:"
                             f"{client_address[1]} failed: {err!r}\n")

    def version_info(self):
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fakeapi",
                "gitCommit": "0000000000000000000000000000000000000000",
                "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.23.0", "compiler": "gc", "platform": "linux/amd64"}

    def api_versions(self):
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:%d" % self.server_port}]}

    def groups(self):
        seen = OrderedDict()
        for res in self.store.resources:
            if res.group:
                seen.setdefault(res.group, [])
                if res.version not in seen[res.group]:
                    seen[res.group].append(res.version)
        return seen

    def group_entry(self, group, versions):
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    def group_list(self):
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self.group_entry(g, v) for g, v in self.groups().items()]}

    def group(self, group):
        versions = self.groups().get(group)
        if not versions:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        body = self.group_entry(group, versions)
        body.update({"kind": "APIGroup", "apiVersion": "v1"})
        return body

    def resource_list(self, group, version):
        resources = []
        for res in self.store.resources:
            if res.group != group or res.version != version:
                continue
            entry = {"name": res.plural, "singularName": res.singular,
                     "namespaced": res.namespaced, "kind": res.kind, "verbs": OBJECT_VERBS}
            if res.short:
                entry["shortNames"] = res.short
            if res.categories:
                entry["categories"] = res.categories
            resources.append(entry)
            for sub in res.subresources:
                if sub == "binding":
                    resources.append({"name": f"{res.plural}/binding", "singularName": "",
                                      "namespaced": True, "kind": "Binding",
                                      "verbs": ["create"]})
                else:
                    resources.append({"name": f"{res.plural}/{sub}", "singularName": "",
                                      "namespaced": res.namespaced, "kind": res.kind,
                                      "verbs": ["get", "patch", "update"]})
        if group == "" and version == "v1":
            resources.insert(0, {"name": "bindings", "singularName": "binding",
                                 "namespaced": True, "kind": "Binding", "verbs": ["create"]})
        if not resources:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": resources}


def set_unserved(store, paths):
    """Stop serving the resources named by path ("<group/>plural"), serve the others: an
    unserved one vanishes from discovery and every request under it answers 404 NotFound, as
    on a real API server without (or after deleting) the CRD. Objects are kept for when it is
    served again. Caller holds the lock, or no thread runs yet."""
    if not hasattr(store, "all_resources"):
        store.all_resources = list(store.resources)
    known = {r.path for r in store.all_resources}
    unknown = sorted(set(paths) - known)
    if unknown:
        raise bad_request(f"unknown resources: {', '.join(unknown)}")
    store.resources = [r for r in store.all_resources if r.path not in set(paths)]
    store.by_path = {(r.group, r.version, r.plural): r for r in store.resources}
    store.by_kind = {(r.api_version, r.kind): r for r in store.resources}


def unserve_custom_resources(store):
    """A cluster without kcycle's CRDs installed."""
    set_unserved(store, [r.path for r in store.resources if not r.builtin])


def write_port_file(path, port):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Fake Kubernetes API server for kcycle tests.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--cert-dir", default=DEFAULT_CERT_DIR,
                        help="folder with ca.crt, server.crt, server.key")
    parser.add_argument("--token", action="append", dest="tokens",
                        help="valid bearer token (repeatable; default test-token)")
    parser.add_argument("--plain-http", action="store_true", help="serve HTTP instead of HTTPS")
    parser.add_argument("--bookmark-interval", type=float, default=1.0,
                        help="seconds between BOOKMARK events on watches that allow them")
    parser.add_argument("--history", type=int, default=100000,
                        help="watch events kept per resource for watch resume")
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests to stderr")
    parser.add_argument("--without-crds", action="store_true",
                        help="serve no custom resources (PodGroup, CapacityQueue, "
                             "NodeResourceTopology): discovery omits them, requests get 404")
    args = parser.parse_args(argv)

    http.client.parse_headers = parse_headers_fast  # used by http.server's parse_request
    store = Store(args.history)
    store.tokens = frozenset(args.tokens or ["test-token"])
    if args.without_crds:
        unserve_custom_resources(store)
    namespaces = store.by_path[("", "v1", "namespaces")]
    for name in ("default", "kube-system"):
        store.create(namespaces, None, {"metadata": {"name": name}})
    server = Server(args, store)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                              daemon=True)
    thread.start()
    if args.port_file:
        write_port_file(args.port_file, server.server_port)
    if args.verbose:
        sys.stderr.write("fakeapi: listening on %s://127.0.0.1:%d\n" % (
            "http" if args.plain_http else "https", server.server_port))
    while not stop.wait(0.5):
        pass
    with store.changed:
        store.stopping = True
        store.changed.notify_all()
    server.shutdown()
    server.server_close()
    give_up = time.monotonic() + 1.0
    while store.watches and time.monotonic() < give_up:
        time.sleep(0.02)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
