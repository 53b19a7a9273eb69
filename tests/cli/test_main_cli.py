"""The ``nepotism`` group itself: what it does with a failure to load its command modules."""

import os
import subprocess
import sys
from pathlib import Path

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))

# Loading ``nepotism.cli.store`` raises, with a known key in the message: what a broken install or
# a bug at a command module's top level does while the commands are registered.
_BROKEN_COMMAND_MODULE = """
import sys

from nepotism.credentials import Secret


class _BrokenStoreCommand:
    def find_spec(self, name, path=None, target=None):
        if name == "nepotism.cli.store":
            key = Secret("sk-test-0123456789abcdef")  # registered for redaction, as an endpoint's key is
            raise RuntimeError("cannot load the store command (key " + key.reveal() + ")")
        return None


sys.meta_path.insert(0, _BrokenStoreCommand())
"""


def test_a_command_module_that_fails_to_load_is_reported_as_a_bug_with_secrets_redacted(tmp_path):
    """The command modules are loaded when the commands are first looked up, inside the handler
    that reports an unexpected exception (`_common.report_internal_error`): a module that raises
    while loading (here a ``sitecustomize`` on PYTHONPATH breaks ``nepotism.cli.store`` in the
    installed ``nepotism``) gives its traceback with the key redacted, one closing line and exit
    status 70, under ``--help`` and under any command. Before, they were loaded when
    ``nepotism.cli`` was imported, before the handler: Python's traceback, the key shown, exit 1."""
    (tmp_path / "sitecustomize.py").write_text(_BROKEN_COMMAND_MODULE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for args in (["--help"], ["models", "list", "--json"]):
        done = subprocess.run([NEPOTISM, *args], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 70, done.stderr[-2000:]
        assert done.stdout == ""  # no help, no document
        assert done.stderr.startswith("Traceback (most recent call last):")
        assert "RuntimeError: cannot load the store command (key [redacted])" in done.stderr
        assert "sk-test-" not in done.stderr
        assert done.stderr.splitlines()[-1].startswith("error: internal error (RuntimeError): a bug in nepotism")
    # the version needs no command
    done = subprocess.run([NEPOTISM, "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("nepotism, version "), done.stderr


def test_the_commands_are_registered_when_first_looked_at():
    """Importing ``nepotism.cli`` loads no command module; the group's commands, however they are
    looked at (``main.commands``, ``get_command``, ``--help``), are all there."""
    code = (
        "import sys, nepotism.cli as cli\n"
        "assert not [m for m in sys.modules if m.startswith('nepotism.cli.') and m != 'nepotism.cli._common'], "
        "sorted(sys.modules)\n"
        "assert {'run', 'mitigate', 'store', 'models'} <= set(cli.main.commands)\n"
        "assert 'nepotism.cli.store' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
