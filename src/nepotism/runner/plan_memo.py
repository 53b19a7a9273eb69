"""The judge-plan memo's digest: everything that plans, renders and keys a unit of judge tasks, in one hash.

A fully cached rerun of a judge plan used to render every prompt, hash it into its cache key and
hash every judgment id again, task by task, only to find that all of them were stored. Those keys
and ids are a pure function of inputs that can be digested in bulk, so `Runner.judge` asks a
`PlanMemo` for each window's digest; when the store holds a memo row for it
(`nepotism.store.memo`) whose every call and judgment is stored, the window is counted from the
store in SQL (statuses, plan ids) without rendering, keying or identifying a task. Anything else
(no row, a damaged row, one pair not stored) and the window takes the normal path, which records
the memo row for the next rerun.

**Why the digest covers every input.** A window's keys come from
``plan_call(endpoints[task.judge], render(task, model=task.judge), replicate=task.replicate)`` and
its judgment ids from ``judgment_ids(task)``. The memo is used only when ``render`` and
``identify`` are the package's own `nepotism.judging.render.render` and
`nepotism.judging.interpret.judgment_ids` (not a caller's function, whose closure nothing here can
see) and every task is exactly a `nepotism.judging.JudgeTask` whose fields are the eight this
module digests (`_TASK_FIELDS`; a new field turns the memo off until it is digested here). Then
the outputs depend on:

* the task, field by field: protocol, judge, condition and replicate as values; the instance, the
  candidate responses and the rubric item by content — every dataclass field of them, recursively
  (id, prompt or messages, reference answer, rubric items, category, metadata; instance id,
  generator, text, metadata) — and the completed options by content (every key and value, with
  its type, so ``1``, ``1.0`` and ``True`` differ); a user template named by option ``template``
  by the SHA-256 of its file's bytes as read now;
* the judges' endpoints: kind, experiment model id and served model of every endpoint (what
  `request_key` reads of an endpoint), and the runner's seed;
* the code: the SHA-256 of every file of the installed ``nepotism`` package (sources, shipped
  templates and macros; ``__pycache__`` aside), the Python version and the versions of Jinja2
  and MarkupSafe, which render the templates (`code_digest`). Any edit of the package, however
  unrelated, therefore misses every memo once: the price of not having to argue which modules
  rendering and keying reach.

**A chunk, one level up.** `nepotism run` hands the judge phase each chunk of instances as a
`ChunkPlan`: its tasks are ``plan_tasks(experiment, instances, responses, judging)``
(`nepotism.runner.judge_plan`), so they, and through them the keys and ids above, depend on the
experiment, the chunk's instances and responses, the judging module and the code. A chunk plan
is digested (`PlanMemo.unit`), before anything is planned, from: the head above (code, endpoints,
seed); the whole `nepotism.experiment.Experiment` by content — every field of it and of its
nested configs, recursively (protocols with their kind, args, options and replicates;
conditions; judges; models; generation; dataset; output; grading...), so no argument is needed
about which of them `plan_tasks` reads, at the price of a miss when an unrelated field changes
— with the bytes of every user template a protocol's or condition's options name; each instance
by content, in the order given; the responses by content as a set (sorted digests): the planners
of `nepotism.judging.planning` key an instance's responses by generator and order candidates by
generator name or by the given pairs, never by the order of the responses (a test shuffles them),
and a fresh run hands a chunk's responses on in the order its generation calls answered. It is memoised only when ``judging`` is the
package's `nepotism.judging` module (a caller's planners are not digested), the render and
identify functions are the package's and the task fields are those above (`plan_memo`): then
the tasks are a function of the digested values and the code, and the keys and ids a function
of the tasks as argued above. The chunk's row also keeps its table kinds (tags), a function of
the same tasks. A chunk whose digest cannot be made is planned and memoised window by window.

Values are serialised injectively (JSON of tagged type names and values; no ``str()`` of
arbitrary objects: anything but dataclasses of the package's records, mappings with string keys,
tuples, lists and scalars makes the window unmemoable, which is a miss). Equal digests thus mean
equal inputs (up to SHA-256 collisions), hence equal keys and ids. Objects are digested once per
judge phase (by identity, kept alive meanwhile), then each task adds a tuple of short strings.
Nondeterminism can only cause misses. Left out: anything the memo cannot see changes at run time
inside a process (a monkeypatched template or function): tests that do so turn the memo off
(``Runner(judge_memo=False)``).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from nepotism.records import Instance, Response
from nepotism.runner import judge_plan
from nepotism.store import Store
from nepotism.store.memo import MemoCount, count_memo, plan_memo_ids, write_memo

__all__ = ["ChunkPlan", "PlanMemo", "code_digest", "plan_memo"]

#: The JudgeTask fields this module digests, in declaration order.
_TASK_FIELDS = ("protocol", "judge", "instance", "candidates", "rubric_item", "condition", "replicate", "options")
_SCALARS = (str, int, float, bool, type(None))
#: The Response and Instance fields `_content`'s fast paths digest (other fields: the general path).
_RESPONSE_FIELDS = ("instance_id", "generator", "text", "metadata")
_INSTANCE_FIELDS = ("id", "prompt", "reference_answer", "rubric", "category", "metadata")
_FAST = (
    tuple(f.name for f in fields(Response)) == _RESPONSE_FIELDS and tuple(f.name for f in fields(Instance)) == _INSTANCE_FIELDS
)
_OPTIONAL = (str, type(None))
#: The modules whose dataclasses `_plain` digests field by field (records; the experiment's config).
_RECORD_MODULES = ("nepotism.records", "nepotism.experiment")
_CODE: dict[str, str] = {}


class _Unmemoable(Exception):
    """A value the digest cannot serialise injectively: the window is not memoised."""


def code_digest(root: Path | None = None) -> str:
    """SHA-256 of every file under the package folder ``root`` (default: the installed
    ``nepotism``; ``__pycache__`` folders and ``.pyc`` files aside), by relative path, with the
    Python, Jinja2 and MarkupSafe versions. Computed once per process and root."""
    if root is None:
        import nepotism

        root = Path(nepotism.__file__).resolve().parent
    cached = _CODE.get(str(root))
    if cached is not None:
        return cached
    from importlib.metadata import PackageNotFoundError, version

    h = hashlib.sha256(b"nepotism judge-plan memo 1\x00")
    h.update(sys.version.encode())
    for dist in ("jinja2", "markupsafe"):
        try:
            h.update(f"\x00{dist}={version(dist)}".encode())
        except PackageNotFoundError:
            h.update(f"\x00{dist}=?".encode())
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"):
        data = path.read_bytes()
        h.update(f"\x00{path.relative_to(root).as_posix()}\x00{len(data)}\x00".encode())
        h.update(data)
    _CODE[str(root)] = out = h.hexdigest()
    return out


def _plain(value: Any) -> Any:
    """``value`` as tagged JSON-ready data, injectively; `_Unmemoable` for anything else."""
    kind = type(value)
    if kind in _SCALARS:
        return [kind.__name__, value]
    if kind is tuple or kind is list:
        return [kind.__name__, [_plain(v) for v in value]]
    if kind is dict or kind is MappingProxyType:
        if not all(type(k) is str for k in value):
            raise _Unmemoable("a mapping with non-string keys")
        return ["map", [[k, _plain(value[k])] for k in sorted(value)]]
    if is_dataclass(value) and not isinstance(value, type) and kind.__module__ in _RECORD_MODULES:
        return [kind.__qualname__, [[f.name, _plain(getattr(value, f.name))] for f in fields(value)]]
    raise _Unmemoable(f"a {kind.__qualname__} value")


def _content(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s content. A response without metadata or with string metadata
    only (a stored response names its call), and an instance with a
    plain prompt and no rubric or metadata (the common cases), are pickled as a tagged tuple of
    their other fields instead of going through `_plain`: the same fields, injectively (pickle
    round-trips builtin strings and None exactly), several times faster; `_FAST` checks the
    records still have exactly those fields."""
    kind = type(value)
    if (
        _FAST
        and kind is Response
        and not value.metadata
        and type(value.metadata) is dict
        and type(value.instance_id) is str
        and type(value.generator) is str
        and type(value.text) is str
    ):
        data = pickle.dumps(("Response", value.instance_id, value.generator, value.text), protocol=5)
    elif (
        _FAST
        and kind is Response
        and type(value.metadata) is dict
        and all(type(k) is str and type(v) is str for k, v in value.metadata.items())
        and type(value.instance_id) is str
        and type(value.generator) is str
        and type(value.text) is str
    ):
        # (a stored response: its call key as string metadata)
        data = pickle.dumps(
            ("Response+", value.instance_id, value.generator, value.text, tuple(sorted(value.metadata.items()))), protocol=5
        )
    elif (
        _FAST
        and kind is Instance
        and not value.metadata
        and type(value.metadata) is dict
        and value.rubric == ()
        and type(value.id) is str
        and type(value.prompt) is str
        and type(value.reference_answer) in _OPTIONAL
        and type(value.category) in _OPTIONAL
    ):
        data = pickle.dumps(("Instance", value.id, value.prompt, value.reference_answer, value.category), protocol=5)
    else:
        data = json.dumps(_plain(value), separators=(",", ":"), allow_nan=True).encode()
    return hashlib.sha256(data).hexdigest()


