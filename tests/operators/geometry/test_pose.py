import numpy as np
import pytest

from teledora.operators.geometry import Pose, PoseError


def test_of_copies_validates_and_normalises():
    position = np.array([0.1, 0.2, 0.3])
    pose = Pose.of(position, [0.0, 0.0, -3.0, -4.0])
    position[0] = 9.0
    assert pose.position.tolist() == [0.1, 0.2, 0.3]
    assert pose.orientation.tolist() == pytest.approx([0.0, 0.0, 0.6, 0.8])


@pytest.mark.parametrize(
    "position, orientation",
    [([0, 0], [0, 0, 0, 1]), ([0, float("nan"), 0], [0, 0, 0, 1]), ([0, 0, 0], [0, 0, 0, 0]), ([0, 0, 0], [0, 0, 1])],
)
def test_of_rejects_garbage(position, orientation):
    with pytest.raises(PoseError):
        Pose.of(position, orientation)


def test_identity():
    pose = Pose.identity()
    assert pose.position.tolist() == [0.0, 0.0, 0.0]
    assert pose.orientation.tolist() == [0.0, 0.0, 0.0, 1.0]
