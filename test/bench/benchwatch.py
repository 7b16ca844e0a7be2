#!/usr/bin/env python3
"""benchwatch.py - the timing parts of the gpuop benchmark (test/bench/run).

Standard library only: HTTPS with the lab's admin client certificate, watch
streams read line by line, one thread per watch. Times are taken with
time.monotonic() when a watch line arrives, before it is parsed.

  complete  POSTs a GpuPolicy (JSON) while watching GpuPolicies; prints the
            seconds from the POST to the first status whose
            summary.completeNodes and summary.gpuNodes both equal --target.
  flip      event -> status latency. --count label flips on random nodes of
            --nodes (plain nodes, not GPU nodes), in pairs: set NFD's
            feature.node.kubernetes.io/pci-10de.present=true on a node,
            wait, remove it again, wait. Nothing in the cluster but gpuop
            reacts to that label (no DaemonSet selects on it, and a node
            without deploy labels gets no operand pod), so each flip
            changes the status exactly once: the node becomes a GPU node
            (gpuNodes one up) with NotScheduled findings in status.nodes,
            then both go back. For each flip it
            measures, from just before the PATCH, (a) when a plain watch on
            Nodes sees the new label (the floor the API server sets) and
            (b) when the GpuPolicy watch sees a status that reflects it.
            Prints one JSON object with p50/p90/p99/max of both and the
            ratio of the status to the node-watch percentiles.

Output is JSON on stdout; progress on stderr.
"""
import argparse
import http.client
import json
import random
import ssl
import sys
import threading
import time

NFD = "feature.node.kubernetes.io/pci-10de.present"
GP_PATH = "/apis/gpuop.dev/v1alpha1/gpupolicies"
MAX_LINE = 16 << 20  # a watch event larger than this is a bug here


class Api:
    def __init__(self, server, ca, cert, key):
        host, port = server.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.ctx = ssl.create_default_context(cafile=ca)
        self.ctx.load_cert_chain(cert, key)

    def conn(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ctype="application/json", conn=None):
        c = conn or self.conn()
        data = json.dumps(body).encode() if body is not None else None
        c.request(method, path, body=data, headers={"Content-Type": ctype, "Accept": "application/json"})
        r = c.getresponse()
        payload = r.read(64 << 20)
        if conn is None:
            c.close()
        if r.status >= 300:
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, r.status, payload[:300]))
        return json.loads(payload) if payload else None


class Watch(threading.Thread):
    """Watches path from the current resourceVersion; calls on_event(t,
    type, obj) for each event under a shared condition variable."""

    def __init__(self, api, path, cond, on_event):
        super().__init__(daemon=True)
        self.api, self.path, self.cond, self.on_event = api, path, cond, on_event
        self.error = None
        self.ready = threading.Event()
        lst = api.request("GET", path + ("&" if "?" in path else "?") + "limit=1")
        self.rv = lst["metadata"]["resourceVersion"]

    def run(self):
        try:
            while True:
                c = self.api.conn(timeout=3600)
                sep = "&" if "?" in self.path else "?"
                c.request("GET", "%s%swatch=1&resourceVersion=%s&timeoutSeconds=1800" % (self.path, sep, self.rv))
                r = c.getresponse()
                if r.status != 200:
                    raise RuntimeError("watch %s: HTTP %d" % (self.path, r.status))
                self.ready.set()
                while True:
                    line = r.readline(MAX_LINE)
                    t = time.monotonic()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        raise RuntimeError("watch %s: %s" % (self.path, ev.get("object")))
                    obj = ev.get("object", {})
                    self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
                    with self.cond:
                        self.on_event(t, ev["type"], obj)
                        self.cond.notify_all()
                c.close()
        except Exception as e:  # reported by the main thread
            with self.cond:
                self.error = e
                self.cond.notify_all()
            self.ready.set()


def summary(obj):
    s = (obj.get("status") or {}).get("summary") or {}
    return s.get("gpuNodes"), s.get("completeNodes")


def status_nodes(obj):
    return {n.get("name") for n in (obj.get("status") or {}).get("nodes") or []}


def cmd_complete(api, a):
    with open(a.policy) as f:
        policy = json.load(f)
    name = policy["metadata"]["name"]
    cond = threading.Condition()
    state = {"done": None, "first_status": None, "last": None}

    def on_event(t, typ, obj):
        if obj.get("metadata", {}).get("name") != name or typ not in ("ADDED", "MODIFIED"):
            return
        if obj.get("status") and state["first_status"] is None:
            state["first_status"] = t
        g, c = summary(obj)
        ops = (obj.get("status") or {}).get("operands") or []
        running = sum(o.get("runningNodes") or 0 for o in ops)
        state["last"] = (g, c, running)
        if state["done"] is None and g == a.target and c == a.target:
            state["done"] = t

    w = Watch(api, GP_PATH + "?fieldSelector=metadata.name%3D" + name, cond, on_event)
    w.start()
    w.ready.wait(30)
    t0 = time.monotonic()
    api.request("POST", GP_PATH, policy)
    deadline = t0 + a.timeout
    last = 0
    with cond:
        while state["done"] is None and w.error is None and time.monotonic() < deadline:
            cond.wait(1)
            if time.monotonic() - last > 30:
                last = time.monotonic()
                g, c, r = state["last"] or (None, None, None)
                print("benchwatch: %.0fs: %s of %s GPU nodes complete, %s operand pods running; waiting for %d"
                      % (last - t0, c, g, r, a.target), file=sys.stderr)
    if w.error:
        raise w.error
    out = {
        "complete_seconds": None if state["done"] is None else round(state["done"] - t0, 3),
        "first_status_seconds": None if state["first_status"] is None else round(state["first_status"] - t0, 3),
    }
    print(json.dumps(out))
    return 0 if state["done"] is not None else 1


