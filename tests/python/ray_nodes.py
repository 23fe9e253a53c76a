"""Ray nodes of this machine, started with `ray start --block` in sessions of their own and
stopped by session (never `ray stop`, which would stop every Ray of the host): what
test_fleet.py and bench/fleet_bench.py run the fleet on."""
import os
import signal
import subprocess
import sys
import time

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
# Loopback, but not 127.0.0.1: Ray swaps that one for the machine's outward address.
HOST = "127.0.0.2"


def sessions_pids(sessions):
    """The processes in these sessions (ours: each `ray start` got one of its own), with their
    command lines."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        session = int(stat.rsplit(")", 1)[1].split()[3])
        if session in sessions:
            found[int(entry)] = cmdline
    return found


class Nodes:
    """The head and workers started in `root` (their logs, the head's temp dir), in `env`."""

    def __init__(self, root, env):
        self.root = root
        self.env = env
        self.procs = []
        self.address = None

    def start(self, name, *args, timeout=240):
        """Starts node `name` and waits until it serves; RuntimeError with its log's end if not.
        The head (first started) gives the cluster's address."""
        log = os.path.join(self.root, name + ".log")
        with open(log, "w") as out:
            proc = subprocess.Popen(
                [RAY, "start", "--block", "--disable-usage-stats", "--include-log-monitor=false",
                 "--object-store-memory=80000000", f"--node-ip-address={HOST}",
                 # Every node's agent would take port 52365: one host, several nodes.
                 "--dashboard-agent-listen-port=0", *args],
                env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log) as f:
                if "block forever" in f.read():
                    break
            if proc.poll() is not None:
                deadline = 0
            time.sleep(0.2)
        else:
            with open(log) as f:
                raise RuntimeError(f"ray start {name} did not start:\n{f.read()[-3000:]}")
        if self.address is None:
            with open(os.path.join(self.root, "ray_current_cluster")) as f:
                self.address = f.read().strip()
        return proc

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        # What outlived its `ray start` (a worker process the raylet left): ours by session.
        for pid in sessions_pids({p.pid for p in self.procs}):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
