"""Agreement statistics between humans and judges, in the style of ``sklearn.metrics``.

Label order is explicit everywhere (``("retained", "lost", "contradicted")`` by default);
missing labels (``None``) are dropped pairwise and counted, never made a category. κ comes with
a percentile bootstrap CI; the human ceiling and judge-vs-each-human comparison keep the judge
honest; :func:`compare_judges` says whether one judge is really better than another.
:func:`multi_rater_agreement` gives Gwet's many-rater coefficients (Fleiss, AC1/AC2, Conger,
Brennan–Prediger, α) with their standard errors, as irrCAC computes them from raw ratings.
:func:`ppi_mean` turns a judge's scores plus a random sample of human labels into a mean with a
confidence interval (PPI++), beside :func:`human_mean` and :func:`judge_mean`;
:func:`plan_labels` says how many labels a wanted width needs.
scikit-learn, scipy and krippendorff are imported only inside the functions that use them.
"""

from maev_kit.agreement._coefficients import (
    AgreementCoefficient,
    MultiRaterAgreement,
    multi_rater_agreement,
)
from maev_kit.agreement._compare import (
    JudgeComparison,
    bowker_test,
    compare_judges,
    holm,
    mcnemar_chi2,
    mcnemar_exact,
    stuart_maxwell,
)
from maev_kit.agreement._kappa import cohen_kappa, gwet_ac1
from maev_kit.agreement._labels import LABELS
from maev_kit.agreement._multi import (
    HumanCeiling,
    JudgeVsHumans,
    fleiss_kappa,
    human_ceiling,
    judge_vs_humans,
    krippendorff_alpha,
    majority_labels,
    mean_pairwise_kappa,
)
from maev_kit.agreement._ppi import (
    MIN_LABELS_FOR_INTERVAL,
    Estimate,
    LabelPlan,
    human_mean,
    human_share,
    judge_mean,
    plan_labels,
    ppi_mean,
)
from maev_kit.agreement._report import AgreementReport, agreement_report, ci_label, landis_koch
from maev_kit.agreement._sample_size import labels_needed

__all__ = [
    "LABELS",
    "MIN_LABELS_FOR_INTERVAL",
    "AgreementCoefficient",
    "AgreementReport",
    "Estimate",
    "HumanCeiling",
    "JudgeComparison",
    "JudgeVsHumans",
    "LabelPlan",
    "MultiRaterAgreement",
    "agreement_report",
    "bowker_test",
    "ci_label",
    "cohen_kappa",
    "compare_judges",
    "fleiss_kappa",
    "gwet_ac1",
    "holm",
    "human_ceiling",
    "human_mean",
    "human_share",
    "judge_mean",
    "judge_vs_humans",
    "krippendorff_alpha",
    "labels_needed",
    "landis_koch",
    "majority_labels",
    "mcnemar_chi2",
    "mcnemar_exact",
    "mean_pairwise_kappa",
    "multi_rater_agreement",
    "plan_labels",
    "ppi_mean",
    "stuart_maxwell",
]
