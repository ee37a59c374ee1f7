"""Frame and joint names have one home, the robot profile: no Python source
under operators/, nodes/, teledora/ or models/ writes one as a string literal;
code reads them from the RobotProfile its node loaded."""

from __future__ import annotations

import ast
import functools
import itertools
from pathlib import Path
from typing import Iterator

import yaml

from teledora import models
from teledora.models.config_files import load_renderer_config
from teledora.operators.model.sides import SIDES

REPO = Path(__file__).resolve().parents[2]
CODE = ("operators", "nodes", "teledora", "models")
PROFILE = models.load_profile()

# Literal copies that are meant: "file:line" -> why. Empty: nothing in the
# shipped code needs to write a profile name itself (the MJCF files are XML
# and the profile loader reads them from profile.yaml).
ALLOWED: dict[str, str] = {}

# Names with a second meaning that is no copy of the profile: "world" is
# MuJoCo's own name for its world body and the root of the viewer's entity
# tree; a name that is also a dataflow input or output id (odom) is an id
# there. Such a name counts as a copy only where it stands for a frame.
OTHER_MEANINGS = {"world"}


def _profile_names() -> dict[str, str]:
    """Every frame and joint name of the profile -> what it names."""
    p = PROFILE
    names = {p.base_frame: "base_frame", p.world_frame: "world_frame", p.odom_frame: "odom_frame",
             p.lift_joint: "lift_joint"}
    names.update({j: "base_joints" for j in p.base_joints})
    for side, arm in p.arms.items():
        names.update({j: f"arms.{side}.joints" for j in arm.joints})
        names[arm.gripper] = f"arms.{side}.gripper"
        names[arm.grip_site] = f"arms.{side}.grip_site"
    return names


def _dataflow_ids() -> set[str]:
    ids: set[str] = set()
    for path in (REPO / "dataflows").glob("*.yml"):
        for node in yaml.safe_load(path.read_text()).get("nodes") or []:
            ids.update(node.get("outputs") or [])
            ids.update(node.get("inputs") or {})
    return ids


NAMES = _profile_names()
AMBIGUOUS = {n for n in NAMES if n in OTHER_MEANINGS or n in _dataflow_ids()}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _renderings(node: ast.AST) -> set[str]:
    """What a string literal can spell: a constant itself; an f-string or a
    sum of strings with each non-literal part read as a side (``f"{side}_gripper"``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.JoinedStr):
        parts = node.values
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts, stack = [], [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
                stack += [n.right, n.left]
            else:
                parts.append(n)
        if not any(isinstance(p, ast.Constant) and isinstance(p.value, str) for p in parts):
            return set()
    else:
        return set()
    holes = sum(1 for p in parts if not (isinstance(p, ast.Constant) and isinstance(p.value, str)))
    if holes > 3:
        return set()
    out = set()
    for fill in itertools.product(SIDES, repeat=holes):
        it = iter(fill)
        out.add("".join(p.value if isinstance(p, ast.Constant) and isinstance(p.value, str) else next(it) for p in parts))
    return out


def _mentions_frame(node: ast.AST | None) -> bool:
    return node is not None and "frame" in ast.unparse(node).lower()


def _frame_slots(tree: ast.AST) -> set[int]:
    """Literals standing where a frame goes: under a key, keyword, parameter or
    variable named *frame*, compared with one, or an argument beside a frame
    (``identity(profile.world_frame, "odom")``)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            out.update(id(v) for k, v in zip(node.keys, node.values) if _mentions_frame(k))
        elif isinstance(node, ast.Call):
            out.update(id(k.value) for k in node.keywords if k.arg and "frame" in k.arg.lower())
            args = list(node.args) + [k.value for k in node.keywords]
            if any(isinstance(a, (ast.Name, ast.Attribute)) and _mentions_frame(a) for a in args):
                out.update(id(a) for a in args)
        elif isinstance(node, ast.arguments):
            positional = node.posonlyargs + node.args
            pairs = list(zip(positional[len(positional) - len(node.defaults):], node.defaults))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults) if d is not None]
            out.update(id(d) for a, d in pairs if "frame" in a.arg.lower())
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(_mentions_frame(t) for t in targets):
                out.add(id(node.value))
                out.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_mentions_frame(s) for s in sides):
                out.update(id(n) for s in sides for n in ast.walk(s))
    return out


