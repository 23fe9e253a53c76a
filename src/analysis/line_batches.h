// Records lines parsed in batches on worker threads and handed back in the order they were given:
// what lets `vxperf report` read on every core while its report is still built one record at a
// time, in input order, on the calling thread (or a whole file read and handed over on a worker:
// LineBatch::whole, records_reader.cpp).
//
// Thread safety: one thread submits and takes; the workers touch only the batch they parse (each
// with a RecordLineReader of its own).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "analysis/record_line.h"
#include "vxperf/records.h"
#include "vxperf/records_reader.h"

namespace vxperf::analysis {

// Whole lines of one file and, once parsed, what each non-blank one held.
// Only spaces, tabs and carriage returns.
inline bool blank(const char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    const char c = data[i];
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// What a whole file read on a worker gave (LineBatch::whole). Outside LineBatch: a nested class's
// default member initializers are not yet usable where the enclosing class names
// std::optional<nested> (clang then finds it not default-constructible).
struct WholeFileRead {
  std::unique_ptr<RecordHandler> handler;
  std::uint64_t start_hash = 0;  // of its first 16 KiB (records_reader.cpp)
  std::int64_t records = 0;
  // The file's first line skipped as no record, if one was (skip_bad_lines).
  std::optional<std::tuple<std::string, int, std::string>> first_problem;
};

struct LineBatch {
  std::vector<char> text;     // the lines, then simdjson's padding (readable, any content)
  std::size_t offset = 0;     // where in `text` the lines begin
  std::size_t size = 0;       // bytes of lines in `text` from `offset`
  // Reads the lines into `text` first, on the thread that parses them (a part of a regular file:
  // the calling thread then neither reads nor copies them); empty when `text` holds them. Given
  // that thread's reader, for a fill that parses lines itself (a whole file, below).
  std::function<void(LineBatch&, RecordLineReader&)> fill;
  // A whole file read, parsed and handed to a handler of its own by `fill`, on a worker: what it
  // gave, for the calling thread to join to its handler in file order (`lines` stays empty).
  using WholeFile = WholeFileRead;
  std::optional<WholeFile> whole;
  bool ends_complete = true;  // the last line ended with a newline (false: a file's torn end)
  bool check_fast_path = false;

  struct Line {
    std::int64_t number = 0;  // in the batch, from 1
    bool complete = true;     // it ended with a newline
    RecordLineReader::Got got = RecordLineReader::Got::kWrong;
    std::size_t index = 0;  // into requests, windows, ends or problems, as `got` says
  };
  std::vector<Line> lines;      // the lines that are not blank
  std::int64_t line_count = 0;  // every line, blank ones too
  // The records read, the first request_count and window_count of each (those after them are
  // a last use's, kept for their storage).
  std::vector<RequestRecord> requests;
  std::vector<TrainWindowRecord> windows;
  std::vector<TrainEndRecord> ends;
  std::size_t request_count = 0, window_count = 0, end_count = 0;
  std::vector<std::string> problems;  // kWrong's message; kNotJson's is the reader's own
  std::exception_ptr error;           // std::bad_alloc while parsing
  // check_fast_path: the first line whose two readings differ (its number in the batch), and how.
  std::int64_t disagreed_at = 0;
  std::string disagreement;

  // Fills the batch (`fill`) and parses every line with `reader` (what a worker runs; the calling
  // thread runs it without any). An exception is kept in `error`.
  void parse(RecordLineReader& reader);
  // Parses every line of `text` with `reader` (throws).
  void parse_lines(RecordLineReader& reader);
  // fn(data, size, number, complete) for each line of `text` that is not blank (number: in the
  // batch, from 1; complete: it ended with a newline); line_count set to every line's.
  template <class Fn>
  void each_line(Fn&& fn) {
    const char* base = text.data() + offset;
    std::size_t begin = 0;
    std::int64_t number = 0;
    while (begin < size) {
      const auto* newline = static_cast<const char*>(std::memchr(base + begin, '\n', size - begin));
      const std::size_t end = newline != nullptr ? static_cast<std::size_t>(newline - base) : size;
      const char* data = base + begin;
      const std::size_t length = end - begin;
      line_count = ++number;
      begin = end + 1;
      if (length == 0 || blank(data, length)) continue;
      fn(data, length, number, newline != nullptr || ends_complete);
    }
  }
  // The lines and what they held forgotten, for the next lines into the same buffers.
  void clear_lines();
  // Emptied for the next lines, its buffers kept (the text at its size, the vectors' capacity, the
  // records themselves for the reader to read the next lines into).
  void reuse();
};

class LineBatches {
 public:
  // `workers` threads (0: parse() runs in submit(), on the calling thread).
  explicit LineBatches(unsigned workers);
  ~LineBatches();
  LineBatches(const LineBatches&) = delete;
  LineBatches& operator=(const LineBatches&) = delete;

  // No workers: submit() parses on the calling thread.
  bool serial() const { return workers_.empty(); }
  // Batches given and not yet taken back.
  std::size_t in_flight() const { return order_.size(); }
  // At most this many in flight: the submitter takes one back before giving more.
  std::size_t capacity() const { return workers_.empty() ? 1 : 2 * workers_.size(); }
  void submit(LineBatch batch);
  // The oldest batch given, parsed (waits for it).
  LineBatch take();

  // One worker per core beyond the first, up to 8; none on a single core.
  static unsigned default_workers();

 private:
  struct Slot {
    LineBatch batch;
    bool done = false;
  };
  void work();

  RecordLineReader reader_;  // for parsing on the calling thread
  std::mutex mu_;
  std::condition_variable ready_, done_;
  std::deque<Slot*> queue_;  // given, not yet picked up by a worker
  std::deque<Slot*> order_;  // given, not yet taken back: the order they are handed back in
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace vxperf::analysis
