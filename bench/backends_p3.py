"""P3: local label verdicts vs generate-then-parse with SmolLM2-135M, on the same 20 prompts.

Each prompt is a pairwise judging chat (a question and two answers, "reply with A or B").
(a) label verdicts: ``GGUFBackend.complete`` with ``labels=("A", "B")`` (one prompt evaluation);
(b) generate-then-parse: greedy generation (up to ``--max-tokens``) and a regex for ``[[A]]`` or
the first standalone A or B. With ``--explain`` the generating judge is asked for a short
explanation before ``[[A]]``/``[[B]]`` (the usual protocol), on the same 20 items. Reported: verdicts/s of each and their ratio (target >= 5x), how many generated
answers could be parsed, and (a) against the bound set by raw prompt evaluation alone (llama.cpp
prompt-eval tokens/s divided by the mean prompt length), i.e. how much the backend adds.

Usage: python bench/backends_p3.py [--max-tokens 64] [--rounds 3] [--threads 2] [--explain]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time

from nepotism.backends.base import Request
from nepotism.backends.gguf import GGUFBackend, _decode, _truncate
from nepotism.records import Message

MODEL = "smollm2-135m-instruct"
_QUESTIONS = [
    ("How many legs does a spider have?", "Eight.", "Six, like all insects."),
    ("What is the boiling point of water at sea level in Celsius?", "100 degrees.", "About 90 degrees."),
    ("Name the largest planet in the solar system.", "Saturn.", "Jupiter."),
    ("What gas do plants take in for photosynthesis?", "Carbon dioxide.", "Oxygen."),
    ("Who wrote the play Hamlet?", "William Shakespeare.", "Charles Dickens."),
    ("What is 7 times 8?", "54.", "56."),
    ("Which ocean is the largest?", "The Pacific Ocean.", "The Indian Ocean."),
    ("What is the chemical symbol for gold?", "Au.", "Ag."),
    ("How many continents are there?", "Seven.", "Five."),
    ("What is the square root of 81?", "9.", "8."),
    ("Which organ pumps blood through the body?", "The lungs.", "The heart."),
    ("What language is mainly spoken in Brazil?", "Spanish.", "Portuguese."),
    ("What is the freezing point of water in Fahrenheit?", "32 degrees.", "0 degrees."),
    ("Which metal is liquid at room temperature?", "Mercury.", "Iron."),
    ("How many sides does a hexagon have?", "Five.", "Six."),
    ("What is the capital of Japan?", "Tokyo.", "Kyoto."),
    ("Which planet is known as the red planet?", "Mars.", "Venus."),
    ("What is the main ingredient of guacamole?", "Avocado.", "Tomato."),
    ("How many minutes are in an hour?", "Sixty.", "One hundred."),
    ("What do bees make?", "Honey.", "Silk."),
]
_SYSTEM = "You are an impartial judge. Compare two answers to a question and reply with A or B."
_EXPLAIN = (
    "You are an impartial judge. Compare two answers to a question: explain your reasoning in "
    "two or three sentences, then end with [[A]] or [[B]]."
)
_VERDICT = re.compile(r"\[\[([AB])\]\]|\b([AB])\b")


def prompts(explain: bool = False) -> list[tuple[Message, ...]]:
    out = []
    for q, a, b in _QUESTIONS:
        ask = "Which answer is better?" + ("" if explain else " Reply with A or B.")
        user = f"Question: {q}\n\nAnswer A: {a}\nAnswer B: {b}\n\n{ask}"
        out.append((Message("system", _EXPLAIN if explain else _SYSTEM), Message("user", user)))
    return out


async def _interleaved(backend: GGUFBackend, chats, gen_chats, max_tokens: int) -> dict:
    """Per prompt: a label verdict, a generated verdict and a raw prompt evaluation, back to back
    (so that load from other processes hits all three alike); wall and CPU seconds per method."""
    backend.load()
    loaded = backend._loaded
    assert loaded is not None
    acc = {k: [0.0, 0.0] for k in ("label", "generate", "raw")}
    label_v: list[str] = []
    gen_v: list[str | None] = []
    generated = n_tokens = 0
    for chat, gen_chat in zip(chats, gen_chats):
        w, c = time.perf_counter(), time.process_time()
        lab = await backend.complete(Request(MODEL, messages=chat, labels=("A", "B")))
        acc["label"][0] += time.perf_counter() - w
        acc["label"][1] += time.process_time() - c
        assert lab.ok, lab.error
        label_v.append(max(lab.label_logprobs, key=lab.label_logprobs.get))
        w, c = time.perf_counter(), time.process_time()
        gen = await backend.complete(Request(MODEL, messages=gen_chat, max_tokens=max_tokens))
        m = _VERDICT.search(gen.text or "")
        acc["generate"][0] += time.perf_counter() - w
        acc["generate"][1] += time.process_time() - c
        assert gen.ok, gen.error
        gen_v.append((m.group(1) or m.group(2)) if m else None)
        generated += gen.usage.get("completion_tokens", 0)
        tokens = backend._prompt_tokens(loaded, Request(MODEL, messages=chat))
        n_tokens += len(tokens)
        w, c = time.perf_counter(), time.process_time()
        _truncate(loaded.llm, 0)
        _decode(loaded.llm, tokens, loaded.n_vocab, all_rows=False)  # llama.cpp alone: the bound
        acc["raw"][0] += time.perf_counter() - w
        acc["raw"][1] += time.process_time() - c
    return {"acc": acc, "label_v": label_v, "gen_v": gen_v, "generated": generated, "n_tokens": n_tokens}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--explain",
        action="store_true",
        help="generate-then-parse asks for a short explanation before [[A]]/[[B]] "
        "(the usual judge protocol); label verdicts keep the direct prompt",
    )
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (use 1 on a machine busy with other work)")
    args = parser.parse_args()
    chats = prompts()
    backend = GGUFBackend(MODEL, n_ctx=1024, n_threads=args.threads)
    backend.load()
    gen_chats = prompts(explain=True) if args.explain else chats
    asyncio.run(_interleaved(backend, chats[:2], gen_chats[:2], 8))  # warm-up
    runs = [asyncio.run(_interleaved(backend, chats, gen_chats, args.max_tokens)) for _ in range(args.rounds)]
    n = len(chats)
    mid = len(runs) // 2

    def rate(method: str, col: int) -> float:
        return n / sorted(r["acc"][method][col] for r in runs)[mid]

    last = runs[-1]
    n_tokens = last["n_tokens"]
    print(
        f"SmolLM2-135M Q4_1, n_threads={args.threads}, {n} prompts (mean {n_tokens / n:.0f} prompt "
        f"tokens), generation max {args.max_tokens} tokens{' with explanation' if args.explain else ''}, "
        f"rounds={args.rounds} (medians)"
    )
    print(f"{'method':<32}{'verdicts/s wall':>16}{'ratio':>7}{'verdicts/CPU-s':>16}{'ratio':>7}")
    for label, method in (
        ("label verdicts (GGUFBackend)", "label"),
        ("generate-then-parse", "generate"),
        ("bound: prompt eval only", "raw"),
    ):
        w, c = rate(method, 0), rate(method, 1)
        print(f"{label:<32}{w:>16.2f}{w / rate('generate', 0):>7.2f}{c:>16.2f}{c / rate('generate', 1):>7.2f}")
    print(
        f"prompt eval: {n_tokens * rate('raw', 0) / n:.0f} tokens/s wall; label verdicts reach "
        f"{rate('label', 0) / rate('raw', 0):.2f} (wall) / {rate('label', 1) / rate('raw', 1):.2f} (CPU) "
        "of the bound"
    )
    parsed = sum(v is not None for v in last["gen_v"])
    agree = sum(a == b for a, b in zip(last["label_v"], last["gen_v"]))
    print(
        f"generate-then-parse: {last['generated'] / n:.1f} tokens generated per prompt, {parsed}/{n} "
        f"parsed, {agree}/{n} agree with the label verdict"
    )


if __name__ == "__main__":
    main()
