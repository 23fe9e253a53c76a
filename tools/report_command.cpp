#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_util.h"
#include "commands.h"
#include "vxperf/analysis.h"

namespace vxperf::cli {

namespace {
int run(int argc, char** argv);
}  // namespace

const Command kReportCommand = {
    "report", run,
    "usage: vxperf report FILE|DIR... [--json] [--html OUT.html [--steps LOG|TRACE]...]\n"
    "                     [--strict] [--threads N]\n"
    "       vxperf report FILE|DIR... --partial OUT [--strict] [--threads N]\n"
    "       vxperf report --merge PARTIAL... [--json] [--html OUT.html [--steps LOG|TRACE]...]\n"
    "       vxperf report --compare A B [--json] [--html OUT.html] [--strict] [--threads N]\n\n"
    "Summarizes records (the JSON lines of VIDEOX_PERF_JSON or 'vxperf replay', any number of\n"
    "files and ranks; a folder: its *.jsonl* files; '-' reads standard input; a profiler trace\n"
    "or an event script is said to be one, with the command that reads it). Requests: count, e2e "
    "p50/p95/max, each stage's\n"
    "mean and share of e2e, TFLOPS and MFU. Training: steps, step p50/p95, phase shares,\n"
    "samples/s, TFLOPS, MFU/HFU, peak memory, ETA. Several ranks: a per-rank table and the\n"
    "stragglers, ranks whose time per step above the ranks' per-phase medians is over 5% of the\n"
    "median step (the live view's rule; step times alone for inference).\n"
    "Files are read in one streaming pass: memory holds per-rank sums and the numbers the\n"
    "percentiles are over, not the records (--html keeps ~140 bytes a window, ~40 a request).\n"
    "Lines are parsed on every core, the report built from them in input order\n"
    "(several files: each read and summed by a worker, added in file order).\n"
    "A line that is no record (torn, another tool's JSON, a wrong field) is said once per file\n"
    "with its line, the rest read; so are timestamps going backwards. Input with no record at\n"
    "all is an error (exit 2), as is any bad line with --strict.\n\n"
    "  --json           print the report as one JSON object (with a \"stragglers\" list)\n"
    "  --html OUT.html  also write one self-contained HTML page: the summary as tables, charts\n"
    "                   with values on hover, rank x window heatmaps (step time, straggler\n"
    "                   excess); with --compare, the comparison as a page\n"
    "  --steps FILE     each transformer call's time for the page, from a VIDEOX_PERF=2 log or\n"
    "                   a VIDEOX_PERF_TRACE event script (repeatable)\n"
    "  --compare A B    compare two runs metric by metric with the direction of change\n"
    "  --partial OUT    write what these files give the report (each rank's state, each file's\n"
    "                   part of the job's sums, the page's points) as a partial instead of the\n"
    "                   output ('-': stdout); records of training only\n"
    "  --merge PARTIAL...\n"
    "                   the output of all the partials' files at once, from the partials (in\n"
    "                   the order of their files; a folder: its files, by name), byte for\n"
    "                   byte what one run on the files\n"
    "                   prints; a rank's records go in one partial\n"
    "  --strict         a line that is not a record is an error (exit 2), not skipped\n"
    "  --threads N      parse on N threads in all (default: one per core, at most 8, besides\n"
    "                   this one; 1: this thread only)\n",
    "summarize records files: latency, stages, step times, MFU, stragglers (text/JSON/HTML)"};

namespace {

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "vxperf report: warning: %s\n", w.c_str());
}

// Each record to the report and to the page's charts, in one pass.
struct BothHandlers : analysis::RecordHandler {
  analysis::ReportBuilder report;
  analysis::ChartData charts;
  void request(const RequestRecord& r) override {
    report.request(r);
    charts.request(r);
  }
  void window(const TrainWindowRecord& w) override {
    report.window(w);
    charts.window(w);
  }
  void end(const TrainEndRecord& e) override { report.end(e); }
  void warning(const std::string& text) override { report.warning(text); }
  void begin_file(const std::string& name) override { report.begin_file(name); }
  void torn_line(const std::string& name) override { report.torn_line(name); }
  void repeated_file(const std::string& name, const std::string& earlier) override {
    report.repeated_file(name, earlier);
  }
  void bad_line(const std::string& name, int line, const std::string& message) override {
    report.bad_line(name, line, message);
  }
  void end_file(const std::string& name) override { report.end_file(name); }
  std::unique_ptr<analysis::RecordHandler> file_handler() override {
    return std::make_unique<BothHandlers>();
  }
  bool join_file(analysis::RecordHandler& file) override {
    auto& from = dynamic_cast<BothHandlers&>(file);
    if (!charts.joinable(from.charts) || !report.join_file(from.report)) return false;
    charts.join(from.charts);
    return true;
  }
};

bool write_page(const std::string& path, const std::string& html) {
  std::string why = write_file_atomically(path, html);
  if (why.empty()) {
    std::fprintf(stderr, "vxperf report: wrote %s\n", path.c_str());
    return true;
  }
  std::fprintf(stderr, "vxperf report: cannot write %s: %s\n", path.c_str(), why.c_str());
  return false;
}

