"""A small synthetic registry covering every relation, loaded without the bundled file."""

from __future__ import annotations

import pytest

from nepotism.models import load_registry

TOY = """
[models."base"]
family = "fam-a"
series = "s1"

[models."chat"]
family = "fam-a"
series = "s1"
aliases = ["Chat-Model", "chat_v1"]
parent = "base"
sources = { parent = "toy card" }

[models."chat-ft"]
family = "fam-a"
series = "s2"
parent = "chat"

[models."sibling"]
family = "fam-a"
series = "s1"

[models."cousin"]
family = "fam-a"
series = "s3"

[models."teacher-x"]
family = "fam-b"
series = "t"

[models."teacher-x2"]
family = "fam-b"
series = "t"

[models."student"]
family = "fam-c"
parent = "other-base"
teachers = ["teacher-x"]
sources = { "teachers.teacher-x" = "toy paper" }

[models."other-base"]
family = "fam-c"
teachers = ["chat"]

[models."grand-student"]
family = "fam-d"
parent = "student"

[models."chain-student"]
family = "fam-e"
teachers = ["student"]

[models."family-student"]
family = "fam-f"
teachers = ["teacher-x2"]

[models."stranger"]
family = "fam-z"
"""


@pytest.fixture
def toy_path(tmp_path):
    path = tmp_path / "toy.toml"
    path.write_text(TOY, encoding="utf-8")
    return path


@pytest.fixture
def toy(toy_path):
    return load_registry([toy_path], include_default=False)
