// Reading records files back (what VIDEOX_PERF_JSON writes, one JSON object a line) into the record
// structs, through their field tables: what `vxperf report` and its fuzzer start from.
#pragma once

#include <istream>
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
  std::vector<std::string> warnings;  // "FILE:LINE: torn last line skipped"
};

// Appends the records of one JSON-lines stream. A last line without its newline that is not
// complete JSON (a writer killed mid-line) is skipped with a warning; anything else malformed,
// and running out of memory, throws InputError.
void read_records(std::istream& in, const std::string& name, RecordSet& into);
// Reads every file ("-" is standard input). Throws InputError (a directory included).
RecordSet read_record_files(const std::vector<std::string>& paths);

}  // namespace vxperf::analysis
