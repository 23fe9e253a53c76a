"""`python -m vxperf.fleet` on a real Ray cluster of this machine: a head (no CPU of its own) and
two worker nodes started with `ray start` on loopback, 64 rank files (and a bad one) read by the
workers and merged: standard output byte for byte what one `vxperf explain` prints; file://
URLs read through fsspec; files that are not there said once; `report` over 16 ranks' training
records the same way (skipped where `vxperf report` has no --partial); each task's command
killed once, and run again; one worker node's raylet killed mid-run, its tasks run again on the
other, the output still the same. Every process of the
cluster is started here in sessions of its own, and only those sessions are stopped."""
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

import pytest

from conftest import BUILD, CLI, REPO, clean_env
from ray_nodes import Nodes, sessions_pids

if importlib.util.find_spec("ray") is None:
    pytest.skip("Ray is not installed (pip install '.[fleet]')", allow_module_level=True)

RANKS = 64
PROGRESS = "vxperf fleet explain: ["
# The cluster's own token: nothing read from ~/.ray, nothing left there.
TOKEN = secrets.token_hex(32)
PROGRESS_LINE = re.compile(r"vxperf fleet \w+: \[")


def fleet_env(**settings):
    return clean_env(
        PATH=BUILD + os.pathsep + os.environ.get("PATH", ""),
        RAY_USAGE_STATS_ENABLED=0, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN,
        # A killed node is found dead within seconds, and a slow start on a busy machine waited.
        RAY_health_check_period_ms=500, RAY_health_check_failure_threshold=4,
        RAY_raylet_start_wait_time_s=180, **settings)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """64 small rank files made from the explain tests' trace, the records of every rank beside
    them, and a file that is no trace."""
    out = tmp_path_factory.mktemp("fleet") / "ranks"
    subprocess.run([sys.executable, os.path.join(REPO, "bench", "explain_bench.py"), "make",
                    os.path.join(REPO, "tests", "explain", "traces", "waterfall_rank0.json"),
                    "--out", str(out), "--ranks", str(RANKS), "--size-mb", "0.02"],
                   check=True, capture_output=True)
    source = os.path.join(REPO, "tests", "explain", "traces", "waterfall.records.jsonl")
    with open(source) as f:
        records = [json.loads(line) for line in f if line.strip()]
    with open(out / "run.records.jsonl", "w") as f:
        for rank in range(RANKS):
            for r in records:
                f.write(json.dumps({**r, "rank": rank, "world_size": RANKS}) + "\n")
    (out / "rank-x.json").write_text('{"traceEvents": [{"ph": "X", "name": ')
    return str(out)


# The workers' `vxperf`: the real one, but killed (SIGKILL) the first time it is given each file
# with --partial while the folder KILL_ONCE exists.
KILLED_ONCE = """#!/bin/sh
case " $* " in *" --partial "*)
  if [ -d "{kill_once}" ]; then
    marker="{kill_once}/$(basename "$2")"
    if [ ! -e "$marker" ]; then : > "$marker"; kill -KILL $$; fi
  fi;;
esac
exec "{real}" "$@"
"""


class Cluster(Nodes):
    """The nodes, their workers' `vxperf` the one killed once per file while KILL_ONCE exists."""

    def __init__(self, root):
        self.kill_once = os.path.join(root, "kill-once")
        bin_dir = os.path.join(root, "bin")
        os.mkdir(bin_dir)
        with open(os.path.join(bin_dir, "vxperf"), "w") as f:
            f.write(KILLED_ONCE.format(kill_once=self.kill_once, real=CLI))
        os.chmod(os.path.join(bin_dir, "vxperf"), 0o755)
        env = fleet_env()
        env["PATH"] = bin_dir + os.pathsep + env["PATH"]
        super().__init__(root, env)

    def start(self, name, *args, timeout=240):
        try:
            return super().start(name, *args, timeout=timeout)
        except RuntimeError as e:
            pytest.fail(str(e))


