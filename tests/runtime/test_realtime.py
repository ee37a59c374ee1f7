"""Real-time scheduling of the control path: applied to every thread, refused
with a report, and a runaway real-time loop dropped back to normal scheduling.

Each case runs in a child process (a real-time test process would be a
hazard to the rest of the suite)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time

import pytest

from teledora.models.config_files import load_scheduling_config
from teledora.operators.dataflow.node_scheduling import NodeScheduling, SchedulingConfig, SchedulingConfigError

DAEMON = {"policy": "fifo", "priority": 85}
CAN_RT = os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_RTPRIO)[0] > 0
needs_rt = pytest.mark.skipif(not CAN_RT, reason="real-time scheduling needs root, CAP_SYS_NICE or RLIMIT_RTPRIO > 0 here")

PRELUDE = """
import json, os, threading, time
from teledora.operators.dataflow.node_scheduling import NodeScheduling
from teledora.runtime.realtime import apply_node_scheduling

os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # start time-shared, as dora starts a node

def policies():
    out = []
    for tid in os.listdir("/proc/self/task"):
        out.append(os.sched_getscheduler(int(tid)))
    return out

stop = threading.Event()
helper = threading.Thread(target=stop.wait, daemon=True)  # a thread started before, as dora's are
helper.start()
"""


def run_child(body: str, timeout_s: float = 60.0) -> dict:
    code = PRELUDE + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_rt
def test_every_thread_of_the_process_runs_fifo_at_its_priority_and_children_of_threads_too():
    got = run_child("""
        report = apply_node_scheduling(NodeScheduling("fifo", 10), 500.0)
        later = threading.Thread(target=lambda: None)
        later.start(); later.join()
        print(json.dumps({"report": report.as_details(), "threads": report.threads, "policies": policies(),
                          "priority": os.sched_getparam(0).sched_priority}))
    """)
    assert got["report"] == {"wanted": "fifo 10", "applied": "fifo 10", "problem": "", "demoted": False}
    assert got["threads"] >= 2
    assert set(got["policies"]) == {os.SCHED_FIFO} and got["priority"] == 10


@needs_rt
def test_a_real_time_loop_that_never_waits_is_dropped_to_normal_scheduling_by_its_cpu_budget():
    got = run_child("""
        seen = []
        report = apply_node_scheduling(NodeScheduling("fifo", 5), 30.0, on_change=lambda r: seen.append(r.problem))
        t0 = time.process_time()
        while not report.demoted and time.process_time() - t0 < 5.0:
            pass  # a runaway loop: never blocks, never waits for input
        print(json.dumps({"report": report.as_details(), "seen": seen, "policies": policies(),
                          "cpu_s": time.process_time() - t0}))
    """)
    assert got["report"]["demoted"] is True and got["report"]["applied"] == "normal"
    assert "CPU budget ran out" in got["seen"][0]
    assert set(got["policies"]) == {os.SCHED_OTHER}
    assert got["cpu_s"] < 5.0  # demoted long before the test's own bound


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is shown by dropping root in a child, which needs root")
def test_a_refused_policy_is_reported_and_the_process_runs_on_unprioritised():
    got = run_child("""
        import resource
        resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
        os.setuid(65534)  # nobody: no CAP_SYS_NICE, no real-time priority allowed
        report = apply_node_scheduling(NodeScheduling("rr", 50), 200.0)
        print(json.dumps({"report": report.as_details(), "policies": policies()}))
    """)
    assert got["report"]["applied"] == "normal" and not got["report"]["demoted"]
    assert got["report"]["problem"].startswith("cannot run under SCHED_RR 50")
    assert set(got["policies"]) == {os.SCHED_OTHER}


def test_no_scheduling_wanted_changes_nothing():
    got = run_child("""
        report = apply_node_scheduling(None, 200.0)
        print(json.dumps({"report": report.as_details(), "policies": policies()}))
    """)
    assert got["report"]["applied"] == "normal" and got["report"]["problem"] == ""
    assert set(got["policies"]) == {os.SCHED_OTHER}


def test_the_shipped_table_puts_the_actuators_first_and_only_the_control_path_in_real_time():
    table = load_scheduling_config()
    assert table.enabled is False  # opt-in (docs/architecture.md, "Scheduling")
    table = SchedulingConfig(True, table.cpu_budget_ms, table.daemon, table.nodes)
    assert set(table.nodes) == {"xr", "teleop", "arms", "base", "lift"}
    prio = {n: s.priority for n, s in table.nodes.items()}
    assert table.daemon.priority > prio["arms"] == prio["base"] == prio["lift"] > prio["teleop"] > prio["xr"]
    assert table.for_node("recorder") is None and table.for_node("cameras") is None


@pytest.mark.parametrize("bad", [{"policy": "fifo", "priority": 0}, {"policy": "fifo", "priority": 100},
                                 {"policy": "idle", "priority": 10}])
def test_out_of_range_settings_are_refused(bad):
    with pytest.raises(SchedulingConfigError):
        SchedulingConfig.from_mapping({"enabled": True, "cpu_budget_ms": 200, "daemon": DAEMON, "nodes": {"ik": bad}})
    with pytest.raises(SchedulingConfigError):
        SchedulingConfig.from_mapping({"enabled": True, "cpu_budget_ms": 200, "daemon": bad, "nodes": {}})
    with pytest.raises(SchedulingConfigError):
        SchedulingConfig.from_mapping({"enabled": True, "cpu_budget_ms": 0.1, "daemon": DAEMON, "nodes": {}})
    assert SchedulingConfig.from_mapping({"enabled": True, "cpu_budget_ms": 200, "daemon": DAEMON, "nodes": {}}).nodes == {}


def test_a_disabled_table_schedules_nobody():
    table = SchedulingConfig(enabled=False, cpu_budget_ms=200.0, daemon=NodeScheduling("fifo", 85),
                             nodes={"ik": NodeScheduling("fifo", 75)})
    assert table.for_node("ik") is None and table.for_daemon() is None


@needs_rt
def test_dora_s_process_is_moved_whole_and_a_node_it_starts_later_goes_back_to_time_sharing():
    """The router runs above the nodes; a node it spawns inherits that, and
    puts itself back unless the table lists it."""
    from teledora.runtime.realtime import schedule_process

    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, sys, threading, time
        from teledora.runtime.realtime import time_share
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        sys.stdin.readline()                      # moved meanwhile, as dora is
        before = os.sched_getscheduler(0)
        grandchild = os.fork()                    # a node dora starts later
        if grandchild == 0:
            inherited = os.sched_getscheduler(0)
            time_share()
            print(inherited, os.sched_getscheduler(0), flush=True)
            os._exit(0)
        os.waitpid(grandchild, 0)
        print(before, flush=True)
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        report = schedule_process(child.pid, NodeScheduling("fifo", 20))
        policies = {os.sched_getscheduler(int(t)) for t in os.listdir(f"/proc/{child.pid}/task")}
        out, _ = child.communicate("go\n", timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert report.applied == "fifo 20" and report.threads >= 2 and policies == {os.SCHED_FIFO}
    inherited, after, before = (int(v) for v in out.split())
    assert (before, inherited, after) == (os.SCHED_FIFO, os.SCHED_FIFO, os.SCHED_OTHER)
