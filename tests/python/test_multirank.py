"""Multi-rank for real, on this CPU: a 4-process torchrun DDP job (examples/python/train_ddp.py over
gloo) with and without a slow rank, checked live (rank 0's `xrank` view) and afterwards
(`vxperf report` over the rank files); then the view's bad inputs (a rank that hangs or dies,
the variable set on one rank only, two processes claiming one rank) over small jobs started one
process per rank. Every run is bounded in steps and time; only loopback is used."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import CLI, HERE, REPO, clean_env, read_records

TRAIN_DDP = os.path.join(REPO, "examples", "python", "train_ddp.py")
WORKER = os.path.join(HERE, "xrank_worker.py")
RANKS = 4
STEPS, EVERY, WARMUP = 60, 20, 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(records, *args, **settings):
    """The DDP example on RANKS processes; returns the CompletedProcess. The rendezvous takes a
    free port (--standalone's fixed 29400 would join two runs that overlap)."""
    env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=EVERY, VIDEOX_PERF_WARMUP=WARMUP,
                    VIDEOX_PERF_JSON=records, VIDEOX_PERF_XRANK=1, OMP_NUM_THREADS=1, **settings)
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
               str(RANKS), "--rdzv_backend", "c10d", "--rdzv_endpoint",
               f"127.0.0.1:{free_port()}", "--redirects", "1", "--tee", "1", TRAIN_DDP,
               "--steps", str(STEPS), "--dim", "128", "--layers", "4", "--timeout", "120", *args]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def rank_files(records):
    files = sorted(str(p) for p in records.parent.glob(records.name + ".rank*"))
    assert files == [f"{records}.rank{r}" for r in range(RANKS)]  # one file per rank
    return files


LEDGER_PARTS = ("startup_s", "setup_s", "productive_s", "first_step_excess_s",
                "slow_step_excess_s", "data_wait_s", "save_s", "restore_s", "eval_s",
                "between_steps_s", "lost_progress_s", "between_attempts_s")


def ledger_parts(ledger):
    return sum(ledger.get(part, 0.0) for part in LEDGER_PARTS)


def check_end(records, rank):
    """The training's final record: one, after the last window, its ledger the last window's
    carried on to the end (the parts still the wall)."""
    assert [r["kind"] for r in records].count("train_end") == 1
    end, last = records[-1], records[-2]
    assert end["kind"] == "train_end" and last["kind"] == "train_window"
    assert end["rank"] == rank and end["world_size"] == RANKS
    assert (end["step_first"], end["step_last"], end["steps"]) == (0, STEPS - 1, STEPS)
    ledger = end["ledger"]
    assert ledger["steps"] == STEPS == last["ledger"]["steps"]
    assert ledger_parts(ledger) == pytest.approx(ledger["wall_s"], abs=1e-9)
    assert end["after_last_step_s"] >= 0
    assert ledger["wall_s"] == pytest.approx(last["ledger"]["wall_s"] + end["after_last_step_s"],
                                             abs=1e-6)
    assert ledger["productive_s"] == last["ledger"]["productive_s"]


def check_windows(files):
    """Every record a valid window of its rank, the same windows on every rank, and each rank's
    final record after them."""
    spans = None
    for rank, path in enumerate(files):
        records = read_records(path, ends=True)
        check_end(records, rank)
        windows = records[:-1]
        for w in windows:
            assert w["kind"] == "train_window" and w["rank"] == rank and w["world_size"] == RANKS
            assert w["steps"] > 0 and 0 < w["step_s_p50"] <= w["step_s_p95"]
            assert {"data", "fwd", "bwd", "opt"} <= set(w["phases_s"])
            assert all(v >= 0 for v in w["phases_s"].values())
            assert w["micro_steps"] == 2.0 and w["throughput"]["dp"] == RANKS
            assert ("xrank" in w) == (rank == 0 and w["step_last"] - w["step_first"] + 1 == EVERY)
        got = [(w["step_first"], w["step_last"]) for w in windows]
        assert spans is None or got == spans
        spans = got
    assert spans == [(0, 19), (20, 39), (40, 59)]
    report = subprocess.run([CLI, "report", "--json", *files], capture_output=True, text=True)
    assert report.returncode == 0 and report.stderr == "", report.stderr
    return json.loads(report.stdout)


def live_views(files):
    return [w["xrank"] for w in read_records(files[0]) if "xrank" in w]


def assert_live_view_is_the_rule_over_the_files(files, tmp_path):
    """Rank 0's live verdict for a window is `vxperf report`'s over that window's records."""
    per_rank = [read_records(path) for path in files]
    for i, view in enumerate(live_views(files)):
        window_files = []
        for rank, windows in enumerate(per_rank):
            path = tmp_path / f"window{i}.rank{rank}"
            path.write_text(json.dumps(windows[i]) + "\n")
            window_files.append(str(path))
        report = json.loads(subprocess.run([CLI, "report", "--json", *window_files],
                                           capture_output=True, text=True, check=True).stdout)
        assert report["stragglers"] == view["stragglers"]
        assert report["straggler_phases"] == view["straggler_phases"]
        assert [r["excess_s"] for r in report["ranks"]] == pytest.approx(view["excess_s"])
        assert view["step_s_p50"] == [w[i]["step_s_p50"] for w in per_rank]


