"""`markers._line_matches` and `markers._block_quotes`: the matches of ``finditer``, found faster.

Every grammar's statement and hint patterns are compared with ``finditer`` on generated replies
built from their keywords in any case, separators and noise, ASCII and not (span and groups of
every match), and the keyword finders with the keyword alternation at every position.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nepotism.judging import markers, parse

GRAMMARS = {
    "pairwise-3": parse.pairwise_grammar(ways=3),
    "pairwise-2-numbers-recognition": parse.pairwise_grammar(ways=2, numbers=True, recognition=True),
    "yes-no": parse.yes_no_grammar(),
    "yes-no-recognition": parse.yes_no_grammar(recognition=True),
    "scale": parse.scale_grammar(1, 10),
    "fraction": parse.fraction_grammar(4),
    "category": parse.category_grammar(("Math", "Creative writing")),
}
PATTERNS = [(f"{name}:{which}", getattr(g, which)) for name, g in GRAMMARS.items() for which in ("line", "weak_line")]

FRAGMENTS = [
    "final",
    "verdict",
    "Verdict",
    "VERDICT",
    "decision",
    "winner",
    "the",
    "The",
    "better",
    "preferred",
    "answer",
    "Answer",
    "reply",
    "response",
    "assistant",
    "one",
    "choice",
    "my",
    "own",
    "mine",
    "written",
    "by",
    "me",
    "criterion",
    "criteria",
    "met",
    "items",
    "judgment",
    "judgement",
    "rating",
    "overall",
    "score",
    "grade",
    "count",
    "category",
    "label",
    "is",
    "was",
    "A",
    "B",
    "tie",
    "yes",
    "no",
    "7",
    ":",
    "=",
    " - ",
    " ",
    "  ",
    "\n",
    "\t",
    "**",
    "_",
    "[[",
    "]]",
    '"',
    "'",
    "(",
    "x",
    "ſ",
    "K",
    "İ",
    "é",
    "—",
    "final verdict:",
    "the better answer is",
    "Final answer: B",
    "Rating: 7/10",
]


def _matches(found):
    return [(m.span(), m.groupdict()) for m in found]


@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_every_grammar_pattern_gets_a_keyword_finder(name, pattern):
    assert markers._keyword_finder(pattern) is not None, name


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=40), st.sampled_from(PATTERNS))
def test_line_matches_are_finditers(pieces, named):
    _, pattern = named
    text = "".join(pieces)
    assert _matches(markers._line_matches(text, pattern)) == _matches(pattern.finditer(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join).filter(str.isascii), st.sampled_from(PATTERNS))
def test_the_finder_matches_where_the_keyword_does(text, named):
    _, pattern = named
    words = markers._LINE_SHAPE.match(pattern.pattern).group(1)
    keyword = re.compile(f"(?i:{words})")
    finder = markers._keyword_finder(pattern)
    lowered = text.lower()
    for at in range(len(text) + 1):
        assert (keyword.match(text, at) is not None) == (finder.match(lowered, at) is not None), (text, at)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("verdict|decision", ["verdict", "decision"]),
        (r"(?:final\s+)?(?:answer|choice)(?=\s*:)", [r"final\s+(?:answer|choice)(?=\s*:)", r"answer(?=\s*:)", r"choice(?=\s*:)"]),
        (r"(?:final\s+|overall\s+)?rating", [r"final\s+rating", r"overall\s+rating", "rating"]),
        (r"(?:a)+b", None),
        (r"(?:a)??b", None),
        (r"[ab]c", None),
        (r"\(x", None),
        (r"\s+x", None),
    ],
)
def test_leading_groups_are_distributed_or_refused(words, expected):
    assert markers._literal_first(words) == expected


def test_a_pattern_of_another_shape_is_searched_as_before():
    pattern = re.compile(r"(?i:verdict)\s*:\s*(\w+)")
    assert markers._keyword_finder(pattern) is None
    text = "Verdict: A. verdict: B"
    assert _matches(markers._line_matches(text, pattern)) == _matches(pattern.finditer(text))


@pytest.mark.parametrize(
    "text",
    [
        "Verdict: " + "a" * 159 + " verdict: B",  # the value stops at 160 characters: the next keyword starts there
        "Final verdict is A\nxverdict: B\n(verdict) = tie",  # a keyword inside a word, after a bracket
        "Category - Math\ncategory: Math\nlabel=Creative writing",  # a keyword without the separator it needs
        "The better answer is A. the better response: B; preferred one - tie",
    ],
)
@pytest.mark.parametrize(("name", "pattern"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_line_matches_on_chosen_replies(text, name, pattern):
    assert _matches(markers._line_matches(text, pattern)) == _matches(pattern.finditer(text))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([">", " ", "\t", "\n", "\r", "x", "[[A>B]]", "> quote", "  >", "\r\n", "é", ""]) | st.text(max_size=3),
        max_size=40,
    ).map("".join)
)
def test_block_quotes_are_the_patterns_matches(text):
    assert markers._block_quotes(text) == [m.span() for m in markers._BLOCKQUOTE.finditer(text)]
