"""The experiment file: one TOML file parsed once into frozen dataclasses.

Tables and keys (paths are relative to the experiment file; ``*`` = required)::

    [experiment]   name*, seed = 0, replicates = 1, registry = [extra registry TOML files],
                   store = "path.db" (the CLI's --store wins)
    [dataset]      exactly one of path = "items.jsonl" | bundled = "name" | from_store = true (the
                   store's instances, each as the latest run read it); limit = N (first N instances)
    [models.ID]    one per model used; ID is a registry id or alias. backend* = a backend's name
                   (`nepotism.backends.registry`: each backend module declares its name and options);
                   openai: base_url* (or base_urls = [replicas]), model (server-side name), api_key_env (the NAME of the
                   environment variable holding the key), timeout = 60 (seconds a call may take
                   in all, to the answer's last byte), max_response_mb = 16 (the longest answer
                   body kept, after decompression; a longer one is a failed call); litellm (the
                   ``litellm`` extra): model* (LiteLLM's name, e.g. "anthropic/<name>"), base_url
                   (the provider's URL), api_key_env, timeout = 60; gguf (the ``local`` extra): model (a
                   packaged model id) or path (a .gguf file), sha256, n_ctx = 4096, n_threads
                   (default $NEPOTISM_MODEL_THREADS, else 2), n_batch = 512 (prompt tokens per decode),
                   flash_attn = false (llama.cpp's fused attention: other rounding); transformers (the
                   ``train`` extra): model (a packaged model id) or path (a model folder or .gguf file),
                   n_threads; every backend: concurrency = 4, rpm, tpm, max_attempts = 4, retry_base_delay_s = 0.5,
                   retry_max_delay_s = 30, params = {extra request parameters}
    [generation]   generators = [model ids], max_tokens = 512, temperature = 0.0
    [judging]      judges* = [model ids], conditions = ["default"] or [{name, options}]
    [[judging.protocols]]  protocol* = pairwise | pointwise | rubric | recognition | categorise,
                   the planner's arguments (pairs, both_orders, generators, all_rubrics,
                   pairwise, target), replicates, options = {judging options; template =
                   "file.toml" names a user judge template, checked when the file is read:
                   docs/judge-templates.md} (conditions' options may name one too). Two entries
                   of one protocol that differ only in options a judgment's id does not name
                   (temperature, max_tokens) are refused: make such variants conditions
    [grading]      task = "math" | "mc" | "code" | "ifeval" (every instance), or tasks = {category =
                   task} (instances of other categories are not graded); timeout = 10 (code, seconds
                   per program). Truth comes from each instance: math/mc ``reference_answer``;
                   code ``metadata.tests`` (+ optional ``metadata.entry_point``,
                   ``metadata.code_prompt``); ifeval ``metadata.instruction_id_list`` and
                   ``metadata.kwargs``. The run grades every response after judging.
    [perplexity]   scorers = [model ids] (default: the judges), responses = "judged" (default:
                   each scorer scores the candidate responses of the tasks it judges; a scorer
                   that judges nothing scores those of every task) | "all" (every candidate
                   response of the run), generators = [names] (only their responses), prompt =
                   "auto" (default: raw text for an OpenAI-compatible server, chat messages otherwise) |
                   "chat" | "raw". Each scorer's perplexity of each response given its prompt
                   (paper 001 §5; `nepotism.runner.perplexity`) is one cached continuation call.
    [reference]    jury = [judge ids] (at least two of judging.judges; needs a rubric protocol): the
                   rubric reference is the plain majority of these judges' verdicts, every juror
                   voting on every answer (paper 002 §2.4); exclude_related = true (a variant)
                   keeps a juror from voting on answers of models related to it;
                   the run writes it as ``rubric-reference.<fmt>`` (not with ``[grading]`` ifeval,
                   which writes that reference from the instructions)
    [output]       dir = "results", format = "csv" | "jsonl" | "parquet"

The dataset file is JSON Lines: each row an instance (``id`` or ``instance_id``, ``prompt`` as a
string or a list of ``{role, content}``, optional ``reference_answer``, ``category``, ``rubric``
as a list of ``{id, text, points}``, ``metadata``), optionally with a recorded response
(``model`` or ``generator`` plus ``text``) — so the texts file written by ``nepotism import
--texts-out`` can be used as is. Every problem raises `InputError` naming the file and the key;
every number must be finite and in its range (timeouts and delays at most a day, temperature in
[0, 10], ...; the error states the range), and free-form ``params`` and judging ``options`` may
not hold ``nan`` or infinities.
API keys are never read here: only the variable's name is kept. This module starts nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, overload

from nepotism import input_limits
from nepotism.credentials import is_secret_name
from nepotism.errors import InputError

__all__ = [
    "PLANNER_ARGS",
    "ConditionConfig",
    "DatasetConfig",
    "Experiment",
    "GenerationConfig",
    "GRADING_TASKS",
    "GradingConfig",
    "ModelConfig",
    "PERPLEXITY_PROMPTS",
    "PerplexityConfig",
    "ProtocolConfig",
    "ReferenceConfig",
    "dumps_config",
    "load_experiment",
    "read_toml",
    "parse_experiment",
    "task_protocol",
]

#: Planner arguments each protocol accepts in ``[[judging.protocols]]``.
PLANNER_ARGS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "pairwise": ("pairs", "both_orders"),
        "pointwise": ("generators",),
        "rubric": ("all_rubrics", "generators"),
        "recognition": ("pairwise", "pairs", "both_orders", "generators"),
        "categorise": ("target",),
    }
)
#: ``card`` holds judge-card thresholds (`nepotism card --thresholds EXPERIMENT.toml`); the run ignores it
#: and `report.card.load_thresholds` validates it.
_TOP = ("experiment", "dataset", "models", "generation", "judging", "grading", "perplexity", "reference", "output", "card")
#: Tasks a ``[grading]`` table may name (the graders of `nepotism.grading`).
GRADING_TASKS = ("math", "mc", "code", "ifeval")
_OUTPUT_FORMATS = ("csv", "jsonl", "parquet")
#: How a ``[perplexity]`` scorer is shown the prompt: ``chat`` (the instance's messages through the
#: model's chat template; in-process models only), ``raw`` (the prompt text, for HTTP servers),
#: ``auto`` (raw text for an OpenAI-compatible server, chat messages for every other backend).
PERPLEXITY_PROMPTS = ("auto", "chat", "raw")
_PERPLEXITY_RESPONSES = ("judged", "all")
# upper bounds of numeric options (a day of waiting; values past these are typos)
_MAX_TIMEOUT_S = 86_400.0
_MAX_REPLICATES = 10_000
_MAX_TEMPERATURE = 10.0


@dataclass(frozen=True)
class ModelConfig:
    """How to reach one model; ``id`` is its registry id (aliases resolved)."""

    id: str
    backend: str
    base_url: str | None = None
    #: every endpoint of the model (replicas), ``base_url`` first; ``(base_url,)`` for one
    base_urls: tuple[str, ...] = ()
    model: str | None = None
    api_key_env: str | None = None
    path: str | None = None
    sha256: str | None = None
    n_ctx: int = 4096
    #: CPU threads of an in-process model; None: the machine's setting (`nepotism.backends.model_threads`)
    n_threads: int | None = None
    n_batch: int = 512
    flash_attn: bool = False
    timeout: float = 60.0
    max_response_mb: float = 16.0
    concurrency: int = 4
    rpm: float | None = None
    tpm: float | None = None
    max_attempts: int = 4
    retry_base_delay_s: float = 0.5
    retry_max_delay_s: float = 30.0
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class DatasetConfig:
    """Where the instances (and any recorded responses) come from."""

    path: str | None = None
    bundled: str | None = None
    from_store: bool = False
    limit: int | None = None


@dataclass(frozen=True)
class GenerationConfig:
    generators: tuple[str, ...] = ()
    max_tokens: int = 512
    temperature: float = 0.0


@dataclass(frozen=True)
class GradingConfig:
    """How responses are graded: one ``task`` for all instances, or ``tasks`` by category."""

    task: str | None = None
    tasks: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    timeout: float = 10.0

    def task_for(self, category: str | None) -> str | None:
        """The grading task of an instance of ``category`` (None: not graded)."""
        if self.task is not None:
            return self.task
        return self.tasks.get(category) if category is not None else None


@dataclass(frozen=True)
class PerplexityConfig:
    """Which models score which responses' perplexity (``[perplexity]``; module docstring).

    ``scorers`` empty = the judges; ``generators`` empty = every generator's responses.
    """

    scorers: tuple[str, ...] = ()
    responses: str = "judged"
    generators: tuple[str, ...] = ()
    prompt: str = "auto"


@dataclass(frozen=True)
class ReferenceConfig:
    """A rubric reference made by a jury of the experiment's judges (``[reference]``)."""

    jury: tuple[str, ...]
    exclude_related: bool = False  # paper 002 §2.4 keeps relatives in; True: the variant without them


