// Records reader: the JSON lines the records file holds, back into the record structs through
// their field tables (src/schema/record_fields.h), in one streaming pass.
//
// A regular file is cut into parts that the worker parsing each reads itself; other input (a pipe)
// is cut into batches from a fixed buffer on the calling thread (grown only for a longer line). The
// batches come back in input order. Given several files, a regular one is instead read, parsed and
// handed over whole on a worker, to a handler of its own that the calling thread joins to its
// handler in file order (RecordHandler::file_handler, join_file). Each line is read by the tables'
// one reading walk (schema/field_reader.h) over the line's text, taking the fields in the order
// the writer wrote them (analysis/line_object.h); a line that path gives up on (out of
// order, unknown fields, malformed) is read again over simdjson's DOM (schema/json_dom.h), which
// gives the record or the message. A record is handed to the handler and forgotten.
#include "vxperf/records_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <vector>

#include "analysis/file_bytes.h"
#include "analysis/line_batches.h"
#include "schema/json.h"

namespace vxperf::analysis {
namespace {

// One read: the records handed over so far and the state of the file being read, applied a parsed
// batch at a time in input order.
class Stream {
 public:
  Stream(RecordHandler& handler, const ReadOptions& options)
      : handler_(handler), options_(options) {}

  std::int64_t records() const { return records_; }
  bool have_problem() const { return !first_problem_.empty(); }
  [[noreturn]] void throw_first_problem() const {
    throw InputError(first_problem_file_, first_problem_line_, first_problem_);
  }

  // A file with the same bytes as `earlier`, read before it: not read (said in its place).
  void repeated(const std::string& name, const std::string& earlier) {
    handler_.warning(repeated_file_warning(name, earlier));
    handler_.repeated_file(name, earlier);
  }

  // What a file read whole into a handler of its own (`file`, its stream there) gave: kept for
  // joining it to this stream.
  void kept_by(LineBatch::WholeFile& file) const {
    file.records = records_;
    if (have_problem()) {
      file.first_problem.emplace(first_problem_file_, first_problem_line_, first_problem_);
    }
  }
  // Such a file, after the files before it: its handler joined to this one's (false: it cannot
  // be, and nothing changed).
  bool join(LineBatch::WholeFile& file) {
    if (!handler_.join_file(*file.handler)) return false;
    records_ += file.records;
    if (!have_problem() && file.first_problem) {
      std::tie(first_problem_file_, first_problem_line_, first_problem_) = *file.first_problem;
    }
    return true;
  }

  void begin_file(const std::string& name) {
    name_ = name;
    handler_.begin_file(name);
    bad_lines_ = 0;
    last_bad_line_ = 0;
    backwards_ = 0;
    last_backwards_line_ = 0;
    last_ts_.clear();
  }

  void end_file() {
    if (bad_lines_ > 1) {
      handler_.warning(name_ + ": " + std::to_string(bad_lines_ - 1) +
                       " more lines skipped as not records (the last at line " +
                       std::to_string(last_bad_line_) + ")");
    }
    if (backwards_ > 1) {
      handler_.warning(name_ + ": " + std::to_string(backwards_ - 1) +
                       " more records whose ts goes backwards (the last at line " +
                       std::to_string(last_backwards_line_) + ")");
    }
    handler_.end_file(name_);
  }

  // A parsed batch of the current file, in input order: its records handed over, its problems
  // said. `base`: the number of the line before the batch's first.
  void apply(LineBatch& batch, std::int64_t base) {
    if (batch.error) std::rethrow_exception(batch.error);
    if (batch.disagreed_at > 0) {  // ReadOptions::check_fast_path
      throw std::logic_error(name_ + ":" + std::to_string(base + batch.disagreed_at) + ": " +
                             batch.disagreement);
    }
    for (const LineBatch::Line& l : batch.lines) {
      std::int64_t line = base + l.number;
      switch (l.got) {
        case RecordLineReader::Got::kRequest:
          deliver(batch.requests[l.index], line);
          break;
        case RecordLineReader::Got::kWindow:
          deliver(batch.windows[l.index], line);
          break;
        case RecordLineReader::Got::kEnd:
          deliver(batch.ends[l.index], line);
          break;
        case RecordLineReader::Got::kNotJson:
          not_json(line, l.complete);
          break;
        case RecordLineReader::Got::kWrong:
          bad(line, batch.problems[l.index]);
          break;
      }
    }
  }

