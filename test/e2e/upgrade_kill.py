#!/usr/bin/env python3
"""upgrade_kill.py - kills a process with SIGKILL the moment a node is seen
in one of the given driver-upgrade states (test/e2e/66_driver_upgrade_kill.sh:
gpuop killed once in each state, the upgrade must still complete).

Watches Nodes (a LIST, then a watch; standard library, the lab's admin
certificate, as upgrade_timeline.py) and, as soon as a node whose name
starts with --nodes-prefix carries nvidia.com/gpu-driver-upgrade-state in
--states, sends SIGKILL to the process whose pid is in --pid-file; then
reads that node again and prints one JSON line: {"node", "seen" (the
state that triggered), "state" (the label after the kill: the state gpuop
died in), "ms" (from the watch line to the kill)}. Exit 0 when it killed,
3 when --timeout passed first.

Once it has listed it writes --ready-file (the watch resumes from the
list, so nothing after it is missed), so that the test can start
gpuop only then (a gpuop started first can pass a state before a slow
start of this script has listed). The pid file is read when a node
triggers; while it is still empty (gpuop not started yet) it is read again
every PID_POLL seconds, and gpuop is killed the moment it is there.

usage: upgrade_kill.py --lab-dir DIR --pid-file F --ready-file R --states S1,S2
                       --nodes-prefix P [--timeout S]
"""
import argparse
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upgrade_timeline import MAX_LINE, STATE_LABEL, Api  # noqa: E402

PID_POLL = 0.005  # seconds between reads of an empty pid file


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab-dir", required=True)
    ap.add_argument("--pid-file", required=True)
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--states", required=True)
    ap.add_argument("--nodes-prefix", default="")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    want = set(s for s in a.states.split(",") if s)
    with open(os.path.join(a.lab_dir, "apiserver.addr")) as f:
        server = f.read().strip()
    pki = os.path.join(a.lab_dir, "pki")
    api = Api(server, os.path.join(pki, "ca.crt"), os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
    deadline = time.monotonic() + a.timeout

    def hit(obj):
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        s = (md.get("labels") or {}).get(STATE_LABEL)
        return (name, s) if name.startswith(a.nodes_prefix) and s in want else None

    def read_pid():
        try:
            with open(a.pid_file) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def kill(name, seen, t):
        pid = read_pid()
        while not pid and time.monotonic() < deadline:
            time.sleep(PID_POLL)
            pid = read_pid()
        if not pid:
            print(json.dumps({"timeout": a.timeout, "no_pid": True}))
            return 3
        os.kill(pid, signal.SIGKILL)
        ms = (time.monotonic() - t) * 1e3
        node = api.get_json("/api/v1/nodes/" + name)
        state = ((node.get("metadata") or {}).get("labels") or {}).get(STATE_LABEL)
        print(json.dumps({"node": name, "seen": seen, "state": state, "ms": round(ms, 2)}))
        return 0

    lst = api.get_json("/api/v1/nodes")
    t = time.monotonic()
    # the watch below starts at this list's resourceVersion: from here on
    # no change is missed
    with open(a.ready_file, "w") as f:
        f.write("ready\n")
    for obj in lst.get("items") or []:
        h = hit(obj)
        if h:
            return kill(h[0], h[1], t)
    rv = lst["metadata"]["resourceVersion"]
    while time.monotonic() < deadline:
        left = max(1, int(deadline - time.monotonic()))
        c = api.conn(timeout=left + 10)
        c.request("GET", "/api/v1/nodes?watch=1&resourceVersion=%s&timeoutSeconds=%d" % (rv, left),
                  headers={"Accept": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            raise SystemExit("upgrade_kill: watch: HTTP %d" % r.status)
        while True:
            line = r.readline(MAX_LINE)
            t = time.monotonic()
            if not line:
                break
            ev = json.loads(line)
            obj = ev.get("object") or {}
            if ev.get("type") == "ERROR":
                raise SystemExit("upgrade_kill: watch: %s" % obj)
            rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
            if ev.get("type") in ("ADDED", "MODIFIED"):
                h = hit(obj)
                if h:
                    return kill(h[0], h[1], t)
        c.close()
    print(json.dumps({"timeout": a.timeout, "states": sorted(want)}))
    return 3


if __name__ == "__main__":
    sys.exit(main())
