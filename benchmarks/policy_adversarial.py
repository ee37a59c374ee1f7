"""Adversarial policy check: any action a policy could emit, through the policy
node's action mapping and the IK, against MuJoCo's own collision detection and
the caps.

The adversary is a plain action generator (no network): whatever a trained
policy outputs is some 18-entry vector, so the check is on the path, not on a
model. Each action goes through ``ActionMapper`` (the policy node's mapping:
joint vector to bounded ArmTargets by forward kinematics at the lift height,
BaseCommand, LiftCommand; rejected whole when absurd) at the dataset's frame
rate, and the arm targets into ``IkLoop`` (the IK the teleop node runs) with
joint states at 90 Hz (its own command fed back: ideal tracking), lift states
at 50 Hz and the IK's 10 ms ticks. The lift follows its commanded velocity
(ideal, within its travel), so it moves the arms while they press on
something; a rejected action sends nothing, and the last lift and base
commands then stand until the selector's stale timeout (zero after).

The run is made of 2 s segments; each pairs an arm behaviour with a base and
lift behaviour (every combination comes round in turn, each behaviour within
its first few segments):

* arms ``uniform``: every frame a joint vector drawn uniformly over the joint
  ranges, grippers anywhere 0..100;
* ``beyond_range``: the same with each joint up to 60 deg outside its range
  (clamped by the mapping);
* ``jumper``: two far configurations, alternating every frame;
* ``collider``: every 0.5 s, per arm, the best of 64 uniform configurations
  whose grip lies nearest a point inside the other arm's grip, the column,
  the battery box, the base disk, the carriage, its own mount or the floor
  (the teleop check's attack points), held with 1 deg of noise;
* ``hold``: one configuration held (the lift and base do the moving);
* base and lift ``within`` their caps, ``at_caps`` (base at its speed caps,
  lift heights alternating between the ends of travel), ``beyond_caps`` (base
  1–9.9 times its caps, lift heights up to 10 m outside travel: clamped).

Into every segment one frame in ten is an extreme action instead, each of
which must be rejected: every entry at ±1e3 times its range, NaN or ±inf
entries, a wrong length, or base speeds over the command limits' reject
factor.

Every published solve is measured as ``benchmarks/ik_collisions.py`` measures
it (its ``check_solve``): ``mj_geomDistance`` on every geom pair MuJoCo's
collision filter allows in the robot model plus a floor plane, and contacts
from ``mj_collision``, with the lift at its height at that instant. The
published arm references are checked against the joint speed, acceleration
and jerk caps by divided differences (its ``count_cap_violations``), and every
base and lift command sent against the profile's caps.

    python benchmarks/policy_adversarial.py [--minutes 10] [--quick] [--seed 0] [--fps 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ik_collisions import (  # noqa: E402
    ATTACKS,
    CONTACT_MARGIN_M,
    AdversarialResult,
    ContactDistances,
    attack_point,
    check_solve,
    count_cap_violations,
)
from ik_node_driver import NS, MujocoCollisionCheck, make_loop  # noqa: E402

from teledora.models.config_files import load_drive_config  # noqa: E402
from teledora.operators.datasets.lerobot_features import Units, state_names  # noqa: E402
from teledora.operators.drive.arm_command_limits import ArmCommandLimits  # noqa: E402
from teledora.operators.drive.base_command_limits import BaseCommandLimits  # noqa: E402
from teledora.operators.drive.command_limits import CAP_ROUNDING  # noqa: E402
from teledora.operators.drive.lift_command_limits import LiftCommandLimits  # noqa: E402
from teledora.operators.ik.lift_guard import LiftGuard  # noqa: E402
from teledora.operators.ik.grip_kinematics import GripKinematics  # noqa: E402
from teledora.operators.ik.ik_loop import IkLoop  # noqa: E402
from teledora.operators.model.sides import SIDES  # noqa: E402
from teledora.operators.policy.authority import AuthorityConfig  # noqa: E402
from teledora.operators.policy.observation import ActionMapper, ActionRejected  # noqa: E402

ARM_MODES = ("uniform", "beyond_range", "jumper", "collider", "hold")
BASE_LIFT_MODES = ("within", "at_caps", "beyond_caps")
EXTREMES = ("scaled_1e3", "not_finite", "wrong_length", "base_absurd")
SEGMENT_S = 2.0
COLLIDER_LEG_S = 0.5
COLLIDER_SAMPLES = 64
EXTREME_SHARE = 0.1
QUICK_S = 20.0
JOINT_STATE_HZ = 90.0
LIFT_STATE_HZ = 50.0


def rejection_reason(message: str) -> str:
    """The mapping's reason for a rejected action, by kind."""
    if "entries, the export's has" in message:
        return "wrong length"
    if "not finite" in message:
        return "not finite"
    return "absurd value"


