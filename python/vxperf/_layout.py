"""The parallel layout a run used, read from what the program itself uses.

Four dimensions split a job's ranks: dp_replicate and dp_shard (data parallel: each group of
ranks takes its own samples; dp = replicate x shard), cp (context or sequence parallel: ranks
sharing one sample's sequence) and tp (tensor parallel: ranks sharing one sample's weights).
Samples per second scale by dp alone, and a request computed by cp x tp ranks is priced against
that many devices' peak.

Where each is read, the first source that gives a dimension winning it:
  1. VIDEOX_PERF_SP, VIDEOX_PERF_TP, VIDEOX_PERF_DP_SHARD (the engine applies them over the rest);
  2. the model: the DeviceMesh its DTensors live on (dimension names; FSDP2's own mesh for the
     dimensions it shards and replicates over), FSDP1's and DDP's process groups;
  3. accelerate's ParallelismConfig;
  4. diffusers' parallel config on the model (ContextParallelConfig: ring x ulysses;
     TensorParallelConfig);
  5. xfuser's parallel state, as the reference reads it (its data-parallel degree sets how many
     ranks compute one request);
  6. the world: whatever no source gives, dp takes.
A later source that disagrees with an earlier one is said once, naming which won and why. Nothing
here raises into the program: a layout that cannot be read is said and left to the world."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from . import _ext, _state

if TYPE_CHECKING:
    from torch import nn

DIMS = ("dp_replicate", "dp_shard", "cp", "tp")

# Mesh dimension names -> the dimension they are (lower case). "dp" alone is either data-parallel
# kind: sharded when FSDP shards over it, else replicated.
_ROLES: dict[str, str] = {}
for _role, _names in (("dp_replicate", ("dp_replicate", "replicate", "ddp", "dp_rep", "rep")),
                      ("dp_shard", ("dp_shard", "fsdp", "shard", "zero", "dp_sh")),
                      ("dp", ("dp", "data", "data_parallel", "batch")),
                      ("cp", ("cp", "context", "context_parallel", "sp", "seq", "sequence",
                              "ring", "ulysses")),
                      ("tp", ("tp", "tensor", "tensor_parallel", "mp", "model")),
                      ("pp", ("pp", "pipeline", "pipeline_parallel")),
                      ("ep", ("ep", "expert", "expert_parallel"))):
    for _name in _names:
        _ROLES[_name] = _role

_WHY = {
    "model": "the parameters live on it",
    "accelerate": "accelerate built the run from it",
    "diffusers": "the model's attention runs by it",
}


class Layout:
    """Dimensions read so far: {dim: (size, source)}, plus the ranks computing one request and
    this rank's data-parallel index when a source says them."""

    __slots__ = ("dims", "group", "dp_rank", "notes", "ddp_group")

    def __init__(self) -> None:
        self.dims: dict[str, tuple[int, str]] = {}
        self.group: tuple[int, str] | None = None  # (size, source)
        self.dp_rank: int | None = None
        self.notes: list[str] = []
        self.ddp_group: int | None = None  # the size of DDP's process group, where DDP wraps it

    def offer(self, dim: str, size: Any, source: str) -> None:
        """A source's word on one dimension, kept when the dimension is still open."""
        size = int(size)
        if size >= 1 and dim not in self.dims:
            self.dims[dim] = (size, source)

    def offer_all(self, sizes: Mapping[str, Any], source: str) -> None:
        """A configuration's dimensions, taken whole or not at all: one that disagrees with what
        an earlier source read describes another run, and is said once and left out."""
        sizes = {dim: int(size) for dim, size in sizes.items() if int(size) >= 1}
        clashes = [(dim, size) for dim, size in sizes.items()
                   if dim in self.dims and self.dims[dim][0] != size]
        if clashes:
            held = self.dims[clashes[0][0]][1]
            said = ", ".join(f"{dim} {self.dims[dim][0]} vs {size}" for dim, size in clashes)
            _state.warn(("layout-conflict", held, source),
                        f"parallel layout: {_describe(source)} disagrees with {_describe(held)} "
                        f"({said}); {_describe(held)} wins ({_WHY.get(held, 'it comes first')}) "
                        f"and {_describe(source)} is left out")
            return
        for dim, size in sizes.items():
            self.offer(dim, size, source)

    def key(self) -> Hashable:
        return (tuple(sorted(self.dims.items())), self.group, self.dp_rank)


