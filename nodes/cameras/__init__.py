"""The cameras node: the robot's five cameras, rendered (sim) or captured (hardware)."""
