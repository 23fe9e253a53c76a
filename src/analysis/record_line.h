// One line of a records file into its record, by the field tables' one reading walk
// (schema/field_reader.h): over the line's text as the writer wrote it (analysis/line_object.h),
// and over simdjson's DOM where that path gives up (schema/json_dom.h),
// which gives the record or the message every reader gives.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "vxperf/records.h"

namespace vxperf::analysis {

class RecordLineReader {
 public:
  RecordLineReader();
  ~RecordLineReader();
  RecordLineReader(const RecordLineReader&) = delete;
  RecordLineReader& operator=(const RecordLineReader&) = delete;

  enum class Got {
    kRequest,  // request() holds it
    kWindow,   // window() holds it
    kEnd,      // end() holds it
    kNotJson,  // not valid JSON
    kWrong,    // JSON, but not a record of ours: problem() says why
  };

  // `data` has simdjson's padding readable after `size` bytes. Running out of memory throws
  // std::bad_alloc.
  Got read(const char* data, std::size_t size);
  // The same line the general way only: what read() must agree with.
  Got read_dom(const char* data, std::size_t size);

  // The record read (movable from: the next read starts afresh).
  const RequestRecord& request() const { return request_; }
  const TrainWindowRecord& window() const { return window_; }
  const TrainEndRecord& end() const { return end_; }
  RequestRecord& request() { return request_; }
  TrainWindowRecord& window() { return window_; }
  TrainEndRecord& end() { return end_; }
  const std::string& problem() const { return problem_; }
  // The last line was read on the fast path (what the tests hold it to).
  bool fast() const { return fast_; }

 private:
  Got read_fast(const char* data, std::size_t size);

  struct Parsers;  // simdjson's, their buffers kept from line to line
  std::unique_ptr<Parsers> parsers_;
  RequestRecord request_;
  TrainWindowRecord window_;
  TrainEndRecord end_;
  std::string problem_;
  bool fast_ = false;
};

}  // namespace vxperf::analysis
