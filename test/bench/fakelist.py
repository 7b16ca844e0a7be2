#!/usr/bin/env python3
"""fakelist.py - a profiling aid, not a test: serves gpuop the LISTs of a
large cluster without the minutes a real rollout takes.

It answers LIST (paged by limit/continue) and WATCH (a bookmark, then an
idle stream) for Nodes, operand Pods and DaemonSets and GpuPolicies with
copies of real objects captured from the lab (--templates DIR holding
node.json, pods.json, ds.json and policies.json as `kubectl get -o json`
writes them), N nodes and one pod per operand per node. Optional, for
test/bench/run's --sharing and --dra: configmaps.json (the device plugin's
config ConfigMap, a List) and slices.json (a List holding the template
node's ResourceSlice: served once per node, the node's name replaced, with
no ResourceClaim). Every write is
answered 200 with its own body echoed. Plain HTTP on 127.0.0.1.

Use it to look at gpuop's memory at 5,000 nodes under massif or heaptrack
in seconds; the numbers that count come from test/bench/run on the lab.
At 20,000 nodes and 120,000 pods, which the 2-core lab cannot hold, it is
the benchmark (docs/benchmarks-history.md, issue 24).

--flips N: event -> status latency. Once gpuop has written a status with
every node a GPU node and then nothing for a few seconds, N times (--flip-gap
ms apart) one node loses its nvidia.com/ labels on the Nodes watch (no longer
a GPU node), or gets them back, and the time from writing that watch event
to the status PATCH that counts the new number of GPU nodes is taken
(p50/p90/p99/max printed as JSON on stderr, "fakelist: flips ..."). The
floor is this process's own delivery, well under a millisecond.

    test/bench/fakelist.py --nodes 5000 --port 18080 --templates DIR &
    gpuop run --kubeconfig KUBECONFIG --leader-elect=false ...
"""
import argparse
import copy
import http.server
import json
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse


