"""`python -m vxperf.fleet explain|report FILE_OR_URL...`: one `vxperf explain` or `vxperf report`
over many files, read where they lie by the workers of a Ray cluster.

Each Ray task runs the `vxperf` command on its files with `--partial` (local paths read on the
worker, fsspec URLs such as `s3://` copied to a scratch folder there) and hands back the partial's
bytes; the driver merges them with `--merge`, so standard output is what one `vxperf explain` (or
`report`) on all the files prints. A lost worker's task is run again (Ray's `max_retries`); a file
that cannot be read is said once and left out, as `explain` does a bad trace.

    python -m vxperf.fleet explain /shared/run/traces [--json] [--address HOST:PORT]
    python -m vxperf.fleet report s3://bucket/run/records-*.jsonl ...

Ray is an extra (`pip install vxperf[fleet]`): nothing else in vxperf imports it. docs/FLEET.md
says more.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from .._cli import command_path

COMMANDS = ("explain", "report")

# The options that say how the merged output is shown: they go to `--merge`, the rest to each
# `--partial`. Value: whether the option takes a value.
MERGE_OPTIONS: dict[str, dict[str, bool]] = {
    "explain": {"--json": False, "--html": True},
    "report": {"--json": False, "--html": True, "--steps": True},
}
# The partial's options that take a value (the token after them is not a file).
PARTIAL_VALUES: dict[str, frozenset[str]] = {
    "explain": frozenset({"--records", "--threads"}),
    "report": frozenset({"--threads"}),
}
# Options of the command that cannot be split into partials.
WHOLE_ONLY: dict[str, tuple[str, ...]] = {
    "explain": ("--critical-path",),
    "report": ("--compare",),
}
TRACE_SUFFIXES = (".json", ".json.gz")

USAGE = """usage: python -m vxperf.fleet explain|report FILE|DIR|URL... [OPTIONS OF THE COMMAND]
                                  [--address HOST:PORT] [--files-per-task N] [--retries N]