@dataclass
class PolicyCheckResult:
    sim_s: float = 0.0
    actions: int = 0
    rejected_by: dict = field(default_factory=dict)
    clamped_actions: int = 0
    clamped_by: dict = field(default_factory=dict)
    extreme_accepted: int = 0  # extreme actions the mapping let through (must be 0)
    sane_rejected: int = 0  # actions within a turn of every range it refused (must be 0)
    ticks: int = 0
    base_commands: int = 0
    lift_commands: int = 0
    command_violations: dict = field(default_factory=lambda: {"base linear speed": 0, "base yaw rate": 0,
                                                              "lift speed": 0})
    command_peaks: dict = field(default_factory=lambda: {"base linear speed": 0.0, "base yaw rate": 0.0,
                                                         "lift speed": 0.0})
    failed_solves: int = 0
    seconds: float = 0.0
    joint_caps: Any = None  # the IK's joint reference caps (speed, acceleration, jerk)
    check: AdversarialResult = field(default_factory=lambda: AdversarialResult(1))

    @property
    def rejected(self) -> int:
        return sum(self.rejected_by.values())

    def violations(self) -> dict:
        """Every cap violation by kind: joints (per solve) and commands."""
        return {**{f"joint {k}": v for k, v in self.check.cap_violations.items()}, **self.command_violations}


