// vxperf-torch: the commands of `vxperf` that need LibTorch (demo, calibrate, inspect), in a
// program of their own so that `vxperf` itself never loads LibTorch. `vxperf demo ARGS...` execs
// `vxperf-torch demo ARGS...` (tools/cli_util.h, exec_torch_helper); run directly it does the same.
#include <cstdio>
#include <string>

#include "cli_util.h"
#include "commands.h"

namespace {

using vxperf::cli::Command;

constexpr const Command* kTorchCommands[] = {
    &vxperf::cli::kDemoCommand,
    &vxperf::cli::kCalibrateCommand,
    &vxperf::cli::kInspectCommand,
};

int not_a_command(int, char**) {
  std::fprintf(stderr,
               "usage: vxperf-torch demo|calibrate|inspect [ARGS...] (what 'vxperf demo' and the "
               "others run)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  return vxperf::cli::command_main(kTorchCommands, argc, argv, not_a_command);
}
