"""The Rerun end of the view: logging view items and opening viewers."""
