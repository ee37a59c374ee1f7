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
