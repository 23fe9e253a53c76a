#!/usr/bin/python3
"""Writes hand-picked training and inference scenarios as event scripts (see FORMAT.md).

Usage: make_targeted.py OUT_DIR
Then run the reference on each (../shared/conformance/run_reference.py --write SCRIPT) to get the
expected output. Each scenario isolates one behaviour the random generator only hits by chance.
"""
import json
import os
import sys

WAN = {"params": 1418996800, "attn": {"self": 46080, "cross": 46080, "modules": 60}, "text_tokens": 512}


def step_events(t, *, tokens=32760, samples=1, accumulation=1, ready=0, owners=("opt",),
                device=True, clip=True, extra_phases=()):
    """One global step starting at t; returns (events, t_end)."""
    out = []
    for micro in range(accumulation):
        last = micro == accumulation - 1
        out.append({"ev": "micro_enter", "t": t}); t += 0.01
        for name in extra_phases:
            out.append({"ev": "phase", "name": name, "t0": t, "t1": t + 0.05,
                        "device_ms": 60.0 if device else None, "ready_after": 0}); t += 0.05
        fwd = {"ev": "phase", "name": "fwd", "t0": t, "t1": t + 0.4,
               "device_ms": 520.0 if device else None, "ready_after": ready}
        if tokens:
            fwd.update(tokens=tokens, samples=samples)
        out.append(fwd); t += 0.41
        out.append({"ev": "phase", "name": "bwd", "t0": t, "t1": t + 0.8,
                    "device_ms": 950.0 if device else None, "ready_after": ready}); t += 0.81
        if last and clip:
            out.append({"ev": "clip", "t0": t, "t1": t + 0.02, "device_ms": 25.0 if device else None,
                        "ready_after": 0}); t += 0.02
        for owner in owners:
            out.append({"ev": "optimizer_step", "t0": t, "t1": t + (0.05 if last else 0.0001),
                        "device_ms": 40.0 if device else None, "ready_after": ready,
                        "owner": owner, "sync": last}); t += 0.06
        out.append({"ev": "micro_exit", "t": t}); t += 0.002
    return out, t


def training(env, steps, model=WAN, trainable=None, ckpt=True, device="NVIDIA H100 80GB HBM3",
             world=1, rank=0, sp=1, **step_kw):
    lines = [{"ev": "config", "env": env, "device": device, "device_index": rank % 8, "rank": rank,
              "world_size": world, "sp": sp},
             {"ev": "train_model", "params": model["params"],
              "trainable": model["params"] if trainable is None else trainable, "ckpt": ckpt,
              "attn": model["attn"], "text_tokens": model["text_tokens"]}]
    t = 50.0
    for i, kw in enumerate(steps):
        merged = dict(step_kw, **kw)
        merged.setdefault("device", device is not None)
        events, t = step_events(t, **merged)
        lines += events
        if i == 1 and device:
            lines.append({"ev": "memory", "peak_alloc_bytes": 40 * 2**30, "peak_reserved_bytes": 60 * 2**30})
    lines.append({"ev": "finish", "t": t + 0.1})
    return lines


def inference(env, requests, device="NVIDIA H100 80GB HBM3"):
    """Requests of a text encoder, the transformer's calls at (tokens, batch) each, and a VAE
    decode; one after the other from t = 100."""
    lines = [{"ev": "config", "env": env, "device": device, "device_index": 0, "rank": 0,
              "world_size": 1, "sp": 1},
             {"ev": "model", "stage": "transformer", "params": WAN["params"], "attn": WAN["attn"],
              "text_tokens": WAN["text_tokens"]}]
    t = 100.0
    for calls in requests:
        lines.append({"ev": "request_begin", "t": t})
        lines.append({"ev": "stage", "name": "text_encoder", "t0": t, "t1": t + 0.02,
                      "device_ms": 15.0}); t += 0.02
        for tokens, batch in calls:
            lines.append({"ev": "stage", "name": "transformer", "t0": t, "t1": t + 0.5,
                          "device_ms": 480.0, "tokens": tokens, "batch": batch}); t += 0.5
        lines.append({"ev": "stage", "name": "vae_dec", "t0": t, "t1": t + 0.3,
                      "device_ms": 290.0}); t += 0.3
        lines.append({"ev": "request_end", "t": t}); t += 0.1
    lines.append({"ev": "finish", "t": t})
    return lines


SCENARIOS = {
    # Calls on zero rows (an empty batch, a split whose share came to nothing) cost nothing.
    "i-zero-rows": inference({"VIDEOX_PERF": "1"}, [[(32760, 0)] * 3, [(32760, 2)] * 3,
                                                   [(32760, 0), (32760, 0)]]),
    # Gradient accumulation: three pass-through optimizer calls before the real one.
    "t-accumulation": training({"VIDEOX_PERF": "2", "VIDEOX_PERF_EVERY": "2"}, [{}] * 5, accumulation=4),
    # Two optimizers (generator, critic): the first to close a step owns the boundary.
    "t-two-optimizers": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "3"}, [{}] * 7,
                                 owners=("generator", "critic"), accumulation=2),
    # Every step of the first window is warmup: the window falls back to itself.
    "t-all-warmup": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "3", "VIDEOX_PERF_WARMUP": "4"},
                             [{}] * 8),
    # Buckets: token counts vary step to step, some steps carry none (unpriced).
    "t-variable-tokens": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "4", "VIDEOX_PERF_TOTAL_STEPS": "100"},
                                  [{"tokens": 1560, "samples": 4}, {"tokens": 32760}, {"tokens": 0},
                                   {"tokens": 75600}, {"tokens": 8190, "samples": 2}, {"tokens": 0},
                                   {"tokens": 1560, "samples": 4}, {"tokens": 32760}]),
    # Device events ready one and two steps late: settled from the device, late.
    "t-late-1": training({"VIDEOX_PERF": "2", "VIDEOX_PERF_EVERY": "2"}, [{}] * 5, ready=1),
    "t-late-2": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2"}, [{}] * 5, ready=2),
    # Three late: past the settling lag, read off the host clock.
    "t-late-3": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2"}, [{}] * 6, ready=3),
    # Never ready: host clock for every device pair, forced out at finish.
    "t-never-ready": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "4"}, [{}] * 6, ready=10**6),
    # LoRA without checkpointing, sequence parallel 4 of 8, logging from every rank.
    "t-lora-sp": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "3", "VIDEOX_PERF_RANKS": "all"},
                          [{}] * 4, trainable=5000000, ckpt=False, world=8, rank=5, sp=4,
                          extra_phases=("vae_enc", "text_encoder")),
    # Host-only training with a coefficient override.
    "t-host-coef": training({"VIDEOX_PERF": "1", "VIDEOX_PERF_EVERY": "2", "VIDEOX_PERF_FLOPS_COEF": "4"},
                            [{}] * 3, device=None),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, lines in SCENARIOS.items():
        path = os.path.join(out, f"{name}.events.jsonl")
        with open(path, "w") as handle:
            handle.write("\n".join(json.dumps(line) for line in lines) + "\n")
        print(path)


if __name__ == "__main__":
    main()
