"""The gallery of real audits (docs/gallery/): every page regenerates from ../shared/data to exactly the
committed text (and the README's gallery bullets to exactly theirs), every page's judge verdicts are
the ones held below, and the README and the index link every page.

A failure here means a verdict on a published page moved (a metric, the evidence ladder, an importer
or the data changed): look at why, then rerun `.venv/bin/python scripts/gallery.py PAGE` and update
the verdicts below.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data"
GALLERY = ROOT / "docs" / "gallery"
SCRIPT = ROOT / "scripts" / "gallery.py"

#: A scope nothing in the data measures.
NM = ("not-measurable", None, None, None, None, None, 0)
SCOPES = ("self", "family", "student", "family-student")


def judge(name: str, condition: str, **measured: tuple) -> dict[str, tuple]:
    """Every scope's verdict of one judge and condition: (status, rung, metric, value, ci_low, ci_high,
    prompts), rounded to 3 decimals; scopes not named are not measurable (``family_student`` for
    ``family-student``)."""
    given = {k.replace("_", "-"): v for k, v in measured.items()}
    assert set(given) <= set(SCOPES)
    return {f"{name}|{condition}|{scope}": given.get(scope, NM) for scope in SCOPES}


def alone(value: float, low: float, high: float, prompts: int) -> tuple:
    return ("measured", "alone", "self-preference-ratio", value, low, high, prompts)


#: page -> (data folder it needs, {metrics output: {judge|condition|scope: verdict}})
EXPECTED = {
    "arena-bench": (
        "arena_bench_v1",
        {
            "metrics.json": judge(
                "gpt-4",
                "default",
                family=alone(0.764, 0.749, 0.779, 300),
                student=alone(0.539, 0.514, 0.564, 300),
                family_student=alone(0.465, 0.436, 0.493, 300),
            )
        },
    ),
    "routellm": ("routellm", {"metrics.json": judge("gpt-4", "default", family=alone(0.628, 0.581, 0.672, 160))}),
    "judgebench": (
        "judgebench",
        {
            "metrics-llm.json": {**judge("claude-3-haiku-20240307", "arena_hard"), **judge("o1-mini-2024-09-12", "arena_hard")},
            "metrics-rm.json": {
                k: v
                for rm in (
                    "Ray2333/GRM-Gemma-2B-rewardmodel-ft",
                    "Skywork/Skywork-Reward-Gemma-2-27B",
                    "Skywork/Skywork-Reward-Llama-3.1-8B",
                    "internlm/internlm2-20b-reward",
                    "internlm/internlm2-7b-reward",
                )
                for k, v in judge(rm, "reward_model").items()
            },
        },
    ),
    "mbpp": (
        "mbpp_selfpref",
        {
            "results-reply.json": judge("llama-3.3-70b-instruct", "default", self=alone(0.11, 0.07, 0.154, 228)),
            "results-probabilities.json": judge(
                "llama-3.3-70b-instruct",
                "default",
                self=("measured", "reference", "equal-opportunity-bias", -0.053, -0.269, 0.153, 48),
            ),
        },
    ),
    "alpaca-eval": (
        "alpaca_eval",
        {
            "metrics.json": {
                **judge("claude-2", "bedrock_claude", self=alone(0.763, 0.733, 0.791, 805)),
                **judge(
                    "gpt4_0314", "alpaca_eval_gpt4", self=alone(0.942, 0.927, 0.956, 805), family=alone(0.173, 0.161, 0.186, 805)
                ),
                **judge("gpt4_0613", "alpaca_eval_gpt4_0613", family=alone(0.099, 0.078, 0.122, 805)),
                **judge("gpt4_1106_preview", "alpaca_eval_cot_gpt4_turbo_fn", self=alone(0.836, 0.82, 0.853, 805)),
                **judge("gpt4_1106_preview", "alpaca_eval_gpt4_turbo_fn", self=alone(0.774, 0.756, 0.793, 805)),
                **judge("gpt4_1106_preview", "weighted_alpaca_eval_gpt4_turbo", self=alone(0.807, 0.796, 0.818, 805)),
            }
        },
    ),
}


def _needs(folder: str) -> None:
    if not (DATA / folder).exists():
        pytest.skip(f"../shared/data/{folder} is absent")


@cache
def _checked(page: str) -> tuple[int, str, str]:
    """``scripts/gallery.py PAGE --check --json``, run once per page for every test that reads it."""
    done = subprocess.run([sys.executable, str(SCRIPT), page, "--check", "--json"], capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_page_regenerates_to_the_committed_text_and_verdicts(page):
    needs, want = EXPECTED[page]
    _needs(needs)
    status, stdout, stderr = _checked(page)
    assert status == 0, stderr  # the page and its README bullet are what the data give
    got = json.loads(stdout)[page]["verdicts"]
    assert {save: {k: tuple(v) for k, v in verdicts.items()} for save, verdicts in got.items()} == want


def _judgebench_upstream_accuracy(path: Path) -> tuple[int, int, int]:
    """(correct, pairs, pairs with a null game) by JudgeBench's utils/metrics.py compute_final_metrics:
    game 2 flipped back, +1 per game naming the label, -1 per game naming the other; correct when > 0."""
    flip = {"A>B": "B>A", "B>A": "A>B"}
    correct = pairs = nulls = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            pair = json.loads(line)
            first, second = pair["judgments"]
            d1 = first["decision"] if first else None
            d2 = second["decision"] if second else None
            d2 = flip.get(d2, d2)
            nulls += d1 is None or d2 is None
            votes = sum(1 if d == pair["label"] else -1 if d == flip[pair["label"]] else 0 for d in (d1, d2))
            correct += votes > 0
            pairs += 1
    return correct, pairs, nulls


def test_judgebench_accuracy_is_judgebench_own():
    """The accuracy (MIPA) records the JudgeBench page shows are JudgeBench's own metric: o1-mini's equals
    it; Claude-3-Haiku's leaves out, counted, the pairs JudgeBench reads from their other game."""
    _needs("judgebench")
    folder = DATA / "judgebench"
    o1 = _judgebench_upstream_accuracy(next(folder.glob("*judge_model=o1-mini*")))
    haiku = _judgebench_upstream_accuracy(next(folder.glob("*judge_model=claude-3-haiku*")))
    assert o1 == (230, 350, 0) and haiku == (87, 270, 13)
    status, stdout, stderr = _checked("judgebench")
    assert status == 0, stderr
    records = {
        r["judge"]: r
        for t in json.loads(stdout)["judgebench"]["tables"]
        for r in t["records"]
        if r["metric"] == "mipa" and r["variant"] == {"paradigm": "PWC"}
    }
    assert (records["o1-mini-2024-09-12"]["value"], records["o1-mini-2024-09-12"]["n"]) == (round(230 / 350, 3), 350)
    kept = records["claude-3-haiku-20240307"]
    assert kept["n"] + kept["n_excluded"] == 270 and kept["n_excluded"] == 13


