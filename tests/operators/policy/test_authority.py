"""The selector between operator and policy: rules checked on examples and over
random histories of controller reports, policy actions and e-stop latches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.errors import ConfigError
from teledora.operators.policy.authority import OPERATOR, POLICY, STOPPED, Authority, AuthorityConfig

MS = 1_000_000
CFG = AuthorityConfig(policy_timeout_s=0.2, handback_hold_s=1.0, takeover_squeeze=0.5)


def hand(primary=False, secondary=False, squeeze=0.0, connected=True):
    return {"connected": connected, "primary": primary, "secondary": secondary, "squeeze": squeeze}


def report(left=None, right=None):
    return {"left": left or hand(), "right": right or hand()}


GESTURE = report(hand(primary=True), hand(primary=True))


def hand_back(auth: Authority, t0: int, every_ms: int = 100) -> int:
    """Plays the gesture from t0 (buttons up first) with a fresh policy; returns the time after it."""
    auth.step(t0, estop_latched=False, controllers=report(), policy_stamp_ns=t0)
    t = t0
    for _ in range(1000 // every_ms + 1):
        t += every_ms * MS
        auth.step(t, estop_latched=False, controllers=GESTURE, policy_stamp_ns=t)
    return t


def test_starts_with_the_operator_and_the_gesture_hands_back_after_its_hold():
    auth = Authority(CFG)
    assert auth.step(0, estop_latched=False, controllers=report(), policy_stamp_ns=0).driver == OPERATOR
    t0 = 10 * MS  # the press starts here
    for k in range(10):  # held for 0 .. 0.9 s: not yet
        t = t0 + k * 100 * MS
        assert auth.step(t, estop_latched=False, controllers=GESTURE, policy_stamp_ns=t).driver == OPERATOR
    t = t0 + 1000 * MS
    d = auth.step(t, estop_latched=False, controllers=GESTURE, policy_stamp_ns=t)
    assert d.driver == POLICY and "handback" in d.events and d.hud() == "POLICY DRIVING"


def test_a_gesture_held_from_the_first_report_does_nothing_until_released():
    auth = Authority(CFG)
    for k in range(30):
        d = auth.step(k * 100 * MS, estop_latched=False, controllers=GESTURE, policy_stamp_ns=k * 100 * MS)
        assert d.driver == OPERATOR


def test_the_hold_needs_reports_a_silent_feed_never_completes_it():
    auth = Authority(CFG)
    auth.step(0, estop_latched=False, controllers=report(), policy_stamp_ns=0)
    auth.step(10 * MS, estop_latched=False, controllers=GESTURE, policy_stamp_ns=10 * MS)
    for k in range(1, 40):  # policy keeps acting, the feed says nothing more
        d = auth.step(10 * MS + k * 100 * MS, estop_latched=False, policy_stamp_ns=10 * MS + k * 100 * MS)
        assert d.driver == OPERATOR


def test_clutch_or_grip_takes_over_on_the_same_step():
    for taking in (report(hand(secondary=True)), report(right=hand(squeeze=0.5)), report(hand(squeeze=0.9), hand(secondary=True))):
        auth = Authority(CFG)
        t = hand_back(auth, 0)
        assert auth.holder == POLICY
        d = auth.step(t + MS, estop_latched=False, controllers=taking, policy_stamp_ns=t + MS)
        assert d.driver == OPERATOR and d.events == ("takeover",)


def test_a_grip_below_the_threshold_or_a_disconnected_hand_takes_nothing():
    auth = Authority(CFG)
    t = hand_back(auth, 0)
    d = auth.step(t + MS, estop_latched=False, controllers=report(hand(squeeze=0.49), hand(secondary=True, connected=False)),
                  policy_stamp_ns=t + MS)
    assert d.driver == POLICY


def test_stale_policy_holds_and_a_handback_to_it_is_refused():
    auth = Authority(CFG)
    t = hand_back(auth, 0)
    d = auth.step(t + 201 * MS, estop_latched=False)
    assert d.driver == STOPPED and d.holder == POLICY and "stale" in d.reason
    d = auth.step(t + 300 * MS, estop_latched=False, policy_stamp_ns=t + 290 * MS)
    assert d.driver == POLICY  # it never lost authority
    auth2 = Authority(CFG)
    auth2.step(0, estop_latched=False, controllers=report())
    for k in range(1, 15):
        d = auth2.step(k * 100 * MS, estop_latched=False, controllers=GESTURE)
    assert d.driver == OPERATOR and auth2.counts.handbacks_refused == 1


def test_a_policy_action_stamped_far_ahead_is_not_fresh():
    auth = Authority(CFG)
    t = hand_back(auth, 0)
    auth2 = Authority(CFG)
    hand_back(auth2, 0)
    assert auth.step(t + 10 * MS, estop_latched=False, policy_stamp_ns=t + 10 * MS).driver == POLICY
    d = auth2.step(t + 250 * MS, estop_latched=False, policy_stamp_ns=t + 10_000 * MS)
    assert d.driver == STOPPED


def test_estop_stops_and_revokes_the_policy():
    auth = Authority(CFG)
    t = hand_back(auth, 0)
    d = auth.step(t + MS, estop_latched=True, policy_stamp_ns=t + MS)
    assert d.driver == STOPPED and d.events == ("estop_revoked_policy",)
    d = auth.step(t + 2 * MS, estop_latched=False, policy_stamp_ns=t + 2 * MS)
    assert d.driver == OPERATOR


def test_config_is_checked():
    with pytest.raises(ConfigError):
        AuthorityConfig(policy_timeout_s=0.0)
    with pytest.raises(ConfigError):
        AuthorityConfig(takeover_squeeze=1.5)


# --- random histories -------------------------------------------------------

hands = st.builds(hand, primary=st.booleans(), secondary=st.sampled_from([False] * 5 + [True]),
                  squeeze=st.sampled_from([0.0, 0.0, 0.0, 0.3, 0.5, 1.0]), connected=st.sampled_from([True] * 6 + [False]))
steps = st.tuples(
    st.integers(1, 400),                                          # ms since the previous step
    st.sampled_from([False] * 12 + [True]),                       # e-stop latched
    st.one_of(st.none(), st.builds(report, hands, hands),         # a controller report, or none
              st.just(GESTURE), st.just(GESTURE), st.just(report())),
    st.one_of(st.none(), st.integers(-400, 60)),                  # a policy action: its stamp relative to now (ms)
)

# a hand-back played out: buttons up, then the gesture for 1.1 s with a fresh policy
# (random steps alone would rarely hand back, leaving the takeover rules untested)
handback_block = st.just([(10, False, report(), 0)] + [(100, False, GESTURE, 0)] * 11)
histories = st.lists(st.one_of(steps.map(lambda s: [s]), handback_block), min_size=1, max_size=40).map(
    lambda blocks: [s for b in blocks for s in b])


def _takeover(rep) -> bool:
    return any(h["connected"] and (h["secondary"] or h["squeeze"] >= CFG.takeover_squeeze) for h in (rep["left"], rep["right"]))


def _gesture(rep) -> bool:
    return all(h["connected"] and h["primary"] for h in (rep["left"], rep["right"]))


@settings(max_examples=400, deadline=None, derandomize=True, database=None)
@given(histories)
def test_rules_hold_over_random_histories(history):
    auth = Authority(CFG)
    t = 0
    newest = None
    holders = [OPERATOR]
    times, estops, reports = [], [], []
    for dt, estop, rep, rel in history:
        t += dt * MS
        stamp = None if rel is None else t + rel * MS
        if stamp is not None:
            newest = stamp if newest is None else max(newest, stamp)
        d = auth.step(t, estop_latched=estop, controllers=rep, policy_stamp_ns=stamp)
        times.append(t), estops.append(estop), reports.append(rep)
        # the e-stop always wins
        if estop:
            assert d.driver == STOPPED
        # a clutch or grip gives the operator this very step (unless the e-stop holds everything)
        elif rep is not None and _takeover(rep):
            assert d.driver == OPERATOR
        # the policy drives only on fresh actions
        if d.driver == POLICY:
            assert newest is not None and -50 * MS <= t - newest <= 200 * MS
        # authority only reaches the policy through a completed gesture
        if d.holder == POLICY and holders[-1] == OPERATOR:
            k = len(times) - 1
            assert rep is not None and _gesture(rep) and not estop and not _takeover(rep)
            given_reports = [i for i in range(k + 1) if reports[i] is not None]
            up = [i for i in given_reports if not _gesture(reports[i])]
            assert up, "the gesture counted without the buttons ever seen up"
            start = min(i for i in given_reports if i > up[-1])
            for i in range(start, k + 1):
                assert not estops[i]
                assert reports[i] is None or not _takeover(reports[i])
            assert times[k] - times[start] >= CFG.handback_hold_s * 1e9
            # one gesture press hands back at most once
            assert POLICY not in holders[start + 1:]
        holders.append(d.holder)