@dataclass(frozen=True)
class ConditionConfig:
    """A named prompt condition: judging options layered over each protocol's own."""

    name: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ProtocolConfig:
    protocol: str
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    replicates: int = 1


@dataclass(frozen=True)
class Experiment:
    """A whole experiment file, validated; `as_config` is what a run records."""

    path: str
    name: str
    seed: int
    registry_files: tuple[str, ...]
    store: str | None
    dataset: DatasetConfig
    models: Mapping[str, ModelConfig]
    generation: GenerationConfig
    judges: tuple[str, ...]
    conditions: tuple[ConditionConfig, ...]
    protocols: tuple[ProtocolConfig, ...]
    output_dir: str | None
    output_format: str
    grading: GradingConfig | None = None
    perplexity: PerplexityConfig | None = None
    reference: ReferenceConfig | None = None

    def dataset_file(self) -> Path | None:
        """The JSON Lines file of the instances (``path`` or a bundled one); None for a store dataset."""
        ds = self.dataset
        if ds.path is not None:
            return Path(ds.path)
        if ds.bundled is None:
            return None
        from importlib import resources

        for suffix in (".jsonl", ".jsonl.gz"):
            candidate = resources.files("nepotism.data") / f"{ds.bundled}{suffix}"
            if candidate.is_file():
                return Path(str(candidate))
        raise InputError(f"no bundled dataset named {ds.bundled!r}", path=self.path, field="dataset.bundled")

    def as_config(self) -> dict[str, Any]:
        """Plain JSON-able data (no secrets: only environment variable names)."""

        def plain(value: Any) -> Any:
            if isinstance(value, Mapping):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [plain(v) for v in value]
            if hasattr(value, "__dataclass_fields__"):
                return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__}
            return value

        out: dict[str, Any] = plain(self)
        return out


