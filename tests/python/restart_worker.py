"""One rank of an accelerate job that is restarted (run under torchrun --max-restarts 1): the main
process alone saves a checkpoint every --save-every steps, as diffusers' training scripts do
(`if accelerator.is_main_process: accelerator.save_state(...)`), through accelerate's save_state
or (--saver dcp) torch.distributed.checkpoint's save of the model's and optimizer's state without
the process group (no_dist), while every rank restores it; each rank sleeps --data-s per step for
its batch (--slow-rank sleeps --slow-s more from --slow-from on), and --kill-rank leaves with
os._exit at step --kill-at in the first attempt. A later attempt restores the last checkpoint and
trains on to --steps.

    python restart_worker.py --out DIR [--steps 60] ...
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from accelerate import Accelerator

import vxperf


def last_checkpoint(out):
    """The folder of the last checkpoint saved under `out` and its step, or (None, 0)."""
    saved = [(int(name.split("-")[1]), name) for name in os.listdir(out)
             if name.startswith("checkpoint-")]
    if not saved:
        return None, 0
    step, name = max(saved)
    return os.path.join(out, name), step


def dcp_state(accelerator, model, optimizer):
    """What a DCP checkpoint of this job holds: the model's weights and the optimizer's state."""
    return {"model": accelerator.unwrap_model(model).state_dict(),
            "optimizer": optimizer.state_dict()}


def join_group(attempt):
    """The process group of this attempt. torchrun's agent keeps one store across restarts, and
    gloo would read the first attempt's addresses from it (torch 2.13 hangs up, "Connection
    refused"): each attempt's keys get a prefix of their own. accelerate takes the group as is."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world,
                          is_master=not agent and rank == 0)
    dist.init_process_group("gloo", store=dist.PrefixStore(f"attempt{attempt}", store), rank=rank,
                            world_size=world)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--save-every", type=int, default=20)
    parser.add_argument("--data-s", type=float, default=0.03)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--slow-from", type=int, default=10)
    parser.add_argument("--slow-s", type=float, default=0.03)
    parser.add_argument("--kill-rank", type=int, default=3)
    parser.add_argument("--kill-at", type=int, default=30)
    parser.add_argument("--saver", choices=("accelerate", "dcp"), default="accelerate")
    args = parser.parse_args()
    vxperf.install_training()
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    torch.manual_seed(0)
    join_group(attempt)
    accelerator = Accelerator(cpu=True)
    rank = accelerator.process_index
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    model, optimizer = accelerator.prepare(model, optimizer)
    os.makedirs(args.out, exist_ok=True)
    path, start = last_checkpoint(args.out)
    if path is not None and args.saver == "dcp":
        # Every rank reads the main process's checkpoint by itself, into its own state.
        state = dcp_state(accelerator, model, optimizer)
        dcp.load(state, checkpoint_id=path, no_dist=True)
        accelerator.unwrap_model(model).load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    elif path is not None:
        accelerator.load_state(path)
    for step in range(start, args.steps):
        if attempt == 0 and rank == args.kill_rank and step == args.kill_at:
            os._exit(1)
        time.sleep(args.data_s + (args.slow_s if rank == args.slow_rank and
                                  step >= args.slow_from else 0.0))
        batch = torch.randn(8, 64)
        with accelerator.accumulate(model):
            loss = model(batch).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        if (step + 1) % args.save_every == 0 and accelerator.is_main_process:
            folder = os.path.join(args.out, f"checkpoint-{step + 1}")
            if args.saver == "dcp":
                dcp.save(dcp_state(accelerator, model, optimizer), checkpoint_id=folder,
                         no_dist=True)
            else:
                accelerator.save_state(folder)
    accelerator.end_training()
    # The group this script made is its to end (accelerate's end_training may have ended it).
    if dist.is_initialized():
        dist.destroy_process_group()
    # Then out, past the interpreter's teardown of torch's threads, which aborted one run in a
    # few here ("terminate called without an active exception", after every record was out):
    # vxperf's own end is taken first.
    vxperf.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
