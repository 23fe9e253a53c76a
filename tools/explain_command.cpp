#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/explain.h"
#include "vxperf/file_io.h"

namespace vxperf::cli {
namespace {

constexpr const char* kUsage =
    "usage: vxperf explain TRACE... [--json] [--html OUT.html] [--records FILE]... [--threads N]\n\n"
    "Reads PyTorch-profiler (Kineto) traces, .json or .json.gz, files or directories of them, one\n"
    "file per rank, and says where the device time went, with the numbers Holistic Trace Analysis\n"
    "0.6.1 gives on the same files: the temporal breakdown (compute, non-compute, idle), idle time\n"
    "per stream (host wait, kernel wait, other), communication under computation, kernel types\n"
    "and the kernels, launch statistics, the profiler steps analysed (HTA drops the last). Then\n"
    "the waterfall of vxperf's ranges (requests, stages, denoising steps, training steps and\n"
    "phases): each one's device span split into ideal time at the peak (FLOPs from the records),\n"
    "computation beyond it, exposed communication, copies, and idle time by cause.\n\n"
    "  --json            print the machine-readable form\n"
    "  --html OUT.html   also write a page: the waterfall, the ranks side by side, idle per stream\n"
    "  --records FILE    records (VIDEOX_PERF_JSON) with the run's FLOPs; default: the *.jsonl\n"
    "                    files beside the traces\n"
    "  --threads N       files read and analysed at once (default: one per core)\n\n"
    "Exit status: 0 when some trace was analysed (problems with others are said), 1 when none\n"
    "could be, 2 for bad usage.\n";

}  // namespace

int explain_command(int argc, char** argv) {
  if (print_help_if_asked(argc, argv, kUsage)) return 0;
  std::vector<std::string> paths;
  explain::ExplainOptions options;
  bool json = false;
  std::string html_path;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--json") {
        json = true;
      } else if (arg == "--html") {
        html_path = next_value(i, argc, argv);
      } else if (arg == "--records") {
        options.records.push_back(next_value(i, argc, argv));
      } else if (arg == "--threads") {
        options.threads = static_cast<unsigned>(parse_int(arg, next_value(i, argc, argv), 1, 256));
      } else if (arg.size() > 1 && arg[0] == '-') {
        throw UsageError{"unknown option '" + arg + "'"};
      } else {
        paths.push_back(arg);
      }
    }
    if (paths.empty()) throw UsageError{"missing TRACE (try --help)"};
  } catch (const UsageError& e) {
    std::fprintf(stderr, "vxperf explain: %s\n", e.message.c_str());
    return 2;
  }
  explain::Explanation e;
  try {
    e = explain::explain_traces(paths, options);
  } catch (const std::invalid_argument& err) {
    std::fprintf(stderr, "vxperf explain: %s\n", err.what());
    return 2;
  }
  for (const std::string& p : e.problems) std::fprintf(stderr, "vxperf explain: %s\n", p.c_str());
  if (e.ranks.empty()) {
    std::fprintf(stderr, "vxperf explain: no trace could be analysed\n");
    return 1;
  }
  if (!html_path.empty()) {
    std::string why = write_file_atomically(html_path, explain::explanation_html(e));
    if (!why.empty()) {
      std::fprintf(stderr, "vxperf explain: cannot write %s: %s\n", html_path.c_str(), why.c_str());
      return 1;
    }
  }
  print(json ? explain::explanation_json(e) : explain::explanation_text(e));
  return finish_output(0, "explain");
}

}  // namespace vxperf::cli
