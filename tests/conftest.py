"""Suite-wide settings that must hold before any test module imports mujoco."""

import os

# MuJoCo picks its OpenGL backend when it is first imported: render offscreen
# through Mesa's EGL so the suite runs without a display.
os.environ.setdefault("MUJOCO_GL", "egl")