class Adversary:
    """Actions in the export's layout (degrees, 0..100, m/s, deg/s, mm)."""

    def __init__(self, mapper: ActionMapper, loop: IkLoop, rng: np.random.Generator) -> None:
        self.mapper, self.loop, self.rng = mapper, loop, rng
        self.n = len(state_names())
        self.names = mapper.names
        lo_hi = np.array([mapper.arm_limits.ranges[n] for n in self.names])
        self.gripper = np.array([n.endswith("_gripper") for n in self.names])
        # action units of each arm entry's range: degrees, grippers 0..100 open
        self.lo = np.where(self.gripper, 0.0, np.degrees(lo_hi[:, 0]))
        self.hi = np.where(self.gripper, 100.0, np.degrees(lo_hi[:, 1]))
        self.travel_mm = mapper.lift_travel_m * 1000.0
        base = mapper.base_limits
        self.linear_cap, self.yaw_cap_deg = base.max_linear_m_s, math.degrees(base.max_yaw_rad_s)
        self.reject_factor = base.reject_factor
        self.side_of = np.array([next(s for s in SIDES if n.startswith(s + "_")) for n in self.names])
        self.mode = ("uniform", "within")
        self.held = self.uniform_arms()
        self.pair = (self.held, self.held)
        self.frame = 0
        self.leg_end_s = 0.0

    # -- arms -----------------------------------------------------------------

    def uniform_arms(self) -> np.ndarray:
        return self.rng.uniform(self.lo, self.hi)

    def start_segment(self, arm_mode: str, base_lift_mode: str) -> None:
        self.mode = (arm_mode, base_lift_mode)
        self.held = self.uniform_arms()
        if arm_mode == "jumper":  # the farthest of a few draws from the first
            a = self.uniform_arms()
            draws = [self.uniform_arms() for _ in range(8)]
            self.pair = (a, max(draws, key=lambda b: float(np.abs(b - a).max())))
        self.leg_end_s = 0.0

    def collider_arms(self, t_s: float, lift_height_m: float) -> np.ndarray:
        if t_s >= self.leg_end_s:
            self.leg_end_s = t_s + COLLIDER_LEG_S
            out = self.held.copy()
            samples = self.rng.uniform(self.lo, self.hi, size=(COLLIDER_SAMPLES, len(self.names)))
            grips = [self._grips(s, lift_height_m) for s in samples]
            for side in SIDES:
                goal = attack_point(self.loop, side, ATTACKS[int(self.rng.integers(len(ATTACKS)))], self.rng)
                best = min(range(COLLIDER_SAMPLES), key=lambda i: float(np.linalg.norm(grips[i][side][0] - goal)))
                mine = self.side_of == side
                out[mine] = samples[best][mine]
            self.held = out
        return np.clip(self.held + self.rng.normal(0.0, 1.0, len(self.names)) * ~self.gripper, self.lo, self.hi)

    def _grips(self, action_arms: np.ndarray, lift_height_m: float) -> dict:
        q = np.where(self.gripper, self.mapper.units.gripper_closed_rad * (1.0 - action_arms / 100.0),
                     np.radians(action_arms))
        return self.mapper.grips.grips(self.names, q, lift_height_m)

    def arms(self, t_s: float, lift_height_m: float) -> np.ndarray:
        mode = self.mode[0]
        if mode == "uniform":
            return self.uniform_arms()
        if mode == "beyond_range":
            over = self.rng.uniform(0.0, 60.0, len(self.names)) * ~self.gripper
            side = self.rng.choice([-1.0, 1.0], len(self.names))
            return np.where(side > 0, self.hi + over, self.lo - over)
        if mode == "jumper":
            return self.pair[self.frame % 2]
        if mode == "collider":
            return self.collider_arms(t_s, lift_height_m)
        return self.held

    # -- base and lift ----------------------------------------------------------

    def base_lift(self) -> np.ndarray:
        mode = self.mode[1]
        heading = self.rng.uniform(0, 2 * np.pi)
        yaw_sign = self.rng.choice([-1.0, 1.0])
        if mode == "within":
            r = self.linear_cap * math.sqrt(self.rng.uniform())
            return np.array([r * math.cos(heading), r * math.sin(heading),
                             self.rng.uniform(-self.yaw_cap_deg, self.yaw_cap_deg), self.rng.uniform(0, self.travel_mm)])
        if mode == "at_caps":
            lift = self.travel_mm * (self.frame // 15 % 2)  # each end of travel for half a second
            return np.array([self.linear_cap * math.cos(heading), self.linear_cap * math.sin(heading),
                             yaw_sign * self.yaw_cap_deg, lift])
        k = self.rng.uniform(1.0, 0.99 * self.reject_factor, 2)
        lift = -self.rng.uniform(1.0, 1e4) if self.frame // 15 % 2 else self.travel_mm + self.rng.uniform(1.0, 1e4)
        return np.array([k[0] * self.linear_cap * math.cos(heading), k[0] * self.linear_cap * math.sin(heading),
                         yaw_sign * k[1] * self.yaw_cap_deg, lift])

    # -- whole actions --------------------------------------------------------

    def extreme(self, t_s: float, lift_height_m: float) -> tuple[str, np.ndarray]:
        kind = EXTREMES[int(self.rng.integers(len(EXTREMES)))]
        if kind == "scaled_1e3":
            span = np.concatenate([self.hi - self.lo, [self.linear_cap, self.linear_cap, self.yaw_cap_deg,
                                                       self.travel_mm]])
            return kind, self.rng.choice([-1e3, 1e3], self.n) * span
        if kind == "not_finite":
            a = np.concatenate([self.arms(t_s, lift_height_m), self.base_lift()])
            bad = self.rng.choice(self.n, int(self.rng.integers(1, 4)), replace=False)
            a[bad] = self.rng.choice([np.nan, np.inf, -np.inf], len(bad))
            return kind, a
        if kind == "wrong_length":
            n = int(self.rng.choice([0, 1, self.n - 1, self.n + 1, 2 * self.n]))
            return kind, self.rng.uniform(-10.0, 10.0, n)
        a = np.concatenate([self.arms(t_s, lift_height_m), self.base_lift()])
        k = len(self.names)
        a[k:k + 2] = self.rng.uniform(1.01, 1e3) * self.reject_factor * self.linear_cap * self.rng.choice([-1.0, 1.0], 2)
        return kind, a

    def next(self, t_s: float, lift_height_m: float) -> tuple[str, np.ndarray]:
        """(kind, action): the segment's behaviour, or an extreme action."""
        self.frame += 1
        if self.rng.uniform() < EXTREME_SHARE:
            return self.extreme(t_s, lift_height_m)
        return "/".join(self.mode), np.concatenate([self.arms(t_s, lift_height_m), self.base_lift()])


class Lift:
    """The lift following its commanded velocity exactly, within travel."""

    def __init__(self, height_m: float, travel_m: float) -> None:
        self.h0, self.t0_ns, self.v, self.travel_m = height_m, 0, 0.0, travel_m

    def height(self, t_ns: int) -> float:
        return min(self.travel_m, max(0.0, self.h0 + self.v * (t_ns - self.t0_ns) / NS))

    def command(self, t_ns: int, velocity_m_s: float) -> None:
        self.h0, self.t0_ns, self.v = self.height(t_ns), t_ns, velocity_m_s


def make_mapper(loop: IkLoop, fps: float) -> ActionMapper:
    """The policy node's mapping, on the IK's robot model and profile."""
    import mujoco

    from teledora import models

    profile = loop.profile
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.model)))
    units = Units(gripper_closed_rad=load_drive_config().arms.gripper_closed_rad)
    return ActionMapper(GripKinematics(model, profile), ArmCommandLimits.from_model(model, profile),
                        BaseCommandLimits.from_profile(profile), LiftCommandLimits.from_profile(profile), units,
                        profile.lift.travel_mm / 1000.0, fps, profile.base_frame)


