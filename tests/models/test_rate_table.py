"""The rate table (models/alohamini2/rates.yaml) against everything else that
states a rate: the dataflows' timers and outputs, the config files, the node
runtime's periods and the topic table of docs/messages.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from teledora import models
from teledora.models.config_files import (
    load_estimation_config,
    load_ik_config,
    load_lidar_setup,
    load_mocap_config,
    load_rate_table,
    load_cameras_config,
    load_renderer_config,
)
from teledora.nodes.recording.recorder import STATUS_PERIOD_S
from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.topic_rates import DATAFLOW_KINDS
from teledora.runtime.node_journal import CHUNK_PERIOD_NS

REPO = Path(__file__).resolve().parents[2]
DATAFLOWS = {"sim.yml": "sim", "sim_distributed.yml": "sim", "hardware.yml": "hardware"}
TIMER = re.compile(r"^dora/timer/millis/(\d+)$")
TABLE = load_rate_table()


def _nodes(name: str) -> list[dict]:
    return yaml.safe_load((REPO / "dataflows" / name).read_text())["nodes"]


def _timers(node: dict) -> dict[str, int]:
    """The node's timer inputs: input id -> period (ms)."""
    out = {}
    for input_id, source in (node.get("inputs") or {}).items():
        source = source if isinstance(source, str) else source["source"]
        if source.startswith("dora/timer/"):
            match = TIMER.match(source)
            assert match, f"{node['id']}.{input_id}: {source} is not a dora/timer/millis/N timer"
            out[input_id] = int(match.group(1))
    return out


def _outputs(kind: str) -> set[str]:
    return {f"{n['id']}/{o}" for name, k in DATAFLOWS.items() if k == kind for n in _nodes(name) for o in n["outputs"]}


@pytest.mark.parametrize("name", sorted(DATAFLOWS))
def test_every_timer_in_a_dataflow_is_the_tables(name: str) -> None:
    kind = DATAFLOWS[name]
    for node in _nodes(name):
        timers = _timers(node)
        assert set(timers) <= {"tick"}, f"{name}: {node['id']} has timers {sorted(timers)}; only `tick` is listed"
        assert timers.get("tick") == TABLE.timer_ms(node["id"], kind), (
            f"{name}: {node['id']} ticks every {timers.get('tick')} ms, rates.yaml says {TABLE.timer_ms(node['id'], kind)}")


def test_every_timer_in_the_table_is_in_a_dataflow() -> None:
    ids = {kind: {n["id"] for name, k in DATAFLOWS.items() if k == kind for n in _nodes(name)} for kind in DATAFLOW_KINDS}
    for node, timer in TABLE.timers.items():
        for kind in DATAFLOW_KINDS:
            assert timer.period_ms(kind) is None or node in ids[kind], f"timers.{node}: no {node} in the {kind} dataflows"


@pytest.mark.parametrize("kind", DATAFLOW_KINDS)
def test_every_output_has_a_rate_and_every_rate_an_output(kind: str) -> None:
    outputs = _outputs(kind)
    for topic in outputs:
        rate = TABLE.topic(topic).rate_hz(kind)
        assert kind == "hardware" or rate is not None, f"{topic}: no {kind} rate in rates.yaml"
    for topic, rate in TABLE.topics.items():
        if rate.rate_hz(kind) is not None and not topic.startswith("*/"):
            assert topic in outputs, f"rates.yaml gives {topic} a {kind} rate, but no {kind} dataflow publishes it"


def test_per_tick_topics_go_out_at_the_timer_rate() -> None:
    for topic, rate in TABLE.topics.items():
        checked = 0
        for kind in DATAFLOW_KINDS:
            period_ms, hz = TABLE.timer_ms(rate.node, kind), rate.rate_hz(kind)
            if rate.per_tick and period_ms is not None and hz is not None:
                assert hz == pytest.approx(1000.0 / period_ms), f"{topic}: {hz} Hz in {kind}, but its tick is {period_ms} ms"
                checked += 1
        assert checked or not rate.per_tick, f"{topic}: per_tick, but no dataflow gives it a timer and a rate"


def test_config_rates_agree_with_the_table() -> None:
    profile = models.load_profile()
    assert profile.sim.joint_state_hz == TABLE.topic("sim/joint_states").sim_hz
    assert profile.sim.ground_truth_hz == TABLE.topic("sim/ground_truth").sim_hz
    for name, lidar in load_lidar_setup().lidars.items():
        assert lidar.sim_scan_rate_hz == TABLE.topic(f"lidar_{name}/scan").sim_hz, name
    assert load_mocap_config().sim.rate_hz == TABLE.topic("mocap/pose").sim_hz
    physical = load_cameras_config()
    for name, camera in load_renderer_config().cameras.items():
        rate = TABLE.topic(f"cameras/{name}")
        assert camera.rate_hz == rate.sim_hz and physical.cameras[name].rate_hz == rate.hardware_hz, name
    assert physical.calibration_period_s == 2.0
    ik = load_ik_config()
    for kind in DATAFLOW_KINDS:
        assert ik.solver.control_period_s * 1000.0 == pytest.approx(TABLE.timer_ms("teleop", kind)), kind
    assert 1.0 / load_estimation_config().ardupilot.message_interval_s == pytest.approx(TABLE.topic("ekf/pose").hardware_hz)
    diagnostics = TABLE.topic("*/diagnostics")
    assert 1.0 / ik.node.diagnostics_period_s == diagnostics.sim_hz == diagnostics.hardware_hz
    assert 1e9 / Diagnostics("any").period_ns == diagnostics.sim_hz
    for node in ("teleop", "scan_merger"):
        assert 1e9 / CHUNK_PERIOD_NS == TABLE.topic(f"{node}/journal").sim_hz, node
    heartbeat = TABLE.topic("recorder/status")
    assert 1.0 / STATUS_PERIOD_S == heartbeat.sim_hz == heartbeat.hardware_hz


def _topic_rows(page: str) -> list[tuple[list[str], str, str]]:
    """(topics, rate, paced by) per row of the table under '## Topics'."""
    section = page.split("## Topics", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or cells[0] in ("topic", "") or set(cells[0]) <= {"-"}:
            continue
        topics = [t for t in re.findall(r"`([^`]+)`", cells[0]) if "/" in t]
        rows.append((topics, cells[2], cells[3]))
    return rows


def test_docs_messages_rates_are_the_tables() -> None:
    rows = _topic_rows((REPO / "docs" / "messages.md").read_text())
    documented = {t for topics, _, _ in rows for t in topics}
    assert documented == set(TABLE.topics), "docs/messages.md and rates.yaml list different topics"
    for topics, rate_text, paced_by in rows:
        for topic in topics:
            rate = TABLE.topics[topic]
            assert (rate_text, paced_by) == (rate.rate_text(), rate.paced_by), topic
