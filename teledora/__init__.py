"""teledora: teleoperation and sensing for the AlohaMini2, as a dora-rs dataflow."""

__version__ = "0.1.0"
