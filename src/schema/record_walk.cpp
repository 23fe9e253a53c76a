#include "vxperf/record_walk.h"

#include "schema/record_fields.h"
#include "schema/record_writer.h"

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

}  // namespace vxperf
