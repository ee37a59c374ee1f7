"""Adversarial collision check of the bimanual IK against MuJoCo's own collision
detection on every collision geom of the robot model plus the floor.

Each episode starts from home at a random lift height and drives ``IkLoop``
with the calls the ``ik`` node makes (``benchmarks/ik_node_driver.py``): arm
targets and joint states at 90 Hz, lift states at 50 Hz, 10 ms timer ticks.
Every leg (0.5 s) each grip's target jumps by up to 0.3 m, with a random
orientation, towards a point inside the other arm's grip, the column, the
battery box, the base disk, the carriage, its own shoulder mount, or below the
floor. After every published solve the commanded configuration is measured
on every pair MuJoCo's collision filter allows (not the IK's pair list), by two
measures, each reported under its own name:

* ``mj_geomDistance``: the exact signed distance between two geoms, the
  measure the IK's clearance rows and guard use (the configured clearance
  applies to it);
* contacts: the smallest ``contact.dist`` per pair that ``mj_collision``
  reports with every geom given a 50 mm margin. Box-box pairs come from
  MuJoCo's box-box collider, whose ``dist`` for separated boxes is not their
  distance: it reads several mm either side of it, or no contact at all.

For each it prints the closest approach, its pair and episode, and how many
solves came under the configured clearance; how many solves penetrated (by
``mj_geomDistance``); where the contacts read lowest, the exact distance of
the same pair on the same solve; and, from the
published arm references of each episode at their publish times, how many
solves broke the joint speed, acceleration or jerk cap (divided differences,
which a motion within a cap cannot exceed; relative tolerance 1e-6).

Each episode is self-contained (its own random stream, ``[seed, episode]``, and
a fresh IK), so ``--first N --episodes K`` replays episodes N..N+K-1 exactly as
a longer run meets them; ``--violations`` prints every solve inside the
clearance with what the IK did on that tick (guard cut, relaxed QP, global
search goal, reference modes, refused plans).

``--guard-cost`` also times, on every tick, the guard's uniform cut and its
per-arm verdict (``BimanualIk._guard_each_arm``, which the tick takes) on the
same step, alternating which runs first (thread CPU).

``--qp-only`` measures the QP's clearance rows alone (no post-step guard);
``--barrier mink`` swaps them for mink's stock ``CollisionAvoidanceLimit``
(bound divided by dt) on the same pairs.

    python benchmarks/ik_collisions.py [--episodes 1000] [--legs 4] [--seed 0] [--first 0] [--violations] [--guard-cost] [--qp-only] [--barrier ours|mink]
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mink
import mujoco
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ik_node_driver import MujocoCollisionCheck, NodeDriver, arm_targets, ik_config, make_loop, restart  # noqa: E402

from teledora.operators.geometry import Pose, quat_normalize  # noqa: E402
from teledora.operators.ik.ik_loop import IkLoop  # noqa: E402
from teledora.operators.model.sides import SIDES  # noqa: E402

ATTACKS = ("other_arm", "column", "battery_box", "base_disk", "carriage", "own_mount", "floor")
LEG_S = 0.5
MAX_JUMP_M = 0.3


CONTACT_MARGIN_M = 0.05  # the contacts' reach: as far out as the exact check looks
NEAR_BAND_M = 0.005  # the two measures are compared on pairs closer than the clearance plus this


@dataclass
class ContactMeasure:
    """Closest approach by contacts (``ContactDistances``) over a run."""

    min_distance_m: float = np.inf
    worst_pair: str = ""
    worst_episode: int = -1
    exact_at_worst_m: float = np.nan  # mj_geomDistance of that pair on that solve
    below_clearance: int = 0
    # on pairs within NEAR_BAND_M of the clearance by contacts, same pair and solve:
    most_below_m: float = 0.0  # largest mj_geomDistance minus contact distance
    most_below_pair: str = ""
    most_above_m: float = 0.0  # largest contact distance minus mj_geomDistance
    most_above_pair: str = ""
    closest_unseen: int = 0  # solves whose closest pair (exact, in the band) had no contact


@dataclass
class AdversarialResult:
    episodes: int
    solves: int = 0
    # by mj_geomDistance (the exact distance, the IK's measure)
    min_distance_m: float = np.inf
    worst_pair: str = ""
    worst_attack: str = ""
    worst_episode: int = -1
    below_clearance: int = 0
    contact: ContactMeasure = field(default_factory=ContactMeasure)
    penetrations: int = 0
    penetrating_episodes: int = 0
    failed_solves: int = 0
    guard_shortened: int = 0
    relaxed_solves: int = 0
    seconds: float = 0.0
    per_attack_min: dict = field(default_factory=dict)
    cap_violations: dict = field(default_factory=lambda: {"speed": 0, "acceleration": 0, "jerk": 0})
    cap_peaks: dict = field(default_factory=lambda: {"speed": 0.0, "acceleration": 0.0, "jerk": 0.0})


CAP_REL = 1e-6  # relative tolerance of the cap check (float rounding of the divided differences)


def divided_differences(t_s: np.ndarray, q: np.ndarray, order: int) -> np.ndarray:
    """order! times the order-th divided differences of samples q at (uneven) times
    t_s: for a motion whose order-th derivative stays within c, each is within c."""
    d = q.astype(float)
    for k in range(1, order + 1):
        d = (d[1:] - d[:-1]) / (t_s[k:] - t_s[:-k])[:, None]
    return d * math.factorial(order)


def count_cap_violations(res: "AdversarialResult", t_ns: list[int], q: list[np.ndarray], caps) -> None:
    """Adds one episode's published references to the cap counts and peaks."""
    t_s, qa = np.array(t_ns, dtype=float) / 1e9, np.array(q)
    for order, name, cap in ((1, "speed", caps.max_speed_rad_s), (2, "acceleration", caps.max_accel_rad_s2),
                             (3, "jerk", caps.max_jerk_rad_s3)):
        if len(qa) <= order:
            continue
        worst = np.abs(divided_differences(t_s, qa, order)).max(axis=1)
        res.cap_violations[name] += int(np.sum(worst > cap * (1 + CAP_REL)))
        res.cap_peaks[name] = max(res.cap_peaks[name], float(worst.max()))