def segment_modes(rng: np.random.Generator, count: int) -> list[tuple[str, str]]:
    """``count`` (arm, base and lift) pairs in rounds of every combination once:
    each round cycles a shuffled order of the arm behaviours and one of the base
    and lift behaviours side by side (their counts are coprime), so a short run
    meets every behaviour of each early on."""
    assert math.gcd(len(ARM_MODES), len(BASE_LIFT_MODES)) == 1
    n = len(ARM_MODES) * len(BASE_LIFT_MODES)
    out: list[tuple[str, str]] = []
    while len(out) < count:
        arms, base_lift = rng.permutation(ARM_MODES), rng.permutation(BASE_LIFT_MODES)
        out += [(str(arms[i % len(arms)]), str(base_lift[i % len(base_lift)])) for i in range(n)]
    return out[:count]


def run(sim_s: float, seed: int = 0, fps: float = 30.0, progress: bool = False, lift_guard: bool = True) -> PolicyCheckResult:
    """Drives the mapping and the IK for ``sim_s`` seconds of sim time. The
    lift's speed passes the lift guard at every IK tick, as in the teleop node
    (``lift_guard=False``: the lift follows the policy's command unguarded)."""
    rng = np.random.default_rng(seed)
    loop = make_loop()
    mapper = make_mapper(loop, fps)
    check = MujocoCollisionCheck()
    contacts = ContactDistances(check)
    res = PolicyCheckResult()
    clearance = loop.ik.settings.collision.minimum_distance_m
    stale_ns = int(AuthorityConfig().policy_timeout_s * NS)
    adversary = Adversary(mapper, loop, rng)
    profile = loop.profile
    lift = Lift(float(rng.uniform(0.0, mapper.lift_travel_m)), mapper.lift_travel_m)
    collision = loop.ik.settings.collision
    guard = LiftGuard(loop.ik.model, profile.lift_joint, collision.minimum_distance_m, collision.lift_guard_horizon_s,
                      collision.lift_guard_latency_s)
    wanted_lift = 0.0  # the lift speed the selector passes on; the guard bounds it each tick

    def drive_lift(t: int) -> None:
        v = wanted_lift
        if v and lift_guard:
            b = guard.bounds(loop.ik.configuration.q, abs(v))
            v = min(max(v, b.down), b.up)
        lift.command(t, v)
    arm_names = set(loop.ik.arm_joint_names)
    q = dict(profile.home_q())
    q = {n: float(q.get(n, 0.0)) for n in profile.arm_joint_names}
    loop.on_lift({"height_m": lift.height(0)})
    loop.on_joint_states({"stamp_ns": 0, "names": list(q), "position": list(q.values())})
    times: list[int] = []
    refs: list[np.ndarray] = []
    base_limits, lift_cap = mapper.base_limits, mapper.lift_limits.max_speed_m_s
    last_sent_ns = 0
    modes = segment_modes(rng, max(1, math.ceil(sim_s / SEGMENT_S)))
    period = {"action": int(round(NS / fps)), "joints": int(NS / JOINT_STATE_HZ), "lift": int(NS / LIFT_STATE_HZ),
              "tick": loop.period_ns}
    due = dict(period)
    end_ns = int(sim_s * NS)
    label = "start"
    segment = -1
    t0 = time.perf_counter()

    def solve(t: int) -> None:
        cmd = loop.solve(t)
        if cmd is None:
            return
        q.update(zip(cmd["names"], (float(v) for v in cmd["q_ref"])))
        times.append(t)
        refs.append(np.array([v for n, v in zip(cmd["names"], cmd["q_ref"]) if n in arm_names]))
        check_solve(res.check, check, contacts, clearance, cmd, lift.height(t), segment, label)

    while True:
        kind = min(due, key=due.get)
        t = due[kind]
        if t > end_ns:
            break
        due[kind] += period[kind]
        if kind == "joints":
            loop.on_joint_states({"stamp_ns": t, "names": list(q), "position": list(q.values())})
        elif kind == "lift":
            loop.on_lift({"height_m": lift.height(t)})
        elif kind == "tick":
            res.ticks += 1
            drive_lift(t)
            if loop.tick_due(t):
                solve(t)
        else:
            if int(t // int(SEGMENT_S * NS)) != segment:
                segment = int(t // int(SEGMENT_S * NS))
                adversary.start_segment(*modes[min(segment, len(modes) - 1)])
                if progress and segment and segment % 30 == 0:
                    c = res.check
                    print(f"  {t / NS / 60:.1f} sim min: {c.solves} solves, closest {c.min_distance_m * 1000:.3f} mm, "
                          f"{c.penetrations} penetrating, {res.rejected} rejected, {time.perf_counter() - t0:.0f} s",
                          flush=True)
            height = lift.height(t)
            action_kind, action = adversary.next(t / NS, height)
            res.actions += 1
            extreme = action_kind in EXTREMES
            try:
                out = mapper.map(action, height, t)
            except ActionRejected as exc:
                reason = rejection_reason(str(exc))
                res.rejected_by[reason] = res.rejected_by.get(reason, 0) + 1
                res.sane_rejected += not extreme
                if t - last_sent_ns > stale_ns:
                    wanted_lift = 0.0  # the selector holds a stale policy
                    drive_lift(t)
                continue
            res.extreme_accepted += extreme
            res.clamped_actions += bool(out.clamps)
            last_sent_ns = t
            label = action_kind
            check_commands(res, out.base_cmd, out.lift_cmd, base_limits, lift_cap)
            wanted_lift = out.lift_cmd["velocity_m_s"]
            drive_lift(t)
            if loop.on_targets(out.arm_targets, t):
                solve(t)
    res.joint_caps = loop.ik.settings.joint_reference
    count_cap_violations(res.check, times, refs, res.joint_caps)
    res.clamped_by = dict(mapper.counts()["clamped_by"])
    res.failed_solves = loop.ik.failures
    res.sim_s = end_ns / NS
    res.seconds = time.perf_counter() - t0
    if mapper.rejected != res.rejected:
        raise AssertionError(f"the mapping counted {mapper.rejected} rejections, the check saw {res.rejected}")
    return res


def check_commands(res: PolicyCheckResult, base_cmd: dict, lift_cmd: dict, base: BaseCommandLimits,
                   lift_cap: float) -> None:
    """Counts a base or lift command sent over its cap (the caps' rounding allowed)."""
    res.base_commands += 1
    res.lift_commands += 1
    for name, value, cap in (("base linear speed", math.hypot(base_cmd["forward_m_s"], base_cmd["left_m_s"]),
                              base.max_linear_m_s),
                             ("base yaw rate", abs(base_cmd["yaw_rad_s"]), base.max_yaw_rad_s),
                             ("lift speed", abs(lift_cmd["velocity_m_s"]), lift_cap)):
        res.command_peaks[name] = max(res.command_peaks[name], value)
        if not value <= cap * (1.0 + CAP_ROUNDING):
            res.command_violations[name] += 1


def report(res: PolicyCheckResult, fps: float) -> None:
    c = res.check
    print(f"sim time             {res.sim_s / 60:.2f} min ({res.sim_s:.0f} s), actions at {fps:g} fps, IK ticks every 10 ms")
    print(f"actions              {res.actions} sent; {res.rejected} rejected whole ("
          + ", ".join(f"{k} {v}" for k, v in sorted(res.rejected_by.items())) + f"); {res.clamped_actions} clamped")
    print("clamped by quantity  " + ", ".join(f"{k} {v}" for k, v in res.clamped_by.items()))
    print(f"rejection check      extreme actions let through {res.extreme_accepted}, others refused {res.sane_rejected}")
    print(f"ticks                {res.ticks} ticks, {c.solves} solves published, {res.failed_solves} failed")
    print(f"penetrations         {c.penetrations} solves (mj_geomDistance < 0 on every pair MuJoCo's filter allows, "
          f"robot + floor)" + (f", worst {c.min_distance_m * 1000:.3f} mm" if c.penetrations else ""))
    print(f"closest, exact       {c.min_distance_m * 1000:.3f} mm by mj_geomDistance ({c.worst_pair}; {c.worst_attack}); "
          f"{c.below_clearance} solves under the IK's clearance")
    print(f"closest, contacts    {c.contact.min_distance_m * 1000:.3f} mm by mj_collision contact.dist, "
          f"{CONTACT_MARGIN_M * 1000:.0f} mm margin ({c.contact.worst_pair}); {c.contact.below_clearance} under the clearance")
    viol = res.violations()
    print("cap violations       " + ", ".join(f"{k} {v}" for k, v in viol.items()))
    j = res.joint_caps
    caps = {"speed": j.max_speed_rad_s, "acceleration": j.max_accel_rad_s2, "jerk": j.max_jerk_rad_s3}
    print("peaks / caps         " + ", ".join(f"joint {k} {v:.4g} / {caps[k]:g}" for k, v in c.cap_peaks.items())
          + " [rad/s, rad/s², rad/s³]; " + ", ".join(f"{k} {v:.4g}" for k, v in res.command_peaks.items()))
    worst = sorted(c.per_attack_min.items(), key=lambda kv: kv[1])[:4]
    print("closest by behaviour " + ", ".join(f"{k} {v * 1000:.2f} mm" for k, v in worst))
    print(f"wall time            {res.seconds:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="sim minutes")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_S:g} s of sim")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fps", type=float, default=30.0, help="actions per second: the dataset's fps")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--no-lift-guard", action="store_true", help="the lift follows the policy unguarded (to compare)")
    args = ap.parse_args()
    res = run(QUICK_S if args.quick else args.minutes * 60.0, args.seed, args.fps, args.progress, not args.no_lift_guard)
    report(res, args.fps)
    sys.exit(1 if res.check.penetrations or any(res.violations().values()) else 0)


if __name__ == "__main__":
    main()