class _Reader:
    """Typed access to one TOML table, with errors naming the file and the dotted key."""

    def __init__(self, table: Any, where: str, path: str) -> None:
        if not isinstance(table, dict):
            raise InputError("must be a table", path=path, field=where or None)
        self.table, self.where, self.path = table, where, path
        self.used: set[str] = set()

    def _field(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> InputError:
        return InputError(message, path=self.path, field=self._field(key))

    def get(self, key: str, kinds: type | tuple[type, ...], default: Any = None, *, required: bool = False) -> Any:
        self.used.add(key)
        if key not in self.table:
            if required:
                raise self.error(key, "is required")
            return default
        value = self.table[key]
        if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
            raise self.error(key, f"must be {_names(kinds)}, not a boolean")
        if not isinstance(value, kinds):
            raise self.error(key, f"must be {_names(kinds)}, not {type(value).__name__}")
        return value

    def number(
        self,
        key: str,
        default: Any,
        *,
        low: float,
        high: float,
        integer: bool = False,
        low_open: bool = False,
        allow_none: bool = False,
        unit: str = "",
    ) -> Any:
        """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``); an integer when
        ``integer``. Errors name the allowed range, so ``nan``, ``inf`` and out-of-range values
        are refused before anything starts."""
        value = self.get(key, int if integer else (int, float), default)
        if value is None:
            if allow_none:
                return None
            raise self.error(key, "is required")
        span = f"{'(' if low_open else '['}{_fmt(low)}, {_fmt(high)}]{' ' + unit if unit else ''}"
        kind = "an integer" if integer else "a finite number"
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            raise self.error(key, f"must be {kind} in {span}, not {value!r}")
        return int(value) if integer else float(value)

    def positive(
        self, key: str, default: Any, *, integer: bool = False, allow_none: bool = False, high: float = 1e9, unit: str = ""
    ) -> Any:
        """A finite number above 0 (an integer from 1 when ``integer``) and at most ``high``."""
        if integer:
            return self.number(key, default, low=1, high=high, integer=True, allow_none=allow_none, unit=unit)
        return self.number(key, default, low=0, high=high, low_open=True, allow_none=allow_none, unit=unit)

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.get(key, list, None)
        if value is None:
            return default
        if not all(isinstance(v, str) and v for v in value):
            raise self.error(key, "must be a list of non-empty strings")
        return tuple(value)

    def finish(self, allowed: tuple[str, ...] | None = None) -> None:
        known = set(allowed) if allowed is not None else self.used
        unknown = sorted(set(self.table) - known)
        if unknown:
            raise self.error(unknown[0], f"unknown key; expected one of {sorted(known)}")


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _finite(value: Any, where: str, path: str) -> None:
    """Refuse ``nan`` and infinities anywhere in a table of free-form options (sent to servers
    as JSON, where they are not valid)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"must be a finite number, not {value!r}", path=path, field=where)
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(v, f"{where}.{k}", path)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(v, f"{where}[{i}]", path)


def _names(kinds: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", list: "a list", dict: "a table"}
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


@overload
def _relative(base: Path, value: str) -> str: ...
@overload
def _relative(base: Path, value: None) -> None: ...
@overload
def _relative(base: Path, value: str | None) -> str | None: ...
def _relative(base: Path, value: str | None) -> str | None:
    """``value`` (a path from the file) relative to the experiment's folder unless absolute."""
    if value is None:
        return None
    candidate = Path(value).expanduser()
    return str(candidate if candidate.is_absolute() else (base / candidate))


def _urls(r: _Reader, table: Any, option: Any) -> tuple[str, ...]:
    """``base_url`` (one endpoint) or, for a ``urls`` option, ``base_urls`` (replicas): each an
    http(s) URL, none twice."""
    urls = r.get("base_urls", list) if option.kind == "urls" else None
    if urls is None:
        url = r.get(option.name, str, required=option.required)
        if url is None:
            return ()
        urls, name = [url], option.name
    else:
        name = "base_urls"
        if option.name in table:
            raise r.error("base_urls", f"give {option.name} (one endpoint) or base_urls (replicas), not both")
        if not urls:
            raise r.error("base_urls", "must list at least one URL")
    for i, url in enumerate(urls):
        where = name if name != "base_urls" else f"base_urls[{i}]"
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise r.error(where, "must start with http:// or https://")
        if url.rstrip("/") in [u.rstrip("/") for u in urls[:i]]:
            raise r.error(where, f"lists {url} twice")
    return tuple(urls)


def _backend_options(r: _Reader, table: Any, spec: Any, base: Path) -> dict[str, Any]:
    """The options ``spec`` (a `nepotism.backends.registry.BackendSpec`) declares, read and checked."""
    cfg: dict[str, Any] = {}
    for option in spec.options:
        kind, key = option.kind, option.name
        if kind in ("url", "urls"):
            urls = _urls(r, table, option)
            cfg[key] = urls[0] if urls else None
            if kind == "urls":
                cfg["base_urls"] = urls
        elif kind == "path":
            cfg[key] = _relative(base, r.get(key, str, required=option.required))
        elif kind in ("text", "env"):
            cfg[key] = r.get(key, str, required=option.required)
        elif kind == "flag":
            cfg[key] = r.get(key, bool, option.default, required=option.required)
        else:  # count, amount
            if option.required:
                r.get(key, (int, float), required=True)
            cfg[key] = r.positive(
                key,
                option.default,
                integer=kind == "count",
                allow_none=option.optional,
                high=option.high if option.high is not None else 1e9,
                unit=option.unit,
            )
    if spec.one_of and sum(cfg.get(k) is not None for k in spec.one_of) != 1:
        raise r.error(spec.one_of[0], f"a {spec.name} model needs exactly one of {' and '.join(spec.one_of)}")
    return cfg


def _model(model_id: str, table: Any, path: str, base: Path) -> ModelConfig:
    from nepotism.backends import registry

    r = _Reader(table, f"models.{model_id}", path)
    backend = r.get("backend", str, required=True)
    try:
        spec = registry.get(backend)
    except KeyError:
        raise r.error("backend", f"must be one of {', '.join(registry.names())}, not {backend!r}") from None
    cfg: dict[str, Any] = {"id": model_id, "backend": backend, **_backend_options(r, table, spec, base)}
    cfg["concurrency"] = r.positive("concurrency", 4, integer=True, high=4096)
    cfg["rpm"] = r.positive("rpm", None, allow_none=True, high=1e9, unit="requests per minute")
    cfg["tpm"] = r.positive("tpm", None, allow_none=True, high=1e12, unit="tokens per minute")
    cfg["max_attempts"] = r.positive("max_attempts", 4, integer=True, high=100)
    cfg["retry_base_delay_s"] = r.number("retry_base_delay_s", 0.5, low=0, high=3600, unit="seconds")
    cfg["retry_max_delay_s"] = r.number("retry_max_delay_s", 30.0, low=0, high=_MAX_TIMEOUT_S, unit="seconds")
    params = r.get("params", dict, {})
    _finite(params, f"models.{model_id}.params", path)
    secret = [k for k in params if is_secret_name(k)]
    if secret:
        raise r.error(
            f"params.{secret[0]}",
            "looks like a credential; name an environment variable with api_key_env instead of writing a key in the file",
        )
    cfg["params"] = MappingProxyType(dict(params))
    r.finish()
    return ModelConfig(**cfg)


def _conditions(judging: _Reader, path: str) -> tuple[ConditionConfig, ...]:
    raw = judging.get("conditions", list, ["default"])
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str) and item:
            out.append(ConditionConfig(item))
            continue
        r = _Reader(item, f"judging.conditions[{i}]", path)
        name = r.get("name", str, required=True)
        options = _template_path(r.get("options", dict, {}), path)
        r.finish()
        _finite(options, f"judging.conditions[{i}].options", path)
        out.append(ConditionConfig(name, MappingProxyType(dict(options))))
    names = [c.name for c in out]
    if not out or len(set(names)) != len(names):
        raise judging.error("conditions", "must name at least one condition, each once")
    return tuple(out)


