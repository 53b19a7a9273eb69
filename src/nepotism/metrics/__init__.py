"""The metric library: every self-preference / preference-leakage metric of the five papers.

Each metric is a pure function on numpy arrays returning an `Estimate` (value, seeded cluster-
bootstrap interval over instances, n, exclusions), resampled as one `Bootstrap` settings object
says; `cluster_sums` and `cluster_bootstrap` (module `bootstrap`) are public so that a user can
add a metric the same way. `catalogue.METRICS` lists the public ids with
their formula, paper and variants. Modules: `pairwise` (win rate, self-preference ratio,
demographic parity), `leakage` (preference leakage score, error bias, ranking difference),
`reference` (equal opportunity, perplexity, judge accuracy and 004's ratios), `rubric` (002's
overestimation, HSPP ratio, MIPA, MRA, score delta), `recognition`, `stats` (classical tests).
Reading tables and choosing which rows a metric sees is `nepotism.analyses.suite`'s job.
"""

from nepotism.metrics._estimate import Estimate
from nepotism.metrics.bootstrap import Bootstrap, cluster_bootstrap, cluster_sums
from nepotism.metrics.catalogue import METRICS, MetricInfo, metric

__all__ = ["METRICS", "Bootstrap", "Estimate", "MetricInfo", "cluster_bootstrap", "cluster_sums", "metric"]