class ContactDistances:
    """Pair distances as MuJoCo's collision detection reports them: a copy of
    the check's model with every geom given ``margin_m``, so ``mj_collision``
    returns contacts for pairs closer than that, and per pair the smallest
    ``contact.dist`` under ``margin_m``. A pair its collider finds no contact
    for is not seen."""

    def __init__(self, check: MujocoCollisionCheck, margin_m: float = CONTACT_MARGIN_M) -> None:
        self.check = check
        self.margin_m = margin_m
        self.model = copy.deepcopy(check.model)
        # a pair's margin combines both geoms' (MuJoCo 4 adds them): at least
        # margin_m either way, and contacts beyond it are dropped below
        self.model.geom_margin[:] = margin_m
        self.model.geom_gap[:] = 0.0
        self.data = mujoco.MjData(self.model)
        self._allowed = set(check.pairs)

    def distances(self, qpos: np.ndarray) -> dict[tuple[int, int], float]:
        """Smallest contact distance of each pair in contact at ``qpos``."""
        m, d = self.model, self.data
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        out: dict[tuple[int, int], float] = {}
        for c in d.contact[: d.ncon]:
            pair = (int(min(c.geom)), int(max(c.geom)))
            if pair in self._allowed and c.dist < self.margin_m:
                out[pair] = min(out.get(pair, np.inf), float(c.dist))
        return out

    def closest(self, qpos: np.ndarray) -> tuple[float, tuple[int, int]]:
        """(smallest contact distance, its pair); (inf, (-1, -1)) with no contact."""
        found = self.distances(qpos)
        if not found:
            return np.inf, (-1, -1)
        pair = min(found, key=found.get)
        return found[pair], pair


def pair_label(check: MujocoCollisionCheck, pair: tuple[int, int]) -> str:
    """Both geoms' names and types: 'a (box) x b (capsule)'."""
    kind = lambda g: mujoco.mjtGeom(int(check.model.geom_type[g])).name.removeprefix("mjGEOM_").lower()  # noqa: E731
    return " x ".join(f"{check.name(g)} ({kind(g)})" for g in pair)


