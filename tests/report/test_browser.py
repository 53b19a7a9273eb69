"""The report in a real headless Chromium: loads from file:// without console errors, every plot
has rendered, the page runs no injected script; a full-page screenshot is saved.

Skipped (with the reason) when Chromium or chromedriver is absent (`scripts/install_browser.sh`
installs them). Set NEPOTISM_REPORT_ARTIFACTS to a folder to keep the screenshots there; they
always go to the test's tmp folder too.
"""

from __future__ import annotations

import base64
import copy
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from nepotism.analyses.comparisons import build_comparisons
from nepotism.metrics.reference import perplexity_win_rate
from nepotism.analyses.derived import leaderboard_records, perplexity_records
from nepotism.report.full import write_report
from nepotism.metrics import Bootstrap

EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture
def browser(browser_factory):
    return browser_factory()


def _check_page(driver, html: Path, shot: Path) -> dict:
    driver.get(html.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    images = driver.execute_script(
        "return [...document.images].map(i => ({w: i.naturalWidth, h: i.naturalHeight, done: i.complete,"
        " box: i.getBoundingClientRect().width}))"
    )
    assert images and all(i["done"] and i["w"] > 0 and i["h"] > 0 and i["box"] > 0 for i in images)
    assert driver.execute_script("return document.querySelectorAll('svg').length") == 0
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    png = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": 1280, "height": min(height, 16000), "scale": 1}},
    )
    data = base64.b64decode(png["data"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    shot.write_bytes(data)
    keep = os.environ.get("NEPOTISM_REPORT_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return {"images": len(images), "height": height}


def _every_section(simulated) -> list[dict]:
    """Simulated records plus leaderboard, perplexity and a second condition, and a hostile name."""
    sim, registry, records = simulated
    records = copy.deepcopy(records)
    records += leaderboard_records(build_comparisons(sim.pairwise).frame, registry, n_resamples=100)
    rng = np.random.default_rng(1)
    diff = rng.normal(size=300)
    judge = (rng.random(300) < 1 / (1 + np.exp(diff))).astype(float)
    human = (rng.random(300) < 0.5).astype(float)
    for split in ("self", "other"):
        bins = perplexity_win_rate(judge, human, diff, np.arange(300), bins=5, n_resamples=50, seed=0)
        records += perplexity_records(bins, "judge-a", "default", split=split)
    treated = [
        dict(r, condition="impartiality prompt", value=r["value"] * 0.8)
        for r in records
        if r["metric"] == "self-preference-ratio" and r["value"] is not None
    ]
    for r in records:
        if r["judge"] == "judge-c":
            r["judge"] = f"judge-c{EVIL}"
    return records + treated


@pytest.mark.slow
def test_simulated_full_report_renders(browser, simulated, tmp_path):
    records = _every_section(simulated)
    paths = write_report(records, tmp_path / "sim", summary={"source": "simulated study"}, title="Simulated study: every section")
    html = paths["report.html"].read_text()
    for section in (
        "heatmap-win-rate",
        "heatmap-score-delta",
        "bias-self-preference-ratio",
        "perplexity-0",
        "confusion",
        "conditions-self-preference-ratio",
        "leaderboard",
    ):
        assert f'id="{section}"' in html
    seen = _check_page(browser, paths["report.html"], tmp_path / "report-simulated.png")
    assert seen["images"] >= 15


@pytest.mark.slow
def test_demo_report_renders(browser, tmp_path):
    from nepotism.data import ATTRIBUTION, demo_judgments
    from nepotism.api import audit

    results = audit(demo_judgments(), bootstrap=Bootstrap(n_resamples=100))
    records, summary, findings = results.to_dicts(), results.summary, results.findings
    paths = write_report(
        records,
        tmp_path / "demo",
        summary=summary,
        findings=findings,
        title="nepotism demo: AlpacaEval judges auditing their relatives",
        attribution=ATTRIBUTION,
    )
    seen = _check_page(browser, paths["report.html"], tmp_path / "report-demo.png")
    assert seen["images"] >= 5


@pytest.mark.slow
def test_analysis_sections_render(browser, tmp_path):
    """Mitigation effects, leakage (PLS, recognition, audit), paper 004 and human-label sections from
    real-shaped records (tests/fixtures/report)."""
    from nepotism.report.inputs import load_results

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "report"
    mitigation, summary, _ = load_results(fixtures / "mitigations.json")
    records = list(mitigation)
    for name in ("leakage_run.json", "leakage_audit.json", "mbpp_metrics.json", "agreement.json"):
        records += load_results(fixtures / name)[0]
    paths = write_report(records, tmp_path / "sections", summary=summary, title="Mitigations, leakage, verifiable tasks")
    html = paths["report.html"].read_text()
    figures = (
        "mitigation-effects",
        "mitigation-control",
        "leakage-pls",
        "leakage-recognition",
        "leakage-audit-0",
        "leakage-audit-1",
        "verifiable-004",
        "humans",
    )
    for figure in figures:
        assert f'<figure id="{figure}">' in html
    seen = _check_page(browser, paths["report.html"], tmp_path / "report-sections.png")
    assert seen["images"] >= len(figures)
