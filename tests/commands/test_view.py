"""`teledora view RUN`: a recorded run written as a Rerun recording and read
back with Rerun's own reader (rerun.chunk.RrdReader): entities and row counts
against the run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("rerun", reason="rerun-sdk is not installed (pip install -e '.[view]')")
from rerun.chunk import RrdReader  # noqa: E402

from teledora import models  # noqa: E402
from teledora.cli import main  # noqa: E402
from teledora.recording import RunReader  # noqa: E402
from tests.viewing_fixtures import COUNTS, SCAN_POINTS, write_view_run  # noqa: E402

ROBOT_SOURCES = ("arms__joint_states", "lift__state", "base__odom")


def rows_by_entity(rrd: Path) -> dict[str, int]:
    """Rows per entity path (static and temporal together), read back with Rerun's reader."""
    rows: dict[str, int] = {}
    for chunk in RrdReader(rrd).stream():
        rows[chunk.entity_path] = rows.get(chunk.entity_path, 0) + chunk.num_rows
    return rows


def column(rrd: Path, entity: str, name: str) -> list:
    out = []
    for chunk in RrdReader(rrd).stream():
        if chunk.entity_path == entity:
            batch = chunk.to_record_batch()
            if name in batch.schema.names:
                out += batch.column(name).to_pylist()
    return out


@pytest.fixture(scope="module")
def every_message(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    """The synthetic run converted with every message shown (all rates 0)."""
    tmp = tmp_path_factory.mktemp("view")
    run = write_view_run(tmp / "run")
    config = models.load_yaml("alohamini2/viewer.yaml")
    config["rates_hz"] = {k: 0.0 for k in config["rates_hz"]}
    (tmp / "viewer.yaml").write_text(yaml.safe_dump(config))
    rrd = tmp / "all.rrd"
    assert main(["view", str(run), "--save", str(rrd), "--config", str(tmp / "viewer.yaml")]) == 0
    return run, rows_by_entity(rrd)


def test_robot_bodies_move_with_every_robot_state(every_message) -> None:
    run, rows = every_message
    reader = RunReader(run)
    robot_states = sum(len(reader.read_topic(t).table) for t in ROBOT_SOURCES)
    assert robot_states == sum(COUNTS[t] for t in ROBOT_SOURCES)
    bodies = [e for e in rows if e.count("/") == 3 and e.startswith("/world/robot/")]
    assert {"/world/robot/base_link", "/world/robot/left_Moving_Jaw", "/world/robot/right_Upper_Arm"} <= set(bodies)
    for body in bodies:  # one pose per robot state, plus its static shapes below it
        assert rows[body] == robot_states, body
    shapes = [e for e in rows if e.startswith("/world/robot/") and e.count("/") == 4]
    assert len(shapes) >= len(bodies) and all(rows[s] == 1 for s in shapes)
    assert {e for e in rows if e.startswith("/world/room/")}, "the room's walls and tables are missing"
    for frame in ("base_link", "lidar_front", "lidar_back"):
        assert rows[f"/world/frames/{frame}"] == robot_states


def test_scans_sit_in_their_frames_with_every_return(every_message, tmp_path) -> None:
    _, rows = every_message
    assert rows["/world/frames/lidar_front/lidar_front__scan"] == COUNTS["lidar_front__scan"]
    assert rows["/world/frames/lidar_back/lidar_back__scan"] == COUNTS["lidar_back__scan"]
    assert rows["/world/frames/base_link/scan_merger__scan"] == COUNTS["scan_merger__scan"]


def test_scan_points_and_trajectories_read_back(tmp_path) -> None:
    run = write_view_run(tmp_path / "run")
    rrd = tmp_path / "v.rrd"
    assert main(["view", str(run), "--save", str(rrd)]) == 0
    scans = column(rrd, "/world/frames/lidar_front/lidar_front__scan", "Points3D:positions")
    assert scans and all(len(points) == SCAN_POINTS for points in scans)
    strips = column(rrd, "/world/trajectories/odometry", "LineStrips3D:strips")
    # points are taken at the plots' rate (20 Hz, odometry here comes at 25 Hz): the
    # last strip holds the whole path at that rate, up to the run's last point or the one before
    path = [p[0] for p in strips[-1][0]]
    assert path == sorted(path) and path[0] == 0.0
    assert len(path) >= COUNTS["base__odom"] // 2
    assert path[-1] >= 0.004 * (COUNTS["base__odom"] - 2) - 1e-6


def test_trajectories_images_plots_and_diagnostics(every_message) -> None:
    _, rows = every_message
    # a trajectory is drawn from its second point on
    assert rows["/world/trajectories/odometry"] == COUNTS["base__odom"] - 1
    assert rows["/world/trajectories/ekf"] == COUNTS["ekf__pose"] - 1
    assert rows["/world/trajectories/mocap"] == COUNTS["mocap__pose"] - 1
    assert rows["/world/trajectories/ground_truth"] == COUNTS["sim__ground_truth"] - 1
    assert rows["/cameras/chest"] == COUNTS["renderer__chest"]
    assert rows["/plots/joints/arms"] == COUNTS["arms__joint_states"] + 1  # + its static series names
    assert rows["/plots/joints/ik_command"] == COUNTS["ik__joint_commands"] + 1
    assert rows["/plots/base/command"] == COUNTS["teleop__base_cmd"] + 1
    assert rows["/plots/lift/height_m"] == COUNTS["lift__state"]
    assert rows["/plots/diagnostics/arms"] == rows["/diagnostics/arms"] == COUNTS["arms__diagnostics"]
    assert rows["/world/frames/base_link/grip_targets/left"] == COUNTS["teleop__arm_targets"]
    assert not [e for e in rows if "gyro" in e or "flow" in e], "a topic the view does not show was logged"


def test_shipped_rates_bound_what_is_shown(tmp_path) -> None:
    run = write_view_run(tmp_path / "run")
    rrd = tmp_path / "v.rrd"
    assert main(["view", str(run), "--save", str(rrd)]) == 0
    rows = rows_by_entity(rrd)
    config = models.load_yaml("alohamini2/viewer.yaml")["rates_hz"]
    # the run lasts 1 s: at most rate + 1 of each (the first message always shows)
    assert rows["/world/robot/base_link"] <= config["robot_hz"] + 1
    assert rows["/plots/joints/arms"] <= config["scalars_hz"] + 2
    assert rows["/cameras/chest"] <= config["images_hz"] + 1
    assert rows["/world/frames/lidar_front/lidar_front__scan"] <= config["scans_hz"] + 1


def test_view_writes_into_the_run_and_explains_without_a_display(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    run = write_view_run(tmp_path / "run")
    assert main(["view", str(run)]) == 0
    out = capsys.readouterr().out
    assert (run / "view.rrd").exists()
    assert "no display" in out and str(run / "view.rrd") in out


def test_view_of_a_non_run_fails_cleanly(tmp_path, capsys) -> None:
    assert main(["view", str(tmp_path)]) == 2
    assert "not a readable run" in capsys.readouterr().err
