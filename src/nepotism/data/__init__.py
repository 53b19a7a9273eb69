"""Small, licence-clean data bundled with nepotism (see ATTRIBUTION.md in this folder).

`demo_judgments()` is the path of the recorded AlpacaEval judgments the demo audits.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["ATTRIBUTION", "demo_judgments", "live_experiment"]

ATTRIBUTION = (
    "Judgments: AlpacaEval (Li, Zhang, Dubois et al., tatsu-lab/alpaca_eval @ cd543a1), annotations by "
    "the GPT-4 and Claude annotators, data under CC BY-NC 4.0 (non-commercial use); converted to the "
    "nepotism recorded format without the response texts. See ATTRIBUTION.md in nepotism/data."
)


def demo_judgments() -> Path:
    """Path of the bundled AlpacaEval pairwise judgments (recorded format, Parquet)."""
    return Path(str(resources.files(__name__) / "alpaca_eval_judgments.parquet"))


def live_experiment() -> Path:
    """Path of the experiment file `nepotism demo --live` runs (items written for nepotism)."""
    return Path(str(resources.files(__name__) / "live" / "self_preference.toml"))
