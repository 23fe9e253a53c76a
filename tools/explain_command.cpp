#include <cstdio>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/explain.h"
#include "vxperf/file_io.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kExplainCommand = {
    "explain", run,
    "usage: vxperf explain TRACE... [--json] [--html OUT.html] [--records FILE]... [--threads "
    "N]\n"
    "                      [--critical-path[=ANNOTATION[:K|:A-B]]] [--replay]\n"
    "                      [--what-if[=SPEC]]...\n"
    "       vxperf explain TRACE... --partial OUT.json [--records FILE]... [--threads N]\n"
    "                      [--replay] [--what-if[=SPEC]]...\n"
    "       vxperf explain --merge PARTIAL... [--json] [--html OUT.html]\n\n"
    "Reads PyTorch-profiler (Kineto) traces, .json or .json.gz, files or directories of them, one\n"
    "file per rank, and says where the device time went, with the numbers Holistic Trace Analysis\n"
    "0.6.1 gives on the same files: the temporal breakdown (compute, non-compute, idle), idle "
    "time\n"
    "per stream (host wait, kernel wait, other), communication under computation, kernel types\n"
    "and the kernels, launch statistics, the profiler steps analysed (HTA drops the last). Then\n"
    "the waterfall of vxperf's ranges (requests, stages, denoising steps, training steps and\n"
    "phases): each one's device span split into ideal time at the peak (FLOPs from the records),\n"
    "computation beyond it, exposed communication, copies, and idle time by cause.\n\n"
    "  --json            print the machine-readable form\n"
    "  --html OUT.html   also write a page: the waterfall, the ranks side by side, idle per "
    "stream\n"
    "  --records FILE    records (VIDEOX_PERF_JSON) with the run's FLOPs; default: the *.jsonl\n"
    "                    files beside the traces\n"
    "  --threads N       files read and analysed at once (default: one per core)\n"
    "  --critical-path   also HTA's critical path (critical_path_analysis + summary()) of each\n"
    "                    profiler step, per rank: its length, what bounds it (cpu, gpu compute,\n"
    "                    communication, launch and kernel-kernel overhead) in us and %, its\n"
    "                    edges by type and the events that cost most; every row is then kept\n"
    "  --critical-path=ANNOTATION[:K|:A-B]\n"
    "                    of each instance of another annotation (rows whose name holds it, in\n"
    "                    HTA's order: GPU-side copies count), of instance K, or of instances A to\n"
    "                    B together; an empty ANNOTATION (--critical-path=) is the whole trace.\n"
    "                    HTA's blind spots are kept: time waiting in a synchronize and host idle\n"
    "                    never count, and without cuda_sync events the path goes from host to\n"
    "                    device at most once (docs/EXPLAIN.md)\n"
    "  --replay          also vxperf's own graph of what ran (every thread and stream in order,\n"
    "                    host gaps, waits in synchronizations, device idle, events, the autograd\n"
    "                    thread) replayed: each range's span again (the largest error is said),\n"
    "                    and its critical path by bound type (host, launch overhead, gpu compute,\n"
    "                    communication, copies, sync wait, device idle, data loading)\n"
    "  --what-if         the replay with the standard what-ifs: host, comm, copies, peak, steps:1\n"
    "  --what-if=SPEC    the replay with this edit of the graph (again for more), each giving the\n"
    "                    predicted span per range and the gain, ranked: host (launches back to\n"
    "                    back, as CUDA graphs give), comm (communication fully overlapped), "
    "copies\n"
    "                    (gone), peak (computation at the FLOPs' ideal), kernel:REGEX=FACTOR\n"
    "                    (kernels whose name matches take FACTOR of their time), steps:K (K\n"
    "                    transformer calls of each request skipped: a denoising step is one\n"
    "                    call, or two with classifier-free guidance); edits joined by commas\n"
    "                    (--what-if=peak,host) are one what-if, all applied in one replay. With\n"
    "                    two what-ifs or more they are also stacked: the best, then the best\n"
    "                    with it applied, and so on, each gain against the replay before it\n"
    "  --partial OUT.json\n"
    "                    write what these traces give alone (a rank's analyses, waterfall and\n"
    "                    replay, kilobytes) as a partial instead of the output ('-': stdout)\n"
    "  --merge PARTIAL...\n"
    "                    the output of all the partials' traces at once, from the partials (in\n"
    "                    the order of their traces; a folder: its files, by name), byte for\n"
    "                    byte what one run on the traces prints; the partials must have been\n"
    "                    made with the same records and\n"
    "                    options (--critical-path takes every rank at once: no partials)\n\n"
    "Exit status: 0 when some trace was analysed (problems with others are said), 1 when none\n"
    "could be, 2 for bad usage.\n",
    "where a profiled step's device time went: HTA's numbers and critical path, the waterfall"};

