"""run → explain → report: the cases behind a verdict of a live run, with the texts from the run's
store (the output folder holds the tables only), through the installed executable against the stand-in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))


def nep(*args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, f"{args} -> {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    return done


def test_run_then_explain_with_the_stores_texts(tmp_path, standin):
    from nepotism.records import Instance
    from nepotism.store import Store
    from nepotism.testing.experiments import standin_experiment

    exp = standin_experiment(tmp_path / "work", standin, items=4, recognition=False)
    # the stand-in spreads its label mass over six tokens: accept its A/B labels (examples/standin.toml does too)
    exp.write_text(
        exp.read_text().replace(
            'options = { mode = "labels", ways = 2 }', 'options = { mode = "labels", ways = 2, min_label_mass = 0.2 }'
        )
    )
    work = exp.parent
    nep("run", "exp.toml", "--store", "s.db", "--no-progress", cwd=work)
    found = json.loads(
        nep("explain", "out", "--judge", "standin-alpha", "--texts", "s.db", "--bootstrap", "50", "--json", cwd=work).stdout
    )
    assert found["verdict"]["judge"] == "standin-alpha" and found["verdict"]["scope"] == "self"
    cases = [c for g in found["groups"] for c in g["cases"]]
    assert cases and found["texts"] == {"source": "s.db", "answers_shown": 2 * len(cases), "answers_missing": 0, "missing": []}
    with Store.read_only(work / "s.db") as store:
        for case in cases:
            assert case["related"] == "standin-alpha"
            for model, text in ((case["related"], case["text_related"]), (case["other"], case["text_other"])):
                assert text == store.responses(instance_id=case["instance_id"], generator=model)[0].text
            instance: Instance = store.instances(id=case["instance_id"])[0]
            assert case["prompt"] == instance.prompt and case["prompt"].startswith("Question ")
    done = nep("explain", "out", "--judge", "standin-alpha", "--texts", "out", cwd=work, expect=2)
    assert "give the run's store" in done.stderr
    nep("report", "out", "--texts", "s.db", "--bootstrap", "50", "--out", "report", cwd=work)
    html = (work / "report" / "report.html").read_text()
    assert 'id="cases-standin-alpha-self"' in html and 'class="case-text case-related"' in html
    assert "not in the texts" not in html