def test_ddp_slow_rank_is_named_live_and_afterwards(tmp_path):
    records = tmp_path / "ddp.jsonl"
    proc = torchrun(records, "--slow-rank", "2")
    files = rank_files(records)
    report = check_windows(files)
    assert report["stragglers"] == [2]
    assert report["straggler_phases"] == ["data"]
    assert [r["steps"] for r in report["ranks"]] == [STEPS - WARMUP] * RANKS
    # Synchronized by DDP, the ranks' step times agree: the slow rank's extra time per step (its
    # excess, in data) does not show in its step time, so a rule on step times alone misses it.
    p50 = [r["step_p50_s"] for r in report["ranks"]]
    assert max(p50) - min(p50) < 0.5 * report["ranks"][2]["excess_s"]
    views = live_views(files)
    assert len(views) == 3
    for view in views:
        assert view["ranks"] == RANKS and 2 in view["stragglers"]
        assert view["excess_s"][2] > 0.2 * view["median_s"]  # about a third of a step
    assert_live_view_is_the_rule_over_the_files(files, tmp_path)
    # NVRx's scores: on its step the slow rank scores near 1 (DDP evens the steps out); phase by
    # phase its data scores low, live and afterwards, and the report names it.
    slow = report["ranks"][2]
    assert slow["relative_score"] > 0.9
    assert slow["phase_scores"]["data"]["relative"] < 0.5
    data = [r["phase_scores"]["data"]["relative"] for r in report["ranks"]]
    assert min(data) == data[2]
    assert (report["low_score"]["rank"], report["low_score"]["phase"]) == (2, "data")
    for view in views:
        assert view["phase_scores"]["data"]["relative"][2] < 0.5
    text = subprocess.run([CLI, "report", *files], capture_output=True, text=True,
                          check=True).stdout
    assert "Lowest phase score: rank 2 data relative " in text
    # The job's ledger: every rank's through its final record, added up in rank-seconds.
    job = report["ledger"]
    ends = [read_records(path, ends=True)[-1] for path in files]
    assert job["ranks"] == RANKS and job["steps"] == RANKS * STEPS
    assert job["wall_s"] == pytest.approx(sum(e["ledger"]["wall_s"] for e in ends))
    assert job["productive_s"] == pytest.approx(sum(e["ledger"]["productive_s"] for e in ends))
    assert ledger_parts(job) == pytest.approx(job["wall_s"], abs=1e-6)
    assert job["goodput"] == pytest.approx(job["productive_s"] / job["wall_s"])
    assert max(e["ledger"]["wall_s"] for e in ends) <= job["span_s"] < job["wall_s"]
    for rank, end in enumerate(ends):
        assert report["ranks"][rank]["ledger"] == pytest.approx(end["ledger"])
    print(f"slow rank: step relative {slow['relative_score']:.4f}, data relative "
          f"{slow['phase_scores']['data']['relative']:.4f}, individual "
          f"{slow['phase_scores']['data']['individual']:.4f}; live data relative "
          f"{[round(v['phase_scores']['data']['relative'][2], 4) for v in views]}, step "
          f"{[round(v['relative_score'][2], 4) for v in views]}; job goodput "
          f"{job['goodput']:.3f} over {job['wall_s']:.2f} rank-s, span {job['span_s']:.2f} s")
    out = proc.stdout + proc.stderr
    assert out.count("[Perf][rank0] xrank step ") == 3
    assert "stragglers: rank 2 (+" in out and "most in data)" in out
    assert "cross-rank view off" not in out


def test_ddp_without_slow_rank_names_nobody(tmp_path):
    records = tmp_path / "ddp.jsonl"
    torchrun(records)
    files = rank_files(records)
    report = check_windows(files)
    assert report["stragglers"] == []
    assert len(live_views(files)) == 3
    assert_live_view_is_the_rule_over_the_files(files, tmp_path)


def test_unset_means_no_view_and_no_collective(run):
    """A single process: nothing of the view is loaded without the variable; with it, a world of
    one rank is said once and nothing is exchanged."""
    code = """
        import sys, time, vxperf
        opt = object()
        for _ in range(4):
            with vxperf.micro_step():
                with vxperf.optimizer_step(opt):
                    time.sleep(0.001)
        vxperf.finish()
        print("loaded" if "vxperf._xrank" in sys.modules else "not loaded")
    """
    plain = run(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=2))
    assert plain.stdout.strip() == "not loaded" and "xrank" not in plain.stderr.lower()
    alone = run(code, env=clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=2, VIDEOX_PERF_XRANK=1))
    assert alone.stdout.strip() == "loaded"
    assert alone.stderr.count("VIDEOX_PERF_XRANK=1 in a world of one rank") == 1


