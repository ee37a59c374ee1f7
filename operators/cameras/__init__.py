"""The robot's cameras: their settings, calibration messages and frame pacing (pure logic)."""
