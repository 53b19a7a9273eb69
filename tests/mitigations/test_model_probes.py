"""Paper 003's probes as the paper runs them: cross-reason through a model writing a reason for the
option it is attached to, and code restyled by a model keeping comments, verified in the sandbox."""

import asyncio

from nepotism.mitigations.code_style import comments, read_restyle, restyle_prompt
from nepotism.mitigations.perturb import Pair, perturb_pairs
from nepotism.mitigations.rewrite import cross_reason_prompt, read_reason
from nepotism.records import Instance, Response

QUESTION = "What colour is a clear daytime sky?\nA. green\nB. blue"
# a completion recorded from a model asked cross_reason_prompt(QUESTION, "B")
RECORDED_FOR_B = ("On a clear day sunlight is scattered by the air, and the short blue wavelengths scatter the "
                  "most, so the sky looks blue.\nAnswer: B")


def test_cross_reason_prompt_asks_for_a_reason_for_the_option():
    (message,) = cross_reason_prompt(QUESTION, "B")
    assert message.role == "user" and QUESTION in message.content
    assert "why option B is the correct answer" in message.content and "Argue for option B only" in message.content
    assert message.content.rstrip().endswith(QUESTION.splitlines()[-1])


def test_a_recorded_reason_is_attached_to_its_option_and_a_contrary_one_is_refused():
    ok = read_reason(RECORDED_FOR_B, "B")
    assert ok.ok and ok.text.startswith("Answer: B\nOn a clear day") and "Answer: B" not in ok.text[10:]
    contrary = read_reason(RECORDED_FOR_B, "A")  # the text argues for B: not a reason for A
    assert not contrary.ok and contrary.reason == "the reason argues for another option"
    assert read_reason(None, "B").reason == "the reason-writing call failed"
    assert read_reason("Answer: B", "B").reason == "no reasoning to borrow"


class Writer:
    """A text model that argues for whatever option it is asked about, naming itself; records calls."""

    def __init__(self):
        self.calls = []

    async def __call__(self, calls):
        self.calls += list(calls)
        out = []
        for model, messages, _ in calls:
            option = messages[0].content.split("why option ", 1)[1][0]
            out.append(f"{model} says option {option} matches the question best.\nAnswer: {option}")
        return out


def _pair():
    inst = Instance("q1", QUESTION)
    own = Response("q1", "judge-a", "Answer: A\nGrass is green and so is the sky.")
    opp = Response("q1", "other-b", "Answer: B\nThe sky is blue.")
    return Pair("judge-a", inst, own, opp)


def test_cross_reason_by_the_competitor_and_by_the_rewriter():
    writer = Writer()
    (texts,) = asyncio.run(perturb_pairs("cross-reason", {"cross_reason": "model", "writer": "competitor"}, [_pair()],
                                         text_model=writer))
    # the judge's option A with a reason the competitor wrote for A; B with a reason the judge wrote for B
    assert texts.own == "Answer: A\nother-b says option A matches the question best."
    assert texts.opponent == "Answer: B\njudge-a says option B matches the question best."
    assert sorted((m, msgs[0].content.split("why option ", 1)[1][0]) for m, msgs, _ in writer.calls) == [
        ("judge-a", "B"), ("other-b", "A")]
    (third,) = asyncio.run(perturb_pairs("cross-reason", {"cross_reason": "model", "writer": "rewriter"}, [_pair()],
                                         text_model=Writer(), rewriter="neutral-c"))
    assert third.own.startswith("Answer: A\nneutral-c") and third.opponent.startswith("Answer: B\nneutral-c")
    (spliced,) = asyncio.run(perturb_pairs("cross-reason", {"cross_reason": "splice"}, [_pair()], text_model=Writer()))
    assert spliced.own == "Answer: A\nThe sky is blue."
    (blocked,) = asyncio.run(perturb_pairs("cross-reason", {}, [_pair()], text_model=Writer(),
                                           callable_models={"judge-a"}))
    assert not blocked.ok and "can call" in blocked.reason


CODE = '''def count_evens(numbers):
    # count the even numbers
    total = 0
    for n in numbers:
        if n % 2 == 0:  # even
            total += 1
    return total
'''
TESTS = "assert count_evens([1, 2, 4]) == 2\nassert count_evens([]) == 0"
IDIOMATIC = '''```python
def count_evens(numbers):
    # count the even numbers
    return sum(1 for n in numbers if n % 2 == 0)  # even
```'''
WRONG = IDIOMATIC.replace("n % 2 == 0", "n % 2 == 1")
NO_COMMENTS = '''```python
def count_evens(numbers):
    return sum(1 for n in numbers if n % 2 == 0)
```'''


def test_restyle_prompt_and_a_recorded_restyle_keeping_comments():
    (message,) = restyle_prompt(CODE)
    assert CODE.strip() in message.content and "keep every comment exactly as it is" in message.content
    answer = f"Here you go:\n```python\n{CODE}```\nIt counts evens."
    done = read_restyle(answer, IDIOMATIC)
    assert done.ok and comments(done.detail["code"]) == ["count the even numbers", "even"]
    assert done.text.startswith("Here you go:\n```python\n") and done.text.endswith("```\nIt counts evens.")
    assert read_restyle(answer, NO_COMMENTS).reason == "the restyle dropped or changed a comment"
    assert read_restyle(answer, f"```python\n{CODE}```").reason == "restyling changed nothing"
    assert read_restyle(answer, "```python\ndef (:\n```").reason.startswith("the restyled code does not parse")


def test_model_restyle_is_verified_by_the_tasks_tests_in_the_sandbox():
    codes = {"good": CODE, "bad": CODE.replace("total", "count")}  # same behaviour, told apart by the coder

    async def coder(calls):  # restyles the first program correctly and breaks the second
        return [WRONG if "count = 0" in msgs[0].content else IDIOMATIC for _, msgs, _ in calls]

    pairs = []
    for tag, code in codes.items():
        inst = Instance(f"c-{tag}", "Write count_evens.", metadata={"tests": TESTS})
        own = Response(inst.id, "judge-a", f"```python\n{code}```")
        pairs.append(Pair("judge-a", inst, own, Response(inst.id, "other-b", "```python\ndef f(): pass\n```")))
    good, bad = asyncio.run(perturb_pairs("code-restyle", {"restyle": "model"}, pairs, text_model=coder,
                                          rewriter="coder-c"))
    assert good.ok and "sum(1 for n in numbers" in good.own and "# count the even numbers" in good.own
    assert good.opponent == pairs[0].opponent.text  # only the judge's own code is restyled
    assert not bad.ok and bad.reason == "restyled code behaves differently on the tests"
    assert bad.detail["after"] == ["failed", "passed"]  # the real sandbox ran each test on both programs