  // A line as `reader` read it (`got`), handed over or said at once: what apply does with a
  // parsed batch's line, without keeping the record (a file read whole on a worker).
  void take(RecordLineReader& reader, RecordLineReader::Got got, std::int64_t line, bool complete) {
    switch (got) {
      case RecordLineReader::Got::kRequest:
        deliver(reader.request(), line);
        break;
      case RecordLineReader::Got::kWindow:
        deliver(reader.window(), line);
        break;
      case RecordLineReader::Got::kEnd:
        deliver(reader.end(), line);
        break;
      case RecordLineReader::Got::kNotJson:
        not_json(line, complete);
        break;
      case RecordLineReader::Got::kWrong:
        bad(line, reader.problem());
        break;
    }
  }

 private:
  void deliver(const RequestRecord& r, std::int64_t line) {
    check_order(0, r.rank, r.ts, line);
    ++records_;
    handler_.request(r);
  }
  void deliver(const TrainWindowRecord& w, std::int64_t line) {
    check_order(1, w.rank, w.ts, line);
    ++records_;
    handler_.window(w);
  }
  void deliver(const TrainEndRecord& e, std::int64_t line) {
    check_order(2, e.rank, e.ts, line);
    ++records_;
    handler_.end(e);
  }

  void not_json(std::int64_t line, bool complete) {
    // Only a last line without its newline can be a writer that died mid-write.
    if (!complete) {
      handler_.warning(name_ + ":" + std::to_string(line) +
                       ": torn last line skipped (not complete JSON)");
      handler_.torn_line(name_);
    } else {
      bad(line, "not valid JSON");
    }
  }

  void bad(std::int64_t line, const std::string& message) {
    if (!options_.skip_bad_lines) throw InputError(name_, static_cast<int>(line), message);
    handler_.bad_line(name_, static_cast<int>(line), message);
    if (first_problem_.empty()) {
      first_problem_ = message;
      first_problem_file_ = name_;
      first_problem_line_ = static_cast<int>(line);
    }
    if (bad_lines_++ == 0) {
      handler_.warning(name_ + ":" + std::to_string(line) + ": " + message + " (line skipped)");
    }
    last_bad_line_ = line;
  }

  // Each rank's records of a kind are written in the order of their timestamps.
  void check_order(int kind, int rank, double ts, std::int64_t line) {
    auto [it, first] = last_ts_.emplace(std::make_pair(kind, rank), ts);
    if (first) return;
    if (ts < it->second) {
      if (backwards_++ == 0) {
        char text[160];
        std::snprintf(text, sizeof text,
                      ": \"ts\" %.17g of rank %d is before the previous record's %.17g "
                      "(read as it is)",
                      ts, rank, it->second);
        handler_.warning(name_ + ":" + std::to_string(line) + text);
      }
      last_backwards_line_ = line;
    }
    it->second = ts;
  }

