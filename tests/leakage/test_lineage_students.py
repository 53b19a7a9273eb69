import pytest

from nepotism.errors import InputError
from nepotism.leakage import lineage
from nepotism.leakage.exports import SyntheticExample
from nepotism.leakage.lineage import Student, registry_with_students, student_id, write_student_registry
from nepotism.leakage.students import ICLSpec, icl_demonstrations, mix_examples, preference_pairs
from nepotism.models import load_registry
from nepotism.records import Instance, Judgment


def test_public_api():
    assert set(lineage.__all__) == {"METHODS", "Student", "registry_with_students", "student_id", "write_student_registry"}


def test_students_are_registered_with_their_teacher(tmp_path):
    registry = load_registry([])
    gen_a, gen_b, base = "qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct", "gemma-3-270m"
    students = [Student(student_id("icl", base, g), "icl", base, g, "icl:gemma", how={"k": 4}) for g in (gen_a, gen_b)]
    path = write_student_registry(students, registry, tmp_path / "students.toml")
    reg = registry_with_students([], path)
    sa, sb = students[0].id, students[1].id
    assert reg.get(sa).teachers == (gen_a,) and reg.get(sa).parent == base
    assert reg.get(sa).family == reg.get(base).family
    assert reg.relation(gen_a, sa).name == "STUDENT"
    assert reg.relation(gen_b, sa).name != "STUDENT"
    assert reg.students_of(gen_b) == sorted({sb, *registry.students_of(gen_b)})
    assert "method=icl" in reg.get(sa).notes and "k=4" in reg.get(sa).notes


def test_unregistered_generator_and_taken_id_are_refused(tmp_path):
    registry = load_registry([])
    bad = Student("s1", "icl", "gemma-3-270m", "no-such-model", "g")
    with pytest.raises(InputError, match="not in the model registry"):
        write_student_registry([bad], registry, tmp_path / "s.toml")
    taken = Student("gemma-3-270m", "icl", "gemma-3-270m", "smollm2-135m-instruct", "g")
    with pytest.raises(InputError, match="already a registered model"):
        write_student_registry([taken], registry, tmp_path / "s.toml")
    assert not (tmp_path / "s.toml").exists()


EX = [SyntheticExample(f"i{n}", f"Q{n}?", f"A{n}.", "gen") for n in range(10)]
HUMAN = [SyntheticExample(f"i{n}", f"Q{n}?", f"H{n}.", "human") for n in range(10)]


def test_icl_demonstrations_are_seeded_and_prepended():
    demos = icl_demonstrations(EX, 3, seed=1)
    assert demos == icl_demonstrations(list(reversed(EX)), 3, seed=1)
    assert [m.role for m in demos] == ["user", "assistant"] * 3
    req = ICLSpec(model="s", demonstrations=demos).request(Instance("x", "New?"))
    assert req.messages[:6] == demos and req.messages[-1].content == "New?"
    with pytest.raises(ValueError):
        icl_demonstrations(EX[:2], 3, seed=0)


@pytest.mark.parametrize("ratio", [0.1, 0.3, 0.5, 0.7])
def test_mixing_keeps_the_total_and_the_share(ratio):
    mixed = mix_examples(EX, HUMAN, ratio, 10, seed=0)
    assert len(mixed) == 10
    assert sum(e.source == "gen" for e in mixed) == round(ratio * 10)
    assert len({e.instance_id for e in mixed}) == 10


def test_mixing_refuses_too_little_data():
    with pytest.raises(ValueError, match="other-source"):
        mix_examples(EX, HUMAN[:2], 0.5, 10, seed=0)


def _j(inst, first, second, verdict, status="parsed"):
    return Judgment(inst, "gen", "pairwise", (first, second), status, verdict if status == "parsed" else None)


def test_preference_pairs_keep_only_consistent_verdicts():
    samples = {(i, s): f"{i}-{s}" for i in ("a", "b", "c", "d") for s in ("s1", "s2")}
    js = [
        _j("a", "s1", "s2", "A"),
        _j("a", "s2", "s1", "B"),  # s1 wins both orders
        _j("b", "s1", "s2", "A"),
        _j("b", "s2", "s1", "A"),  # disagree
        _j("c", "s1", "s2", "tie"),
        _j("c", "s2", "s1", "A"),
        _j("d", "s1", "s2", None, "unparsed"),
        _j("d", "s2", "s1", "A"),
    ]
    pairs, dropped = preference_pairs(js, samples, {"a": "Qa", "b": "Qb", "c": "Qc", "d": "Qd"}, "gen")
    assert [(p.instance_id, p.chosen, p.rejected) for p in pairs] == [("a", "a-s1", "a-s2")]
    assert dropped == {"orders disagree": 1, "tie": 1, "unreadable": 1}


def test_completion_format_icl_prompt_for_base_models():
    from nepotism.leakage.students import ICLSpec, completion_prompt
    from nepotism.records import Instance, Message

    demos = (Message("user", "Say hi"), Message("assistant", "Hi!"), Message("user", "Count to 3"), Message("assistant", "1 2 3"))
    prompt = completion_prompt(demos, Instance(id="q", prompt="Name a colour"))
    assert prompt == (
        "Instruction: Say hi\nResponse: Hi!\n\nInstruction: Count to 3\nResponse: 1 2 3\n\nInstruction: Name a colour\nResponse:"
    )
    request = ICLSpec(
        model="m", max_tokens=16, temperature=0.0, seed=0, demonstrations=demos, prompt_format="completion"
    ).request(Instance(id="q", prompt="Name a colour"))
    assert request.messages is None and request.prompt == prompt
    assert "Instruction:" in request.extra["stop"]
    chat = ICLSpec(model="m", max_tokens=16, temperature=0.0, seed=0, demonstrations=demos).request(
        Instance(id="q", prompt="Name a colour")
    )
    assert chat.prompt is None and len(chat.messages) == 5
