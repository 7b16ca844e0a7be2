#!/usr/bin/env python3
"""upgrade_timeline.py - records every change of Nodes, Pods and GpuPolicies
on the lab's API server as JSON lines, for the driver-upgrade invariants
(test/e2e/upgrade_check.py; test/e2e/66_driver_upgrade*.sh; issue 22).

Standard library only, like test/bench/benchwatch.py: HTTPS to the loopback
API server with the lab's admin client certificate, one watch per resource,
one thread each. Each watch first LISTs (every object becomes a record with
ev "LIST"), then watches from the list's resourceVersion; after all three
lists one {"kind": "synced"} line is written (a test waits for it before it
changes anything). A watch that expires (410 Gone) lists again and writes
what changed meanwhile, objects gone as DELETED.

Only what the invariants read is recorded, and a record is written only when
that projection of an object changed:
  Node       name, the upgrade state label, every nvidia.com/gpu.deploy.*
             label, nvidia.com/gpu.present, spec.unschedulable, the
             annotations whose key names an upgrade or gpuop
  Pod        namespace, name, uid, node, phase, Ready, deletionTimestamp
             set, app.kubernetes.io/component, owner, first container
             image, controller-revision-hash, pod-template-generation, GPUs
             requested (nvidia.com/gpu and nvidia.com/mig-*, requests or
             limits, any container), a waiting reason, restarts
  GpuPolicy  name, generation, spec.driver, status.upgrade
Every record has "t" (wall-clock seconds when the line arrived, before it
was parsed) and "rv" (the object's resourceVersion as a number: one etcd
serves the lab, so it orders records across the three watches; the checker
sorts by it).

usage: upgrade_timeline.py --lab-dir DIR --out FILE [--kinds Node,Pod,GpuPolicy]
       (or --server HOST:PORT --ca --cert --key)
Stops on SIGTERM or SIGINT; every line is flushed as it is written.
"""
import argparse
import http.client
import json
import os
import signal
import ssl
import sys
import threading
import time

MAX_LINE = 16 << 20  # a watch event larger than this is a bug here
MAX_LIST = 256 << 20
WATCH_SECONDS = 300  # server-side timeout of one watch request
RETRY_SECONDS = 1.0  # before a failed LIST/watch (CRD not yet there) is tried again

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
NODE_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu-driver-upgrade.skip")
GPU_RESOURCE = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"

RESOURCES = (
    ("Node", "/api/v1/nodes"),
    ("Pod", "/api/v1/pods"),
    ("GpuPolicy", "/apis/gpuop.dev/v1alpha1/gpupolicies"),
)


def interesting_annotation(key):
    k = key.lower()
    return "upgrade" in k or "gpuop" in k


def quantity(v):
    """An integer extended-resource quantity ("8"); anything else counts 1."""
    try:
        return int(str(v))
    except ValueError:
        return 1


def gpu_request(spec):
    total = 0
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        seen = {}
        for part in ("limits", "requests"):
            for k, v in (res.get(part) or {}).items():
                if k == GPU_RESOURCE or k.startswith(MIG_PREFIX):
                    seen[k] = max(seen.get(k, 0), quantity(v))
        total += sum(seen.values())
    return total


def project_node(obj):
    md = obj.get("metadata") or {}
    labels = md.get("labels") or {}
    ann = md.get("annotations") or {}
    return {
        "kind": "Node",
        "name": md.get("name"),
        "state": labels.get(STATE_LABEL),
        "deploy": {k[len(DEPLOY_PREFIX):]: v for k, v in labels.items() if k.startswith(DEPLOY_PREFIX)},
        "labels": {k: labels[k] for k in NODE_LABELS if k in labels},
        "unschedulable": bool((obj.get("spec") or {}).get("unschedulable")),
        "ann": {k: v for k, v in ann.items() if interesting_annotation(k)},
        "gpus": quantity(((obj.get("status") or {}).get("capacity") or {}).get(GPU_RESOURCE, 0)),
    }


def project_pod(obj):
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    st = obj.get("status") or {}
    labels = md.get("labels") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])
    waiting, restarts = None, 0
    for cs in st.get("containerStatuses") or []:
        restarts += cs.get("restartCount") or 0
        w = (cs.get("state") or {}).get("waiting")
        if w and waiting is None:
            waiting = w.get("reason")
    owner = None
    for o in md.get("ownerReferences") or []:
        if o.get("controller"):
            owner = "%s/%s" % (o.get("kind"), o.get("name"))
    containers = spec.get("containers") or [{}]
    return {
        "kind": "Pod",
        "ns": md.get("namespace"),
        "name": md.get("name"),
        "uid": md.get("uid"),
        "node": spec.get("nodeName"),
        "phase": st.get("phase"),
        "ready": ready,
        "deleting": md.get("deletionTimestamp") is not None,
        "component": labels.get("app.kubernetes.io/component"),
        "owner": owner,
        "image": containers[0].get("image"),
        "rev": labels.get("controller-revision-hash"),
        "gen": labels.get("pod-template-generation"),
        "gpu": gpu_request(spec),
        "waiting": waiting,
        "restarts": restarts,
    }


def project_policy(obj):
    md = obj.get("metadata") or {}
    return {
        "kind": "GpuPolicy",
        "name": md.get("name"),
        "generation": md.get("generation"),
        "driver": (obj.get("spec") or {}).get("driver") or {},
        "upgrade": (obj.get("status") or {}).get("upgrade"),
    }


PROJECT = {"Node": project_node, "Pod": project_pod, "GpuPolicy": project_policy}


def key_of(kind, obj):
    md = obj.get("metadata") or {}
    return md.get("uid") or "%s/%s" % (md.get("namespace"), md.get("name"))