def make_adversarial_loop(qp_only: bool = False, barrier: str = "ours") -> IkLoop:
    loop = make_loop(ik_config(collision__guard_distance_m=None) if qp_only else None)
    if barrier == "mink":
        ik = loop.ik
        c = ik.settings.collision
        stock = mink.CollisionAvoidanceLimit(ik.model, [([a], [b]) for a, b in ik.collision_pairs.id_pairs], gain=c.gain,
                                             minimum_distance_from_collisions=c.minimum_distance_m,
                                             collision_detection_distance=c.detection_distance_m)
        assert len(stock.geom_id_pairs) == len(ik.collision_pairs)
        ik.limits[ik.limits.index(ik.collision_limit)] = stock
    elif barrier != "ours":
        raise ValueError(f"barrier must be 'ours' or 'mink', got {barrier!r}")
    return loop


def attack_point(loop: IkLoop, side: str, attack: str, rng: np.random.Generator) -> np.ndarray:
    """A point (base_link) inside the part ``attack`` names."""
    ik = loop.ik
    data = ik.configuration.data
    lift_z = float(data.xpos[ik.model.body("vertical_link").id][2])
    sign = 1.0 if side == "left" else -1.0
    if attack == "other_arm":
        other = "right" if side == "left" else "left"
        return ik.grip_pose(other).position + rng.normal(0, 0.02, 3)
    if attack == "column":
        return np.array([rng.uniform(-0.14, 0.03), rng.uniform(-0.05, 0.05), rng.uniform(0.25, 0.95)])
    if attack == "battery_box":
        return np.array([rng.uniform(-0.23, 0.03), rng.uniform(-0.08, 0.08), rng.uniform(0.11, 0.26)])
    if attack == "base_disk":
        r, a = 0.2 * np.sqrt(rng.uniform()), rng.uniform(0, 2 * np.pi)
        return np.array([r * np.cos(a), r * np.sin(a), rng.uniform(0.03, 0.13)])
    if attack == "carriage":
        return np.array([rng.uniform(0.0, 0.09), rng.uniform(-0.24, 0.24), lift_z + rng.uniform(0.41, 0.48)])
    if attack == "own_mount":
        mount = data.xpos[ik.model.body(f"{side}_Base").id]
        return mount + np.array([rng.uniform(-0.03, 0.08), rng.uniform(-0.03, 0.03), rng.uniform(0.0, 0.12)])
    return np.array([rng.uniform(0.1, 0.55), sign * rng.uniform(-0.1, 0.45), rng.uniform(-0.15, 0.02)])


@dataclass
class Violation:
    """One published solve that ended inside the clearance, and what the IK did
    on the ticks since the previous published solve."""

    episode: int
    t_ns: int
    distance_m: float
    pair: str
    attacks: str
    status: str
    step_fraction: float  # < 1: the guard shortened the goal
    relaxed: int  # QPs solved again with approach-only rows
    goal_mode: str  # arms moving to a global-search joint goal
    modes: str  # reference modes taken (goal / brake / keep per arm and solve)
    plans_refused: int  # plans whose path the guard refused
    dt_ms: float  # length of this tick

    def line(self) -> str:
        return (f"episode {self.episode} t {self.t_ns / 1e6:.1f} ms: {self.distance_m * 1000:.3f} mm {self.pair} "
                f"(attack {self.attacks}); status {self.status}, dt {self.dt_ms:.2f} ms, step kept "
                f"{self.step_fraction:.3f}, relaxed {self.relaxed}, goal mode [{self.goal_mode}], modes {self.modes}, "
                f"plans refused {self.plans_refused}")