def _describe(source: str) -> str:
    return {"model": "the model's mesh and wrappers", "accelerate": "accelerate's "
            "ParallelismConfig", "diffusers": "diffusers' parallel config",
            "xfuser": "xfuser"}.get(source, source)


def _class(module_name: str, class_name: str) -> Any:
    module = sys.modules.get(module_name)
    return getattr(module, class_name, None) if module is not None else None


# ---- the model ------------------------------------------------------------------------------


def _group_size(group: Any) -> int | None:
    try:
        return int(group.size())
    except Exception:
        return None


def _fsdp2_mesh_infos(module: nn.Module) -> list[Any]:
    """The mesh info of every FSDP2 module in `module`, outermost first."""
    fsdp2 = (_class("torch.distributed.fsdp._fully_shard._fully_shard", "FSDPModule")
             or _class("torch.distributed._composable.fsdp.fully_shard", "FSDPModule"))
    if fsdp2 is None:
        return []
    infos = []
    for sub in module.modules():
        if not isinstance(sub, fsdp2):
            continue
        try:
            group = sub._get_fsdp_state()._fsdp_param_group
        except Exception:
            continue
        if group is not None and getattr(group, "mesh_info", None) is not None:
            infos.append(group.mesh_info)
    return infos


def _signature(mesh: Any) -> Hashable:
    """A mesh as its ranks, shape and names: FSDP2 makes a mesh of its own at each call."""
    return (tuple(int(r) for r in mesh.mesh.flatten().tolist()), tuple(mesh.mesh.shape),
            _mesh_names(mesh))


def _wrappers(module: nn.Module, layout: Layout) -> None:
    """FSDP1 units and DDP: their process groups."""
    fsdp1 = _class("torch.distributed.fsdp.fully_sharded_data_parallel", "FullyShardedDataParallel")
    ddp = _class("torch.nn.parallel.distributed", "DistributedDataParallel")
    for sub in module.modules():
        if fsdp1 is not None and isinstance(sub, fsdp1):
            size = _group_size(getattr(sub, "process_group", None))
            strategy = getattr(getattr(sub, "sharding_strategy", None), "name", "FULL_SHARD")
            if size is None:
                return
            if strategy == "NO_SHARD":
                layout.offer("dp_replicate", size, "model")
            else:
                layout.offer("dp_shard", size, "model")
                if "HYBRID" in strategy:
                    inter = _group_size(getattr(sub, "_inter_node_pg", None))
                    if inter is not None:
                        layout.offer("dp_replicate", inter, "model")
            return
        if ddp is not None and isinstance(sub, ddp):
            size = _group_size(getattr(sub, "process_group", None))
            if size is not None:
                layout.offer("dp_replicate", size, "model")
                layout.ddp_group = size
            return


def _dtensor_meshes(module: nn.Module) -> list[tuple[Any, set[int]]]:
    """[(mesh, placements)] of the model's DTensor parameters, one per distinct mesh."""
    dtensor = (_class("torch.distributed.tensor", "DTensor")
               or _class("torch.distributed._tensor.api", "DTensor"))
    if dtensor is None:
        return []
    seen: dict[int, tuple[Any, set[int]]] = {}
    for param in module.parameters():
        if isinstance(param, dtensor):
            mesh = param.device_mesh
            entry = seen.setdefault(id(mesh), (mesh, set()))
            for index, placement in enumerate(param.placements):
                if placement.is_shard():
                    entry[1].add(index)
    return list(seen.values())


def _mesh_names(mesh: Any) -> tuple[str, ...] | None:
    names = getattr(mesh, "mesh_dim_names", None)
    return tuple(names) if names else None


