"""The scripted operator: deterministic, smooth, validated."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.contract.messages import encode
from teledora.models.config_files import load_demo_script
from teledora.operators.xr.scripted_operator import OperatorScript, ScriptedOperator, ScriptError

SCRIPT = {
    "hand_origin_m": {"left": [0.3, 0.2, 1.0], "right": [0.3, -0.2, 1.0]},
    "keyframes": [
        {"t_s": 0.0},
        {"t_s": 1.0, "left": {"offset_m": [0.1, 0.0, 0.0], "rpy_deg": [0, 0, 90]}, "right": {"stick": [0.0, -1.0]}},
        {"t_s": 3.0, "left": {"offset_m": [0.1, 0.0, 0.0], "rpy_deg": [0, 0, 90], "trigger": 1.0}},
    ],
}


def test_poses_blend_with_zero_velocity_at_keyframes() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(SCRIPT))
    p0, _ = op.hand_pose("left", 0.0)
    p_half, _ = op.hand_pose("left", 0.5)
    p1, q1 = op.hand_pose("left", 1.0)
    np.testing.assert_allclose(p0, [0.3, 0.2, 1.0])
    np.testing.assert_allclose(p_half, [0.35, 0.2, 1.0])
    np.testing.assert_allclose(p1, [0.4, 0.2, 1.0])
    np.testing.assert_allclose(q1, [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-12)
    eps = 1e-4
    speed_at_start = np.linalg.norm(op.hand_pose("left", eps)[0] - p0) / eps
    assert speed_at_start < 1e-3


def test_sticks_and_buttons_hold_until_the_next_keyframe() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(SCRIPT))
    assert op.report(0.5, 0, 0)["right"]["stick"].tolist() == [0.0, 0.0]
    assert op.report(1.5, 0, 0)["right"]["stick"].tolist() == [0.0, -1.0]
    assert op.report(3.0, 0, 0)["left"]["trigger"] == 1.0


def test_reports_are_valid_contract_messages_and_deterministic() -> None:
    op = ScriptedOperator(load_demo_script())
    for t in np.linspace(0, op.duration_s, 50):
        a, b = op.report(t, 1, 2), op.report(t, 1, 2)
        assert encode("XrControllers", a) == encode("XrControllers", b)
    assert op.settled_windows(1.0)  # the demo holds still so tracking can settle


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"keyframes": []}, "hand_origin_m"),
        (dict(SCRIPT, keyframes=[{"t_s": 1.0}]), "start at 0"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0}, {"t_s": 0.0}]), "strictly increase"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0, "left": {"offset_m": [0, 0]}}]), "3 finite numbers"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0, "left": {"grip": 1}}]), "unknown keys"),
    ],
)
def test_malformed_scripts_say_what_is_wrong(bad, match) -> None:
    with pytest.raises(ScriptError, match=match):
        ScriptedOperator(OperatorScript.from_mapping(bad))
