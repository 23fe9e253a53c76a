#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/event_script.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kReplayCommand = {
    "replay", run,
    "usage: vxperf replay SCRIPT [--set NAME=VALUE]...\n\n"
    "Drives an event script through the metrics engine on a virtual clock and a simulated\n"
    "device. Records (JSON lines) go to stdout, log lines to stderr, exactly as the live run\n"
    "would have written them. SCRIPT '-' reads standard input.\n\n"
    "  --set NAME=VALUE  override a VIDEOX_PERF* setting of the script (empty VALUE unsets it)\n",
    "re-aggregate an event script (a live run's VIDEOX_PERF_TRACE) into records"};

namespace {

int run(int argc, char** argv) {
  std::string path;
  ReplayOptions options;
  for (Args args(argc, argv); args.next();) {
    if (args.is("--set")) {
      if (args.index() + 1 >= argc) throw UsageError{"--set needs NAME=VALUE"};
      std::string assignment = args.value();
      auto eq = assignment.find('=');
      if (eq == std::string::npos || assignment.rfind("VIDEOX_PERF", 0) != 0) {
        throw UsageError{"--set takes VIDEOX_PERF...=VALUE, not '" + assignment + "'"};
      }
      options.env_overrides.emplace_back(assignment.substr(0, eq), assignment.substr(eq + 1));
    } else if (path.empty()) {
      path = args.arg();
    } else {
      throw UsageError{"unexpected argument '" + args.arg() + "'"};
    }
  }
  if (path.empty()) throw UsageError{"missing SCRIPT (try --help)"};
  if (std::string why = input_problem(path); !why.empty()) {
    std::fprintf(stderr, "vxperf replay: %s %s, not an event script\n", path.c_str(), why.c_str());
    return 2;
  }
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) {
      std::fprintf(stderr, "vxperf replay: cannot open %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return 2;
    }
    in = &file;
  }
  // Records to stdout, everything else to stderr, one write per line.
  int write_error = 0;
  auto records = json_line_sink([&write_error](std::string_view line) {
    if (write_error == 0 && !write_line(STDOUT_FILENO, line)) write_error = errno;
  });
  options.warn = [&path](std::string_view warning) {
    std::string line = "vxperf replay: warning: " + path + ": " + std::string(warning);
    write_line(STDERR_FILENO, line);
  };
  try {
    replay(
        *in, [](std::string_view line) { write_line(STDERR_FILENO, line); }, *records, options);
  } catch (const ScriptError& error) {
    std::fprintf(stderr, "vxperf replay: %s: %s\n", path.c_str(), error.what());
    return 2;
  }
  if (write_error != 0) {
    // Records that did not reach their reader: the replay did not do its job.
    std::fprintf(stderr, "vxperf replay: cannot write standard output: %s\n",
                 std::strerror(write_error));
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace vxperf::cli
