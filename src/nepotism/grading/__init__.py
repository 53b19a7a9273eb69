"""Ground-truth graders: decide from the task itself whether a response is right.

Math final answers (`grade_math`), multiple-choice letters (`grade_multiple_choice`), code run
against its tests in the sandbox (`grade_code`), IFEval instructions as rubric items
(`grade_ifeval`, `ifeval_rubric_items`), and a jury of judges voting a reference (`pairwise_jury`,
`rubric_jury`). Every grader returns "ungradable" (None) rather than a silent False. This package
does no judging with models and reads no files; ``nepotism grade`` is its command line.
"""

from nepotism.grading._result import GradeResult
from nepotism.grading.code import grade_code
from nepotism.grading.ifeval import grade_ifeval, ifeval_rubric_items
from nepotism.grading.jury import JuryResult, pairwise_jury, rubric_jury
from nepotism.grading.math import grade_math
from nepotism.grading.multiple_choice import grade_multiple_choice

__all__ = [
    "GradeResult",
    "JuryResult",
    "grade_code",
    "grade_ifeval",
    "grade_math",
    "grade_multiple_choice",
    "ifeval_rubric_items",
    "pairwise_jury",
    "rubric_jury",
]
