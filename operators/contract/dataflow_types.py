"""The message contract as dora type annotations.

``dora validate`` loads user types from ``types/<prefix>/v1.yml`` beside a
dataflow; this module renders the contract into that file's YAML so the
annotations in the dataflows can never drift from ``messages.py`` (a test
compares the committed file with this rendering)."""

from __future__ import annotations

import pyarrow as pa

from teledora.operators.contract.messages import HAND_FIELDS, ARM_TARGET_FIELDS, KINDS

TYPE_PREFIX = "teledora/msgs/v1"
IMAGE_TYPE = "std/media/v1/Image"



def _arrow_name(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"List<{_arrow_name(t.value_type)}>"
    if pa.types.is_struct(t):
        for fields, name in ((HAND_FIELDS, "XrHand"), (ARM_TARGET_FIELDS, "ArmTarget")):
            if [f.name for f in fields] == [t.field(i).name for i in range(t.num_fields)]:
                return f"{TYPE_PREFIX}/{name}"
        raise ValueError(f"unnamed struct type {t}")
    return {
        pa.float64(): "Float64",
        pa.float32(): "Float32",
        pa.int64(): "Int64",
        pa.int32(): "Int32",
        pa.int16(): "Int16",
        pa.bool_(): "Bool",
        pa.string(): "String",
    }[t]


def _struct_entry(description: str, fields) -> list[str]:
    lines = ["    arrow: Struct", f"    description: {description}", "    fields:"]
    for f in fields:
        lines += [f"      - name: {f.name}", f"        type: {_arrow_name(f.type)}"]
    return lines


def render_types_yaml() -> str:
    """The dora user-type file for every contract kind."""
    lines = [
        "# Generated from teledora.operators.contract.messages by `teledora contract types`.",
        "# Do not edit: change messages.py and regenerate.",
        "types:",
    ]
    for name, fields, what in (("XrHand", HAND_FIELDS, "one XR controller"), ("ArmTarget", ARM_TARGET_FIELDS, "one arm's target")):
        lines.append(f"  {name}:")
        lines += _struct_entry(f"teledora {what}", fields)
    for kind, fields in KINDS.items():
        lines.append(f"  {kind}:")
        lines += _struct_entry(f"teledora {kind} message", fields)
    return "\n".join(lines) + "\n"


def type_urn(kind: str) -> str:
    if kind == "Image":
        return IMAGE_TYPE
    if kind not in KINDS:
        raise KeyError(f"unknown message kind {kind!r}")
    return f"{TYPE_PREFIX}/{kind}"