def _protocols(judging: _Reader, path: str, replicates: int) -> tuple[ProtocolConfig, ...]:
    raw = judging.get("protocols", list, required=True)
    if not raw:
        raise judging.error("protocols", "must list at least one protocol")
    out = []
    for i, item in enumerate(raw):
        r = _Reader(item, f"judging.protocols[{i}]", path)
        protocol = r.get("protocol", str, required=True)
        if protocol not in PLANNER_ARGS:
            raise r.error("protocol", f"must be one of {tuple(PLANNER_ARGS)}, not {protocol!r}")
        args = {}
        for name in PLANNER_ARGS[protocol]:
            if name in item:
                args[name] = _planner_arg(r, name)
        options = _template_path(r.get("options", dict, {}), path)
        reps = r.positive("replicates", replicates, integer=True, high=_MAX_REPLICATES)
        _finite(options, f"judging.protocols[{i}].options", path)
        r.finish(("protocol", "options", "replicates", *PLANNER_ARGS[protocol]))
        out.append(ProtocolConfig(protocol, MappingProxyType(args), MappingProxyType(dict(options)), reps))
    return tuple(out)


def _template_path(options: dict[str, Any], path: str) -> dict[str, Any]:
    """Options with a ``template`` file (a user judge template) resolved against the experiment's folder."""
    if isinstance(options.get("template"), str) and options["template"].strip():
        return options | {"template": _relative(Path(path).parent, options["template"])}
    return options


