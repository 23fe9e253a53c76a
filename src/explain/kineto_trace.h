// One Kineto trace file as the analyses need it: its rows (HTA's rows, §1 of the definitions in
// docs/EXPLAIN.md), compact. Read streaming (kineto_reader.cpp): plain or gzip text is scanned a
// buffer at a time, each element of `traceEvents` parsed on its own by simdjson's On-Demand API,
// and only what some analysis reads is kept.
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vxperf::explain {

// An event that took time (it has `dur` and `cat`), kept whole because an analysis reads it:
// device rows, host rows with a correlation or a stream, profiler steps, user annotations, the
// first event.
struct Row {  // 64 bytes
  double ts = 0;   // microseconds, HTA's rounding applied once the file is read
  double dur = 0;
  std::int64_t stream = -1;       // args.stream, -1 when absent or not a number
  std::int64_t correlation = -1;  // args.correlation
  std::int64_t partner = -1;      // index of the launch link's partner (HTA's index_correlation)
  std::int64_t tid = 0;           // the thread (a string tid hashed)
  std::uint32_t index = 0;        // position in traceEvents
  std::uint32_t name = 0;         // into KinetoTrace::strings
  std::uint32_t cat = 0;
  bool device = false;            // HTA's is_gpu rule
  double end() const { return ts + dur; }
};

// Why a file could not be read (it names no file; the caller adds it).
struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KinetoTrace {
  std::string file;
  int rank = 0;
  bool rank_found = false;      // a line matched "rank": N
  std::string records_file;     // the records the trace names (vxperf's "vxperf_records")
  bool rounded = false;         // HTA's ns rounding was applied (a fractional or missing ts)
  std::uint64_t events = 0;     // elements of traceEvents
  std::vector<Row> rows;        // in file order
  // Host rows kept only as their start: everything W2 asks of them is their count and order.
  std::vector<double> plain_host_ts;
  std::deque<std::string> strings;  // interned names and categories (a deque: views stay); 0 is ""
  std::vector<std::string> warnings;

  std::string_view str(std::uint32_t id) const { return strings[id]; }
  std::uint64_t host_rows() const;
};

// Interns strings for one trace.
class StringTable {
 public:
  explicit StringTable(std::deque<std::string>& strings);
  std::uint32_t intern(std::string_view s);

 private:
  std::deque<std::string>& strings_;
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

// Reads a trace (.json or .json.gz, by content). Throws TraceError for a file that is not one.
KinetoTrace read_kineto_trace(const std::string& path);

}  // namespace vxperf::explain