def _root(mesh: Any) -> Any:
    try:
        root = mesh._get_root_mesh()
    except Exception:
        return mesh
    return root if root is not None else mesh


def _read_named(mesh: Any, layout: Layout, shard_names: set[str], label: str) -> list[int]:
    """Every dimension of a mesh whose dimensions are named; returns the coordinates of this rank
    along the data-parallel ones ([(index, size)]) for its data-parallel index."""
    names = _mesh_names(mesh)
    shape = tuple(int(s) for s in mesh.mesh.shape)
    sizes: dict[str, int] = {}
    data: list[int] = []
    for index, (name, size) in enumerate(zip(names or (), shape)):
        role = _ROLES.get(name.lower())
        if role == "dp":
            role = "dp_shard" if name in shard_names else "dp_replicate"
        if role is None:
            _state.warn(("mesh-name", name),
                        f"parallel layout: the mesh dimension '{name}' ({size} ranks) of {label} "
                        "is no dimension vxperf knows; taken as data parallel (set VIDEOX_PERF_SP "
                        "or VIDEOX_PERF_TP if its ranks share samples)")
            role = "dp_replicate"
        if role in ("pp", "ep"):
            _state.warn(("mesh-name", name),
                        f"parallel layout: {label} is split over '{name}' ({size} ranks, "
                        f"{'pipeline' if role == 'pp' else 'expert'} parallel), which vxperf does "
                        "not price: this rank's parameters are counted as it holds them (set "
                        "VIDEOX_PERF_DIT_PARAMS) and its ranks are taken as tensor parallel")
            role = "tp"
        sizes[role] = sizes.get(role, 1) * size
        if role in ("dp_replicate", "dp_shard"):
            data.append(index)
    for role, size in sizes.items():
        layout.offer(role, size, "model")
    return data


def _coordinates(mesh: Any) -> list[int] | None:
    """This rank's coordinate along each dimension of `mesh`, or None when it is not in it."""
    try:
        import torch.distributed as dist

        rank = dist.get_rank()
        positions = (mesh.mesh == rank).nonzero()
    except Exception:
        return None
    if positions.numel() == 0:
        return None
    return [int(c) for c in positions[0].tolist()]


def _dp_rank(mesh: Any, data_dims: Iterable[int]) -> int | None:
    """This rank's index among the data-parallel groups: its coordinates along the data-parallel
    dimensions of the mesh, row-major."""
    coords = _coordinates(mesh)
    if coords is None:
        return None
    shape = [int(s) for s in mesh.mesh.shape]
    index = 0
    for dim in data_dims:
        index = index * shape[dim] + coords[dim]
    return index


def _from_model(module: nn.Module, layout: Layout, label: str) -> None:
    # FSDP2's own meshes: the dimensions it shards and replicates over.
    fsdp_dims: dict[Hashable, set[int]] = {}  # mesh signature -> the dimensions FSDP uses
    shard_names: set[str] = set()
    for info in _fsdp2_mesh_infos(module):
        names = _mesh_names(info.mesh)
        shard_dim = getattr(info, "shard_mesh_dim", None)
        replicate_dim = getattr(info, "replicate_mesh_dim", None)
        if names and shard_dim is not None:
            shard_names.add(names[shard_dim])
        if shard_dim is not None:
            layout.offer("dp_shard", info.shard_mesh_size, "model")
        if replicate_dim is not None:
            layout.offer("dp_replicate", info.replicate_mesh_size, "model")
        fsdp_dims.setdefault(_signature(info.mesh), set()).update(
            d for d in (shard_dim, replicate_dim) if d is not None)
    _wrappers(module, layout)
    for mesh, sharded_dims in _dtensor_meshes(module):
        root = _root(mesh)
        if _mesh_names(root):
            data = _read_named(root, layout, shard_names, label)
            if layout.dp_rank is None:
                layout.dp_rank = _dp_rank(root, data)
            continue
        # Unnamed: FSDP2's own dimensions are known; any other one its parameters are sharded
        # over is tensor parallel (sharding weights outside FSDP), one they are replicated over
        # data parallel.
        owned = fsdp_dims.get(_signature(mesh), set())
        shape = tuple(int(s) for s in mesh.mesh.shape)
        for dim, size in enumerate(shape):
            if dim in owned:
                continue
            role = "tp" if dim in sharded_dims else "dp_replicate"
            what = ("tensor parallel: its weights are sharded over it outside FSDP" if role == "tp"
                    else "data parallel: its weights are replicated over it")
            _state.warn(("mesh-unnamed", _signature(mesh), dim),
                        f"parallel layout: dimension {dim} ({size} ranks) of the mesh {label}'s "
                        f"parameters live on has no name; taken as {what} (name the mesh "
                        "dimensions, or set VIDEOX_PERF_TP / VIDEOX_PERF_SP)")
            layout.offer(role, size, "model")
        if layout.dp_rank is None and owned:
            layout.dp_rank = _dp_rank(mesh, sorted(owned))