Runs `vxperf explain` (or `vxperf report`) over the files as Ray tasks, each reading its files
where they lie (local paths on the workers, fsspec URLs such as s3://bucket/run/ on any worker
that has fsspec and the filesystem's package), and merges the tasks' partials: standard output is
what the command prints over all the files in one process. Progress goes to standard error.

  --address HOST:PORT  the Ray cluster (default: $RAY_ADDRESS, else a Ray started on this machine)
  --files-per-task N   files given to each task (default 1)
  --retries N          times a task whose worker was lost (or whose command was killed, or whose
                       download failed) is run again (default 3)

A task runs the command in this folder where its worker has it (a shared filesystem), else in
its own: a relative path is read, and named, as given.

The command's options go with it: --json and --html OUT (report: --steps FILE too) to the merge,
the others (--records, --replay, --what-if, --threads, --strict, ...) to every task. A folder is
listed here, a file a task: explain's local folders and URL folders (their .json and .json.gz
files, as explain lists them), report's URL folders (their *.jsonl files); a local folder of
report's, or one this machine cannot see, goes whole to one task. A file that cannot be read, or
whose task fails, is said once and left out. Exit status: the merge's, as the command's (2 for
bad usage, and when no task made a partial: the tasks' worst).
"""


class UsageError(Exception):
    """Bad arguments: said with the usage line, exit status 2."""


class CommandKilled(RuntimeError):
    """The `vxperf` command of a task died by a signal (out of memory, say): worth another try."""


@dataclass
class Plan:
    command: str
    operands: list[str]
    partial_args: list[str]
    merge_args: list[str]
    address: str | None = None
    files_per_task: int = 1
    retries: int = 3


@dataclass
class TaskResult:
    """What a task hands back: the partial (None when it made none), the command's exit status and
    what it said about the files it left out."""
    partial: bytes | None
    status: int = 0
    said: list[str] = field(default_factory=list)


def is_url(path: str) -> bool:
    return "://" in path


def _positive(option: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise UsageError(f"{option}: {value!r} is not a positive number")
    return n


def parse(argv: list[str]) -> Plan:
    if not argv or argv[0] in ("-h", "--help"):
        raise UsageError("")
    command = argv[0]
    if command not in COMMANDS:
        raise UsageError(f"{command!r}: the command is explain or report")
    plan = Plan(command, [], [], [])
    merge = MERGE_OPTIONS[command]
    i = 1

    def value(option: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise UsageError(f"{option} takes a value")
        i += 1
        return argv[i]

    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if arg in ("-h", "--help"):
            raise UsageError("")
        if arg == "--address":
            plan.address = value(arg)
        elif arg == "--files-per-task":
            plan.files_per_task = _positive(arg, value(arg))
        elif arg == "--retries":
            n = value(arg)
            plan.retries = 0 if n == "0" else _positive(arg, n)
        elif name in ("--partial", "--merge"):
            raise UsageError(f"{name}: the fleet makes and merges the partials itself")
        elif name in WHOLE_ONLY[command]:
            raise UsageError(f"{name} takes every file at once: run `vxperf {command}` instead")
        elif arg in merge:
            plan.merge_args.append(arg)
            if merge[arg]:
                plan.merge_args.append(value(arg))
        elif arg == "-":
            raise UsageError("-: standard input cannot be handed to tasks; give the files")
        elif arg.startswith("-"):
            plan.partial_args.append(arg)
            if arg in PARTIAL_VALUES[command]:
                plan.partial_args.append(value(arg))
        else:
            plan.operands.append(arg)
        i += 1
    if not plan.operands:
        raise UsageError("missing FILE (try --help)")
    return plan


def _trace_name(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES)


def _records_name(name: str) -> bool:
    return ".jsonl" in name and not name.startswith(".")


def expand(command: str, operands: list[str]) -> list[str]:
    """The files the command would read, in its order, as far as this machine sees them: a local
    directory's files sorted by path (explain's: the .json and .json.gz ones; report's stays
    whole, the command reads what it holds), a URL directory's by name likewise (report's: the
    *.jsonl ones, each then read as records or said)."""
    files: list[str] = []
    for op in operands:
        if is_url(op):
            rule = _trace_name if command == "explain" else _records_name
            files.extend(_url_directory(op, rule) or [op])
        elif command == "explain" and os.path.isdir(op):
            found = [os.path.join(op, e.name) for e in os.scandir(op)
                     if e.is_file() and _trace_name(e.name)]
            files.extend(sorted(found, key=os.fsencode))
        else:
            files.append(op)
    return files


def _url_directory(url: str, rule: Callable[[str], bool]) -> list[str] | None:
    """A directory URL's trace files, sorted; None when the URL is not a directory (or fsspec is
    not here: the worker then says what it finds)."""
    try:
        import fsspec
    except ImportError:
        return None
    fs, path = fsspec.core.url_to_fs(url)
    try:
        if not fs.isdir(path):
            return None
        entries = fs.ls(path, detail=True)
    except OSError:
        return None
    found = [fs.unstrip_protocol(e["name"]) for e in entries
             if e.get("type") == "file" and rule(str(e["name"]).rsplit("/", 1)[-1])]
    return sorted(found)


def command() -> str:
    """The `vxperf` command: the one inside this package (a pip install), else on PATH (CMake's
    install, a build tree)."""
    path = command_path() or shutil.which("vxperf")
    if path is None:
        raise RuntimeError("no vxperf command here: install vxperf with pip (it carries the "
                           "command) or put CMake's vxperf on PATH")
    return path


class _Scratch:
    """A task's URLs copied into a scratch folder, each where the URL read as a relative path
    names it (s3://bucket/job/rank-0.json at ./s3:/bucket/job/rank-0.json), so that the command,
    run in that folder and given the URL itself, reads the copy and names it by its URL, and
    finds the records beside a trace as it would beside a local one (explain)."""

    def __init__(self, root: str, base: str, with_siblings: bool) -> None:
        self.root = root
        self.base = base  # where a relative local path is read from
        self.with_siblings = with_siblings
        self.folders: set[str] = set()

    def fetch(self, url: str) -> None:
        import fsspec
        parent = url.rpartition("/")[0]
        local = os.path.join(self.root, url)
        if parent not in self.folders:
            os.makedirs(os.path.dirname(local), exist_ok=True)
            self.folders.add(parent)
            if self.with_siblings:
                self._records_beside(parent)
        if not os.path.exists(local):
            with fsspec.open(url, "rb") as src, open(local, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)

    def _records_beside(self, parent: str) -> None:
        import fsspec
        fs, path = fsspec.core.url_to_fs(parent)
        try:
            entries = fs.ls(path, detail=True)
        except OSError:
            return
        for e in entries:
            name = str(e["name"]).rsplit("/", 1)[-1]
            if e.get("type") == "file" and _records_name(name):
                fs.get(e["name"], os.path.join(self.root, parent, name))

    def link_local(self, path: str) -> None:
        """A relative local path reachable from the scratch folder too: its first component
        linked to the one in the base folder."""
        if os.path.isabs(path):
            return
        first = path.split("/", 1)[0]
        link = os.path.join(self.root, first)
        if first not in ("", ".", "..") and not os.path.lexists(link):
            os.symlink(os.path.join(self.base, first), link)


def _missing(command_name: str, path: str) -> str:
    return f"vxperf {command_name}: {path}: no such file or directory"


def run_task(command_name: str, files: list[str], partial_args: list[str],
             cwd: str | None = None, threads: int = 1) -> TaskResult:
    """On a worker: the command's partial of `files` (the Ray task's body; runs without Ray too),
    run in the driver's folder `cwd` where the worker has it, so that a relative path names the
    same file on a shared filesystem and the output names it as given."""
    exe = command()
    if cwd is None or not os.path.isdir(cwd):
        cwd = os.getcwd()
    args = list(partial_args)
    records = [args[k + 1] for k in range(len(args) - 1) if args[k] == "--records"]
    if "--threads" not in args:
        args += ["--threads", str(threads)]
    with tempfile.TemporaryDirectory(prefix="vxperf-fleet-") as root:
        said: list[str] = []
        kept: list[str] = []
        urls = any(is_url(f) for f in files + records)
        scratch = _Scratch(root, cwd, command_name == "explain" and not records)
        for f in files + records:
            try:
                if is_url(f):
                    scratch.fetch(f)
                elif urls:
                    scratch.link_local(f)
            except FileNotFoundError:
                said.append(_missing(command_name, f))
                continue
            if f in files:
                if os.path.exists(os.path.join(root if is_url(f) else cwd, f)):
                    kept.append(f)
                else:
                    said.append(_missing(command_name, f))
        if not kept:
            return TaskResult(None, 2, said)
        out = os.path.join(root, ".partial.json")
        proc = subprocess.run([exe, command_name, *kept, "--partial", out, *args],
                              cwd=root if urls else cwd, capture_output=True, text=True,
                              check=False)
        if proc.returncode < 0:
            raise CommandKilled(f"vxperf {command_name} on {', '.join(files)} was killed by "
                                f"signal {-proc.returncode}")
        if proc.returncode != 0 or not os.path.exists(out):
            said += [line for line in proc.stderr.splitlines() if line.strip()]
            return TaskResult(None, proc.returncode or 1, said)
        with open(out, "rb") as made:
            return TaskResult(made.read(), 0, said)


class _Progress:
    """A line on standard error as each task finishes (rewritten in place on a terminal)."""

    def __init__(self, command_name: str, total: int) -> None:
        self.prefix = f"vxperf fleet {command_name}:"
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()

    def step(self, files: list[str]) -> None:
        self.done += len(files)
        name = os.path.basename(files[-1].rstrip("/")) if files else ""
        line = f"{self.prefix} [{self.done}/{self.total}] {name}"
        sys.stderr.write(f"\r{line}\x1b[K" if self.tty else line + "\n")
        if self.tty and self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise UsageError("Ray is not installed: pip install 'ray==2.60.0' (or, from a vxperf "
                         "checkout: pip install '.[fleet]')") from e
    return ray


def check_answers(address: str, timeout_s: float = 10.0) -> None:
    """Raises ConnectionError at once where nothing listens at a HOST:PORT address: Ray itself
    would retry for minutes before it says so. Other forms ("auto", "ray://...") go to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or "/" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(f"no Ray cluster answers at {address} ({e.strerror or e})") from e


