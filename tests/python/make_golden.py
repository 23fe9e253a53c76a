#!/usr/bin/python3
"""Writes the golden files of the side-by-side tests: for every scenario of scenarios.py, what the
reference module recorded (its non-timing fields) and observed.

Usage: make_golden.py [--reference PATH/seed_perf.py] [SCENARIO...]
Default reference: $VXPERF_REFERENCE, else <repo>/../shared/reference/seed_perf.py. Needs torch
(/usr/bin/python3). test_side_by_side.py compares vxperf with these files on every run, and with
the reference itself when it is present.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scenarios  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=scenarios.default_reference())
    parser.add_argument("names", nargs="*", default=sorted(scenarios.SCENARIOS))
    args = parser.parse_args()
    if not os.path.exists(args.reference):
        sys.exit(f"make_golden: no reference at {args.reference}")
    for name in args.names:
        out = os.path.join(HERE, "golden", f"{name}.json")
        subprocess.run([sys.executable, os.path.join(HERE, "scenarios.py"), "--impl", "reference",
                        "--scenario", name, "--out", out, "--reference", args.reference],
                       check=True, stderr=subprocess.DEVNULL)
        print(f"make_golden: {out}")


if __name__ == "__main__":
    main()
