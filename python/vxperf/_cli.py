"""The `vxperf` command of a pip-installed package: its console entry point runs the C++ command
installed inside the package (vxperf/_bin/vxperf), with the same arguments, exit status and
output. A package installed with CMake has the command in the prefix's bin/ instead."""

from __future__ import annotations

import os
import sys


def command_path() -> str | None:
    """The C++ command inside this package, or None when it was not built into it."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "vxperf")
    return path if os.access(path, os.X_OK) else None


def main() -> int:
    path = command_path()
    if path is None:
        sys.stderr.write("vxperf: this vxperf package holds no command (installed without it); "
                         "build it with `pip install .` or CMake\n")
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path, *sys.argv[1:]])
    return 2  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