def _model_layout(model: nn.Module, label: str) -> Layout:
    """What the model's own tensors and wrappers say, read once per model (a Layout). Sharded in
    place since (fully_shard, parallelize_module: a new class, new parameters): read again."""
    first = next(iter(model.parameters()), None)
    signature = (type(model), id(first))
    cached: tuple[Hashable, Layout] | None = model.__dict__.get("_vxperf_layout")
    if cached is not None and cached[0] == signature:
        return cached[1]
    held = Layout()
    try:
        _from_model(model, held, label)
    except Exception as error:
        _state.warn(("layout-model", type(model).__name__),
                    f"parallel layout: cannot read how {type(model).__name__} is laid out "
                    f"({error!r}); the configurations and the world decide")
    try:
        model.__dict__["_vxperf_layout"] = (signature, held)
    except Exception:
        pass
    return held


# ---- configurations -------------------------------------------------------------------------


def _from_accelerate(config: Any, layout: Layout) -> None:
    if config is None:
        return
    sequence = (getattr(config, "cp_size", 1) or 1) * (getattr(config, "sp_size", 1) or 1)
    before = dict(layout.dims)
    layout.offer_all({"dp_replicate": getattr(config, "dp_replicate_size", 1) or 1,
                      "dp_shard": getattr(config, "dp_shard_size", 1) or 1, "cp": sequence,
                      "tp": getattr(config, "tp_size", 1) or 1}, "accelerate")
    if layout.dims == before:
        return  # said nothing new, or left out
    mesh = getattr(config, "device_mesh", None)
    if layout.dp_rank is None and mesh is not None and _mesh_names(mesh):
        names = _mesh_names(mesh) or ()
        data = [i for i, n in enumerate(names) if n in ("dp_replicate", "dp_shard")]
        layout.dp_rank = _dp_rank(mesh, data)


def _accelerate_config(accelerator: Any) -> Any:
    """The ParallelismConfig of the accelerator (or of accelerate's shared state), or None."""
    if accelerator is not None:
        try:
            return accelerator.parallelism_config
        except Exception:
            return None
    module = sys.modules.get("accelerate.state")
    state = getattr(module, "AcceleratorState", None) if module is not None else None
    shared = getattr(state, "_shared_state", None) if state is not None else None
    return shared.get("parallelism_config") if isinstance(shared, dict) else None


def _from_diffusers(module: nn.Module, layout: Layout) -> None:
    config = getattr(module, "_parallel_config", None)
    if config is None:
        return
    sizes: dict[str, Any] = {}
    cp = getattr(config, "context_parallel_config", None)
    if cp is not None:
        sizes["cp"] = (getattr(cp, "ring_degree", 1) or 1) * (getattr(cp, "ulysses_degree", 1) or 1)
    tp = getattr(config, "tensor_parallel_config", None)
    if tp is not None:
        sizes["tp"] = getattr(tp, "_tp_degree", None) or getattr(tp, "tp_degree", 1) or 1
    layout.offer_all(sizes, "diffusers")