def build(args):
    node_t = json.load(open(f"{args.templates}/node.json"))
    pods_t = json.load(open(f"{args.templates}/pods.json"))["items"]
    ds = json.load(open(f"{args.templates}/ds.json"))["items"]
    pol = json.load(open(f"{args.templates}/policies.json"))["items"]
    tnode = node_t["metadata"]["name"]
    nodes, pods = [], []
    for i in range(args.nodes):
        name = f"gpu-{i:05d}"
        n = copy.deepcopy(node_t)
        n["metadata"]["name"] = name
        n["metadata"]["uid"] = f"00000000-0000-0000-0000-{i:012d}"
        n["metadata"]["labels"]["kubernetes.io/hostname"] = name
        nodes.append(json.dumps(n, separators=(",", ":")))
        for j, p in enumerate(pods_t):
            s = json.dumps(p, separators=(",", ":"))
            s = s.replace(f'"{tnode}"', f'"{name}"')
            pname = p["metadata"]["name"]
            s = s.replace(f'"{pname}"', f'"{pname[:-5]}{i:05d}"')
            s = s.replace(p["metadata"]["uid"], f"00000000-0000-0000-{j:04d}-{i:012d}")
            pods.append(s)
    for d in ds:
        st = d.setdefault("status", {})
        for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                  "numberAvailable", "updatedNumberScheduled"):
            st[k] = args.nodes
    data = {
        "nodes": ("NodeList", "v1", nodes),
        "pods": ("PodList", "v1", pods),
        "daemonsets": ("DaemonSetList", "apps/v1", [json.dumps(d) for d in ds]),
        "gpupolicies": ("GpuPolicyList", pol[0]["apiVersion"] if pol else "v1",
                        [json.dumps(p) for p in pol]),
    }
    # Optional: the sharing ConfigMap (--sharing), and a ResourceSlice a
    # node made from the template node's (--dra), with no ResourceClaim.
    try:
        cms = json.load(open(f"{args.templates}/configmaps.json"))["items"]
        data["configmaps"] = ("ConfigMapList", "v1", [json.dumps(c) for c in cms])
    except FileNotFoundError:
        pass
    try:
        sl_t = json.load(open(f"{args.templates}/slices.json"))["items"]
    except FileNotFoundError:
        sl_t = []
    if sl_t:
        s = json.dumps(sl_t[0], separators=(",", ":"))
        data["resourceslices"] = ("ResourceSliceList", "resource.k8s.io/v1",
                                  [s.replace(tnode, f"gpu-{i:05d}") for i in range(args.nodes)])
        data["resourceclaims"] = ("ResourceClaimList", "resource.k8s.io/v1", [])
    return data


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    data = {}
    rollout = False
    order = "pod"
    rate = 0.0
    rollout_done = False
    # --flips: node watch events to send, status writes seen (guarded by cond)
    cond = threading.Condition()
    node_events = []  # watch lines, appended by the flipper
    ds_events = []  # watch lines: the DaemonSets gpuop applied, as the server would store them
    status_log = []  # (monotonic time, summary.gpuNodes) of every status write
    rv = 100000  # resourceVersions of the DaemonSets applied

    def log_message(self, *a):
        pass

    def send(self, code, body):
        b = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        res = u.path.rstrip("/").rsplit("/", 1)[-1]
        if res == "pods" and self.rollout:
            return self.pods_rollout(q)
        if res not in self.data:
            return self.send(404, '{"kind":"Status","apiVersion":"v1","status":"Failure",'
                                  '"reason":"NotFound","code":404}')
        kind, api, items = self.data[res]
        if q.get("watch") in ("1", "true"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            line = ('{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s",'
                    '"metadata":{"resourceVersion":"1000"}}}\n' % (kind[:-4], api)).encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.flush()
            end = time.monotonic() + min(int(q.get("timeoutSeconds", "300")), 3600)
            evs = {"nodes": Handler.node_events, "daemonsets": Handler.ds_events}.get(res)
            if evs is None:
                time.sleep(max(0, end - time.monotonic()))
            else:  # the flips' node events, the applied DaemonSets, as they come
                with Handler.cond:
                    sent = len(evs)
                while time.monotonic() < end:
                    with Handler.cond:
                        Handler.cond.wait_for(lambda: len(evs) > sent,
                                              timeout=max(0.01, end - time.monotonic()))
                        lines = evs[sent:]
                    sent += len(lines)
                    for line in lines:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    if lines:
                        self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        start = int(q.get("continue") or 0)
        limit = int(q.get("limit") or len(items) or 1)
        page = items[start:start + limit]
        cont = str(start + limit) if start + limit < len(items) else ""
        meta = '{"resourceVersion":"1000"%s}' % (',"continue":"%s"' % cont if cont else "")
        self.send(200, '{"kind":"%s","apiVersion":"%s","metadata":%s,"items":[%s]}'
                  % (kind, api, meta, ",".join(page)))

    def pods_rollout(self, q):
        """--rollout: pods are not listed; they arrive on the watch as a
        rollout delivers them: ADDED unbound, MODIFIED bound, MODIFIED
        Running. --order pod: one pod at a time (all three steps); --order
        phase: as the lab does it, every pod added, then every pod bound,
        then every pod Running. --rate: events per second (0: at once), so
        that gpuop reconciles between events as it does on the lab."""
        if q.get("watch") not in ("1", "true"):
            return self.send(200, '{"kind":"PodList","apiVersion":"v1","metadata":'
                                  '{"resourceVersion":"1000"},"items":[]}')
        if Handler.rollout_done:
            time.sleep(min(int(q.get("timeoutSeconds", "300")), 3600))
            return self.send(200, "")
        Handler.rollout_done = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        per_pod = []
        for s in self.data["pods"][2]:
            p = json.loads(s)
            status = p.get("status", {})
            unbound = copy.deepcopy(p)
            node = unbound["spec"].pop("nodeName", None)
            unbound["status"] = {"phase": "Pending"}
            bound = copy.deepcopy(unbound)
            if node:
                bound["spec"]["nodeName"] = node
            p["status"] = status
            per_pod.append([("ADDED", unbound), ("MODIFIED", bound), ("MODIFIED", p)])
        if Handler.order == "phase":
            steps = [st[k] for k in range(3) for st in per_pod]
        else:
            steps = [x for st in per_pod for x in st]
        rv = 1001
        t0 = time.monotonic()
        for i, (typ, o) in enumerate(steps):
            rv += 1
            o["metadata"]["resourceVersion"] = str(rv)
            line = (json.dumps({"type": typ, "object": o}, separators=(",", ":")) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            if Handler.rate and i % 10 == 9:
                self.wfile.flush()
                ahead = t0 + (i + 1) / Handler.rate - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        self.wfile.flush()
        print(f"fakelist: rollout delivered ({len(steps)} events) in "
              f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
        time.sleep(3600)

    def write(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else "{}"
        try:
            obj = json.loads(body)
            if "/gpupolicies/" in self.path and "/status" in self.path:
                g = ((obj.get("status") or {}).get("summary") or {}).get("gpuNodes")
                with Handler.cond:
                    Handler.status_log.append((time.monotonic(), g))
                    Handler.cond.notify_all()
            obj.setdefault("metadata", {})["resourceVersion"] = "1001"
            obj["metadata"].setdefault("generation", 1)
            if "/daemonsets/" in self.path and self.command == "PATCH":
                obj = self.apply_ds(obj)
            body = json.dumps(obj)
        except ValueError:
            pass
        self.send(200 if self.command != "POST" else 201, body)

    do_PATCH = do_PUT = do_POST = write

    def apply_ds(self, obj):
        """A DaemonSet apply: the stored one takes the applied metadata and
        spec (a new generation when the spec changed), keeps its status,
        and the change goes out on the DaemonSet watch, as on a server."""
        name = obj["metadata"].get("name")
        kind, api, items = Handler.data["daemonsets"]
        with Handler.cond:
            for i, s in enumerate(items):
                d = json.loads(s)
                if d["metadata"]["name"] != name:
                    continue
                md = d["metadata"]
                gen = md.get("generation", 1) + (d.get("spec") != obj.get("spec"))
                for k in ("labels", "annotations", "ownerReferences"):
                    if k in obj["metadata"]:
                        md[k] = obj["metadata"][k]
                d["spec"] = obj.get("spec", d.get("spec"))
                md["generation"] = gen
                d.setdefault("status", {})["observedGeneration"] = gen
                Handler.rv += 1
                md["resourceVersion"] = str(Handler.rv)
                items[i] = json.dumps(d, separators=(",", ":"))
                Handler.ds_events.append((json.dumps({"type": "MODIFIED", "object": d},
                                                     separators=(",", ":")) + "\n").encode())
                Handler.cond.notify_all()
                return d
        return obj

    def do_DELETE(self):
        self.send(200, '{"kind":"Status","apiVersion":"v1","status":"Success"}')


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def pct(xs, p):
    s = sorted(xs)
    if not s:
        return None
    return s[max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def flipper(args):
    """--flips: see the module's comment."""
    nodes = Handler.data["nodes"][2]
    total = len(nodes)
    quiet = 3.0
    with Handler.cond:  # all GPU nodes written, then a quiet moment
        while True:
            Handler.cond.wait_for(lambda: any(g == total for _, g in Handler.status_log), timeout=5)
            last = Handler.status_log[-1][0] if Handler.status_log else 0
            if any(g == total for _, g in Handler.status_log) and time.monotonic() - last > quiet:
                break
            Handler.cond.wait(1)
    print(f"fakelist: all {total} GPU nodes in the status; flipping", file=sys.stderr, flush=True)
    rv = 5000
    lat = []
    timeouts = 0
    for i in range(args.flips):
        k = (i // 2) % total
        node = json.loads(nodes[k])
        off = i % 2 == 0
        if off:
            labels = node["metadata"]["labels"]
            node["metadata"]["labels"] = {k2: v for k2, v in labels.items()
                                          if not k2.startswith("nvidia.com/")}
        want = total - 1 if off else total
        rv += 1
        node["metadata"]["resourceVersion"] = str(rv)
        line = (json.dumps({"type": "MODIFIED", "object": node}, separators=(",", ":")) + "\n").encode()
        with Handler.cond:
            seen = len(Handler.status_log)
            t0 = time.monotonic()
            Handler.node_events.append(line)
            Handler.cond.notify_all()
            ok = Handler.cond.wait_for(lambda: any(g == want for _, g in Handler.status_log[seen:]),
                                       timeout=30)
            t1 = next((t for t, g in Handler.status_log[seen:] if g == want), None)
        if ok and t1 is not None:
            lat.append((t1 - t0) * 1e3)
        else:
            timeouts += 1
        time.sleep(args.flip_gap / 1e3)
    res = {"flips": args.flips, "measured": len(lat), "timeouts": timeouts}
    for p in (50, 90, 99):
        v = pct(lat, p)
        res["status_ms_p%d" % p] = None if v is None else round(v, 2)
    res["status_ms_max"] = round(max(lat), 2) if lat else None
    print("fakelist: flips " + json.dumps(res), file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--templates", required=True)
    ap.add_argument("--rollout", action="store_true",
                    help="pods arrive on the watch (added, bound, running) instead of the list")
    ap.add_argument("--order", choices=("pod", "phase"), default="pod",
                    help="rollout order: each pod's three steps together, or phase by phase")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"),
                    help="serve HTTPS with this certificate and key (PEM), as the API server does")
    ap.add_argument("--rate", type=float, default=0,
                    help="rollout events per second (0: as fast as possible)")
    ap.add_argument("--flips", type=int, default=0,
                    help="node label flips to time event -> status with (even)")
    ap.add_argument("--flip-gap", type=float, default=1100, help="ms between flips")
    args = ap.parse_args()
    Handler.data = build(args)
    Handler.rollout = args.rollout
    Handler.order = args.order
    Handler.rate = args.rate
    print(f"fakelist: {args.nodes} nodes, {len(Handler.data['pods'][2])} pods on "
          f"{'https' if args.tls else 'http'}://127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    srv = Server(("127.0.0.1", args.port), Handler)
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*args.tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    if args.flips:
        threading.Thread(target=flipper, args=(args,), daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
