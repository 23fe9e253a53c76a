#include <cstdio>
#include <exception>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/torch_reading.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kInspectCommand = {
    "inspect", run,
    "usage: vxperf inspect MODEL.pt [--json] [--world-size N --sharded]\n\n"
    "Loads a TorchScript model (torch::jit::load, on the CPU) and prints what vxperf reads off\n"
    "it: parameter and trainable counts, attention query widths split self/cross, the text\n"
    "length (`text_len`) and the patch size (`patch_size`).\n\n"
    "  --json          one JSON object: params, trainable, attn {self, cross, modules},\n"
    "                  text_tokens, patch_size, checkpointing\n"
    "  --world-size N  ranks the model is sharded over (with --sharded)\n"
    "  --sharded       the file holds one rank's shard: counts are multiplied by N\n",
    "read a TorchScript model: parameters, attention widths, text length, patch size", kNeedsTorch};

namespace {

#if defined(VXPERF_HAVE_TORCH)
int run(int argc, char** argv) {
  std::string path;
  bool json = false;
  torch::ReadOptions options;
  int world_size = 1;
  bool sharded = false;
  for (Args args(argc, argv); args.next();) {
    if (args.is("--json")) {
      json = true;
    } else if (args.is("--sharded")) {
      sharded = true;
    } else if (args.is("--world-size") && args.index() + 1 < argc) {
      try {
        world_size = std::stoi(args.value());
      } catch (const std::exception&) {
        world_size = 0;
      }
      if (world_size < 1) throw UsageError{"--world-size takes a positive integer"};
    } else if (path.empty() && args.arg().rfind("--", 0) != 0) {
      path = args.arg();
    } else {
      throw UsageError{"unexpected argument '" + args.arg() + "'"};
    }
  }
  if (path.empty()) throw UsageError{"missing MODEL.pt (try --help)"};
  options.world_size = world_size;
  options.sharded = sharded;
  try {
    auto reading = torch::read_model_file(path, options);
    if (json) {
      std::printf("%s\n", torch::reading_json(reading).c_str());
    } else {
      std::printf("%s\n%s", path.c_str(), torch::format_reading(reading).c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vxperf inspect: %s\n", e.what());
    return 2;
  }
  return 0;
}
#else
int run(int, char**) { return 2; }  // not reached: run_command execs vxperf-torch
#endif

}  // namespace
}  // namespace vxperf::cli
