from __future__ import annotations

import pytest

from nepotism.errors import InputError
from nepotism.models import load_registry
from nepotism.models import loading


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path, text, *, base=None):
    paths = [] if base is None else [base]
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(InputError) as info:
        load_registry([*paths, path], include_default=False)
    return info.value, path


def test_public_api():
    assert set(loading.__all__) == {"BUNDLED_REGISTRY", "default_registry", "load_registry"}


@pytest.mark.parametrize(
    ("text", "field", "fragment"),
    [
        (
            '[models."vicuna-13b"]\nfamily = "llama"\nteachers = ["gpt-9"]\n',
            'models."vicuna-13b".teachers',
            "unknown teacher id 'gpt-9'",
        ),
        ('[models."a"]\nfamily = "f"\nparent = "ghost"\n', 'models."a".parent', "unknown parent id 'ghost'"),
        ('[models."a"]\nfamily = "f"\nteachers = ["a"]\n', 'models."a".teachers', "own teacher"),
        ('[models."a"]\nseries = "s"\n', 'models."a".family', "missing required key 'family'"),
        (
            '[models."a"]\nfamily = "f"\naliases = ["x"]\n[models."b"]\nfamily = "f"\naliases = ["X"]\n',
            'models."b".aliases',
            "already used by model 'a'",
        ),
        (
            '[models."a"]\nfamily = "f"\n[models."b"]\nfamily = "f"\naliases = ["a"]\n',
            'models."b".aliases',
            "already used by model 'a'",
        ),
        ('[models."a"]\nfamily = "f"\nparent = "a"\n', 'models."a".parent', "cycle"),
        (
            '[models."a"]\nfamily = "f"\nparent = "b"\n[models."b"]\nfamily = "f"\nteachers = ["c"]\n[models."c"]\nfamily = "f"\nparent = "a"\n',
            "models.",
            "cycle in parent/teacher edges",
        ),
        ('[models."a"]\nfamily = "f"\nfamliy = "g"\n', 'models."a".famliy', "unknown key"),
        ('[models."a"]\nfamily = 3\n', 'models."a".family', "non-empty string"),
        ('[models."a"]\nfamily = "f"\naliases = "x"\n', 'models."a".aliases', "list of strings"),
        ('[models."a"]\nfamily = "f"\naliases = ["x@y"]\n', 'models."a".aliases', "must not contain '@'"),
        ('[models."a"]\nfamily = "f"\nprice_input_per_mtok = -1\n', 'models."a".price_input_per_mtok', "non-negative"),
        ('[models."a"]\nfamily = "f"\nsources = { parent = "card" }\n', 'models."a".sources.parent', "not a lineage edge"),
        (
            '[models."a"]\nfamily = "f"\n[models."b"]\nfamily = "f"\nparent = "a"\nsources = { "teachers.a" = "x" }\n',
            'models."b".sources.teachers.a',
            "not a lineage edge",
        ),
        ("[other]\nx = 1\n", "other", "top level"),
        ('[models]\n"a" = 3\n', 'models."a"', "expected a table"),
    ],
)
def test_load_errors_name_file_and_key(tmp_path, text, field, fragment):
    err, path = _error(tmp_path, text)
    assert err.path == str(path)
    assert err.field is not None and err.field.startswith(field)
    assert fragment in err.message
    assert str(path) in str(err) and err.field in str(err)


def test_cycle_through_teachers_only(tmp_path):
    err, _ = _error(tmp_path, '[models."a"]\nfamily = "f"\nteachers = ["b"]\n[models."b"]\nfamily = "f"\nteachers = ["a"]\n')
    assert "a -> b -> a" in err.message or "b -> a -> b" in err.message


def test_invalid_toml_and_missing_file(tmp_path):
    err, path = _error(tmp_path, '[models."a"\nfamily = "f"\n')
    assert err.path == str(path) and "not valid TOML" in err.message
    with pytest.raises(InputError, match="cannot read"):
        load_registry([tmp_path / "absent.toml"], include_default=False)


def test_user_file_extends_and_adds(tmp_path):
    base = _write(tmp_path, "base.toml", '[models."a"]\nfamily = "f"\nseries = "s"\naliases = ["a1"]\n')
    user = _write(
        tmp_path,
        "user.toml",
        '[models."a"]\naliases = ["a2"]\nprovider = "p"\nnotes = "n"\n'
        '[models."b"]\nfamily = "g"\nteachers = ["a"]\nsources = { "teachers.a" = "my paper" }\n',
    )
    reg = load_registry([base, user], include_default=False)
    a = reg.get("a2")
    assert a.id == "a" and a.aliases == ("a1", "a2") and a.provider == "p" and a.series == "s"
    assert a.files == (str(base), str(user))
    assert reg.teachers_of("b") == ["a"] and reg.get("b").sources == {"teachers.a": "my paper"}


