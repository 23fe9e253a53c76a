#!/usr/bin/env python3
"""A server's throughput with vxperf on against off: tests/python/asgi_server.py (FastAPI, uvicorn,
a bounded queue, a tiny real diffusers Wan pipeline on the CPU, the OpenTelemetry SDK in both)
driven by concurrent httpx clients; "on" is VIDEOX_PERF=1 with VIDEOX_PERF_OTEL=1 (records, spans,
Server-Timing, Prometheus), "off" leaves VIDEOX_PERF unset. Rounds alternate off and on, each a
fresh server warmed with a few requests before the clock starts.

    build-venv/bin/python bench/serve_bench.py [--requests 200] [--clients 50] [--rounds 3]
"""
import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import time

import httpx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(REPO, "tests", "python", "asgi_server.py")


def start(on, build):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VIDEOX_PERF")}
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(build, "python"),
                                         os.path.dirname(SERVER)])
    if on:
        env.update(VIDEOX_PERF="1", VIDEOX_PERF_OTEL="1")
    proc = subprocess.Popen([sys.executable, SERVER, "--otel", "--queue", "100000"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = re.match(r"serving on (\S+)", proc.stdout.readline()).group(1)
    return proc, url


async def drive(url, requests, clients):
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        gate = asyncio.Semaphore(clients)

        async def one(n):
            async with gate:
                reply = await client.post("/generate", json={"prompt": "a cat", "seed": n})
                reply.raise_for_status()

        for n in range(4):  # warm: the first calls build caches
            await one(n)
        start = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(requests)))
        return requests / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    args = parser.parse_args()
    rates = {False: [], True: []}
    for round_ in range(args.rounds):
        for on in (False, True):
            proc, url = start(on, args.build)
            try:
                rate = asyncio.run(drive(url, args.requests, args.clients))
            finally:
                proc.terminate()
                proc.wait(timeout=60)
            rates[on].append(rate)
            print(f"round {round_ + 1} {'on ' if on else 'off'}: {rate:.2f} requests/s",
                  flush=True)
    off, on = statistics.median(rates[False]), statistics.median(rates[True])
    print(f"median off {off:.2f}/s, on {on:.2f}/s: on is {100 * (on / off - 1):+.2f}% of off")


if __name__ == "__main__":
    main()
