"""Name-addressed joint states onto a MuJoCo model's qpos, with whole-message checks.

A display of the robot must show only poses that really were reported. This
module keeps that promise:

* :func:`qpos_addresses` maps every 1-DoF joint name of a model to its qpos
  address (never an index into a message);
* :class:`JointStateMapping` checks an incoming set of names and values as a
  whole: length mismatch, duplicate, unknown or non-finite entries, or a joint
  group that is only partly present, reject the message entirely;
* :class:`PoseState` holds the last valid value of every group, reports which
  groups have never been received, and writes qpos only when all are known;
* :class:`PublisherWatch` notices a second publisher interleaving on one state
  topic, from a publisher id in the metadata, from a ``seq`` that runs
  backwards, or from ``stamp_ns`` that goes back in time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from teledora.operators.errors import ConfigError, TeledoraError


class JointStateError(TeledoraError, ValueError):
    """A joint state message that must be rejected whole."""


class ModelJointError(ConfigError):
    """The model lacks a joint that the configuration expects."""


def qpos_addresses(model: Any) -> dict[str, int]:
    """Joint name -> qpos address for every hinge and slide joint of a ``mujoco.MjModel``."""
    import mujoco

    one_dof = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
    out: dict[str, int] = {}
    for j in range(model.njnt):
        if int(model.jnt_type[j]) in one_dof:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if name:
                out[name] = int(model.jnt_qposadr[j])
    return out


@dataclass(frozen=True)
class JointGroup:
    """Joints that are always reported together (one arm, the lift, the base)."""

    name: str
    joints: tuple[str, ...]


class JointStateMapping:
    """Checks name-addressed joint values and writes them into qpos.

    Args:
        addresses: Joint name -> qpos address (see :func:`qpos_addresses`).
        groups: The joint groups the display needs; every joint must exist in
            ``addresses``.

    Raises:
        ModelJointError: a group names a joint the model does not have.
    """

    def __init__(self, addresses: Mapping[str, int], groups: Sequence[JointGroup]) -> None:
        missing = sorted(j for g in groups for j in g.joints if j not in addresses)
        if missing:
            raise ModelJointError(f"the model has no joints named {missing}; it has {sorted(addresses)}")
        names = [j for g in groups for j in g.joints]
        if len(set(names)) != len(names):
            raise ModelJointError("a joint belongs to more than one group")
        self.addresses = dict(addresses)
        self.groups = {g.name: g for g in groups}
        self._group_of = {j: g.name for g in groups for j in g.joints}

    def group_of(self, joint: str) -> str | None:
        return self._group_of.get(joint)

    def check(
        self, names: Sequence[str], values: Sequence[float] | np.ndarray, allowed_groups: Iterable[str] | None = None
    ) -> dict[str, dict[str, float]]:
        """Validates a whole message; returns ``{group: {joint: value}}``.

        Every group the message touches must be complete, and (when
        ``allowed_groups`` is given) one of those groups.

        Raises:
            JointStateError: wrong count, duplicate, unknown or non-finite entries,
                or a partly present group. Nothing is applied in that case.
        """
        names = list(names)
        vals = np.asarray(values, dtype=float).reshape(-1)
        if len(names) != vals.shape[0]:
            raise JointStateError(f"{len(names)} names but {vals.shape[0]} positions")
        if not names:
            raise JointStateError("no joints in message")
        if len(set(names)) != len(names):
            raise JointStateError(f"duplicate joint names {sorted({n for n in names if names.count(n) > 1})}")
        allowed = set(self.groups) if allowed_groups is None else set(allowed_groups)
        unknown = sorted(n for n in names if self._group_of.get(n) not in allowed)
        if unknown:
            raise JointStateError(f"unknown joint names {unknown} (expected joints of {sorted(allowed)})")
        bad = [n for n, v in zip(names, vals) if not np.isfinite(v)]
        if bad:
            raise JointStateError(f"non-finite positions for {bad}")
        out: dict[str, dict[str, float]] = {}
        for n, v in zip(names, vals):
            out.setdefault(self._group_of[n], {})[n] = float(v)
        for group, got in out.items():
            missing = [j for j in self.groups[group].joints if j not in got]
            if missing:
                raise JointStateError(f"group {group!r} incomplete: missing {missing}")
        return out

    def write(self, qpos: np.ndarray, values: Mapping[str, float]) -> None:
        """Writes already-checked joint values into ``qpos`` by address."""
        for name, v in values.items():
            qpos[self.addresses[name]] = v


class PoseState:
    """The last valid value of every joint group, and which are still missing.

    Args:
        mapping: The model's joint mapping.
    """

    def __init__(self, mapping: JointStateMapping) -> None:
        self.mapping = mapping
        self._values: dict[str, dict[str, float]] = {}
        self._stamps: dict[str, int] = {}
        self.version = 0

    def update(self, groups: Mapping[str, Mapping[str, float]], stamp_ns: int) -> None:
        """Stores checked group values (from :meth:`JointStateMapping.check`)."""
        for name, vals in groups.items():
            self._values[name] = dict(vals)
            self._stamps[name] = int(stamp_ns)
        self.version += 1

    def missing_groups(self) -> list[str]:
        """Groups with no valid state yet, in declaration order."""
        return [g for g in self.mapping.groups if g not in self._values]

    @property
    def ready(self) -> bool:
        return not self.missing_groups()

    @property
    def stamp_ns(self) -> int:
        """The newest measurement time that went into the pose (0 if none)."""
        return max(self._stamps.values(), default=0)

    def oldest_stamp_ns(self) -> int:
        return min(self._stamps.values(), default=0)

    def values(self) -> dict[str, float]:
        return {j: v for vals in self._values.values() for j, v in vals.items()}

    def write(self, qpos: np.ndarray) -> bool:
        """Writes the full pose into ``qpos``; returns False (writing nothing) while
        any group is missing, so a default pose is never shown as a real one."""
        if not self.ready:
            return False
        self.mapping.write(qpos, self.values())
        return True


_PUBLISHER_KEYS = ("publisher", "source_node", "node")


class PublisherWatch:
    """Detects a second publisher on one state topic.

    Evidence, strongest first: two different publisher ids in the metadata
    (keys ``publisher``, ``source_node`` or ``node``); a metadata ``seq`` that
    repeats or runs backwards; ``stamp_ns`` going back in time. One message that
    goes back could be a clock step, so stamps count only from ``min_regressions``
    on.

    Args:
        topic: Name used in the warning text.
        min_regressions: Backward stamps needed before reporting.
    """

    def __init__(self, topic: str, min_regressions: int = 3) -> None:
        self.topic = topic
        self.min_regressions = min_regressions
        self.publishers: set[str] = set()
        self.regressions = 0
        self._last_seq: int | None = None
        self._last_stamp: int | None = None
        self.warning: str | None = None

    def observe(self, stamp_ns: int, metadata: Mapping[str, Any] | None) -> str | None:
        """Feeds one message; returns a warning the first time a second publisher shows."""
        metadata = metadata or {}
        found: str | None = None
        for key in _PUBLISHER_KEYS:
            if key in metadata:
                self.publishers.add(str(metadata[key]))
                if len(self.publishers) > 1:
                    found = f"second publisher on {self.topic}: {key} values {sorted(self.publishers)}"
                break
        seq = metadata.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            if self._last_seq is not None and seq <= self._last_seq and found is None:
                found = f"second publisher on {self.topic}: seq went from {self._last_seq} to {seq}"
            self._last_seq = seq
        if self._last_stamp is not None and stamp_ns < self._last_stamp:
            self.regressions += 1
            if self.regressions >= self.min_regressions and found is None:
                found = f"second publisher on {self.topic}: stamp_ns went back {self.regressions} times"
        self._last_stamp = int(stamp_ns) if self._last_stamp is None else max(self._last_stamp, int(stamp_ns))
        if found and self.warning is None:
            self.warning = found
            return found
        return None
