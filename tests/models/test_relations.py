from __future__ import annotations

import pytest

import nepotism.models as models
from nepotism.models import SCOPES, Relation


def test_public_api():
    assert set(models.__all__) == {
        "AUDITED_SCOPES",
        "BUNDLED_REGISTRY",
        "NOT_RELATED",
        "SCOPES",
        "SCOPE_LADDER",
        "ModelInfo",
        "Registry",
        "Relation",
        "default_registry",
        "less_related",
        "load_registry",
        "related_scope",
        "untagged",
    }
    assert models.untagged(" gpt-4o@output_1") == models.untagged("gpt-4o@sample@2") == "gpt-4o"
    assert SCOPES == ("self", "family", "student", "teacher", "lineage")


@pytest.mark.parametrize(
    ("judge", "model", "expected"),
    [
        ("chat", "chat", Relation.SELF),
        ("chat", "Chat-Model", Relation.SELF),  # alias
        ("base", "chat", Relation.LINEAGE),  # descendant
        ("chat", "base", Relation.LINEAGE),  # ancestor
        ("base", "chat-ft", Relation.LINEAGE),  # transitive
        ("chat-ft", "base", Relation.LINEAGE),
        ("teacher-x", "student", Relation.STUDENT),  # direct teacher
        ("teacher-x", "grand-student", Relation.STUDENT),  # through the model's parent chain
        ("chat", "student", Relation.STUDENT),  # teacher of the model's parent
        ("base", "student", Relation.STUDENT),  # teacher is a descendant of the judge
        ("chat-ft", "student", Relation.STUDENT),  # teacher is an ancestor of the judge
        ("teacher-x", "chain-student", Relation.STUDENT),  # distillation chain
        ("student", "teacher-x", Relation.TEACHER),
        ("grand-student", "chat", Relation.TEACHER),
        ("teacher-x2", "student", Relation.FAMILY_STUDENT),
        ("teacher-x", "family-student", Relation.FAMILY_STUDENT),
        ("chat", "sibling", Relation.SAME_SERIES),
        ("chat", "cousin", Relation.SAME_FAMILY),
        ("chat", "stranger", Relation.UNRELATED),
        ("teacher-x", "other-base", Relation.UNRELATED),
        ("chat", "nope", Relation.UNKNOWN),
        ("nope", "chat", Relation.UNKNOWN),
    ],
)
def test_relation_table(toy, judge, model, expected):
    assert toy.relation(judge, model) is expected


@pytest.mark.parametrize(
    ("judge", "model", "true_scopes"),
    [
        ("chat", "chat_v1", {"self"}),
        ("base", "chat-ft", {"family", "lineage"}),
        ("chat", "cousin", {"family"}),
        ("teacher-x", "student", {"student"}),
        ("student", "teacher-x", {"teacher"}),
        ("chat", "stranger", set()),
        ("teacher-x", "teacher-x2", {"family"}),
    ],
)
def test_related_scopes(toy, judge, model, true_scopes):
    assert {s for s in SCOPES if toy.related(judge, model, s)} == true_scopes


def test_scope_is_a_predicate_not_the_precedence(toy_path, tmp_path):
    # A descendant that was also trained on the judge's outputs: relation says LINEAGE,
    # the "student" scope still says yes.
    from nepotism.models import load_registry

    extra = tmp_path / "extra.toml"
    extra.write_text('[models."self-distilled"]\nfamily = "fam-a"\nparent = "chat"\nteachers = ["chat"]\n')
    reg = load_registry([toy_path, extra], include_default=False)
    assert reg.relation("chat", "self-distilled") is Relation.LINEAGE
    assert reg.related("chat", "self-distilled", "student")
    assert reg.related("chat", "self-distilled", "lineage")
    assert not reg.related("chat", "self-distilled", "teacher")


def test_related_rejects_unknown_names_and_scopes(toy):
    with pytest.raises(KeyError):
        toy.related("chat", "nope", "family")
    with pytest.raises(ValueError, match="unknown scope"):
        toy.related("chat", "base", "cousins")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("chat", "chat"),
        ("Chat-Model", "chat"),
        ("chat-model", "chat"),  # case-insensitive fallback
        ("CHAT_V1", "chat"),
        ("chat@sample2", "chat"),  # tag stripped
        ("Chat-Model@run-3@x", "chat"),
        ("someorg/chat-ft", "chat-ft"),  # Hugging Face style prefix
    ],
)
def test_resolve(toy, name, expected):
    assert toy.resolve(name) == expected
    assert toy.knows(name)


