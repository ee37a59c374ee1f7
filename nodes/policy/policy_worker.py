"""Inference worker of the policy node: runs a LeRobot checkpoint, one action per request.

Started by nodes/policy/policy.py under an interpreter that has torch and
LeRobot (a separate LeRobot environment, or teledora's with the ``policy``
extra), so it imports nothing of teledora. It talks JSON lines over its stdin and stdout:

* first it writes ``{"ready": true, "type", "inputs", "outputs",
  "n_action_steps", "device", "load_s"}`` (feature name -> shape), or
  ``{"error": "..."}`` and exits;
* then for each request ``{"state": [...], "reset": bool}`` it writes
  ``{"action": [...], "infer_s": s}`` or ``{"error": "..."}``.

``select_action`` keeps the policy's own action queue, so a policy that
predicts chunks runs its network once per chunk and answers from the queue in
between; ``reset`` empties the queue first. The checkpoint is read from its
local directory only (the Hub is switched off). Anything the libraries print
goes to stderr: stdout carries the protocol alone.

    python policy_worker.py CHECKPOINT_DIR [--device cpu|cuda] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="policy_worker", description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", help="directory written by the policy's save_pretrained")
    ap.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = ap.parse_args(argv)
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg) + "\n")

    os.environ["HF_HUB_OFFLINE"] = "1"
    t0 = time.perf_counter()
    try:
        if not os.path.isdir(args.checkpoint):
            raise FileNotFoundError(f"no checkpoint directory {args.checkpoint}")
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        if args.threads > 0:
            torch.set_num_threads(args.threads)
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        config = PreTrainedConfig.from_pretrained(args.checkpoint)
        config.device = device
        policy = get_policy_class(config.type).from_pretrained(args.checkpoint, config=config)
        policy.eval()
        overrides = {"device_processor": {"device": device}}
        pre, post = make_pre_post_processors(config, pretrained_path=args.checkpoint,
                                             preprocessor_overrides=overrides)
    except Exception as exc:  # the node reports it and stops
        send({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    send({
        "ready": True,
        "type": config.type,
        "inputs": {k: list(v.shape) for k, v in config.input_features.items()},
        "outputs": {k: list(v.shape) for k, v in config.output_features.items()},
        "n_action_steps": int(getattr(config, "n_action_steps", 1) or 1),
        "device": device,
        "load_s": time.perf_counter() - t0,
    })
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if request.get("reset"):
                policy.reset()
            state = torch.tensor([request["state"]], dtype=torch.float32)
            t = time.perf_counter()
            with torch.inference_mode():
                action = post(policy.select_action(pre({"observation.state": state})))
            infer_s = time.perf_counter() - t
            send({"action": action.reshape(-1).cpu().tolist(), "infer_s": infer_s})
        except Exception as exc:  # one bad step is reported, the worker stays up
            send({"error": f"{type(exc).__name__}: {exc}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
