"""Fresh interpreters without paying torch's import each time: a server that imports torch (and,
for the real-library tests, diffusers, transformers, accelerate and peft) once, then forks a child
per run. The child takes the run's environment, working directory, sys.argv and PYTHONPATH,
runs the script or code as __main__, and ends the way an interpreter does (atexit handlers,
non-daemon threads joined, the extension's exit handlers), with the exit status the script gave.

vxperf is never imported by the server: each child makes its own engine from its environment,
exactly as a new process would. What a child cannot get from a server is whatever those
libraries read at their import (their own environment variables, OpenMP's thread count): the
server is started with the tests' base environment, and a run that must import them itself asks
for a plain subprocess (conftest.run_python(fresh=True)).

Protocol: one JSON line per request on the server's stdin ({"argv": [...]} or {"code": "..."},
"env", "cwd", "timeout", "stdout", "stderr": paths), one JSON line per answer on its stdout
({"returncode": N} or {"timeout": true})."""
import json
import os
import runpy
import signal
import sys
import time


def _child(request):
    """Runs one request in this (forked) process; returns its exit status."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        target = os.open(request[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.close(devnull)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request.get("cwd") or os.getcwd())
    for entry in reversed([p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]):
        sys.path.insert(0, entry)
    try:
        if "code" in request:
            sys.argv = ["-c"]
            sys.path.insert(0, "")
            namespace = {"__name__": "__main__", "__builtins__": __builtins__}
            exec(compile(request["code"], "<string>", "exec"), namespace)
        else:
            sys.argv = list(request["argv"])
            sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
            runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    return 0


def _wait(pid, timeout):
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timeout": True}
        time.sleep(0.005)


def serve(modules):
    """Imports `modules`, then answers requests until stdin closes. Returns in a child, with the
    status the child's run gave (the caller exits with it, as an interpreter would)."""
    own_directory = sys.path.pop(0)  # this script's; a child's sys.path starts with its own
    assert own_directory == os.path.dirname(os.path.abspath(__file__)), own_directory
    for name in modules:
        __import__(name)
    channel_in = os.fdopen(os.dup(0), "r")
    channel_out = os.fdopen(os.dup(1), "w", buffering=1)
    channel_out.write(json.dumps({"ready": True}) + "\n")
    for line in channel_in:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            channel_in.close()
            channel_out.close()
            return _child(request)
        channel_out.write(json.dumps(_wait(pid, request.get("timeout", 120))) + "\n")
    return 0


class Server:
    """The server as the tests hold it: started on first use, one run at a time."""

    def __init__(self, modules, env):
        import subprocess

        self._process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), *modules], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        ready = self._process.stdout.readline()
        if not ready:
            raise RuntimeError(f"the preloading server for {modules} did not start")

    def run(self, request, directory):
        """Runs `request` (see the module's protocol; stdout and stderr are made here) and returns
        (returncode or None on a timeout, stdout, stderr)."""
        import tempfile

        handle, out = tempfile.mkstemp(dir=directory, suffix=".out")
        os.close(handle)
        err = out[:-4] + ".err"
        request = dict(request, stdout=out, stderr=err)
        self._process.stdin.write(json.dumps(request) + "\n")
        answer = json.loads(self._process.stdout.readline())
        with open(out, errors="replace") as f:
            stdout = f.read()
        with open(err, errors="replace") as f:
            stderr = f.read()
        os.unlink(out)
        os.unlink(err)
        return (None if answer.get("timeout") else answer["returncode"]), stdout, stderr

    def close(self):
        self._process.stdin.close()
        self._process.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
