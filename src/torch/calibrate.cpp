// The LibTorch peak probe (vxperf/peak.h): dense GEMMs in the run's dtype, best of a few rounds,
// bounded in wall time; and its hand-over to the process-wide engine.
#include <ATen/Context.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "vxperf/cuda_backend.h"
#include "vxperf/engine.h"
#include "vxperf/torch_probe.h"

namespace vxperf::torch {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Restores what the probe changes (intra-op threads, TF32) however it ends.
struct Restore {
  int threads = 0;
  bool tf32_changed = false;
  bool tf32 = false;
  ~Restore() {
    if (threads > 0) ::torch::set_num_threads(threads);
    if (tf32_changed) at::globalContext().setAllowTF32CuBLAS(tf32);
  }
};

std::optional<::torch::Device> parse_device(const std::string& text, std::string* why) {
  try {
    ::torch::Device device(text);
    if (device.is_cuda()) {
      if (!::torch::cuda::is_available()) {
        *why = "this LibTorch sees no CUDA device";
        return std::nullopt;
      }
      if (!device.has_index()) device.set_index(0);
      if (device.index() >= static_cast<int>(::torch::cuda::device_count())) {
        *why = "no device " + text;
        return std::nullopt;
      }
    } else if (!device.is_cpu()) {
      *why = "only cpu and cuda devices are probed";
      return std::nullopt;
    }
    return device;
  } catch (const std::exception&) {
    *why = "unknown device '" + text + "' (cpu, cuda, cuda:N)";
    return std::nullopt;
  }
}

void sync(const ::torch::Device& device) {
  if (device.is_cuda()) ::torch::cuda::synchronize(device.index());
}

}  // namespace

std::optional<MeasuredPeak> probe_peak(const ProbeOptions& o, std::string* why, ProbeStats* stats) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  ProbeStats local;
  if (stats == nullptr) stats = &local;
  auto device = parse_device(o.device, why);
  if (!device) return std::nullopt;
  ::torch::ScalarType type = ::torch::kFloat;
  Restore restore;
  switch (o.dtype) {
    case Dtype::kBf16:
      type = ::torch::kBFloat16;
      break;
    case Dtype::kFp16:
      type = ::torch::kHalf;
      break;
    case Dtype::kFp32:
      break;
    case Dtype::kTf32:
      if (!device->is_cuda()) {
        *why = "tf32 is a GPU tensor-core mode; a CPU has no such rate";
        return std::nullopt;
      }
      restore.tf32 = at::globalContext().allowTF32CuBLAS();
      restore.tf32_changed = true;
      at::globalContext().setAllowTF32CuBLAS(true);
      break;
    case Dtype::kFp8:
      *why = "fp8 GEMMs are not measured by the LibTorch probe (give VIDEOX_PERF_PEAK_TFLOPS)";
      return std::nullopt;
  }
  if (o.threads > 0 && device->is_cpu()) {
    restore.threads = ::torch::get_num_threads();
    ::torch::set_num_threads(o.threads);
  }
  const double budget = o.budget_s > 0 ? o.budget_s : 2.0;
  const std::int64_t max_n = o.max_n > 0 ? o.max_n : device->is_cuda() ? 8192 : 4096;
  const double target = budget / 25.0;  // one GEMM round's length
  const auto t0 = Clock::now();
  ::torch::NoGradGuard no_grad;
  try {
    // Grow the GEMM until one takes `target`: small ones measure launch and cache effects.
    std::int64_t n = device->is_cuda() ? 1024 : 256;
    ::torch::Tensor a, b, c;
    double one = 0;  // seconds of one GEMM at n
    while (true) {
      auto options = ::torch::TensorOptions().dtype(type).device(*device);
      a = ::torch::randn({n, n}, options);
      b = ::torch::randn({n, n}, options);
      c = ::torch::empty({n, n}, options);
      ::torch::mm_out(c, a, b);  // warm: first-use costs (kernels, workspaces) are not a rate
      sync(*device);
      auto t = Clock::now();
      ::torch::mm_out(c, a, b);
      sync(*device);
      one = std::max(since(t), 1e-9);
      stats->longest_s = std::max(stats->longest_s, one);
      if (one >= target || n >= max_n || since(t0) >= budget) break;
      n = std::min(n * 2, max_n);
    }
    // A round is enough GEMMs to last about `target`; the fastest round is the peak.
    const std::int64_t per_round = std::max<std::int64_t>(1, std::llround(target / one));
    const double flops = 2.0 * double(n) * double(n) * double(n) * double(per_round);
    double best = 0;
    std::int64_t gemms = 0;
    while (stats->rounds < std::max(1, o.rounds) && (stats->rounds == 0 || since(t0) < budget)) {
      auto t = Clock::now();
      for (std::int64_t i = 0; i < per_round; ++i) ::torch::mm_out(c, a, b);
      sync(*device);
      double s = std::max(since(t), 1e-9);
      stats->longest_s = std::max(stats->longest_s, s);
      best = std::max(best, flops / s / 1e12);
      gemms += per_round;
      ++stats->rounds;
    }
    if (!(best > 0) || !std::isfinite(best)) {
      *why = "the probe measured no rate";
      return std::nullopt;
    }
    MeasuredPeak peak;
    peak.device = peak_device_key(o.device, o.threads);
    peak.dtype = o.dtype;
    peak.tflops = best;
    peak.n = n;
    peak.gemms = gemms;
    peak.seconds = since(t0);
    peak.by = "libtorch";
    return peak;
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    *why = "the probe failed: " + what.substr(0, what.find('\n'));
    return std::nullopt;
  }
}

std::string peak_device_key(const std::string& device, int threads) {
  std::string why;
  auto d = parse_device(device, &why);
  if (d && d->is_cuda()) {
    // The name the engine's table and cache lookups see: the driver's, as the CUDA backend reads
    // it (and as torch.cuda.get_device_name reports it).
    if (auto cuda = make_cuda_backend(CudaOptions{})) {
      std::string name = cuda->device_name(d->index());
      if (!name.empty()) return name;
    }
    return "cuda:" + std::to_string(d->index());
  }
  return cpu_device_key(threads > 0 ? threads : static_cast<int>(::torch::get_num_threads()));
}

std::optional<Calibration> calibrate(const ProbeOptions& options, bool force) {
  Engine* engine = vxperf::engine();
  auto warn = [engine](const std::string& line) {
    if (engine != nullptr) {
      engine->notice(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  };
  std::string why;
  PeakProbe probe = [&]() { return probe_peak(options, &why); };
  auto result = calibrate_peak(peak_device_key(options.device, options.threads), options.dtype,
                               probe, force, warn);
  if (!result && !why.empty()) warn("vxperf: no peak measured for " + options.device + ": " + why);
  return result;
}

std::optional<Calibration> use_measured_peak(const std::string& device, Dtype dtype) {
  Engine* engine = vxperf::engine();
  if (engine == nullptr || !engine->wants_measured_peak()) return std::nullopt;
  ProbeOptions options;
  options.device = device;
  // The engine prices with VIDEOX_PERF_DTYPE when it is set, whatever the model says.
  options.dtype = engine->settings().dtype.value_or(dtype);
  auto result = calibrate(options, /*force=*/false);
  if (!result) return std::nullopt;
  std::string why;
  auto d = parse_device(device, &why);
  engine->set_measured_peak(d && d->is_cuda() ? static_cast<int>(d->index()) : -1, result->peak);
  return result;
}

}  // namespace vxperf::torch