def test_user_file_contradiction_is_an_error(tmp_path):
    base = _write(tmp_path, "base.toml", '[models."a"]\nfamily = "f"\nseries = "s"\n')
    err, path = _error(tmp_path, '[models."a"]\nseries = "other"\n', base=base)
    assert err.path == str(path) and err.field == 'models."a".series'
    assert str(base) in err.message


def test_user_file_extends_bundled_registry(tmp_path):
    user = _write(
        tmp_path,
        "mine.toml",
        '[models."gpt-4-0314"]\naliases = ["my-gpt4-judge"]\n'
        '[models."my-distill"]\nfamily = "llama"\nparent = "llama-3.1-8b"\nteachers = ["gpt-4-0314"]\n',
    )
    reg = load_registry([user])
    assert reg.resolve("my-gpt4-judge") == "gpt-4-0314"
    assert reg.relation("gpt4_0314", "my-distill").value == "student"
    with pytest.raises(InputError) as info:
        load_registry([_write(tmp_path, "clash.toml", '[models."gpt-4-0314"]\nfamily = "claude"\n')])
    assert info.value.field == 'models."gpt-4-0314".family'


def test_single_path_accepted(tmp_path):
    path = _write(tmp_path, "one.toml", '[models."a"]\nfamily = "f"\n')
    assert load_registry(path, include_default=False).ids() == ["a"]


def test_aliases_name_known_models_without_renaming_data(tmp_path):
    """``[aliases]`` points a data file's spelling at a model any file defines, through any name of it."""
    user = _write(tmp_path, "names.toml", '[aliases]\n"GPT 4" = "gpt-4"\n"My Judge" = "gpt4_0314"\n')
    reg = load_registry([user])
    assert reg.resolve("GPT 4") == "gpt-4" and reg.resolve("gpt 4") == "gpt-4"
    assert reg.resolve("My Judge") == "gpt-4-0314" and "My Judge" in reg.get("gpt-4-0314").aliases
    assert str(user) in reg.get("gpt-4").files
    assert reg.scope("GPT 4", "gpt-4") == "self"


def test_families_give_many_unknown_generators_a_family_at_once(tmp_path):
    user = _write(
        tmp_path,
        "families.toml",
        '[families]\n"Anthropic" = ["Claude Instant 1.3", "claude-2"]\n"Claude" = ["Claude X"]\n'
        '"Berkeley" = ["Koala Chat", "Vicuna Zero"]\n',
    )
    reg = load_registry([user])
    assert reg.get("Claude Instant 1.3").family == "claude" == reg.get("Claude X").family  # provider, family name
    assert reg.scope("claude-2", "Claude Instant 1.3") == "family"
    assert reg.get("Koala Chat").family == "Berkeley" and reg.scope("Koala Chat", "Vicuna Zero") == "family"
    assert reg.scope("gpt-4", "Koala Chat") == "unrelated"


@pytest.mark.parametrize(
    ("text", "field", "fragment"),
    [
        ('[aliases]\n"X" = "no-such-model"\n', 'aliases."X"', "not a name of any model"),
        ('[aliases]\n"gpt-4o" = "gpt-4"\n', 'aliases."gpt-4o"', "already a name of model 'gpt-4o'"),
        ('[aliases]\n"x@y" = "gpt-4"\n', 'aliases."x@y"', "must not contain '@'"),
        ("aliases = 3\n", "aliases", "[aliases] table"),
        ('[families]\n"Google" = ["Bard"]\n', 'families."Google"', "provider of several families"),
        ('[families]\n"claude" = ["gpt-4"]\n', 'families."claude"', "of family 'openai-gpt', not 'claude'"),
        ('[families]\n"A" = ["n1"]\n"B" = ["n1"]\n', 'families."B"', "given family 'A'"),
        ('[families]\n"A" = "n1"\n', 'families."A"', "list of strings"),
    ],
)
def test_alias_and_family_mistakes_name_the_entry(tmp_path, text, field, fragment):
    path = _write(tmp_path, "bad.toml", text)
    with pytest.raises(InputError) as info:
        load_registry([path])
    assert info.value.path == str(path) and info.value.field == field and fragment in info.value.message