def time_guard_variants(ik, costs: list[tuple[float, float, float]]) -> None:
    """Makes every tick of ``ik`` time the uniform guard and the per-arm one on
    the same step (the order alternating from tick to tick, as the distance
    bounds the first leaves behind speed up the second) and go on with the
    per-arm verdict; appends (uniform s, per arm s, uniform fraction)."""
    per_arm = ik._guard_each_arm

    def timed(q_from: np.ndarray, q_to: np.ndarray):
        uniform_first = len(costs) % 2 == 0
        if uniform_first:
            t0 = time.thread_time()
            fraction = ik._guard(q_from, q_to)[1]
            t1 = time.thread_time()
        c0 = time.thread_time()
        out = per_arm(q_from, q_to)
        c1 = time.thread_time()
        if not uniform_first:
            t0 = time.thread_time()
            fraction = ik._guard(q_from, q_to)[1]
            t1 = time.thread_time()
            ik._set_q(out[0])  # the tick goes on from the per-arm verdict
        costs.append((t1 - t0, c1 - c0, fraction))
        return out

    ik._guard_each_arm = timed


def run(loop: IkLoop | None, episodes: int, seed: int = 0, legs: int = 4, check: MujocoCollisionCheck | None = None,
        progress: bool = False, first: int = 0, make: Callable[[], IkLoop] | None = None,
        on_violation: Callable[[Violation], None] | None = None,
        contacts: ContactDistances | None = None) -> AdversarialResult:
    """Episodes ``first`` .. ``first + episodes - 1``. Each is self-contained, so
    any range replays exactly: its draws come from ``default_rng([seed, episode])``
    and, when ``make`` is given, it runs on a fresh loop (a fresh IK, whose global
    search starts its random stream anew); otherwise ``loop``'s IK carries over
    from one episode to the next."""
    check = check or MujocoCollisionCheck()
    contacts = contacts or ContactDistances(check)
    res = AdversarialResult(episodes)
    loop = loop if loop is not None else make()
    clearance = loop.ik.settings.collision.minimum_distance_m
    home = loop.profile.home_q()
    travel = loop.profile.lift.travel_mm / 1000.0
    t0 = time.perf_counter()
    for episode in range(first, first + episodes):
        rng = np.random.default_rng([seed, episode])
        loop = restart(loop) if make is None else make()
        ik = loop.ik
        stats0 = (ik.failures, ik.guard_shortened, ik.relaxed_solves)
        arm_names = set(ik.arm_joint_names)
        lift = float(rng.uniform(0.0, travel))
        driver = NodeDriver(loop, home, lift)
        target = {s: ik.grip_pose(s) for s in SIDES}
        penetrated = False
        times: list[int] = []
        refs: list[np.ndarray] = []
        seen = {"relaxed": ik.relaxed_solves, "refused": ik.plans_refused, "counts": dict(ik.reference.counts),
                "t_ns": 0}
        for _ in range(legs):
            attacks = {s: ATTACKS[int(rng.integers(len(ATTACKS)))] for s in SIDES}
            for s in SIDES:
                goal = attack_point(loop, s, attacks[s], rng)
                jump = goal - target[s].position
                n = np.linalg.norm(jump)
                if n > MAX_JUMP_M:
                    jump *= MAX_JUMP_M / n
                target[s] = Pose.of(target[s].position + jump, quat_normalize(rng.normal(size=4)))
            msg = arm_targets(loop.profile, target)

            def on_solve(solve, attacks=attacks, episode=episode, loop=loop) -> None:
                nonlocal penetrated
                ik = loop.ik
                cmd = solve.command
                times.append(solve.t_ns)
                refs.append(np.array([v for n, v in zip(cmd["names"], cmd["q_ref"]) if n in arm_names]))
                key = "+".join(sorted(set(attacks.values())))
                d, pair = check_solve(res, check, contacts, clearance, cmd, lift, episode, key)
                if d < clearance - 1e-9:
                    if on_violation is not None:
                        r = loop.last_result
                        counts = {m: ik.reference.counts[m] - seen["counts"][m] for m in ik.reference.counts}
                        on_violation(Violation(
                            episode, solve.t_ns, d, f"{check.name(pair[0])} x {check.name(pair[1])}", key, r.status,
                            r.step_fraction, ik.relaxed_solves - seen["relaxed"],
                            ",".join(s for s, on in r.goal_mode.items() if on),
                            ",".join(f"{m} {c}" for m, c in counts.items() if c), ik.plans_refused - seen["refused"],
                            (solve.t_ns - seen["t_ns"]) / 1e6))
                seen.update(relaxed=ik.relaxed_solves, refused=ik.plans_refused, counts=dict(ik.reference.counts),
                            t_ns=solve.t_ns)
                penetrated = penetrated or d < 0

            driver.run(LEG_S, lambda t, msg=msg: msg, on_solve)
        res.penetrating_episodes += penetrated
        count_cap_violations(res, times, refs, ik.settings.joint_reference)
        res.failed_solves += ik.failures - stats0[0]
        res.guard_shortened += ik.guard_shortened - stats0[1]
        res.relaxed_solves += ik.relaxed_solves - stats0[2]
        done = episode + 1 - first
        if progress and done % 10 == 0:
            print(f"  {done}/{episodes} episodes (to {episode}), {res.solves} solves, min by mj_geomDistance "
                  f"{res.min_distance_m * 1000:.3f} mm ({res.below_clearance} under the clearance), by contacts "
                  f"{res.contact.min_distance_m * 1000:.3f} mm ({res.contact.below_clearance} under), "
                  f"{res.penetrations} penetrating, cap violations "
                  f"{res.cap_violations}, {time.perf_counter() - t0:.0f} s", flush=True)
    res.seconds = time.perf_counter() - t0
    return res


