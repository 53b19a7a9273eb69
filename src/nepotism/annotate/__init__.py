"""Human pairwise labels: choose pairs, label them in a local web app, export and check them.

* `pairs`: read the pairs to label (a pairs file, or recorded judgments plus a texts file);
* `sampling`: draw the pairs where human time changes conclusions (judge disagreement,
  suspected self-preference) or a uniform sample;
* `app` / `server`: the keyboard-driven web app (Starlette; installed with the ``annotate``
  extra) and how to run it;
* `export`: majority-vote references and per-annotator label files;
* `agreement` / `report`: pairwise agreement, Cohen's and Fleiss' kappa, Krippendorff's alpha
  and judge-versus-human agreement, with cluster-bootstrap intervals.

Labels live in the nepotism store (tables ``annotation_items``, ``annotation_orders``,
``annotation_labels``; see `nepotism.store.annotations`). The web modules are imported lazily so
that the rest works without the ``annotate`` extra.
"""

from __future__ import annotations

from nepotism.annotate.agreement import (
    category_counts,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    pair_agreement,
    percent_agreement,
)
from nepotism.annotate.export import majority, majority_frame, write_exports
from nepotism.annotate.pairs import load_pairs, write_pairs
from nepotism.annotate.report import agreement_report
from nepotism.annotate.sampling import STRATEGIES, sample_items

__all__ = [
    "STRATEGIES",
    "agreement_report",
    "category_counts",
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "load_pairs",
    "majority",
    "majority_frame",
    "pair_agreement",
    "percent_agreement",
    "sample_items",
    "write_exports",
    "write_pairs",
]
