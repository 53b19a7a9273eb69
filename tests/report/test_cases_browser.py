"""The report's cases section in a real headless Chromium: from the Summary's "cases behind it" a
reader lands on the verdict's cases, opens one, and sees both answers side by side, the prompt and
every judge's verdict on the pair; hostile answer text stays text. Skipped (with the reason) when
Chromium or chromedriver is absent, as the other browser tests are."""

from __future__ import annotations

import json

import pytest

import nepotism
from nepotism.api import explain_verdicts
from nepotism.metrics import Bootstrap
from nepotism.report.full import write_report
from nepotism.simulate import panel_spec, simulate, write_tables

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cases-report")
    sim = simulate(panel_spec(n_instances=50, planted={"self": 1.0, "family": 1.0}), seed=2, kinds=("pairwise",))
    paths = write_tables(sim, folder)
    texts = folder / "texts.jsonl"
    texts.write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": i,
                    "model": m,
                    "prompt": f"Question {i}: why?",
                    "text": f"{m} answers {i}." + (HOSTILE if m == "judge-b" else ""),
                }
            )
            + "\n"
            for i in sorted(set(sim.pairwise["instance_id"]))
            for m in sim.spec.generators
        )
    )
    sources = dict(source=paths["pairwise"], references=[paths["preference-ref"]], models=[paths["registry"]])
    results = nepotism.audit(
        sources["source"], references=sources["references"], models=sources["models"], bootstrap=Bootstrap(n_resamples=100)
    )
    records = results.to_dicts()
    cases = explain_verdicts(
        sources["source"],
        results.verdicts,
        records,
        references=sources["references"],
        models=sources["models"],
        texts=texts,
        limit=3,
    )
    written = write_report(
        records,
        folder / "report",
        summary=results.summary,
        verdicts=list(results.verdicts),
        cases=cases,
        title="Cases in a browser",
    )
    return written["report.html"]


@pytest.mark.slow
def test_follow_a_summary_link_to_a_case_with_both_answers(browser_factory, report):
    from selenium.webdriver.common.by import By

    driver = browser_factory()
    driver.get(report.resolve().as_uri())
    assert driver.execute_script("return document.readyState") == "complete"
    assert [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []
    link = next(
        a
        for a in driver.find_elements(By.LINK_TEXT, "cases behind it")
        if a.get_attribute("href").endswith("#cases-judge-b-self")
    )
    link.click()
    assert driver.execute_script("return location.hash") == "#cases-judge-b-self"
    section = driver.find_element(By.ID, "cases-judge-b-self")
    # the browser scrolled to it: its heading is at the top of the window
    assert abs(driver.execute_script("return arguments[0].getBoundingClientRect().top", section)) < 5
    assert "judge-b — its own answers" in section.find_element(By.TAG_NAME, "h3").text
    case = section.find_element(By.CSS_SELECTOR, "details.case")
    related, other = (
        case.find_elements(By.CSS_SELECTOR, "pre.case-related"),
        case.find_elements(By.CSS_SELECTOR, "pre.case-other"),
    )
    assert not related[0].is_displayed()  # collapsed until opened
    case.find_element(By.TAG_NAME, "summary").click()
    assert related[0].is_displayed() and other[0].is_displayed()
    instance = case.find_element(By.CSS_SELECTOR, "summary code").text
    assert related[0].text == f"judge-b answers {instance}.{HOSTILE}"  # markup from an answer stays text
    assert other[0].text.endswith(f"answers {instance}.") and not other[0].text.startswith("judge-b")
    # side by side: the two answers share a row
    top = driver.execute_script(
        "return [arguments[0].getBoundingClientRect().top, arguments[1].getBoundingClientRect()"
        ".top, arguments[0].getBoundingClientRect().left < arguments[1].getBoundingClientRect()"
        ".left]",
        related[0],
        other[0],
    )
    assert top[0] == top[1] and top[2]
    assert case.find_element(By.CSS_SELECTOR, "pre.case-prompt").text == f"Question {instance}: why?"
    rows = case.find_elements(By.CSS_SELECTOR, "table.case-judges tbody tr")
    judges = [r.find_elements(By.TAG_NAME, "td")[0].text for r in rows]
    assert judges == ["judge-a", "judge-b", "judge-c", "judge-d", "judge-e", "the reference"]
    this = case.find_element(By.CSS_SELECTOR, "tr.this-judge").find_elements(By.TAG_NAME, "td")
    assert [this[0].text, this[1].text] == ["judge-b", "this judge"] and this[2].text.startswith("prefers ")
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
