#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "demo/demo.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kDemoCommand = {
    "demo", run,
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
    "  --no-metrics         the same work with metrics off (VIDEOX_PERF=0)\n",
    "run the embedded text-to-video workload (inference + training) with metrics on", kNeedsTorch};

namespace {

#if defined(VXPERF_HAVE_DEMO)
// The options into `o`; a UsageError names the one that is wrong.
void parse_options(int argc, char** argv, demo::Options& o) {
  // The whole-number options: where each goes and its least value.
  const struct {
    const char* name;
    int* to;
    int min;
  } whole[] = {
      {"--frames", &o.frames, 1},
      {"--steps", &o.steps, 1},
      {"--requests", &o.requests, 0},
      {"--train-steps", &o.train_steps, 0},
      {"--lora-rank", &o.lora_rank, 1},
      {"--accum", &o.accum, 1},
      {"--dim", &o.dim, 1},
      {"--layers", &o.layers, 1},
      {"--heads", &o.heads, 1},
      {"--ffn", &o.ffn, 1},
      {"--text-len", &o.text_len, 1},
      {"--threads", &o.threads, 1},
  };
  for (Args args(argc, argv); args.next();) {
    auto bad_value = [&] {
      return UsageError{"bad or missing value for " + args.arg() + " (try --help)"};
    };
    auto value = [&] {
      if (args.index() + 1 >= argc) throw bad_value();
      return args.value();
    };
    auto number = [&](std::int64_t min) {
      try {
        return args.integer(min, 1000000);
      } catch (const UsageError&) {
        throw bad_value();
      }
    };
    auto option = std::find_if(std::begin(whole), std::end(whole),
                               [&](const auto& w) { return args.is(w.name); });
    if (option != std::end(whole)) {
      *option->to = static_cast<int>(number(option->min));
    } else if (args.is("--preset")) {
      o.preset = value();
    } else if (args.is("--device")) {
      o.device = value();
    } else if (args.is("--dtype")) {
      o.dtype = value();
      if (o.dtype != "f32" && o.dtype != "bf16") throw bad_value();
    } else if (args.is("--size")) {
      if (std::sscanf(value().c_str(), "%dx%d", &o.width, &o.height) != 2) throw bad_value();
    } else if (args.is("--cfg") || args.is("--no-cfg")) {
      o.cfg = args.is("--cfg");
    } else if (args.is("--lora") || args.is("--full")) {
      o.lora = args.is("--lora");
    } else if (args.is("--seed")) {
      o.seed = static_cast<std::uint64_t>(number(0));
    } else if (args.is("--out")) {
      o.out_dir = value();
    } else if (args.is("--no-metrics")) {
      o.metrics = false;
    } else {
      throw UsageError{"unexpected argument '" + args.arg() + "' (try --help)"};
    }
  }
}
int run(int argc, char** argv) {
  demo::Options o;
  parse_options(argc, argv, o);
  try {
    auto result = demo::run(o);
    std::printf("output digest: %s\n", result.digest.c_str());
    std::fflush(stdout);
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vxperf demo: failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
#else
int run(int, char**) {
  std::fprintf(stderr, "vxperf demo: built without the demo (VXPERF_BUILD_DEMO=OFF)\n");
  return 2;
}
#endif

}  // namespace
}  // namespace vxperf::cli
