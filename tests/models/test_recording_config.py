"""recording.yaml: the recorder's tuning, checked when it is read."""

from __future__ import annotations

import pytest
import yaml

from teledora.models.config_files import load_recording_config
from teledora.operators.errors import ConfigError

GOOD = {"recorder": {"flush_interval_s": 0.5, "batch_pause_s": 0.01, "priority_boost_nice": 3}}


def write(tmp_path, data) -> str:
    path = tmp_path / "recording.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_shipped_values_are_the_recorders_documented_defaults():
    rec = load_recording_config().recorder
    assert (rec.flush_interval_s, rec.batch_pause_s, rec.priority_boost_nice) == (0.25, 0.02, 10)


def test_a_file_sets_each_value(tmp_path):
    rec = load_recording_config(write(tmp_path, GOOD)).recorder
    assert (rec.flush_interval_s, rec.batch_pause_s, rec.priority_boost_nice) == (0.5, 0.01, 3)


@pytest.mark.parametrize("key, bad, words", [
    ("flush_interval_s", 0.0, "flush_interval_s must be > 0"),
    ("batch_pause_s", 0.5, "batch_pause_s must be within 0..0.1"),
    ("batch_pause_s", -0.01, "batch_pause_s must be within 0..0.1"),
    ("priority_boost_nice", -1, "priority_boost_nice must be within 0..39"),
])
def test_values_out_of_range_are_refused_naming_the_file_and_key(tmp_path, key, bad, words):
    data = {"recorder": {**GOOD["recorder"], key: bad}}
    with pytest.raises(ConfigError, match=words) as info:
        load_recording_config(write(tmp_path, data))
    assert "recording.yaml" in str(info.value)


def test_unknown_and_missing_keys_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="flush_s"):
        load_recording_config(write(tmp_path, {"recorder": {**GOOD["recorder"], "flush_s": 1.0}}))
    missing = dict(GOOD["recorder"])
    del missing["batch_pause_s"]
    with pytest.raises(ConfigError, match="batch_pause_s"):
        load_recording_config(write(tmp_path, {"recorder": missing}))
