"""Recognition under perturbation conditions (paper 003 Figs. 7/11/14): answers and verdicts are
matched within a condition, so the association before and after a perturbation is each its own."""

import numpy as np
import pandas as pd
import pytest

from nepotism.analyses.suite import SuiteOptions, run_suite
from nepotism.metrics.bootstrap import Bootstrap
from nepotism.models import load_registry

REGISTRY = '[models."judge-a"]\nfamily = "a"\n[models."other-b"]\nfamily = "b"\n'
PERTURBED = "synonyms:judge-a"


def _planted(n: int = 40):
    """Per condition: which items the judge recognises (pairwise question) and prefers its own answer.

    default: items 0..23 recognised (24/40 = 0.6), preferred exactly when recognised (r = +1).
    synonyms: items 0..19 recognised (20/40 = 0.5), preferred exactly when *not* recognised (r = -1).
    """
    recog, verdicts = [], []
    for condition, recognised_upto, same in (("default", 24, True), (PERTURBED, 20, False)):
        for i in range(n):
            own_first = i % 2 == 0
            a, b = ("judge-a", "other-b") if own_first else ("other-b", "judge-a")
            own_slot, other_slot = ("A", "B") if own_first else ("B", "A")
            recognised = i < recognised_upto
            preferred = recognised if same else not recognised
            recog.append({"instance_id": f"x{i}", "judge": "judge-a", "model_a": a, "model_b": b,
                          "choice": own_slot if recognised else other_slot, "condition": condition})
            verdicts.append({"instance_id": f"x{i}", "judge": "judge-a", "model_a": a, "model_b": b,
                             "verdict": own_slot if preferred else other_slot, "condition": condition})
    return pd.DataFrame(recog), pd.DataFrame(verdicts)


def test_recognition_and_association_per_condition(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(REGISTRY)
    registry = load_registry([str(path)])
    recog, pairwise = _planted()
    records = run_suite(recog, "recognition-pairwise", registry, references={"pairwise": pairwise},
                        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=50))).records
    accuracy = {r["condition"]: r for r in records if r["metric"] == "recognition-accuracy"}
    assert accuracy["default"]["value"] == pytest.approx(24 / 40) and accuracy["default"]["n"] == 40
    assert accuracy[PERTURBED]["value"] == pytest.approx(20 / 40) and accuracy[PERTURBED]["n"] == 40
    assoc = {r["condition"]: r for r in records if r["metric"] == "recognition-preference-association"}
    assert assoc["default"]["value"] == pytest.approx(1.0)
    assert assoc[PERTURBED]["value"] == pytest.approx(-1.0)
    # the 2x2 tables (rows: recognised 0/1, columns: preferred 0/1), counted by hand
    assert assoc["default"]["table"] == [[16, 0], [0, 24]]
    assert assoc[PERTURBED]["table"] == [[0, 20], [20, 0]]
    assert np.isfinite(assoc[PERTURBED]["chi2"])


def test_a_condition_without_recognition_answers_has_no_association(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(REGISTRY)
    registry = load_registry([str(path)])
    recog, pairwise = _planted()
    recog = recog[recog["condition"] == "default"]
    records = run_suite(recog, "recognition-pairwise", registry, references={"pairwise": pairwise},
                        options=SuiteOptions(bootstrap=Bootstrap(n_resamples=0))).records
    assoc = {r["condition"]: r for r in records if r["metric"] == "recognition-preference-association"}
    assert assoc["default"]["value"] == pytest.approx(1.0)
    # the perturbed verdicts have no answers to pair with: undefined, never borrowed from "default"
    assert assoc[PERTURBED]["value"] is None and assoc[PERTURBED]["n"] == 0
