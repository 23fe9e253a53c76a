#include "analysis/record_line.h"

#include <simdjson.h>

#include <new>

#include "analysis/ondemand_object.h"
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
  w = TrainWindowRecord{};
  w.phases_s = std::move(phases);
}

}  // namespace

struct RecordLineReader::Parsers {
  simdjson::ondemand::parser fast;
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
    simdjson::ondemand::document doc;
    simdjson::ondemand::object o;
    auto error = parsers_->fast.iterate(data, size, size + simdjson::SIMDJSON_PADDING).get(doc);
    if (error == simdjson::MEMALLOC) throw std::bad_alloc();
    if (error != simdjson::SUCCESS || doc.get_object().get(o) != simdjson::SUCCESS) {
      return Got::kWrong;
    }
    OnDemandObject object(o);
    OnDemandObject::Value kind_value;
    std::string_view kind;
    if (!object.find("kind", kind_value) ||
        kind_value.get_string().get(kind) != simdjson::SUCCESS) {
      return Got::kWrong;
    }
    FieldReader<OnDemandObject> reader(object);
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
    // Nothing after the object (the DOM parser refuses a line with more).
    if (doc.current_location().error() != simdjson::OUT_OF_BOUNDS) return Got::kWrong;
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
