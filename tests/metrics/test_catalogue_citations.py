"""Every place the metrics catalogue cites in papers 000–004 exists in the paper's text.

The citations are read out of the catalogue (source, formula and variants of every metric id) and
looked up in ``../shared/papers`` by searching the text, not against a list typed here: a section
(§4.1) or appendix (App. C.2, D.4) needs a heading line with that number (a subsection heading
stands for its section: some numbered headings lost their number in the text extraction), a
table, figure or definition its caption ("Table 5:", "Figure 3:", "Definition 4.1"), an equation
its tag ("(5)"), and a quoted title ("Human Study as Quality Control") a heading with those words.
A citation belongs to the last paper id (000–004) named before it in the same text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nepotism.metrics.catalogue import METRICS

PAPERS = Path(__file__).resolve().parents[2] / ".." / "shared" / "papers"

_NUM = r"(?:(?!00[0-4]\b)\d+(?:\.\d+)*|[A-H](?:\.\d+)*)(?![\w])"
_REF = re.compile(rf"(?P<kind>§|Eqs?\.|Tables?|Figs?\.|App\.|Def\.)\s*(?P<nums>{_NUM}(?:\s*(?:[–-]|,|and)\s*{_NUM})*)")
_TITLE = re.compile(r"[\"“](?P<title>[A-Z][^\"”]{3,80})[\"”]")
_PAPER = re.compile(r"\b(00[0-4])\b")
_KIND = {
    "§": "section",
    "Eq.": "equation",
    "Eqs.": "equation",
    "Table": "table",
    "Tables": "table",
    "Fig.": "figure",
    "Figs.": "figure",
    "App.": "section",
    "Def.": "definition",
}


def _numbers(nums: str) -> list[str]:
    out = []
    for part in re.split(r"\s*(?:,|and)\s*", nums):
        span = re.fullmatch(r"(\d+)\s*[–-]\s*(\d+)", part)
        out += [str(i) for i in range(int(span[1]), int(span[2]) + 1)] if span else [part.strip()]
    return [number for number in out if number]


def citations(text: str) -> list[tuple[str, str, str]]:
    """(paper, kind, number or title) of each place cited in ``text``."""
    marks = sorted(
        [(m.start(), "paper", m) for m in _PAPER.finditer(text)]
        + [(m.start(), "ref", m) for m in _REF.finditer(text)]
        + [(m.start(), "title", m) for m in _TITLE.finditer(text)],
        key=lambda t: t[0],
    )
    paper, out = None, []
    for _, what, match in marks:
        if what == "paper":
            paper = match[1]
        elif paper is not None and what == "title":
            out.append((paper, "title", match["title"]))
        elif paper is not None:
            out += [(paper, _KIND[match["kind"]], n) for n in _numbers(match["nums"])]
    return out


def _exists(text: str, kind: str, what: str) -> bool:
    e = re.escape(what)
    heading = r"^(?:#+\s*)?(?:\d{3,6}\s+)?"  # markdown hashes and the line numbers the extraction kept
    patterns = {
        "section": rf"{heading}{e}(?:\.\d+)*\.?\s+[A-Z]",
        "table": rf"Table {e}\s*[:.]",
        "figure": rf"Figure {e}\s*[:.]",
        "definition": rf"Definition {e}\b",
        "equation": rf"\({e}\)|\\tag\{{{e}\}}",
        "title": rf"{heading}{e}\s*$",
    }
    return re.search(patterns[kind], text, flags=re.M | (re.I if kind == "title" else 0)) is not None


def _texts() -> dict[str, str]:
    if not PAPERS.is_dir():
        pytest.skip("the papers' texts are not in ../shared/papers beside the repository")
    return {p.name[:3]: p.read_text(encoding="utf-8") for p in sorted(PAPERS.glob("00[0-4]_*.txt"))}


def _cited() -> list[tuple[str, tuple[str, str, str]]]:
    return [
        (info.id, c)
        for info in METRICS.values()
        for field in (info.paper, info.formula, *info.variants)
        for c in citations(field)
    ]


def test_the_parser_reads_every_kind_of_citation():
    assert citations("000 Eq. 5–6, App. C.2, D.4") == [
        ("000", "equation", "5"),
        ("000", "equation", "6"),
        ("000", "section", "C.2"),
        ("000", "section", "D.4"),
    ]
    assert citations("004 §4.2 Fig. 5, Tables 16–18") == [
        ("004", "section", "4.2"),
        ("004", "figure", "5"),
        ("004", "table", "16"),
        ("004", "table", "17"),
        ("004", "table", "18"),
    ]
    assert citations("new; contrasts 001 Def. 4.1, 004 Eq. 4–5") == [
        ("001", "definition", "4.1"),
        ("004", "equation", "4"),
        ("004", "equation", "5"),
    ]
    assert citations('human study (003 "Human Study as Quality Control", Fig. 9)') == [
        ("003", "title", "Human Study as Quality Control"),
        ("003", "figure", "9"),
    ]
    assert citations("§5 without a paper") == []


def test_every_catalogue_citation_names_a_place_in_the_papers_text():
    texts = _texts()
    cited = _cited()
    assert len(cited) > 60 and {paper for _, (paper, _, _) in cited} == set(texts)
    missing = [(metric, c) for metric, c in cited if not _exists(texts[c[0]], c[1], c[2])]
    assert missing == []


def test_the_search_finds_what_is_there_and_only_that():
    texts = _texts()
    assert _exists(texts["000"], "table", "5") and not _exists(texts["000"], "table", "15")
    assert _exists(texts["000"], "section", "5.6") and not _exists(texts["000"], "section", "5.9")
    assert _exists(texts["004"], "section", "3")  # only "3.1 ..." kept its number
    assert not _exists(texts["003"], "section", "4.3")  # paper 003's sections are not numbered
    assert _exists(texts["003"], "title", "Human Study as Quality Control")
    assert _exists(texts["001"], "definition", "4.1") and _exists(texts["002"], "equation", "6")