def _options(options: Mapping[str, Any]) -> str:
    """The options' content, plus the bytes of a user template they name."""
    text = _content(options)
    user = options.get("template")
    if user:
        try:
            data = Path(user).read_bytes()
        except (OSError, TypeError, ValueError) as err:
            raise _Unmemoable(f"template {user!r}: {err}") from None
        text = hashlib.sha256(f"{text}\x00{hashlib.sha256(data).hexdigest()}".encode()).hexdigest()
    return text


class ChunkPlan:
    """The judge tasks of a chunk of instances, planned only when the memo cannot count the chunk.

    What `nepotism run` hands `Runner.judge` per chunk of instances whose responses are made:
    ``tasks()`` is ``plan_tasks(experiment, instances, responses, judging)``
    (`nepotism.runner.judge_plan`) and sets ``kinds``, the exported table kinds of those
    tasks; when the chunk is counted from its memo row instead, nothing is planned and ``kinds``
    are the row's tags (recorded from ``tasks()`` by the run that wrote it)."""

    __slots__ = ("experiment", "instances", "responses", "judging", "kinds")

    def __init__(self, experiment: Any, instances: Sequence[Instance], responses: Sequence[Response], judging: Any) -> None:
        self.experiment = experiment
        self.instances = instances
        self.responses = responses
        self.judging = judging
        self.kinds: list[str] = []

    def tasks(self) -> list[Any]:
        tasks = judge_plan.plan_tasks(self.experiment, self.instances, self.responses, self.judging)
        self.kinds = sorted({judge_plan._table_kind(t) for t in tasks})
        return tasks


