#!/usr/bin/env python3
"""upgrade_check_test.py - tests of the upgrade invariant checker
(upgrade_check.py) on small hand-written timelines: a clean upgrade of three
nodes passes, and each invariant is broken once by a small change to it,
which the checker must name. Run by CTest (test/CMakeLists.txt,
unit/upgrade_check); standard library only.
"""
import contextlib
import copy
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import upgrade_check  # noqa: E402

OLD, NEW = "580.95.05", "595.91.07"
DEPS = {"driver": "true", "device-plugin": "true", "operator-validator": "true"}
P = upgrade_check.PAUSED
MARK = upgrade_check.CORDON_MARK


class Timeline:
    """Builds records like upgrade_timeline.py writes them, one rv each."""

    def __init__(self, nodes=("a", "b", "c"), upgrade_policy=None, gpu_pods=True):
        self.rv = 100
        self.t = 1000.0
        self.snap = []
        self.recs = []
        self.objs = {}
        self.uid = 0
        self.live = False
        self.policy = {"kind": "GpuPolicy", "name": "p", "generation": 1,
                       "driver": {"version": OLD, "upgradePolicy": upgrade_policy or {}}, "upgrade": None}
        self.put(("GpuPolicy", "p"), self.policy)
        for n in nodes:
            self.put(("Node", n), {"kind": "Node", "name": n, "state": None, "deploy": dict(DEPS),
                                   "labels": {"nvidia.com/gpu.present": "true"}, "unschedulable": False,
                                   "ann": {}, "gpus": 8})
            self.pod(n, "driver", OLD)
            self.pod(n, "device-plugin")
            if gpu_pods:
                self.pod(n, None, gpu=1, ns="team", name="job-" + n)
        self.live = True

    def emit(self, ev, obj):
        self.rv += 1
        self.t += 0.1
        r = dict(obj, rv=self.rv, t=self.t, ev=ev if self.live else "LIST")
        (self.recs if self.live else self.snap).append(r)

    def put(self, key, obj, ev=None):
        self.objs[key] = obj
        self.emit(ev or ("MODIFIED" if self.live else "LIST"), obj)

    def node(self, n, **kw):
        o = copy.deepcopy(self.objs[("Node", n)])
        for k, v in kw.items():
            if k == "deploy":
                o["deploy"].update(v)
            elif k == "ann":
                for ak, av in v.items():
                    if av is None:
                        o["ann"].pop(ak, None)
                    else:
                        o["ann"][ak] = av
            else:
                o[k] = v
        self.put(("Node", n), o)

    def pod(self, n, component, version=None, gpu=0, ns="gpuop-system", name=None, ready=True):
        self.uid += 1
        name = name or "%s-%s-%d" % (component, n, self.uid)
        o = {"kind": "Pod", "ns": ns, "name": name, "uid": "u%d" % self.uid, "node": n, "phase": "Running",
             "ready": ready, "deleting": False, "component": component, "owner": None,
             "image": "nvcr.io/nvidia/driver:%s-ubuntu24.04" % version if version else "x:1", "rev": None,
             "gen": None, "gpu": gpu, "waiting": None, "restarts": 0}
        self.put(("Pod", o["uid"]), o, "ADDED")
        return o["uid"]

    def find(self, n, component=None, gpu=False):
        for (k, uid), o in self.objs.items():
            if k == "Pod" and o["node"] == n and (o["gpu"] > 0 if gpu else o["component"] == component):
                return uid
        raise KeyError((n, component, gpu))

    def pod_set(self, uid, **kw):
        o = dict(self.objs[("Pod", uid)], **kw)
        self.put(("Pod", uid), o)

    def pod_gone(self, uid, graceful=True):
        if graceful:
            self.pod_set(uid, deleting=True)
        o = self.objs.pop(("Pod", uid))
        self.emit("DELETED", o)

    def set_policy(self, **kw):
        self.policy = copy.deepcopy(self.policy)
        for k, v in kw.items():
            if k == "version":
                self.policy["driver"]["version"] = v
            elif k == "next":
                self.policy["upgrade"] = {"next": v}
            else:
                self.policy[k] = v
        self.put(("GpuPolicy", "p"), self.policy)

    # --- the clean steps of one node ------------------------------------------
    def start(self, n):
        self.node(n, state="cordon-required", ann={upgrade_check.ENABLED_MARK: "true"})

    def cordon(self, n):
        self.node(n, unschedulable=True, ann={MARK: "true"})
        self.node(n, state="wait-for-jobs-required")
        self.node(n, state="pod-deletion-required")

    def evict(self, n):
        try:
            self.pod_gone(self.find(n, gpu=True))
        except KeyError:
            pass

    def pause(self, n):
        self.node(n, deploy={"device-plugin": P, "operator-validator": P},
                  ann={upgrade_check.PAUSED_MARK: '{"nvidia.com/gpu.deploy.device-plugin":"true"}'})
        self.pod_gone(self.find(n, "device-plugin"))

    def restart(self, n, version=NEW):
        self.node(n, state="pod-restart-required")
        self.pod_gone(self.find(n, "driver"))
        uid = self.pod(n, "driver", version, ready=False)
        self.pod_set(uid, ready=True)
        self.node(n, state="validation-required")

    def restore(self, n):
        self.node(n, deploy={"device-plugin": "true", "operator-validator": "true"},
                  ann={upgrade_check.PAUSED_MARK: None})
        self.pod(n, "device-plugin")

    def uncordon(self, n):
        self.node(n, state="uncordon-required")
        self.node(n, unschedulable=False, ann={MARK: None})
        self.node(n, state="upgrade-done", ann={upgrade_check.ENABLED_MARK: None})

    def upgrade_node(self, n, skip=()):
        for step in ("start", "cordon", "evict", "pause", "restart", "restore", "uncordon"):
            if step not in skip:
                getattr(self, step)(n)

    def begin(self, order=("a", "b", "c")):
        self.set_policy(version=NEW)
        for n in order:
            self.node(n, state="upgrade-required")
        self.set_policy(next=list(order))

    def clean(self, order=("a", "b", "c")):
        self.begin(order)
        for i, n in enumerate(order):
            self.upgrade_node(n)
            self.set_policy(next=list(order[i + 1:]))
        return self

    def check(self, *args):
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        with os.fdopen(fd, "w") as f:
            for r in self.snap:
                f.write(json.dumps(r) + "\n")
            f.write(json.dumps({"kind": "synced", "t": self.t}) + "\n")
            for r in self.recs:
                f.write(json.dumps(r) + "\n")
        try:
            snap, rest = upgrade_check.load(path)
            a = upgrade_check_args(list(args))
            return upgrade_check.Checker(a).run(snap, rest)
        finally:
            os.unlink(path)


