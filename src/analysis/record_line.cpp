#include "analysis/record_line.h"

#include <simdjson.h>

#include <new>

#include "analysis/line_object.h"
#include "schema/field_reader.h"
#include "schema/json_dom.h"

namespace vxperf::analysis {

using internal::DomObject;
using internal::FieldError;
using internal::FieldReader;

namespace {

// A record emptied for the next line: a default one but for its vector's storage, kept (the
// batches hand the reader back the records they held, so that a line's read allocates nothing
// for its stages or phases).
void reset(RequestRecord& r) {
  auto stages = std::move(r.stages);
  stages.clear();
  r = RequestRecord{};
  r.stages = std::move(stages);
}
void reset(TrainWindowRecord& w) {
  auto phases = std::move(w.phases_s);
  phases.clear();
  // Made again in place: a default record moved in, member by member, cost twice as much.
  w.~TrainWindowRecord();
  new (&w) TrainWindowRecord();
  w.phases_s = std::move(phases);
}

}  // namespace

struct RecordLineReader::Parsers {
  simdjson::dom::parser dom;
};

RecordLineReader::RecordLineReader() : parsers_(std::make_unique<Parsers>()) {}
RecordLineReader::~RecordLineReader() = default;

RecordLineReader::Got RecordLineReader::read(const char* data, std::size_t size) {
  Got got = read_fast(data, size);
  fast_ = got != Got::kWrong;
  return fast_ ? got : read_dom(data, size);
}

// kWrong here only means: the DOM walk must say what the line holds.
RecordLineReader::Got RecordLineReader::read_fast(const char* data, std::size_t size) {
  try {
    LineObject::Cursor cursor{data, data + size};
    auto space = [&] {
      while (cursor.p != cursor.end &&
             (*cursor.p == ' ' || *cursor.p == '\t' || *cursor.p == '\n' || *cursor.p == '\r')) {
        ++cursor.p;
      }
    };
    space();
    LineObject object(cursor);
    LineObject::Value kind_value;
    if (!object.find("kind", kind_value) || !LineObject::is_string(kind_value)) {
      return Got::kWrong;
    }
    const std::string_view kind = LineObject::text(kind_value);
    FieldReader<LineObject> reader(object);
    Got got = Got::kWrong;
    if (kind == "request") {
      reset(request_);
      describe(reader, request_);
      got = Got::kRequest;
    } else if (kind == "train_window") {
      reset(window_);
      describe(reader, window_);
      got = Got::kWindow;
    } else if (kind == "train_end") {
      end_ = TrainEndRecord{};
      describe(reader, end_);
      got = Got::kEnd;
    } else {
      return Got::kWrong;
    }
    object.end();
    // Nothing after the object but whitespace (the DOM parser refuses a line with more).
    space();
    if (cursor.p != cursor.end) return Got::kWrong;
    return got;
  } catch (const GiveUp&) {
  } catch (const FieldError&) {
  }
  return Got::kWrong;
}

RecordLineReader::Got RecordLineReader::read_dom(const char* data, std::size_t size) {
  simdjson::dom::element doc;
  auto error = parsers_->dom.parse(data, size, /*realloc_if_needed=*/false).get(doc);
  if (error == simdjson::MEMALLOC) throw std::bad_alloc();
  if (error != simdjson::SUCCESS) return Got::kNotJson;
  problem_.clear();
  try {
    if (!doc.is_object()) FieldReader<DomObject>::fail("a record must be a JSON object");
    simdjson::dom::object o(doc);
    simdjson::dom::element kind;
    if (o.at_key("kind").get(kind) != simdjson::SUCCESS || !kind.is_string()) {
      FieldReader<DomObject>::fail("a record needs a string \"kind\"");
    }
    std::string_view k(kind);
    DomObject object(o);
    FieldReader<DomObject> reader(object);
    if (k == "request") {
      reset(request_);
      describe(reader, request_);
      return Got::kRequest;
    }
    if (k == "train_window") {
      reset(window_);
      describe(reader, window_);
      return Got::kWindow;
    }
    if (k == "train_end") {
      end_ = TrainEndRecord{};
      describe(reader, end_);
      return Got::kEnd;
    }
    FieldReader<DomObject>::fail("unknown record kind " + internal::quoted(k) +
                                 " (expected request, train_window or train_end)");
  } catch (const FieldError& e) {
    problem_ = e.what();
  }
  return Got::kWrong;
}

}  // namespace vxperf::analysis
