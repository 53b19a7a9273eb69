"""``nepotism annotate``: collect human pairwise labels and use them as references.

Only argument handling and printing live here; the work is done by `nepotism.annotate` and
`nepotism.store.annotations`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nepotism.cli._common import bootstrap_options, echo_json, models_option
from nepotism.errors import InputError

if TYPE_CHECKING:
    from nepotism.metrics import Bootstrap
    from nepotism.store import Store

__all__ = ["command"]

_STORE_HELP = "Store file (default: $NEPOTISM_STORE, else ./nepotism.db)."
#: `annotate serve`'s port: one above `nepotism standin`'s 8765, which the README leaves running.
DEFAULT_PORT = 8766
_PATH = click.Path(path_type=Path, dir_okay=False)


def _store_path(path: Path | None) -> Path:
    from nepotism.store import default_store_path

    return default_store_path() if path is None else path


def _open_existing(path: Path | None) -> Store:
    from nepotism.store import Store

    path = _store_path(path)
    if not path.is_file():
        raise InputError("no store file here", path=str(path))
    return Store(path)


def _pick_collection(store: Store, name: str | None) -> str:
    from nepotism.store.annotations import collection_names

    names = collection_names(store)
    if name is not None:
        if name not in names:
            raise InputError(
                f"no collection {name!r} in the store (it has: {', '.join(names) or 'none'})",
                path=str(store.path),
                field="collection",
            )
        return name
    if len(names) != 1:
        raise InputError(
            "choose a collection with --collection"
            + (f" (the store has: {', '.join(names)})" if names else " (the store has none: run serve first)"),
            path=str(store.path),
            field="collection",
        )
    return names[0]


@click.group("annotate")
def command() -> None:
    """Collect human pairwise labels in a local web app and use them as references.

    PAIRS files are JSON Lines with instance_id, prompt, model_a, model_b, text_a, text_b (what
    `annotate sample` writes), or a recorded pairwise judgments file given with --texts, a JSON
    Lines file of instance_id, prompt, model, text.
    """


@command.command("serve")
@click.argument("pairs", type=_PATH, required=False)
@click.option("--annotator", required=True, help="Your name (letters, digits, _ . -); labels are kept per annotator.")
@click.option(
    "--texts",
    type=_PATH,
    default=None,
    help="Texts file (JSONL: instance_id, prompt, model, text) when PAIRS is a judgments file.",
)
@click.option("--collection", default=None, help="Name of this set of pairs in the store (default: PAIRS's file name).")
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port (0 = any free port; the default is not the stand-in's 8765, so both can run).",
)
@click.option(
    "--order-seed",
    type=click.IntRange(0),
    default=None,
    help="Derive each item's on-screen order from this seed (default: drawn at random; always recorded).",
)
def serve(
    pairs: Path | None,
    annotator: str,
    texts: Path | None,
    collection: str | None,
    store_path: Path | None,
    host: str,
    port: int,
    order_seed: int | None,
) -> None:
    """Open the annotation web app for ANNOTATOR on PAIRS (or on a --collection already stored).

    One pair at a time, the two responses in a random recorded order with the model names
    hidden. Keys: A / B / T (tie) / S (skip), N and P to move, G to jump, L to list. Each label
    is saved in the store the moment it is given; restart to resume where you stopped. Several
    annotators can label the same store at once, each with their own server (and port). The
    port is taken before anything is stored: a port in use (or a missing extra, bad PAIRS) is
    exit status 2 with the store untouched.
    """
    from nepotism.extras import require

    require("annotate", purpose="the annotation app")
    from nepotism.annotate.app import create_app
    from nepotism.annotate.pairs import load_pairs
    from nepotism.annotate.server import bind, is_loopback, run
    from nepotism.store import Store
    from nepotism.store.annotations import add_collection, validate_annotator

    validate_annotator(annotator)
    if pairs is None and texts is not None:
        raise InputError("--texts goes with a PAIRS judgments file", field="--texts")
    items = load_pairs(pairs, texts) if pairs is not None else None
    try:
        sock = bind(host, port)
    except OSError as err:
        raise InputError(
            f"cannot listen on {host}:{port} ({err.strerror or err}); pick another --port (0 = any free one)", field="--port"
        ) from None
    path = _store_path(store_path)
    with Store(path) as store:
        if pairs is not None and items is not None:  # items are read from PAIRS only
            collection = collection or pairs.name.split(".")[0]
            added = add_collection(store, collection, items)
            note = f"added {added} pairs" if added else f"{len(items)} pairs already stored"
            click.echo(f"collection {collection!r}: {note}", err=True)
        else:
            collection = _pick_collection(store, collection)
    allowed = None
    if not is_loopback(host):
        click.echo(f"warning: listening on {host}: anyone who can reach it can label as {annotator!r}", err=True)
        allowed = ["*"]
    app = create_app(path, collection, annotator, order_seed=order_seed, allowed_hosts=allowed)
    shown_host, shown_port = sock.getsockname()[:2]
    shown_host = f"[{shown_host}]" if ":" in shown_host else shown_host
    click.echo(
        f"annotating {collection!r} as {annotator} — open http://{shown_host}:{shown_port}/ "
        f"(labels go to {path} as you give them; Ctrl-C to stop)"
    )
    run(app, sock)


@command.command("sample")
@click.argument("source", type=_PATH)
@click.option(
    "--texts", type=_PATH, default=None, help="Texts file: SOURCE is then a pairwise judgments file whose pairs are sampled."
)
@click.option("--judgments", type=_PATH, default=None, help="Pairwise judgments scoring the pairs when SOURCE is a pairs file.")
@click.option("--n", "size", type=click.IntRange(1), required=True, help="How many pairs to draw.")
@click.option(
    "--by",
    "strategy",
    type=click.Choice(["uniform", "disagreement", "self-preference"]),
    default="uniform",
    show_default=True,
    help="What to draw.",
)
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Random seed.")
@click.option("--fill", is_flag=True, help="Top up with uniformly drawn pairs when too few qualify.")
@click.option("--out", type=_PATH, required=True, help="Pairs file to write (.jsonl).")
@models_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def sample(
    source: Path,
    texts: Path | None,
    judgments: Path | None,
    size: int,
    strategy: str,
    seed: int,
    fill: bool,
    out: Path,
    models_files: tuple[str, ...],
    as_json: bool,
) -> None:
    """Draw pairs for humans to label: where judges disagree, where a judge picked its own
    response (self-preference), or uniformly. Writes a PAIRS file for `annotate serve`."""
    from nepotism.annotate.pairs import items_from_judgments, read_pairs_file, read_texts, write_pairs
    from nepotism.annotate.sampling import sample_items
    from nepotism.tables import read_table

    if texts is not None and judgments is not None:
        raise InputError("give --texts (SOURCE = judgments) or --judgments (SOURCE = pairs), not both", field="--judgments")
    if texts is not None:
        frame = read_table(source, kind="pairwise").frame
        items = items_from_judgments(frame, read_texts(texts), judgments_path=str(source), texts_path=str(texts))
    else:
        items = read_pairs_file(source)
        frame = read_table(judgments, kind="pairwise").frame if judgments is not None else None
    registry = None
    if strategy == "self-preference":
        from nepotism.models import load_registry

        registry = load_registry(models_files)
    chosen, summary = sample_items(items, size, strategy=strategy, seed=seed, judgments=frame, registry=registry, fill=fill)
    if not chosen:
        raise InputError(f"no pair qualifies for --by {strategy} (use --fill or another strategy)", path=str(source))
    write_pairs(chosen, out)
    if as_json:
        echo_json(summary.as_dict() | {"out": str(out)})
        return
    click.echo(
        f"wrote {len(chosen)} pairs to {out} ({summary.n_selected} by {strategy}, "
        f"{summary.n_filled} filled; {summary.n_qualified} of {summary.n_candidates} pairs qualified)"
    )
    if summary.n_unparsed_judgments or summary.n_unmatched_judgments:
        click.echo(
            f"judgment rows left out: {summary.n_unparsed_judgments} without a verdict, "
            f"{summary.n_unmatched_judgments} matching no pair",
            err=True,
        )


@command.command("export")
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--collection", default=None, help="Collection to export (default: the only one).")
@click.option(
    "--out",
    type=_PATH,
    default=None,
    help="References file (preference-ref format; .csv, .jsonl or .parquet) from the majority vote.",
)
@click.option(
    "--per-annotator",
    "per_annotator",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder for one labels file per annotator.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "parquet"]),
    default="csv",
    show_default=True,
    help="Format of the per-annotator files.",
)
@click.option(
    "--min-votes",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Labels (skips not counted) an item needs before it gets a majority.",
)
@click.option("--to-store", is_flag=True, help="Also add the majority references to the store's references table.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def export(
    store_path: Path | None,
    collection: str | None,
    out: Path | None,
    per_annotator: Path | None,
    fmt: str,
    min_votes: int,
    to_store: bool,
    as_json: bool,
) -> None:
    """Write the human majority per pair as references, and each annotator's labels.

    A pair's winner is the label (model A, model B or tie) most annotators gave; level votes
    are 'unresolved' and pairs with too few labels 'unlabelled' — both are counted, not written.
    """
    from nepotism.annotate.export import majority_frame, references, write_exports
    from nepotism.store.annotations import collection_items, label_history

    if out is None and per_annotator is None and not to_store:
        raise InputError("nothing to write: give --out, --per-annotator or --to-store", field="--out")
    with _open_existing(store_path) as store:
        name = _pick_collection(store, collection)
        items = collection_items(store, name)
        labels = label_history(store, name)
        summary = write_exports(name, items, labels, out, per_annotator_dir=per_annotator, suffix=f".{fmt}", min_votes=min_votes)
        added = None
        if to_store:
            refs = references(majority_frame(items, labels, min_votes=min_votes), source=f"annotate:{name}")
            added = store.add_references(refs)
    result = summary.as_dict() | ({"references_added_to_store": added} if to_store else {})
    if as_json:
        echo_json(result)
        return
    o = summary.outcomes
    click.echo(
        f"{name}: {summary.n_items} pairs — majority model_a {o['model_a']}, model_b {o['model_b']}, "
        f"tie {o['tie']}; unresolved {o['unresolved']}, unlabelled {o['unlabelled']}"
    )
    for annotator, counts in summary.annotators.items():
        click.echo(f"  {annotator}: {counts['labelled']} labelled, {counts['skipped']} skipped")
    for path in summary.files:
        click.echo(f"wrote {path}")
    if to_store:
        click.echo(f"added {added} references to the store")


def _fmt(estimate: Mapping[str, Any]) -> str:
    value = estimate["value"]
    if value is None:
        return f"undefined ({estimate['note'] or 'no data'})"
    text = f"{value:.3f}"
    if estimate["ci_low"] is not None:
        text += f" [{estimate['ci_low']:.3f}, {estimate['ci_high']:.3f}]"
    return text + f"  n={estimate['n']}"


@command.command("agreement")
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None, help=_STORE_HELP)
@click.option("--collection", default=None, help="Collection (default: the only one).")
@click.option(
    "--judgments",
    type=_PATH,
    default=None,
    help="Recorded pairwise judgments: report each judge's agreement with the human majority.",
)
@click.option(
    "--min-votes",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Labels an item needs before it gets a human majority.",
)
@bootstrap_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def agreement(
    store_path: Path | None, collection: str | None, judgments: Path | None, min_votes: int, bootstrap: Bootstrap, as_json: bool
) -> None:
    """Agreement among annotators (pairwise, Cohen's and Fleiss' kappa, Krippendorff's alpha) and
    of each judge with the human majority, with bootstrap intervals over prompts."""
    from nepotism.annotate.report import agreement_report
    from nepotism.store.annotations import collection_items, label_history
    from nepotism.tables import read_table

    frame = read_table(judgments, kind="pairwise").frame if judgments is not None else None
    with _open_existing(store_path) as store:
        name = _pick_collection(store, collection)
        items = collection_items(store, name)
        labels = label_history(store, name)
    report = agreement_report(name, items, labels, judgments=frame, min_votes=min_votes, bootstrap=bootstrap)
    if as_json:
        echo_json(report)
        return
    click.echo(f"{name}: {report['n_items']} pairs, categories {', '.join(report['categories'])}")
    for annotator, info in report["annotators"].items():
        speed = info["labels_per_minute"]
        click.echo(
            f"  {annotator}: {info['labelled']} labelled, {info['skipped']} skipped"
            + (f", {speed} labels/min (median)" if speed else "")
        )
    click.echo("all annotators")
    for key, title in (
        ("percent_agreement", "pairwise agreement"),
        ("fleiss_kappa", "Fleiss' kappa"),
        ("krippendorff_alpha", "Krippendorff's alpha"),
    ):
        click.echo(f"  {title:<22}{_fmt(report['overall'][key])}")
    for pair in report["pairs"]:
        first, second = pair["annotators"]
        click.echo(f"{first} vs {second}")
        click.echo(f"  {'agreement':<22}{_fmt(pair['agreement'])}")
        click.echo(f"  {'Cohen kappa':<22}{_fmt(pair['cohen_kappa'])}")
    m = report["majority"]
    click.echo(
        f"human majority: model_a {m['model_a']}, model_b {m['model_b']}, tie {m['tie']}, "
        f"unresolved {m['unresolved']}, unlabelled {m['unlabelled']}"
    )
    for judge, entry in report.get("judges", {}).items():
        click.echo(f"judge {judge} vs human majority")
        click.echo(f"  {'agreement':<22}{_fmt(entry['agreement'])}")
        click.echo(f"  {'Cohen kappa':<22}{_fmt(entry['cohen_kappa'])}")
        if entry["agreement"]["excluded"]:
            click.echo(f"  excluded: {json.dumps(entry['agreement']['excluded'])}")
    if report.get("judgment_rows_unmatched"):
        click.echo(f"{report['judgment_rows_unmatched']} judgment rows match no pair of the collection")
