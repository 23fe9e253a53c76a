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

constexpr const char* kUsage =
    "usage: vxperf replay SCRIPT [--set NAME=VALUE]...\n\n"
    "Drives an event script through the metrics engine on a virtual clock and a simulated\n"
    "device. Records (JSON lines) go to stdout, log lines to stderr, exactly as the live run\n"
    "would have written them. SCRIPT '-' reads standard input.\n\n"
    "  --set NAME=VALUE  override a VIDEOX_PERF* setting of the script (empty VALUE unsets it)\n";

}  // namespace

int replay_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  std::string path;
  ReplayOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--set") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vxperf replay: --set needs NAME=VALUE\n");
        return 2;
      }
      std::string assignment = argv[++i];
      auto eq = assignment.find('=');
      if (eq == std::string::npos || assignment.rfind("VIDEOX_PERF", 0) != 0) {
        std::fprintf(stderr, "vxperf replay: --set takes VIDEOX_PERF...=VALUE, not '%s'\n",
                     assignment.c_str());
        return 2;
      }
      options.env_overrides.emplace_back(assignment.substr(0, eq), assignment.substr(eq + 1));
    } else if (path.empty()) {
      path = arg;
    } else {
      std::fprintf(stderr, "vxperf replay: unexpected argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "vxperf replay: missing SCRIPT (try --help)\n");
    return 2;
  }
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

}  // namespace vxperf::cli
