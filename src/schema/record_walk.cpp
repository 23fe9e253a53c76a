#include "vxperf/record_walk.h"

#include "schema/record_fields.h"
#include "schema/record_writer.h"
#include "schema/show_walk.h"

namespace vxperf {

void walk_record(const RequestRecord& record, RecordVisitor& visitor) {
  internal::Writer writer(visitor);
  visitor.begin_object({});
  describe(writer, record);
  visitor.end_object();
}

void walk_record(const TrainWindowRecord& record, RecordVisitor& visitor) {
  internal::Writer writer(visitor);
  visitor.begin_object({});
  describe(writer, record);
  visitor.end_object();
}

void walk_record(const TrainEndRecord& record, RecordVisitor& visitor) {
  internal::Writer writer(visitor);
  visitor.begin_object({});
  describe(writer, record);
  visitor.end_object();
}

std::vector<TrackedField> window_tracker_fields() {
  std::vector<TrackedField> fields;
  internal::walk_shown(TrainWindowRecord{},
                       [&](const char* object, const Show& show, const internal::ShownValue&) {
                         if (show.tracker) fields.push_back({object, show.key, show.tracker});
                       });
  return fields;
}

}  // namespace vxperf
