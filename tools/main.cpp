#include <cstdio>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/version.h"

namespace {

using vxperf::cli::Command;
using vxperf::cli::kCommands;

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: vxperf COMMAND [ARGS...]\n\n"
               "Stage-level timing, FLOPs and MFU for diffusion-transformer inference and "
               "training.\n\ncommands:\n");
  // Only what this build runs: a wheel's command has no LibTorch (demo, inspect, calibrate's
  // probe), and says once how to get them rather than listing commands that would refuse.
  const bool torch = vxperf::cli::torch_commands_here();
  for (const Command* c : kCommands) {
    if (!torch && (c->flags & vxperf::cli::kNeedsTorch)) continue;
    const char* summary =
        !torch && c->summary_without_torch ? c->summary_without_torch : c->summary;
    std::fprintf(out, "  %-9s %s\n", c->name, summary);
  }
  if (!torch) {
    std::string missing;
    for (const Command* c : kCommands) {
      if (c->flags & vxperf::cli::kNeedsTorch) missing += std::string(c->name) + ", ";
    }
    std::fprintf(out,
                 "\nnot in this build (they need LibTorch): %sand calibrate's probe; build vxperf "
                 "from source with torch installed (README: the two commands), or measure a peak "
                 "from Python: vxperf.calibrate()\n",
                 missing.c_str());
  }
  std::fprintf(out,
               "\n'vxperf COMMAND --help' describes one command; 'vxperf --version' says which "
               "vxperf this is.\n");
}

// Anything but a command's name.
int not_a_command(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "-V" || name == "version") {
    std::printf("vxperf %s\n", vxperf::version());
    return 0;
  }
  std::vector<std::string> names;
  for (const Command* c : kCommands) names.emplace_back(c->name);
  std::string meant = vxperf::cli::nearest(name, names);
  if (!meant.empty()) {
    std::fprintf(stderr, "vxperf: unknown command '%s' (did you mean '%s'?)\n", name.c_str(),
                 meant.c_str());
  } else {
    std::fprintf(stderr, "vxperf: unknown command '%s' (try 'vxperf --help')\n", name.c_str());
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return vxperf::cli::command_main(kCommands, argc, argv, not_a_command);
}
