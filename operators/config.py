"""Validated config: a mapping (parsed YAML) read into a frozen dataclass.

Every config of the project is a dataclass whose field names are the YAML keys,
units in the names (``max_speed_m_s``), and whose annotations say what a value
must be. :func:`config_from_mapping` is the one reader: it rejects unknown and
missing keys and values of the wrong kind, builds nested dataclasses, and lets
the dataclass's own ``__post_init__`` check ranges. Every error names the key
(with its unit) and the section it sits in; the file reader
(``teledora.models.config_files``) adds the file name.

Supported annotations: ``float`` (any finite number, stored as float), ``int``
(whole numbers only), ``bool``, ``str``, ``X | None``, ``Literal[...]``,
``tuple[X, ...]`` and fixed ``tuple[X, Y]``, ``dict[K, V]`` / ``Mapping[K, V]``,
``numpy.ndarray`` (finite floats), ``Any`` and nested dataclasses. A field
declared with :func:`key_field` is filled with the entry's key when the
dataclass is a value of a ``dict`` (a camera's or an arm's name).

Pure: no file access.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping as AbcMapping
from typing import Any, Literal, Mapping, TypeVar, Union

import numpy as np

from teledora.operators.errors import ConfigError

T = TypeVar("T")

_KEY_FIELD = "teledora.config.key"

# Unit suffixes of key names, longest first so that ``_m_s`` wins over ``_s``.
_UNITS: tuple[tuple[str, str], ...] = tuple(sorted(
    {
        "_m_s2": "m/s²", "_rad_s2": "rad/s²", "_m_s": "m/s", "_rad_s": "rad/s",
        "_ticks_s_per_mm": "ticks/s per mm", "_ticks_s": "ticks/s", "_mm_per_rev": "mm/rev",
        "_hz": "Hz", "_ms": "ms", "_s": "s", "_mm": "mm", "_m": "m", "_rad": "rad", "_deg": "deg",
        "_ma": "mA", "_px": "px", "_ppt": "ppt",
    }.items(),
    key=lambda item: -len(item[0]),
))


def key_field() -> Any:
    """A dataclass field that takes the key of its ``dict`` entry instead of a YAML value."""
    return dataclasses.field(metadata={_KEY_FIELD: True})


def unit_of(key: str) -> str | None:
    """The unit a key name carries (``max_speed_m_s`` -> ``m/s``), or None."""
    for suffix, unit in _UNITS:
        if key.endswith(suffix):
            return unit
    return None


def describe_key(path: str) -> str:
    """``section.key`` with its unit, as errors print it (``lift.soft_max_mm (mm)``)."""
    unit = unit_of(path.rsplit(".", 1)[-1].split("[", 1)[0])
    return f"{path} ({unit})" if unit else path


def config_keys(cls: type) -> tuple[str, ...]:
    """The keys a config dataclass reads (its fields, less key fields)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and not f.metadata.get(_KEY_FIELD))


def config_from_mapping(
    cls: type[T],
    data: Any,
    where: str = "",
    error: type[Exception] = ConfigError,
    key: str | None = None,
    defaulted: list[str] | None = None,
) -> T:
    """Builds the dataclass ``cls`` from ``data``, checking every key and value.

    Args:
        cls: The config dataclass.
        data: Its mapping (a YAML section).
        where: Dotted path of the section, for error messages ("" at top level).
        error: Exception class to raise (a subsystem's own config error).
        key: The section's key in its parent ``dict``, for :func:`key_field` fields.
        defaulted: When given, collects the paths of fields left at their
            dataclass default because the mapping lacks them.

    Raises:
        ConfigError (or ``error``): a missing or unknown key, a value of the wrong
            kind, or a value the dataclass's own checks refuse.
    """
    section = where or "top level"
    if not isinstance(data, AbcMapping):
        raise error(f"{section}: expected a mapping, got {_shown(data)}")
    hints = typing.get_type_hints(cls)
    keys = config_keys(cls)
    unknown = sorted(str(k) for k in data if k not in keys)
    if unknown:
        raise error(f"{section}: unknown keys {unknown}; known: {sorted(keys)}")
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        path = f"{where}.{f.name}" if where else f.name
        if f.metadata.get(_KEY_FIELD):
            if key is None:
                raise TypeError(f"{cls.__name__}.{f.name} is a key field: build {cls.__name__} as a dict value")
            kwargs[f.name] = key
        elif f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name], path, error, defaulted)
        elif f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            if defaulted is not None:
                defaulted.append(path)
        else:
            raise error(f"{section}: missing key {describe_key(f.name)}")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise error(f"{section}: {exc}") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _convert(tp: Any, value: Any, path: str, error: type[Exception], defaulted: list[str] | None) -> Any:
    """``value`` checked against the annotation ``tp`` (and converted where lossless)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin is Union or isinstance(tp, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) != 1:
            raise TypeError(f"{path}: unsupported config annotation {tp!r}")
        return _convert(options[0], value, path, error, defaulted)
    if origin is Literal:
        if value not in args:
            raise error(f"{describe_key(path)}: must be one of {list(args)}, got {_shown(value)}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise error(f"{describe_key(path)}: expected true or false, got {_shown(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise error(f"{describe_key(path)}: expected a whole number, got {_shown(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise error(f"{describe_key(path)}: expected a finite number, got {_shown(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise error(f"{describe_key(path)}: expected text, got {_shown(value)}")
        return value
    if tp is np.ndarray:
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise error(f"{describe_key(path)}: expected numbers, got {_shown(value)}") from None
        if not np.all(np.isfinite(array)):
            raise error(f"{describe_key(path)}: expected finite numbers, got {_shown(value)}")
        return array
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise error(f"{describe_key(path)}: expected a list, got {_shown(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v, f"{path}[{i}]", error, defaulted) for i, v in enumerate(value))
        if len(value) != len(args):
            raise error(f"{describe_key(path)}: expected {len(args)} values, got {_shown(value)}")
        return tuple(_convert(a, v, f"{path}[{i}]", error, defaulted) for i, (a, v) in enumerate(zip(args, value)))
    if origin in (dict, AbcMapping) or tp in (dict, Mapping):
        if not isinstance(value, AbcMapping):
            raise error(f"{path}: expected a mapping, got {_shown(value)}")
        key_tp, value_tp = args or (Any, Any)
        out = {}
        for k, v in value.items():
            sub = f"{path}.{k}"
            out[_convert(key_tp, k, sub, error, defaulted)] = (
                config_from_mapping(value_tp, v, sub, error, key=str(k), defaulted=defaulted)
                if dataclasses.is_dataclass(value_tp)
                else _convert(value_tp, v, sub, error, defaulted)
            )
        return out
    if dataclasses.is_dataclass(tp):
        return config_from_mapping(tp, value, path, error, defaulted=defaulted)
    raise TypeError(f"{path}: unsupported config annotation {tp!r}")
