"""Camera capture devices: one OpenCV capture thread per USB camera."""