int run(int argc, char** argv) {
  PartialModes modes;
  std::vector<std::string> files;
  std::vector<std::string> compare;
  std::vector<std::string> step_files;
  std::string html_path;
  bool read_options = false;  // --strict or --threads: how files are read
  analysis::ReadOptions options;
  options.skip_bad_lines = true;
  for (Args args(argc, argv); args.next();) {
    if (modes.take(args)) continue;
    if (args.is("--strict")) {
      options.skip_bad_lines = false;
      read_options = true;
    } else if (args.is("--threads")) {
      options.threads = static_cast<int>(args.integer(1, 64));
      read_options = true;
    } else if (args.is("--html")) {
      html_path = args.value();
    } else if (args.is("--steps")) {
      step_files.push_back(args.value());
    } else if (args.is("--compare")) {
      if (args.index() + 2 >= argc) throw UsageError{"--compare needs two files A B"};
      compare = {args.value(), args.value()};  // a braced list is evaluated left to right
    } else {
      files.push_back(args.operand());
    }
  }
  if (!compare.empty() && !files.empty()) {
    throw UsageError{"--compare takes exactly two files; unexpected '" + files[0] + "'"};
  }
  if (!step_files.empty() && (html_path.empty() || !compare.empty())) {
    throw UsageError{"--steps goes with --html, for one run"};
  }
  modes.check_one();
  if ((modes.merge || modes.partial) && !compare.empty()) {
    throw UsageError{"--compare takes two runs' records, not --partial or --merge"};
  }
  if (modes.merge && read_options) {
    throw UsageError{
        "--merge takes the partials as they were read: --strict and --threads go "
        "with --partial"};
  }
  modes.check_partial_alone(!html_path.empty());
  if (compare.empty() && files.empty()) {
    throw UsageError{modes.merge ? "missing PARTIAL (try --help)" : "missing FILE (try --help)"};
  }
  if (!modes.merge) files = records_in_folders(files);
  for (const std::string& file : (modes.merge       ? std::vector<std::string>{}
                                  : compare.empty() ? files
                                                    : compare)) {
    if (std::string other = kind_of_file(file, "records"); !other.empty()) {
      throw UsageError{file + " " + other};
    }
  }

  try {
    if (!compare.empty()) {
      BothHandlers a, b;
      a.report.set_threads(options.threads);
      b.report.set_threads(options.threads);
      analysis::stream_record_files({compare[0]}, a, options);
      analysis::stream_record_files({compare[1]}, b, options);
      analysis::Report ra = a.report.finish({compare[0]}), rb = b.report.finish({compare[1]});
      print_warnings(ra.warnings);
      print_warnings(rb.warnings);
      auto changes = analysis::compare_reports(ra, rb);
      if (!html_path.empty() &&
          !write_page(html_path, analysis::comparison_html(compare[0], compare[1], changes,
                                                           a.charts, b.charts))) {
        return 2;
      }
      std::string out = modes.json
                            ? analysis::comparison_json(compare[0], compare[1], changes) + "\n"
                            : analysis::format_comparison(compare[0], compare[1], changes);
      print(out);
      return 0;
    }
    if (modes.partial) {
      BothHandlers both;
      try {
        analysis::stream_record_files(files, both, options);
      } catch (const analysis::InputError& e) {
        if (!both.report.no_records(e)) throw;  // else the merge's to say, where no partial has one
      }
      const std::string document = both.report.partial(both.charts, files);
      if (*modes.partial == "-") {
        print(document);
        return 0;
      }
      if (std::string why = write_file_atomically(*modes.partial, document); !why.empty()) {
        std::fprintf(stderr, "vxperf report: cannot write %s: %s\n", modes.partial->c_str(),
                     why.c_str());
        return 2;
      }
      return 0;
    }
    analysis::Report report;
    if (modes.merge) {
      // The partials' files, their records read as one run reads them.
      BothHandlers both;
      std::vector<std::string> sources;
      for (const auto& [path, bytes] : read_partials(files)) {
        both.report.add_partial(bytes, path, both.charts, sources);
      }
      both.report.check_records();
      report = both.report.finish(sources);
      print_warnings(report.warnings);
      if (!html_path.empty()) {
        analysis::DenoisingSteps steps = analysis::read_denoising_steps(step_files);
        print_warnings(steps.warnings);
        if (!write_page(html_path, analysis::report_html(report, both.charts,
                                                         step_files.empty() ? nullptr : &steps))) {
          return 2;
        }
      }
    } else if (html_path.empty()) {
      analysis::ReportBuilder builder;
      builder.set_threads(options.threads);
      analysis::stream_record_files(files, builder, options);
      report = builder.finish(files);
      print_warnings(report.warnings);
    } else {
      BothHandlers both;
      both.report.set_threads(options.threads);
      analysis::stream_record_files(files, both, options);
      report = both.report.finish(files);
      print_warnings(report.warnings);
      analysis::DenoisingSteps steps = analysis::read_denoising_steps(step_files);
      print_warnings(steps.warnings);
      if (!write_page(html_path, analysis::report_html(report, both.charts,
                                                       step_files.empty() ? nullptr : &steps))) {
        return 2;
      }
    }
    std::string out =
        modes.json ? analysis::report_json(report) + "\n" : analysis::format_report(report);
    print(out);
  } catch (const analysis::InputError& e) {
    std::fprintf(stderr, "vxperf report: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // a partial that cannot be made or read
    std::fprintf(stderr, "vxperf report: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace vxperf::cli