@pytest.fixture(scope="module")
def cluster():
    # Short: Ray's sockets live under it, and a socket's path is at most 107 bytes.
    root = tempfile.mkdtemp(prefix="vxr-", dir="/tmp")
    c = Cluster(root)
    try:
        c.start("head", "--head", "--port=0", "--num-cpus=0", "--include-dashboard=false",
                f"--temp-dir={root}")
        # One after the other: two nodes starting at once on one host could time out.
        for w in (1, 2):
            c.start(f"worker{w}", f"--address={c.address}", "--num-cpus=1")
        yield c
    finally:
        c.stop()
        shutil.rmtree(root, ignore_errors=True)


def one_process(*args, cwd=None):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, check=False, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def fleet(*args, env=None, cwd=None):
    p = subprocess.run([sys.executable, "-m", "vxperf.fleet", *args], env=env or fleet_env(),
                       capture_output=True, text=True, timeout=300, check=False, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def said(stderr):
    """Standard error less the progress lines and Ray's own warnings."""
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if line.startswith("vxperf ") and not PROGRESS_LINE.match(line))


def test_usage_is_answered_without_ray(traces):
    rc, out, err = fleet("explain", traces, "--critical-path")
    assert rc == 2 and "--critical-path takes every file at once" in err, err
    rc, out, err = fleet("explain", traces, "--merge")
    assert rc == 2 and "the fleet makes and merges the partials itself" in err, err
    rc, out, err = fleet("report", "-")
    assert rc == 2 and "standard input cannot be handed to tasks" in err, err
    rc, out, err = fleet("--help")
    assert rc == 0 and out.startswith("usage: python -m vxperf.fleet explain|report")
    # Without Ray installed: one line saying what to install.
    code = ("import sys; sys.modules['ray'] = None; from vxperf.fleet import main; "
            f"sys.exit(main(['explain', {traces!r}]))")
    p = subprocess.run([sys.executable, "-c", code], env=fleet_env(), capture_output=True,
                       text=True, check=False)
    # The command to type as it is: quoted (zsh globs brackets), nothing sent to PyPI for vxperf.
    assert p.returncode == 2 and "pip install 'ray==2.60.0'" in p.stderr, p.stderr
    assert "pip install '.[fleet]'" in p.stderr, p.stderr