def _planner_arg(r: _Reader, name: str) -> Any:
    if name in ("both_orders", "all_rubrics", "pairwise"):
        return r.get(name, bool)
    if name == "generators":
        return r.strings(name)
    if name == "target":
        value = r.get(name, str)
        if value not in ("instance", "response"):
            raise r.error(name, "must be 'instance' or 'response'")
        return value
    value = r.get(name, (str, list))  # pairs
    if isinstance(value, str):
        if value not in ("all", "judge-vs-others"):
            raise r.error(name, "must be 'all', 'judge-vs-others' or a list of [a, b] pairs")
        return value
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value):
        raise r.error(name, "must be 'all', 'judge-vs-others' or a list of [a, b] pairs")
    return tuple(tuple(p) for p in value)


def parse_experiment(data: Mapping[str, Any], path: str | Path, *, registry: Any = None) -> Experiment:
    """Validate parsed TOML ``data`` (from ``path``) into an `Experiment`.

    ``registry`` (a `nepotism.models.Registry`) resolves model names; by default the bundled one
    plus the files the experiment lists under ``experiment.registry``.
    """
    path = Path(path)
    where, base = str(path), path.parent
    top = _Reader(dict(data), "", where)
    top.finish(_TOP)
    exp = _Reader(top.get("experiment", dict, required=True), "experiment", where)
    name = exp.get("name", str, required=True)
    seed = exp.number("seed", 0, low=0, high=2**63 - 1, integer=True)
    replicates = exp.positive("replicates", 1, integer=True, high=_MAX_REPLICATES)
    registry_files = tuple(_relative(base, f) for f in exp.strings("registry"))
    store = _relative(base, exp.get("store", str))
    exp.finish()

    ds = _Reader(top.get("dataset", dict, required=True), "dataset", where)
    dataset = DatasetConfig(
        path=_relative(base, ds.get("path", str)),
        bundled=ds.get("bundled", str),
        from_store=ds.get("from_store", bool, False),
        limit=ds.positive("limit", None, integer=True, allow_none=True, high=2**63 - 1),
    )
    ds.finish()
    if sum([dataset.path is not None, dataset.bundled is not None, dataset.from_store]) != 1:
        raise InputError("give exactly one of path, bundled and from_store", path=where, field="dataset")

    if registry is None:
        from nepotism.models import load_registry

        for i, file in enumerate(registry_files):
            if not Path(file).is_file():
                raise InputError("registry file not found", path=where, field=f"experiment.registry[{i}]")
        registry = load_registry(registry_files)

    models_table = _Reader(top.get("models", dict, required=True), "models", where)
    models: dict[str, ModelConfig] = {}
    for raw_id, table in models_table.table.items():
        if not registry.knows(raw_id):
            hint = ""
            if isinstance(table, dict) and "backend" not in table:
                hint = '; quote ids that contain dots: [models."qwen2.5-7b"]'
            raise models_table.error(
                raw_id, f"is not in the model registry (add it to a registry file listed under experiment.registry){hint}"
            )
        model_id = registry.resolve(raw_id)
        if model_id in models:
            raise models_table.error(raw_id, f"names {model_id!r} a second time")
        models[model_id] = _model(model_id, table, where, base)

    def resolve(reader: _Reader, key: str, names: tuple[str, ...]) -> tuple[str, ...]:
        out = []
        for n in names:
            if not registry.knows(n) or registry.resolve(n) not in models:
                raise reader.error(key, f"{n!r} has no [models] entry")
            out.append(registry.resolve(n))
        if len(set(out)) != len(out):
            raise reader.error(key, "names a model twice")
        return tuple(out)

    gen = _Reader(top.get("generation", dict, {}), "generation", where)
    generation = GenerationConfig(
        generators=resolve(gen, "generators", gen.strings("generators")),
        max_tokens=gen.positive("max_tokens", 512, integer=True, high=1 << 20, unit="tokens"),
        temperature=gen.number("temperature", 0.0, low=0, high=_MAX_TEMPERATURE),
    )
    gen.finish()

    judging = _Reader(top.get("judging", dict, required=True), "judging", where)
    judges = resolve(judging, "judges", judging.strings("judges"))
    if not judges:
        raise judging.error("judges", "must name at least one judge")
    conditions = _conditions(judging, where)
    protocols = tuple(_resolve_args(p, registry) for p in _protocols(judging, where, replicates))
    judging.finish()
    _check_options(protocols, conditions, where)

    grading = _grading(top.get("grading", dict, None), where)
    perplexity = _perplexity(top.get("perplexity", dict, None), where, resolve, registry, models, judges)
    reference = _reference(top.get("reference", dict, None), where, resolve, judges, protocols, grading)

    out = _Reader(top.get("output", dict, {}), "output", where)
    output_dir = _relative(base, out.get("dir", str))
    fmt = out.get("format", str, "csv")
    if fmt not in _OUTPUT_FORMATS:
        raise out.error("format", f"must be one of {_OUTPUT_FORMATS}")
    out.finish()
    return Experiment(
        path=where,
        name=name,
        seed=seed,
        registry_files=registry_files,
        store=store,
        dataset=dataset,
        models=MappingProxyType(models),
        generation=generation,
        judges=judges,
        conditions=conditions,
        protocols=protocols,
        output_dir=output_dir,
        output_format=fmt,
        grading=grading,
        perplexity=perplexity,
        reference=reference,
    )


