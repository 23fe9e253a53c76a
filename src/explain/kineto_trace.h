// One Kineto trace file as the analyses need it: its rows (HTA's rows, §1 of the definitions in
// docs/EXPLAIN.md), compact. Read streaming (kineto_reader.cpp): plain or gzip text is scanned a
// buffer at a time, each element of `traceEvents` parsed on its own by simdjson's On-Demand API,
// and only what some analysis reads is kept.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace vxperf::explain {

// An event that took time (it has `dur` and `cat`), kept whole because an analysis reads it:
// device rows, host rows with a correlation or a stream, profiler steps, user annotations, the
// first event.
struct Row {      // 48 bytes: a 1-GB trace keeps about 1.5M of them
  double ts = 0;  // microseconds, HTA's rounding applied once the file is read
  double dur = 0;
  std::int64_t correlation = -1;  // args.correlation
  // args.stream, -1 when absent or not a number; a value beyond 32 bits (4294967295, Kineto's
  // "Context Sync") is a code into KinetoTrace::big_streams (KinetoTrace::stream() reads both).
  std::int32_t stream = -1;
  // The index of the launch link's partner (HTA's index_correlation): -1 without a correlation,
  // min(correlation, 0) without a partner (a negative value finds no row).
  std::int32_t partner = -1;
  std::int32_t tid = 0;     // the thread (a string tid hashed)
  std::uint32_t index = 0;  // position in traceEvents
  std::uint32_t name = 0;   // into KinetoTrace::strings
  std::uint16_t cat = 0;    // into KinetoTrace::categories
  bool device = false;      // HTA's is_gpu rule
  bool plain = false;       // a host row no analysis reads, kept for the critical path only
  double end() const { return ts + dur; }
};

// What only HTA's critical path reads of a row (kept, parallel to KinetoTrace::rows, only when the
// trace is read for it: ReadOptions::every_row). 32 bytes.
struct RowExtra {
  std::int64_t pid = 0;              // the process (a string pid hashed)
  std::int64_t tid = 0;              // the thread's own number (Row::tid is a 32-bit key of it)
  std::int64_t wait_on_stream = -1;  // args.wait_on_stream (cuda_sync events)
  std::int64_t wait_on_event_record = -1;  // args.wait_on_cuda_event_record_corr_id
};

// The args of a cuda_sync event that the replay reads, for the rows that have either (kept, in
// order of position, whenever every row is: ReadOptions::every_row).
struct SyncArgs {
  std::uint32_t position = 0;  // in KinetoTrace::rows
  std::int64_t wait_on_stream = -1;
  std::int64_t wait_on_event_record = -1;
};

// The host rows no analysis reads (CPU ops, Python functions), kept apart for the replay alone
// (ReadOptions::plain_rows): 16 bytes a row rather than a Row's 48. Times are kept exactly: a
// start as a whole number of us from `base` and a duration as one, where the double they give
// back is bit for bit the one read (HTA's rounding leaves whole numbers); any other is escaped
// into a table. The name and the thread share 32 bits: the name's number in 24, the thread's
// place among the first 255 threads seen in 8 (any other pair is kept in a table).
class PlainRows {
 public:
  std::size_t size() const { return size_; }
  double ts(std::size_t i) const {
    const std::int32_t v = at(i).ts;
    return v == kEscaped ? escaped(ts_escaped_, i) : base_ + v;
  }
  double dur(std::size_t i) const {
    const std::int32_t v = at(i).dur;
    return v == kEscaped ? escaped(dur_escaped_, i) : v;
  }
  std::uint32_t index(std::size_t i) const { return at(i).index; }
  std::uint32_t name(std::size_t i) const {
    const std::uint32_t v = at(i).name_thread;
    return (v & 255) == kOther ? other_.at(static_cast<std::uint32_t>(i)).first : v >> 8;
  }
  std::int32_t tid(std::size_t i) const {
    const std::uint32_t v = at(i).name_thread;
    return (v & 255) == kOther ? other_.at(static_cast<std::uint32_t>(i)).second
                               : threads_[v & 255];
  }
  void push(double ts, double dur, std::uint32_t index, std::uint32_t name, std::int32_t tid);
  void set_times(std::size_t i, double ts, double dur);
  // How many were kept before the file was known to need HTA's rounding (rounded when read
  // after): those are rounded once it is read whole.
  std::size_t unrounded = 0;

 private:
  static constexpr std::int32_t kEscaped = -2147483647 - 1;
  struct Packed {
    std::int32_t ts = 0, dur = 0;
    std::uint32_t index = 0;
    std::uint32_t name_thread = 0;  // name << 8 | the thread's place, or kOther
  };
  static constexpr std::uint32_t kOther = 255;
  // `v` - base as a whole number of 32 bits that gives `v` back bit for bit, else kEscaped.
  static std::int32_t pack(double v, double base);
  static double escaped(const std::unordered_map<std::uint32_t, double>& table, std::size_t i);
  void store(std::size_t i, Packed& p, double ts, double dur);
  // In blocks of a power of two (a deque's index divides by its block's count of rows, which
  // the replay's sort of each thread's points pays at every comparison).
  static constexpr unsigned kBlockBits = 14;
  const Packed& at(std::size_t i) const {
    return blocks_[i >> kBlockBits][i & ((std::size_t{1} << kBlockBits) - 1)];
  }
  std::vector<std::unique_ptr<Packed[]>> blocks_;
  std::size_t size_ = 0;
  double base_ = 0;
  std::unordered_map<std::uint32_t, double> ts_escaped_, dur_escaped_;
  std::vector<std::int32_t> threads_;  // by place: the thread
  std::unordered_map<std::int32_t, std::uint32_t> thread_place_;
  std::uint32_t last_place_ = kOther;  // the place of the thread of the row pushed last
  std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::int32_t>> other_;  // name, tid
};