def run_on_ray(plan: Plan, groups: list[list[str]]) -> list[TaskResult]:
    ray = import_ray()
    kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    address = plan.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        kwargs["include_dashboard"] = False
    else:
        check_answers(address)
    ray.init(address=address, **kwargs)
    try:
        task = ray.remote(run_task).options(num_cpus=1, max_retries=plan.retries,
                                            retry_exceptions=[OSError, CommandKilled])
        cwd = os.getcwd()
        pending = {task.remote(plan.command, g, plan.partial_args, cwd): k
                   for k, g in enumerate(groups)}
        results: list[TaskResult] = [TaskResult(None) for _ in groups]
        progress = _Progress(plan.command, sum(len(g) for g in groups))
        while pending:
            # Whatever finished within a moment, at once: a wait per task would walk the
            # pending list once per task.
            refs = list(pending)
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0.2)
            for ref in done:
                k = pending.pop(ref)
                try:
                    results[k] = ray.get(ref)
                except ray.exceptions.RayError as e:
                    why = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
                    results[k] = TaskResult(None, 1, [
                        f"vxperf fleet {plan.command}: {', '.join(groups[k])}: its task failed "
                        f"{plan.retries + 1} times: {why}"])
                progress.step(groups[k])
        return results
    finally:
        ray.shutdown()


