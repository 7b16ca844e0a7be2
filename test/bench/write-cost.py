#!/usr/bin/env python3
"""write-cost.py - what one GpuPolicy status write costs the API server,
against one Node label write: the floor of test/bench/run's event -> status
latency is one Node write seen by a watch; the status needs that, gpuop's
reconcile, and then one status write seen by a watch.

On a running lab (LAB_DIR's env, pki/admin.*) with a GpuPolicy that has a
status (gpuop stopped: this writes the status, and puts the one it found
back at the end), --rounds times, in turn:
  ssa        PATCH .../status, server-side apply (as gpuop writes it)
  merge      the same document as a JSON merge patch
  jsonpatch  the same document as one JSON patch "add /status"
  summary    server-side apply of status.summary alone (the size effect)
  node       a JSON merge patch of one label of --node (removed at the end)
the status writes alternating between the found status and one with
summary.gpuNodes one higher, so that every write changes the object. For each it prints the
round trip and the time until a watch (this process's, one per resource)
sees the write, p50 / p90 / p99 in ms. Standard library only.

  test/bench/write-cost.py --lab ~/.cache/gpuop/lab-bench --policy default \\
      --node gpu-flip-1 --rounds 100
"""
import argparse
import copy
import http.client
import json
import ssl
import threading
import time

GP = "/apis/gpuop.dev/v1alpha1/gpupolicies"
MAX_BODY = 64 << 20
LABEL = "gpuop.dev/write-cost"
PAUSE_S = 0.05  # between writes: each is measured alone
SEEN_WAIT_S = 5


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--lab", required=True)
    a.add_argument("--policy", default="default")
    a.add_argument("--node", required=True)
    a.add_argument("--rounds", type=int, default=100)
    o = a.parse_args()
    env = {}
    for line in open(o.lab + "/env"):
        if line.startswith("export LAB_APISERVER="):
            env["server"] = line.split("=", 1)[1].strip().strip("'").replace("https://", "")
    host, port = env["server"].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=o.lab + "/pki/ca.crt")
    ctx.load_cert_chain(o.lab + "/pki/admin.crt", o.lab + "/pki/admin.key")

    def conn():
        return http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)

    c = conn()

    def req(method, path, body=None, ctype="application/json"):
        t0 = time.monotonic()
        c.request(method, path, body=body, headers={"Content-Type": ctype, "Accept": "application/json"})
        r = c.getresponse()
        data = r.read(MAX_BODY)
        t1 = time.monotonic()
        if r.status >= 300:
            raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
        return t0, t1, json.loads(data)

    _, _, pol = req("GET", f"{GP}/{o.policy}")
    found = pol.get("status")
    if not found or "summary" not in found:
        raise SystemExit(f"gpupolicy/{o.policy} has no status.summary: run gpuop on the lab first")
    other = copy.deepcopy(found)
    other["summary"]["gpuNodes"] = found["summary"].get("gpuNodes", 0) + 1

    seen, lock = {}, threading.Lock()

    def watch(path):
        w = conn()
        w.request("GET", path + "&watch=1")
        r = w.getresponse()
        while True:
            line = r.readline(MAX_BODY)
            if not line:
                return
            t = time.monotonic()
            ev = json.loads(line)
            if "object" not in ev:
                raise SystemExit(f"watch {path}: {line[:300]!r}")
            rv = ev["object"]["metadata"].get("resourceVersion")
            with lock:
                seen.setdefault(rv, t)

    for path in (f"{GP}?fieldSelector=metadata.name={o.policy}", f"/api/v1/nodes?fieldSelector=metadata.name={o.node}"):
        threading.Thread(target=watch, args=(path,), daemon=True).start()
    time.sleep(1)  # both watches open before the first write

    def until_seen(rv, t0):
        deadline = time.monotonic() + SEEN_WAIT_S
        while time.monotonic() < deadline:
            with lock:
                if rv in seen:
                    return (seen[rv] - t0) * 1000
            time.sleep(0.0005)
        return float("nan")

    def ssa(st):
        return json.dumps({"apiVersion": "gpuop.dev/v1alpha1", "kind": "GpuPolicy",
                           "metadata": {"name": o.policy}, "status": st})

    status = f"{GP}/{o.policy}/status"
    apply_q = "?fieldManager=gpuop&force=true"
    kinds = {
        "ssa": lambda st: ("PATCH", status + apply_q, ssa(st), "application/apply-patch+yaml"),
        "merge": lambda st: ("PATCH", status, json.dumps({"status": st}), "application/merge-patch+json"),
        "jsonpatch": lambda st: ("PATCH", status, json.dumps([{"op": "add", "path": "/status", "value": st}]),
                                 "application/json-patch+json"),
        "summary": lambda st: ("PATCH", status + apply_q, ssa({"summary": st["summary"]}),
                               "application/apply-patch+yaml"),
    }
    res = {k: ([], []) for k in list(kinds) + ["node"]}
    try:
        writes = 0
        for i in range(o.rounds):
            for k, make in kinds.items():
                st = other if writes % 2 == 0 else found  # each write moves the object
                writes += 1
                t0, t1, obj = req(*make(st))
                res[k][0].append((t1 - t0) * 1000)
                res[k][1].append(until_seen(obj["metadata"]["resourceVersion"], t0))
                time.sleep(PAUSE_S)
            body = json.dumps({"metadata": {"labels": {LABEL: str(i % 2)}}})
            t0, t1, obj = req("PATCH", f"/api/v1/nodes/{o.node}", body, "application/merge-patch+json")
            res["node"][0].append((t1 - t0) * 1000)
            res["node"][1].append(until_seen(obj["metadata"]["resourceVersion"], t0))
            time.sleep(PAUSE_S)
    finally:
        req("PATCH", status + apply_q, ssa(found), "application/apply-patch+yaml")
        req("PATCH", f"/api/v1/nodes/{o.node}", json.dumps({"metadata": {"labels": {LABEL: None}}}),
            "application/merge-patch+json")

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))]

    print(f"status document {len(json.dumps(found, separators=(',', ':')))} bytes, {o.rounds} rounds")
    for k, (rtt, w) in res.items():
        print(f"{k:10s} round trip p50 {pct(rtt, .5):6.2f} p90 {pct(rtt, .9):6.2f} p99 {pct(rtt, .99):6.2f}"
              f" | watch p50 {pct(w, .5):6.2f} p90 {pct(w, .9):6.2f} p99 {pct(w, .99):6.2f}")


if __name__ == "__main__":
    main()
