"""What a 3D viewer needs from a recorded run, as plain data: the frame tree
(world → odom → base_link → every body, camera and sensor site) from the
robot model's kinematics, the robot's and the room's geometry as primitives,
and the messages that carry poses and scans turned into frame-tagged poses.
No file or viewer library here: the MCAP writer in teledora.recording turns
this into Foxglove messages."""
