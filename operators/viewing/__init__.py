"""What the live viewer and `teledora view` show: a pure mapping from contract
messages to plain view items (no Rerun calls; teledora/devices/viewing logs them)."""
