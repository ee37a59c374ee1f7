"""RPLIDAR A1 driver: stamp error and behaviour under injected faults.

Everything runs against ``teledora/fakes/rplidar_a1.py``, the fake A1 on a
pseudo-terminal that speaks the device's bytes at the device's own pace
(2000 samples/s: ~100 us per byte, slower than the 86.8 us per byte of the
115200 baud line).

Part 1 (stamps): the device read every 20 ms and every 100 ms; each published
scan's stamp is compared with the true time (from the fake's sample clock) at
which the head swept the scan's ray 0. Side by side in the same run: the
shipped stamps (measured byte pace, ``operators/lidar/sample_clock.py``) and
stamps counted back from each read at the line rate (what the driver did
before), from the same bytes and read times.

Part 2 (faults): the hardware node (``nodes/lidar/lidar_rplidar.py``) ticking at
20 ms for a few seconds per fault, the fault injected through the fake after
the first scans: frozen motor, slow motor (0.8 Hz), garbage bursts, bit
errors, silent device, unplug/replug. Printed per fault: scans published,
phantom rays (a finite range no sample in its sector could have measured in
the fake's room), the diagnostics levels seen, the last status and error,
and the counters.

    python benchmarks/rplidar_faults.py [--seconds 6] [--stamp-seconds 6]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora import models
from teledora.devices.lidar.rplidar_a1 import RECOVERABLE, RplidarA1Backend
from teledora.fakes.rplidar_a1 import FakeRplidarA1, SyntheticRoom
from teledora.models.config_files import load_lidar_setup
from teledora.nodes.lidar import lidar_rplidar
from teledora.operators.contract.messages import decode
from teledora.operators.lidar.revolution_assembler import RevolutionAssembler
from teledora.operators.lidar.scan_binning import bin_revolution

A1 = dict(scan_rate_hz=5.5, samples_per_second=2000.0)


def true_stamp_errors_ms(scans, turn_starts_ns) -> np.ndarray:
    """Stamp minus the true time of ray 0 (the last sector swept), per scan."""
    truth = np.asarray(turn_starts_ns, dtype=np.float64)
    out = []
    for scan in scans:
        n = len(scan.ranges)
        start = scan.stamp_ns - (n - 0.5) / n * scan.scan_time * 1e9
        k = int(np.argmin(np.abs(truth - start)))
        if k + 1 < len(truth):
            out.append((scan.stamp_ns - (truth[k] + (n - 0.5) / n * (truth[k + 1] - truth[k]))) * 1e-6)
    return np.asarray(out)


def stamps(period_s: float, seconds: float) -> tuple[np.ndarray, np.ndarray, float, str]:
    """(shipped errors, line-rate errors, fitted us/byte, "overflows/faults") for reads every ``period_s``."""
    setup = load_lidar_setup()
    hw = replace(setup.hardware, max_buffered_bytes=3500)
    with FakeRplidarA1(**A1) as fake:
        backend = RplidarA1Backend(fake.port, "lidar", setup.grid, hw)
        twin = RevolutionAssembler(hw.min_samples_per_revolution, hw.max_samples_per_revolution, 1.0 / hw.min_scan_rate_hz)
        line_scans = []
        clock, add, stamp = backend.sample_clock, backend.assembler.add, backend.sample_clock.stamp
        asked: dict = {}

        def stamp_noting(pos):
            asked["pos"] = np.asarray(pos)
            return stamp(pos)

        def add_both(start, angle, dist, quality, arrival):
            # the same samples, stamped at the line rate back from this read
            last_pos, last_t = clock._points[-1]
            line = (last_t - (last_pos - asked["pos"]) * backend.byte_ns).astype(np.int64)
            line_scans.extend(bin_revolution(r, setup.grid, "lidar") for r in twin.add(start, angle, dist, quality, line))
            return add(start, angle, dist, quality, arrival)

        backend.assembler.add = add_both
        clock.stamp = stamp_noting
        backend.connect()
        twin.reset()
        scans = []
        end = time.monotonic() + seconds
        faults = 0
        while time.monotonic() < end:
            time.sleep(period_s)
            try:
                scans += backend.read()
            except RECOVERABLE:  # a loaded machine may fall behind: restart as the node would
                faults += 1
                backend.restart_scan("fault")
                twin.reset()
        byte_us = (clock.byte_ns or 0.0) / 1e3
        overflows = backend.overflows
        backend.close()
        truth = list(fake.turn_starts_ns)
    skip = 3  # the first turns come before the pace is measured
    return (true_stamp_errors_ms(scans, truth)[skip:], true_stamp_errors_ms(line_scans, truth)[skip:], byte_us,
            f"{overflows}/{faults}")


def phantom_rays(scan: dict, room: SyntheticRoom) -> int:
    ranges = np.asarray(scan["ranges"], dtype=np.float64)
    inc = scan["angle_increment"]
    bad = 0
    for i in np.flatnonzero(np.isfinite(ranges)):
        a = scan["angle_min"] + i * inc
        d = [room.distance(x) for x in np.linspace(a - inc / 2, a + inc / 2, 9)]
        if not min(d) - 0.03 <= ranges[i] <= max(d) + 0.03:
            bad += 1
    return bad


class TickNode(MockNode):
    """Ticks every 20 ms for ``seconds``; ``on_tick(elapsed_s)`` injects the fault."""

    def __init__(self, seconds: float, on_tick, period_s: float = 0.02):
        super().__init__([("tick", pa.array([k])) for k in range(int(10 * seconds / period_s))])
        self.on_tick, self.period_s, self.t0, self.seconds = on_tick, period_s, None, seconds

    def next(self, timeout=None):
        time.sleep(self.period_s)
        if self.t0 is None:
            self.t0 = time.monotonic()
        elapsed = time.monotonic() - self.t0
        if elapsed >= self.seconds:
            self._events.clear()  # the stream ends
        self.on_tick(elapsed, self)
        return super().next(timeout)

    def drain(self):
        return []


def run_fault(name: str, seconds: float, fake_kwargs: dict, inject, config_dir: Path) -> dict:
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["hardware"].update(read_timeout_s=1.0, stop_settle_s=0.15)
    room = SyntheticRoom()
    with FakeRplidarA1(room, **{**A1, **fake_kwargs}) as fake:
        cfg["lidars"]["front"]["port"] = fake.port
        path = config_dir / f"{name}.yaml"
        path.write_text(json.dumps(cfg))
        state: dict = {"fault_at": None, "start_ns": time.time_ns()}
        node = TickNode(seconds, lambda t, n: inject(fake, t, n, state))
        lidar_rplidar.main(["--lidar", "front", "--config", str(path), "--no-power-up-delay"], node=node)
    scans = [decode("LaserScan", v) for v in node.outputs.get("scan", [])]
    diags = [decode("Diagnostics", v) for v in node.outputs.get("diagnostics", [])]
    details = json.loads(diags[-1]["details_json"])
    levels = []
    for d in diags:
        if not levels or levels[-1] != d["level"]:
            levels.append(d["level"])
    after = None
    if state["fault_at"] is not None:
        after = sum(1 for s in scans if s["stamp_ns"] > state["fault_at"])
    errors: list[str] = []
    for d in diags:
        kind = d["last_error"].split(":")[0]
        if kind and kind not in errors:
            errors.append(kind)
    gave_up = next((d["stamp_ns"] for d in diags if json.loads(d["details_json"]).get("gave_up")), None)
    back = state.get("replug_ns")
    first_after = next((s["stamp_ns"] for s in scans if back is not None and s["stamp_ns"] > back), None)
    return {
        "fault": name, "scans": len(scans), "scans_after_fault": after,
        "phantom_rays": sum(phantom_rays(s, room) for s in scans),
        "levels": " > ".join(levels), "errors": ", ".join(errors),
        "gave_up_after_s": None if gave_up is None else round((gave_up - state["start_ns"]) * 1e-9, 1),
        "first_scan_after_replug_s": None if first_after is None else round((first_after - back) * 1e-9, 2), "status": diags[-1]["message"], "last_error": diags[-1]["last_error"],
        "counters": {k: details.get(k) for k in ("restarts", "overflows", "connects", "timeouts", "watchdog_faults", "phantom_windows_rejected",
                                                  "resync_bytes", "dropped_slow_revolutions", "dropped_long_revolutions",
                                                  "held_samples", "consecutive_failures", "gave_up")},
        "fake": {"garbage_bytes": fake.garbage_bytes, "corrupted_bytes": fake.corrupted_bytes},
    }


def _at(t0: float):
    """Injector helper: run ``act(fake, node, state)`` once, ``t0`` s into the run."""
    def deco(act):
        def inject(fake, t, node, state):
            if state["fault_at"] is None and t >= t0:
                state["fault_at"] = time.time_ns()
                act(fake, node, state)
            if state["fault_at"] is not None and "each" in state:
                state["each"](fake, t, node, state)
        return inject
    return deco


def faults(seconds: float):
    @_at(1.0)
    def frozen(fake, node, state):
        fake.scan_rate_hz = 0.0

    @_at(1.0)
    def slow(fake, node, state):
        fake.scan_rate_hz = 0.8

    @_at(1.0)
    def garbage(fake, node, state):
        def each(fake, t, node, state):
            if int(t * 50) % 5 == 0:  # every 100 ms: 200 random bytes
                fake.inject_garbage(200)
        state["each"] = each

    @_at(1.0)
    def bit_errors(fake, node, state):
        fake.bit_error_rate = 1e-3

    @_at(1.0)
    def unplug(fake, node, state):
        fake.unplug()

        def each(fake, t, node, state):
            if not fake.plugged and t >= 2.5:
                fake.replug()
                state["replug_ns"] = time.time_ns()
        state["each"] = each

    def silent(fake, t, node, state):
        if state["fault_at"] is None:
            state["fault_at"] = time.time_ns()

    return [
        ("none", {}, lambda fake, t, node, state: None),
        ("frozen motor", {}, frozen),
        ("slow motor 0.8 Hz", {}, slow),
        ("garbage bursts", {"seed": 1}, garbage),
        ("bit errors 1e-3", {"seed": 1}, bit_errors),
        ("silent device", {"silent": True, "__seconds": 20.0}, silent),
        ("unplug 1.5 s, replug", {"__seconds": 9.0}, unplug),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=6.0, help="run per fault")
    ap.add_argument("--stamp-seconds", type=float, default=6.0, help="run per read period (part 1; 0 skips it)")
    ap.add_argument("--only", default=None, help="run only the faults whose name contains this")
    args = ap.parse_args()

    print("Part 1: stamp error vs the fake's true sweep time (ms; + = late), A1 at 5.5 Hz, 2000 samples/s")
    print("| reads every | stamps | scans | mean | p50 | p95 abs | fitted us/byte | overflows/faults |")
    print("|---|---|---|---|---|---|---|---|")
    for period in (0.02, 0.1) if args.stamp_seconds > 0 else ():
        new, line, byte_us, trouble = stamps(period, args.stamp_seconds)
        for label, e in (("measured pace (shipped)", new), ("line rate (before)", line)):
            print(f"| {period * 1e3:.0f} ms | {label} | {len(e)} | {e.mean():+.2f} | {np.median(e):+.2f} | "
                  f"{np.percentile(np.abs(e), 95):.2f} | {byte_us:.1f} | {trouble} |")

    print("\nPart 2: faults through the node (fault injected 1 s in, run "
          f"{args.seconds:.0f} s, 20 ms ticks, revolution_timeout_s 2, max_restarts 5)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, kwargs, inject in faults(args.seconds):
            if args.only and args.only not in name:
                continue
            kwargs = dict(kwargs)
            seconds = max(args.seconds, kwargs.pop("__seconds", 0.0))  # long enough to spend the restart budget
            r = run_fault(name.replace(" ", "_").replace(".", ""), seconds, kwargs, inject, Path(tmp))
            print(f"\n## {name} ({seconds:.0f} s)")
            print(f"scans {r['scans']} (after the fault {r['scans_after_fault']}), phantom rays {r['phantom_rays']}")
            print(f"levels: {r['levels']}; errors seen: {r['errors'] or '-'}")
            if r["gave_up_after_s"] is not None:
                print(f"gave up {r['gave_up_after_s']} s after start")
            if r["first_scan_after_replug_s"] is not None:
                print(f"first scan {r['first_scan_after_replug_s']} s after the replug")
            print(f"status: {r['status']}")
            print(f"last_error: {r['last_error']}")
            print(f"counters: {r['counters']}  fake: {r['fake']}")


if __name__ == "__main__":
    main()