def literal_copies(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of each profile name a source file writes as a literal."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings, frames = _docstrings(tree), _frame_slots(tree)
    inside_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inside_fstrings:
            continue
        for name in _renderings(node) & NAMES.keys():
            if name not in AMBIGUOUS or id(node) in frames:
                yield node.lineno, name


@functools.cache
def _copies_in_code() -> tuple[tuple[str, str], ...]:
    """("file:line", name) of each copy in every Python source of the package."""
    out = []
    for top in CODE:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            out += [(f"{rel}:{line}", name) for line, name in literal_copies(path)]
    return tuple(sorted(out))


def test_no_source_copies_a_profile_frame_or_joint_name() -> None:
    found = [f"{at}: {name!r} (profile {NAMES[name]})" for at, name in _copies_in_code() if at not in ALLOWED]
    assert not found, "literal copies of profile names; read them from the RobotProfile:\n" + "\n".join(found)


def test_every_allowed_copy_is_still_there() -> None:
    stale = set(ALLOWED) - {at for at, _ in _copies_in_code()}
    assert not stale, f"stale allow-list entries: {sorted(stale)}"


# Config keys that name a model body, any body: a camera hangs on the body its
# mount names, which may be the base as well as a wrist.
BODY_KEYS = {"parent_frame"}


def _frame_values(data: object, key: str = "") -> Iterator[tuple[str, object]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _frame_values(v, f"{key}.{k}" if key else str(k))
    elif isinstance(data, list):
        for v in data:
            yield from _frame_values(v, key)
    elif "frame" in key.rsplit(".", 1)[-1] and key.rsplit(".", 1)[-1] not in BODY_KEYS:
        yield key, data


def test_no_other_config_file_names_a_profile_frame() -> None:
    frames = {PROFILE.base_frame, PROFILE.world_frame, PROFILE.odom_frame}
    found = []
    for path in sorted((REPO / "models").rglob("*.yaml")):
        if path.name == "profile.yaml":
            continue
        for key, value in _frame_values(yaml.safe_load(path.read_text())):
            if value in frames:
                found.append(f"{path.relative_to(REPO).as_posix()}: {key}: {value}")
    assert not found, "frame names belong in profile.yaml only:\n" + "\n".join(found)


def test_the_renderers_binding_of_the_shipped_model_uses_the_profiles_joints() -> None:
    """renderer.yaml binds a model by its own joint names (an imported URDF may
    name them differently); for the shipped model they are the profile's."""
    binding = load_renderer_config().model
    if binding.path in (PROFILE.model, PROFILE.scene):
        assert (tuple(binding.base_joints), binding.lift_joint) == (PROFILE.base_joints, PROFILE.lift_joint)


def test_the_scan_finds_copies_and_spares_ids_and_docstrings(tmp_path: Path) -> None:
    p = PROFILE
    left = p.arms["left"]
    source = f'''
"""Docstrings may say {p.base_frame}."""
def f(side, frame_id={p.odom_frame!r}):
    """{p.lift_joint} in a docstring."""
    joints = ({p.base_joints[0]!r}, "other")
    grip = f"{{side}}_{left.gripper.removeprefix("left_")}"
    msg = {{"frame_id": {p.world_frame!r}}}
    if event_id == {p.odom_frame!r}:
        counts[{p.odom_frame!r}] += 1
    identity(profile.base_frame, {p.odom_frame!r})
    log({p.world_frame!r}, coordinates)
'''
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    assert sorted(literal_copies(probe)) == sorted([
        (3, p.odom_frame), (5, p.base_joints[0]), (6, left.gripper), (6, p.arms["right"].gripper),
        (7, p.world_frame), (10, p.odom_frame)])