def check_solve(res: AdversarialResult, check: MujocoCollisionCheck, contacts: ContactDistances, clearance: float,
                cmd: dict, lift_height_m: float, episode: int, label: str) -> tuple[float, tuple[int, int]]:
    """Measures one published command (``q_ref`` with the lift at
    ``lift_height_m``) on every pair of ``check``, by ``mj_geomDistance`` and by
    contacts, and adds it to ``res``: solves, under the clearance, penetrations,
    the closest approach (``label`` names what drove it). Returns its closest
    pair by ``mj_geomDistance`` (distance, pair)."""
    check.set(cmd["names"], cmd["q_ref"], lift_height_m)
    d, pair = check.closest(0.05)
    res.solves += 1
    res.per_attack_min[label] = min(res.per_attack_min.get(label, np.inf), d)
    res.below_clearance += d < clearance - 1e-9
    res.penetrations += d < 0
    if d < res.min_distance_m:
        res.min_distance_m, res.worst_pair, res.worst_attack, res.worst_episode = d, pair_label(check, pair), label, episode
    measure_contacts(res.contact, check, contacts, clearance, episode, (d, pair))
    return d, pair


def measure_contacts(res: ContactMeasure, check: MujocoCollisionCheck, contacts: ContactDistances, clearance: float,
                     episode: int, closest_exact: tuple[float, tuple[int, int]]) -> None:
    """Adds the configuration last set on ``check`` to the contact measure;
    ``closest_exact`` is its closest pair by mj_geomDistance."""
    found = contacts.distances(check.data.qpos)
    d_exact, pair_exact = closest_exact
    if d_exact < clearance + NEAR_BAND_M and pair_exact not in found:
        res.closest_unseen += 1
    if not found:
        return
    pair = min(found, key=found.get)
    dc = found[pair]
    res.below_clearance += dc < clearance - 1e-9
    exact_of = lambda p: mujoco.mj_geomDistance(check.model, check.data, p[0], p[1], 1.0, None)  # noqa: E731
    if dc < res.min_distance_m:
        res.min_distance_m, res.worst_pair, res.worst_episode, res.exact_at_worst_m = (
            dc, pair_label(check, pair), episode, exact_of(pair))
    for p, dp in found.items():  # both measures on the near pairs
        if dp >= clearance + NEAR_BAND_M:
            continue
        exact = exact_of(p)
        if exact - dp > res.most_below_m:
            res.most_below_m, res.most_below_pair = exact - dp, pair_label(check, p)
        if dp - exact > res.most_above_m:
            res.most_above_m, res.most_above_pair = dp - exact, pair_label(check, p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--legs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first", type=int, default=0, help="first episode to run (each episode replays on its own)")
    ap.add_argument("--violations", action="store_true", help="print every solve inside the clearance")
    ap.add_argument("--guard-cost", action="store_true",
                    help="time the guard's uniform cut and its per-arm verdict on every tick's step")
    ap.add_argument("--qp-only", action="store_true", help="no post-step guard: the QP's rows alone")
    ap.add_argument("--barrier", choices=("ours", "mink"), default="ours")
    ap.add_argument("--progress", action="store_true")
    args = ap.parse_args()
    costs: list[tuple[float, float, float]] = []

    def make() -> IkLoop:
        loop = make_adversarial_loop(args.qp_only, args.barrier)
        if args.guard_cost:
            time_guard_variants(loop.ik, costs)
        return loop

    loop = make()
    check = MujocoCollisionCheck()
    report = (lambda v: print("  under: " + v.line(), flush=True)) if args.violations else None
    res = run(loop, args.episodes, args.seed, args.legs, check, args.progress, args.first, make, report)
    clearance = loop.ik.settings.collision.minimum_distance_m
    mode = f"{args.barrier} barrier, " + ("QP rows only" if args.qp_only else "QP rows + exact guard")
    print(f"episodes             {args.first}..{args.first + res.episodes - 1}: {res.episodes} x {args.legs} legs x {LEG_S} s, targets jump <= {MAX_JUMP_M} m ({mode})")
    print(f"checked              {res.solves} solves x {len(check.pairs)} geom pairs (MuJoCo's filter, robot + floor)")
    cm = res.contact
    print(f"closest, exact       {res.min_distance_m * 1000:.3f} mm by mj_geomDistance, the IK's measure "
          f"({res.worst_pair}; attack {res.worst_attack}; episode {res.worst_episode})")
    print(f"closest, contacts    {cm.min_distance_m * 1000:.3f} mm by mj_collision contact.dist, "
          f"{CONTACT_MARGIN_M * 1000:.0f} mm margin ({cm.worst_pair}; episode {cm.worst_episode}; "
          f"mj_geomDistance {cm.exact_at_worst_m * 1000:.3f} mm on the same pair and solve)")
    print(f"below clearance      solves under {clearance * 1000:.0f} mm: {res.below_clearance} by mj_geomDistance, "
          f"{cm.below_clearance} by contacts")
    print(f"contacts vs exact    same pair and solve, pairs under {(clearance + NEAR_BAND_M) * 1000:.0f} mm: contacts read "
          f"up to {cm.most_below_m * 1000:.3f} mm below mj_geomDistance ({cm.most_below_pair}) and up to "
          f"{cm.most_above_m * 1000:.3f} mm above ({cm.most_above_pair}); {cm.closest_unseen} solves' closest pair "
          f"(mj_geomDistance) had no contact")
    print(f"penetrations         {res.penetrations} solves in {res.penetrating_episodes}/{res.episodes} episodes "
          f"(mj_geomDistance < 0)")
    caps = loop.ik.settings.joint_reference
    print("joint caps           " + ", ".join(
        f"{name} {res.cap_violations[name]} solves over {cap:g} (peak {res.cap_peaks[name]:.4g})"
        for name, cap in (("speed", caps.max_speed_rad_s), ("acceleration", caps.max_accel_rad_s2),
                          ("jerk", caps.max_jerk_rad_s3))) + "  [rad/s, rad/s², rad/s³]")
    print(f"guard-shortened      {res.guard_shortened} steps; relaxed QPs {res.relaxed_solves}; failed {res.failed_solves}")
    worst = sorted(res.per_attack_min.items(), key=lambda kv: kv[1])[:5]
    print("closest by attack    " + ", ".join(f"{k} {v * 1000:.2f} mm" for k, v in worst))
    if costs:
        c = np.array(costs) * [1e3, 1e3, 1.0]
        cut = c[c[:, 2] < 1.0]
        line = f"guard cost           uniform / per arm, thread CPU: every tick mean {c[:, 0].mean():.3f} / {c[:, 1].mean():.3f} ms"
        if len(cut):
            line += (f"; the {len(cut)} ticks it shortened mean {cut[:, 0].mean():.3f} / {cut[:, 1].mean():.3f} ms, "
                     f"p99 {np.percentile(cut[:, 0], 99):.3f} / {np.percentile(cut[:, 1], 99):.3f} ms")
        print(line)
    print(f"time                 {res.seconds:.1f} s")


if __name__ == "__main__":
    main()
