import ast
from types import SimpleNamespace

from nepotism.mitigations.code_style import restyle_code, restyle_response, split_tests, verify_equivalent

CODE = """def count_pairs(items, target):
    seen_values = set()
    total = 0
    for value in items:
        if target - value in seen_values:
            total += 1
        seen_values.add(value)
    return total
"""
TESTS = ["assert count_pairs([1, 2, 3, 4], 5) == 2", "assert count_pairs([], 1) == 0"]


def _exec(code, call):
    space = {}
    exec(compile(code, "<t>", "exec"), space)  # noqa: S102 - our own test code
    return eval(call, space)  # noqa: S307


def test_restyle_renames_locals_and_parameters_and_keeps_behaviour():
    new = restyle_code(CODE)
    assert new != CODE and "seenValues" in new and "totalVal" in new
    func = ast.parse(new).body[0]
    assert [a.arg for a in func.args.args] == ["itemsVal", "targetVal"]
    kept = ast.parse(restyle_code(CODE, rename_parameters=False)).body[0]
    assert [a.arg for a in kept.args.args] == ["items", "target"]
    for call in ("count_pairs([1, 2, 3, 4], 5)", "count_pairs([5, 0, 5], 5)", "count_pairs([], 1)"):
        assert _exec(new, call) == _exec(CODE, call)


def test_nested_scopes_and_globals_are_left_alone():
    code = "def f(x):\n    y = 1\n    def g():\n        return y\n    return g() + x\n"
    assert "y = 1" in restyle_code(code)
    code = "counter = 0\ndef bump():\n    global counter\n    counter = counter + 1\n    return counter\n"
    assert "counter = counter + 1" in restyle_code(code)


def test_restyle_response_only_touches_the_code_block():
    text = f"Here you go:\n```python\n{CODE}```\nIt counts pairs."
    out = restyle_response(text)
    assert out.ok and out.text.startswith("Here you go:\n```python\n") and out.text.endswith("```\nIt counts pairs.")
    assert not restyle_response("```python\ndef broken(:\n```").ok
    unclosed = restyle_response("```python\ndef f(x):\n    return x\n")
    assert unclosed.ok and "xVal" in unclosed.text


def test_a_keyword_call_broken_by_renaming_is_caught():
    code = "def scale(x, factor):\n    return x * factor\n"
    same, detail = verify_equivalent(code, restyle_code(code), ["assert scale(2, factor=3) == 6"])
    assert not same and detail["before"] == ["passed"] and detail["after"] != ["passed"]


def test_equivalence_is_checked_in_the_sandbox():
    same, detail = verify_equivalent(CODE, restyle_code(CODE), TESTS)
    assert same and detail["after"] == ["passed", "passed"]
    broken = CODE.replace("total += 1", "total += 2")
    same, detail = verify_equivalent(CODE, broken, TESTS)
    assert not same and detail["after"][0] == "failed"


def test_mismatch_with_an_injected_runner():
    calls = []

    def runner(code, *, tests, timeout, memory_mb):
        calls.append(tests)
        return SimpleNamespace(status="passed" if "Val" not in code or "== 0" in tests else "failed")

    same, detail = verify_equivalent(CODE, restyle_code(CODE), TESTS, runner=runner)
    assert not same and detail["before"] == ["passed", "passed"] and detail["after"] == ["failed", "passed"]
    assert len(calls) == 4


def test_split_tests():
    assert split_tests("assert a()\nassert b()\n") == ["assert a()", "assert b()"]
    assert split_tests("def check(f):\n    assert f()\n") == ["def check(f):\n    assert f()\n"]
