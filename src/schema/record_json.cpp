// Records as JSON lines: the field tables (record_fields.h) walked into a JSON value, then dumped.
#include "schema/json_visitor.h"
#include "vxperf/record_walk.h"
#include "vxperf/records.h"

namespace vxperf {
namespace {

// Names are valid UTF-8 by the time they reach a record (stage() interns them so); a record made
// by the program itself may still carry a bad byte, written as U+FFFD rather than thrown on.
template <class Record>
std::string json_line(const Record& record) {
  internal::JsonVisitor json;
  walk_record(record, json);
  return json.json().dump(-1, ' ', false, internal::Json::error_handler_t::replace);
}

}  // namespace

std::string to_json_line(const RequestRecord& record) { return json_line(record); }
std::string to_json_line(const TrainWindowRecord& record) { return json_line(record); }
std::string to_json_line(const TrainEndRecord& record) { return json_line(record); }

}  // namespace vxperf
