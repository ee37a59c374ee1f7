"""The live view of a running dataflow."""