# ---- bad input: small jobs started one process per rank -----------------------------------------

def start_ranks(tmp_path, world, per_rank_args, timeout_s=3):
    port = free_port()
    procs = []
    for rank in range(world):
        env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=5, VIDEOX_PERF_XRANK=1,
                        VIDEOX_PERF_XRANK_TIMEOUT=timeout_s, VIDEOX_PERF_JSON=tmp_path / "r.jsonl",
                        RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank, MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, OMP_NUM_THREADS=1)
        procs.append(subprocess.Popen([sys.executable, WORKER, *per_rank_args.get(rank, [])],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return procs


def finish(proc, timeout):
    """(returncode, stdout, stderr) within `timeout` seconds, the process killed after it."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out, err
    return proc.returncode, out, err


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.communicate()


def test_a_hung_rank_costs_one_timeout_then_training_goes_on(tmp_path):
    # Rank 1 stops at step 8 for a minute: rank 0's exchange of window 5-9 (due at step 11) times
    # out after 3s, the view goes off, and rank 0 trains to the end.
    procs = start_ranks(tmp_path, 2, {1: ["--hang-at", "8", "--hang-s", "60"]})
    try:
        start = time.monotonic()
        code, out, err = finish(procs[0], 45)
        assert code == 0, err
        assert time.monotonic() - start < 45
        assert procs[1].poll() is None  # still hung
        assert err.count("vxperf: cross-rank view off: the exchange of window step 5-9 failed") == 1
        assert "training goes on without it" in err
        windows = read_records(f"{tmp_path / 'r.jsonl'}.rank0")
        assert [(w["step_first"], "xrank" in w) for w in windows] == [
            (0, True), (5, False), (10, False), (15, False)]
    finally:
        stop(procs)


def test_a_dead_rank_switches_the_view_off_without_waiting(tmp_path):
    procs = start_ranks(tmp_path, 2, {1: ["--die-at", "8"]}, timeout_s=30)
    try:
        code, out, err = finish(procs[0], 60)
        assert code == 0, err
        assert finish(procs[1], 10)[0] == 3
        assert err.count("vxperf: cross-rank view off: the exchange of window step 5-9 failed") == 1
        assert "rank 0 trained 20 steps" in out
    finally:
        stop(procs)


def test_a_held_window_is_written_when_the_job_is_told_to_stop(tmp_path):
    # Rank 1 dies at step 10; rank 0, at step 10 too, still holds window 5-9 for its exchange (due
    # at step 11) when a launcher's SIGTERM comes: it writes it, without the view, and ends by
    # SIGTERM as it would have.
    procs = start_ranks(tmp_path, 2, {0: ["--hang-at", "10", "--hang-s", "60"],
                                      1: ["--die-at", "10"]}, timeout_s=30)
    try:
        assert finish(procs[1], 60)[0] == 3
        time.sleep(1.0)  # rank 0 is in its step 10 by now
        procs[0].send_signal(signal.SIGTERM)
        code, out, err = finish(procs[0], 30)
        assert code == -signal.SIGTERM, err
        assert err.count("cross-rank view off: the job was told to stop (SIGTERM)") == 1, err
        windows = read_records(f"{tmp_path / 'r.jsonl'}.rank0")
        assert [(w["step_first"], "xrank" in w) for w in windows] == [(0, True), (5, False)]
    finally:
        stop(procs)


def test_variable_set_on_one_rank_only_is_reported_at_the_first_window(tmp_path):
    procs = start_ranks(tmp_path, 2, {1: ["--no-xrank"]})
    try:
        results = [finish(p, 45) for p in procs]
        assert [r[0] for r in results] == [0, 0], results[0][2] + results[1][2]
        err0, err1 = results[0][2], results[1][2]
        assert err0.count("vxperf: cross-rank view off: the exchange of window step 0-4 failed: "
                          "rank 1 did not join within 3s (is VIDEOX_PERF_XRANK=1 set on every "
                          "rank?)") == 1
        assert "cross-rank view" not in err1
        for rank in range(2):
            windows = read_records(f"{tmp_path / 'r.jsonl'}.rank{rank}")
            assert len(windows) == 4 and not any("xrank" in w for w in windows)
    finally:
        stop(procs)


def test_two_processes_claiming_one_rank_are_warned_about(tmp_path):
    procs = start_ranks(tmp_path, 2, {1: ["--claim-rank", "0"]})
    try:
        results = [finish(p, 45) for p in procs]
        assert [r[0] for r in results] == [0, 0]
        for _code, _out, err in results:
            assert err.count("vxperf: cross-rank view off: window step 0-4: rank 0 is claimed by 2 "
                             "processes") == 1, err
    finally:
        stop(procs)
