// A record as a tree of keys and values, in the order and with the presence rules of its JSON line:
// the one walk over a record's field table (src/schema/record_fields.h). The JSON line is made by
// walking it; a binding hands a record over as its own map (a Python dict) by walking it too.
//
//   struct Keys : vxperf::RecordVisitor { ... };  // builds whatever it likes from the calls
//   vxperf::walk_record(record, keys);
//
// The walk opens the record itself with begin_object("") and closes it with end_object(); values
// inside arrays come with an empty key.
//
// Thread safety: a walk touches nothing but the record and the visitor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vxperf/records.h"

namespace vxperf {

class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  virtual void begin_object(std::string_view key) = 0;
  virtual void end_object() = 0;
  virtual void begin_array(std::string_view key) = 0;
  virtual void end_array() = 0;
  virtual void null(std::string_view key) = 0;
  virtual void boolean(std::string_view key, bool value) = 0;
  virtual void integer(std::string_view key, std::int64_t value) = 0;
  virtual void unsigned_integer(std::string_view key, std::uint64_t value) = 0;
  virtual void number(std::string_view key, double value) = 0;
  virtual void string(std::string_view key, std::string_view value) = 0;
};

void walk_record(const RequestRecord& record, RecordVisitor& visitor);
void walk_record(const TrainWindowRecord& record, RecordVisitor& visitor);
void walk_record(const TrainEndRecord& record, RecordVisitor& visitor);

// A field of the training window record that the experiment trackers log, as its row in the field
// table says (vxperf/field_show.h): the object it sits in ("" at the top, "throughput"), its key
// there, and the name it is logged under ("perf/" + name).
struct TrackedField {
  std::string object, key, name;
};
// Every such field, in the table's order.
std::vector<TrackedField> window_tracker_fields();

}  // namespace vxperf
