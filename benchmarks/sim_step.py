"""Physics step cost of the sim's scene with and without its objects to grasp.

Three variants of the shipped ``scene.xml``, each in its own ``SimPhysics``
with the robot at home:

* "no objects": the scene with the stand's four free bodies removed;
* "objects": the shipped scene (objects resting on the stand, sleep enabled:
  resting objects drop out of the step);
* "objects awake": the same with sleep disabled (every resting contact solved
  every step).

Blocks of steps alternate between the variants so machine load hits all
alike; each block is timed in thread CPU time. Prints median and p90 per step
and the ratios to "no objects". The sim node steps at the model's timestep
(2 ms), so a step's cost is also the fraction of one core that physics takes.

    python benchmarks/sim_step.py [--blocks 40] [--steps 250]
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np
from teledora.operators.sim.sim_physics import SimPhysics

from teledora import models

OBJECTS = ("cube_red", "cube_blue", "cube_green", "cylinder")


def _variants(profile) -> dict[str, mujoco.MjModel]:
    path = str(models.path(profile.scene))
    bare = mujoco.MjSpec.from_file(path)
    for name in OBJECTS:
        bare.delete(bare.body(name))
    awake = mujoco.MjSpec.from_file(path)
    awake.option.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    return {"no objects": bare.compile(), "objects": mujoco.MjModel.from_xml_path(path), "objects awake": awake.compile()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--steps", type=int, default=250, help="steps per block")
    args = parser.parse_args()
    profile = models.load_profile()
    sims = {name: SimPhysics(model, profile) for name, model in _variants(profile).items()}
    for sim in sims.values():
        sim.step(1000)  # 2 s: the objects settle (and fall asleep where allowed)
    per_step: dict[str, list[float]] = {name: [] for name in sims}
    for _ in range(args.blocks):
        for name, sim in sims.items():
            t0 = time.thread_time_ns()
            sim.step(args.steps)
            per_step[name].append((time.thread_time_ns() - t0) / args.steps / 1e3)
    base = float(np.median(per_step["no objects"]))
    print(f"{args.blocks} blocks of {args.steps} steps per variant, thread CPU time per step (us)")
    for name, values in per_step.items():
        med, p90 = float(np.median(values)), float(np.percentile(values, 90))
        print(f"  {name:14s} median {med:7.1f}  p90 {p90:7.1f}  median / no objects {med / base:5.2f}  "
              f"contacts {sims[name].data.ncon}")


if __name__ == "__main__":
    main()
