#!/usr/bin/env python3
"""Writes the golden files of the side-by-side tests: what the reference module recorded (the
non-timing fields) and observed, per scenario.

Usage: make_golden.py [--reference PATH/seed_perf.py] [--set classic|torch2] [SCENARIO...]

  classic (default)  scenarios.py's SCENARIOS over the stand-ins.
  torch2             scenarios.py's REAL_ACCELERATE and every real_scenarios.py scenario, over the
                     real diffusers, transformers and accelerate. Written as golden/NAME.json and
                     golden/real/NAME.json.

Run both with build-venv/bin/python (torch 2, the pinned libraries).

Default reference: $VXPERF_REFERENCE, else <repo>/../shared/reference/seed_perf.py. The tests
compare vxperf with these files on every run, and with the reference itself when it is present.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios  # noqa: E402


def jobs(which, names):
    """(runner script, scenario, golden path, extra arguments) to write."""
    if which == "classic":
        for name in names or sorted(scenarios.SCENARIOS):
            yield "scenarios.py", name, os.path.join(HERE, "golden", f"{name}.json"), []
        return
    import real_scenarios

    for name in sorted(scenarios.REAL_ACCELERATE):
        if not names or name in names:
            yield ("scenarios.py", name, os.path.join(HERE, "golden", f"{name}.json"),
                   ["--real-accelerate"])
    for name in sorted(real_scenarios.SCENARIOS):
        if not names or name in names:
            yield ("real_scenarios.py", name, os.path.join(HERE, "golden", "real", f"{name}.json"),
                   [])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=scenarios.default_reference())
    parser.add_argument("--set", choices=("classic", "torch2"), default="classic")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    if not os.path.exists(args.reference):
        sys.exit(f"make_golden: no reference at {args.reference}")
    for script, name, out, extra in jobs(args.set, args.names):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, script), "--impl", "reference",
                        "--scenario", name, "--out", out, "--reference", args.reference, *extra],
                       check=True, stderr=subprocess.DEVNULL)
        print(f"make_golden: {out}")


if __name__ == "__main__":
    main()