// Why a file could not be read (it names no file; the caller adds it).
struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KinetoTrace {
  std::string file;
  int rank = 0;
  bool rank_found = false;   // a line matched "rank": N
  std::string records_file;  // the records the trace names (vxperf's "vxperf_records")
  // The stage names vxperf declared it opened ranges for ("vxperf_ranges": a list of them, the
  // Python package's while a torch profiler records).
  std::vector<std::string> declared_stages;
  bool rounded = false;      // HTA's ns rounding was applied (a fractional or missing ts)
  std::uint64_t events = 0;  // elements of traceEvents
  // In file order (by index). Deques: grown a block at a time, never copied whole.
  std::deque<Row> rows;
  // The host rows no analysis reads but the window counts (CPU ops, Python functions): W2 asks
  // only how many start before the last profiler step's start, and the first start. A row that
  // starts before a step already read is counted as it is read; only the others are kept.
  struct PlainHostRows {
    std::uint64_t count = 0;
    std::uint64_t before_a_step = 0;  // surely before the last step's start, rounded or not
    double first_ts = 0;
    std::vector<double> later;    // the starts of the others
    double latest_step = -1e308;  // the latest step start read so far (raw)
    void add(double ts);
    bool surely_before(double ts) const;
    // How many start before `last_start` (the window's end, in the file's final times).
    std::uint64_t before(double last_start) const;
  } plain_host;
  std::deque<std::string> strings;        // interned names (a deque: views stay); 0 is ""
  std::deque<std::string> categories;     // interned categories; past 65535, the rest share "..."
  std::vector<std::int64_t> big_streams;  // the stream values a row's 32 bits could not hold
  std::vector<std::string> warnings;
  // With ReadOptions::every_row: every row is in `rows` (none is a plain host row) and this holds
  // each one's extra fields at the same position.
  std::deque<RowExtra> extras;
  // With ReadOptions::every_row or plain_rows: the rows with a wait_on_stream or a
  // wait_on_cuda_event_record_corr_id, by position.
  std::vector<SyncArgs> sync_args;
  // With ReadOptions::plain_rows: the host rows not in `rows`, in file order. What the replay
  // walks is both: positions from rows.size() on are these (row(), row_count()).
  PlainRows plain_rows;
  std::size_t row_count() const { return rows.size() + plain_rows.size(); }
  // The row at `position` of all of them, the plain ones after `rows` (a plain one has no
  // correlation, stream, partner nor category).
  Row row(std::size_t position) const {
    if (position < rows.size()) return rows[position];
    const std::size_t i = position - rows.size();
    Row r;
    r.ts = plain_rows.ts(i);
    r.dur = plain_rows.dur(i);
    r.tid = plain_rows.tid(i);
    r.index = plain_rows.index(i);
    r.name = plain_rows.name(i);
    r.plain = true;
    return r;
  }
  std::uint32_t name_of(std::size_t position) const {
    return position < rows.size() ? rows[position].name : plain_rows.name(position - rows.size());
  }
  std::uint32_t index_of(std::size_t position) const {
    return position < rows.size() ? rows[position].index : plain_rows.index(position - rows.size());
  }
  double dur_of(std::size_t position) const {
    return position < rows.size() ? rows[position].dur : plain_rows.dur(position - rows.size());
  }

  std::string_view str(std::uint32_t id) const { return strings[id]; }
  std::string_view category(const Row& r) const { return categories[r.cat]; }
  std::int64_t stream(const Row& r) const {
    return r.stream <= kBigStream ? big_streams[static_cast<std::size_t>(r.stream - kFirstBig)]
                                  : r.stream;
  }
  // Row::stream at or below kBigStream is big_streams[stream - kFirstBig].
  static constexpr std::int32_t kFirstBig = -2147483647 - 1;
  static constexpr std::int32_t kBigStream = kFirstBig + (1 << 30);
  std::uint64_t host_rows() const;
  // The row at traceEvents position `index`, if it is one kept whole.
  const Row* row_at(std::int64_t index) const;
  // Its position in `rows`, or -1.
  std::int64_t position_of(std::int64_t index) const;
  // The sync args of the row at `position`, or null.
  const SyncArgs* sync_args_of(std::uint32_t position) const;
};

// Interns strings for one trace.
class StringTable {
 public:
  explicit StringTable(std::deque<std::string>& strings);
  std::uint32_t intern(std::string_view s);
  std::optional<std::uint32_t> find(std::string_view s) const;

 private:
  std::deque<std::string>& strings_;
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

struct ReadOptions {
  // Keep every row whole, with its RowExtra (HTA's critical path walks every CPU op and reads
  // pids, threads and the sync events' args). Off: host rows no analysis reads are only counted.
  bool every_row = false;
  // Without every_row: keep the host rows no analysis reads apart (KinetoTrace::plain_rows), with
  // the sync args of the rows kept whole: all the replay reads.
  bool plain_rows = false;
  // With every_row: keep each row's RowExtra (HTA's critical path reads them; the replay reads
  // only the sync args, kept apart for the few rows that have them).
  bool row_extras = true;
};

// Reads a trace (.json or .json.gz, by content). Throws TraceError for a file that is not one.
KinetoTrace read_kineto_trace(const std::string& path, const ReadOptions& options = {});

}  // namespace vxperf::explain
