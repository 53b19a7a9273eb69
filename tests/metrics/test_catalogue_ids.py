"""Every metric id the package writes into a record is a catalogue id.

The scan reads the source: a string that looks like a metric id (``word-word``) in a metric position
— ``metric=...``, a ``"metric": ...`` dict entry, or the first argument of a ``record``-style helper
— must be in `catalogue.METRICS`. The planted module shows the scan finds each position.
"""

import ast
import re
from pathlib import Path

from nepotism.metrics.catalogue import METRICS

SRC = Path(__file__).resolve().parents[2] / "src" / "nepotism"
_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
_HELPERS = {"record", "_record", "new_record", "_base", "Record", "_rec", "rec", "_row", "make_record"}


def emitted_ids(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        values = []
        if isinstance(node, ast.Call):
            values += [kw.value for kw in node.keywords if kw.arg == "metric"]
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in _HELPERS and node.args:
                values.append(node.args[0])
        elif isinstance(node, ast.Dict):
            values += [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "metric"]
        found |= {v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str) and _ID.match(v.value)}
    return found


def test_the_scan_finds_every_metric_position():
    planted = (
        'x = {"metric": "dict-id"}\nf(metric="keyword-id")\n_record("helper-id", 1)\n'
        'new_record("builder-id", j, c)\ng("not-a-metric")\ny = {"scope": "family-student"}\n'
    )
    assert emitted_ids(planted) == {"dict-id", "keyword-id", "helper-id", "builder-id"}


def test_every_emitted_id_is_in_the_catalogue():
    missing = {}
    for path in sorted(SRC.rglob("*.py")):
        for metric_id in emitted_ids(path.read_text()) - set(METRICS):
            missing.setdefault(metric_id, []).append(str(path.relative_to(SRC)))
    assert not missing, f"metric ids emitted but not in the catalogue: {missing}"


def test_docs_metrics_page_is_current():
    from nepotism.metrics.catalogue import markdown

    page = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
    assert page.read_text() == markdown(), "docs/metrics.md is stale: regenerate it (see catalogue.markdown)"
