// Measured peaks: VIDEOX_PERF_PEAK_TFLOPS=auto and `vxperf calibrate`.
//
// A table peak is a datasheet's; a measured one is what this device actually reaches on dense
// matmuls in the run's dtype, which is what a CPU run (no table entry) or an unlisted GPU needs for
// an MFU at all. The core has no Torch, so it never measures: a front end (the LibTorch adapter,
// the Python package, `vxperf calibrate`) runs a short probe of large GEMMs (best of several,
// bounded in time) through calibrate_peak() and hands the result to Engine::set_measured_peak.
// calibrate_peak() keeps every result in a cache on disk, so a machine is probed once per device
// and dtype; a later run reads it instead. The engine itself reads that cache too, for a GPU that
// no front end has calibrated in this process (one `vxperf calibrate` serves a plain C++ program).
//
// The cache, one file shared by every front end: $XDG_CACHE_HOME/vxperf/peaks.json (default
// ~/.cache/vxperf/peaks.json):
//
//   {"format": "vxperf-peaks", "version": 1, "peaks": [
//     {"device": "NVIDIA H100 80GB HBM3", "dtype": "bf16", "tflops": 712.4, "n": 8192,
//      "gemms": 20, "seconds": 1.9, "ts": 1712345678.9, "by": "libtorch"}]}
//
// "device" is the device's name for a GPU and "cpu: MODEL (N threads)" for the host (a CPU's rate
// depends on the threads the probe ran with). A file that is not JSON, or is another program's (no
// such "format"/"version"), is ignored with a warning and replaced at the next store; an entry
// whose rate is not a positive number is ignored likewise.
//
// Thread safety: the functions here may be called from any thread; concurrent stores (several
// ranks of one machine) each replace the file whole, so the file is never torn.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vxperf/cost_model.h"
#include "vxperf/settings.h"

namespace vxperf {

// Where an MFU's peak came from; records say it ("peak_source") unless it is the table.
enum class PeakSource { kTable, kEnv, kMeasured };
const char* peak_source_name(PeakSource source);  // "table", "env", "measured"

struct MeasuredPeak {
  std::string device;  // the cache key: a GPU's name, or cpu_device_key()
  Dtype dtype = Dtype::kBf16;
  double tflops = 0;       // best dense matmul rate seen, per device
  std::int64_t n = 0;      // the GEMMs' size (n x n times n x n)
  std::int64_t gemms = 0;  // GEMMs timed
  double seconds = 0;      // the probe's wall time
  double ts = 0;           // when it was measured (Unix seconds)
  std::string by;          // what measured it: "libtorch", "torch"
};

// $XDG_CACHE_HOME/vxperf/peaks.json, else $HOME/.cache/vxperf/peaks.json; "" when neither
// variable is set.
std::string peak_cache_path(const EnvLookup& env = process_env());

// The cached entry for `device` and `dtype`, or nullopt. An unusable file or entry is reported
// through `warn` (one line, "vxperf: ...") and ignored.
std::optional<MeasuredPeak> load_cached_peak(const std::string& path, const std::string& device,
                                             Dtype dtype,
                                             const std::function<void(const std::string&)>& warn);
// Every usable entry of the cache, in file order (for `vxperf calibrate --list`).
std::vector<MeasuredPeak> load_cached_peaks(const std::string& path,
                                            const std::function<void(const std::string&)>& warn);
// Adds `peak` to the cache, replacing the entry of the same device and dtype (the folder is made
// when missing; the file is replaced by a rename). False, with `error` set, when it cannot write.
bool store_cached_peak(const std::string& path, const MeasuredPeak& peak, std::string* error);

// The host CPU's cache key: "cpu: <model name> (<threads> threads)".
std::string cpu_device_key(int threads);

// Runs a measurement of one device and dtype, or nullopt when it cannot (no such device, the dtype
// unsupported there). The front ends provide one (LibTorch: vxperf/torch.h; Python).
using PeakProbe = std::function<std::optional<MeasuredPeak>()>;

struct Calibration {
  MeasuredPeak peak;
  bool from_cache = false;  // read from the cache rather than measured now
};

// What a front end calls: the cached peak of `device` (a cache key) in `dtype`, else `probe`'s
// result, which is then stored in the cache (`force`: measure even when cached). nullopt when
// neither gives one; problems (an unusable cache, a failed store) go to `warn`. `cache_path` ""
// means peak_cache_path(); a path that cannot be had (no HOME) just skips the cache.
std::optional<Calibration> calibrate_peak(const std::string& device, Dtype dtype,
                                          const PeakProbe& probe, bool force,
                                          const std::function<void(const std::string&)>& warn,
                                          const std::string& cache_path = {});

}  // namespace vxperf
