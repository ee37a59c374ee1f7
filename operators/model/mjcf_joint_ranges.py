"""Joint ranges read from MJCF text, without MuJoCo.

A node that only needs the model's joint ranges (the sim and Feetech arms
nodes bound commands to them) would otherwise import MuJoCo and compile the
whole model for them: some 25 MB of resident memory per process. This reads
the same numbers from the XML, with MuJoCo's rules for them:

* a joint's attributes come from its own element, then from its default
  class (its ``class``, else the ``childclass`` of the nearest enclosing body
  or frame that has one, else the top-level default), and a class inherits
  every attribute it does not set from the class it is nested in;
* ``range`` is in degrees for hinge joints unless ``<compiler angle="radian">``
  (MuJoCo's default unit is degrees); slide joints are in metres;
* a joint is limited when ``limited="true"``, or when ``limited`` is unset or
  ``auto`` and it has a range and ``autolimits`` is on (MuJoCo's default).

Covered: everything this project's MJCF uses (nested default classes,
``class`` and ``childclass``, ``compiler`` angle and autolimits). Not covered:
``<include>`` (refused with an error, since the included file could define
joints or defaults), ``<replicate>``, ``<attach>`` and ball joints' ranges
(returned as written). tests/operators/model compares the result with
MuJoCo's compiled model joint by joint.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Iterable

from teledora.operators.errors import ConfigError

JointRange = tuple[float, float]


class MjcfJointError(ConfigError):
    """The MJCF cannot be read for joint ranges (include, bad numbers, ...)."""


def _joint_defaults(default: ET.Element, inherited: dict[str, str], out: dict[str, dict[str, str]]) -> None:
    name = default.get("class", "main")
    own = default.find("joint")
    attrs = {**inherited, **(own.attrib if own is not None else {})}
    out[name] = attrs
    for child in default.findall("default"):
        if child.get("class") is None:
            raise MjcfJointError("a nested <default> without a class")
        _joint_defaults(child, attrs, out)


def _walk(element: ET.Element, childclass: str, found: list[tuple[ET.Element, str]]) -> None:
    for child in element:
        if child.tag == "joint":
            found.append((child, childclass))
        elif child.tag in ("body", "frame", "worldbody"):
            _walk(child, child.get("childclass", childclass), found)


def mjcf_joint_ranges(xml_text: str, names: Iterable[str]) -> dict[str, JointRange | None]:
    """The ``(lower, upper)`` range of each named joint (radians for hinges,
    metres for slides), or None for a joint that is not limited.

    Raises:
        MjcfJointError: the text is not MJCF, uses ``<include>``, lacks a named
            joint, names an unknown default class or has a malformed range.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise MjcfJointError(f"not XML: {exc}") from None
    if root.tag != "mujoco":
        raise MjcfJointError(f"root element is <{root.tag}>, not <mujoco>")
    if root.find(".//include") is not None:
        raise MjcfJointError("the model uses <include>; read its ranges from the compiled model instead")
    compiler: dict[str, str] = {}
    for c in root.findall("compiler"):
        compiler.update(c.attrib)
    degrees = compiler.get("angle", "degree") == "degree"
    autolimits = compiler.get("autolimits", "true") == "true"
    defaults: dict[str, dict[str, str]] = {"main": {}}
    for d in root.findall("default"):
        _joint_defaults(d, defaults.get("main", {}), defaults)
    joints: list[tuple[ET.Element, str]] = []
    for body in root.findall("worldbody"):
        _walk(body, "main", joints)
    by_name = {j.get("name"): (j, cls) for j, cls in joints if j.get("name")}
    out: dict[str, JointRange | None] = {}
    for name in names:
        if name not in by_name:
            raise MjcfJointError(f"joint {name!r} is not in the model")
        joint, childclass = by_name[name]
        cls = joint.get("class", childclass)
        if cls not in defaults:
            raise MjcfJointError(f"joint {name!r}: unknown default class {cls!r}")
        attrs = {**defaults[cls], **joint.attrib}
        text, limited = attrs.get("range"), attrs.get("limited", "auto")
        if limited == "false" or (limited == "auto" and (text is None or not autolimits)):
            out[name] = None
            continue
        try:
            lo, hi = (float(v) for v in (text or "").split())
        except ValueError:
            raise MjcfJointError(f"joint {name!r}: range {text!r} is not two numbers") from None
        if degrees and attrs.get("type", "hinge") == "hinge":
            lo, hi = math.radians(lo), math.radians(hi)
        out[name] = (lo, hi)
    return out