def _perplexity(
    table: Any, path: str, resolve: Any, registry: Any, models: Mapping[str, ModelConfig], judges: tuple[str, ...]
) -> PerplexityConfig | None:
    if table is None:
        return None
    r = _Reader(table, "perplexity", path)
    scorers = resolve(r, "scorers", r.strings("scorers"))
    if "scorers" in table and not scorers:
        raise r.error("scorers", "must name at least one model (leave it out to use the judges)")
    responses = r.get("responses", str, "judged")
    if responses not in _PERPLEXITY_RESPONSES:
        raise r.error("responses", f"must be one of {_PERPLEXITY_RESPONSES}, not {responses!r}")
    generators = tuple(registry.resolve(g) if registry.knows(g) else g for g in r.strings("generators"))
    if "generators" in table and not generators:
        raise r.error("generators", "must name at least one generator (leave it out for all)")
    prompt = r.get("prompt", str, "auto")
    if prompt not in PERPLEXITY_PROMPTS:
        raise r.error("prompt", f"must be one of {PERPLEXITY_PROMPTS}, not {prompt!r}")
    r.finish(("scorers", "responses", "generators", "prompt"))
    if prompt == "chat":
        from nepotism.backends.registry import is_in_process

        served = [s for s in scorers or judges if not is_in_process(models[s].backend)]
        if served:
            raise r.error(
                "prompt",
                f"'chat' needs in-process models, but {served[0]!r} is served over HTTP "
                f"(backend {models[served[0]].backend}), where the chat template is not visible; "
                "use 'raw' or 'auto'",
            )
    return PerplexityConfig(scorers=scorers, responses=responses, generators=generators, prompt=prompt)


