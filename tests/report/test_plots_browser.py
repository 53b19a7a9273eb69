"""The demo's report in a real headless Chromium: every figure's drawn texts (its image's ``data-labels``)
hold whole ids, never one cut short with "…"; the demo's self-vs-self heatmap columns and its
"round robin of 2" board are left out and the page says so.

Skipped (with the reason) when Chromium or chromedriver is absent (`scripts/install_browser.sh`).
"""

from __future__ import annotations

import re

import pytest

from nepotism.metrics import Bootstrap
from nepotism.report.full import write_report

TRUNCATED = re.compile(r"\w…")  # an id cut short: a character of it right before an ellipsis


@pytest.mark.slow
def test_demo_report_figures_label_every_name_whole(browser_factory, tmp_path):
    from nepotism.api import audit
    from nepotism.data import ATTRIBUTION, demo_judgments

    results = audit(demo_judgments(), bootstrap=Bootstrap(n_resamples=50))
    paths = write_report(
        results.to_dicts(),
        tmp_path / "demo",
        summary=results.summary,
        findings=results.findings,
        title="nepotism demo",
        attribution=ATTRIBUTION,
    )
    driver = browser_factory()
    driver.get(paths["report.html"].resolve().as_uri())
    figures = driver.execute_script(
        "return [...document.querySelectorAll('figure')].map(f => f.querySelector('img')).map(i => ({"
        "id: i.parentElement.id, labels: i.dataset.labels, shown: i.complete && i.naturalWidth > 0}))"
    )
    assert len(figures) >= 5 and all(f["shown"] and f["labels"] for f in figures)
    cut = {f["id"]: [t for t in f["labels"].split("\n") if TRUNCATED.search(t)] for f in figures}
    assert not any(cut.values()), cut
    by_id = {f["id"]: "".join(f["labels"].split()) for f in figures}
    for condition in ("alpaca_eval_cot_gpt4_turbo_fn", "weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4_turbo_fn"):
        assert condition in by_id["bias-self-preference-ratio"]
    assert "@output_" not in by_id["heatmap-win-rate"]
    assert not any("roundrobinof2" in labels for labels in by_id.values())
    note = driver.execute_script(
        "const n = document.getElementById('leaderboard-left-out'); return n && n.offsetHeight > 0 ? n.textContent : null"
    )
    assert note and "round robin of 2" in note and "samples of one model, gpt4_1106_preview" in note
    caption = driver.execute_script("return document.querySelector('#heatmap-win-rate figcaption').textContent")
    assert "samples of itself" in caption and "Not shown: claude-2, gpt4_0314, gpt4_0613" in caption
