#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

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
  for (const auto& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n'vxperf COMMAND --help' describes one command; 'vxperf --version' says which "
               "vxperf this is.\n");
}

// Runs the command; what escapes it is said in one line rather than aborting.
int run(const Command& c, int argc, char** argv) {
  try {
    return c.run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vxperf %s: out of memory (the input is too large to handle at once)\n",
                 c.name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vxperf %s: failed: %s\n", c.name, e.what());
  }
  return 2;
}

int dispatch(int argc, char** argv, const char** name_out) {
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
  for (const auto& c : kCommands) {
    if (name == c.name) {
      *name_out = c.name;
      return run(c, argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "vxperf: unknown command '%s' (try 'vxperf --help')\n", name.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = nullptr;
  int rc = dispatch(argc, argv, &name);
  return vxperf::cli::finish_output(rc, name);
}
