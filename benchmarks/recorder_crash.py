"""Crash loss of a recording: kill -9 the recorder, or `dora run`, mid-run.

    python benchmarks/recorder_crash.py --kill recorder --after 12
    python benchmarks/recorder_crash.py --kill dora --after 12

Runs the sim dataflow (dataflows/sim.yml, the full graph) under ``dora run``
with a fresh run directory, waits until the recorder has been writing for
``--after`` seconds, notes the host time and sends SIGKILL to the recorder
process (``--kill recorder``) or to ``dora run`` itself (``--kill dora``).
Everything the run directory holds afterwards is read back (it is checked
with the checksums first), and for every topic it prints

- ``loss_s``: kill time minus the send time of the topic's last recorded
  message, an upper bound of the span of messages sent but not on disk;
- ``period_s``: the topic's 95th-percentile spacing (a topic cannot show a loss below
  its own period with this method, so topics slower than the bound are listed
  apart);

and the loss split in two: ``unwritten_s``, kill time minus the receive time
of the last message on disk (what the recorder had received but not yet
written: the part the flush interval bounds), and ``lag_at_kill_s``, how far
that last message's receipt trailed its sending (what was still queued
towards the recorder), and the send time of the newest message on disk
over all topics together (a sender that paused just before the kill, short
of CPU itself, inflates its own topic's ``loss_s`` but not this). Also the recorder's lag behind the senders over the
run (receive minus send time: median / p99 / max). With ``--kill recorder`` the dataflow runs on for ``--linger`` s, then
it is stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO))

from teledora.recording import RunReader  # noqa: E402
from teledora.recording.run_check import check_run  # noqa: E402


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        p = todo.pop()
        for c in _children(p):
            seen.append(c)
            todo.append(c)
    return seen


def recorder_pid(dora_pid: int) -> int | None:
    for pid in descendants(dora_pid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"recording/recorder.py" in cmd or b"recording.recorder" in cmd:
            return pid
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kill", choices=["recorder", "dora"], required=True)
    ap.add_argument("--after", type=float, default=12.0, help="seconds of recording before the kill")
    ap.add_argument("--linger", type=float, default=3.0, help="seconds the dataflow runs on after a recorder kill")
    ap.add_argument("--bound-s", type=float, default=0.5)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="recorder_crash_"))
    run = tmp / "run"
    env = dict(os.environ, MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"), TELEDORA_RUN_DIR=str(run))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    log = open(tmp / "dora.log", "wb")
    proc = subprocess.Popen([str(BIN / "dora"), "run", str(REPO / "dataflows" / "sim.yml")], cwd=REPO, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 240
        while not (run / "manifest.json").exists():
            if time.time() > deadline or proc.poll() is not None:
                print(f"the recorder never started (see {tmp / 'dora.log'})")
                return 2
            time.sleep(0.1)
        time.sleep(args.after)
        victim = recorder_pid(proc.pid) if args.kill == "recorder" else proc.pid
        if victim is None:
            print("recorder process not found")
            return 2
        kill_ns = time.time_ns()
        os.kill(victim, signal.SIGKILL)
        print(f"SIGKILL to {args.kill} (pid {victim}) after {args.after:g} s of recording")
        if args.kill == "recorder":
            time.sleep(args.linger)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        else:
            time.sleep(5.0)  # whatever survives dora's death gets its chance to write
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # our own session: dora run and the nodes it started
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()

    report = check_run(run)
    reader = RunReader(run)
    print(f"run {run}: complete={reader.complete}, checksums {'OK' if report.ok else report.problems[:5]}")
    rows = []
    lags = []
    last_recv = 0
    last_recv_send = 0
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        sends = [d if d is not None else r for d, r in zip(table.column("dora_ns").to_pylist(), table.column("recv_ns").to_pylist())]
        recvs = table.column("recv_ns").to_pylist()
        lags += [r - s for r, s in zip(recvs, sends)]
        for r, s_ in zip(recvs, sends):
            if r > last_recv:
                last_recv, last_recv_send = r, s_
        if len(sends) < 3:
            continue
        # the spacing the topic keeps 95 % of the time: a bursty sender (two
        # calibrations every 2 s) has a tiny median but can go quiet for its
        # whole gap, which is not loss
        gaps = sorted(b - a for a, b in zip(sends, sends[1:]))
        period = gaps[min(len(gaps) - 1, int(0.95 * len(gaps)))] / 1e9
        rows.append((topic, (kill_ns - max(sends)) / 1e9, period, len(sends)))
    fast = [r for r in rows if r[2] < args.bound_s]
    slow = [r for r in rows if r[2] >= args.bound_s]
    print(f"{'topic':<30} {'loss_s':>8} {'period_s':>9} {'count':>7}")
    for topic, loss, period, n in sorted(fast, key=lambda r: -r[1]):
        print(f"{topic:<30} {loss:>8.3f} {period:>9.3f} {n:>7}")
    if slow:
        print("topics slower than the bound (loss not measurable this way): " + ", ".join(f"{t} ({p:.2f} s)" for t, _, p, _ in slow))
    if lags:
        lags.sort()
        pick = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] / 1e6  # noqa: E731
        print(f"recorder lag behind senders over the run: median {pick(0.5):.0f} ms, p99 {pick(0.99):.0f} ms, max {lags[-1] / 1e6:.0f} ms")
    if last_recv:
        print(f"unwritten_s {(kill_ns - last_recv) / 1e9:.3f} (kill time - receipt of the last message on disk; "
              f"flush interval {reader.manifest.get('flush_interval_s')} s), lag_at_kill_s {(last_recv - last_recv_send) / 1e9:.3f}")
    if rows:
        # the stream as a whole: a sender that paused before the kill (its own
        # CPU share) shows up in its topic's loss_s but not here
        newest = max(kill_ns - r[1] * 1e9 for r in rows)
        print(f"newest message on disk sent {(kill_ns - newest) / 1e9:.3f} s before the kill (all topics together)")
    if fast:
        worst = max(r[1] for r in fast)
        print(f"worst loss by send time over {len(fast)} topics faster than {args.bound_s:g} s: {worst:.3f} s "
              f"({'within' if worst <= args.bound_s else 'OVER'} the {args.bound_s:g} s bound)")
    try:
        load = os.getloadavg()
        print(f"load average {load[0]:.1f} on {os.cpu_count()} CPUs")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