def pct(xs, p):
    s = sorted(xs)
    if not s:
        return None
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def cmd_flip(api, a):
    nodes = [n for n in a.nodes.split(",") if n]
    if not nodes:
        raise SystemExit("flip: no nodes")
    cond = threading.Condition()
    # node name -> (time seen, opted out?)
    seen_node = {}
    pol = {"t": None, "gpu": None, "complete": None, "names": set()}
    pol_events = []  # (t, complete, names)

    def on_node(t, typ, obj):
        md = obj.get("metadata", {})
        out = (md.get("labels") or {}).get(NFD) == "true"
        seen_node[md.get("name")] = (t, out)

    def on_pol(t, typ, obj):
        if obj.get("metadata", {}).get("name") != a.policy or typ not in ("ADDED", "MODIFIED"):
            return
        g, c = summary(obj)
        pol_events.append((t, g, status_nodes(obj)))

    wn = Watch(api, "/api/v1/nodes", cond, on_node)
    wp = Watch(api, GP_PATH + "?fieldSelector=metadata.name%3D" + a.policy, cond, on_pol)
    cur = api.request("GET", GP_PATH + "/" + a.policy)
    gpu, complete = summary(cur)
    if gpu is None or gpu != complete:
        raise SystemExit("flip: policy %s is not all complete (gpuNodes %s, completeNodes %s)" % (a.policy, gpu, complete))
    wn.start()
    wp.start()
    wn.ready.wait(30)
    wp.ready.wait(30)
    rnd = random.Random(a.seed)
    conn = api.conn()
    node_lat, status_lat, timeouts = [], [], 0
    for i in range(a.count):
        if i % 2 == 0:
            node = rnd.choice(nodes)
        optout = i % 2 == 0  # the node becomes a GPU node
        want_gpu = gpu + 1 if optout else gpu
        patch = {"metadata": {"labels": {NFD: "true" if optout else None}}}
        with cond:
            seen_node.pop(node, None)
            pol_events.clear()
        t0 = time.monotonic()
        try:
            api.request("PATCH", "/api/v1/nodes/" + node, patch, "application/merge-patch+json", conn=conn)
        except (http.client.HTTPException, OSError):
            conn.close()
            conn = api.conn()
            api.request("PATCH", "/api/v1/nodes/" + node, patch, "application/merge-patch+json", conn=conn)
        tn = ts = None
        deadline = t0 + a.timeout
        with cond:
            while True:
                if wn.error or wp.error:
                    raise wn.error or wp.error
                s = seen_node.get(node)
                if tn is None and s and s[1] == optout:
                    tn = s[0]
                if ts is None:
                    for t, g, names in pol_events:
                        if g == want_gpu and ((node in names) == optout):
                            ts = t
                            break
                if (tn is not None and ts is not None) or time.monotonic() > deadline:
                    break
                cond.wait(0.5)
        if tn is None or ts is None:
            timeouts += 1
            print("benchwatch: flip %d on %s: no %s within %.0fs" % (i, node, "node event" if tn is None else "status", a.timeout), file=sys.stderr)
        else:
            node_lat.append((tn - t0) * 1e3)
            status_lat.append((ts - t0) * 1e3)
        if (i + 1) % 50 == 0:
            print("benchwatch: %d/%d flips" % (i + 1, a.count), file=sys.stderr)
        time.sleep(a.gap / 1e3)
    res = {"flips": a.count, "measured": len(status_lat), "timeouts": timeouts}
    for name, xs in (("node_watch_ms", node_lat), ("status_ms", status_lat)):
        for p in (50, 90, 99):
            v = pct(xs, p)
            res["%s_p%d" % (name, p)] = None if v is None else round(v, 2)
        res[name + "_max"] = round(max(xs), 2) if xs else None
    for p in (50, 99):
        n, s = res["node_watch_ms_p%d" % p], res["status_ms_p%d" % p]
        res["ratio_p%d" % p] = round(s / n, 2) if n and s else None
    if a.raw:
        with open(a.raw, "w") as f:
            f.write("node_watch_ms,status_ms\n")
            for n, s in zip(node_lat, status_lat):
                f.write("%.3f,%.3f\n" % (n, s))
    print(json.dumps(res))
    return 0 if timeouts == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True, help="HOST:PORT of the API server")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("complete")
    c.add_argument("--policy", required=True, help="GpuPolicy as a JSON file")
    c.add_argument("--target", type=int, required=True, help="GPU nodes that must all be complete")
    c.add_argument("--timeout", type=float, default=1500)
    f = sub.add_parser("flip")
    f.add_argument("--policy", required=True, help="name of the active GpuPolicy")
    f.add_argument("--nodes", required=True, help="comma-separated node names to flip")
    f.add_argument("--count", type=int, default=200)
    f.add_argument("--timeout", type=float, default=15, help="seconds per flip")
    f.add_argument("--gap", type=float, default=20, help="ms between flips")
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--raw", help="write every sample to this CSV")
    a = ap.parse_args()
    if a.cmd == "flip" and a.count % 2:
        a.count += 1  # every opt-out is undone
    api = Api(a.server, a.ca, a.cert, a.key)
    return cmd_complete(api, a) if a.cmd == "complete" else cmd_flip(api, a)


if __name__ == "__main__":
    sys.exit(main())
