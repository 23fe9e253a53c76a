"""One rank of the sharding tests, under torchrun on CPU (gloo): every sharding torch ships and the
parallel layouts programs use, each model built the same on every rank, its truth (parameter and
trainable counts) taken before wrapping, then what vxperf reads of it. Each rank writes what it
saw to OUT.rank{N}.json; tests/python/test_sharding.py checks the ranks against the truth and
against each other.

    torchrun --nproc_per_node 2 sharding_worker.py --out OUT [--counts] [--train 1|2]
        [--trackers wandb,tensorboard,mlflow]

--counts: every layout this world size allows, counted and read (nothing registered); with 2
ranks also a real diffusers pipeline whose transformer is sharded with FSDP2 after it was built,
one request per rank. --train: then accelerate with its FSDP plugin of that version trains a
real WanTransformer3DModel (the one trained model of the process), its windows going to the
trackers named.
"""
import argparse
import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore")


# ---- models ---------------------------------------------------------------------------------


class Block(nn.Module):
    """A linear-heavy block (tensor parallel's case): attention projections and an MLP, one of
    odd size so that shards are padded."""

    def __init__(self, dim=16, hidden=37):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        weights = torch.softmax(q @ k.transpose(-1, -2) / 4.0, dim=-1)
        x = x + self.o(weights @ v)
        return x + self.down(torch.relu(self.up(x)))


class Model(nn.Module):
    def __init__(self, blocks=2, dim=16, odd=True):
        super().__init__()
        self.embed = nn.Linear(7 if odd else 8, dim)
        self.blocks = nn.ModuleList(Block(dim, 37 if odd else 32) for _ in range(blocks))
        self.head = nn.Linear(dim, 3 if odd else 4)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def fresh(odd=True, seed=0):
    torch.manual_seed(seed)
    return Model(odd=odd)


def truth(model):
    return {"params": sum(p.numel() for p in model.parameters()),
            "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
            "lora": sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)}


def with_lora(model):
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=2, target_modules=["q", "v"]))


# ---- what vxperf reads ----------------------------------------------------------------------


_REFERENCE = {}


