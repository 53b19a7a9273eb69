"""The ``[mitigate]`` table of an experiment file: which mitigations to run as conditions.

``nepotism mitigate`` reads an ordinary experiment file (see `nepotism.experiment`) plus::

    [mitigate]
    rewriter = "model-id"      # third-party model for model-based rewrites (one of [models])
    heldout_fraction = 0.5     # calibration / weighted-jury split, by a seeded hash of instance ids
    n_resamples = 1000         # paired bootstrap resamples (0 = no intervals)
    confidence = 0.95
    control = true             # judge every perturbed pair by third-party judges as well
    rule = "consistent"        # how the two presentation orders combine: "consistent" (004 Eq. 1) or
                               # "strict" (003: both orders must agree, else ambiguous and left out)
    human_study = ["labels.csv"]  # annotation exports (preference-ref rows): M vs M@<condition name>,
                               # a binomial test per perturbation (nepotism.mitigations.human_study)
    target = "self"            # whose answers the judge may favour: "self" (its own), or a relative the
                               # registry names: "student" (paper 000 §5.8: a student of the judge),
                               # "family"; the third-party control is for "self" only
    preference_ref = ["humans.csv"]  # human labels (preference-ref rows) as the truth of each pair, where
                               # given (else the correctness grades): Error Bias against humans (000 §5.8)

    [[mitigate.conditions]]
    name = "synonyms"          # the condition name the judgments are stored under
    kind = "synonym"           # see KINDS
    ...                        # the kind's parameters (PARAMS)

Kinds and parameters (defaults in `PARAMS`): ``synonym`` (``k``, ``chooser`` = ``"wordnet"``
offline or ``"model"`` = the rewriter, ``fallback`` = use WordNet when the model's choice breaks
the contract), ``paraphrase`` (``target`` = ``"own"`` or ``"both"``), ``judge-paraphrase``,
``cross-reason`` (``cross_reason`` = ``"model"``: each option gets a reason written for it by the
other side's model, ``writer = "competitor"`` as in paper 003, or by the rewriter, ``writer =
"rewriter"``; ``"splice"``: the other answer's reasoning as written), ``code-restyle`` (``restyle`` =
``"model"``: the rewriter restyles idiomatically keeping comments; ``"ast"``: mechanical renaming;
both verified by the task's tests in the sandbox), ``ablate`` (``feature`` = style / format / wording), ``spelling``
(``rate``: the share of the judge's eligible words given a typo, offline and seeded, 003 Fig. 15),
``judge-option`` (``options``: judging options such as ``impartial``, ``reasoning``), ``exclude-relatives``,
``jury`` (``vote`` = majority / weighted / perplexity — each vote weighted down by the judge's
familiarity with the answers, scored by the run's perplexity step; the summary's
``familiarity_scores`` counts them, failures with reasons —, ``exclude_related``), ``calibration``
(``method`` = auto / contextual), ``rubric-agreement`` (``threshold``: drop rubric items whose
inter-judge agreement is lower; needs a ``rubric`` protocol). Every problem raises `InputError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nepotism.errors import InputError
from nepotism.metrics.bootstrap import Bootstrap

if TYPE_CHECKING:
    from nepotism.experiment import Experiment

__all__ = ["KINDS", "PARAMS", "PERTURBATIONS", "TARGETS", "MitigationConfig", "MitigationPlan", "load_plan", "parse_plan"]

#: Mitigations that change the candidates' texts (judged again, with a third-party control).
PERTURBATIONS = ("synonym", "paraphrase", "judge-paraphrase", "cross-reason", "code-restyle", "ablate", "spelling")
#: Whose answers a mitigation protects the comparison from: the judge's own, or a relative's.
TARGETS = ("self", "student", "family")
KINDS = PERTURBATIONS + ("judge-option", "exclude-relatives", "jury", "calibration", "rubric-agreement")
PARAMS: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "synonym": {"k": 2, "chooser": "wordnet", "fallback": False},
        "paraphrase": {"target": "own"},
        "judge-paraphrase": {},
        "cross-reason": {"cross_reason": "model", "writer": "competitor"},
        "code-restyle": {"restyle": "model"},
        "ablate": {"feature": "style"},
        "spelling": {"rate": 0.1},
        "judge-option": {"options": {}},
        "exclude-relatives": {},
        "jury": {"vote": "majority", "exclude_related": False},
        "calibration": {"method": "auto"},
        "rubric-agreement": {"threshold": 0.75},
    }
)
_CHOICES = {
    "chooser": ("wordnet", "model"),
    "target": ("own", "both"),
    "feature": ("style", "format", "wording"),
    "vote": ("majority", "weighted", "perplexity"),
    "method": ("auto", "contextual"),
    "cross_reason": ("model", "splice"),
    "writer": ("competitor", "rewriter"),
    "restyle": ("model", "ast"),
}
_NEEDS_REWRITER = {"paraphrase", "ablate"}


@dataclass(frozen=True)
class MitigationConfig:
    name: str
    kind: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class MitigationPlan:
    experiment: Experiment
    conditions: tuple[MitigationConfig, ...]
    rewriter: str | None = None
    heldout_fraction: float = 0.5
    bootstrap: Bootstrap = Bootstrap()  # n_resamples and confidence from [mitigate], the experiment's seed
    control: bool = True
    rule: str = "consistent"  # "consistent" (paper 004 Eq. 1) | "strict" (paper 003's agreement rule)
    human_study: tuple[Path, ...] = ()  # annotation label files for the perturbations' quality test
    target: str = "self"  # the judge's favoured side: its own answers, or a relative's (Registry.scope)
    preference_ref: tuple[Path, ...] = ()  # human preference labels used as the truth of a pair


def _condition(i: int, table: Any, path: str, rewriter: str | None) -> MitigationConfig:
    where = f"mitigate.conditions[{i}]"
    if not isinstance(table, dict):
        raise InputError("each condition is a table {name, kind, ...}", path=path, field=where)
    name, kind = table.get("name"), table.get("kind")
    if not isinstance(name, str) or not name.strip() or ":" in name or "|" in name:
        raise InputError("needs a name (a string without ':' or '|')", path=path, field=f"{where}.name")
    if kind not in KINDS:
        raise InputError(f"kind must be one of {list(KINDS)}", path=path, field=f"{where}.kind")
    defaults = PARAMS[kind]
    params = dict(defaults)
    for key, value in table.items():
        if key in ("name", "kind"):
            continue
        if key not in defaults:
            raise InputError(
                f"unknown key for kind {kind!r}; expected one of {sorted(defaults)}", path=path, field=f"{where}.{key}"
            )
        if key in _CHOICES and value not in _CHOICES[key]:
            raise InputError(f"must be one of {list(_CHOICES[key])}", path=path, field=f"{where}.{key}")
        if key == "threshold" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1):
            raise InputError("must be a number in [0, 1]", path=path, field=f"{where}.threshold")
        if key == "rate" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1):
            raise InputError("must be a number in (0, 1]", path=path, field=f"{where}.rate")
        if key == "k" and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise InputError("must be a positive integer", path=path, field=f"{where}.k")
        if key in ("fallback", "exclude_related") and not isinstance(value, bool):
            raise InputError("must be true or false", path=path, field=f"{where}.{key}")
        if key == "options" and not isinstance(value, dict):
            raise InputError("must be a table of judging options", path=path, field=f"{where}.options")
        params[key] = value
    if rewriter is None and (
        kind in _NEEDS_REWRITER
        or (kind == "synonym" and params["chooser"] == "model")
        or (kind == "code-restyle" and params["restyle"] == "model")
        or (kind == "cross-reason" and params["cross_reason"] == "model" and params["writer"] == "rewriter")
    ):
        raise InputError(f"kind {kind!r} needs mitigate.rewriter", path=path, field=f"{where}.kind")
    if kind == "judge-option":
        from nepotism.judging import normalise_options

        try:
            normalise_options("pairwise", params["options"])
        except ValueError as err:
            raise InputError(str(err), path=path, field=f"{where}.options") from None
    return MitigationConfig(name.strip(), kind, MappingProxyType(params))


def parse_plan(data: Mapping[str, Any], path: str | Path, *, registry: Any = None) -> MitigationPlan:
    """Split off ``[mitigate]``, parse the rest as an experiment, and check both together."""
    from nepotism.experiment import parse_experiment

    where = str(path)
    data = dict(data)
    table = data.pop("mitigate", None)
    if not isinstance(table, dict):
        raise InputError(
            "the file needs a [mitigate] table with at least one [[mitigate.conditions]]", path=where, field="mitigate"
        )
    experiment = parse_experiment(data, path, registry=registry)
    known = {
        "rewriter",
        "heldout_fraction",
        "n_resamples",
        "confidence",
        "control",
        "conditions",
        "rule",
        "human_study",
        "target",
        "preference_ref",
    }
    for key in table:
        if key not in known:
            raise InputError(f"unknown key; expected one of {sorted(known)}", path=where, field=f"mitigate.{key}")
    rewriter = table.get("rewriter")
    if rewriter is not None:
        if not isinstance(rewriter, str):
            raise InputError("must be a model id", path=where, field="mitigate.rewriter")
        matches = [m for m in experiment.models if m == rewriter]
        if not matches:
            raise InputError(f"{rewriter!r} is not one of the experiment's [models.*]", path=where, field="mitigate.rewriter")
    conditions = table.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        raise InputError("list at least one [[mitigate.conditions]]", path=where, field="mitigate.conditions")
    parsed = tuple(_condition(i, c, where, rewriter) for i, c in enumerate(conditions))
    names = [c.name for c in parsed]
    reserved = {c.name for c in experiment.conditions} | {"third-party"}
    if len(set(names)) != len(names) or set(names) & reserved:
        raise InputError(
            "condition names must be distinct from each other, from [judging] conditions and from 'third-party'",
            path=where,
            field="mitigate.conditions",
        )
    fraction = table.get("heldout_fraction", 0.5)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise InputError("must be a number strictly between 0 and 1", path=where, field="mitigate.heldout_fraction")
    resamples = table.get("n_resamples", 1000)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise InputError("must be an integer >= 0", path=where, field="mitigate.n_resamples")
    confidence = table.get("confidence", 0.95)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence < 1:
        raise InputError("must be in [0.5, 1)", path=where, field="mitigate.confidence")
    target = table.get("target", "self")
    if target not in TARGETS:
        raise InputError(f"must be one of {list(TARGETS)}", path=where, field="mitigate.target")
    control = table.get("control", target == "self")
    if not isinstance(control, bool):
        raise InputError("must be true or false", path=where, field="mitigate.control")
    if control and target != "self":
        raise InputError(
            'the third-party control compares a judge\'s own answers with how others judge them: it needs target = "self"',
            path=where,
            field="mitigate.control",
        )
    if any(c.kind == "rubric-agreement" for c in parsed) and not any(p.protocol == "rubric" for p in experiment.protocols):
        raise InputError(
            'rubric-agreement needs a [[judging.protocols]] with protocol = "rubric"', path=where, field="judging.protocols"
        )
    pairwise = [p for p in experiment.protocols if p.protocol == "pairwise"]
    if not pairwise:
        raise InputError(
            'mitigations are measured on a [[judging.protocols]] with protocol = "pairwise"',
            path=where,
            field="judging.protocols",
        )
    if target != "self" and all(p.args.get("pairs") == "judge-vs-others" for p in pairwise):
        index = experiment.protocols.index(pairwise[0])
        raise InputError(
            f"target = {target!r} measures pairs holding the judge's {target}, and pairs = "
            '"judge-vs-others" only pairs the judge\'s own answers: use pairs = "all" (or list them)',
            path=where,
            field=f"judging.protocols[{index}].pairs",
        )
    rule = table.get("rule", "consistent")
    if rule not in ("consistent", "strict"):
        raise InputError('must be "consistent" or "strict"', path=where, field="mitigate.rule")
    human_study = _files(table, "human_study", where)
    preference_ref = _files(table, "preference_ref", where)
    bootstrap = Bootstrap(n_resamples=resamples, confidence_level=float(confidence), seed=experiment.seed)
    return MitigationPlan(
        experiment, parsed, rewriter, float(fraction), bootstrap, control, rule, human_study, target, preference_ref
    )


def _files(table: Mapping[str, Any], key: str, where: str) -> tuple[Path, ...]:
    """``[mitigate] key``: one file or a list of files, relative to the experiment file, each present."""
    given = table.get(key, [])
    if isinstance(given, str):
        given = [given]
    if not isinstance(given, list) or not all(isinstance(f, str) for f in given):
        raise InputError("must be a file or a list of files", path=where, field=f"mitigate.{key}")
    files = tuple(Path(where).parent / f for f in given)
    for i, f in enumerate(files):
        if not f.is_file():
            raise InputError(f"file not found: {f}", path=where, field=f"mitigate.{key}[{i}]")
    return files


def load_plan(path: str | Path, *, registry: Any = None) -> MitigationPlan:
    """Read an experiment file with a ``[mitigate]`` table."""
    from nepotism.experiment import read_toml

    return parse_plan(read_toml(path), Path(path), registry=registry)