  RecordHandler& handler_;
  const ReadOptions& options_;
  std::int64_t records_ = 0;
  std::string name_;
  std::int64_t bad_lines_ = 0, last_bad_line_ = 0;
  std::int64_t backwards_ = 0, last_backwards_line_ = 0;
  std::map<std::pair<int, int>, double> last_ts_;
  std::string first_problem_, first_problem_file_;
  int first_problem_line_ = 0;
};

[[noreturn]] void out_of_memory(const Stream& stream, const std::string& name, std::int64_t line) {
  throw InputError(name, static_cast<int>(line),
                   "out of memory after " + std::to_string(stream.records()) +
                       " records: too much to summarize at once (split the input)");
}

// 256 KiB a batch: the bytes read stay in the core's L2 cache until parsed.
constexpr std::size_t kChunk = 256 << 10;
// A batch's buffer: a chunk, the byte before a file's part and its last line's few kilobytes past
// it, then the padding (so that a part seldom grows its buffer).
constexpr std::size_t kBuffer = kChunk + (8 << 10) + simdjson::SIMDJSON_PADDING;

// A regular file at most this big is read whole by one worker when several files are read (a
// bigger one is cut into parts that every worker parses): a job's rank files.
constexpr off_t kWholeFile = off_t{256} << 20;

void read_part(LineBatch& batch, int fd, const std::string& name, off_t begin, off_t end);
std::uint64_t start_hash(std::string_view start);
bool same_bytes(const std::string& a, const std::string& b);
// The bytes of a file's start hashed for finding a file named twice.
constexpr std::size_t kStartHashed = std::size_t{16} << 10;

// A regular file of `size` bytes read on a worker into the batch's own handler, a part at a time
// into its buffer: what a read on one thread hands over, the file's warnings included.
void read_whole(LineBatch& batch, RecordLineReader& reader, int fd, const std::string& name,
                off_t size, const ReadOptions& options) {
  Stream stream(*batch.whole->handler, options);
  stream.begin_file(name);
  std::int64_t lines = 0;
  for (off_t begin = 0; begin < size; begin += static_cast<off_t>(kChunk)) {
    read_part(batch, fd, name, begin, std::min(size, begin + static_cast<off_t>(kChunk)));
    if (begin == 0) {
      // Its start's hash, for the calling thread to find it read before (a file named twice).
      batch.whole->start_hash = start_hash(std::string_view(
          batch.text.data(), std::min(kStartHashed, static_cast<std::size_t>(size))));
    }
    if (options.check_fast_path) {
      batch.parse_lines(reader);
      stream.apply(batch, lines);
    } else {
      // Each record handed over as it is read, in the reader's own (a batch of records moved
      // into place and read back was a few percent of the report).
      batch.each_line([&](const char* data, std::size_t size, std::int64_t number, bool complete) {
        stream.take(reader, reader.read(data, size), lines + number, complete);
      });
    }
    lines += batch.line_count;
    batch.clear_lines();
  }
  stream.end_file();
  stream.kept_by(*batch.whole);
}

// Batches of lines to the parsers and back into the stream in order: each file's lines cut into
// batches of whole lines, parsed on the workers while the next are read, applied as they come
// back; or, when several files are read, each file read whole into a handler of its own on a
// worker (its records accumulated there too) and that handler joined to the stream's in order.
class Reading {
 public:
  Reading(Stream& stream, const ReadOptions& options, unsigned workers)
      : stream_(stream), options_(options), batches_(workers) {}

  // A batch, its buffers those of one given back (its records' vectors too: allocated afresh,
  // half a megabyte a batch of windows, they were page faults on every batch).
  LineBatch fresh() {
    LineBatch batch;
    if (spare_.empty()) {
      batch.text.resize(kBuffer);
    } else {
      batch = std::move(spare_.back());
      spare_.pop_back();
      batch.reuse();
    }
    batch.check_fast_path = options_.check_fast_path;
    return batch;
  }

  // Files are given whole, one after the other: begin (its first line's number), batches, end.
  void begin_file(const std::string& name, std::int64_t first_line = 1) {
    files_.emplace_back();
    files_.back().name = name;
    files_.back().lines = first_line - 1;
  }
  void give(LineBatch batch) {
    ++files_.back().batches;
    if (batches_.serial() && !batch.whole && !options_.check_fast_path &&
        batches_.in_flight() == 0) {
      apply_now(std::move(batch));
      return;
    }
    if (batches_.in_flight() >= batches_.capacity()) apply_one();
    batches_.submit(std::move(batch));
  }
  void end_file() { files_.back().ended = true, apply_ended(); }
  // A regular file read whole on a worker into `own` (file_handler()'s), joined to the stream's
  // handler in file order; read again on this thread into that handler where it cannot be.
  // `repeat`: another file has its size, so that it may be a repeat (said in its place, then).
  void give_whole(const std::shared_ptr<const int>& file, off_t size, const std::string& name,
                  std::unique_ptr<RecordHandler> own, bool repeat) {
    begin_file(name);
    files_.back().whole = true;
    files_.back().repeat = repeat;
    files_.back().fd = file;
    files_.back().size = size;
    LineBatch batch = fresh();
    batch.whole.emplace();
    batch.whole->handler = std::move(own);
    const ReadOptions* options = &options_;
    batch.fill = [file, name, size, options](LineBatch& b, RecordLineReader& reader) {
      read_whole(b, reader, *file, name, size, *options);
    };
    give(std::move(batch));
    end_file();
  }
  // Everything given, applied (before an error is said, so that what came before it is handed
  // over first, as a reading on one thread would).
  void drain() {
    while (batches_.in_flight() > 0) apply_one();
    apply_ended();
  }
  const Stream& stream() const { return stream_; }

