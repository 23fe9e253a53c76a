"""The records as Python sees them: the dicts vxperf.add_sink() functions, vxperf.last_request(),
the request listeners and the trackers get, each the JSON line the engine writes.

One TypedDict per object of the field table (src/schema/record_fields.h), its keys as the table
names them; a key the table writes only sometimes (an `optional`, `unless`, `flag` or `group` row,
the device readings) is in the `total=False` half. tests/python/test_typing.py holds these to the
table and to real records. For type checkers and readers only: nothing checks a record at run
time."""

from typing import Literal, Optional, TypedDict, Union

__all__ = [
    "CrossRankView", "DeviceReadings", "DitThroughput", "Ledger", "OutsideSteps",
    "ParallelLayout", "PhaseScores", "Record", "RequestRecord", "StageSummary", "TrainEndRecord",
    "TrainThroughput", "TrainWindowRecord",
]


class DeviceReadings(TypedDict, total=False):
    """A record measured on a device: its "device" ("cuda:N") and readings, at the record's top
    level. The meter's (NVML, powercap) are each present only when read."""

    device: str
    peak_alloc_bytes: int
    peak_reserved_bytes: int
    energy_j: float
    energy_from: str
    energy_shared: bool
    power_w_mean: float
    sm_clock_mhz_min: int
    temp_c_max: int
    throttle: list[str]
    cpu_energy_j: float


class _Head(TypedDict):
    ts: float
    rank: int
    world_size: int


class _HeadOptional(_Head, total=False):
    attempt: int
    run_id: str


class StageSummary(TypedDict):
    """One stage of a request ("stages"): its calls and their times."""

    count: int
    total_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float


class _EfficiencyBasis(TypedDict, total=False):
    # What an MFU rests on, each written only when it is not the reference's assumption.
    peak_source: str
    dtype: str
    weights_dtype: str
    attn_density: float
    skipped_fwd: int
    effective_fwd: float


class _DitRequired(TypedDict):
    params: int
    tokens: int
    batch: int
    devices: int
    flops_per_fwd: float
    attn_share: float
    tflops: float
    peak_tflops: Optional[float]
    mfu: Optional[float]


class DitThroughput(_DitRequired, _EfficiencyBasis, total=False):
    """A request's transformer pricing ("dit")."""


# Functional form: "from" is a Python keyword.
ParallelLayout = TypedDict("ParallelLayout", {
    "dp": int, "dp_replicate": int, "dp_shard": int, "cp": int, "tp": int, "group": int,
    "dp_rank": int, "from": dict[str, str],
})
ParallelLayout.__doc__ = """The layout a record's rates and peak were taken with ("parallel"), and
where each dimension was read ("from")."""


class _RequestRequired(_HeadOptional):
    kind: Literal["request"]
    req: int
    warmup: bool
    e2e_s: float
    stages: dict[str, StageSummary]
    dit: Optional[DitThroughput]


class RequestRecord(_RequestRequired, DeviceReadings, total=False):
    """A request record (`kind` "request"): one pipeline call or request() scope."""

    videos: int
    energy_j_per_video: float
    queue_s: float
    first_step_s: float
    denoising_steps: int
    video_s: float
    realtime_factor: float
    parallel: ParallelLayout


class _ThroughputRequired(TypedDict):
    samples_per_s: float
    samples: float
    wall_s: float
    dp: int


class TrainThroughput(_ThroughputRequired, _EfficiencyBasis, total=False):
    """A window's throughput ("throughput"); the pricing keys only when some step was priced
    (all of them together)."""

    params: int
    trainable: int
    tokens: float
    priced_steps: int
    priced_s: float
    flops_coef: float
    flops_coef_hw: float
    flops_coef_reason: str
    flops_per_step: float
    attn_share: float
    devices: int
    tflops: float
    hw_tflops: float
    peak_tflops: Optional[float]
    mfu: Optional[float]
    hfu: Optional[float]


class RankStep(TypedDict):
    """A rank and its median step time ("min", "max" of the cross-rank view)."""

    rank: int
    step_s_p50: float


class RankBytes(TypedDict):
    """A rank and a number of bytes (the cross-rank view's highest memory peak)."""

    rank: int
    bytes: int


class PhaseScores(TypedDict):
    """One phase's scores by rank ("phase_scores" of the cross-rank view, under the phase's
    name): NVIDIA Resiliency's relative and individual scores of the phase's mean time."""

    relative: list[float]
    individual: list[float]


class _CrossRankRequired(TypedDict):
    ranks: int
    step_s_p50: list[float]
    median_s: float
    min: RankStep
    max: RankStep
    excess_s: list[float]
    stragglers: list[int]
    straggler_phases: list[str]
    samples_per_s: Optional[float]
    tflops: Optional[float]
    exchange_s: float
    relative_score: list[float]
    individual_score: list[float]
    lost_s: list[float]
    phase_scores: dict[str, PhaseScores]


class CrossRankView(_CrossRankRequired, total=False):
    """The live cross-rank view of a window ("xrank", VIDEOX_PERF_XRANK=1)."""

    peak_alloc_bytes: RankBytes


class _OutsideRequired(TypedDict):
    saves: int
    save_s: float
    restores: int
    restore_s: float
    evals: int
    eval_s: float


class OutsideSteps(_OutsideRequired, total=False):
    """Checkpoints and evaluations outside the steps of a window ("outside")."""

    save_bytes: int
    save_gb_per_s: float
    restore_bytes: int
    restore_gb_per_s: float


#: Where the training loop's wall time went so far ("ledger"): "wall_s", "steps", "ideal_step_s",
#: "productive_s" and "goodput", then a key per part of the ledger, each in seconds ("save_s",
#: "between_steps_s", ...; docs/RECORDS.md says each, and which are written only where not 0).
#: A mapping rather than a TypedDict: the parts are one table in the engine (kLedgerParts), and a
#: key per part here would be a second list to keep in step (test_typing holds real ledgers to it).
Ledger = dict[str, float]


class _WindowRequired(_HeadOptional):
    kind: Literal["train_window"]
    step_first: int
    step_last: int
    steps: int
    warmup_excluded: int
    step_s_p50: float
    step_s_p95: float
    phases_s: dict[str, float]
    micro_steps: float
    overrun_s: float
    throughput: Optional[TrainThroughput]


class TrainWindowRecord(_WindowRequired, DeviceReadings, total=False):
    """A training-window record (`kind` "train_window"): the steps of one window."""

    energy_j_per_sample: float
    eta_s: float
    xrank: CrossRankView
    outside: OutsideSteps
    ledger: Ledger
    parallel: ParallelLayout


class _EndRequired(_HeadOptional):
    kind: Literal["train_end"]
    step_first: int
    step_last: int
    steps: int
    after_last_step_s: float


class TrainEndRecord(_EndRequired, total=False):
    """The training's end (`kind` "train_end"): one per process, after its last window, with the
    loop's ledger through that moment."""

    ledger: Ledger


#: Any record, told apart by its "kind".
Record = Union[RequestRecord, TrainWindowRecord, TrainEndRecord]
