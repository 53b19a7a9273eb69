"""The papers' own numbers through the installed `nepotism` executable with default options.

Each test writes the judgments a user would have (the recorded MBPP file of paper 004, or a table
built from a paper's printed counts), runs `nepotism import` / `nepotism metrics ... --json` with
no option that changes how a number is computed, and checks the paper's figure:

- 004: Llama-3.3-70B on MBPP, SPR 57/378 (15.1%) and LSPR 4/13 (the recorded file, ../shared/data);
- 000: every cell of Table 1 from the released win/tie/loss shares (tests/fixtures/paper000), and
  App. C.2's worked case (Table 8: 55.1% / 36.8% → PLS 18.4%);
- 001: GPT-4's equal-opportunity bias 0.520 from its confusion counts (§4.3, Fig. 2).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
ROOT = Path(__file__).resolve().parents[2]
MBPP = ROOT / ".." / "shared" / "data" / "mbpp_selfpref" / "llama-3.3-70b_gpt-4o_eval.jsonl"
TABLE1 = json.loads((ROOT / "tests" / "fixtures" / "paper000" / "table1_triples.json").read_text())


def nep(*args: object, cwd: Path) -> str:
    done = subprocess.run([NEPOTISM, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"nepotism {args} -> {done.returncode}\n{done.stderr}"
    return done.stdout


def _one(records: list[dict], metric: str, **fields) -> dict:
    variant = fields.pop("variant", {})
    found = [
        r
        for r in records
        if r["metric"] == metric
        and all(r.get(k) == v for k, v in fields.items())
        and all((r.get("variant") or {}).get(k) == v for k, v in variant.items())
    ]
    assert len(found) == 1, (metric, fields, variant, len(found))
    return found[0]


def test_004_mbpp_spr_and_lspr_with_default_options(tmp_path):
    if not MBPP.exists():
        pytest.skip("../shared/data/mbpp_selfpref is not beside the repository")
    nep("import", MBPP, "--format", "mbpp-selfpref", "--out", "j.csv", "--reference-out", "c.csv", cwd=tmp_path)
    records = json.loads(nep("metrics", "j.csv", "--reference", "c.csv", "--json", cwd=tmp_path))["results"]
    spr = _one(records, "self-preference-ratio", scope="self", variant={"opponents": "any", "averaging": None})  # pooled
    assert (round(spr["value"] * spr["n"]), spr["n"]) == (57, 378) and round(100 * spr["value"], 1) == 15.1
    (lspr,) = [
        r
        for r in records
        if r["metric"] == "legitimate-self-preference-ratio"
        and r["scope"] == "self"
        and r["variant"] == {"opponents": "any", "averaging": "per-evaluatee"}
    ]  # verdicts, not P(own)
    assert (round(lspr["value"] * lspr["n"]), lspr["n"]) == (4, 13)


def _registry(path: Path, base: str) -> None:
    lines = []
    for judge in ("GPT-4o", "LLaMA-3.3", "Gemini-1.5"):
        lines += [
            f'[models."p000-{judge}"]',
            f'family = "{judge}"',
            "",
            f'[models."{base}-{judge}"]',
            f'family = "{base}"',
            f'teachers = ["p000-{judge}"]',
            "",
        ]
    path.write_text("\n".join(lines))


def _games(shares) -> list[str]:
    wins, ties, losses = (round(10 * share) for share in shares)
    return ["A"] * wins + ["tie"] * ties + ["B"] * losses


def _pls_cells(tmp_path: Path, name: str, base: str, triples: dict) -> dict[str, float]:
    """PLS (%) per judge pair from `nepotism metrics` on one game per row, 1000 per judge and pair."""
    rows = ["instance_id,judge,model_a,model_b,verdict"]
    for pair, by_judge in triples.items():
        gen_a, gen_b = pair.split(" & ")
        for judge in pair.split(" & "):
            rows += [f"{pair}/{k},p000-{judge},{base}-{gen_a},{base}-{gen_b},{v}" for k, v in enumerate(_games(by_judge[judge]))]
    (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
    _registry(tmp_path / f"{name}.toml", base)
    records = json.loads(nep("metrics", f"{name}.csv", "--models", f"{name}.toml", "--json", cwd=tmp_path))["results"]
    out = {}
    for pair in triples:
        judges = " & ".join(sorted(f"p000-{j}" for j in pair.split(" & ")))
        pls = [
            r
            for r in records
            if r["metric"] == "preference-leakage-score"
            and r["judge"] == judges
            and r["variant"].get("ties") == "loss"
            and "slice" not in r["variant"]
        ]
        assert len(pls) == 1, pair
        out[pair] = 100 * pls[0]["value"]
    return out


def test_000_table1_every_cell_with_default_options(tmp_path):
    """Arena-Hard (ties present) to the printed 0.1; AlpacaEval 2.0 (no ties) within what the shares'
    own 0.1% rounding allows, as tests/metrics/test_paper000_table1.py derives."""
    from nepotism.metrics.leakage import pls_from_win_rates

    printed = TABLE1["table1_pls_percent"]
    cells = 0
    for bench, bases in TABLE1["benchmarks"].items():
        for base, triples in bases.items():
            got = _pls_cells(tmp_path, f"{bench}-{base}", base, triples)
            for pair, value in got.items():
                cells += 1
                if bench == "arena-hard":
                    assert round(value, 1) == printed[bench][base][pair], (bench, base, pair)
                else:
                    i, j = pair.split(" & ")
                    a_i, a_j = triples[pair][i], triples[pair][j]
                    corners = [
                        100
                        * float(
                            pls_from_win_rates((a_i[0] + d1) / 100, (a_j[0] + d2) / 100, (a_j[2] + d3) / 100, (a_i[2] + d4) / 100)
                        )
                        for d1, d2, d3, d4 in itertools.product((-0.05, 0.05), repeat=4)
                    ]
                    assert abs(round(value, 1) - printed[bench][base][pair]) <= 0.1 + 1e-9
                    assert min(corners) <= value <= max(corners)
    assert cells == 12


def test_000_table8_worked_case_is_18_4_percent(tmp_path):
    """App. C.2 / Table 8: Mistral-GPT-4o wins 55.1% under GPT-4o and 36.8% under Gemini-1.5 → 18.4%."""
    triples = {"GPT-4o & Gemini-1.5": {"GPT-4o": [55.1, 0.0, 44.9], "Gemini-1.5": [36.8, 0.0, 63.2]}}
    assert round(_pls_cells(tmp_path, "table8", "Mistral-7B", triples)["GPT-4o & Gemini-1.5"], 1) == 18.4


def test_001_equal_opportunity_bias_of_gpt4_is_0_520(tmp_path):
    """001 §4.3: GPT-4's recalls 1852/(108+1852) on pairs humans gave its answer and 118/(160+118)
    on pairs they gave the other → 0.945 − 0.425 = 0.520."""
    cells = {("own", "own"): 1852, ("own", "other"): 108, ("other", "own"): 160, ("other", "other"): 118}
    rows, ref = ["instance_id,judge,model_a,model_b,verdict"], ["instance_id,model_a,model_b,winner"]
    k = 0
    for (human, judge), count in cells.items():
        for _ in range(count):
            k += 1
            rows.append(f"q{k},p001-gpt-4,p001-gpt-4,p001-other,{'A' if judge == 'own' else 'B'}")
            ref.append(f"q{k},p001-gpt-4,p001-other,{'p001-gpt-4' if human == 'own' else 'p001-other'}")
    (tmp_path / "pairwise.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "human.csv").write_text("\n".join(ref) + "\n")
    (tmp_path / "models.toml").write_text('[models."p001-gpt-4"]\nfamily = "gpt"\n\n[models."p001-other"]\nfamily = "x"\n')
    records = json.loads(
        nep("metrics", "pairwise.csv", "--reference", "human.csv", "--models", "models.toml", "--json", cwd=tmp_path)
    )["results"]
    eo = _one(records, "equal-opportunity-bias", scope="self", variant={"opponents": "unrelated", "judge_tie": "1/2"})
    assert round(eo["value"], 3) == 0.520 and eo["confusion_matrix"] == {
        "human_own_judge_own": 1852,
        "human_own_judge_other": 108,
        "human_other_judge_own": 160,
        "human_other_judge_other": 118,
    }
