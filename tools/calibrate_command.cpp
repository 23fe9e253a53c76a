#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/peak.h"
#include "vxperf/torch_probe.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kCalibrateCommand = {
    "calibrate",
    run,
    "usage: vxperf calibrate [--device cpu|cuda[:N]] [--dtype DTYPE] [--threads N]\n"
    "                        [--budget SECONDS] [--force] [--json] | --list [--json]\n\n"
    "Measures the device's dense matmul peak in a dtype (square GEMMs, best of a few rounds,\n"
    "bounded by --budget) and keeps it in the peak cache, which VIDEOX_PERF_PEAK_TFLOPS=auto\n"
    "reads: a run's MFU is then taken against what this device really reaches. A peak already\n"
    "cached is printed, not measured again, unless --force.\n\n"
    "  --device D      cpu (default), cuda or cuda:N\n"
    "  --dtype DTYPE   bf16 (default), fp16, fp32, tf32 (GPU only); fp8 is not probed\n"
    "  --threads N     CPU threads the probe runs with (default: LibTorch's); part of the key\n"
    "  --budget S      seconds the probe may spend (default 2)\n"
    "  --force         measure even when cached\n"
    "  --json          one JSON object per peak\n"
    "  --list          print the cached peaks (needs no LibTorch)\n\n"
    "The cache: $XDG_CACHE_HOME/vxperf/peaks.json (default ~/.cache/vxperf/peaks.json).\n",
    "measure this device's matmul peak per dtype, cached for VIDEOX_PERF_PEAK_TFLOPS=auto",
    0,
    "list the matmul peaks measured and cached for VIDEOX_PERF_PEAK_TFLOPS=auto (--list)"};

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void print_peak(const MeasuredPeak& p, bool json, const char* how) {
  if (json) {
    std::printf(
        "{\"device\":%s,\"dtype\":\"%s\",\"tflops\":%.9g,\"n\":%lld,\"gemms\":%lld,"
        "\"seconds\":%.6g,\"by\":%s,\"from\":\"%s\"}\n",
        json_string(p.device).c_str(), dtype_name(p.dtype), p.tflops, static_cast<long long>(p.n),
        static_cast<long long>(p.gemms), p.seconds, json_string(p.by).c_str(), how);
    return;
  }
  std::printf("%s  %s  %.4g TFLOPS  (%s: %lld GEMMs of %lld, %.1f s, by %s)\n", p.device.c_str(),
              dtype_name(p.dtype), p.tflops, how, static_cast<long long>(p.gemms),
              static_cast<long long>(p.n), p.seconds, p.by.c_str());
}

int run(int argc, char** argv) {
  bool json = false, force = false, list = false;
  std::string device = "cpu";
  Dtype dtype = Dtype::kBf16;
  int threads = 0;
  double budget = 2.0;
  for (Args args(argc, argv); args.next();) {
    if (args.is("--json")) {
      json = true;
    } else if (args.is("--force")) {
      force = true;
    } else if (args.is("--list")) {
      list = true;
    } else if (args.is("--device")) {
      device = args.value();
    } else if (args.is("--dtype")) {
      std::string text = args.value();
      auto parsed = parse_dtype(text);
      if (!parsed)
        throw UsageError{"--dtype takes bf16, fp16, fp32, tf32 or fp8, not '" + text + "'"};
      dtype = *parsed;
    } else if (args.is("--threads")) {
      threads = static_cast<int>(args.integer(1, 4096));
    } else if (args.is("--budget")) {
      budget = args.number(0.01, 600);
    } else {
      throw UsageError{"unexpected argument '" + args.arg() + "'"};
    }
  }
  auto warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  std::string path = peak_cache_path();
  if (list) {
    for (const auto& p : load_cached_peaks(path, warn)) print_peak(p, json, "cached");
    return 0;
  }
#if defined(VXPERF_TORCH_HELPER)
  (void)force;
  (void)threads;
  (void)budget;
  (void)device;
  (void)dtype;
  return exec_torch_helper(VXPERF_TORCH_HELPER, "calibrate", argc, argv);
#elif !defined(VXPERF_HAVE_TORCH)
  (void)force;
  (void)device;
  (void)dtype;
  (void)threads;
  (void)budget;
  std::fprintf(stderr,
               "vxperf calibrate: the probe needs LibTorch, which this build leaves out (--list "
               "does not); build vxperf from source, or measure from Python: vxperf.calibrate()\n");
  return 2;
#else
  torch::ProbeOptions options;
  options.device = device;
  options.dtype = dtype;
  options.threads = threads;
  options.budget_s = budget;
  std::string why;
  PeakProbe probe = [&]() { return torch::probe_peak(options, &why); };
  auto result =
      calibrate_peak(torch::peak_device_key(device, threads), dtype, probe, force, warn, path);
  if (!result) {
    std::fprintf(stderr, "vxperf calibrate: no peak measured for %s in %s: %s\n", device.c_str(),
                 dtype_name(dtype), why.empty() ? "the probe gave no rate" : why.c_str());
    return 1;
  }
  print_peak(result->peak, json, result->from_cache ? "cached" : "measured now");
  if (!json && !path.empty()) std::printf("cache: %s\n", path.c_str());
  return 0;
#endif
}

}  // namespace
}  // namespace vxperf::cli
