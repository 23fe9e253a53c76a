// The vxperf command-line tool: one function per subcommand, each in its own file.
// Every command prints its usage for --help, returns 0 on success and 2 on bad input or usage,
// saying what is wrong in one line.
#pragma once

namespace vxperf::cli {

int replay_command(int argc, char** argv);
// Both exist in every build; without LibTorch they say so and exit 2.
int inspect_command(int argc, char** argv);
int demo_command(int argc, char** argv);
int report_command(int argc, char** argv);
int trace_command(int argc, char** argv);
int flops_command(int argc, char** argv);
// Measures a device's matmul peak with LibTorch (--list reads the cache in every build).
int calibrate_command(int argc, char** argv);

}  // namespace vxperf::cli