def _reference(
    table: Any,
    path: str,
    resolve: Any,
    judges: tuple[str, ...],
    protocols: tuple[ProtocolConfig, ...],
    grading: GradingConfig | None,
) -> ReferenceConfig | None:
    if table is None:
        return None
    r = _Reader(table, "reference", path)
    jury = resolve(r, "jury", r.strings("jury"))
    if "keep_related" in table:
        raise r.error(
            "keep_related",
            "relatives vote by default now, as in paper 002 (§2.4): drop the key, or "
            "set exclude_related = true for the variant without them",
        )
    exclude_related = r.get("exclude_related", bool, False)
    r.finish(("jury", "exclude_related"))
    if len(jury) < 2:
        raise r.error("jury", "must name at least two judges")
    outside = [j for j in jury if j not in judges]
    if outside:
        raise r.error("jury", f"{outside[0]!r} is not one of judging.judges: a juror votes with its own rubric verdicts")
    if not any(p.protocol == "rubric" for p in protocols):
        raise r.error("jury", 'a jury votes on rubric verdicts: add a [[judging.protocols]] with protocol = "rubric"')
    if grading is not None and "ifeval" in ((grading.task,) if grading.task else tuple(grading.tasks.values())):
        raise r.error("jury", "[grading] ifeval already makes the rubric reference (from the instructions): use one of the two")
    return ReferenceConfig(jury=jury, exclude_related=exclude_related)


def _grading(table: Any, path: str) -> GradingConfig | None:
    if table is None:
        return None
    r = _Reader(table, "grading", path)
    task = r.get("task", str)
    tasks = r.get("tasks", dict, {})
    timeout = r.positive("timeout", 10.0, high=_MAX_TIMEOUT_S, unit="seconds")
    r.finish()
    if (task is None) == (not tasks):
        raise r.error("task", "give exactly one of task (every instance) and tasks (by category)")
    for key, value in ({"task": task} if task is not None else {f"tasks.{k}": v for k, v in tasks.items()}).items():
        if value not in GRADING_TASKS:
            raise r.error(key, f"must be one of {GRADING_TASKS}, not {value!r}")
    return GradingConfig(task=task, tasks=MappingProxyType(dict(tasks)), timeout=timeout)


