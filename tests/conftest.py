"""Suite-wide settings that must hold before any test module imports mujoco."""

import os

# MuJoCo picks its OpenGL backend when it is first imported: render offscreen
# through Mesa's EGL so the suite runs without a display.
os.environ.setdefault("MUJOCO_GL", "egl")

from hypothesis import settings  # noqa: E402

# No per-example deadline anywhere: unit tests carry no timing thresholds, and
# on a loaded machine a slow first run of an example makes hypothesis report a
# flaky failure for a property that holds.
settings.register_profile("teledora", deadline=None)
settings.load_profile("teledora")


import warnings  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _the_test_process_stays_time_shared(request):
    """A test that leaves this process under a real-time policy would starve
    the rest of the suite (and hand the policy to every child): say which test
    did it, and put the process back."""
    yield
    if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
        warnings.warn(f"{request.node.nodeid} left the test process real-time; set back to time-sharing")
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
