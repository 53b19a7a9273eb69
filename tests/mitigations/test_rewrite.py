import pytest

from nepotism.mitigations.rewrite import (
    ABLATIONS,
    ablation_prompt,
    cross_reason,
    judge_paraphrase_prompt,
    paraphrase_prompt,
    read_rewrite,
    split_label,
)

ORIGINAL = "Answer: C\nThe frost killed the first planting, so he had to sow again."


def test_prompts_carry_the_text():
    for messages in (
        paraphrase_prompt(ORIGINAL),
        judge_paraphrase_prompt(ORIGINAL),
        *(ablation_prompt(ORIGINAL, f) for f in ABLATIONS),
    ):
        assert ORIGINAL in messages[-1].content
    with pytest.raises(ValueError):
        ablation_prompt(ORIGINAL, "colour")


def test_read_rewrite_accepts_a_real_rewrite_and_strips_a_preamble():
    out = read_rewrite(
        ORIGINAL,
        "Here is the rewritten text:\nAnswer: C\nA late frost destroyed the first crop, so he replanted.",
        method="paraphrase",
        keep_label=True,
    )
    assert out.ok and out.text.startswith("Answer: C")


@pytest.mark.parametrize(
    "output, reason",
    [
        (None, "failed"),
        ("   ", "empty"),
        ("ok", "length"),
        (ORIGINAL, "original"),
        ("Answer: A\nThe frost killed the first planting, so he had to sow again!", "changed the choice"),
    ],
)
def test_read_rewrite_failures_are_counted_not_used(output, reason):
    out = read_rewrite(ORIGINAL, output, method="paraphrase", keep_label=True)
    assert not out.ok and out.text is None and reason in out.reason


def test_cross_reason_swaps_reasoning_and_keeps_the_label():
    other = "Answer: A\nBirds ate the seedlings in spring."
    out = cross_reason(ORIGINAL, other)
    assert out.ok and split_label(out.text) == ("C", "Birds ate the seedlings in spring.")
    assert not cross_reason("no label here", other).ok


def test_split_label():
    assert split_label("Some reasoning.\nFinal answer: (B)") == ("B", "Some reasoning.")
    assert split_label("A. one\nB. two\nThe answer is: C. Because of the frost.") == ("C", "A. one\nB. two")
    assert split_label("The answer is a good one.") == (None, "The answer is a good one.")
    assert split_label("just prose") == (None, "just prose")
