"""Time the store's call cache: 100k `put_call` (and `put_calls`), then 100k lookups.

Usage: ``python bench/store_cache.py [N] [--keep PATH]``. Writes to a temporary file (removed at
the end unless ``--keep`` is given) and prints calls per second for each phase. Nothing here is
asserted: the tests never check wall-clock times.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from nepotism.store import Store


def _requests(n: int):
    for i in range(n):
        messages = [
            {"role": "system", "content": "You compare two answers and say which is better."},
            {"role": "user", "content": f"Question {i}: ... Answer A: ... Answer B: ..."},
        ]
        params = {"temperature": 0.0, "max_tokens": 8, "logprobs": True, "top_logprobs": 5}
        yield (
            Store.call_key(backend="openai", model="judge", parameters=params, messages=messages),
            {
                "backend": "openai",
                "model": "judge",
                "parameters": params,
                "messages": messages,
            },
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=int, default=100_000)
    parser.add_argument("--keep", type=Path, default=None, help="store file to write and keep")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "bench.db"
        with Store(path) as store:
            start = time.perf_counter()
            items = list(_requests(args.n))
            keyed = time.perf_counter() - start
            print(f"call_key      {args.n / keyed:>12,.0f} keys/s")

            start = time.perf_counter()
            for key, request in items:
                store.put_call(
                    key,
                    request=request,
                    response={"choices": [{"text": "A"}]},
                    text="A",
                    logprobs=[{"token": "A", "logprob": -0.1}],
                    usage={"total_tokens": 40},
                    latency_s=0.1,
                )
            put = time.perf_counter() - start
            print(f"put_call      {args.n / put:>12,.0f} calls/s  ({put:.2f} s)")

            with Store(Path(tmp) / "batched.db") as other:
                start = time.perf_counter()
                for i in range(0, len(items), 1000):
                    other.put_calls(
                        {
                            "key": key,
                            "request": request,
                            "response": {"choices": [{"text": "A"}]},
                            "text": "A",
                            "usage": {"total_tokens": 40},
                            "latency_s": 0.1,
                        }
                        for key, request in items[i : i + 1000]
                    )
                batch_put = time.perf_counter() - start
            print(f"put_calls     {args.n / batch_put:>12,.0f} calls/s  ({batch_put:.2f} s, batches of 1000)")

            keys = [key for key, _ in items]
            start = time.perf_counter()
            found = {}
            for i in range(0, len(keys), 1000):
                found.update(store.get_calls(keys[i : i + 1000]))
            batched = time.perf_counter() - start
            assert len(found) == args.n
            print(f"get_calls     {args.n / batched:>12,.0f} calls/s  ({batched:.2f} s, batches of 1000)")

            start = time.perf_counter()
            hits = sum(store.get_call(key) is not None for key in keys)
            single = time.perf_counter() - start
            assert hits == args.n
            print(f"get_call      {args.n / single:>12,.0f} calls/s  ({single:.2f} s)")
            print(f"file size     {path.stat().st_size / 1e6:>12,.1f} MB")


if __name__ == "__main__":
    main()
