"""The public surface of nepotism.grading."""

import nepotism.grading as grading


def test_all_is_exported_and_importable():
    assert set(grading.__all__) == {
        "GradeResult",
        "JuryResult",
        "grade_code",
        "grade_ifeval",
        "grade_math",
        "grade_multiple_choice",
        "ifeval_rubric_items",
        "pairwise_jury",
        "rubric_jury",
    }
    for name in grading.__all__:
        assert getattr(grading, name) is not None


def test_grade_result_gradable():
    assert grading.GradeResult(False, "1", "hash").gradable
    assert not grading.GradeResult(None, None, None).gradable
