// `vxperf demo`: the embedded text-to-video workload (workload.h) run with metrics on, a few
// inference requests then a short training run, as a program instrumented with vxperf would.
#pragma once

#include <cstdint>
#include <string>

namespace vxperf::demo {

struct Options {
  std::string preset;          // a name of vxperf/presets.h; "": a tiny model
  std::string device = "cpu";  // "cpu" or "cuda" / "cuda:N"
  std::string dtype = "f32";   // "f32" or "bf16"
  int width = 64, height = 64, frames = 9;
  int steps = 4;    // sampler steps per request
  bool cfg = true;  // classifier-free guidance (a batch of 2 per transformer call)
  double guidance = 5.0;
  int requests = 2;
  int train_steps = 8;  // optimizer steps; 0 skips training
  bool lora = false;    // LoRA adapters on the attention projections, base frozen
  int lora_rank = 4;
  int accum = 2;  // micro-steps per optimizer step
  // Where records.jsonl and trace.jsonl go: a folder that holds no run yet. "": a new
  // vxperf-demo/run-TIME folder under the current directory.
  std::string out_dir;
  bool metrics = true;
  std::uint64_t seed = 0;
  int threads = 2;  // intra-op threads (fixed so that the digest is reproducible)
  // Model size; 0 keeps the preset's value.
  int dim = 0, layers = 0, heads = 0, ffn = 0, text_len = 0;
};

struct Result {
  std::string digest;   // hex FNV-1a 64 of the last video and the trained weights
  std::string out_dir;  // where records.jsonl and trace.jsonl went ("" with metrics off)
  double seconds = 0;
};

// Runs the demo. Throws std::invalid_argument on bad options (an --out that holds a run already
// or cannot be written among them), other std::exception on failure.
Result run(const Options& options);

}  // namespace vxperf::demo