def test_resolve_prefers_exact_case(tmp_path):
    from nepotism.models import load_registry

    path = tmp_path / "r.toml"
    path.write_text('[models."Abc"]\nfamily = "f"\n[models."abd"]\nfamily = "f"\naliases = ["ABD-x"]\n')
    reg = load_registry([path], include_default=False)
    assert reg.resolve("Abc") == "Abc"
    assert reg.resolve("abc") == "Abc"
    assert reg.resolve("abd-X") == "abd"


@pytest.mark.parametrize("name", ["nope", "", "@tag", "chat-", "org/nope"])
def test_unknown_names(toy, name):
    assert not toy.knows(name)
    with pytest.raises(KeyError):
        toy.resolve(name)
    with pytest.raises(KeyError):
        toy.get(name)
    assert toy.family_of(name) is None


def test_get_and_lists(toy):
    info = toy.get("Chat-Model")
    assert info.id == "chat" and info.parent == "base" and info.family == "fam-a"
    assert info.sources["parent"] == "toy card"
    assert toy.family_of("chat_v1") == "fam-a"
    assert toy.ids() == sorted(toy.ids()) and len(toy.ids()) == len(toy) == 13
    assert toy.ancestors_of("chat-ft") == ["chat", "base"]
    assert toy.teachers_of("grand-student") == ["chat", "teacher-x"]
    assert toy.teachers_of("chain-student") == ["chat", "student", "teacher-x"]
    assert toy.students_of("teacher-x") == ["chain-student", "grand-student", "student"]
    assert toy.students_of("chat") == ["chain-student", "grand-student", "other-base", "student"]
    assert toy.teachers_of("stranger") == [] and toy.students_of("stranger") == []
    d = info.to_dict()
    assert d["aliases"] == ["Chat-Model", "chat_v1"] and d["sources"] == {"parent": "toy card"}


def test_scope_is_the_strongest_relation_and_a_name_is_always_itself(toy):
    """`Registry.scope`, the one rule every metric uses: exclusive scopes from the precedence order."""
    from nepotism.models import SCOPE_LADDER, less_related

    names = [m.id for m in toy]
    expected = {
        "SELF": "self",
        "LINEAGE": "family",
        "SAME_SERIES": "family",
        "SAME_FAMILY": "family",
        "STUDENT": "student",
        "FAMILY_STUDENT": "family-student",
        "TEACHER": "teacher",
        "UNRELATED": "unrelated",
        "UNKNOWN": "unknown",
    }
    for judge in names:
        for model in names + ["not-registered"]:
            assert toy.scope(judge, model) == expected[toy.relation(judge, model).name], (judge, model)
    assert toy.scope("not-registered", "not-registered@sample2") == "self"  # unknown to the registry, still itself
    assert toy.relation("not-registered", "not-registered").name == "UNKNOWN"
    assert set(SCOPE_LADDER) == set(expected.values())
    assert [s for s in SCOPE_LADDER if less_related(s, "family-student")] == ["teacher", "unrelated", "unknown"]
    assert not less_related("unknown", "unrelated") and not less_related("family", "family")


def test_one_related_predicate_and_one_cache(toy, monkeypatch):
    """`Registry.is_related` is `related_scope` of `Registry.scope` for every pair (teacher included,
    unknown names never); `is_unrelated` needs both names known; each pair is classified once."""
    from nepotism.models import related_scope

    names = [m.id for m in toy] + ["not-registered"]
    for judge in names:
        for model in names:
            scope = toy.scope(judge, model)
            assert toy.is_related(judge, model) == (scope not in ("unrelated", "unknown")), (judge, model)
            assert toy.is_unrelated(judge, model) == (scope == "unrelated"), (judge, model)
    assert toy.is_related("student", "teacher-x") and toy.scope("student", "teacher-x") == "teacher"
    assert not toy.is_related("chat", "not-registered") and not toy.is_unrelated("chat", "not-registered")
    assert [related_scope(s) for s in ("self", "family-student", "unrelated", "unknown", None)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    calls = []
    fresh = type(toy)({m.id: m for m in toy})
    original = type(toy)._relation
    monkeypatch.setattr(type(toy), "_relation", lambda self, j, m: calls.append((j, m)) or original(self, j, m))
    for _ in range(3):
        fresh.is_related("chat", "cousin"), fresh.scope("chat", "cousin"), fresh.relation("chat", "cousin")
    assert calls == [("chat", "cousin")]
