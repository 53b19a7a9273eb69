"""Every public module declares `__all__`, and every name in it exists."""

import importlib
import pkgutil

import pytest

import nepotism

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(nepotism.__path__, prefix="nepotism.")
    if not any(part.startswith("_") for part in info.name.split(".")[1:])
    and not info.name.startswith("nepotism.cli.")
)


@pytest.mark.parametrize("name", MODULES)
def test_module_declares_all_and_names_exist(name):
    try:
        module = importlib.import_module(name)
    except ImportError as err:  # optional extras (llama-cpp, ...) may be absent
        pytest.skip(f"optional dependency missing: {err}")
    if name.endswith("__main__"):
        return
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    for public in module.__all__:
        assert hasattr(module, public), f"{name}.__all__ names missing {public}"


def test_top_level_api():
    assert set(nepotism.__all__) >= {"Instance", "Judgment", "Reference", "Response", "InputError"}
