"""docs/api.md is executed: every example in it prints what the page says."""

import doctest
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_api_page_examples_run():
    result = doctest.testfile(str(PAGE), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 12 and result.failed == 0