def reference():
    """The reference module ($VXPERF_REFERENCE) when it is around, else None."""
    path = os.environ.get("VXPERF_REFERENCE", "")
    if "module" not in _REFERENCE:
        _REFERENCE["module"] = None
        if os.path.exists(path):
            import importlib.util

            spec = importlib.util.spec_from_file_location("seed_perf", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _REFERENCE["module"] = module
    return _REFERENCE["module"]


def read(model, accelerator=None):
    from vxperf import _layout, _params

    counted = _params.count(model)
    layout = _layout.read(model, accelerator)
    seen = {"params": counted.params, "trainable": counted.trainable, "lora": counted.lora,
            "kinds": sorted(counted.kinds),
            "dims": {d: list(v) for d, v in layout.dims.items()},
            "dp_rank": layout.dp_rank}
    ref = reference()
    if ref is not None:  # what the reference counts of the same model, side by side
        seen["reference_params"] = int(ref._count_params(model, dist.get_world_size()))
    return seen


def fsdp1(model, **kwargs):
    from torch.distributed.fsdp import FullyShardedDataParallel

    return FullyShardedDataParallel(model, device_id=torch.device("cpu"), **kwargs)


def mesh(shape, names):
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", shape, mesh_dim_names=names)


def tensor_parallel(model, tp_mesh):
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    plan = {}
    for i in range(len(model.blocks)):
        for name in ("q", "k", "v", "up"):
            plan[f"blocks.{i}.{name}"] = ColwiseParallel()
        for name in ("o", "down"):
            plan[f"blocks.{i}.{name}"] = RowwiseParallel()
    return parallelize_module(model, tp_mesh, plan)


def case(results, name, build, odd=True, lora=False, accelerator=None):
    """Builds a fresh model, takes its truth, wraps it with `build` and reads it."""
    model = fresh(odd)
    if lora:
        model = with_lora(model)
    before = truth(model)
    try:
        wrapped = build(model)
        seen = read(wrapped, accelerator)
    except Exception as error:  # a layout this torch cannot build here: said, not hidden
        results[name] = {"error": repr(error)}
        return None
    seen["truth"] = before
    results[name] = seen
    return wrapped


def counts_world2(results):
    from torch.distributed.fsdp import ShardingStrategy, fully_shard

    case(results, "fsdp1_plain_odd", lambda m: fsdp1(m, use_orig_params=False))
    case(results, "fsdp1_orig_odd", lambda m: fsdp1(m, use_orig_params=True))
    case(results, "fsdp1_plain_even", lambda m: fsdp1(m, use_orig_params=False), odd=False)
    case(results, "fsdp1_orig_even", lambda m: fsdp1(m, use_orig_params=True), odd=False)
    case(results, "fsdp1_grad_op", lambda m: fsdp1(
        m, use_orig_params=True, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP))

    def nested(m):
        from torch.distributed.fsdp.wrap import ModuleWrapPolicy

        return fsdp1(m, use_orig_params=False, auto_wrap_policy=ModuleWrapPolicy({Block}))

    case(results, "fsdp1_nested", nested)
    case(results, "fsdp1_lora", lambda m: fsdp1(m, use_orig_params=True), lora=True)

    def fsdp2_whole(m):
        fully_shard(m)
        return m

    def fsdp2_blocks(m):
        for block in m.blocks:
            fully_shard(block)
        fully_shard(m)
        return m

    def fsdp2_partly(m):  # the blocks sharded, the embedding and head left whole
        for block in m.blocks:
            fully_shard(block)
        return m

    case(results, "fsdp2_whole", fsdp2_whole)
    case(results, "fsdp2_blocks", fsdp2_blocks)
    case(results, "fsdp2_partly", fsdp2_partly)
    case(results, "fsdp2_lora", fsdp2_whole, lora=True)
    case(results, "tp", lambda m: tensor_parallel(m, mesh((2,), ("tp",))))
    case(results, "tp_unnamed", lambda m: tensor_parallel(m, mesh((2,), None)))

    def ddp(m):
        return nn.parallel.DistributedDataParallel(m)

    case(results, "ddp", ddp)

    # DDP over the whole world beside xfuser's sequence parallel of 2 (each sample's sequence
    # split over both ranks): one replica, not two. xfuser's parallel state as its module answers.
    import types

    state = types.ModuleType("xfuser.core.distributed.parallel_state")
    state.get_sequence_parallel_world_size = lambda: 2
    state.get_data_parallel_world_size = lambda: 1
    state.get_data_parallel_rank = lambda: 0
    sys.modules[state.__name__] = state
    try:
        case(results, "ddp_xfuser_sp", ddp)
    finally:
        del sys.modules[state.__name__]

    # A wrapper that says it shards but holds whole parameters, no metadata: said once.
    class LooksSharded(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self._fsdp_wrapped_module = inner

        def forward(self, x):
            return self._fsdp_wrapped_module(x)

    case(results, "unknown_wrapper", LooksSharded)

    # accelerate's ParallelismConfig alone, and one that disagrees with the model's mesh.
    from accelerate.parallelism_config import ParallelismConfig

    class Config:  # what accelerate's Accelerator answers for parallelism_config
        def __init__(self, config):
            self.parallelism_config = config

    case(results, "accelerate_config", lambda m: m,
         accelerator=Config(ParallelismConfig(dp_shard_size=2)))
    case(results, "accelerate_disagrees", fsdp2_whole,
         accelerator=Config(ParallelismConfig(tp_size=2)))

    # diffusers' context parallel as enable_parallelism leaves it on the model (it does not start
    # without CUDA devices here): the config set up over a CPU mesh.
    from diffusers.models._modeling_parallel import ContextParallelConfig, ParallelConfig

    def diffusers_cp(m):
        config = ParallelConfig(context_parallel_config=ContextParallelConfig(ulysses_degree=2))
        config.setup(dist.get_rank(), dist.get_world_size(), torch.device("cpu"),
                     mesh=mesh((1, 2), ("ring", "ulysses")))
        m._parallel_config = config
        return m

    case(results, "diffusers_cp", diffusers_cp)


def counts_world4(results):
    from torch.distributed.fsdp import ShardingStrategy, fully_shard

    def hsdp(names):
        def build(m):
            fully_shard(m, mesh=mesh((2, 2), names))
            return m
        return build

    case(results, "hsdp", hsdp(("dp_replicate", "dp_shard")))

    def fsdp2_tp(m):
        world = mesh((2, 2), ("dp", "tp"))
        tensor_parallel(m, world["tp"])
        fully_shard(m, mesh=world["dp"])
        return m

    case(results, "fsdp2_tp", fsdp2_tp)
    case(results, "fsdp1_hybrid", lambda m: fsdp1(
        m, use_orig_params=True, sharding_strategy=ShardingStrategy.HYBRID_SHARD,
        device_mesh=mesh((2, 2), ("dp_replicate", "dp_shard"))))

    from accelerate.parallelism_config import ParallelismConfig

    class Config:
        def __init__(self, config):
            self.parallelism_config = config

    config = ParallelismConfig(dp_shard_size=2, cp_size=2)
    config.device_mesh = config.build_device_mesh("cpu")
    case(results, "accelerate_cp", lambda m: m, accelerator=Config(config))


# ---- end to end ---------------------------------------------------------------------------------


def sharded_pipeline(results):
    """A real diffusers pipeline whose transformer is sharded with FSDP2 after it was built."""
    from torch.distributed.fsdp import fully_shard

    import real_models
    import vxperf

    pipe = real_models.wan(seed=0)
    results["pipeline_truth"] = truth(pipe.transformer)
    fully_shard(pipe.transformer)
    vxperf.instrument_pipeline(pipe)
    generator = torch.Generator().manual_seed(dist.get_rank())
    pipe(prompt="a cat runs", num_inference_steps=2, height=16, width=16, num_frames=5,
         generator=generator, output_type="latent")
    results["pipeline_request"] = vxperf.last_request()


def accelerate_training(results, version, trackers, steps):
    from accelerate import Accelerator
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    import real_models
    import vxperf

    # No models named, as `vxperf run` installs it: the model prepare() wraps in FSDP is the one
    # timed and priced.
    vxperf.install_training(trackers=bool(trackers))
    # Wan's forward reads its submodules' parameters: FSDP1 keeps them with use_orig_params.
    plugin = FullyShardedDataParallelPlugin(fsdp_version=version, use_orig_params=True)
    accelerator = Accelerator(cpu=True, fsdp_plugin=plugin, log_with=trackers or None,
                              project_dir=os.environ.get("SHARDING_TRACKERS_DIR"))
    # On a machine without CUDA accelerate runs multi-CPU DDP; its own tests set FSDP so.
    accelerator.state.distributed_type = DistributedType.FSDP
    accelerator.state.fsdp_plugin = plugin
    if version == 1:  # FSDP1 takes "cpu", not multi-CPU's "cpu:0", as the device its units run on
        accelerator.state.device = torch.device("cpu")
    if trackers:
        accelerator.init_trackers("sharding")
    model = real_models.wan_transformer(seed=0)
    results["train_truth"] = truth(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    prepared = accelerator.prepare(model, optimizer)
    results["prepare_returned"] = type(prepared).__name__
    model, optimizer = prepared
    results["train_kinds"] = sorted(__import__("vxperf")._params.count(model).kinds)
    generator = torch.Generator().manual_seed(100 + dist.get_rank())
    for step in range(steps):
        with accelerator.accumulate(model):
            latents = torch.randn(1, 16, 1, 4, 4, generator=generator)
            text = torch.randn(1, 4, 16, generator=generator)
            out = model(hidden_states=latents, timestep=torch.tensor([500]),
                        encoder_hidden_states=text, return_dict=False)[0]
            loss = out.float().pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        accelerator.log({"loss": float(loss)}, step=step)  # as diffusers' scripts do
    accelerator.end_training()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--counts", action="store_true", help="the counting and layout cases")
    parser.add_argument("--train", type=int, default=0, choices=(0, 1, 2),
                        help="then train through accelerate's FSDP plugin of this version")
    parser.add_argument("--trackers", default="")
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    import vxperf

    vxperf.install()  # metrics on as VIDEOX_PERF says, as a framework's scripts do
    results = {"rank": dist.get_rank(), "world": dist.get_world_size()}
    if args.counts:
        if dist.get_world_size() == 2:
            counts_world2(results)
            sharded_pipeline(results)
        else:
            counts_world4(results)
    if args.train:
        trackers = [t for t in args.trackers.split(",") if t]
        accelerate_training(results, args.train, trackers, args.steps)
    with open(f"{args.out}.rank{results['rank']}.json", "w") as handle:
        json.dump(results, handle, default=repr)
    if dist.is_initialized():  # end_training() destroys it
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
