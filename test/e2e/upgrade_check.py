#!/usr/bin/env python3
"""upgrade_check.py - checks the driver-upgrade invariants (issue 22, SPEC
4c, docs/upgrade.md) over a whole timeline written by upgrade_timeline.py,
at every moment, not just at the end.

The records before the recorder's "synced" line are the starting snapshot;
every later record is replayed in resourceVersion order (one etcd orders
Nodes, Pods and GpuPolicies alike), and after each one the invariants that
concern it are checked. An "epoch" is one driver spec: it begins with the
timeline and again whenever the GpuPolicy's spec.driver changes outside
upgradePolicy (a version change); the nodes unavailable when it begins are
the ones "unavailable before".

Invariants (the name is what a violation line starts with):
  parallel     at most maxParallelUpgrades nodes (0: no limit) between
               cordon-required and uncordon-required at any moment
  unavailable  no node becomes unavailable (cordoned, or its driver pod not
               Ready where the driver is managed) while that makes more GPU
               nodes unavailable than maxUnavailable (a number or N% of GPU
               nodes, rounded up); nodes unavailable when the epoch began,
               nodes added since that never had a Ready driver, and nodes
               cordoned by hand count, but never trigger it
  gpu-pod      no driver pod deleted on a node while a pod requesting a GPU
               (nvidia.com/gpu, nvidia.com/mig-*) still runs there (exists,
               phase neither Succeeded nor Failed, terminating or not)
  order        nodes start (enter cordon-required or later) in the order the
               status promised (status.upgrade.next: in one of the last
               PROMISES lists written, every node ahead of it has started; the
               status of the plan that starts a node may land before the
               node's label, and lists it no more);
               a node's state never goes back along the GPU Operator's
               sequence; a driver pod is deleted only on a node that is
               cordoned and in the upgrade (or upgrade-failed: rollback)
  dependents   when a driver pod is deleted, every dependent deploy label
               (nvidia.com/gpu.deploy.*, not driver) that was "true" is
               paused-for-driver-upgrade and no dependent operand pod
               remains on the node; they stay paused until a new driver pod
               is Ready there; at upgrade-done they are back to their value
               from before the node started, the node is uncordoned unless
               it was cordoned before, and gpuop's cordon mark is gone
  hand-cordon  a node cordoned other than by the upgrade (no state in the
               upgrade, no gpuop.dev/driver-upgrade-cordoned) is never
               uncordoned, never enters the upgrade, never loses its driver pod
  manager      when gpuop deletes a driver pod of a node in the upgrade, the
               node carries nvidia.com/gpu-driver-upgrade-enabled=true (the
               new pod's k8s-driver-manager then leaves evictions to gpuop);
               a node at upgrade-done, or never started, does not
  stop         after a node is upgrade-failed (or carries
               gpuop.dev/driver-upgrade-failed) no other node starts until
               the failure is cleared or the driver spec changes
  pdb          (--min-ready NS/PREFIX=N) once N pods named PREFIX* in NS
               are Ready and not terminating, never fewer again (a PDB held)
  final        (--expect-version V) at the end every managed GPU node not
               cordoned by hand and not --exempt is upgrade-done, schedulable
               (unless it was cordoned before), with a Ready driver pod whose
               image tag starts with V, no label paused and no gpuop mark

usage: upgrade_check.py TIMELINE [--expect-version V] [--exempt NODE]...
         [--max-parallel N] [--max-unavailable N|N%] [--nodes-prefix P]
         [--name-order] [--min-ready NS/PREFIX=N]... [--stats FILE]
Exit 0: no violation; 1: violations (each with a timeline excerpt); 2: usage.
--stats writes JSON: per node the seconds from entering the upgrade to
upgrade-done, and the epoch's span.
"""
import argparse
import json
import math
import sys
import time

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
PAUSED = "paused-for-driver-upgrade"
CORDON_MARK = "gpuop.dev/driver-upgrade-cordoned"
FAILED_MARK = "gpuop.dev/driver-upgrade-failed"
ENABLED_MARK = "nvidia.com/gpu-driver-upgrade-enabled"
PAUSED_MARK = "gpuop.dev/driver-upgrade-paused"
GPU_PRESENT = "nvidia.com/gpu.present"
# deploy labels that are not the driver's dependents: the driver itself and
# the node-wide opt-out (nvidia.com/gpu.deploy.operands)
NOT_DEPENDENTS = ("driver", "operands")
# The GPU Operator's sequence (k8s-operator-libs pkg/upgrade/consts.go, as
# vendored by NVIDIA/gpu-operator v26.7.0).
SEQUENCE = ["upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
            "drain-required", "pod-restart-required", "validation-required", "uncordon-required",
            "upgrade-done"]
