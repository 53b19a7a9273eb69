"""Batch files: `nepotism run --batch-out` writes OpenAI Batch-API requests and calls nothing;
`--batch-in` stores the results and finishes the run from the store, with the judgments of a live
run and 0 live calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from nepotism.errors import InputError
from nepotism.experiment import load_experiment
from nepotism.runner.batch import plan_round, read_results, write_batch
from nepotism.runner.calls import request_key
from nepotism.store import Store
from nepotism.testing.experiments import standin_experiment
from nepotism.testing.standin import StandinConfig, standin_thread

NEPOTISM = str(Path(sys.executable).with_name("nepotism"))
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: any live call would fail


def nep(*args: str, cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([NEPOTISM, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, f"nepotism {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def answer_batch(folder: Path, url: str, out: Path, *, fail: set[str] = frozenset()) -> int:
    """What a batch provider does: answer every request line of the ``.jsonl`` files in ``folder``
    by sending its body to the stand-in at ``url``; write OpenAI batch output lines to ``out``.
    ``fail``: custom ids answered with a per-request error instead."""
    root = url.removesuffix("/v1")
    lines = []
    for path in sorted(folder.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines()):
            request = json.loads(line)
            assert request["method"] == "POST" and request["url"].startswith("/v1/")
            if request["custom_id"] in fail:
                lines.append(
                    {
                        "id": f"batch_req_{n}",
                        "custom_id": request["custom_id"],
                        "response": None,
                        "error": {"code": "batch_expired", "message": "This request could not be executed"},
                    }
                )
                continue
            answer = httpx.post(root + request["url"], json=request["body"], timeout=30)
            lines.append(
                {
                    "id": f"batch_req_{n}",
                    "custom_id": request["custom_id"],
                    "response": {"status_code": answer.status_code, "request_id": f"req_{n}", "body": answer.json()},
                    "error": None,
                }
            )
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return len(lines)


def test_batch_rounds_give_the_judgments_of_a_live_run_with_no_live_call(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, server):
        live_dir, batch_dir = tmp_path / "live", tmp_path / "batch"
        live = standin_experiment(live_dir, url, items=6)
        nep("run", str(live), "--store", "live.db", "--no-progress", cwd=live_dir)
        exp = standin_experiment(batch_dir, DEAD, items=6)
        before = server.stats["requests"]
        # round 1: the generation requests; nothing is called, the store gets no call
        first = json.loads(nep("run", str(exp), "--store", "b.db", "--batch-out", "round1", "--json", cwd=batch_dir).stdout)
        assert first["phase"] == "generate" and first["batch"]["requests"] == 12
        assert server.stats["requests"] == before
        assert answer_batch(batch_dir / "round1", url, batch_dir / "out1.jsonl") == 12
        # results in, the judge round out (one command)
        second = json.loads(
            nep(
                "run", str(exp), "--store", "b.db", "--batch-in", "out1.jsonl", "--batch-out", "round2", "--json", cwd=batch_dir
            ).stdout
        )
        assert second["stored"] == {"ok": 12, "failed": 0, "already": 0}
        assert second["phase"] == "judge" and second["batch"]["requests"] > 0
        manifest = json.loads((batch_dir / "round2" / "batch.json").read_text())
        assert {f["model"] for f in manifest["files"]} == {"standin-alpha", "standin-beta"}
        answer_batch(batch_dir / "round2", url, batch_dir / "out2.jsonl")
        served = server.stats["requests"]
    # the stand-in is gone: the run finishes from the store alone
    done = json.loads(
        nep("run", str(exp), "--store", "b.db", "--batch-in", "out2.jsonl", "--no-progress", "--json", cwd=batch_dir).stdout
    )
    assert done["status"] == "done"
    assert done["judging"]["sent"] == done["generation"]["sent"] == 0 and done["judging"]["failed"] == 0
    assert served - before == 12 + manifest["requests"]  # only the helper asked the stand-in
    for table in ("pairwise", "recognition"):
        assert (batch_dir / "out" / f"{table}.csv").read_bytes() == (live_dir / "out" / f"{table}.csv").read_bytes()
    # the same results read twice store nothing new
    again = json.loads(
        nep("run", str(exp), "--store", "b.db", "--batch-in", "out2.jsonl", "--no-progress", "--json", cwd=batch_dir).stdout
    )
    assert again["judging"]["sent"] == 0


def test_custom_ids_are_the_runners_cache_keys(tmp_path):
    exp = load_experiment(standin_experiment(tmp_path, DEAD, items=2))
    with Store(tmp_path / "s.db") as store:
        round_ = plan_round(exp, store)
        manifest = write_batch(exp, round_, tmp_path / "b")
        by_key = {c.key: c for calls in round_.chunks() for c in calls}
    lines = [json.loads(x) for f in manifest["files"] for x in (tmp_path / "b" / f["file"]).read_text().splitlines()]
    assert len(lines) == len(by_key) == manifest["requests"] == round_.to_send  # a fresh store: every call
    for line in lines:
        call = by_key[line["custom_id"]]
        assert line["custom_id"] == request_key(round_.endpoints[call.model], call.request, call.replicate)
        assert line["body"]["model"] == call.model and line["body"]["messages"][0]["content"] == call.request.messages[0].content


def test_files_split_at_the_request_and_byte_limits(tmp_path):
    exp = load_experiment(standin_experiment(tmp_path, DEAD, items=7, generators=("standin-alpha",)))
    with Store(tmp_path / "s.db") as store:
        round_ = plan_round(exp, store)
        by_count = write_batch(exp, round_, tmp_path / "n", max_requests=3)
        one = len((tmp_path / "n" / by_count["files"][0]["file"]).read_bytes().splitlines()[0]) + 1
        by_size = write_batch(exp, round_, tmp_path / "s", max_bytes=2 * one + 10)
    assert [f["requests"] for f in by_count["files"]] == [3, 3, 1]
    assert all(f["bytes"] <= 2 * one + 10 for f in by_size["files"]) and sum(f["requests"] for f in by_size["files"]) == 7
    with pytest.raises(InputError):  # a second round into the same folder is refused
        write_batch(exp, round_, tmp_path / "n")


def _results(tmp_path: Path, url: str = DEAD) -> tuple[Path, Path, list[dict]]:
    exp = standin_experiment(tmp_path, url, items=2, generators=("standin-alpha",))
    nep("run", str(exp), "--store", "s.db", "--batch-out", "b", cwd=tmp_path)
    lines = [json.loads(x) for f in sorted((tmp_path / "b").glob("*.jsonl")) for x in f.read_text().splitlines()]
    body = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "17"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    }
    out = [{"custom_id": x["custom_id"], "response": {"status_code": 200, "body": body}, "error": None} for x in lines]
    return exp, tmp_path / "s.db", out


@pytest.mark.parametrize(
    "fault, where",
    [
        ("unknown", "line 2"),
        ("duplicate", "line 3"),
        ("not-json", "line 1"),
        ("no-response", "line 1"),
        ("not-utf8", "line 2"),
        ("not-hex", "line 1"),
    ],
)
def test_bad_result_files_are_refused_naming_file_and_line_and_store_nothing(tmp_path, fault, where):
    exp, db, out = _results(tmp_path)
    if fault == "unknown":
        out[1]["custom_id"] = "f" * 64
    elif fault == "duplicate":
        out.append(dict(out[0]))
    elif fault == "no-response":
        out[0]["response"] = None
    elif fault == "not-hex":
        out[0]["custom_id"] = out[0]["custom_id"].upper()
    text = "".join(json.dumps(x) + "\n" for x in out)
    if fault == "not-json":
        text = "{oops\n" + text
    data = text.encode()
    if fault == "not-utf8":
        lines = data.splitlines(keepends=True)
        data = lines[0] + lines[1].replace(b'"body"', b'"b\xff"') + b"".join(lines[2:])
    (tmp_path / "r.jsonl").write_bytes(data)
    done = nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", cwd=tmp_path, expect=2)
    assert "r.jsonl" in done.stderr and where in done.stderr and len(done.stderr.strip().splitlines()) == 1
    if fault == "duplicate":
        assert "first in r.jsonl line 1" in done.stderr
    with Store(db) as store:
        assert store.info()["counts"]["calls"] == 0


def test_result_files_with_a_byte_order_mark_and_windows_line_ends_are_read(tmp_path):
    exp, db, out = _results(tmp_path)
    (tmp_path / "r.jsonl").write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(x) + "\r\n\r\n" for x in out).encode())
    report = json.loads(nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", "--json", cwd=tmp_path).stdout)
    assert report["stored"] == {"ok": 2, "failed": 0, "already": 0}
    with Store(db) as store:
        assert {c.text for c in store.get_calls([x["custom_id"] for x in out]).values()} == {"17"}


def test_per_request_errors_are_stored_as_failures_and_sent_again_next_round(tmp_path):
    exp, db, out = _results(tmp_path)
    out[0] = {"custom_id": out[0]["custom_id"], "response": None, "error": {"code": "batch_expired", "message": "expired"}}
    out[1]["response"] = {"status_code": 500, "body": {"error": {"message": "overloaded"}}}
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
    report = json.loads(
        nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", "--batch-out", "b2", "--json", cwd=tmp_path).stdout
    )
    assert report["stored"] == {"ok": 0, "failed": 2, "already": 0}
    with Store(db) as store:
        calls = store.get_calls([x["custom_id"] for x in out])
    assert calls[out[0]["custom_id"]].error == "batch_error:batch_expired: expired"
    assert calls[out[1]["custom_id"]].error.startswith("http_5xx:500")
    # every generation call has a stored answer (failed): the next round holds the failures again
    assert report["phase"] == "judge" and report["to_send"] == 2
    sent_again = {json.loads(x)["custom_id"] for f in (tmp_path / "b2").glob("*.jsonl") for x in f.read_text().splitlines()}
    assert sent_again == {x["custom_id"] for x in out}
    # finished offline, the failures stay failures: exit 3 names them, nothing was sent
    done = nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", "--no-progress", "--json", cwd=tmp_path, expect=3)
    summary = json.loads(done.stdout)
    assert summary["generation"]["failed"] == 2 and summary["generation"]["sent"] == 0
    # the judgments the two missing answers prevented are exported as failed rows with the reason
    assert summary["prevented"] == {"generation:batch_error:batch_expired": 2, "generation:http_5xx:500": 2}
    rows = (tmp_path / "out" / "recognition.csv").read_text().splitlines()[1:]
    assert len(rows) == 4 and all(",failed,generation:" in row for row in rows)


def test_read_results_names_a_missing_file(tmp_path):
    exp = load_experiment(standin_experiment(tmp_path, DEAD, items=1))
    with Store(tmp_path / "s.db") as store:
        with pytest.raises(InputError) as err:
            read_results(plan_round(exp, store), [tmp_path / "nope.jsonl"])
    assert "nope.jsonl" in str(err.value)


def test_results_of_the_first_round_say_the_next_round_is_missing(tmp_path):
    exp, db, out = _results(tmp_path)
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
    report = json.loads(nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", "--json", cwd=tmp_path).stdout)
    assert report["stored"]["ok"] == 2 and report["phase"] == "judge" and report["missing"] > 0
    plain = nep("run", str(exp), "--store", "s.db", "--batch-in", "r.jsonl", cwd=tmp_path).stdout
    assert "2 were stored already" in plain and "--batch-out" in plain
    with Store(db) as store:
        assert store.info()["counts"]["judgments"] == 0 and store.runs() == []  # no run was started


def _with_perplexity(exp: Path, prompt: str = "auto") -> Path:
    exp.write_text(exp.read_text() + f'\n[perplexity]\nresponses = "all"\nprompt = "{prompt}"\n')
    return exp


def test_perplexity_calls_go_in_the_judge_round_and_give_the_live_runs_scores(tmp_path):
    with standin_thread(StandinConfig(latency_s=0.0)) as (url, server):
        live_dir, batch_dir = tmp_path / "live", tmp_path / "batch"
        live = _with_perplexity(standin_experiment(live_dir, url, items=3, recognition=False))
        nep("run", str(live), "--store", "live.db", "--no-progress", cwd=live_dir)
        exp = _with_perplexity(standin_experiment(batch_dir, DEAD, items=3, recognition=False))
        first = json.loads(nep("run", str(exp), "--store", "b.db", "--batch-out", "round1", "--json", cwd=batch_dir).stdout)
        assert first["phase"] == "generate" and first["batch"]["requests"] == 6
        answer_batch(batch_dir / "round1", url, batch_dir / "out1.jsonl")
        second = json.loads(
            nep(
                "run", str(exp), "--store", "b.db", "--batch-in", "out1.jsonl", "--batch-out", "round2", "--json", cwd=batch_dir
            ).stdout
        )
        files = second["batch"]["files"]
        # 2 scorers x 3 items x 2 answers continuation calls, one completions file per model
        scoring = [f for f in files if f["url"] == "/v1/completions"]
        assert sorted((f["model"], f["requests"]) for f in scoring) == [("standin-alpha", 6), ("standin-beta", 6)]
        lines = [json.loads(x) for f in scoring for x in (batch_dir / "round2" / f["file"]).read_text().splitlines()]
        assert all(x["body"]["echo"] is True and x["body"]["logprobs"] == 1 and x["body"]["max_tokens"] == 1 for x in lines)
        answer_batch(batch_dir / "round2", url, batch_dir / "out2.jsonl")
    done = json.loads(
        nep("run", str(exp), "--store", "b.db", "--batch-in", "out2.jsonl", "--no-progress", "--json", cwd=batch_dir).stdout
    )
    assert done["perplexity"]["sent"] == 0 and done["perplexity"]["scores"] == {"ok": 12}
    for table in ("perplexity", "pairwise"):  # pairwise carries perplexity_a / _b
        assert (batch_dir / "out" / f"{table}.csv").read_bytes() == (live_dir / "out" / f"{table}.csv").read_bytes()


def test_results_stored_half_way_are_finished_by_reading_the_same_files_again(tmp_path, monkeypatch):
    """`store_results` commits a few calls at a time: stopped after the first commit, the same
    files read again keep what was stored ("already") and store the rest."""
    import nepotism.runner.batch as batch

    exp, db, out = _results(tmp_path)
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
    monkeypatch.setattr(batch, "_STORE_EVERY", 1)
    experiment = load_experiment(exp)
    with Store(db) as store:
        real, commits = store.put_calls, []

        def stopped_after_one(records, **kwargs):
            if commits:
                raise KeyboardInterrupt
            commits.append(len(records))
            return real(records, **kwargs)

        monkeypatch.setattr(store, "put_calls", stopped_after_one)
        with pytest.raises(KeyboardInterrupt):
            batch.store_results(store, read_results(plan_round(experiment, store), [tmp_path / "r.jsonl"]))
        assert commits == [1] and store.info()["counts"]["calls"] == 1
        monkeypatch.setattr(store, "put_calls", real)
        again = batch.store_results(store, read_results(plan_round(experiment, store), [tmp_path / "r.jsonl"]))
    assert again == {"ok": 1, "failed": 0, "already": 1}
