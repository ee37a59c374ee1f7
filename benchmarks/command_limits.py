"""What the actuators' command limits cost per command, beside the work they guard.

For each actuator kind, one loop times the limits' ``bound()`` and, interleaved
call for call, the step the command goes through next anyway: the base's wheel
quantization, the lift axis's goal computation, and for the arms the contract
decode of a 14-joint JointCommands plus the servo-grid quantization. Prints the
median and p99 of each in microseconds and the ratio of the medians.

    python benchmarks/command_limits.py [--n 20000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import mujoco
import numpy as np

from teledora import models
from teledora.models.config_files import load_drive_config
from teledora.operators.contract.messages import decode, encode
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.lift_axis import LiftAxis
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.drive.omni_drive import BodyTwist, OmniDrive
from teledora.operators.drive.servo_quantization import quantize_rad_within


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def side_by_side(n: int, a: Callable[[int], object], b: Callable[[int], object]) -> tuple[list[float], list[float]]:
    """Times ``a(k)`` and ``b(k)`` alternately, n times each (microseconds)."""
    ta, tb = [], []
    clock = time.perf_counter_ns
    for k in range(n):
        t0 = clock()
        a(k)
        t1 = clock()
        b(k)
        t2 = clock()
        ta.append((t1 - t0) / 1e3)
        tb.append((t2 - t1) / 1e3)
    return ta, tb


def report(name: str, limits: list[float], other_name: str, other: list[float]) -> None:
    ml, mo = statistics.median(limits), statistics.median(other)
    print(f"{name}: limits median {ml:.1f} us, p99 {pct(limits, 0.99):.1f} us | {other_name} median {mo:.1f} us, "
          f"p99 {pct(other, 0.99):.1f} us | limits/{other_name} = {ml / mo:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    profile = models.load_profile()

    base = BaseCommandLimits.from_profile(profile)
    drive = OmniDrive(load_drive_config().base.geometry)
    # a mix of commands inside and over the caps (none absurd)
    twists = [BodyTwist(*v) for v in rng.uniform([-0.5, -0.5, -1.3], [0.5, 0.5, 1.3], size=(1024, 3))]
    lim, quant = side_by_side(args.n, lambda k: base.bound(twists[k % 1024]),
                              lambda k: drive.body_to_wheel_raw(*twists[k % 1024]))
    report("base", lim, "quantize", quant)

    lift = LiftCommandLimits.from_profile(profile)
    axis = LiftAxis(load_drive_config().lift, 0)
    axis.set_zero(0)
    axis.update(-1000)
    speeds = rng.uniform(-0.16, 0.16, size=1024)
    lim, goal = side_by_side(args.n, lambda k: lift.bound(float(speeds[k % 1024])),
                             lambda k: axis.velocity_goal_raw(float(speeds[k % 1024])))
    report("lift", lim, "axis goal", goal)

    model = mujoco.MjModel.from_xml_path(str(models.path(profile.model)))
    arms = ArmCommandLimits.from_model(model, profile)
    names = list(profile.arm_joint_names)
    lower, upper = np.array([arms.ranges[n] for n in names]).T
    msgs = [encode("JointCommands", {"stamp_ns": 0, "names": names, "q_ref": q, "dq_ref": dq, "status": "ok"})
            for q, dq in zip(rng.uniform(-3.5, 3.5, size=(64, 14)), rng.uniform(-4.0, 4.0, size=(64, 14)))]
    decoded = [decode("JointCommands", m) for m in msgs]

    def arm_limits(k: int) -> object:
        m = decoded[k % 64]
        return arms.bound(m["names"], m["q_ref"], m["dq_ref"])

    def arm_rest(k: int) -> object:
        m = decode("JointCommands", msgs[k % 64])
        return quantize_rad_within(m["q_ref"], lower, upper)

    lim, rest = side_by_side(args.n, arm_limits, arm_rest)
    report("arms (14 joints)", lim, "decode+quantize", rest)


if __name__ == "__main__":
    main()
