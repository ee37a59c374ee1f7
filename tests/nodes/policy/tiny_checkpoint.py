"""Writes a small LeRobot policy with random weights for the policy node's tests.

Run under the LeRobot environment's python (tools/lerobot_env.sh):
``python tiny_checkpoint.py OUT_DIR [--type sac|tdmpc]``. The policy reads the
export's ``observation.state`` and writes its ``action`` (18 entries each) and
carries normalisation statistics over plausible ranges of those entries, so its
actions come out in the export's units; a few ranges reach past the robot's
caps, so the node's clamping is exercised. Weights are random: the test checks
the plumbing and the bounds, not behaviour.
"""

from __future__ import annotations

import argparse

import torch
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.factory import get_policy_class, make_policy_config, make_pre_post_processors

N = 18
# per entry (export order): 12 arm joints and 2 grippers, then x.vel, y.vel, theta.vel, lift height
LOW = [-90.0] * 6 + [0.0] + [-90.0] * 6 + [0.0] + [-0.5, -0.5, -60.0, 0.0]
HIGH = [90.0] * 6 + [100.0] + [90.0] * 6 + [100.0] + [0.5, 0.5, 60.0, 600.0]
SMALL = {
    "sac": dict(latent_dim=16),
    "tdmpc": dict(latent_dim=8, mlp_dim=16, horizon=3, n_gaussian_samples=16, n_pi_samples=4, cem_iterations=1,
                  n_elites=4),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--type", default="sac", choices=sorted(SMALL))
    args = ap.parse_args()
    torch.manual_seed(0)
    low, high = torch.tensor(LOW), torch.tensor(HIGH)
    stats = {k: {"min": low, "max": high, "mean": (low + high) / 2, "std": (high - low) / 4}
             for k in ("observation.state", "action")}
    config = make_policy_config(
        args.type, device="cpu",
        input_features={"observation.state": PolicyFeature(type=FeatureType.STATE, shape=(N,))},
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(N,))},
        **SMALL[args.type])
    policy = get_policy_class(args.type)(config)
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    for part in (policy, pre, post):
        part.save_pretrained(args.out)


if __name__ == "__main__":
    main()
