"""A documented simulator of biased judges, for testing metrics and for checking a study set-up.

Generators have a per-instance latent quality q(G, x) ~ Normal(ability_G, quality_sd). Judges may
be generators too; students learn from a teacher (``students = {student: teacher}``) and families
group models. A judge J favours a candidate C by a logit bias b(J, C):

- ``self`` if C = J, ``student`` if C is J's student, ``teacher`` if C is J's teacher, ``family``
  if C shares J's family, else 0 (first match in that order). The global ``self_bias``,
  ``student_bias``, ``teacher_bias`` and ``family_bias`` apply to every judge unless
  ``judge_bias[J]`` overrides them for J (e.g. ``{"judge-b": {"self": 0.6}}``), which is how one
  judge gets planted effects while the others stay clean.
- ``sensitivity[J]`` (default 1) multiplies ``beta`` for J: how sharply J tells quality apart.

Judgments, by kind:

- Pairwise: each pair (all unordered pairs of ``generators``, or ``pairs``) is judged in both
  orders; in an order with X in slot A the judge says A with probability
  (1 − tie_rate)·σ(s_J·β(q_X − q_Y) + b(J,X) − b(J,Y) + position_bias), tie with probability
  tie_rate. The reference winner is the candidate with higher quality (``preference-ref``);
  ``correctness-ref`` marks an answer correct when q > 0 and gives q as its score.
- Pointwise: score = leniency_J + s_J·β·q(G,x) + b(J,G) + score_noise·ε, ε ~ Normal(0, 1).
- Rubric: instance x has ``n_rubrics`` rubrics; rubric k is truly met with probability
  σ(q(G,x) + c_k). The judge misses a met rubric with probability fn_J and passes an unmet one
  with probability σ(logit(fp_J) + b(J, G)), where (fp_J, fn_J) = ``rubric_error[J]`` or the
  global ``false_positive``/``false_negative`` — so the overestimation rate O(J,G) is known.

`simulate` returns recorded-format frames (the `nepotism.tables` columns) plus, through the spec,
a registry TOML text; `write_tables` writes them as files for the CLI. `panel_spec` builds the
multi-judge panel used to check `matched-bias` (a clean judge with the strongest answers, a judge
that can carry planted effects, and unrelated reference judges). `SimulationSpec.truth_*` give
population values of the metrics (numerical integration over the quality difference).

To check your own set-up, describe it as a spec (your judges, generators, families, number of
items, tie rate), simulate it with and without planted effects, and run the metrics you plan to
use: their false-alarm rate and power under your design are then measured, not assumed.
Left out: text, prompts and model calls — this simulates verdicts, not responses.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, logit

__all__ = ["Simulation", "SimulationSpec", "panel_spec", "simulate", "write_tables"]

_RELATIONS = ("self", "student", "teacher", "family")


@dataclass(frozen=True)
class SimulationSpec:
    """Who exists, how they relate and how strongly each judge is biased (see module docstring)."""

    judges: tuple[str, ...] = ("judge-a", "judge-b")
    generators: tuple[str, ...] = ("judge-a", "judge-b", "student-a", "student-b", "other-1", "other-2")
    families: dict[str, str] = field(
        default_factory=lambda: {
            "judge-a": "fam-a",
            "judge-b": "fam-b",
            "other-1": "fam-o1",
            "other-2": "fam-o2",
            "student-a": "fam-sa",
            "student-b": "fam-sb",
        }
    )
    students: dict[str, str] = field(default_factory=lambda: {"student-a": "judge-a", "student-b": "judge-b"})
    ability: dict[str, float] = field(default_factory=dict)
    n_instances: int = 200
    n_rubrics: int = 5
    quality_sd: float = 1.0
    beta: float = 1.0
    self_bias: float = 0.0
    family_bias: float = 0.0
    student_bias: float = 0.0
    teacher_bias: float = 0.0
    position_bias: float = 0.0
    tie_rate: float = 0.0
    false_positive: float = 0.2
    false_negative: float = 0.1
    judge_bias: dict[str, dict[str, float]] = field(default_factory=dict)  # judge -> {relation: bias}
    sensitivity: dict[str, float] = field(default_factory=dict)
    leniency: dict[str, float] = field(default_factory=dict)
    score_noise: float = 1.0
    rubric_error: dict[str, tuple[float, float]] = field(default_factory=dict)  # judge -> (fp, fn)
    pairs: tuple[tuple[str, str], ...] | None = None

    def relation(self, judge: str, candidate: str) -> str | None:
        """``"self"``, ``"student"``, ``"teacher"``, ``"family"`` or None (first match in that order)."""
        if candidate == judge:
            return "self"
        if self.students.get(candidate) == judge:
            return "student"
        if self.students.get(judge) == candidate:
            return "teacher"
        if self.families.get(candidate) is not None and self.families.get(candidate) == self.families.get(judge):
            return "family"
        return None

    def bias(self, judge: str, candidate: str) -> float:
        """The logit bias b(J, C) of ``judge`` towards ``candidate``."""
        relation = self.relation(judge, candidate)
        if relation is None:
            return 0.0
        default = {
            "self": self.self_bias,
            "student": self.student_bias,
            "teacher": self.teacher_bias,
            "family": self.family_bias,
        }[relation]
        return float(self.judge_bias.get(judge, {}).get(relation, default))

    def slope(self, judge: str) -> float:
        """β·s_J: the judge's logit slope on the quality difference."""
        return self.beta * float(self.sensitivity.get(judge, 1.0))

    def rubric_rates(self, judge: str) -> tuple[float, float]:
        """(false_positive, false_negative) of ``judge`` on rubrics, before any bias."""
        fp, fn = self.rubric_error.get(judge, (self.false_positive, self.false_negative))
        return float(fp), float(fn)

    def pair_list(self) -> list[tuple[str, str]]:
        if self.pairs is not None:
            return [(x, y) for x, y in self.pairs]
        gens = list(self.generators)
        return [(gens[i], gens[j]) for i in range(len(gens)) for j in range(i + 1, len(gens))]

    def registry_toml(self) -> str:
        """A registry TOML describing these models (families, and teachers of students)."""
        lines: list[str] = []
        for model in dict.fromkeys((*self.judges, *self.generators)):
            lines += [f'[models."{model}"]', f'family = "{self.families.get(model, model)}"']
            if model in self.students:
                lines.append(f'teachers = ["{self.students[model]}"]')
            lines.append("")
        return "\n".join(lines)

    # ---------------------------------------------------------------- population values
    def _difference_grid(self, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
        mean = self.ability.get(x, 0.0) - self.ability.get(y, 0.0)
        sd = self.quality_sd * np.sqrt(2.0)
        d = np.linspace(mean - 9 * sd, mean + 9 * sd, 6001)
        w = np.exp(-0.5 * ((d - mean) / sd) ** 2)
        return d, w / w.sum()

    def _aggregated(self, judge: str, x: str, y: str, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P(aggregated verdict = X) and P(tie) given the quality difference d (004 Eq. 1 rule)."""
        t = self.tie_rate
        logit_xy = self.slope(judge) * d + self.bias(judge, x) - self.bias(judge, y)
        a1 = (1 - t) * expit(logit_xy + self.position_bias)
        a2 = (1 - t) * expit(logit_xy - self.position_bias)
        b1, b2 = 1 - t - a1, 1 - t - a2
        win = a1 * a2 + a1 * t + t * a2
        lose = b1 * b2 + b1 * t + t * b2
        return win, 1 - win - lose

    def truth_win_score(self, judge: str, x: str, y: str, *, given: str | None = None) -> float:
        """E[aggregated score of X vs Y] (win 1, tie ½) under ``judge``; ``given="x-better"``/``"y-better"`` conditions on the quality order."""
        d, w = self._difference_grid(x, y)
        win, tie = self._aggregated(judge, x, y, d)
        if given == "x-better":
            w = w * (d > 0)
        elif given == "y-better":
            w = w * (d < 0)
        return float(np.sum(w * (win + 0.5 * tie)) / np.sum(w))

    def truth_win_probability(self, judge: str, x: str, y: str) -> float:
        """P(aggregated verdict = X) under ``judge`` (the self-preference-ratio of one pair)."""
        d, w = self._difference_grid(x, y)
        win, _ = self._aggregated(judge, x, y, d)
        return float(np.sum(w * win))

    def truth_matched_bias(
        self, judge: str, related: str, other: str, references: Iterable[str], *, given: str | None = None
    ) -> float:
        """E[judge's score for ``related`` vs ``other`` − mean reference judges' score] (`matched-bias` of one pair)."""
        mine = self.truth_win_score(judge, related, other, given=given)
        theirs = [self.truth_win_score(k, related, other, given=given) for k in references]
        return float(mine - np.mean(theirs))

    def truth_rubric_overestimation(self, judge: str, generator: str) -> float:
        """O_rub(J, G): the probability of passing an unmet rubric."""
        return float(expit(logit(self.rubric_rates(judge)[0]) + self.bias(judge, generator)))


@dataclass(frozen=True)
class Simulation:
    """Recorded-format frames of one simulated study and the spec that produced them."""

    spec: SimulationSpec
    pairwise: pd.DataFrame
    preference_ref: pd.DataFrame
    correctness_ref: pd.DataFrame
    rubric: pd.DataFrame
    rubric_ref: pd.DataFrame
    rubric_items: pd.DataFrame
    quality: np.ndarray  # (n_generators, n_instances)
    pointwise: pd.DataFrame = field(default_factory=pd.DataFrame)


def _pairwise(
    spec: SimulationSpec, q: np.ndarray, rng: np.random.Generator, ids: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame]:
    index = {g: i for i, g in enumerate(spec.generators)}
    pairs = spec.pair_list()
    judges = list(spec.judges)
    n_p, n_j, n_i = len(pairs), len(judges), ids.size
    xs = np.array([p[0] for p in pairs], dtype=object)
    ys = np.array([p[1] for p in pairs], dtype=object)
    d = np.stack([q[index[x]] - q[index[y]] for x, y in pairs]) if pairs else np.zeros((0, n_i))  # (P, I)
    bias = np.array([[spec.bias(j, x) - spec.bias(j, y) for j in judges] for x, y in pairs]).reshape(n_p, n_j)
    slope = np.array([spec.slope(j) for j in judges])
    base = slope[None, :, None] * d[:, None, :] + bias[:, :, None]  # (P, J, I) logit for X
    sign = np.array([1.0, -1.0])
    p_a = expit(sign[None, None, :, None] * base[:, :, None, :] + spec.position_bias)  # (P, J, 2, I)
    u = rng.random((n_p, n_j, 2, n_i))  # same stream as one draw per (pair, judge, order)
    tie = u < spec.tie_rate
    says_a = ~tie & (u < spec.tie_rate + (1 - spec.tie_rate) * p_a)
    verdict = np.where(tie, "tie", np.where(says_a, "A", "B")).astype(object)
    shape = (n_p, n_j, 2, n_i)
    first = np.broadcast_to(np.stack([xs, ys], axis=1)[:, None, :, None], shape)
    second = np.broadcast_to(np.stack([ys, xs], axis=1)[:, None, :, None], shape)
    frame = pd.DataFrame(
        {
            "instance_id": np.broadcast_to(ids, shape).ravel(),
            "judge": np.broadcast_to(np.array(judges, dtype=object)[None, :, None, None], shape).ravel(),
            "model_a": first.ravel(),
            "model_b": second.ravel(),
            "verdict": verdict.ravel(),
        }
    )
    winner = np.where(d > 0, xs[:, None], np.where(d < 0, ys[:, None], "tie"))
    refs = pd.DataFrame(
        {"instance_id": np.tile(ids, n_p), "model_a": np.repeat(xs, n_i), "model_b": np.repeat(ys, n_i), "winner": winner.ravel()}
    )
    return frame, refs


def _rubric(
    spec: SimulationSpec, q: np.ndarray, rng: np.random.Generator, ids: np.ndarray
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    n_gen, n_inst = q.shape
    k = spec.n_rubrics
    difficulty = rng.normal(0.0, 1.0, size=(n_inst, k))
    truth = rng.random((n_gen, n_inst, k)) < expit(q[:, :, None] + difficulty[None])
    draws: list[np.ndarray] = []
    for judge in spec.judges:
        fp = np.array([spec.truth_rubric_overestimation(judge, g) for g in spec.generators])
        fn = spec.rubric_rates(judge)[1]
        u = rng.random((n_gen, n_inst, k))
        draws.append(np.where(truth, u >= fn, u < fp[:, None, None]))
    judged = np.stack(draws)  # (J, G, I, K)
    rubric_ids = np.array([f"r{j}" for j in range(k)])
    cat = pd.Categorical
    n_j = len(spec.judges)
    rubric = pd.DataFrame(
        {
            "instance_id": cat(np.tile(np.repeat(ids, k), n_j * n_gen), categories=ids),
            "judge": cat(np.repeat(np.array(spec.judges), n_gen * n_inst * k), categories=list(spec.judges)),
            "model": cat(
                np.tile(np.repeat(np.array(spec.generators), n_inst * k), n_j), categories=list(dict.fromkeys(spec.generators))
            ),
            "rubric_id": cat(np.tile(rubric_ids, n_j * n_gen * n_inst), categories=rubric_ids),
            "met": judged.ravel(),
        }
    )
    rubric["condition"] = "default"
    rubric["replicate"] = 0
    reference = rubric[rubric["judge"] == spec.judges[0]][["instance_id", "model", "rubric_id"]].reset_index(drop=True)
    reference["met"] = truth.ravel()
    points = np.where(rng.random((n_inst, k)) < 0.2, -rng.integers(1, 6, (n_inst, k)), rng.integers(1, 11, (n_inst, k)))
    items = pd.DataFrame(
        {
            "instance_id": np.repeat(ids, k),
            "rubric_id": np.tile(rubric_ids, n_inst),
            "text": [f"criterion {j} of length {4 + (j * 7) % 30}" for j in range(k)] * n_inst,
            "points": points.ravel().astype(float),
        }
    )
    return rubric, reference, items


def _pointwise(spec: SimulationSpec, q: np.ndarray, rng: np.random.Generator, ids: np.ndarray) -> pd.DataFrame:
    judges, gens = list(spec.judges), list(spec.generators)
    n_j, (n_g, n_i) = len(judges), q.shape
    slope = np.array([spec.slope(j) for j in judges])[:, None, None]
    lenient = np.array([float(spec.leniency.get(j, 0.0)) for j in judges])[:, None, None]
    bias = np.array([[spec.bias(j, g) for g in gens] for j in judges])[:, :, None]
    score = lenient + slope * q[None] + bias + spec.score_noise * rng.standard_normal((n_j, n_g, n_i))
    shape = (n_j, n_g, n_i)
    return pd.DataFrame(
        {
            "instance_id": np.broadcast_to(ids, shape).ravel(),
            "judge": np.broadcast_to(np.array(judges, dtype=object)[:, None, None], shape).ravel(),
            "model": np.broadcast_to(np.array(gens, dtype=object)[None, :, None], shape).ravel(),
            "score": score.ravel(),
            "condition": "default",
            "replicate": 0,
        }
    )


def simulate(spec: SimulationSpec | None = None, *, seed: int = 0, kinds: Collection[str] = ("pairwise", "rubric")) -> Simulation:
    """Draw one study from ``spec``: pairwise (both orders), rubric and/or pointwise judgments with their references."""
    spec = spec or SimulationSpec()
    unknown = set(kinds) - {"pairwise", "rubric", "pointwise"}
    if unknown:
        raise ValueError(f"unknown kinds: {', '.join(sorted(unknown))}")
    rng = np.random.default_rng(seed)
    ability = np.array([spec.ability.get(g, 0.0) for g in spec.generators])
    q = ability[:, None] + spec.quality_sd * rng.standard_normal((len(spec.generators), spec.n_instances))
    ids = np.array([f"x{i:05d}" for i in range(spec.n_instances)], dtype=object)
    empty = pd.DataFrame()
    pairwise = preference_ref = rubric = rubric_ref = items = pointwise = empty
    if "pairwise" in kinds:
        pairwise, preference_ref = _pairwise(spec, q, rng, ids)
        pairwise["condition"], pairwise["replicate"] = "default", 0
    if "rubric" in kinds:
        rubric, rubric_ref, items = _rubric(spec, q, rng, ids)
    if "pointwise" in kinds:
        pointwise = _pointwise(spec, q, rng, ids)
    correctness = pd.DataFrame(
        {
            "instance_id": np.tile(ids, len(spec.generators)),
            "model": np.repeat(np.array(spec.generators), spec.n_instances),
            "correct": (q > 0).ravel(),
            "score": q.ravel(),
        }
    )
    return Simulation(spec, pairwise, preference_ref, correctness, rubric, rubric_ref, items, q, pointwise)


def panel_spec(
    *,
    n_instances: int = 300,
    strong_ability: float = 1.0,
    planted: dict[str, float] | None = None,
    sensitivity: dict[str, float] | None = None,
    tie_rate: float = 0.1,
    position_bias: float = 0.3,
    **overrides: Any,
) -> SimulationSpec:
    """A judge panel for checking relatedness-bias metrics against a known truth.

    Judges: ``judge-a`` — clean, and its answers (and those of its family member ``cousin-a`` and
    its student ``student-a``) are the strongest (ability ``strong_ability``), so it wins its own
    comparisons by wide margins; ``judge-b`` — the judge that carries ``planted`` effects (e.g.
    ``{"self": 0.6, "family": 0.6, "student": 0.6}``; clean when None), with ``cousin-b`` and
    ``student-b``; ``judge-c`` and ``judge-d`` — unrelated reference judges that write no answers;
    ``judge-e`` — a student of ``other-1`` (its ``teacher`` scope). Opponents ``other-1..3`` have
    ability 0. Every judge has sensitivity 1 unless ``sensitivity`` says otherwise.
    """
    strong = {
        "judge-a": strong_ability,
        "cousin-a": strong_ability,
        "student-a": strong_ability,
        "judge-b": 0.3,
        "cousin-b": 0.3,
        "student-b": 0.3,
    }
    families = {
        "judge-a": "fam-a",
        "cousin-a": "fam-a",
        "student-a": "fam-sa",
        "judge-b": "fam-b",
        "cousin-b": "fam-b",
        "student-b": "fam-sb",
        "judge-c": "fam-c",
        "judge-d": "fam-d",
        "judge-e": "fam-e",
        "other-1": "fam-o1",
        "other-2": "fam-o2",
        "other-3": "fam-o3",
    }
    settings: dict[str, Any] = dict(
        judges=("judge-a", "judge-b", "judge-c", "judge-d", "judge-e"),
        generators=("judge-a", "cousin-a", "student-a", "judge-b", "cousin-b", "student-b", "other-1", "other-2", "other-3"),
        families=families,
        students={"student-a": "judge-a", "student-b": "judge-b", "judge-e": "other-1"},
        ability=strong,
        n_instances=n_instances,
        tie_rate=tie_rate,
        position_bias=position_bias,
        judge_bias={"judge-b": dict(planted)} if planted else {},
        sensitivity=dict(sensitivity or {}),
    )
    settings.update(overrides)
    return SimulationSpec(**settings)


def write_tables(simulation: Simulation, directory: str | os.PathLike[str]) -> dict[str, str]:
    """Write every non-empty frame as ``<kind>.csv`` plus ``registry.toml`` into ``directory``.

    Returns {kind: path}. Files are written atomically (`nepotism.tables.write_table`).
    """
    from nepotism._files import atomic_write_bytes
    from nepotism.tables import write_table

    os.makedirs(directory, exist_ok=True)
    frames = {
        "pairwise": simulation.pairwise,
        "pointwise": simulation.pointwise,
        "rubric": simulation.rubric,
        "preference-ref": simulation.preference_ref,
        "correctness-ref": simulation.correctness_ref,
        "rubric-ref": simulation.rubric_ref,
        "rubric-items": simulation.rubric_items,
    }
    written: dict[str, str] = {}
    for kind, frame in frames.items():
        if frame is not None and len(frame):
            path = os.path.join(directory, f"{kind}.csv")
            write_table(frame, path)
            written[kind] = path
    registry = os.path.join(directory, "registry.toml")
    atomic_write_bytes(registry, simulation.spec.registry_toml().encode("utf-8"))
    written["registry"] = registry
    return written
