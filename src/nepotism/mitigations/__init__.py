"""Mitigations of self-preference and their evaluation (papers 000 §5.7-5.8, 001 §6, 002 §3, 003, 004 §4.2).

Each mitigation is a small function or a judging option:

* authorship obfuscation (`synonyms`, `rewrite`, `code_style`): k-word synonym replacement chosen
  by a third-party model or offline WordNet (`wordnet`), paraphrase, judge paraphrase,
  cross-reason, AST code restyling checked for equivalence in the sandbox, and the spurious-feature
  ablations (style / format / wording);
* judge-side options (impartiality instruction, CoT, reasoning models) are judging options, run as
  conditions; excluding the judged model and its relatives, and juries (`juries`: majority,
  weighted, perplexity-weighted), replace a judge's verdict post hoc;
* calibration (`calibration`): auto and contextual, fitted on an explicit held-out split.

`run.run_mitigations` runs an experiment file's ``[mitigate]`` conditions (`config`) and
`analysis` turns the judgments into ``mitigation-effect`` records with paired bootstrap intervals
(`effects`).
"""

from nepotism.mitigations.calibration import apply_bias, calibrate, fit_auto, fit_contextual, split_heldout
from nepotism.mitigations.code_style import restyle_code, restyle_response, verify_equivalent
from nepotism.mitigations.config import KINDS, MitigationConfig, MitigationPlan, load_plan, parse_plan
from nepotism.mitigations.effects import BASE_METRICS, diff_in_diff, paired_effect
from nepotism.mitigations.juries import exclude_related, familiarity_weights, jury_outcomes
from nepotism.mitigations.rewrite import ablation_prompt, cross_reason, judge_paraphrase_prompt, paraphrase_prompt, read_rewrite
from nepotism.mitigations.synonyms import Perturbation, apply_replacements, parse_choice, synonym_prompt, wordnet_choice

__all__ = [
    "BASE_METRICS",
    "KINDS",
    "MitigationConfig",
    "MitigationPlan",
    "Perturbation",
    "ablation_prompt",
    "apply_bias",
    "apply_replacements",
    "calibrate",
    "cross_reason",
    "diff_in_diff",
    "exclude_related",
    "familiarity_weights",
    "fit_auto",
    "fit_contextual",
    "judge_paraphrase_prompt",
    "jury_outcomes",
    "load_plan",
    "paired_effect",
    "paraphrase_prompt",
    "parse_choice",
    "parse_plan",
    "read_rewrite",
    "restyle_code",
    "restyle_response",
    "split_heldout",
    "synonym_prompt",
    "verify_equivalent",
    "wordnet_choice",
]