namespace {

// ANNOTATION[:INSTANCE|:FIRST-LAST]: the last ':' splits off an instance when a number (or two
// joined by '-') follows it; an empty ANNOTATION is the whole trace.
explain::CriticalPathRequest critical_path_request(const std::string& spec) {
  explain::CriticalPathRequest r;
  r.annotation = spec;
  const std::size_t colon = spec.rfind(':');
  if (colon == std::string::npos) return r;
  const std::string tail = spec.substr(colon + 1);
  auto number = [](const std::string& s, std::int64_t& out) {
    if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    out = std::stoll(s);
    return true;
  };
  const std::size_t dash = tail.find('-');
  std::int64_t first = 0, last = 0;
  const bool one = dash == std::string::npos && number(tail, first);
  const bool range = dash != std::string::npos && number(tail.substr(0, dash), first) &&
                     number(tail.substr(dash + 1), last);
  if (!one && !range) return r;  // a ':' of the annotation's own
  if (range && last < first) {
    throw UsageError{"--critical-path: instances " + tail + ": the last is before the first"};
  }
  r.annotation = spec.substr(0, colon);
  r.each = false;
  r.first = first;
  r.last = one ? first : last;
  return r;
}

int run(int argc, char** argv) {
  PartialModes modes;
  std::vector<std::string> paths;
  explain::ExplainOptions options;
  std::string html_path;
  for (Args args(argc, argv); args.next();) {
    if (modes.take(args)) continue;
    if (args.is("--html")) {
      html_path = args.value();
    } else if (args.is("--records")) {
      options.records.push_back(args.value());
    } else if (args.is("--critical-path")) {
      options.critical_path = explain::CriticalPathRequest{};
    } else if (args.arg().rfind("--critical-path=", 0) == 0) {
      options.critical_path = critical_path_request(args.arg().substr(16));
    } else if (args.is("--replay")) {
      if (!options.replay) options.replay = explain::ReplayRequest{};
    } else if (args.is("--what-if")) {
      if (!options.replay) options.replay = explain::ReplayRequest{};
      for (explain::WhatIfSpec& w : explain::standard_what_ifs()) {
        options.replay->what_ifs.push_back(std::move(w));
      }
    } else if (args.arg().rfind("--what-if=", 0) == 0) {
      if (!options.replay) options.replay = explain::ReplayRequest{};
      try {
        options.replay->what_ifs.push_back(explain::parse_what_if(args.arg().substr(10)));
      } catch (const std::invalid_argument& e) {
        throw UsageError{e.what()};
      }
    } else if (args.is("--threads")) {
      options.threads = static_cast<unsigned>(args.integer(1, 256));
    } else {
      paths.push_back(args.operand());
    }
  }
  modes.check_one();
  const bool analyses =
      !options.records.empty() || options.critical_path || options.replay || options.threads != 0;
  if (modes.merge && analyses) {
    throw UsageError{
        "--merge takes the partials' analyses as they were made: --records, --critical-path, "
        "--replay, --what-if and --threads go with --partial"};
  }
  modes.check_partial_alone(!html_path.empty());
  if (paths.empty())
    throw UsageError{modes.merge ? "missing PARTIAL (try --help)" : "missing TRACE (try --help)"};
  // Another command's file (records, an event script) is said with the command that reads it.
  for (const std::string& path : modes.merge ? std::vector<std::string>{} : paths) {
    if (std::string other = kind_of_file(path, "trace"); !other.empty()) {
      throw UsageError{path + " " + other};
    }
  }
  explain::Explanation e;
  try {
    if (modes.partial) {
      const std::string document = explain::explain_partial(paths, options);
      if (*modes.partial == "-") {
        print(document);
        return finish_output(0, "explain");
      }
      std::string why = write_file_atomically(*modes.partial, document);
      if (!why.empty()) {
        std::fprintf(stderr, "vxperf explain: cannot write %s: %s\n", modes.partial->c_str(),
                     why.c_str());
        return 2;
      }
      return 0;
    }
    e = modes.merge ? explain::merge_partials(read_partials(paths))
                    : explain::explain_traces(paths, options);
  } catch (const std::invalid_argument& err) {
    std::fprintf(stderr, "vxperf explain: %s\n", err.what());
    return 2;
  }
  // Each problem said once: the text ends with them; beside JSON (or no text at all) they go to
  // standard error, a CPU-only profile among them (the JSON's has_device_rows).
  if (modes.json || e.ranks.empty()) {
    for (const std::string& p : e.problems) {
      std::fprintf(stderr, "vxperf explain: %s\n", p.c_str());
    }
    for (const explain::RankExplanation& r : e.ranks) {
      if (!r.has_device_rows) {
        std::fprintf(stderr, "vxperf explain: %s: %s\n", r.file.c_str(), explain::kCpuOnly);
      }
    }
  }
  if (e.ranks.empty()) {
    std::fprintf(stderr, "vxperf explain: no trace could be analysed\n");
    return 1;
  }
  if (!html_path.empty()) {
    std::string why = write_file_atomically(html_path, explain::explanation_html(e));
    if (!why.empty()) {
      std::fprintf(stderr, "vxperf explain: cannot write %s: %s\n", html_path.c_str(), why.c_str());
      return 2;
    }
    // Named as `report --html` names its page (a partial stays silent: the fleet's tasks).
    std::fprintf(stderr, "vxperf explain: wrote %s\n", html_path.c_str());
  }
  print(modes.json ? explain::explanation_json(e) : explain::explanation_text(e));
  return finish_output(0, "explain");
}

}  // namespace
}  // namespace vxperf::cli
