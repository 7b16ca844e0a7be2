#!/usr/bin/env python3
"""fakelist.py - a profiling aid, not a test: serves gpuop the LISTs of a
large cluster without the minutes a real rollout takes.

It answers LIST (paged by limit/continue) and WATCH (a bookmark, then an
idle stream) for Nodes, operand Pods and DaemonSets and GpuPolicies with
copies of real objects captured from the lab (--templates DIR holding
node.json, pods.json, ds.json and policies.json as `kubectl get -o json`
writes them), N nodes and one pod per operand per node. Every write is
answered 200 with its own body echoed. Plain HTTP on 127.0.0.1.

Use it to look at gpuop's memory at 5,000 nodes under massif or heaptrack
in seconds; the numbers that count come from test/bench/run on the lab.

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
    return {
        "nodes": ("NodeList", "v1", nodes),
        "pods": ("PodList", "v1", pods),
        "daemonsets": ("DaemonSetList", "apps/v1", [json.dumps(d) for d in ds]),
        "gpupolicies": ("GpuPolicyList", pol[0]["apiVersion"] if pol else "v1",
                        [json.dumps(p) for p in pol]),
    }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    data = {}
    rollout = False
    order = "pod"
    rate = 0.0
    rollout_done = False

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
            time.sleep(min(int(q.get("timeoutSeconds", "300")), 3600))
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
            obj.setdefault("metadata", {})["resourceVersion"] = "1001"
            obj["metadata"].setdefault("generation", 1)
            body = json.dumps(obj)
        except ValueError:
            pass
        self.send(200 if self.command != "POST" else 201, body)

    do_PATCH = do_PUT = do_POST = write

    def do_DELETE(self):
        self.send(200, '{"kind":"Status","apiVersion":"v1","status":"Success"}')


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


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
    srv.serve_forever()


if __name__ == "__main__":
    main()