RANK = {s: i for i, s in enumerate(SEQUENCE)}
IN_PROGRESS = set(SEQUENCE[1:8])  # cordon-required .. uncordon-required
FAILED = "upgrade-failed"
DONE = "upgrade-done"
DEFAULT_MAX_PARALLEL = 1
DEFAULT_MAX_UNAVAILABLE = "25%"
EXCERPT = 8  # records of a node shown with a violation
PROMISES = 3  # recent status.upgrade.next lists a start is checked against


class Violation:
    def __init__(self, inv, rec, msg, nodes, excerpt):
        self.inv, self.rec, self.msg, self.nodes, self.excerpt = inv, rec, msg, nodes, excerpt

    def __str__(self):
        t = self.rec.get("t")
        ts = time.strftime("%H:%M:%S", time.gmtime(t)) + ("%.3f" % (t % 1))[1:] if t else "?"
        lines = ["%s: %s (at %s, rv %s)" % (self.inv, self.msg, ts, self.rec.get("rv"))]
        for r in self.excerpt:
            lines.append("    " + brief(r))
        return "\n".join(lines)


def brief(r):
    t = r.get("t")
    ts = time.strftime("%H:%M:%S", time.gmtime(t)) + ("%.3f" % (t % 1))[1:] if t else "?"
    if r.get("kind") == "Node":
        return "%s rv=%s %s node %s state=%s unschedulable=%s deploy=%s ann=%s" % (
            ts, r.get("rv"), r.get("ev"), r.get("name"), r.get("state"), r.get("unschedulable"),
            json.dumps(r.get("deploy"), sort_keys=True), json.dumps(r.get("ann"), sort_keys=True))
    if r.get("kind") == "Pod":
        return "%s rv=%s %s pod %s/%s node=%s phase=%s ready=%s deleting=%s comp=%s gpu=%s image=%s waiting=%s" % (
            ts, r.get("rv"), r.get("ev"), r.get("ns"), r.get("name"), r.get("node"), r.get("phase"),
            r.get("ready"), r.get("deleting"), r.get("component"), r.get("gpu"), r.get("image"), r.get("waiting"))
    if r.get("kind") == "GpuPolicy":
        up = r.get("upgrade") or {}
        return "%s rv=%s %s gpupolicy %s driver=%s next=%s counts=%s" % (
            ts, r.get("rv"), r.get("ev"), r.get("name"), json.dumps(r.get("driver"), sort_keys=True),
            up.get("next"), json.dumps(up.get("counts"), sort_keys=True))
    return json.dumps(r)


def driver_key(driver):
    d = dict(driver or {})
    d.pop("upgradePolicy", None)
    return json.dumps(d, sort_keys=True)


def resolve_max_unavailable(v, gpu_nodes):
    s = str(v).strip()
    if s.endswith("%"):
        return int(math.ceil(float(s[:-1]) * gpu_nodes / 100.0))
    return int(s)


def load(path):
    """Returns (snapshot records, later records sorted by rv)."""
    snap, rest, synced = [], [], False
    with open(path) as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill at the end
            if r.get("kind") == "synced":
                synced = True
                continue
            r["_i"] = i
            (rest if synced or r.get("ev") != "LIST" else snap).append(r)
    rest.sort(key=lambda r: (r.get("rv") or 0, r["_i"]))
    return snap, rest


