"""Preference leakage end to end (paper 000): synthetic data, students, judges, PLS, analyses.

* `pools`: instruction pools and the evaluation/training overlap refusal.
* `exports`: synthetic data in TRL and LLaMA-Factory formats.
* `lineage`: `Student` records and the generated registry file (``teachers = [generator]``).
* `students`: ICL prompts, data mixing, DPO pairs from a generator's pairwise feedback.
* `training`: SFT/DPO LoRA students with TRL + PEFT (the ``train`` extra; imported lazily).
* `scores`: PLS and win rates per generator pair; `recognition`, `categories`: the analyses.
* `audit`: the leaderboard leakage audit (no training).
* `config`, `pipeline`: the experiment file and `run_leakage`; `report`: text tables.

Heavy libraries (torch, transformers, scikit-learn) are imported only by the functions that use
them.
"""

from nepotism.leakage.audit import audit_leaderboard, format_audit
from nepotism.leakage.config import LeakageConfig, load_leakage
from nepotism.leakage.exports import FORMATS, PreferencePair, SyntheticExample, export_dataset
from nepotism.leakage.lineage import Student, registry_with_students, student_id, write_student_registry
from nepotism.leakage.pools import PoolItem, check_disjoint, load_pool, normalise_text
from nepotism.leakage.report import pls_table
from nepotism.leakage.scores import comparisons_frame, pls_records

__all__ = [
    "FORMATS",
    "LeakageConfig",
    "PoolItem",
    "PreferencePair",
    "Student",
    "SyntheticExample",
    "audit_leaderboard",
    "check_disjoint",
    "comparisons_frame",
    "export_dataset",
    "format_audit",
    "load_leakage",
    "load_pool",
    "normalise_text",
    "pls_records",
    "pls_table",
    "registry_with_students",
    "student_id",
    "write_student_registry",
]