 private:
  struct File {
    std::string name;
    std::int64_t batches = 0;  // given, not yet applied
    std::int64_t lines = 0;    // applied so far (before the first: the first's number - 1)
    bool begun = false, ended = false;
    // Read whole on a worker (give_whole): the file and its size, to read it again here.
    bool whole = false;
    bool repeat = false;  // it may repeat an earlier file: its size is another's
    std::shared_ptr<const int> fd;
    off_t size = 0;
  };

  void apply_one() {
    File& file = files_.front();
    LineBatch batch = batches_.take();
    if (batch.whole && file.repeat && repeats(file, batch.whole->start_hash)) {
      batch.whole.reset();  // the same bytes as a file before it: not read, as one thread does
      file.begun = true;
    } else if (batch.whole) {
      // Joined, else (an error, or a file the handler cannot join) read again here: an error is
      // then said where a read on this thread says it, after everything before it.
      bool joined = false;
      try {
        joined = !batch.error && stream_.join(*batch.whole);
      } catch (const std::bad_alloc&) {
        out_of_memory(stream_, file.name, 0);
      }
      if (!joined) {
        batch.whole.reset();  // what the worker made of it given up first
        read_again(file, batch);
      }
      batch.whole.reset();
      file.begun = true;
    } else {
      if (!file.begun) stream_.begin_file(file.name), file.begun = true;
      try {
        stream_.apply(batch, file.lines);
      } catch (const std::bad_alloc&) {
        out_of_memory(stream_, file.name, file.lines + 1);
      }
      file.lines += batch.line_count;
    }
    --file.batches;
    batch.text.resize(std::max(batch.text.size(), kBuffer));
    if (spare_.size() < 2 * batches_.capacity()) spare_.push_back(std::move(batch));
    apply_ended();
  }
  // On this thread alone (--threads 1): the batch read and each record handed over as it is
  // read, as a file read whole on a worker is (keeping a batch's records to hand them over
  // after was a tenth of a report on one thread). Its effects come in the same order as a
  // batch parsed and applied: each batch is applied before the next is read.
  void apply_now(LineBatch batch) {
    File& file = files_.front();
    if (!reader_) reader_.emplace();
    if (!file.begun) stream_.begin_file(file.name), file.begun = true;
    if (batch.fill) {
      auto fill = std::move(batch.fill);
      batch.fill = nullptr;
      fill(batch, *reader_);
    }
    try {
      batch.each_line([&](const char* data, std::size_t size, std::int64_t number, bool complete) {
        stream_.take(*reader_, reader_->read(data, size), file.lines + number, complete);
      });
    } catch (const std::bad_alloc&) {
      out_of_memory(stream_, file.name, file.lines + 1);
    }
    file.lines += batch.line_count;
    --file.batches;
    batch.clear_lines();
    batch.text.resize(std::max(batch.text.size(), kBuffer));
    if (spare_.size() < 2 * batches_.capacity()) spare_.push_back(std::move(batch));
    apply_ended();
  }
  // Files whose batches have all been applied: ended in the stream.
  void apply_ended() {
    while (!files_.empty() && files_.front().ended && files_.front().batches == 0) {
      if (!files_.front().whole) {
        if (!files_.front().begun) stream_.begin_file(files_.front().name);
        stream_.end_file();
      }
      files_.pop_front();
    }
  }
  // Whether a file read whole holds the same bytes as one read before it (the first such is said
  // as what it repeats); else it is one more that later ones may repeat. As repeated_files finds
  // it before the reading, here for the files the workers read whole, which hash their starts.
  bool repeats(const File& file, std::uint64_t hash) {
    std::vector<std::string>& same = distinct_[{file.size, hash}];
    for (const std::string& earlier : same) {
      if (same_bytes(earlier, file.name)) {
        stream_.repeated(file.name, earlier);
        return true;
      }
    }
    same.push_back(file.name);
    return false;
  }
  // A file read whole, read again on this thread into the stream's handler, a part at a time
  // into `batch`'s buffer.
  void read_again(const File& file, LineBatch& batch) {
    if (!reader_) reader_.emplace();
    stream_.begin_file(file.name);
    std::int64_t lines = 0;
    for (off_t begin = 0; begin < file.size; begin += static_cast<off_t>(kChunk)) {
      batch.clear_lines();
      batch.error = nullptr;
      read_part(batch, *file.fd, file.name, begin,
                std::min(file.size, begin + static_cast<off_t>(kChunk)));
      try {
        batch.parse_lines(*reader_);
        stream_.apply(batch, lines);
      } catch (const std::bad_alloc&) {
        out_of_memory(stream_, file.name, lines + 1);
      }
      lines += batch.line_count;
    }
    batch.clear_lines();
    stream_.end_file();
  }

