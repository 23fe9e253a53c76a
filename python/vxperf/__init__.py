"""vxperf: stage-level timing, FLOPs and MFU for video diffusion-transformer inference and training.

The Python face of the vxperf C++ engine, with the entry points of the reference metrics module
(same names, same VIDEOX_PERF* variables, same records and `[Perf]` lines):

    vxperf.install()                      # every pipeline call is a measured request
    vxperf.instrument_pipeline(pipe)      # this pipeline, whatever VIDEOX_PERF says
    vxperf.install_training()             # accelerate-based training loops

and explicit scopes for code hooks cannot reach:

    with vxperf.request(device="cuda:0"):         # one pipeline call
        with vxperf.stage("text_encoder"): ...
        with vxperf.stage("transformer", tokens, batch): ...

    with vxperf.micro_step():                     # training, without accelerate
        with vxperf.model_call("fwd", tokens, samples): loss = model(x)
        with vxperf.backward(): loss.backward()
        with vxperf.optimizer_step(opt): opt.step()

Records in process: vxperf.add_sink(fn) hands every settled record to fn as a dict, and
vxperf.last_request() is the record of the request this thread finished last (what a server returns
with the video); install_training(trackers=True) logs each window through accelerate's trackers.

Honest efficiency: vxperf.calibrate() measures this device's matmul peak (what
VIDEOX_PERF_PEAK_TFLOPS=auto prices against); a transformer call is priced at what its blocks ran
(a cache hit, a skipped guidance branch, the tokens the blocks received: seen by itself, _blocks),
vxperf.skip_forward() / forward_fraction() say it where it cannot be seen, and
vxperf.set_attention_density(module, 0.5) prices causal attention.

Capture ranges: VIDEOX_PERF_PROFILE=steps:3-5 (or requests:0-1) calls the CUDA profiler's
start/stop around exactly those steps or requests (nsys --capture-range=cudaProfilerApi), and
vxperf.profile_range(torch.profiler.profile(...)) starts and stops that profiler with it.

Nothing is measured, wrapped or hooked unless VIDEOX_PERF is set (or a level is given); with it
unset every call here returns after one attribute read. Records, log lines, settlement and the exit
summaries are the C++ engine's; `vxperf report`/`replay`/`trace` read what it writes.
"""

from __future__ import annotations

from . import _ext, _state, integrations
from ._inference import (declare_model, denoising_steps, forward_fraction, instrument_pipeline,
                         queued, request, set_attention_density, skip_forward, timed)
from ._capture import profile_range
from ._install import install, install_training
from ._peak import calibrate
from ._records import add_sink, last_request, remove_sink
from ._training import (backward, checkpoint, clip, evaluation, finish, instrument_module,
                        micro_step, model_call, optimizer_step, phase, register_model,
                        training_device)
from ._training import instrument_model_class
from .integrations.diffusers import track_cache

integrations.register()

__version__ = _ext.version()

#: `with vxperf.stage(name, tokens=0, batch=1):` times one call of a stage in this thread's open
#: request (implemented in C; a no-op scope while metrics are off).
stage = _ext.stage


def enabled() -> bool:
    """Whether metrics are on in this process."""
    return _state.on


def shutdown() -> None:
    """Flushes training and prints the exit summaries now (otherwise done at exit)."""
    _ext.shutdown()


__all__ = [
    "add_sink", "backward", "calibrate", "checkpoint", "clip", "declare_model", "denoising_steps",
    "enabled", "evaluation", "finish",
    "forward_fraction", "install", "install_training", "instrument_model_class",
    "instrument_module", "instrument_pipeline", "last_request", "micro_step", "model_call",
    "optimizer_step", "phase", "profile_range", "queued", "register_model", "remove_sink",
    "request",
    "set_attention_density", "shutdown", "skip_forward", "stage", "timed", "track_cache",
    "training_device",
]

# Metrics on from the environment: the engine is made now (it reads every VIDEOX_PERF* variable
# once). Left unmade otherwise, so that instrument_pipeline(pipe, level) can still turn it on.
if _state.env_level() > 0:
    _state.configure(0)