class Checker:
    def __init__(self, opts):
        self.o = opts
        self.nodes = {}  # name -> record
        self.pods = {}  # uid -> record
        self.policy = None
        self.epoch_key = None
        self.violations = []
        self.history = {}  # node -> recent records about it
        self.hand = set()  # nodes cordoned by hand
        self.baseline = set()  # unavailable without the upgrade's doing
        self.started = []  # nodes started in this epoch, in order
        self.before = {}  # node -> its deploy labels when it started
        self.unsched_before = {}  # node -> unschedulable when it started
        self.replacing = {}  # node -> uid of the driver pod deleted
        self.failed = set()
        self.promises = []  # the last PROMISES distinct status.upgrade.next lists
        self.start_t = {}
        self.done_t = {}
        self.epoch_t = None
        self.armed = {}  # --min-ready spec -> reached once

    # --- helpers ---------------------------------------------------------------
    def sel(self, name):
        return name is not None and name.startswith(self.o.nodes_prefix or "")

    def note(self, node, r):
        h = self.history.setdefault(node, [])
        h.append(r)
        del h[:-EXCERPT]

    def violate(self, inv, r, msg, nodes):
        ex = []
        for n in nodes:
            ex.extend(self.history.get(n, []))
        if r not in ex:
            ex.append(r)
        ex.sort(key=lambda x: (x.get("rv") or 0, x.get("_i", 0)))
        self.violations.append(Violation(inv, r, msg, nodes, ex[-2 * EXCERPT:]))

    def upgrade_policy(self):
        return ((self.policy or {}).get("driver") or {}).get("upgradePolicy") or {}

    def max_parallel(self):
        if self.o.max_parallel is not None:
            return self.o.max_parallel
        return int(self.upgrade_policy().get("maxParallelUpgrades", DEFAULT_MAX_PARALLEL))

    def max_unavailable(self):
        v = self.o.max_unavailable
        if v is None:
            v = self.upgrade_policy().get("maxUnavailable", DEFAULT_MAX_UNAVAILABLE)
        return resolve_max_unavailable(v, len(self.gpu_nodes()))

    def gpu_nodes(self):
        return [n for n, r in self.nodes.items() if self.sel(n) and (r.get("labels") or {}).get(GPU_PRESENT) == "true"]

    def managed(self, node):
        return (self.nodes[node].get("deploy") or {}).get("driver") != "false"

    def driver_pods(self, node):
        return [p for p in self.pods.values() if p.get("node") == node and p.get("component") == "driver"]

    def driver_ready(self, node):
        return any(p.get("ready") and not p.get("deleting") for p in self.driver_pods(node))

    def unavailable(self, node):
        r = self.nodes[node]
        return r.get("unschedulable") or (self.managed(node) and not self.driver_ready(node))

    def unavailable_set(self):
        return {n for n in self.gpu_nodes() if self.unavailable(n)}

    def in_progress(self):
        return sorted(n for n in self.gpu_nodes() if self.nodes[n].get("state") in IN_PROGRESS)

    def gpu_pods_running(self, node):
        return sorted("%s/%s" % (p["ns"], p["name"]) for p in self.pods.values()
                      if p.get("node") == node and (p.get("gpu") or 0) > 0
                      and p.get("phase") not in ("Succeeded", "Failed"))

    def dependents(self, node):
        return {k: v for k, v in (self.nodes[node].get("deploy") or {}).items() if k not in NOT_DEPENDENTS}

    # --- epochs ----------------------------------------------------------------
    def begin_epoch(self, r, initial=False):
        self.baseline = self.unavailable_set()
        for n in self.gpu_nodes():
            nr = self.nodes[n]
            if nr.get("unschedulable") and CORDON_MARK not in (nr.get("ann") or {}) \
                    and nr.get("state") not in IN_PROGRESS and nr.get("state") != FAILED:
                self.hand.add(n)
        self.started = []
        # a new driver spec forgets the failures of the last one
        self.failed = set()
        if initial:
            self.failed = {n for n in self.gpu_nodes() if self.nodes[n].get("state") == FAILED
                           or FAILED_MARK in (self.nodes[n].get("ann") or {})}
        self.promises = []
        self.epoch_t = r.get("t") if r else None
        self.start_t, self.done_t = {}, {}
        # nodes already in the upgrade (the recorder started late): their
        # labels from before are unknown; take the current ones
        for n in self.gpu_nodes():
            if self.nodes[n].get("state") in IN_PROGRESS:
                self.started.append(n)
                self.before.setdefault(n, self.dependents(n))
                self.unsched_before.setdefault(n, False)

    # --- replay ----------------------------------------------------------------
    def apply(self, r):
        k = r.get("kind")
        if k == "Node":
            if r.get("ev") == "DELETED":
                self.nodes.pop(r["name"], None)
            else:
                self.nodes[r["name"]] = r
        elif k == "Pod":
            if r.get("ev") == "DELETED":
                self.pods.pop(r["uid"], None)
            else:
                self.pods[r["uid"]] = r
        elif k == "GpuPolicy":
            if r.get("ev") == "DELETED":
                if self.policy and self.policy.get("name") == r.get("name"):
                    self.policy = None
            else:
                self.policy = r

    def run(self, snap, rest):
        for r in snap:
            self.apply(r)
            for n in self.nodes_of(r):
                self.note(n, r)
        if self.policy:
            self.epoch_key = driver_key(self.policy.get("driver"))
        self.begin_epoch(snap[-1] if snap else None, initial=True)
        if self.policy:
            self.promise((self.policy.get("upgrade") or {}).get("next"))
        for r in rest:
            self.step(r)
        if self.o.expect_version is not None:
            self.final(rest[-1] if rest else (snap[-1] if snap else {}))
        return self.violations

    def nodes_of(self, r):
        if r.get("kind") == "Node":
            return [r.get("name")]
        if r.get("kind") == "Pod" and r.get("node"):
            return [r.get("node")]
        return []

    def step(self, r):
        k = r.get("kind")
        if k == "Node" and not self.sel(r.get("name")):
            return
        if k == "Pod" and r.get("node") and not self.sel(r.get("node")):
            return
        prev_unavail = self.unavailable_set()
        if k == "Node":
            prev = self.nodes.get(r["name"])
        elif k == "Pod":
            prev = self.pods.get(r["uid"])
        else:
            prev = self.policy
        new_epoch = False
        if k == "GpuPolicy" and r.get("ev") != "DELETED":
            key = driver_key(r.get("driver"))
            if self.epoch_key is None:
                self.epoch_key = key
            elif key != self.epoch_key:
                self.epoch_key = key
                new_epoch = True
        # checks that look at the state just before the change
        if k == "Pod":
            self.check_pod(prev, r)
        self.apply(r)
        for n in self.nodes_of(r):
            self.note(n, r)
        if new_epoch:
            self.begin_epoch(r)
        if k == "GpuPolicy" and r.get("ev") != "DELETED":
            nxt = (r.get("upgrade") or {}).get("next")
            self.promise(nxt)
        if k == "Node":
            self.check_node(prev, r)
        if k == "Pod":
            self.check_replaced(r)
        self.check_moment(r, prev_unavail)

    # --- per-record checks ------------------------------------------------------
    def check_node(self, prev, r):
        n = r["name"]
        if r.get("ev") == "DELETED":
            self.hand.discard(n)
            self.baseline.discard(n)
            return
        if prev is None:
            # a node added now: unavailable until its driver first is Ready
            self.baseline.add(n)
            if r.get("unschedulable") and CORDON_MARK not in (r.get("ann") or {}):
                self.hand.add(n)
            return
        ps, s = prev.get("state"), r.get("state")
        ann = r.get("ann") or {}
        # hand cordon: cordoned while not in the upgrade and without gpuop's mark
        if r.get("unschedulable") and not prev.get("unschedulable"):
            if CORDON_MARK not in ann and s not in IN_PROGRESS and s != FAILED:
                self.hand.add(n)
                self.baseline.add(n)
        if prev.get("unschedulable") and not r.get("unschedulable") and n in self.hand:
            self.violate("hand-cordon", r, "node %s, cordoned by hand, was uncordoned" % n, [n])
            self.hand.discard(n)
        # failures
        if s == FAILED or FAILED_MARK in ann:
            self.failed.add(n)
        elif n in self.failed and FAILED_MARK not in ann and s != FAILED:
            self.failed.discard(n)  # cleared (the documented command) or rolled forward
        if s == ps:
            self.check_paused_kept(r)
            return
        # a node enters the upgrade
        if s in IN_PROGRESS and ps not in IN_PROGRESS:
            if ps == FAILED:
                pass  # rollback after a failure: not a new start
            else:
                self.node_starts(r, n, prev)
        # never backwards along the sequence (upgrade-done of an earlier
        # driver spec may go anywhere: a new upgrade)
        if ps in RANK and s in RANK and RANK[s] < RANK[ps] and s != "upgrade-required" and ps != DONE:
            self.violate("order", r, "node %s went back from %s to %s" % (n, ps, s), [n])
        if s == DONE:
            self.done_t[n] = r.get("t")
            self.check_restored(r, n)
        self.check_paused_kept(r)

    def promise(self, nxt):
        if nxt and (not self.promises or self.promises[-1] != list(nxt)):
            self.promises.append(list(nxt))
            del self.promises[:-PROMISES]

    def node_starts(self, r, n, prev):
        if n in self.hand:
            self.violate("hand-cordon", r, "node %s, cordoned by hand, entered the upgrade (%s)" % (n, r.get("state")), [n])
        others = sorted(self.failed - {n})
        if others:
            self.violate("stop", r, "node %s started (%s) after %s failed" % (n, r.get("state"), ", ".join(others)),
                         [n] + others)
        cands = [[x for x in p if x not in self.started] for p in self.promises]
        cands = [c for c in cands if c]
        if cands and not any(c[0] == n for c in cands):
            c = cands[-1]
            self.violate("order", r, "node %s started, but the status promised %s next (next: %s)"
                         % (n, c[0], ", ".join(c)), [n, c[0]])
        if self.o.name_order and self.started and max(self.started) > n:
            self.violate("order", r, "node %s started after %s (--name-order)" % (n, max(self.started)),
                         [n, max(self.started)])
        if n not in self.started:
            self.started.append(n)
        self.start_t.setdefault(n, r.get("t"))
        # the labels from before it started: the node's previous record
        self.before[n] = {k: v for k, v in (prev.get("deploy") or {}).items() if k not in NOT_DEPENDENTS}
        self.unsched_before[n] = bool(prev.get("unschedulable")) and CORDON_MARK not in (prev.get("ann") or {})

    def check_restored(self, r, n):
        want = self.before.get(n)
        now = self.dependents(n)
        if want is not None and now != want:
            self.violate("dependents", r, "node %s is upgrade-done with deploy labels %s, before the upgrade %s"
                         % (n, json.dumps(now, sort_keys=True), json.dumps(want, sort_keys=True)), [n])
        if r.get("unschedulable") and not self.unsched_before.get(n, False) and n not in self.hand:
            self.violate("dependents", r, "node %s is upgrade-done but still cordoned" % n, [n])
        ann = r.get("ann") or {}
        left = [a for a in (CORDON_MARK, PAUSED_MARK) if a in ann]
        if left:
            self.violate("dependents", r, "node %s is upgrade-done with %s left" % (n, ", ".join(left)), [n])

    def check_paused_kept(self, r):
        n = r["name"]
        if n not in self.replacing:
            return
        want = self.before.get(n, {})
        bad = sorted(k for k, v in self.dependents(n).items() if want.get(k, "true") == "true" and v != PAUSED)
        if bad:
            self.violate("dependents", r, "node %s: deploy labels %s restored before a new driver pod was Ready"
                         % (n, ", ".join(bad)), [n])
            del self.replacing[n]

    def check_pod(self, prev, r):
        """A driver pod deleted (deletionTimestamp set, or gone without one)."""
        if r.get("component") != "driver":
            return
        n = r.get("node")
        if not n or n not in self.nodes:
            return
        was_deleting = prev is not None and prev.get("deleting")
        now_deleting = r.get("ev") == "DELETED" or r.get("deleting")
        if prev is None or was_deleting or not now_deleting:
            return
        nr = self.nodes[n]
        s = nr.get("state")
        if n in self.hand:
            self.violate("hand-cordon", r, "driver pod %s deleted on node %s, cordoned by hand" % (r["name"], n), [n])
        if not nr.get("unschedulable") or (s not in IN_PROGRESS and s != FAILED):
            self.violate("order", r, "driver pod %s deleted on node %s, which is %s (state %s)"
                         % (r["name"], n, "cordoned" if nr.get("unschedulable") else "not cordoned", s), [n])
        if s in IN_PROGRESS and (nr.get("ann") or {}).get(ENABLED_MARK) != "true":
            self.violate("manager", r, "driver pod %s deleted on node %s (state %s) without %s=true: its "
                         "driver manager would evict GPU pods itself" % (r["name"], n, s, ENABLED_MARK), [n])
        running = self.gpu_pods_running(n)
        if running:
            self.violate("gpu-pod", r, "driver pod %s deleted on node %s while GPU pods still run there: %s"
                         % (r["name"], n, ", ".join(running)), [n])
        want = self.before.get(n, self.dependents(n))
        bad = sorted(k for k, v in self.dependents(n).items() if want.get(k, v) in ("true", PAUSED) and v != PAUSED)
        if bad:
            self.violate("dependents", r, "driver pod %s deleted on node %s with deploy labels not paused: %s"
                         % (r["name"], n, ", ".join("%s=%s" % (k, self.dependents(n)[k]) for k in bad)), [n])
        deps = sorted("%s/%s" % (p["ns"], p["name"]) for p in self.pods.values()
                      if p.get("node") == n and p.get("ns") == r.get("ns") and p.get("component") not in (None, "driver")
                      and p["uid"] != r["uid"])
        if deps:
            self.violate("dependents", r, "driver pod %s deleted on node %s while dependent operand pods remain: %s"
                         % (r["name"], n, ", ".join(deps)), [n])
        self.replacing[n] = r["uid"]

    def check_replaced(self, r):
        n = r.get("node")
        if n in self.replacing and r.get("component") == "driver" and r.get("ready") and not r.get("deleting") \
                and r.get("ev") != "DELETED" and r.get("uid") != self.replacing[n]:
            del self.replacing[n]

    def check_moment(self, r, prev_unavail):
        for spec in getattr(self.o, "min_ready", None) or []:
            where, want = spec.rsplit("=", 1)
            ns, prefix = where.split("/", 1)
            ready = sorted(p["name"] for p in self.pods.values() if p.get("ns") == ns and p["name"].startswith(prefix)
                           and p.get("ready") and not p.get("deleting"))
            armed = self.armed.setdefault(spec, len(ready) >= int(want))
            if not armed and len(ready) >= int(want):
                self.armed[spec] = True
            elif armed and len(ready) < int(want):
                nodes = sorted({p.get("node") for p in self.pods.values() if p.get("ns") == ns
                                and p["name"].startswith(prefix) and p.get("node")})
                self.violate("pdb", r, "%d Ready pods %s/%s* (at least %s): %s" % (len(ready), ns, prefix, want,
                             ", ".join(ready)), [n for n in nodes if n == r.get("node") or n == r.get("name")])
        mp = self.max_parallel()
        ip = self.in_progress()
        if mp > 0 and len(ip) > mp:
            self.violate("parallel", r, "%d nodes in the upgrade at once (maxParallelUpgrades %d): %s"
                         % (len(ip), mp, ", ".join("%s=%s" % (n, self.nodes[n].get("state")) for n in ip)), ip)
        now = self.unavailable_set()
        # a baseline node that is available again leaves the baseline
        self.baseline -= {n for n in self.baseline if n in self.nodes and n not in now}
        entered = sorted(n for n in now - prev_unavail if n not in self.baseline)
        if entered:
            m = self.max_unavailable()
            if len(now) > m:
                self.violate("unavailable", r, "node %s became unavailable with %d of %d GPU nodes unavailable "
                             "(maxUnavailable %d): %s" % (", ".join(entered), len(now), len(self.gpu_nodes()), m,
                                                          ", ".join(sorted(now))), sorted(now))

    def final(self, last):
        v = self.o.expect_version
        for n in sorted(self.gpu_nodes()):
            if not self.managed(n) or n in self.hand or n in (self.o.exempt or []):
                continue
            nr = self.nodes[n]
            probs = []
            if nr.get("state") != DONE:
                probs.append("state %s" % nr.get("state"))
            pods = [p for p in self.driver_pods(n) if not p.get("deleting")]
            good = [p for p in pods if p.get("ready") and tag_has(p.get("image"), v)]
            if not good:
                probs.append("no Ready driver pod at %s (%s)" % (v, ", ".join(
                    "%s %s ready=%s" % (p["name"], p.get("image"), p.get("ready")) for p in pods) or "none"))
            if nr.get("unschedulable") and not self.unsched_before.get(n, False):
                probs.append("cordoned")
            paused = sorted(k for k, x in (nr.get("deploy") or {}).items() if x == PAUSED)
            if paused:
                probs.append("deploy labels paused: %s" % ", ".join(paused))
            marks = [a for a in (CORDON_MARK, PAUSED_MARK, FAILED_MARK, ENABLED_MARK) if a in (nr.get("ann") or {})]
            if marks:
                probs.append("marks left: %s" % ", ".join(marks))
            if probs:
                self.violate("final", last, "node %s at the end: %s" % (n, "; ".join(probs)), [n])

    def stats(self):
        per = {}
        for n, t0 in self.start_t.items():
            t1 = self.done_t.get(n)
            per[n] = None if t1 is None else round(t1 - t0, 3)
        done = [x for x in per.values() if x is not None]
        ends = [t for t in self.done_t.values() if t]
        return {"nodes_started": len(self.start_t), "nodes_done": len(done),
                "node_seconds_mean": round(sum(done) / len(done), 3) if done else None,
                "node_seconds_max": max(done) if done else None,
                "first_start_to_last_done_s": round(max(ends) - min(self.start_t.values()), 3) if ends else None,
                "per_node": per}


