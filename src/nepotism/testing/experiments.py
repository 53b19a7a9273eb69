"""Experiment files against the loopback stand-in, for tests and fault batteries.

`standin_experiment` writes a small self-preference experiment whose models all point at one
stand-in URL: the file, a registry of the three stand-in models (`STANDIN_MODELS`, as in
``examples/standin_models.toml``) and generated items, all in one folder. Everything a fault test
varies is a keyword.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

__all__ = ["STANDIN_MODELS", "standin_experiment"]

#: The stand-in models and their registry entries (two share a family).
STANDIN_MODELS = """\
[models."standin-alpha"]
family = "standin-a"
series = "standin-a1"
price_input_per_mtok = 1.0
price_output_per_mtok = 4.0

[models."standin-alpha-mini"]
family = "standin-a"
series = "standin-a1"
parent = "standin-alpha"
price_input_per_mtok = 0.2
price_output_per_mtok = 0.8

[models."standin-beta"]
family = "standin-b"
price_input_per_mtok = 0.5
price_output_per_mtok = 1.5
"""


def standin_experiment(
    folder: str | Path,
    url: str,
    *,
    items: int = 3,
    generators: Sequence[str] = ("standin-alpha", "standin-beta"),
    judges: Sequence[str] = ("standin-alpha", "standin-beta"),
    recognition: bool = True,
    conditions: str = '["default"]',
    model_options: str = "",
    timeout: float = 5.0,
    attempts: int = 4,
    concurrency: int = 4,
    retry_base_delay_s: float = 0.01,
    retry_max_delay_s: float = 0.05,
    name: str = "standin",
    output_format: str = "csv",
) -> Path:
    """Write ``folder/exp.toml`` (plus its registry and ``items.jsonl``) and return its path.

    ``model_options`` is TOML appended to every ``[models.X]`` table (``api_key_env = "..."``);
    ``conditions`` is the TOML value of ``judging.conditions``.
    Items are ``items`` generated questions with distinct prompts.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "standin_models.toml").write_text(STANDIN_MODELS, encoding="utf-8")
    rows = [{"id": f"q{i}", "prompt": f"Question {i}: name a prime number above {10 * i}."} for i in range(1, items + 1)]
    (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    models = ""
    for model in sorted(set(generators) | set(judges)):
        models += (
            f'[models.{model}]\nbackend = "openai"\nbase_url = "{url}"\nmodel = "{model}"\n'
            f"concurrency = {concurrency}\ntimeout = {timeout}\nmax_attempts = {attempts}\n"
            f"retry_base_delay_s = {retry_base_delay_s}\nretry_max_delay_s = {retry_max_delay_s}\n"
            f"{model_options}\n"
        )
    protocols = (
        '[[judging.protocols]]\nprotocol = "pairwise"\npairs = "judge-vs-others"\noptions = { mode = "labels", ways = 2 }\n'
    )
    if recognition:
        protocols += '[[judging.protocols]]\nprotocol = "recognition"\n'
    text = f"""[experiment]
name = "{name}"
registry = ["standin_models.toml"]

[dataset]
path = "items.jsonl"

{models}
[generation]
generators = {json.dumps(list(generators))}
max_tokens = 32

[judging]
judges = {json.dumps(list(judges))}
conditions = {conditions}
{protocols}
[output]
dir = "out"
format = "{output_format}"
"""
    path = folder / "exp.toml"
    path.write_text(text, encoding="utf-8")
    return path