def test_mbpp_probabilities_give_paper_004s_counts():
    """Read from the label probabilities (paper 004's reading: an exact tie for the top label takes the first
    in [A, T, B]), the recorded MBPP file gives the paper's SPR 57/378 and LSPR 4/13 in the page's table."""
    _needs("mbpp_selfpref")
    status, stdout, stderr = _checked("mbpp")
    assert status == 0, stderr
    table = next(t for t in json.loads(stdout)["mbpp"]["tables"] if t["source"] == "results-probabilities.json")
    found = {r["metric"]: r for r in table["records"]}
    spr, lspr = found["self-preference-ratio"], found["legitimate-self-preference-ratio"]
    assert (round(spr["value"] * spr["n"]), spr["n"]) == (57, 378)
    assert (round(lspr["value"] * lspr["n"]), lspr["n"]) == (4, 13)


def test_every_page_is_tested_indexed_and_generated():
    pages = sorted(p.stem for p in GALLERY.glob("*.md") if p.name != "README.md")
    assert pages == sorted(EXPECTED)
    index = (GALLERY / "README.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bullets = readme.split("<!-- gallery bullets:", 1)[1].split("<!-- end of gallery bullets -->", 1)[0]
    for page in pages:
        text = (GALLERY / f"{page}.md").read_text(encoding="utf-8")
        assert f"scripts/gallery.py {page}\n" in text
        for heading in ("## The data", "## The commands", "## The answer", "## What this data cannot say"):
            assert f"\n{heading}\n" in text, (page, heading)
        assert f"({page}.md)" in index and f"(docs/gallery/{page}.md)" in bullets


def test_check_fails_on_a_stale_page_and_a_stale_readme_bullet(tmp_path):
    _needs("routellm")
    (tmp_path / "routellm.md").write_text("stale\n")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stale = readme.replace("(docs/gallery/routellm.md): ", "(docs/gallery/routellm.md): a stale word, ")
    assert stale != readme
    (tmp_path / "README.md").write_text(stale, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "routellm", "--check", "--out", str(tmp_path), "--readme", str(tmp_path / "README.md")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 1 and "routellm.md differs from what the data gives now" in done.stderr
    assert "the gallery bullet of routellm differs" in done.stderr
    assert (tmp_path / "routellm.md").read_text() == "stale\n"
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == stale


def test_absent_data_says_where_it_comes_from_and_how_to_pass_it(tmp_path):
    """In a clone without ../shared/data the script names the upstream files and --data, exit 2, before running
    any command (it used to point at ../shared/data/PROVENANCE.md, which is absent too)."""
    for page, upstream, folder in (
        ("arena-bench", "lmarena/arena-hard-auto", "arena_bench_v1"),
        ("mbpp", "Taslim-M/mitigating_self_preference", "mbpp_selfpref"),
    ):
        done = subprocess.run(
            [sys.executable, str(SCRIPT), page, "--data", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2 and not done.stdout and "Traceback" not in done.stderr
        assert upstream in done.stderr and f"DIR/{folder}/" in done.stderr
        assert f"scripts/gallery.py {page} --data DIR" in done.stderr and str(tmp_path) in done.stderr
        assert list(tmp_path.iterdir()) == []


def test_unknown_page_is_an_error():
    done = subprocess.run([sys.executable, str(SCRIPT), "no-such-page"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown page 'no-such-page'" in done.stderr


def test_readme_setup_is_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", setup, flags=re.S)
    assert [b.strip().count("\n") for b in blocks] == [0, 0]
