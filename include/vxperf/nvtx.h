// NVTX ranges for Nsight Systems: an observer (vxperf/observer.h) that pushes a range at every
// request, stage, step, micro-step and phase begin and pops it at the end, so that vxperf's names
// sit on Nsight's timeline above the kernels they launched. libnvToolsExt.so.1 is loaded with
// dlopen when the observer is made (no NVIDIA header, no link); that library hands the ranges to
// the tool that injected itself through NVTX_INJECTION64_PATH (Nsight Systems sets it), and drops
// them at almost no cost when none did.
//
//   if (auto ranges = vxperf::make_nvtx_ranges()) engine->add_observer(ranges);
//
// The engine adds one itself with VIDEOX_PERF_NVTX=1. Names: "request <n>", "step <n>" and the
// others' own ("transformer", "micro_step", "fwd", ...; a model call whose phase is said only at
// its end is "model_call"). Ranges nest per thread (nvtxRangePushA / nvtxRangePop); a step's last
// micro-step ends just after its step closes, so their two ends are popped in that order.
//
// Cost: off (the default) attaches nothing, and a point tests one pointer as with no observer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "vxperf/observer.h"

namespace vxperf {

struct NvtxOptions {
  // The library dlopen loads. Tests point it at the fake one.
  std::string library_path = "libnvToolsExt.so.1";
  // Where the one-line notice of a library absent or not NVTX goes. Empty: stderr.
  std::function<void(std::string_view)> notice;
};

// The range emitter, or nullptr after a one-line notice when the library or nvtxRangePushA /
// nvtxRangePop is absent.
std::shared_ptr<Observer> make_nvtx_ranges(const NvtxOptions& options = {});

}  // namespace vxperf
