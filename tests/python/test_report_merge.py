"""`vxperf report` split by rank and merged, on real jobs: a 2-process torchrun DDP run over gloo
(examples/python/train_ddp.py), and a tiny Wan pipeline served by two processes (ranks 0 and 1 of
a world of 2), each write a records file per rank; a partial of each rank's file (`--partial`, as
a worker next to each rank would make it), merged (`--merge`), prints byte for byte what one
`vxperf report` over both files prints: text, JSON, the HTML page, the warnings and the exit
status."""
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from conftest import CLI, REPO, clean_env, run_python

TRAIN_DDP = os.path.join(REPO, "examples", "python", "train_ddp.py")
RANKS = 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def report(*args: str) -> tuple[int, bytes, bytes]:
    p = subprocess.run([CLI, "report", *args], capture_output=True, check=False)
    return p.returncode, p.stdout, p.stderr


def test_partials_of_a_torchrun_jobs_ranks_merge_to_one_runs_report(tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_EVERY=10, VIDEOX_PERF_WARMUP=2,
                    VIDEOX_PERF_JSON=str(records), OMP_NUM_THREADS=1)
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
               str(RANKS), "--rdzv_backend", "c10d", "--rdzv_endpoint",
               f"127.0.0.1:{free_port()}", TRAIN_DDP, "--steps", "40", "--dim", "64",
               "--layers", "2", "--timeout", "120"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = [f"{records}.rank{r}" for r in range(RANKS)]
    assert all(os.path.exists(f) for f in files)

    partials = []
    for rank, path in enumerate(files):
        partial = str(tmp_path / f"rank{rank}.partial")
        rc, out, err = report(path, "--partial", partial)
        assert (rc, out, err) == (0, b"", b"")
        partials.append(partial)
        assert os.path.getsize(partial) < 64 * 1024  # kilobytes, not the records

    same_as_one_run(tmp_path, files, partials)


def same_as_one_run(tmp_path: Path, files: list[str], partials: list[str]) -> None:
    """The merge of `partials` against one run over `files`: text, JSON and the page; the
    partials also as a folder of them (named so that their order is the files')."""
    folder = tmp_path / "partials"
    folder.mkdir()
    for p in partials:
        shutil.copy(p, folder)
    for form in ([], ["--json"]):
        one = report(*files, *form)
        assert one[0] == 0 and one[1]
        if not form:
            assert b"Ranks (2)" in one[1]
        assert report("--merge", *partials, *form) == one
        assert report("--merge", str(folder), *form) == one
    (tmp_path / "empty").mkdir()
    rc, out, err = report("--merge", str(tmp_path / "empty"))
    assert (rc, out) == (2, b"") and b"empty: a folder with no partials in it" in err, err

    (tmp_path / "one").mkdir()
    (tmp_path / "merged").mkdir()
    one = report(*files, "--html", str(tmp_path / "one" / "page.html"))
    merged = report("--merge", *partials, "--html", str(tmp_path / "merged" / "page.html"))
    assert one[:2] == merged[:2] and one[2].replace(b"/one/", b"/merged/") == merged[2]
    page = (tmp_path / "one" / "page.html").read_bytes()
    assert page == (tmp_path / "merged" / "page.html").read_bytes()


SERVE = """
import sys, vxperf
import tiny_models as tm
pipe = vxperf.instrument_pipeline(tm.wan_pipeline())
for i in range(int(sys.argv[1])):
    pipe("a cat %d" % i, steps=2 + i % 3)
print("ok")
"""


def test_partials_of_two_serving_processes_requests_merge_to_one_runs_report(
        tmp_path: Path) -> None:
    records = tmp_path / "requests.jsonl"
    counts = (7, 5)
    for rank, count in enumerate(counts):
        env = clean_env(VIDEOX_PERF=1, VIDEOX_PERF_WARMUP=1, VIDEOX_PERF_JSON=str(records),
                        RANK=rank, WORLD_SIZE=RANKS, OMP_NUM_THREADS=1)
        code = SERVE.replace("int(sys.argv[1])", str(count))
        assert run_python(code, env=env, timeout=300).stdout.strip() == "ok"
    files = [f"{records}.rank{r}" for r in range(RANKS)]
    for path, count in zip(files, counts):
        with open(path) as f:
            kinds = [json.loads(line)["kind"] for line in f if line.strip()]
        assert kinds == ["request"] * count, (path, kinds)

    partials = []
    for rank, path in enumerate(files):
        partial = str(tmp_path / f"rank{rank}.partial")
        assert report(path, "--partial", partial) == (0, b"", b"")
        partials.append(partial)
        # A request's time (twice: the run's and its rank's) and its point on the page, beside
        # what a rank's state is whatever its requests.
        assert os.path.getsize(partial) < 16 * 1024
    one = json.loads(report(*files, "--json")[1])
    assert one["requests"]["count"] == sum(counts) - RANKS  # a warmup request each
    same_as_one_run(tmp_path, files, partials)