  Stream& stream_;
  const ReadOptions& options_;
  LineBatches batches_;
  std::deque<File> files_;  // begun, not yet ended in the stream
  std::vector<LineBatch> spare_;
  std::optional<RecordLineReader> reader_;  // read_again's and apply_now's
  // The files read whole that may repeat, by size and start's hash: those read, in order.
  std::map<std::pair<off_t, std::uint64_t>, std::vector<std::string>> distinct_;
};

// Newlines in [data, data + size), a memchr a line (a byte-by-byte count was an eighth of the
// time).
std::int64_t count_lines(const char* data, std::size_t size) {
  std::int64_t n = 0;
  for (const char* end = data + size;
       (data = static_cast<const char*>(std::memchr(data, '\n', end - data))) != nullptr; ++data) {
    ++n;
  }
  return n;
}

// Reads `fd` a buffer at a time, cut into batches of whole lines.
void read_fd(int fd, const std::string& name, Reading& reading) {
  reading.begin_file(name);
  std::int64_t lines = 0;  // given so far
  try {
    LineBatch batch = reading.fresh();
    std::size_t end = 0;
    for (;;) {
      std::size_t capacity = batch.text.size() - simdjson::SIMDJSON_PADDING;
      if (end == capacity) {
        char* base = batch.text.data();
        auto* last = static_cast<char*>(memrchr(base, '\n', end));
        if (last == nullptr) {
          // A line longer than the buffer: twice the room (running out of memory names the line).
          batch.text.resize(capacity * 2 + simdjson::SIMDJSON_PADDING);
          continue;
        }
        // The whole lines go; the start of the next line begins the next batch.
        LineBatch next = reading.fresh();
        std::size_t size = static_cast<std::size_t>(last - base) + 1;
        if (next.text.size() < end - size + simdjson::SIMDJSON_PADDING + kChunk) {
          next.text.resize(end - size + simdjson::SIMDJSON_PADDING + kChunk);
        }
        std::memcpy(next.text.data(), base + size, end - size);
        batch.size = size;
        lines += count_lines(base, size);
        reading.give(std::move(batch));
        batch = std::move(next);
        end -= size;
        continue;
      }
      ssize_t n = ::read(fd, batch.text.data() + end, capacity - end);
      if (n < 0) {
        if (errno == EINTR) continue;
        reading.drain();
        throw InputError(name, 0, std::string("read error: ") + std::strerror(errno));
      }
      if (n == 0) break;
      end += static_cast<std::size_t>(n);
    }
    if (end > 0) {
      batch.size = end;
      batch.ends_complete = batch.text[end - 1] == '\n';
      reading.give(std::move(batch));
    }
  } catch (const std::bad_alloc&) {
    reading.drain();
    out_of_memory(reading.stream(), name, lines + 1);
  }
  reading.end_file();
}

// Up to `want` bytes of `fd` from `at` into `into`: fewer only at the file's end.
std::size_t pread_full(int fd, const std::string& name, char* into, std::size_t want, off_t at) {
  std::size_t got = 0;
  while (got < want) {
    ssize_t n = ::pread(fd, into + got, want - got, at + static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(name, 0, std::string("read error: ") + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return got;
}

// The lines of a regular file that begin in [begin, end), read by the thread that parses them:
// from the byte before `begin` (a line begins there only after a newline), the last of them on
// past `end` to its newline, or to the file's end (a torn last line).
void read_part(LineBatch& batch, int fd, const std::string& name, off_t begin, off_t end) {
  auto room = [&](std::size_t bytes) {
    if (batch.text.size() < bytes + simdjson::SIMDJSON_PADDING) {
      batch.text.resize(bytes + simdjson::SIMDJSON_PADDING);
    }
  };
  off_t from = begin == 0 ? 0 : begin - 1;
  auto want = static_cast<std::size_t>(end - from);
  room(want);
  std::size_t got = pread_full(fd, name, batch.text.data(), want, from);
  std::size_t start = 0;
  if (begin > 0) {
    const auto* newline = static_cast<const char*>(std::memchr(batch.text.data(), '\n', got));
    // None: the part is inside a line that began before it; the one at its end: the next line
    // begins in the next part.
    if (newline == nullptr || newline + 1 == batch.text.data() + want) {
      batch.size = 0;
      return;
    }
    start = static_cast<std::size_t>(newline - batch.text.data()) + 1;
  }
  bool at_end = got < want;
  while (!at_end && batch.text[got - 1] != '\n') {
    // The last line goes on past the part: read on to its newline, into the buffer's room (twice
    // the buffer when little is left: a long line).
    if (batch.text.size() - simdjson::SIMDJSON_PADDING - got < 4096) room(2 * got);
    std::size_t space = batch.text.size() - simdjson::SIMDJSON_PADDING - got;
    std::size_t more = pread_full(fd, name, batch.text.data() + got, space,
                                  from + static_cast<off_t>(got));
    at_end = more < space;
    const auto* newline =
        static_cast<const char*>(std::memchr(batch.text.data() + got, '\n', more));
    got = newline != nullptr ? static_cast<std::size_t>(newline - batch.text.data()) + 1
                             : got + more;
    if (newline != nullptr) break;
  }
  batch.offset = start;
  batch.size = got - start;
  batch.ends_complete = got == start || batch.text[got - 1] == '\n';
}

// A regular file cut into parts of kChunk bytes, each read and parsed on a worker: the calling
// thread only hands them out (it read and copied every byte, the larger part of its time on a
// thousand rank files). `file` closes the file when the last part is read.
void read_parts(const std::shared_ptr<const int>& file, off_t size, const std::string& name,
                Reading& reading) {
  reading.begin_file(name);
  try {
    for (off_t begin = 0; begin < size; begin += static_cast<off_t>(kChunk)) {
      off_t end = std::min(size, begin + static_cast<off_t>(kChunk));
      LineBatch batch = reading.fresh();
      batch.fill = [file, name, begin, end](LineBatch& b, RecordLineReader&) {
        read_part(b, *file, name, begin, end);
      };
      reading.give(std::move(batch));
    }
  } catch (const std::bad_alloc&) {
    reading.drain();
    out_of_memory(reading.stream(), name, 0);
  }
  reading.end_file();
}

// A stream read on the calling thread, a batch of whole lines at a time.
void read_stream(std::istream& in, const std::string& name, Reading& reading,
                 std::int64_t first_line) {
  reading.begin_file(name, first_line);
  std::string text;
  std::int64_t line = first_line - 1;
  try {
    internal::ThrowOnBadRead throw_on_bad_read(in);  // a line too long for memory is said as such
    LineBatch batch = reading.fresh();
    std::size_t end = 0;
    while (++line, std::getline(in, text)) {
      // getline stops at the end without a newline only on a last line cut short.
      bool complete = !in.eof();
      if (end + text.size() + 1 + simdjson::SIMDJSON_PADDING > batch.text.size()) {
        if (end > 0) {
          batch.size = end;
          reading.give(std::move(batch));
          batch = reading.fresh();
          end = 0;
        }
        if (text.size() + 1 + simdjson::SIMDJSON_PADDING > batch.text.size()) {
          batch.text.resize(text.size() + 1 + simdjson::SIMDJSON_PADDING);
        }
      }
      std::memcpy(batch.text.data() + end, text.data(), text.size());
      end += text.size();
      if (complete) batch.text[end++] = '\n';
      batch.ends_complete = complete;
    }
    if (end > 0) {
      batch.size = end;
      reading.give(std::move(batch));
    }
  } catch (const std::bad_alloc&) {
    text = std::string();  // give back the line before saying so
    reading.drain();
    out_of_memory(reading.stream(), name, line);
  }
  reading.end_file();
}

// For each path, the index of an earlier path with the same bytes, or -1: a rank file copied, or
// named twice. Only files of a size another has are read for it (many, among a job's thousands of
// rank files of one shape), their first 64 KiB hashed, and those of equal hashes compared byte for
// byte: a different file of the same size costs a read of its start, not of the whole. A file
// that cannot be read here is left to the reading, which says why.
class FileBytes {
 public:
  explicit FileBytes(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~FileBytes() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  // The next piece of the file (at most `most` bytes; empty at its end); nullopt when it cannot
  // be read.
  std::optional<std::string_view> next(std::size_t most = std::size_t{1} << 20) {
    if (fd_ < 0) return std::nullopt;
    buffer_.resize(most);
    for (;;) {
      ssize_t n = ::pread(fd_, buffer_.data(), buffer_.size(), at_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::nullopt;
      at_ += n;
      return std::string_view(buffer_.data(), static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  off_t at_ = 0;
  std::vector<char> buffer_;
};

}  // namespace

namespace {

// FNV-1a over the file's first `most` bytes (all of them by default).
std::optional<std::uint64_t> hash_of(const std::string& path, std::size_t most) {
  FileBytes file(path);
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t left = most; left > 0;) {
    auto piece = file.next(std::min<std::size_t>(left, std::size_t{1} << 20));
    if (!piece) return std::nullopt;
    if (piece->empty()) break;
    for (char c : *piece) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    left -= piece->size();
  }
  return h;
}

}  // namespace

std::optional<std::uint64_t> content_hash(const std::string& path) {
  return hash_of(path, std::numeric_limits<std::size_t>::max());
}

std::string repeated_file_warning(const std::string& path, const std::string& earlier) {
  return path + ": the same bytes as " + earlier +
         " (a file copied, or named twice): not read again";
}

namespace {

// The first 16 KiB of a file hashed a word at a time, to group files that may be the same (those
// of one hash are then compared byte for byte): a job's rank files of one size differ in their
// first lines. FNV-1a a byte at a time over 64 KiB of each was 6% of a report on 1024 rank files.
std::uint64_t start_hash(std::string_view start) {
  std::uint64_t h = start.size();
  const char* p = start.data();
  const char* end = p + start.size();
  auto mix = [&h](std::uint64_t word) {
    h = (h ^ word) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  };
  for (; end - p >= 8; p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    mix(word);
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, p, static_cast<std::size_t>(end - p));
  mix(tail);
  return h;
}
std::optional<std::uint64_t> start_hash_of(const std::string& path) {
  FileBytes file(path);
  auto piece = file.next(kStartHashed);
  if (!piece) return std::nullopt;
  return start_hash(*piece);
}

// Two files of one size: a piece of each at a time (pread gives a regular file's pieces whole).
bool same_bytes(const std::string& a, const std::string& b) {
  FileBytes fa(a), fb(b);
  for (;;) {
    auto pa = fa.next();
    auto pb = fb.next();
    if (!pa || !pb || *pa != *pb) return false;
    if (pa->empty()) return true;
  }
}

// For each path, the index of an earlier path with the same bytes, or -1. Files of a size another
// has and at most `later` bytes (not empty) are left to the reading (-2): those a worker reads
// whole, hashing their start as it reads it (Reading::repeats); a thousand rank files' starts read
// here first were most of what the calling thread did before the workers began.
std::vector<std::ptrdiff_t> repeated_files(const std::vector<std::string>& paths, off_t later) {
  std::vector<std::ptrdiff_t> earlier(paths.size(), -1);
  std::map<off_t, std::vector<std::size_t>> by_size;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    struct stat st {};
    if (paths[i] != "-" && ::stat(paths[i].c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      by_size[st.st_size].push_back(i);
    }
  }
  for (const auto& [size, group] : by_size) {
    if (group.size() < 2) continue;
    if (size > 0 && size <= later) {
      for (std::size_t i : group) earlier[i] = -2;
      continue;
    }
    std::map<std::uint64_t, std::vector<std::size_t>> by_hash;  // the distinct files of a hash
    for (std::size_t i : group) {
      auto h = start_hash_of(paths[i]);
      if (!h) continue;
      auto& seen = by_hash[*h];
      for (std::size_t e : seen) {
        if (same_bytes(paths[e], paths[i])) {
          earlier[i] = static_cast<std::ptrdiff_t>(e);
          break;
        }
      }
      if (earlier[i] < 0) seen.push_back(i);
    }
  }
  return earlier;
}

// Keeps every record: the RecordSet of read_records.
class Collector : public RecordHandler {
 public:
  explicit Collector(RecordSet& into) : into_(into) {}
  void request(const RequestRecord& r) override { into_.requests.push_back(r); }
  void window(const TrainWindowRecord& w) override { into_.windows.push_back(w); }
  void end(const TrainEndRecord& e) override { into_.ends.push_back(e); }
  void warning(const std::string& text) override { into_.warnings.push_back(text); }

 private:
  RecordSet& into_;
};

}  // namespace

void stream_records(std::istream& in, const std::string& name, RecordHandler& handler,
                    const ReadOptions& options) {
  Stream stream(handler, options);
  Reading reading(stream, options, 0);
  read_stream(in, name, reading, options.first_line);
  reading.drain();
  if (stream.records() == 0 && stream.have_problem()) stream.throw_first_problem();
}

void stream_record_files(const std::vector<std::string>& paths, RecordHandler& handler,
                         const ReadOptions& options) {
  Stream stream(handler, options);
  const unsigned workers = options.threads == 0
                               ? LineBatches::default_workers()
                               : static_cast<unsigned>(std::max(options.threads, 1) - 1);
  Reading reading(stream, options, workers);
  // Several files on several threads: each read whole by a worker, if the handler can take them so.
  const bool whole_files = workers > 0 && paths.size() > 1 && handler.file_handler() != nullptr;
  const std::vector<std::ptrdiff_t> repeats = repeated_files(paths, whole_files ? kWholeFile : 0);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (repeats[i] >= 0) {  // (-2: found as the file is read)
      const std::string& earlier = paths[static_cast<std::size_t>(repeats[i])];
      reading.drain();  // said in its place among the files' warnings
      handler.warning(repeated_file_warning(path, earlier));
      handler.repeated_file(path, earlier);
      continue;
    }
    if (path == "-") {
      read_fd(STDIN_FILENO, "<stdin>", reading);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      reading.drain();
      throw InputError(path, 0, "is a directory, not a records file");
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      reading.drain();
      throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    }
    std::shared_ptr<const int> file(new int(fd), [](const int* f) {
      ::close(*f);
      delete f;
    });
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      std::unique_ptr<RecordHandler> own;
      if (whole_files && st.st_size <= kWholeFile) own = handler.file_handler();
      if (own) {
        reading.give_whole(file, st.st_size, path, std::move(own), repeats[i] == -2);
      } else {
        read_parts(file, st.st_size, path, reading);
      }
    } else {
      read_fd(fd, path, reading);  // a pipe, a device, an empty file: read as it comes
    }
  }
  reading.drain();
  if (stream.records() == 0 && stream.have_problem()) stream.throw_first_problem();
}

void read_records(std::istream& in, const std::string& name, RecordSet& into,
                  const ReadOptions& options) {
  Collector collector(into);
  stream_records(in, name, collector, options);
}

RecordSet read_record_files(const std::vector<std::string>& paths, const ReadOptions& options) {
  RecordSet set;
  Collector collector(set);
  stream_record_files(paths, collector, options);
  return set;
}

}  // namespace vxperf::analysis
