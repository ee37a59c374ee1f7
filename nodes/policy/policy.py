"""policy node: a LeRobot policy proposing arm targets, base and lift commands.

Inputs: ``joint_states`` (JointState, the arms'), ``odom`` (Odometry, the
base's), ``lift_state`` (LiftState): the states the LeRobot export builds
``observation.state`` from (operators/policy/observation.py).
Outputs: ``arm_targets`` (ArmTargets), ``base_cmd`` (BaseCommand),
``lift_cmd`` (LiftCommand), of the same types as the operator's commands and
bounded by the same limits; ``diagnostics``. They are proposals: the node that
owns the IK's inputs passes them on only while the policy has authority
(operators/policy/authority.py), so they reach the arms through the IK's
collision guard and the base and lift through their command limits, never
the actuators directly.

The node steps at ``--fps`` (the dataset's frame rate) by its own clock: each
step builds the observation from the newest states (none older than
``--max-state-age-s``; otherwise it sends nothing and says what it waits for),
asks the inference worker for one action and sends the three commands,
stamped when the action came back. Steps keep to the frame clock; a late step
is not made up (the next comes at least half a period after it).

Inference runs in a worker process (nodes/policy/policy_worker.py) under the
interpreter that has torch and LeRobot (``--python`` or ``TELEDORA_POLICY_PYTHON``;
by default the node's own, for an install with the ``policy`` extra),
talking JSON lines over a pipe: torch and LeRobot stay out of teledora's core
install and out of this process, which may then run under another interpreter. The worker loads ``--checkpoint`` (a local directory
written by the policy's ``save_pretrained``) with the Hub switched off.

Args: ``--checkpoint DIR``, ``--python PATH``, ``--fps`` (30), ``--device``
(the worker's torch device), ``--threads`` (1; 0 is torch's default), ``--max-state-age-s`` (0.2),
``--startup-timeout-s`` (180), ``--step-timeout-s`` (5).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora import models
from teledora.models.config_files import load_drive_config, load_node_profile
from teledora.operators.datasets.lerobot_features import Units
from teledora.operators.errors import TeledoraError
from teledora.operators.policy.observation import ActionMapper, ActionRejected, ObservationBuilder, check_features
from teledora.runtime.node_io import NodeIO, make_node, node_id

WORKER = Path(__file__).with_name("policy_worker.py")
PYTHON_ENV = "TELEDORA_POLICY_PYTHON"
CHECKPOINT_ENV = "TELEDORA_POLICY_CHECKPOINT"
INPUT_KINDS = {"joint_states": "JointState", "odom": "Odometry", "lift_state": "LiftState"}
# inference times kept for the diagnostics' percentiles
TIMES_KEPT = 300


class WorkerError(TeledoraError, RuntimeError):
    """The inference worker failed, answered out of protocol, or took too long."""


class InferenceWorker:
    """The worker process and its JSON-lines pipe."""

    def __init__(self, python: str, checkpoint: Path, device: str | None, threads: int, startup_timeout_s: float) -> None:
        cmd = [python, str(WORKER), str(checkpoint)]
        if device:
            cmd += ["--device", device]
        if threads:
            cmd += ["--threads", str(threads)]
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self._buf = b""
        self.hello = self._read(startup_timeout_s)
        if "error" in self.hello:
            self.close()
            raise WorkerError(f"worker could not load the checkpoint: {self.hello['error']}")
        if not self.hello.get("ready"):
            self.close()
            raise WorkerError(f"worker said {self.hello!r} instead of ready")

    def _read(self, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sel.select(left):
                raise WorkerError(f"no answer from the worker within {timeout_s:g} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise WorkerError(f"worker ended (exit status {self.proc.wait()})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            raise WorkerError(f"worker wrote {line[:200]!r}, not a JSON line") from None
        if not isinstance(msg, dict):
            raise WorkerError(f"worker wrote {msg!r}, not an object")
        return msg

    def act(self, state: Sequence[float], timeout_s: float) -> dict[str, Any]:
        try:
            self.proc.stdin.write((json.dumps({"state": [float(v) for v in state]}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"worker gone: {exc}") from None
        return self._read(timeout_s)

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._sel.close()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="policy", description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path, default=os.environ.get(CHECKPOINT_ENV),
                    help=f"policy checkpoint directory (or {CHECKPOINT_ENV})")
    ap.add_argument("--python", default=os.environ.get(PYTHON_ENV) or sys.executable,
                    help=f"interpreter with torch and LeRobot (or {PYTHON_ENV}; default: this one)")
    ap.add_argument("--fps", type=float, default=30.0, help="steps per second: the dataset's fps")
    ap.add_argument("--device", default=None, help="torch device of the worker (default: cuda when available)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads of the worker (0: torch's default)")
    ap.add_argument("--max-state-age-s", type=float, default=0.2, help="oldest state an observation may use")
    ap.add_argument("--startup-timeout-s", type=float, default=180.0, help="how long the worker may take to load")
    ap.add_argument("--step-timeout-s", type=float, default=5.0, help="how long one inference may take")
    return ap.parse_args(argv)


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    io = NodeIO(make_node(node), node_id("policy"), clock)
    try:
        if args.checkpoint is None:
            raise ValueError(f"--checkpoint (or {CHECKPOINT_ENV}) is required")
        if not (args.fps > 0):
            raise ValueError(f"--fps must be positive, got {args.fps}")
        import mujoco

        from teledora.operators.drive.arm_command_limits import ArmCommandLimits
        from teledora.operators.drive.base_command_limits import BaseCommandLimits
        from teledora.operators.drive.lift_command_limits import LiftCommandLimits
        from teledora.operators.ik.grip_kinematics import GripKinematics

        profile = load_node_profile()
        units = Units(gripper_closed_rad=load_drive_config().arms.gripper_closed_rad)
        model = mujoco.MjModel.from_xml_path(str(models.path(profile.model)))
        mapper = ActionMapper(GripKinematics(model, profile), ArmCommandLimits.from_model(model, profile),
                              BaseCommandLimits.from_profile(profile), LiftCommandLimits.from_profile(profile),
                              units, profile.lift.travel_mm / 1000.0, args.fps, profile.base_frame)
        builder = ObservationBuilder(units, args.max_state_age_s)
        worker = InferenceWorker(args.python, args.checkpoint, args.device, args.threads, args.startup_timeout_s)
    except (OSError, ValueError, WorkerError) as exc:
        io.fail_start("policy", exc)
    hello = worker.hello
    try:
        check_features(hello.get("inputs", {}), hello.get("outputs", {}))
    except ValueError as exc:
        worker.close()
        io.fail_start("policy", exc)
    io.log("info", f"policy {hello.get('type')} loaded on {hello.get('device')} in {hello.get('load_s', 0):.1f} s")
    period_ns = int(1e9 / args.fps)
    infer_s: list[float] = []
    round_trip_s: list[float] = []
    steps = overruns = 0

    def refresh() -> None:
        io.diag.details.update(
            policy=hello.get("type"), device=hello.get("device"), n_action_steps=hello.get("n_action_steps"),
            load_s=round(float(hello.get("load_s", 0.0)), 3), steps=steps, overruns=overruns,
            waiting=builder.waiting, action=mapper.counts())
        if infer_s:
            io.diag.details.update(infer_ms_p50=round(1e3 * _percentile(infer_s, 0.5), 3),
                                   infer_ms_p95=round(1e3 * _percentile(infer_s, 0.95), 3),
                                   round_trip_ms_p50=round(1e3 * _percentile(round_trip_s, 0.5), 3))

    next_ns = io.now()
    try:
        while (batch := io.next_batch(max(0.0, (next_ns - io.now()) / 1e9))) is not None:
            for event in io.newest(batch, set(INPUT_KINDS)):
                if event["type"] != "INPUT":
                    continue
                kind = INPUT_KINDS.get(event["id"])
                if kind is None:
                    io.reject(f"unexpected input {event['id']!r}")
                    continue
                msg = io.decode(event, kind)
                if msg is None:
                    continue
                try:
                    {"joint_states": builder.on_joint_states, "odom": builder.on_odometry,
                     "lift_state": builder.on_lift_state}[event["id"]](msg)
                except KeyError as exc:
                    io.reject(f"input {event['id']!r}: no joint {exc}", "joints")
            now = io.now()
            if now >= next_ns:
                next_ns = max(next_ns + period_ns, now + period_ns // 2)
                obs = builder.build(now)
                if obs is not None:
                    t0 = time.perf_counter()
                    reply = worker.act(obs.state.tolist(), args.step_timeout_s)
                    rt = time.perf_counter() - t0
                    steps += 1
                    if "error" in reply:
                        io.diag.error(f"inference failed: {reply['error']}")
                        io.log("error", f"inference failed: {reply['error']}")
                    else:
                        infer_s.append(float(reply.get("infer_s", rt)))
                        round_trip_s.append(rt)
                        del infer_s[:-TIMES_KEPT], round_trip_s[:-TIMES_KEPT]
                        stamp = io.now()
                        if stamp - now > period_ns:
                            overruns += 1
                        try:
                            cmds = mapper.map(reply.get("action", []), obs.lift_height_m, stamp)
                        except ActionRejected as exc:
                            io.reject(f"policy action: {exc}", "action")
                        else:
                            for c in cmds.clamps:
                                io.clamp(f"policy action: {c}")
                            io.send("arm_targets", "ArmTargets", cmds.arm_targets)
                            io.send("base_cmd", "BaseCommand", cmds.base_cmd)
                            io.send("lift_cmd", "LiftCommand", cmds.lift_cmd)
            io.publish_diagnostics(refresh=refresh)
    except WorkerError as exc:
        io.diag.set_status("error", f"inference worker: {exc}")
        io.diag.error(str(exc))
        io.log("error", f"inference worker: {exc}; no more actions")
        refresh()
        io.publish_diagnostics(force=True)
        raise SystemExit(f"policy: {exc}") from None
    finally:
        worker.close()
    refresh()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
