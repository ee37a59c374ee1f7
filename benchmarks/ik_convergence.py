"""IK convergence on random reachable targets.

Targets are forward kinematics of random arm configurations (home ± a random
offset per joint) that keep every proxy pair at least 2 cm apart, so each is
reachable and collision-free. From home, both arms track their targets with
the full tick (QP, caps, collision constraints and guard) at 100 Hz; a target
counts as reached when the grip is within 1 mm and 0.01 rad. Prints the
fraction reached and the ticks it took (median, p90, max).

    python benchmarks/ik_convergence.py [--targets 200] [--max-ticks 600] [--spread 0.6]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from teledora import models
from teledora.operators.geometry import Pose, quat_angle
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.model.sides import SIDES
from teledora.models.config_files import load_ik_config

POS_TOL_M = 1e-3
ORI_TOL_RAD = 0.01


def random_targets(ik: BimanualIk, n: int, spread: float, rng: np.random.Generator) -> list[dict[str, Pose]]:
    home = ik.arm_q()
    out = []
    while len(out) < n:
        q = home + rng.uniform(-spread, spread, home.shape)
        ik.reset(q)
        if ik.min_proxy_distance() < 0.02:
            continue
        out.append({s: ik.grip_pose(s) for s in SIDES})
    ik.reset(home)
    return out


def run(n: int, max_ticks: int, spread: float, seed: int = 0) -> dict[str, float | np.ndarray]:
    settings = load_ik_config().settings
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), True), models.load_profile(), settings)
    rng = np.random.default_rng(seed)
    home = ik.arm_q()
    targets = random_targets(ik, n, spread, rng)
    ticks = np.full(n, -1)
    final_pos, final_ori = np.zeros(n), np.zeros(n)
    t0 = time.perf_counter()
    for i, tg in enumerate(targets):
        ik.reset(home)
        for k in range(1, max_ticks + 1):
            ik.tick(tg)
            pos = max(float(np.linalg.norm(ik.grip_pose(s).position - tg[s].position)) for s in SIDES)
            ori = max(quat_angle(ik.grip_pose(s).orientation, tg[s].orientation) for s in SIDES)
            if pos <= POS_TOL_M and ori <= ORI_TOL_RAD:
                ticks[i] = k
                break
        final_pos[i], final_ori[i] = pos, ori
    return {"ticks": ticks, "final_pos": final_pos, "final_ori": final_ori, "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--max-ticks", type=int, default=600)
    ap.add_argument("--spread", type=float, default=0.6, help="rad, per joint around home")
    args = ap.parse_args()
    res = run(args.targets, args.max_ticks, args.spread)
    ticks = res["ticks"]
    ok = ticks > 0
    print(f"{args.targets} random reachable bimanual targets (home ± {args.spread} rad per joint), 10 ms ticks")
    print(f"reached within {POS_TOL_M * 1000:.0f} mm / {ORI_TOL_RAD} rad: {ok.sum()}/{len(ticks)} ({100 * ok.mean():.1f} %)")
    if ok.any():
        t = ticks[ok]
        print(f"ticks to converge: median {np.median(t):.0f}, p90 {np.percentile(t, 90):.0f}, max {t.max()}")
    if (~ok).any():
        print(f"not reached: final position error median {np.median(res['final_pos'][~ok]) * 1000:.2f} mm, "
              f"orientation {np.median(res['final_ori'][~ok]):.4f} rad")
    print(f"time {res['seconds']:.1f} s")


if __name__ == "__main__":
    main()