def upgrade_check_args(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect-version")
    ap.add_argument("--exempt", action="append", default=[])
    ap.add_argument("--max-parallel", type=int)
    ap.add_argument("--max-unavailable")
    ap.add_argument("--nodes-prefix", default="")
    ap.add_argument("--name-order", action="store_true")
    ap.add_argument("--min-ready", action="append", default=[])
    return ap.parse_args(argv)


class TestChecker(unittest.TestCase):
    def invs(self, vs):
        return sorted({v.inv for v in vs})

    def assertOnly(self, vs, inv):
        self.assertTrue(vs, "the checker found nothing; wanted %s" % inv)
        self.assertEqual([inv], self.invs(vs), "\n".join(str(v) for v in vs))

    def assertClean(self, vs):
        self.assertEqual([], vs, "\n".join(str(v) for v in vs))

    # --- clean timelines ------------------------------------------------------
    def test_clean_upgrade_passes(self):
        self.assertClean(Timeline().clean().check("--expect-version", NEW, "--name-order"))

    def test_clean_parallel_passes(self):
        tl = Timeline(upgrade_policy={"maxParallelUpgrades": 2, "maxUnavailable": 2})
        tl.begin()
        tl.start("a")
        tl.start("b")
        for n in ("a", "b"):
            tl.cordon(n)
        for n in ("a", "b"):
            for s in ("evict", "pause", "restart", "restore", "uncordon"):
                getattr(tl, s)(n)
        tl.upgrade_node("c")
        self.assertClean(tl.check("--expect-version", NEW))

    def test_clean_failure_and_rollback_passes(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("restart", "restore", "uncordon"))
        tl.node("a", state="pod-restart-required")
        tl.pod_gone(tl.find("a", "driver"))
        uid = tl.pod("a", "driver", NEW, ready=False)
        tl.pod_set(uid, waiting="CrashLoopBackOff", restarts=3)
        tl.node("a", state="upgrade-failed", ann={upgrade_check.FAILED_MARK: "2 CrashLoopBackOff"})
        # rollback: the old driver back, labels restored, uncordoned
        tl.pod_gone(uid)
        uid = tl.pod("a", "driver", OLD, ready=False)
        tl.pod_set(uid, ready=True)
        tl.restore("a")
        tl.node("a", unschedulable=False, ann={MARK: None})
        self.assertClean(tl.check())
        # and a final check at the new version names the three nodes not there
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "final")
        self.assertEqual(3, len(vs))

    def test_hand_cordoned_node_left_alone_passes(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 2})
        tl.node("c", unschedulable=True)
        tl.begin(order=("a", "b"))
        for i, n in enumerate(("a", "b")):
            tl.upgrade_node(n)
        self.assertClean(tl.check("--expect-version", NEW))

    # --- each invariant broken ------------------------------------------------
    def test_parallel(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 3})
        tl.begin()
        tl.start("a")
        tl.start("b")  # a is still in the upgrade
        tl.upgrade_node("a", skip=("start",))
        tl.upgrade_node("b", skip=("start",))
        tl.upgrade_node("c")
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "parallel")
        self.assertIn("2 nodes in the upgrade at once", str(vs[0]))
        self.assertIn("a=cordon-required", str(vs[0]))

    def test_unavailable(self):
        tl = Timeline(upgrade_policy={"maxParallelUpgrades": 2, "maxUnavailable": 1})
        tl.begin()
        tl.start("a")
        tl.start("b")
        tl.cordon("a")
        tl.cordon("b")  # two cordoned, one allowed
        for n in ("a", "b"):
            for s in ("evict", "pause", "restart", "restore", "uncordon"):
                getattr(tl, s)(n)
        tl.upgrade_node("c")
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "unavailable")
        self.assertIn("node b became unavailable with 2 of 3", str(vs[0]))

    def test_unavailable_counts_those_before(self):
        # c was cordoned by hand before: a cordoned makes 2 with a budget of 1
        tl = Timeline(upgrade_policy={"maxUnavailable": 1})
        tl.node("c", unschedulable=True)
        tl.begin(order=("a", "b"))
        tl.upgrade_node("a")
        vs = tl.check()
        self.assertOnly(vs, "unavailable")
        self.assertIn("node a became unavailable", str(vs[0]))

    def test_unavailable_counts_driver_not_ready(self):
        # b's driver is not Ready (a node unavailable without a cordon)
        tl = Timeline(upgrade_policy={"maxUnavailable": 1})
        tl.pod_set(tl.find("b", "driver"), ready=False)
        tl.begin(order=("a",))
        tl.upgrade_node("a")
        vs = tl.check()
        self.assertOnly(vs, "unavailable")

    def test_gpu_pod_running(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("evict",))  # the job still runs
        vs = tl.check()
        self.assertOnly(vs, "gpu-pod")
        self.assertIn("team/job-a", str(vs[0]))
        self.assertIn("driver pod driver-a-", str(vs[0]))

    def test_gpu_pod_terminating_counts(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("evict", "restart", "restore", "uncordon"))
        tl.pod_set(tl.find("a", gpu=True), deleting=True)  # evicted, not gone yet
        tl.restart("a")
        vs = tl.check()
        self.assertOnly(vs, "gpu-pod")

    def test_gpu_pod_succeeded_is_fine(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("evict", "restart", "restore", "uncordon"))
        tl.pod_set(tl.find("a", gpu=True), phase="Succeeded")
        for s in ("restart", "restore", "uncordon"):
            getattr(tl, s)("a")
        self.assertClean(tl.check())

    def test_order_against_status(self):
        tl = Timeline()
        tl.begin(order=("a", "b", "c"))
        tl.upgrade_node("b")  # the status promised a
        vs = tl.check()
        self.assertOnly(vs, "order")
        self.assertIn("status promised a next", str(vs[0]))

    def test_order_status_written_before_the_label(self):
        # the plan that starts a lists it no more in next, and its status
        # lands before a's label; with two at once, b too
        tl = Timeline(upgrade_policy={"maxParallelUpgrades": 2, "maxUnavailable": 2})
        tl.begin(order=("a", "b", "c"))
        tl.set_policy(next=["c"])
        tl.start("a")
        tl.start("b")
        for n in ("a", "b"):
            tl.cordon(n)
        for n in ("a", "b"):
            for s in ("evict", "pause", "restart", "restore", "uncordon"):
                getattr(tl, s)(n)
        tl.upgrade_node("c")
        self.assertClean(tl.check())

    def test_order_by_name(self):
        tl = Timeline()
        tl.set_policy(version=NEW)
        tl.upgrade_node("b")
        tl.upgrade_node("a")
        self.assertClean(tl.check())
        self.assertOnly(tl.check("--name-order"), "order")

    def test_order_driver_replaced_before_cordon(self):
        tl = Timeline()
        tl.begin()
        tl.start("a")
        tl.evict("a")
        tl.pause("a")
        tl.restart("a")  # not cordoned
        vs = tl.check()
        self.assertOnly(vs, "order")
        self.assertIn("not cordoned", str(vs[0]))

    def test_order_driver_replaced_outside_upgrade(self):
        tl = Timeline()
        tl.set_policy(version=NEW)
        tl.node("a", unschedulable=True, ann={MARK: "true"})
        tl.evict("a")
        tl.pause("a")
        tl.pod_gone(tl.find("a", "driver"))  # no state label at all
        vs = tl.check()
        self.assertEqual(["order"], self.invs(vs))

    def test_done_to_any_state_is_a_new_upgrade(self):
        tl = Timeline()
        for n in ("a", "b", "c"):
            tl.node(n, state="upgrade-done")
        tl.set_policy(version=NEW)
        tl.upgrade_node("a")  # upgrade-done -> cordon-required
        self.assertClean(tl.check())

    def test_order_state_backwards(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("uncordon",))
        tl.node("a", state="pod-deletion-required")
        tl.uncordon("a")
        vs = tl.check()
        self.assertOnly(vs, "order")
        self.assertIn("went back from validation-required to pod-deletion-required", str(vs[0]))

    def test_manager_not_told(self):
        tl = Timeline()
        tl.begin()
        tl.start("a")
        tl.node("a", ann={upgrade_check.ENABLED_MARK: None})
        tl.upgrade_node("a", skip=("start",))
        vs = tl.check()
        self.assertOnly(vs, "manager")
        self.assertIn("without nvidia.com/gpu-driver-upgrade-enabled=true", str(vs[0]))

    def test_manager_mark_left(self):
        tl = Timeline().clean()
        tl.node("a", ann={upgrade_check.ENABLED_MARK: "true"})
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "final")
        self.assertIn("marks left: nvidia.com/gpu-driver-upgrade-enabled", str(vs[0]))

    def test_dependents_not_paused(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("pause", "restore"))
        vs = tl.check()
        self.assertOnly(vs, "dependents")
        self.assertIn("not paused: device-plugin=true, operator-validator=true", str(vs[0]))

    def test_dependents_pod_remains(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("pause", "restart", "restore", "uncordon"))
        tl.node("a", deploy={"device-plugin": P, "operator-validator": P})
        tl.restart("a")  # the device plugin pod still on the node
        vs = tl.check()
        self.assertOnly(vs, "dependents")
        self.assertIn("dependent operand pods remain: gpuop-system/device-plugin-a", str(vs[0]))

    def test_dependents_restored_too_early(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("restart", "restore", "uncordon"))
        tl.node("a", state="pod-restart-required")
        tl.pod_gone(tl.find("a", "driver"))
        uid = tl.pod("a", "driver", NEW, ready=False)
        tl.restore("a")  # before the new driver is Ready
        tl.pod_set(uid, ready=True)
        tl.node("a", state="validation-required")
        tl.uncordon("a")
        vs = tl.check()
        self.assertOnly(vs, "dependents")
        self.assertIn("restored before a new driver pod was Ready", str(vs[0]))

    def test_dependents_not_restored(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("restore",))
        vs = tl.check()
        self.assertOnly(vs, "dependents")
        self.assertIn("upgrade-done with deploy labels", str(vs[0]))

    def test_done_but_cordoned(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("uncordon",))
        tl.node("a", state="uncordon-required")
        tl.node("a", state="upgrade-done")
        vs = tl.check()
        self.assertOnly(vs, "dependents")
        self.assertIn("still cordoned", str(vs[0]))

    def test_hand_cordon_uncordoned(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 2})
        tl.node("c", unschedulable=True)
        tl.begin(order=("a", "b"))
        tl.upgrade_node("a")
        tl.upgrade_node("b")
        tl.node("c", unschedulable=False)
        vs = tl.check()
        self.assertOnly(vs, "hand-cordon")
        self.assertIn("node c, cordoned by hand, was uncordoned", str(vs[0]))

    def test_hand_cordon_touched(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 2})
        tl.node("c", unschedulable=True)
        tl.begin(order=("a", "b", "c"))
        tl.upgrade_node("a")
        tl.upgrade_node("b")
        tl.start("c")
        vs = tl.check()
        self.assertOnly(vs, "hand-cordon")
        self.assertIn("entered the upgrade", str(vs[0]))

    def test_hand_cordon_mid_upgrade(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 2})
        tl.begin(order=("a", "b"))
        tl.upgrade_node("a")
        tl.node("b", unschedulable=True)  # by hand, before gpuop reached it
        tl.node("b", unschedulable=False)
        vs = tl.check()
        self.assertOnly(vs, "hand-cordon")

    def test_stop_after_failure(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a", skip=("restart", "restore", "uncordon"))
        tl.node("a", state="pod-restart-required")
        tl.pod_gone(tl.find("a", "driver"))
        uid = tl.pod("a", "driver", NEW, ready=False)
        tl.pod_set(uid, waiting="CrashLoopBackOff")
        tl.node("a", state="upgrade-failed", ann={upgrade_check.FAILED_MARK: "2 crash"})
        tl.start("b")
        vs = tl.check()
        self.assertIn("stop", self.invs(vs))
        self.assertIn("node b started (cordon-required) after a failed", "\n".join(map(str, vs)))

    def test_stop_cleared_then_continues(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 2})
        tl.begin(order=("a", "b"))
        tl.node("a", state="upgrade-failed", ann={upgrade_check.FAILED_MARK: "2 crash"})
        tl.node("a", state="upgrade-required", ann={upgrade_check.FAILED_MARK: None})
        tl.upgrade_node("a")
        tl.upgrade_node("b")
        self.assertClean(tl.check())

    def test_pdb(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a")
        self.assertClean(tl.check("--min-ready", "team/job-=2"))
        # two jobs go at once: one Ready left of the two the budget keeps
        tl.pod_set(tl.find("b", gpu=True), ready=False)
        tl.pod_set(tl.find("c", gpu=True), deleting=True)
        vs = tl.check("--min-ready", "team/job-=2")
        self.assertOnly(vs, "pdb")
        self.assertIn("1 Ready pods team/job-* (at least 2): job-c", str(vs[0]))

    def test_final(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a")
        tl.upgrade_node("b")
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "final")
        self.assertIn("node c at the end: state upgrade-required; no Ready driver pod at " + NEW, str(vs[0]))
        self.assertClean(tl.check("--expect-version", NEW, "--exempt", "c"))

    def test_final_wrong_version(self):
        tl = Timeline()
        tl.begin()
        tl.upgrade_node("a")
        tl.upgrade_node("b")
        tl.start("c")
        tl.cordon("c")
        tl.evict("c")
        tl.pause("c")
        tl.restart("c", version=OLD)
        tl.restore("c")
        tl.uncordon("c")
        vs = tl.check("--expect-version", NEW)
        self.assertOnly(vs, "final")
        self.assertIn("no Ready driver pod at %s (driver-c-" % NEW, str(vs[0]))

    def test_new_node_during_upgrade_is_not_unavailable_breach(self):
        tl = Timeline(upgrade_policy={"maxUnavailable": 1})
        tl.begin(order=("a", "b", "c"))
        tl.start("a")
        tl.cordon("a")
        tl.put(("Node", "d"), {"kind": "Node", "name": "d", "state": None, "deploy": dict(DEPS),
                               "labels": {"nvidia.com/gpu.present": "true"}, "unschedulable": False,
                               "ann": {}, "gpus": 8}, "ADDED")
        tl.pod("d", "driver", NEW)
        tl.node("d", state="upgrade-done")
        for s in ("evict", "pause", "restart", "restore", "uncordon"):
            getattr(tl, s)("a")
        self.assertClean(tl.check())

    def test_cli_exit_codes(self):
        tl = Timeline().clean()
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        with os.fdopen(fd, "w") as f:
            for r in tl.snap:
                f.write(json.dumps(r) + "\n")
            f.write('{"kind": "synced"}\n')
            for r in tl.recs:
                f.write(json.dumps(r) + "\n")
            f.write('{"truncated')  # a line cut by a kill
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(0, upgrade_check.main([path, "--expect-version", NEW]))
                self.assertEqual(1, upgrade_check.main([path, "--expect-version", "999.1"]))
        finally:
            os.unlink(path)


if __name__ == "__main__":
    unittest.main(verbosity=1)
