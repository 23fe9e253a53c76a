#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/analysis.h"
#include "vxperf/event_script.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kTraceCommand = {
    "trace", run,
    "usage: vxperf trace SCRIPT... [-o OUT.json]\n\n"
    "Converts event scripts (a live run's VIDEOX_PERF_TRACE files, one per rank, or any script)\n"
    "into one Chrome trace-event file that ui.perfetto.dev and chrome://tracing open: a process\n"
    "per rank, a track per request thread and one for training, a complete event per stage,\n"
    "phase, clip, optimizer call and micro-step, requests and steps as enclosing events, memory\n"
    "peaks as counters. SCRIPT '-' reads standard input.\n\n"
    "  -o, --output OUT.json  where to write (default: standard output)\n",
    "convert event scripts into a Chrome trace-event file for Perfetto"};

namespace {

int run(int argc, char** argv) {
  std::vector<std::string> scripts;
  std::string out_path = "-";
  for (Args args(argc, argv); args.next();) {
    if (args.is("-o") || args.is("--output")) {
      out_path = args.value();
    } else {
      scripts.push_back(args.operand());
    }
  }
  if (scripts.empty()) throw UsageError{"missing SCRIPT (try --help)"};

  // The document is streamed as the scripts are read: into a temporary file renamed over OUT only
  // once complete (an error leaves no half-written OUT, an older one as it was), or onto
  // standard output, where a failed run stops short of the document's end (what was still
  // buffered, all of a small document, is dropped).
  AtomicFile file;
  int fd = STDOUT_FILENO;
  if (out_path != "-") {
    if (std::string why = file.open(out_path); !why.empty()) {
      std::fprintf(stderr, "vxperf trace: cannot write %s: %s\n", out_path.c_str(), why.c_str());
      return 2;
    }
    fd = file.fd();
  }
  std::fflush(stdout);
  FdStreamBuf buffer(fd);
  std::ostream out(&buffer);
  auto stop = [&] {
    buffer.drop();
    return 2;
  };
  auto write_failed = [&] {
    if (buffer.error() == 0) return false;
    if (out_path == "-") {
      if (stdout_error() == 0) stdout_error() = buffer.error();  // said by finish_output
    } else {
      std::fprintf(stderr, "vxperf trace: cannot write %s: %s\n", out_path.c_str(),
                   std::strerror(buffer.error()));
    }
    return true;
  };
  analysis::TraceWriter writer(out);
  for (const auto& path : scripts) {
    std::ifstream script;
    std::istream* in = &std::cin;
    if (std::string why = input_problem(path); !why.empty()) {
      std::fprintf(stderr, "vxperf trace: %s %s, not an event script\n", path.c_str(), why.c_str());
      return stop();
    }
    if (path != "-") {
      script.open(path);
      if (!script) {
        std::fprintf(stderr, "vxperf trace: cannot open %s: %s\n", path.c_str(),
                     std::strerror(errno));
        return stop();
      }
      in = &script;
    }
    try {
      writer.add_script(*in, path);
    } catch (const ScriptError& error) {
      std::fprintf(stderr, "vxperf trace: %s: %s\n", path.c_str(), error.what());
      return stop();
    }
    if (write_failed()) return stop();  // no use reading on
  }
  for (const auto& w : writer.warnings()) {
    std::fprintf(stderr, "vxperf trace: warning: %s\n", w.c_str());
  }
  writer.finish();
  out << '\n';
  out.flush();
  if (write_failed()) return 2;
  if (out_path != "-") {
    if (std::string why = file.commit(); !why.empty()) {
      std::fprintf(stderr, "vxperf trace: cannot write %s: %s\n", out_path.c_str(), why.c_str());
      return 2;
    }
    std::fprintf(stderr, "vxperf trace: wrote %lld events to %s\n",
                 static_cast<long long>(writer.event_count()), out_path.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace vxperf::cli
