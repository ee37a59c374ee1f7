"""episodes node with dora.testing.MockNode: chords become EpisodeMark messages."""

from __future__ import annotations

from teledora.nodes.teleop import episodes
from teledora.operators.contract.messages import decode

from tests.nodes.teleop.test_teleop import MS, Clock, OneByOne, controllers, hand


def press(t, lx=False, ly=False, ra=False, rb=False):
    return ("controllers", controllers(t, left=hand(t, primary=lx, secondary=ly),
                                       right=hand(t, (0.3, -0.2, 1.0), primary=ra, secondary=rb)))


def test_chords_mark_start_keep_and_discard():
    seq = [press(0), press(10 * MS, True, True), press(20 * MS),            # start
           press(30 * MS, True, True), press(40 * MS),                     # keep
           press(50 * MS, True, True), press(60 * MS),                     # start
           press(70 * MS, ra=True, rb=True), press(80 * MS),               # discard
           press(90 * MS, ra=True, rb=True), press(100 * MS)]              # nothing open: refused
    node = OneByOne(seq)
    episodes.main(["--task", "pick up the cube", "--port", "0"], node=node, clock=Clock())
    marks = [decode("EpisodeMark", m) for m in node.outputs["marks"]]
    assert [m["event"] for m in marks] == ["start", "keep", "start", "discard"]
    assert {m["task"] for m in marks} == {"pick up the cube"}
    assert all(a["stamp_ns"] < b["stamp_ns"] for a, b in zip(marks, marks[1:]))


def page(t, field=None):
    ui = {field: True} if field else {}
    return ("controllers", controllers(t, **ui))


def test_page_buttons_mark_and_the_state_follows():
    seq = [page(0), page(10 * MS, "ui_episode_start"), page(20 * MS),       # start
           page(30 * MS, "ui_episode_discard"), page(40 * MS),             # arms the discard
           page(50 * MS, "ui_episode_discard"), page(60 * MS),             # confirms it
           page(70 * MS, "ui_episode_start"), page(80 * MS),               # start
           page(90 * MS, "ui_episode_keep"), page(100 * MS)]               # keep
    node = OneByOne(seq)
    episodes.main(["--task", "wipe the table", "--port", "0"], node=node, clock=Clock())
    marks = [decode("EpisodeMark", m) for m in node.outputs["marks"]]
    assert [m["event"] for m in marks] == ["start", "discard", "start", "keep"]
    states = [decode("EpisodeState", s) for s in node.outputs["state"]]
    # one state per change (the clock here runs far below the once-a-second repeat)
    held = [(s["open"], s["number"], s["discard_armed"], s["kept"], s["discarded"]) for s in states]
    assert held == [(False, 0, False, 0, 0), (True, 1, False, 0, 0), (True, 1, True, 0, 0), (False, 1, False, 0, 1),
                    (True, 2, False, 0, 1), (False, 2, False, 1, 1)]
    assert {s["task"] for s in states} == {"wipe the table"}
    opened = [s["opened_ns"] for s in states if s["open"]]
    assert opened[0] == marks[0]["stamp_ns"] and opened[-1] == marks[2]["stamp_ns"]


def test_the_state_repeats_once_a_second_without_changes():
    seq = [page(k * 100 * MS) for k in range(40)]
    node = OneByOne(seq)
    # a clock running 250 ms per reading: about 4 s of node time over the run
    ticks = iter(range(0, 10**12, 250 * MS))
    episodes.main(["--port", "0"], node=node, clock=lambda: next(ticks))
    stamps = [decode("EpisodeState", s)["stamp_ns"] for s in node.outputs["state"]]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    # (this clock is read several times per event, so the repeat comes at the first event past the second)
    assert len(stamps) >= 3 and all(episodes.STATE_EVERY_NS <= g < 2 * episodes.STATE_EVERY_NS for g in gaps)


def test_the_discard_confirmation_window_comes_from_teleop_yaml(tmp_path):
    import yaml

    from teledora import models

    data = models.load_yaml("alohamini2/teleop.yaml")
    data["episodes"]["discard_confirm_s"] = 1e-6  # lapses before any confirmation can come
    cfg = tmp_path / "teleop.yaml"
    cfg.write_text(yaml.safe_dump(data))
    seq = [page(0), page(10 * MS, "ui_episode_start"), page(20 * MS),
           page(30 * MS, "ui_episode_discard"), page(40 * MS),   # arms the discard
           page(50 * MS, "ui_episode_discard"), page(60 * MS)]   # too late: arms it again
    shipped, short = OneByOne(seq), OneByOne(seq)
    episodes.main(["--port", "0"], node=shipped, clock=Clock())
    episodes.main(["--port", "0", "--config", str(cfg)], node=short, clock=Clock())
    assert [decode("EpisodeMark", m)["event"] for m in shipped.outputs["marks"]] == ["start", "discard"]
    assert [decode("EpisodeMark", m)["event"] for m in short.outputs["marks"]] == ["start"]


def test_a_discard_window_of_zero_in_teleop_yaml_stops_the_node_before_it_starts(tmp_path):
    import pytest
    import yaml

    from teledora import models

    data = models.load_yaml("alohamini2/teleop.yaml")
    data["episodes"]["discard_confirm_s"] = 0.0
    cfg = tmp_path / "teleop.yaml"
    cfg.write_text(yaml.safe_dump(data))
    with pytest.raises(SystemExit, match="discard_confirm_s"):
        episodes.main(["--port", "0", "--config", str(cfg)], node=OneByOne([]), clock=Clock())
