// Reading records files back (what VIDEOX_PERF_JSON writes, one JSON object a line) into the record
// structs, through their field tables: what `vxperf report` and its fuzzer start from.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vxperf/records.h"

namespace vxperf::analysis {

// Malformed input: "FILE:LINE: message" (line 0 when the file itself is the problem).
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& file, int line, const std::string& message)
      : std::runtime_error(file + ":" + (line > 0 ? std::to_string(line) + ":" : "") + " " +
                           message),
        file_(file),
        line_(line) {}
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

struct RecordSet {
  std::vector<RequestRecord> requests;
  std::vector<TrainWindowRecord> windows;
  std::vector<TrainEndRecord> ends;
  std::vector<std::string> warnings;  // "FILE:LINE: torn last line skipped"
};

struct ReadOptions {
  // Lines that are no record of ours (not JSON: a line torn in the middle of a file; another
  // tool's JSON; a record with a wrong field) are skipped, said once per file with the first one's
  // line and then counted, instead of being an error. Input that gives no record at all and had
  // such a line is still an error (the first one).
  bool skip_bad_lines = false;
  // The number of the stream's first line, as messages name it (a follower reading a file a
  // piece at a time).
  std::int64_t first_line = 1;
  // Each line the fast path (its text read straight, in the writer's field order) reads is read
  // again the general way (simdjson's DOM) and the two records compared: a difference throws
  // std::logic_error. For fuzzing and tests; about twice as slow.
  bool check_fast_path = false;
  // Threads that parse files (stream_record_files; a stream is read on the calling thread): 0, one
  // per core (at most 8); 1, the calling thread only. Records are handed over in input order
  // whatever the number, on the calling thread.
  int threads = 0;
};

// What a streaming read hands over: each record as it is read (then forgotten; a handler keeps
// what it needs), and each warning ("FILE:LINE: ...").
class RecordHandler {
 public:
  virtual ~RecordHandler() = default;
  virtual void request(const RequestRecord& record) = 0;
  virtual void window(const TrainWindowRecord& record) = 0;
  // The training's end (a "train_end" record); ignored unless a handler wants it.
  virtual void end(const TrainEndRecord& record) { (void)record; }
  virtual void warning(const std::string& text) = 0;
  // The records that follow are this file's (stream_record_files, before each file's first).
  virtual void begin_file(const std::string& name) { (void)name; }
  // The file's last line was torn (a writer killed mid-line) and skipped: said as a warning too.
  virtual void torn_line(const std::string& name) { (void)name; }
  // A line that is no record, skipped (ReadOptions::skip_bad_lines): the file's first is said as
  // a warning too. The first of all is what reading throws when no line was a record.
  virtual void bad_line(const std::string& name, int line, const std::string& message) {
    (void)name;
    (void)line;
    (void)message;
  }
  // The file holds the same bytes as `earlier`, read before it (a rank file copied, or named
  // twice): it is not read, and a warning says so too.
  virtual void repeated_file(const std::string& name, const std::string& earlier) {
    (void)name;
    (void)earlier;
  }
  // The file's records and warnings are over (stream_record_files, after each file's last).
  virtual void end_file(const std::string& name) { (void)name; }

  // Files read whole, several at once (stream_record_files, given more than one file and more
  // than one thread): a new, empty handler of this kind, which takes one file's records on a
  // worker thread; null (the default): every record comes to this handler, in input order.
  virtual std::unique_ptr<RecordHandler> file_handler() { return nullptr; }
  // Such a handler, its file read, handed back on the calling thread in file order (after the
  // files before it): true when this handler now holds what it would if that file's records and
  // warnings had come to it one by one; false, leaving both as they were, when it cannot (the
  // file shares a rank with an earlier one, say): the file is then read again into this one.
  virtual bool join_file(RecordHandler& file) {
    (void)file;
    return false;
  }
};

// One pass over each file in turn ("-" is standard input), a fixed-size buffer at a time (a line
// longer than it grows it), parsed with simdjson: memory does not grow with the input. Besides the
// torn last line, a file whose records' timestamps ("ts") go backwards for a rank is said once
// (with the line) and read as it is. A file with the same bytes as one read before it is not read
// again (RecordHandler::repeated_file). Throws InputError as read_record_files does.
void stream_record_files(const std::vector<std::string>& paths, RecordHandler& handler,
                         const ReadOptions& options = {});
void stream_records(std::istream& in, const std::string& name, RecordHandler& handler,
                    const ReadOptions& options = {});

// Appends the records of one JSON-lines stream. A last line without its newline that is not
// complete JSON (a writer killed mid-line) is skipped with a warning; anything else malformed,
// and running out of memory, throws InputError.
void read_records(std::istream& in, const std::string& name, RecordSet& into,
                  const ReadOptions& options = {});
// Reads every file ("-" is standard input). Throws InputError (a directory included).
RecordSet read_record_files(const std::vector<std::string>& paths, const ReadOptions& options = {});

}  // namespace vxperf::analysis