def merge(plan: Plan, results: list[TaskResult], stdout: int = 1) -> int:
    """Says what the tasks left out (each line once), then runs the merge, its output to `stdout`
    and this process's standard error: what the command prints."""
    seen: set[str] = set()
    for r in results:
        for line in r.said:
            if line not in seen:
                seen.add(line)
                sys.stderr.write(line + "\n")
    sys.stderr.flush()
    partials = [r.partial for r in results if r.partial is not None]
    if not partials:
        sys.stderr.write(f"vxperf fleet {plan.command}: no task made a partial\n")
        return max([r.status for r in results] + [1])
    with tempfile.TemporaryDirectory(prefix="vxperf-fleet-merge-") as root:
        # The folder, not each file, on the command line (thousands of partials); the merge
        # reads its files sorted by name, which is the tasks' order at one width.
        width = len(str(len(partials) - 1))
        for k, p in enumerate(partials):
            with open(os.path.join(root, f"{k:0{width}d}.partial.json"), "wb") as f:
                f.write(p)
        return subprocess.run([command(), plan.command, "--merge", root, *plan.merge_args],
                              stdout=stdout, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    try:
        plan = parse(list(sys.argv[1:] if argv is None else argv))
        import_ray()
        files = expand(plan.command, plan.operands)
        command()  # the driver merges: said now rather than after the tasks
    except UsageError as e:
        if not str(e):  # --help
            sys.stdout.write(USAGE)
            return 0
        sys.stderr.write(f"vxperf fleet: {e}\n{USAGE.splitlines()[0]}\n")
        return 2
    except RuntimeError as e:
        sys.stderr.write(f"vxperf fleet: {e}\n")
        return 2
    groups = [files[k:k + plan.files_per_task] for k in range(0, len(files), plan.files_per_task)]
    # Ray writes some of its messages (a raylet lost, say) to standard output: while it runs that
    # is standard error, and the merge alone writes to the real one.
    sys.stdout.flush()
    stdout = os.dup(1)
    try:
        os.dup2(2, 1)
        try:
            results = run_on_ray(plan, groups)
        except (ConnectionError, TimeoutError, ValueError) as e:  # no cluster there
            sys.stderr.write(f"vxperf fleet: Ray: {e}\n")
            return 2
        return merge(plan, results, stdout)
    finally:
        sys.stdout.flush()
        os.dup2(stdout, 1)
        os.close(stdout)
