"""The leakage experiment file: an ordinary experiment file plus a ``[leakage]`` table.

The usual tables (``[experiment]``, ``[models.ID]``, ``[judging]``, ``[output]``) are validated by
`nepotism.experiment.parse_experiment`; ``[dataset]`` is the *evaluation* pool and
``[generation]`` lists the data generators (with ``max_tokens`` and ``temperature`` for their
answers and the students'). The first pairwise protocol's options are the judging options
(judges compare every pair of students of a group in both orders). ``[leakage]`` holds::

    train_pool* = "train.jsonl"      instructions the generators answer (see `pools`)
    train_limit = N
    judge_of = { generator = judge } which judge is related to which generator (default: the
                                     judge the registry calls the generator's SELF, else the
                                     first judge related to it in any way)
    exports = ["trl-messages", ...]  synthetic-data formats to write (`exports.FORMATS`)
    n_resamples = 1000, confidence = 0.95
    [[leakage.students]]  method* = icl | sft | dpo | external, base (a registry id; for icl a
                          configured model), k = 4 (icl), max_demo_chars = 600, prompt_format =
                          "chat" | "completion" (icl: raw few-shot prompt for base models), preset = "tiny" |
                          "full" (sft, dpo), tuning = "lora" | "full" (sft, dpo: a LoRA adapter, the
                          default, or full-parameter fine-tuning for bases that fit), pair_sampler (dpo: a configured model that samples
                          the two answers), generators (default all), mix = [0.1, 0.3, ...],
                          mix_with = "human" | [configured model ids], mix_total = N,
                          models = { generator = configured model id } (external students),
                          inherit = "NAME" (an earlier entry's name: each of its students answers
                          instructions and this entry's students learn from those answers — paper 000
                          §5.2's inheritance), instructions = "same" (the training pool again, the
                          default) | "different" (the inherit_pool's instructions), sft_first = "human"
                          (dpo: SFT on the training pool's human-written answers first, then DPO from
                          that policy — paper 000 §5.3's protocol)
    inherit_pool = "other.jsonl"     instructions for instructions = "different" (disjoint from both pools)
    [leakage.analyses]    recognition = ["pointwise", "pairwise"], classifier = true (TF-IDF + logistic
                          regression) | false | "tfidf-logreg" | "minilm-finetune" (paper 000 App. G's
                          fine-tuning on the closest offline BERT-like encoder) | a list of both,
                          categoriser = model id, question_types = true, dimensions = false,
                          dimension_labels = "main" | "several" (one dimension per rationale, or
                          every one it weighs: a yes/no call per dimension), mitigation = false, ablations = ["style", "format", "wording"] with
                          rewriter = model id (paper 000 §5.7: the rewriter removes one spurious
                          feature from every student answer; judged again as condition no-<feature>)

Everything else is an error naming the key. Not done here: running anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nepotism.errors import InputError
from nepotism.input_limits import read_toml
from nepotism.experiment import Experiment, parse_experiment
from nepotism.leakage.exports import FORMATS
from nepotism.leakage.lineage import METHODS
from nepotism.metrics.bootstrap import Bootstrap

__all__ = ["AnalysesConfig", "LeakageConfig", "StudentConfig", "load_leakage"]

_STUDENT_KEYS = (
    "method",
    "base",
    "k",
    "max_demo_chars",
    "prompt_format",
    "preset",
    "tuning",
    "pair_sampler",
    "generators",
    "mix",
    "mix_with",
    "mix_total",
    "models",
    "name",
    "inherit",
    "instructions",
    "sft_first",
)
_ANALYSES_KEYS = (
    "recognition",
    "classifier",
    "categoriser",
    "question_types",
    "dimensions",
    "dimension_labels",
    "mitigation",
    "ablations",
    "rewriter",
)
_LEAKAGE_KEYS = (
    "train_pool",
    "inherit_pool",
    "train_limit",
    "judge_of",
    "exports",
    "n_resamples",
    "confidence",
    "students",
    "analyses",
)


@dataclass(frozen=True)
class StudentConfig:
    method: str
    base: str | None = None
    k: int = 4
    max_demo_chars: int = 600
    prompt_format: str = "chat"
    preset: str = "tiny"
    tuning: str = "lora"
    pair_sampler: str | None = None
    generators: tuple[str, ...] = ()
    mix: tuple[float, ...] = ()
    mix_with: str | tuple[str, ...] = "human"
    mix_total: int | None = None
    models: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    name: str | None = None
    inherit: str | None = None  # an earlier entry's name: its students generate this entry's data
    instructions: str = "same"  # inheritance: "same" (training pool) | "different" (inherit_pool)
    sft_first: str | None = None  # DPO: "human" = SFT on the pool's human-written answers first (000 §5.3)


@dataclass(frozen=True)
class AnalysesConfig:
    recognition: tuple[str, ...] = ("pointwise", "pairwise")
    classifier: tuple[str, ...] = ("tfidf-logreg",)  # response classifiers (000 §5.5): `recognition.CLASSIFIERS`
    categoriser: str | None = None
    question_types: bool = True
    dimensions: bool = False
    mitigation: bool = False
    ablations: tuple[str, ...] = ()  # spurious features removed from the students' answers (000 §5.7)
    rewriter: str | None = None  # the model that rewrites them
    dimension_labels: str = "main"  # "main" (one per rationale) | "several" (every one it weighs)


@dataclass(frozen=True)
class LeakageConfig:
    experiment: Experiment
    train_pool: str
    train_limit: int | None
    judge_of: Mapping[str, str]
    students: tuple[StudentConfig, ...]
    analyses: AnalysesConfig
    exports: tuple[str, ...]
    judge_options: Mapping[str, Any]
    bootstrap: Bootstrap = Bootstrap()  # [leakage] n_resamples and confidence, seeded by the experiment
    inherit_pool: str | None = None  # instructions of inheriting students with instructions = "different"


def _err(path: str, key: str, message: str) -> InputError:
    return InputError(message, path=path, field=f"leakage.{key}")


def _ids(
    value: Any, registry: Any, configured: Mapping[str, Any], path: str, key: str, *, must_configure: bool = True
) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _err(path, key, "must be a list of model ids")
    out = []
    for name in value:
        if not registry.knows(name):
            raise _err(path, key, f"{name!r} is not in the model registry")
        rid = registry.resolve(name)
        if must_configure and rid not in configured:
            raise _err(path, key, f"{name!r} has no [models] entry")
        out.append(rid)
    return tuple(out)


def _student(i: int, raw: Any, registry: Any, exp: Experiment, path: str) -> StudentConfig:
    key = f"students[{i}]"
    if not isinstance(raw, dict):
        raise _err(path, key, "must be a table")
    unknown = sorted(set(raw) - set(_STUDENT_KEYS))
    if unknown:
        raise _err(path, f"{key}.{unknown[0]}", f"unknown key; expected one of {sorted(_STUDENT_KEYS)}")
    method = raw.get("method")
    if method not in METHODS:
        raise _err(path, f"{key}.method", f"must be one of {METHODS}")
    cfg: dict[str, Any] = {"method": method}
    base = raw.get("base")
    if method != "external" or base is not None:
        if not isinstance(base, str) or not registry.knows(base):
            raise _err(path, f"{key}.base", "must name a registered base model")
        cfg["base"] = registry.resolve(base)
        if method == "icl" and cfg["base"] not in exp.models:
            raise _err(path, f"{key}.base", "an ICL student runs on its base: give the base a [models] entry")
    for name, kind in (("k", int), ("max_demo_chars", int), ("mix_total", int)):
        if name in raw:
            if isinstance(raw[name], bool) or not isinstance(raw[name], kind) or raw[name] < 1:
                raise _err(path, f"{key}.{name}", "must be a positive integer")
            cfg[name] = raw[name]
    if "prompt_format" in raw:
        if raw["prompt_format"] not in ("chat", "completion"):
            raise _err(path, f"{key}.prompt_format", "must be 'chat' or 'completion'")
        cfg["prompt_format"] = raw["prompt_format"]
    if "preset" in raw:
        if raw["preset"] not in ("tiny", "full"):
            raise _err(path, f"{key}.preset", "must be 'tiny' or 'full'")
        cfg["preset"] = raw["preset"]
    if "tuning" in raw:
        if method not in ("sft", "dpo"):
            raise _err(path, f"{key}.tuning", "only trained students (sft, dpo) have a tuning")
        if raw["tuning"] not in ("lora", "full"):
            raise _err(path, f"{key}.tuning", "must be 'lora' or 'full'")
        cfg["tuning"] = raw["tuning"]
    if "sft_first" in raw:
        if method != "dpo":
            raise _err(path, f"{key}.sft_first", "only a DPO student starts from an SFT policy")
        if raw["sft_first"] != "human":
            raise _err(path, f"{key}.sft_first", "must be 'human' (the training pool's human-written answers)")
        cfg["sft_first"] = "human"
    if method == "dpo":
        sampler = raw.get("pair_sampler")
        if not isinstance(sampler, str):
            raise _err(path, f"{key}.pair_sampler", "a DPO student needs a pair_sampler model")
        cfg["pair_sampler"] = _ids([sampler], registry, exp.models, path, f"{key}.pair_sampler")[0]
    if "generators" in raw:
        cfg["generators"] = _ids(raw["generators"], registry, exp.models, path, f"{key}.generators")
        stray = set(cfg["generators"]) - set(exp.generation.generators)
        if stray:
            raise _err(path, f"{key}.generators", f"{sorted(stray)[0]!r} is not a data generator")
    if "mix" in raw:
        mix = raw["mix"]
        if (
            not isinstance(mix, list)
            or not mix
            or not all(isinstance(r, (int, float)) and not isinstance(r, bool) and 0 < r <= 1 for r in mix)
        ):
            raise _err(path, f"{key}.mix", "must be a list of shares in (0, 1]")
        cfg["mix"] = tuple(float(r) for r in mix)
    if "mix_with" in raw:
        value = raw["mix_with"]
        cfg["mix_with"] = (
            "human"
            if value == "human"
            else _ids(value if isinstance(value, list) else [value], registry, exp.models, path, f"{key}.mix_with")
        )
    if method == "external":
        models = raw.get("models")
        if not isinstance(models, dict) or not models:
            raise _err(path, f"{key}.models", "an external student maps each generator to a configured model")
        gens = _ids(list(models), registry, exp.models, path, f"{key}.models")
        targets = _ids(list(models.values()), registry, exp.models, path, f"{key}.models")
        cfg["models"] = MappingProxyType(dict(zip(gens, targets)))
    if "name" in raw:
        if not isinstance(raw["name"], str) or not raw["name"].strip():
            raise _err(path, f"{key}.name", "must be a non-empty string")
        cfg["name"] = raw["name"]
    if "instructions" in raw and "inherit" not in raw:
        raise _err(path, f"{key}.instructions", "only an inheriting student (inherit = ...) has instructions")
    if "inherit" in raw:
        if method not in ("sft", "icl"):
            raise _err(path, f"{key}.inherit", "an inheriting student learns from answers: method sft or icl")
        if not isinstance(raw["inherit"], str) or not raw["inherit"].strip():
            raise _err(path, f"{key}.inherit", "must name an earlier [[leakage.students]] entry (its name)")
        if "mix" in raw or "generators" in raw:
            raise _err(path, f"{key}.inherit", "an inheriting student takes its generators from the entry it inherits")
        cfg["inherit"] = raw["inherit"]
        instructions = raw.get("instructions", "same")
        if instructions not in ("same", "different"):
            raise _err(path, f"{key}.instructions", "must be 'same' or 'different'")
        cfg["instructions"] = instructions
    return StudentConfig(**cfg)


def _check_inheritance(students: tuple[StudentConfig, ...], inherit_pool: str | None, path: str) -> None:
    """Each ``inherit`` names an earlier entry (by name) that is not external; "different"
    instructions need the inherit_pool."""
    earlier: dict[str, StudentConfig] = {}
    for i, sc in enumerate(students):
        if sc.inherit is not None:
            parent = earlier.get(sc.inherit)
            if parent is None:
                raise _err(
                    path, f"students[{i}].inherit", f"{sc.inherit!r} is not the name of an earlier [[leakage.students]] entry"
                )
            if parent.method == "external":
                raise _err(path, f"students[{i}].inherit", "an external student cannot be inherited from here")
            if sc.instructions == "different" and inherit_pool is None:
                raise _err(
                    path,
                    f"students[{i}].instructions",
                    "instructions = 'different' needs [leakage] inherit_pool (other instructions)",
                )
        if sc.name:
            if sc.name in earlier:
                raise _err(path, f"students[{i}].name", f"{sc.name!r} names two entries")
            earlier[sc.name] = sc


def _check_distinct(students: tuple[StudentConfig, ...], generators: tuple[str, ...], path: str) -> None:
    """Two entries whose students would get the same registry ids (same method and base, neither
    named apart, a generator and a mix share in common) are refused: give one a ``name``."""
    seen: list[tuple[int, tuple[str, str | None, str], set[str], set[float | None]]] = []
    for i, sc in enumerate(students):
        if sc.method == "external":
            continue
        tag = sc.name or (f"inherits-{sc.inherit}-{sc.instructions}" if sc.inherit else "")
        key = (sc.method, sc.base, tag)
        gens = set(sc.generators or generators)
        shares: set[float | None] = set(sc.mix) if sc.mix else {None}
        for j, other_key, other_gens, other_shares in seen:
            if key == other_key and gens & other_gens and shares & other_shares:
                raise _err(
                    path,
                    f"students[{i}]",
                    f"its students would have the same ids as those of students[{j}] "
                    "(same method and base): give one of the entries a name",
                )
        seen.append((i, key, gens, shares))


def _judge_of(raw: Any, registry: Any, exp: Experiment, path: str) -> dict[str, str]:
    if raw is not None:
        if not isinstance(raw, dict):
            raise _err(path, "judge_of", "must be a table {generator = judge}")
        gens = _ids(list(raw), registry, exp.models, path, "judge_of")
        judges = _ids(list(raw.values()), registry, exp.models, path, "judge_of")
        out = dict(zip(gens, judges))
        for g, j in out.items():
            if g not in exp.generation.generators or j not in exp.judges:
                raise _err(path, "judge_of", f"{g!r} must be a generator and {j!r} a judge")
        return out
    out = {}
    for g in exp.generation.generators:
        chosen = [j for j in exp.judges if j == g] or [
            j for j in exp.judges if registry.relation(j, g).name not in ("UNRELATED", "UNKNOWN")
        ]
        if chosen:
            out[g] = chosen[0]
    return out


def load_leakage(path: str | Path, *, registry: Any = None) -> LeakageConfig:
    """Read and validate a leakage experiment file."""
    path = Path(path)
    where = str(path)
    data = read_toml(path, what="experiment file")
    raw = data.pop("leakage", None)
    if not isinstance(raw, dict):
        raise InputError("a leakage experiment needs a [leakage] table", path=where, field="leakage")
    exp = parse_experiment(data, path, registry=registry)
    if registry is None:
        from nepotism.models import load_registry

        registry = load_registry(exp.registry_files)
    unknown = sorted(set(raw) - set(_LEAKAGE_KEYS))
    if unknown:
        raise _err(where, unknown[0], f"unknown key; expected one of {sorted(_LEAKAGE_KEYS)}")
    if len(exp.generation.generators) < 2:
        raise InputError("list at least two data generators", path=where, field="generation.generators")
    pool = raw.get("train_pool")
    if not isinstance(pool, str):
        raise _err(where, "train_pool", "is required (a JSON Lines file of training instructions)")
    pool_path = str(pool if Path(pool).is_absolute() else path.parent / pool)
    limit = raw.get("train_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise _err(where, "train_limit", "must be a positive integer")
    judge_of = _judge_of(raw.get("judge_of"), registry, exp, where)
    if len(set(judge_of.values())) < 2:
        raise _err(where, "judge_of", "at least two generators need two different related judges for a PLS")
    students_raw = raw.get("students")
    if not isinstance(students_raw, list) or not students_raw:
        raise _err(where, "students", "list at least one [[leakage.students]] table")
    students = tuple(_student(i, s, registry, exp, where) for i, s in enumerate(students_raw))
    inherit_pool = raw.get("inherit_pool")
    if inherit_pool is not None:
        if not isinstance(inherit_pool, str):
            raise _err(where, "inherit_pool", "must be the path of a JSON Lines file of instructions")
        inherit_pool = str(inherit_pool if Path(inherit_pool).is_absolute() else path.parent / inherit_pool)
    _check_inheritance(students, inherit_pool, where)
    _check_distinct(students, exp.generation.generators, where)
    a = raw.get("analyses", {})
    if not isinstance(a, dict) or set(a) - set(_ANALYSES_KEYS):
        raise _err(where, "analyses", f"must be a table with keys among {sorted(_ANALYSES_KEYS)}")
    rec = a.get("recognition", ["pointwise", "pairwise"])
    if rec is False:
        rec = []
    if not isinstance(rec, list) or set(rec) - {"pointwise", "pairwise"}:
        raise _err(where, "analyses.recognition", "must be a list of 'pointwise', 'pairwise' (or false)")
    categoriser = a.get("categoriser")
    if categoriser is not None:
        categoriser = _ids([categoriser], registry, exp.models, where, "analyses.categoriser")[0]
    classifier = a.get("classifier", True)
    from nepotism.leakage.recognition import CLASSIFIERS

    if isinstance(classifier, bool):
        classifiers = ("tfidf-logreg",) if classifier else ()
    elif isinstance(classifier, str):
        classifiers = (classifier,)
    elif isinstance(classifier, list) and all(isinstance(c, str) for c in classifier):
        classifiers = tuple(dict.fromkeys(classifier))
    else:
        classifiers = ("?",)
    if set(classifiers) - set(CLASSIFIERS):
        raise _err(where, "analyses.classifier", f"must be true, false or one or a list of {', '.join(CLASSIFIERS)}")
    flags = {}
    for name, default in (("question_types", True), ("dimensions", False), ("mitigation", False)):
        value = a.get(name, default)
        if not isinstance(value, bool):
            raise _err(where, f"analyses.{name}", "must be true or false")
        flags[name] = value
    if (flags["question_types"] or flags["dimensions"]) and categoriser is None and "categoriser" in a:
        raise _err(where, "analyses.categoriser", "name a configured model")
    dimension_labels = a.get("dimension_labels", "main")
    if dimension_labels not in ("main", "several"):
        raise _err(where, "analyses.dimension_labels", "must be 'main' or 'several'")
    from nepotism.mitigations.rewrite import ABLATIONS

    ablations = a.get("ablations", [])
    if not isinstance(ablations, list) or set(ablations) - set(ABLATIONS) or len(set(ablations)) != len(ablations):
        raise _err(where, "analyses.ablations", f"must be a list of distinct features among {sorted(ABLATIONS)}")
    rewriter = a.get("rewriter")
    if ablations and rewriter is None:
        raise _err(where, "analyses.rewriter", "ablations need a rewriter: a configured model that rewrites the answers")
    if rewriter is not None:
        rewriter = _ids([rewriter], registry, exp.models, where, "analyses.rewriter")[0]
    exports = raw.get("exports", ["trl-messages", "llamafactory-alpaca"])
    if not isinstance(exports, list) or set(exports) - set(FORMATS):
        raise _err(where, "exports", f"must be a list among {FORMATS}")
    pairwise = [p for p in exp.protocols if p.protocol == "pairwise"]
    if not pairwise:
        raise InputError("list a pairwise protocol (its options are the judging options)", path=where, field="judging.protocols")
    n_resamples = raw.get("n_resamples", 1000)
    confidence = raw.get("confidence", 0.95)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise _err(where, "n_resamples", "must be an integer >= 100")
    if not isinstance(confidence, float) or not 0.5 < confidence < 1:
        raise _err(where, "confidence", "must be a number in (0.5, 1)")
    return LeakageConfig(
        experiment=exp,
        train_pool=pool_path,
        train_limit=limit,
        judge_of=MappingProxyType(judge_of),
        students=students,
        analyses=AnalysesConfig(
            tuple(rec),
            classifiers,
            categoriser,
            flags["question_types"],
            flags["dimensions"],
            flags["mitigation"],
            tuple(ablations),
            rewriter,
            dimension_labels,
        ),
        exports=tuple(exports),
        judge_options=MappingProxyType(dict(pairwise[0].options)),
        bootstrap=Bootstrap(n_resamples=n_resamples, confidence_level=confidence, seed=exp.seed),
        inherit_pool=inherit_pool,
    )