class PlanMemo:
    """Digests windows of one judge phase's tasks and serves or records their memo rows."""

    def __init__(self, store: Store, endpoints: Mapping[str, Any], seed: int) -> None:
        self.store = store
        ends = sorted((name, ep.kind, ep.model, ep.served_model) for name, ep in endpoints.items())
        head = json.dumps([code_digest(), repr(ends), repr(seed), _TASK_FIELDS])
        self._head = hashlib.sha256(head.encode()).digest()
        self._digests: dict[int, str] = {}  # id(object) -> its content digest
        self._alive: list[Any] = []  # (the objects of _digests, so that their ids stay theirs)
        self._valid: set[str] = set()  # digests whose row was read intact (no need to write it)
        self._counted: list[str] = []  # digests of the units counted, for the plan (`resolve`)
        self._experiments: dict[int, bytes] = {}  # id(experiment) -> its digest
        #: tasks counted from memo rows
        self.hits = 0

    def _ref(self, value: Any, options: bool = False) -> str:
        out = _options(value) if options else _content(value)
        self._digests[id(value)] = out
        self._alive.append(value)
        return out

    def digest(self, tasks: Sequence[Any]) -> str | None:
        """The window's digest, or None when it cannot be memoised (see the module docstring)."""
        from nepotism.judging.tasks import JudgeTask

        get = self._digests.get
        ref = self._ref
        rows = []
        try:
            for t in tasks:
                if type(t) is not JudgeTask or type(t.condition) is not str or type(t.protocol) is not str:
                    return None
                inst, item, opts = t.instance, t.rubric_item, t.options
                rows.append(
                    (
                        t.protocol,
                        t.judge,
                        get(id(inst)) or ref(inst),
                        tuple([get(id(c)) or ref(c) for c in t.candidates]),
                        None if item is None else (get(id(item)) or ref(item)),
                        t.condition,
                        t.replicate,
                        get(id(opts)) or ref(opts, options=True),
                    )
                )
        except _Unmemoable:
            return None
        h = hashlib.sha256(self._head)
        h.update(pickle.dumps(rows, protocol=5))
        return h.hexdigest()

    def unit(self, part: Any) -> str | None:
        """The digest of a `ChunkPlan` from its inputs (nothing planned), or None: not a chunk
        plan, another judging module than the package's, or an input that cannot be digested."""
        import nepotism.judging

        if type(part) is not ChunkPlan or part.judging is not nepotism.judging:
            return None
        try:
            exp = self._experiments.get(id(part.experiment))
            if exp is None:
                exp = self._experiment(part.experiment)
            get, ref = self._digests.get, self._ref
            # the responses as a set: the planners key each instance's responses by generator, so their
            # order never changes the plan (a fresh run hands them on in the order generation answered)
            rows = ([get(id(i)) or ref(i) for i in part.instances], sorted([get(id(r)) or ref(r) for r in part.responses]))
        except _Unmemoable:
            return None
        h = hashlib.sha256(self._head)
        h.update(b"\x00chunk\x00" + exp)
        h.update(pickle.dumps(rows, protocol=5))
        return h.hexdigest()

    def _experiment(self, experiment: Any) -> bytes:
        """The experiment's digest: every field, recursively (`_plain`), and the bytes of each user
        template a protocol or condition names (read now, as `_options` reads them)."""
        from nepotism.experiment import Experiment

        if type(experiment) is not Experiment:
            raise _Unmemoable("not an Experiment")
        h = hashlib.sha256(json.dumps(_plain(experiment), separators=(",", ":"), allow_nan=True).encode())
        for options in [p.options for p in experiment.protocols] + [c.options for c in experiment.conditions]:
            h.update(_options(options).encode())
        self._experiments[id(experiment)] = out = h.digest()
        self._alive.append(experiment)
        return out

    def counted(self, digest: str, tasks: int | None = None) -> MemoCount | None:
        """(tasks, judgments by status, tags) of a unit whose memo row is intact and all stored
        (its ids go into the run's plan at `resolve`); None otherwise (nothing counted)."""
        found = count_memo(self.store, digest, tasks)
        if found is None:
            return None
        self._valid.add(digest)
        self._counted.append(digest)
        self.hits += found[0]
        return found

    def write(self, digest: str, tasks: int, pairs: Sequence[tuple[str, str]], tags: Sequence[str] = ()) -> None:
        """Record the unit's pairs (on the store's writer thread), unless its row was read intact."""
        if digest not in self._valid and pairs:
            write_memo(self.store, digest, tasks, pairs, tags)

    def resolve(self, plan: str | None) -> None:
        """Add the judgment ids of every unit counted so far to ``plan`` (one statement)."""
        if plan is not None and self._counted:
            plan_memo_ids(self.store, plan, self._counted)
        self._counted = []


def plan_memo(runner: Any, render: Any, identify: Any, *, keep: bool, planned: Any) -> PlanMemo | None:
    """A `PlanMemo` for `Runner.judge`, or None when the memo does not apply: turned off
    (``runner.judge_memo``), judgments kept, calls planned by the caller, or other render /
    identify functions or task fields than those the digest covers."""
    if not getattr(runner, "judge_memo", False) or keep or planned is not None or identify is None:
        return None
    from nepotism.judging.interpret import judgment_ids
    from nepotism.judging.render import render as package_render
    from nepotism.judging.tasks import JudgeTask

    if render is not package_render or identify is not judgment_ids:
        return None
    if tuple(f.name for f in fields(JudgeTask)) != _TASK_FIELDS:
        return None
    return PlanMemo(runner.store, runner.endpoints, runner.seed)
