"""The hot-path builder of frozen dataclasses: same object as the constructor, still validated."""

from dataclasses import FrozenInstanceError, dataclass

import pytest

from nepotism._frozen import builder


@dataclass(frozen=True)
class Point:
    x: int
    y: int

    def __post_init__(self):
        if self.x < 0:
            raise ValueError("x must be >= 0")


def test_builds_what_the_constructor_builds_and_stays_frozen():
    build = builder(Point, ("x", "y"))
    point = build({"x": 1, "y": 2})
    assert point == Point(1, 2) and hash(point) == hash(Point(1, 2))
    with pytest.raises(FrozenInstanceError):
        point.x = 3


def test_post_init_still_validates():
    with pytest.raises(ValueError, match="x must be"):
        builder(Point, ("x", "y"))({"x": -1, "y": 0})


def test_falls_back_to_the_constructor_when_the_fields_differ():
    build = builder(Point, ("x", "y", "z"))  # the caller expects another field list
    with pytest.raises(TypeError):  # the real constructor rejects the unknown key
        build({"x": 1, "y": 2, "z": 3})
    assert builder(Point, ("y", "x"))({"x": 1, "y": 2}) == Point(1, 2)