def _from_xfuser(layout: Layout, world: int) -> None:
    state = sys.modules.get("xfuser.core.distributed.parallel_state")
    if state is None:
        return
    try:
        layout.offer_all({"cp": max(1, int(state.get_sequence_parallel_world_size()))}, "xfuser")
    except Exception:
        return
    if layout.dims.get("cp", (0, None))[1] != "xfuser":
        return  # left out: its groups are another run's
    try:
        dp = max(1, int(state.get_data_parallel_world_size()))
        layout.group = (max(1, world // dp), "xfuser")
        layout.dp_rank = int(state.get_data_parallel_rank())
    except Exception:
        pass  # an xfuser without a data-parallel group: the sequence degree alone


# ---- reading and handing over -------------------------------------------------------------------


def read(model: nn.Module | None = None, accelerator: Any = None,
         label: str = "the model") -> Layout:
    """The Layout of a run whose priced model is `model` (None: the configurations alone)."""
    layout = Layout()
    world = _state.world_size()
    if model is not None:
        held = _model_layout(model, label)
        for dim, (size, source) in held.dims.items():
            layout.offer(dim, size, source)
        layout.dp_rank = held.dp_rank
        layout.ddp_group = held.ddp_group
    try:
        _from_accelerate(_accelerate_config(accelerator), layout)
    except Exception as error:
        _state.warn(("layout-accelerate",), f"parallel layout: cannot read accelerate's "
                    f"ParallelismConfig ({error!r})")
    if model is not None:
        try:
            _from_diffusers(model, layout)
        except Exception as error:
            _state.warn(("layout-diffusers",), f"parallel layout: cannot read diffusers' parallel "
                        f"config ({error!r})")
    _from_xfuser(layout, world)
    _ddp_over_shared_ranks(layout, world)
    product = 1
    for dim in DIMS:
        product *= layout.dims.get(dim, (1, None))[0]
    if world > 1 and layout.dims and product > world:
        _state.warn(("layout-world", product, world),
                    "parallel layout: "
                    f"{' x '.join(f'{d}={s}' for d, (s, _) in layout.dims.items())}"
                    f" spans {product} ranks, more than the world's {world}; the world decides dp")
    return layout


def _ddp_over_shared_ranks(layout: Layout, world: int) -> None:
    """DDP over ranks that also share samples (a DDP over the whole world beside xfuser's sequence
    parallel, the standard way to train with it): its group holds cp x tp ranks per replica, so the
    replicas are the group over cp x tp, not the group itself."""
    shared = layout.dims.get("cp", (1, ""))[0] * layout.dims.get("tp", (1, ""))[0]
    group = layout.ddp_group
    if group is None or shared < 2 or layout.dims.get("dp_replicate") != (group, "model"):
        return
    product = shared * group * layout.dims.get("dp_shard", (1, ""))[0]
    if product > world and group % shared == 0:
        layout.dims["dp_replicate"] = (group // shared, "model")


@dataclasses.dataclass
class _Applied:
    """The layout last handed to the engine (its key), so that an unchanged one is not."""

    key: Hashable | None = None


_applied = _Applied()


def apply(model: nn.Module | None = None, accelerator: Any = None,
          label: str = "the model") -> None:
    """Reads the layout and hands it to the engine (only when it changed)."""
    if not _state.on:
        return
    layout = read(model, accelerator, label)
    key = layout.key()
    if key == _applied.key:
        return
    _applied.key = key

    def size(dim: str) -> int:
        return layout.dims.get(dim, (0, ""))[0]

    sources = [(dim, source) for dim, (_, source) in layout.dims.items()]
    group, group_from = layout.group if layout.group else (0, None)
    if group_from:
        sources.append(("group", group_from))
    _ext.set_parallel(size("cp"), size("tp"), size("dp_shard"), size("dp_replicate"), group,
                      -1 if layout.dp_rank is None else int(layout.dp_rank), sources)
