#include <cstdio>
#include <exception>
#include <string>

#include "cli_util.h"
#include "commands.h"
#if defined(VXPERF_HAVE_TORCH)
#include "vxperf/torch_reading.h"
#endif

namespace vxperf::cli {
namespace {

constexpr const char* kUsage =
    "usage: vxperf inspect MODEL.pt [--json] [--world-size N --sharded]\n\n"
    "Loads a TorchScript model (torch::jit::load, on the CPU) and prints what vxperf reads off\n"
    "it: parameter and trainable counts, attention query widths split self/cross, the text\n"
    "length (`text_len`) and the patch size (`patch_size`).\n\n"
    "  --json          one JSON object: params, trainable, attn {self, cross, modules},\n"
    "                  text_tokens, patch_size, checkpointing\n"
    "  --world-size N  ranks the model is sharded over (with --sharded)\n"
    "  --sharded       the file holds one rank's shard: counts are multiplied by N\n";

}  // namespace

int inspect_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
#if defined(VXPERF_TORCH_HELPER)
  return exec_torch_helper(VXPERF_TORCH_HELPER, "inspect", argc, argv);
#elif !defined(VXPERF_HAVE_TORCH)
  std::fprintf(stderr, "vxperf: built without LibTorch\n");
  return 2;
#else
  std::string path;
  bool json = false;
  torch::ReadOptions options;
  int world_size = 1;
  bool sharded = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--sharded") {
      sharded = true;
    } else if (arg == "--world-size" && i + 1 < argc) {
      try {
        world_size = std::stoi(argv[++i]);
      } catch (const std::exception&) {
        world_size = 0;
      }
      if (world_size < 1) {
        std::fprintf(stderr, "vxperf inspect: --world-size takes a positive integer\n");
        return 2;
      }
    } else if (path.empty() && arg.rfind("--", 0) != 0) {
      path = arg;
    } else {
      std::fprintf(stderr, "vxperf inspect: unexpected argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "vxperf inspect: missing MODEL.pt (try --help)\n");
    return 2;
  }
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
#endif
}

}  // namespace vxperf::cli
