// The vxperf command-line tool's subcommands: each one's row (tools/<name>_command.cpp defines it:
// name, entry point, usage and summary) and the table main.cpp dispatches on and `vxperf --help`
// lists. A new command is its file and one line here.
//
// Every command prints its usage for --help (run_command), returns 0 on success and 2 on bad input
// or usage, saying what is wrong in one line.
#pragma once

#include "cli_util.h"

namespace vxperf::cli {

extern const Command kReplayCommand;
// These three need LibTorch: vxperf execs vxperf-torch for them (calibrate --list excepted);
// built without it they say so and exit 2.
extern const Command kInspectCommand;
extern const Command kDemoCommand;
extern const Command kCalibrateCommand;
extern const Command kReportCommand;
extern const Command kExplainCommand;
extern const Command kTraceCommand;
extern const Command kFlopsCommand;
extern const Command kWatchCommand;
extern const Command kEnvCommand;
// Runs a program with every Python process it starts measured, unmodified (execs it).
extern const Command kRunCommand;

// In the order `vxperf --help` lists them.
inline constexpr const Command* kCommands[] = {
    &kReplayCommand,    &kInspectCommand, &kDemoCommand,  &kReportCommand,
    &kExplainCommand,   &kTraceCommand,   &kFlopsCommand, &kWatchCommand,
    &kCalibrateCommand, &kEnvCommand,     &kRunCommand,
};

}  // namespace vxperf::cli
