#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "cli_util.h"
#include "commands.h"
#if defined(VXPERF_HAVE_DEMO)
#include "demo/demo.h"
#endif

namespace vxperf::cli {
namespace {

constexpr const char* kUsage =
    "usage: vxperf demo [OPTIONS]\n\n"
    "Runs the embedded Wan2.1-shaped text-to-video workload (random seeded weights) with metrics\n"
    "on: a few inference requests (text encoder, DiT sampled with flow-matching Euler steps and\n"
    "classifier-free guidance, VAE decode), then a short training run (AdamW, accumulation,\n"
    "clipping). Log lines and summaries go to stderr; records.jsonl and trace.jsonl to --out.\n"
    "Prints 'output digest: HEX', a hash of the last video and the trained weights, identical\n"
    "with --no-metrics. MFU is taken against this device's measured matmul peak in the run's\n"
    "dtype (VIDEOX_PERF_PEAK_TFLOPS=auto: probed once, then read from ~/.cache/vxperf, see\n"
    "'vxperf calibrate'); VIDEOX_PERF_PEAK_TFLOPS=<number> replaces it.\n\n"
    "  --preset NAME        wan2.1-t2v-1.3b or wan2.1-t2v-14b, as vxperf flops (default: tiny)\n"
    "  --device cpu|cuda    where to run (default cpu)\n"
    "  --dtype f32|bf16     weights and activations (default f32)\n"
    "  --size WxH           video size in pixels, multiples of 16 (default 64x64)\n"
    "  --frames N           video frames, 4k+1 (default 9)\n"
    "  --steps N            sampler steps per request (default 4)\n"
    "  --cfg | --no-cfg     classifier-free guidance (default on)\n"
    "  --requests N         inference requests (default 2)\n"
    "  --train-steps N      optimizer steps, 0 for none (default 8)\n"
    "  --lora | --full      LoRA adapters on attention (base frozen) or full fine-tune (default)\n"
    "  --lora-rank N        adapter rank (default 4)\n"
    "  --accum N            micro-steps per optimizer step (default 2)\n"
    "  --dim N --layers N --heads N --ffn N --text-len N   transformer size overrides\n"
    "  --threads N          intra-op CPU threads (default 2)\n"
    "  --seed N             seed of weights, noise and data (default 0)\n"
    "  --out DIR            a new folder for the run's records and trace (default: a new\n"
    "                       vxperf-demo/run-TIME folder); one that holds a run is refused\n"
    "  --no-metrics         the same work with metrics off (VIDEOX_PERF=0)\n";

}  // namespace

int demo_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
#if defined(VXPERF_TORCH_HELPER)
  return exec_torch_helper(VXPERF_TORCH_HELPER, "demo", argc, argv);
#elif !defined(VXPERF_HAVE_DEMO)
  std::fprintf(stderr, "vxperf: built without LibTorch\n");
  return 2;
#else
  demo::Options o;
  auto bad = [](const std::string& what) {
    std::fprintf(stderr, "vxperf demo: %s\n", what.c_str());
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    auto number = [&](int& out, int min) {
      std::string v;
      if (!value(v)) return false;
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < min || n > 1000000) return false;
      out = static_cast<int>(n);
      return true;
    };
    std::string v;
    int n = 0;
    bool ok = true;
    if (arg == "--preset") {
      ok = value(o.preset);
    } else if (arg == "--device") {
      ok = value(o.device);
    } else if (arg == "--dtype") {
      ok = value(o.dtype) && (o.dtype == "f32" || o.dtype == "bf16");
    } else if (arg == "--size") {
      ok = value(v) && std::sscanf(v.c_str(), "%dx%d", &o.width, &o.height) == 2;
    } else if (arg == "--frames") {
      ok = number(o.frames, 1);
    } else if (arg == "--steps") {
      ok = number(o.steps, 1);
    } else if (arg == "--cfg") {
      o.cfg = true;
    } else if (arg == "--no-cfg") {
      o.cfg = false;
    } else if (arg == "--requests") {
      ok = number(o.requests, 0);
    } else if (arg == "--train-steps") {
      ok = number(o.train_steps, 0);
    } else if (arg == "--lora") {
      o.lora = true;
    } else if (arg == "--full") {
      o.lora = false;
    } else if (arg == "--lora-rank") {
      ok = number(o.lora_rank, 1);
    } else if (arg == "--accum") {
      ok = number(o.accum, 1);
    } else if (arg == "--dim") {
      ok = number(o.dim, 1);
    } else if (arg == "--layers") {
      ok = number(o.layers, 1);
    } else if (arg == "--heads") {
      ok = number(o.heads, 1);
    } else if (arg == "--ffn") {
      ok = number(o.ffn, 1);
    } else if (arg == "--text-len") {
      ok = number(o.text_len, 1);
    } else if (arg == "--threads") {
      ok = number(o.threads, 1);
    } else if (arg == "--seed") {
      ok = number(n, 0);
      o.seed = static_cast<std::uint64_t>(n);
    } else if (arg == "--out") {
      ok = value(o.out_dir);
    } else if (arg == "--no-metrics") {
      o.metrics = false;
    } else {
      return bad("unexpected argument '" + arg + "' (try --help)");
    }
    if (!ok) return bad("bad or missing value for " + arg + " (try --help)");
  }
  try {
    auto result = demo::run(o);
    std::printf("output digest: %s\n", result.digest.c_str());
    std::fflush(stdout);
  } catch (const std::invalid_argument& e) {
    return bad(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vxperf demo: failed: %s\n", e.what());
    return 1;
  }
  return 0;
#endif
}

}  // namespace vxperf::cli
