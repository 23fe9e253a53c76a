// vxperf-torch: the commands of `vxperf` that need LibTorch (demo, calibrate, inspect), in a
// program of their own so that `vxperf` itself never loads LibTorch. `vxperf demo ARGS...` execs
// `vxperf-torch demo ARGS...` (tools/cli_util.h, exec_torch_helper); run directly it does the same.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "cli_util.h"
#include "commands.h"

namespace {

struct TorchCommand {
  const char* name;
  int (*run)(int argc, char** argv);
};

constexpr TorchCommand kTorchCommands[] = {
    {"demo", vxperf::cli::demo_command},
    {"calibrate", vxperf::cli::calibrate_command},
    {"inspect", vxperf::cli::inspect_command},
};

int dispatch(int argc, char** argv, const char** name_out) {
  std::string name = argc >= 2 ? argv[1] : "";
  for (const auto& c : kTorchCommands) {
    if (name != c.name) continue;
    *name_out = c.name;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "vxperf %s: out of memory\n", c.name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vxperf %s: failed: %s\n", c.name, e.what());
    }
    return 2;
  }
  std::fprintf(stderr,
               "usage: vxperf-torch demo|calibrate|inspect [ARGS...] (what 'vxperf demo' and the "
               "others run)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const char* name = nullptr;
  int rc = dispatch(argc, argv, &name);
  return vxperf::cli::finish_output(rc, name);
}
