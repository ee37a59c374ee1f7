"""Joint ranges read from MJCF text agree with MuJoCo's compiled model."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.model.mjcf_joint_ranges import MjcfJointError, mjcf_joint_ranges

from teledora import models

PROFILE = models.load_profile()


def _compiled(xml: str) -> dict[str, tuple[float, float] | None]:
    model = mujoco.MjModel.from_xml_string(xml)
    out = {}
    for j in range(model.njnt):
        name = model.joint(j).name
        if name and int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            out[name] = tuple(float(v) for v in model.jnt_range[j]) if model.jnt_limited[j] else None
    return out


def _assert_same(xml: str) -> None:
    want = _compiled(xml)
    got = mjcf_joint_ranges(xml, want)
    assert set(got) == set(want)
    for name, rng in want.items():
        if rng is None:
            assert got[name] is None, name
        else:
            assert got[name] is not None and np.allclose(got[name], rng, rtol=0, atol=1e-12), (name, got[name], rng)


def test_every_joint_of_the_robot_model_matches_mujoco():
    _assert_same(models.path(PROFILE.model).read_text())


def test_arm_limits_from_the_text_equal_those_from_the_compiled_model():
    text = models.path(PROFILE.model).read_text()
    model = mujoco.MjModel.from_xml_path(str(models.path(PROFILE.model)))
    assert ArmCommandLimits.from_mjcf(text, PROFILE).ranges == ArmCommandLimits.from_model(model, PROFILE).ranges


SYNTHETIC = """
<mujoco>
  <compiler {compiler}/>
  <default>
    <joint range="-10 20"/>
    <default class="outer">
      <joint range="-30 40" type="slide"/>
      <default class="inner">
        <joint damping="1"/>
      </default>
    </default>
    <default class="open"><joint limited="false"/></default>
  </default>
  <worldbody>
    <body name="a">
      <joint name="top" axis="0 0 1"/>
      <geom size="0.1"/>
      <body name="b" childclass="inner">
        <joint name="from_childclass" axis="0 0 1"/>
        <joint name="own_class" class="outer" type="hinge" axis="1 0 0"/>
        <joint name="own_range" range="-1 1" axis="0 1 0" type="hinge"/>
        <geom size="0.1"/>
        <frame childclass="open">
          <body name="c">
            <joint name="unlimited" axis="0 0 1"/>
            <joint name="explicit" limited="true" range="-5 5" axis="1 0 0"/>
            <geom size="0.1"/>
          </body>
        </frame>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("compiler", ['angle="radian"', 'angle="degree"', '', 'angle="degree" autolimits="true"'])
def test_defaults_classes_units_and_limited_follow_mujoco(compiler):
    _assert_same(SYNTHETIC.format(compiler=compiler))


def test_degrees_are_converted_for_hinges_only():
    got = mjcf_joint_ranges(SYNTHETIC.format(compiler=""), ["top", "from_childclass"])
    assert got["top"] == pytest.approx((math.radians(-10), math.radians(20)))
    assert got["from_childclass"] == (-30.0, 40.0)  # a slide, from class outer through inner


@pytest.mark.parametrize("xml, needle", [
    ("<mujoco><include file='x.xml'/></mujoco>", "include"),
    ("<robot/>", "not <mujoco>"),
    ("<mujoco", "not XML"),
    ("<mujoco><worldbody/></mujoco>", "not in the model"),
    ("<mujoco><worldbody><body><joint name='top' class='nope'/></body></worldbody></mujoco>", "unknown default class"),
    ("<mujoco><worldbody><body><joint name='top' range='1'/></body></worldbody></mujoco>", "not two numbers"),
])
def test_unreadable_models_are_refused(xml, needle):
    with pytest.raises(MjcfJointError, match=needle):
        mjcf_joint_ranges(xml, ["top"])
