"""The scripted operator of a policy's run: it drives to the scene as the
scripted demonstrator does, hands the robot to the policy with the X+A hold,
and then only marks the episodes (the page's START and KEEP) at the
demonstrator's times while its hands rest. It never takes over, so the
episodes' outcomes are the policy's.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

from teledora.operators.policy.authority import AuthorityConfig
from teledora.operators.xr.scripted_operator import HandKey, Keyframe, OperatorScript

# the gesture is held this much longer than the selector's hold, and starts
# and ends this long after and before the keyframes around it
HOLD_MARGIN_S = 0.3
GAP_S = 0.5


def handback_script(demonstrator: OperatorScript, hold_s: float = AuthorityConfig().handback_hold_s) -> OperatorScript:
    """``demonstrator``'s keyframes before its first episode START (the drive
    to the scene), the hand-back gesture, then every later keyframe shifted
    to make room for it, with its episode buttons and resting hands.

    Raises:
        ValueError: the script has no episode START.
    """
    first_start = next((i for i, k in enumerate(demonstrator.keyframes) if k.ui_episode_start), None)
    if first_start is None or first_start == 0:
        raise ValueError("the demonstrator's script has no episode START after its drive part")
    drive = list(demonstrator.keyframes[:first_start])
    begin = drive[-1].t_s + GAP_S
    end = begin + hold_s + HOLD_MARGIN_S
    both = HandKey(primary=1.0)
    keys = drive + [Keyframe(t_s=round(begin, 6), left=both, right=both), Keyframe(t_s=round(end, 6))]
    shift = end + GAP_S - demonstrator.keyframes[first_start].t_s
    for k in demonstrator.keyframes[first_start:]:
        keys.append(Keyframe(t_s=round(k.t_s + shift, 6), ui_episode_start=k.ui_episode_start,
                             ui_episode_keep=k.ui_episode_keep, ui_episode_discard=k.ui_episode_discard))
    return OperatorScript(hand_origin_m=dict(demonstrator.hand_origin_m), keyframes=tuple(keys),
                          base_driving=demonstrator.base_driving)


def script_mapping(value: Any) -> Any:
    """A script (or any part of one) as the YAML mapping its loader reads."""
    if is_dataclass(value):
        return {f.name: script_mapping(getattr(value, f.name)) for f in fields(value) if getattr(value, f.name) is not None}
    if isinstance(value, dict):
        return {k: script_mapping(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [script_mapping(v) for v in value]
    if isinstance(value, np.ndarray):
        return [float(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value
