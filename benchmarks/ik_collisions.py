"""Adversarial collision check of the bimanual IK: random target sequences
that drive the two grips into each other, into the chest and into the floor.

Each sequence starts from home at a random lift height and chains three legs;
each leg picks one attack (grips together, grips into the chest box, grips
below the floor) with random orientations and runs ``--ticks`` IK ticks. After
every tick the exact signed distance of every proxy pair is measured. Prints
the minimum seen (must stay >= 0) and how often the post-step guard had to
shorten a step. ``--no-guard`` measures the QP constraints alone.

    python benchmarks/ik_collisions.py [--sequences 1000] [--ticks 40] [--no-guard]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

import numpy as np

from teledora import models
from teledora.operators.geometry import Pose, quat_normalize
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.models.config_files import load_ik_config

ATTACKS = ("grips_together", "into_chest", "into_floor")


@dataclass
class AdversarialResult:
    sequences: int
    ticks: int
    min_distance_m: float
    worst_attack: str
    guard_shortened: int
    failures: int
    seconds: float


def make_ik(guard: bool = True) -> BimanualIk:
    config = load_ik_config()
    settings = config.settings
    if not guard:
        settings = replace(settings, collision=replace(config.collision, guard_distance_m=None))
    model = build_ik_model(models.path(settings.solver.model), settings.solver.add_floor)
    return BimanualIk(model, models.load_profile(), settings)


def attack_targets(ik: BimanualIk, rng: np.random.Generator, attack: str) -> dict[str, Pose]:
    """Targets of one adversarial leg, from the current configuration."""
    data = ik.configuration.data
    if attack == "grips_together":
        mid = 0.5 * (ik.grip_pose("left").position + ik.grip_pose("right").position) + rng.normal(0, 0.05, 3)
        pl, pr = mid + rng.normal(0, 0.02, 3), mid + rng.normal(0, 0.02, 3)
    elif attack == "into_chest":
        chest = data.geom_xpos[ik.model.geom("chest").id]
        pl, pr = chest + rng.normal(0, 0.05, 3), chest + rng.normal(0, 0.05, 3)
    else:
        pl = np.array([rng.uniform(0.05, 0.5), rng.uniform(-0.1, 0.45), rng.uniform(-0.3, 0.02)])
        pr = np.array([rng.uniform(0.05, 0.5), rng.uniform(-0.45, 0.1), rng.uniform(-0.3, 0.02)])
    return {
        "left": Pose.of(pl, quat_normalize(rng.normal(size=4))),
        "right": Pose.of(pr, quat_normalize(rng.normal(size=4))),
    }


def run(ik: BimanualIk, sequences: int, ticks: int, seed: int = 0, legs: int = 3) -> AdversarialResult:
    rng = np.random.default_rng(seed)
    home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])
    lift_lo, lift_hi = ik.model.jnt_range[ik.model.joint(ik.profile.lift_joint).id]
    worst, worst_attack = np.inf, ""
    t0 = time.perf_counter()
    for _ in range(sequences):
        ik.reset(home, lift_joint=float(rng.uniform(lift_lo, lift_hi)))
        for _ in range(legs):
            attack = ATTACKS[int(rng.integers(len(ATTACKS)))]
            targets = attack_targets(ik, rng, attack)
            for _ in range(ticks):
                ik.tick(targets)
                d = ik.min_proxy_distance(distmax=0.05)
                if d < worst:
                    worst, worst_attack = d, attack
    return AdversarialResult(sequences, ticks, float(worst), worst_attack, ik.guard_shortened, ik.failures,
                             time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", type=int, default=1000)
    ap.add_argument("--ticks", type=int, default=40, help="IK ticks per leg (10 ms each)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-guard", action="store_true", help="QP collision constraints only")
    args = ap.parse_args()
    res = run(make_ik(guard=not args.no_guard), args.sequences, args.ticks, args.seed)
    print(f"sequences            {res.sequences} x 3 legs x {res.ticks} ticks ({'QP only' if args.no_guard else 'QP + guard'})")
    print(f"min proxy distance   {res.min_distance_m * 1000:.3f} mm  (worst attack: {res.worst_attack})")
    print(f"guard-shortened      {res.guard_shortened} steps")
    print(f"failed solves        {res.failures}")
    print(f"time                 {res.seconds:.1f} s")


if __name__ == "__main__":
    main()