def rv_of(obj, default=0):
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion"))
    except (TypeError, ValueError):
        return default


class Recorder:
    def __init__(self, api, out, resources=RESOURCES):
        self.api = api
        self.resources = resources
        self.out = out
        self.lock = threading.Lock()
        self.last = {}  # (kind, key) -> projection without t/rv/ev
        self.synced = set()
        self.stop = threading.Event()

    def emit(self, t, ev, kind, key, proj, rv):
        with self.lock:
            k = (kind, key)
            if ev == "DELETED":
                if k not in self.last:
                    return
                del self.last[k]
            else:
                if self.last.get(k) == proj:
                    return
                self.last[k] = proj
            rec = {"t": round(t, 6), "rv": rv, "ev": ev}
            rec.update(proj)
            self.out.write(json.dumps(rec, sort_keys=True) + "\n")
            self.out.flush()

    def mark_synced(self, kind):
        with self.lock:
            if kind in self.synced:
                return
            self.synced.add(kind)
            if len(self.synced) == len(self.resources):
                self.out.write(json.dumps({"t": round(time.time(), 6), "kind": "synced"}) + "\n")
                self.out.flush()

    def relist(self, kind, path):
        """LISTs path; records new/changed objects and the ones gone since.
        Returns the list's resourceVersion."""
        t = time.time()
        lst = self.api.get_json(path)
        list_rv = rv_of(lst)
        seen = set()
        for obj in lst.get("items") or []:
            key = key_of(kind, obj)
            seen.add(key)
            self.emit(t, "LIST", kind, key, PROJECT[kind](obj), rv_of(obj))
        with self.lock:
            gone = [(k, p) for (kd, k), p in self.last.items() if kd == kind and k not in seen]
        for key, proj in gone:
            self.emit(t, "DELETED", kind, key, proj, list_rv)
        return lst["metadata"]["resourceVersion"]

    def run_watch(self, kind, path):
        rv = None
        while not self.stop.is_set():
            try:
                if rv is None:
                    rv = self.relist(kind, path)
                    self.mark_synced(kind)
                c = self.api.conn(timeout=WATCH_SECONDS + 30)
                c.request("GET", "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%d"
                          % (path, rv, WATCH_SECONDS), headers={"Accept": "application/json"})
                r = c.getresponse()
                if r.status == 410:
                    rv = None
                    c.close()
                    continue
                if r.status != 200:
                    raise RuntimeError("watch %s: HTTP %d" % (path, r.status))
                while not self.stop.is_set():
                    line = r.readline(MAX_LINE)
                    t = time.time()
                    if not line:
                        break
                    ev = json.loads(line)
                    typ = ev.get("type")
                    obj = ev.get("object") or {}
                    if typ == "ERROR":
                        # 410 Expired in the stream: list again
                        rv = None
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                    if typ == "BOOKMARK":
                        continue
                    proj = PROJECT[kind](obj)
                    self.emit(t, typ, kind, key_of(kind, obj), proj, rv_of(obj))
                c.close()
            except (OSError, http.client.HTTPException, RuntimeError, ValueError) as e:
                if self.stop.is_set():
                    return
                print("upgrade_timeline: %s: %s (retrying)" % (kind, e), file=sys.stderr)
                self.stop.wait(RETRY_SECONDS)
                # a failed LIST keeps rv None; a failed watch resumes from rv


class Api:
    def __init__(self, server, ca, cert, key):
        host, port = server.rsplit(":", 1)
        if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
            raise SystemExit("upgrade_timeline: the lab's API server is on loopback, not %s" % host)
        self.host, self.port = host, int(port)
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def conn(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def get_json(self, path):
        c = self.conn()
        try:
            c.request("GET", path, headers={"Accept": "application/json"})
            r = c.getresponse()
            payload = r.read(MAX_LIST)
            if r.status != 200:
                raise RuntimeError("GET %s: HTTP %d: %s" % (path, r.status, payload[:200]))
            return json.loads(payload)
        finally:
            c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab-dir", help="the lab's folder (apiserver.addr, pki/)")
    ap.add_argument("--server", help="HOST:PORT of the API server")
    ap.add_argument("--ca")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--out", required=True, help="JSON-lines file (appended)")
    ap.add_argument("--kinds", default="Node,Pod,GpuPolicy",
                    help="what to record (the benchmark leaves out Pods: 6 per node)")
    a = ap.parse_args()
    if a.lab_dir:
        with open(os.path.join(a.lab_dir, "apiserver.addr")) as f:
            a.server = a.server or f.read().strip()
        pki = os.path.join(a.lab_dir, "pki")
        a.ca = a.ca or os.path.join(pki, "ca.crt")
        a.cert = a.cert or os.path.join(pki, "admin.crt")
        a.key = a.key or os.path.join(pki, "admin.key")
    if not (a.server and a.ca and a.cert and a.key):
        ap.error("--lab-dir or --server/--ca/--cert/--key")
    api = Api(a.server, a.ca, a.cert, a.key)
    out = open(a.out, "a", buffering=1)
    kinds = [k for k in a.kinds.split(",") if k]
    resources = tuple((k, p) for k, p in RESOURCES if k in kinds)
    if len(resources) != len(kinds):
        ap.error("--kinds: Node, Pod, GpuPolicy")
    rec = Recorder(api, out, resources)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    for kind, path in resources:
        threading.Thread(target=rec.run_watch, args=(kind, path), daemon=True).start()
    while not done.wait(0.5):
        pass
    rec.stop.set()
    with rec.lock:
        out.flush()
        os.fsync(out.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