def test_no_cluster_at_the_address_is_said_at_once(traces):
    """A wrong --address: said in one line at once, not after Ray's minutes of retries."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    rc, out, err = fleet("explain", traces, "--address", f"127.0.0.1:{port}")
    assert (rc, out) == (2, ""), err
    assert err == f"vxperf fleet: Ray: no Ray cluster answers at 127.0.0.1:{port} " \
                  "(Connection refused)\n", err


def test_the_cluster_prints_what_one_process_prints(traces, cluster):
    one = one_process("explain", traces)
    assert one[0] == 0 and f"{traces}/rank-x.json: " in one[1], one
    rc, out, err = fleet("explain", traces, "--address", cluster.address)
    assert (rc, out) == one[:2], err
    lines = [line for line in err.splitlines() if line.startswith(PROGRESS)]
    assert len(lines) == RANKS + 1 and lines[-1].startswith(f"{PROGRESS}{RANKS + 1}/"), err
    # JSON (its problems on standard error), five files a task, the cluster from RAY_ADDRESS, the
    # folder named relative to the driver's: read in that folder, and named as given.
    parent, name = os.path.split(traces)
    one = one_process("explain", name, "--json", cwd=parent)
    assert f'"{name}/rank-0.json"' in one[1]
    rc, out, err = fleet("explain", name, "--json", "--files-per-task", "5",
                         env=fleet_env(RAY_ADDRESS=cluster.address), cwd=parent)
    assert (rc, out, said(err)) == one, err


def test_urls_are_read_through_fsspec_and_missing_files_said_once(traces, cluster):
    one = one_process("explain", traces, "--json")
    url = "file://" + traces
    missing = [url + "/gone.json", os.path.join(traces, "gone-too.json")]
    rc, out, err = fleet("explain", url, *missing, "--json", "--address", cluster.address)
    assert rc == 0, err
    # The files and records are named by their URLs, as read.
    assert out == one[1].replace(f'"{traces}/', f'"{url}/').replace(f" {traces}/", f" {url}/")
    assert json.loads(out)["records"] == [url + "/run.records.jsonl"]
    assert said(err) == (f"vxperf explain: {missing[0]}: no such file or directory\n"
                         f"vxperf explain: {missing[1]}: no such file or directory\n"
                         + one[2].replace(f" {traces}/", f" {url}/")), err


def report_partials_supported(records):
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([CLI, "report", "--partial", os.path.join(d, "p.json"), records],
                           capture_output=True, text=True, check=False)
    return p.returncode == 0, (p.stderr.strip().splitlines() or [""])[0]


def test_report_on_the_cluster(cluster, tmp_path):
    # A training job's records, a file per rank as a job writes them (report's partials take
    # training records, a rank's in one partial).
    sys.path.insert(0, os.path.join(REPO, "bench"))
    import records_bench
    files = records_bench.generate(str(tmp_path), "records", 16, 5, 0, 7)
    supported, answer = report_partials_supported(files[0])
    if not supported:
        pytest.skip(f"this vxperf report has no --partial yet ({answer})")
    one = one_process("report", *files)
    assert one[0] == 0, one
    rc, out, err = fleet("report", *files, "--address", cluster.address)
    assert (rc, out, said(err)) == (one[0], one[1], said(one[2])), err
    # JSON, of the folder as a URL: listed here, each *.jsonl a task, named by its URL.
    folder = os.path.dirname(files[0])
    one = one_process("report", *files, "--json")
    rc, out, err = fleet("report", "file://" + folder, "--json", "--address", cluster.address)
    assert rc == 0 and json.loads(out) == json.loads(
        one[1].replace(f'"{folder}/', f'"file://{folder}/')), err


def test_a_command_killed_is_run_again(traces, cluster):
    """Each task's `vxperf` killed once (out of memory, say): Ray runs the task again."""
    one = one_process("explain", traces)
    os.mkdir(cluster.kill_once)
    try:
        rc, out, err = fleet("explain", traces, "--files-per-task", "8", "--address",
                             cluster.address)
        killed = sorted(os.listdir(cluster.kill_once))
    finally:
        shutil.rmtree(cluster.kill_once)
    assert (rc, out) == one[:2], err
    # The first file of each of the 9 tasks (65 files, 8 a task).
    assert len(killed) == 9 and "rank-0.json" in killed, killed


def test_a_worker_node_killed_mid_run(traces, cluster):
    """Runs last: it leaves the cluster one worker node."""
    one = one_process("explain", traces)
    # Unbuffered: `communicate` reads the pipes' descriptors, so lines a buffered `readline` had
    # read ahead would be lost to it (the tasks finish in bursts; 23 progress lines were, once).
    p = subprocess.Popen([sys.executable, "-m", "vxperf.fleet", "explain", traces, "--address",
                          cluster.address], env=fleet_env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
    err = []
    try:
        while not any(line.startswith(f"{PROGRESS}8/") for line in err):
            line = p.stderr.readline().decode()
            assert line, "".join(err)
            err.append(line)
        worker = cluster.procs[1]
        raylets = [pid for pid, cmd in sessions_pids({worker.pid}).items()
                   if "raylet/raylet" in cmd.split(" ")[0]]
        assert len(raylets) == 1, sessions_pids({worker.pid})
        os.kill(raylets[0], signal.SIGKILL)
        out_bytes, rest_bytes = p.communicate(timeout=300)
        out, rest = out_bytes.decode(), rest_bytes.decode()
    finally:
        if p.poll() is None:
            p.kill()
    assert worker.wait(timeout=60) != 0  # its `ray start` saw the raylet die and stopped
    err = "".join(err) + rest
    assert (p.returncode, out) == one[:2], err
    # Ray's lines about the lost raylet may land inside one of the progress lines.
    assert len(re.findall(rf"{re.escape(PROGRESS)}\d+/{RANKS + 1}\]", err)) == RANKS + 1, err
