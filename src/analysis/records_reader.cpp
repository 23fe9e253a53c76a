// Records reader: the JSON lines the records file holds, back into the record structs through
// their field tables (src/schema/record_fields.h), in one streaming pass.
//
// Lines are cut from a fixed buffer of the file (grown only for a longer line). Each is read by the
// tables' one reading walk (schema/field_reader.h) over simdjson's On-Demand API, taking the fields
// in the order the writer wrote them (analysis/ondemand_object.h); a line that path gives up on
// (out of order, unknown fields, malformed) is read again over simdjson's DOM (schema/json_dom.h),
// which gives the record or the message. A record is handed to the handler and forgotten.
#include "vxperf/records_reader.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <stdexcept>
#include <vector>

#include "analysis/record_line.h"
#include "schema/json.h"

namespace vxperf::analysis {
namespace {

bool blank(const char* data, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    char c = data[i];
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

// One read: the parser (its buffers kept from line to line), the records handed over so far and
// the state of the file being read.
class Stream {
 public:
  Stream(RecordHandler& handler, const ReadOptions& options)
      : handler_(handler), options_(options) {}

  std::int64_t records() const { return records_; }
  bool have_problem() const { return !first_problem_.empty(); }
  [[noreturn]] void throw_first_problem() const {
    throw InputError(first_problem_file_, first_problem_line_, first_problem_);
  }

  void begin_file(const std::string& name) {
    name_ = name;
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
  }

  // `data` has simdjson's padding readable after `size` bytes. `complete`: it ended with a newline.
  void line(const char* data, std::size_t size, bool complete, std::int64_t line) {
    if (size == 0 || blank(data, size)) return;
    RecordLineReader::Got got = lines_.read(data, size);
    if (options_.check_fast_path && lines_.fast()) check_fast_path(got, data, size, line);
    switch (got) {
      case RecordLineReader::Got::kRequest:
        return deliver(lines_.request(), line);
      case RecordLineReader::Got::kWindow:
        return deliver(lines_.window(), line);
      case RecordLineReader::Got::kNotJson:
        // Only a last line without its newline can be a writer that died mid-write.
        if (!complete) {
          handler_.warning(name_ + ":" + std::to_string(line) +
                           ": torn last line skipped (not complete JSON)");
          return;
        }
        return bad(line, "not valid JSON");
      case RecordLineReader::Got::kWrong:
        return bad(line, lines_.problem());
    }
  }

 private:
  // The fast path's record against the DOM walk's, as JSON lines.
  void check_fast_path(RecordLineReader::Got got, const char* data, std::size_t size,
                       std::int64_t line) {
    auto text = [&](RecordLineReader::Got as) {
      return as == RecordLineReader::Got::kRequest  ? to_json_line(lines_.request())
             : as == RecordLineReader::Got::kWindow ? to_json_line(lines_.window())
                                                    : "(" + lines_.problem() + ")";
    };
    std::string fast = text(got);
    RecordLineReader::Got again = lines_.read_dom(data, size);
    if (again != got || text(again) != fast) {
      throw std::logic_error(name_ + ":" + std::to_string(line) + ": the fast path read " + fast +
                             " where the DOM walk reads " + text(again));
    }
  }

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

  void bad(std::int64_t line, const std::string& message) {
    if (!options_.skip_bad_lines) throw InputError(name_, static_cast<int>(line), message);
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
  RecordLineReader lines_;  // its parsers' buffers kept from line to line
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

// 256 KiB: the bytes read stay in the core's L2 cache until parsed.
constexpr std::size_t kChunk = 256 << 10;

// Reads `fd` a buffer at a time, cutting it into lines. `buffer` (kChunk and simdjson's padding, or
// more after a longer line) is the read's, kept from file to file: zeroing a fresh one per file was
// a twentieth of the time over a thousand small rank files.
void read_fd(int fd, const std::string& name, Stream& stream, std::vector<char>& buffer) {
  std::int64_t line = 0;
  stream.begin_file(name);
  try {
    std::size_t begin = 0, end = 0;
    bool eof = false;
    for (;;) {
      std::size_t capacity = buffer.size() - simdjson::SIMDJSON_PADDING;
      char* base = buffer.data();
      // Every whole line in the buffer.
      while (begin < end) {
        auto* newline = static_cast<char*>(std::memchr(base + begin, '\n', end - begin));
        if (newline == nullptr) break;
        auto size = static_cast<std::size_t>(newline - (base + begin));
        stream.line(base + begin, size, true, ++line);
        begin += size + 1;
      }
      if (eof) {
        if (begin < end) stream.line(base + begin, end - begin, false, ++line);
        break;
      }
      if (begin > 0) {
        std::memmove(base, base + begin, end - begin);
        end -= begin;
        begin = 0;
      }
      if (end == capacity) {
        // A line longer than the buffer: twice the room (running out of memory names the line).
        std::vector<char> larger(capacity * 2 + simdjson::SIMDJSON_PADDING);
        std::memcpy(larger.data(), buffer.data(), end);
        buffer.swap(larger);
        continue;
      }
      ssize_t n = ::read(fd, buffer.data() + end, capacity - end);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw InputError(name, 0, std::string("read error: ") + std::strerror(errno));
      }
      if (n == 0) {
        eof = true;
      } else {
        end += static_cast<std::size_t>(n);
      }
    }
  } catch (const std::bad_alloc&) {
    out_of_memory(stream, name, line + 1);
  }
  stream.end_file();
}

void read_stream(std::istream& in, const std::string& name, Stream& stream,
                 std::int64_t first_line) {
  std::string text;
  std::int64_t line = first_line - 1;
  stream.begin_file(name);
  try {
    internal::ThrowOnBadRead throw_on_bad_read(in);  // a line too long for memory is said as such
    while (++line, std::getline(in, text)) {
      // getline stops at the end without a newline only on a last line cut short.
      bool complete = !in.eof();
      std::size_t size = text.size();
      text.append(simdjson::SIMDJSON_PADDING, '\0');
      stream.line(text.data(), size, complete, line);
    }
  } catch (const std::bad_alloc&) {
    text = std::string();  // give back the line before saying so
    out_of_memory(stream, name, line);
  }
  stream.end_file();
}

// Keeps every record: the RecordSet of read_records.
class Collector : public RecordHandler {
 public:
  explicit Collector(RecordSet& into) : into_(into) {}
  void request(const RequestRecord& r) override { into_.requests.push_back(r); }
  void window(const TrainWindowRecord& w) override { into_.windows.push_back(w); }
  void warning(const std::string& text) override { into_.warnings.push_back(text); }

 private:
  RecordSet& into_;
};

}  // namespace

void stream_records(std::istream& in, const std::string& name, RecordHandler& handler,
                    const ReadOptions& options) {
  Stream stream(handler, options);
  read_stream(in, name, stream, options.first_line);
  if (stream.records() == 0 && stream.have_problem()) stream.throw_first_problem();
}

void stream_record_files(const std::vector<std::string>& paths, RecordHandler& handler,
                         const ReadOptions& options) {
  Stream stream(handler, options);
  std::vector<char> buffer(kChunk + simdjson::SIMDJSON_PADDING);
  for (const auto& path : paths) {
    if (path == "-") {
      read_fd(STDIN_FILENO, "<stdin>", stream, buffer);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      throw InputError(path, 0, "is a directory, not a records file");
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    read_fd(fd, path, stream, buffer);
  }
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