def tag_has(image, version):
    if not image:
        return False
    tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
    return tag == version or tag.startswith(version + "-")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("timeline")
    ap.add_argument("--expect-version", help="every managed GPU node ends upgrade-done at this driver version")
    ap.add_argument("--exempt", action="append", default=[], help="node left out of --expect-version")
    ap.add_argument("--max-parallel", type=int, help="instead of the policy's maxParallelUpgrades")
    ap.add_argument("--max-unavailable", help="instead of the policy's maxUnavailable (N or N%%)")
    ap.add_argument("--nodes-prefix", default="", help="only nodes whose name starts so")
    ap.add_argument("--name-order", action="store_true", help="nodes also start in the order of their names")
    ap.add_argument("--min-ready", action="append", default=[], metavar="NS/PREFIX=N",
                    help="at every moment at least N Ready pods named PREFIX* in NS (a PDB held)")
    ap.add_argument("--stats", help="write per-node upgrade times (JSON) here")
    a = ap.parse_args(argv)
    snap, rest = load(a.timeline)
    c = Checker(a)
    vs = c.run(snap, rest)
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump(c.stats(), f, indent=1, sort_keys=True)
    for v in vs:
        print(v)
    print("upgrade_check: %d records, %d violations%s" % (len(snap) + len(rest), len(vs),
          "" if not vs else " (" + ", ".join(sorted({v.inv for v in vs})) + ")"), file=sys.stderr)
    return 1 if vs else 0


if __name__ == "__main__":
    sys.exit(main())
