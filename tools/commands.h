// The vxperf command-line tool's subcommands: each one's entry point (in its own file,
// tools/<name>_command.cpp) and its row in the table main.cpp dispatches on and `vxperf --help`
// lists. A new command is its file and one row here.
//
// Every command prints its usage for --help, returns 0 on success and 2 on bad input or usage,
// saying what is wrong in one line.
#pragma once

namespace vxperf::cli {

int replay_command(int argc, char** argv);
// Both exist in every build; without LibTorch they say so and exit 2.
int inspect_command(int argc, char** argv);
int demo_command(int argc, char** argv);
int report_command(int argc, char** argv);
int explain_command(int argc, char** argv);
int trace_command(int argc, char** argv);
int flops_command(int argc, char** argv);
int watch_command(int argc, char** argv);
int env_command(int argc, char** argv);
// Runs a program with every Python process it starts measured, unmodified (execs it).
int run_command(int argc, char** argv);
// Measures a device's matmul peak with LibTorch (--list reads the cache in every build).
int calibrate_command(int argc, char** argv);

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* summary;
};

// In the order `vxperf --help` lists them.
inline constexpr Command kCommands[] = {
    {"replay", replay_command,
     "re-aggregate an event script (a live run's VIDEOX_PERF_TRACE) into records"},
    {"inspect", inspect_command,
     "read a TorchScript model: parameters, attention widths, text length, patch size"},
    {"demo", demo_command,
     "run the embedded text-to-video workload (inference + training) with metrics on"},
    {"report", report_command,
     "summarize records files: latency, stages, step times, MFU, stragglers (text/JSON/HTML)"},
    {"explain", explain_command,
     "where a profiled step's device time went: HTA's numbers and the loss waterfall with FLOPs"},
    {"trace", trace_command, "convert event scripts into a Chrome trace-event file for Perfetto"},
    {"flops", flops_command, "parameters, tokens, FLOPs and ideal time of a Wan2.1-style DiT"},
    {"watch", watch_command,
     "a live view of a running job's records files: step time, MFU, ETA, stragglers, requests"},
    {"calibrate", calibrate_command,
     "measure this device's matmul peak per dtype, cached for VIDEOX_PERF_PEAK_TFLOPS=auto"},
    {"env", env_command, "every VIDEOX_PERF* variable: its default and its value here"},
    {"run", run_command,
     "run a program (python, torchrun, accelerate launch) measured without changing it"},
};

}  // namespace vxperf::cli