def _resolve_args(config: ProtocolConfig, registry: Any) -> ProtocolConfig:
    """Registry ids for the generator names in ``generators`` and explicit ``pairs``."""

    def one(name: str) -> str:
        return registry.resolve(name) if registry.knows(name) else name

    args = dict(config.args)
    if "generators" in args:
        args["generators"] = tuple(one(g) for g in args["generators"])
    if isinstance(args.get("pairs"), tuple):
        args["pairs"] = tuple((one(a), one(b)) for a, b in args["pairs"])
    return ProtocolConfig(config.protocol, MappingProxyType(args), config.options, config.replicates)


def task_protocol(config: ProtocolConfig) -> str:
    """The judging task protocol a configured protocol plans (recognition may be pairwise...)."""
    if config.protocol == "recognition" and config.args.get("pairwise"):
        return "recognition-pairwise"
    if config.protocol == "rubric" and config.args.get("all_rubrics"):
        return "rubric-all"
    return config.protocol


def _check_options(protocols: tuple[ProtocolConfig, ...], conditions: tuple[ConditionConfig, ...], where: str) -> None:
    from nepotism.judging import normalise_options

    seen: dict[tuple[str, str, str], tuple[int, dict[str, Any]]] = {}
    for i, proto in enumerate(protocols):
        for cond in conditions:
            options = dict(proto.options) | dict(cond.options)
            if proto.protocol == "categorise":
                options.setdefault("target", proto.args.get("target", "instance"))
            try:
                normalised = normalise_options(task_protocol(proto), options)
            except ValueError as err:
                field = f"judging.protocols[{i}].options"
                if cond.options:
                    field += f" (with condition {cond.name!r})"
                raise InputError(str(err), path=where, field=field) from None
            if normalised["template"] is not None:  # a user judge template: its placeholders, now
                from nepotism.judging.templates import check_user_template, template_slot

                check_user_template(normalised["template"], template_slot(task_protocol(proto), normalised))
            _check_distinct_ids(seen, i, proto, cond, normalised, where)


def _check_distinct_ids(
    seen: dict[tuple[str, str, str], tuple[int, dict[str, Any]]],
    i: int,
    proto: ProtocolConfig,
    cond: ConditionConfig,
    normalised: dict[str, Any],
    where: str,
) -> None:
    """Refuse a second ``[[judging.protocols]]`` entry whose judgments would take the ids of an
    earlier one's while asking something else: a judgment's id names the protocol, the template
    and the options that change the prompt or how the answer is read (`judging.template_id_of`),
    the condition and the replicate — not, e.g., ``temperature`` or ``max_tokens``. Two such entries
    would store one judgment per id, the last call's, and lose the other silently; variants of one
    protocol are conditions (each condition's judgments are its own)."""
    from nepotism.judging import template_id_of

    template = template_id_of(task_protocol(proto), normalised)
    key = (task_protocol(proto), template, cond.name)
    if key not in seen:
        seen[key] = (i, normalised)
        return
    first, earlier = seen[key]
    differ = sorted(k for k in set(earlier) | set(normalised) if earlier.get(k) != normalised.get(k))
    if differ:
        raise InputError(
            f"judging.protocols[{first}] and [{i}] plan the same {task_protocol(proto)!r} judgments (same template "
            f"{template!r}, condition {cond.name!r}) but differ in {', '.join(differ)}: their judgments would share "
            f"ids and one would overwrite the other. Make the variants conditions instead, e.g. "
            f'conditions = ["default", {{ name = "variant", options = {{ {differ[0]} = ... }} }}]',
            path=where,
            field=f"judging.protocols[{i}].options",
        )


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse an experiment TOML file; a missing, unreadable, invalid or too deeply nested file is an
    `InputError` (`nepotism.input_limits.read_toml`, the reader of every TOML file a user gives)."""
    return input_limits.read_toml(path, what="experiment file")


def load_experiment(path: str | Path, *, registry: Any = None) -> Experiment:
    """Read and validate an experiment TOML file."""
    return parse_experiment(read_toml(path), Path(path), registry=registry)


def dumps_config(experiment: Experiment) -> str:
    """The experiment's configuration as canonical JSON (for logs and run records)."""
    return json.dumps(experiment.as_config(), sort_keys=True, default=str)
