#include "schema/record_reader.h"

#include <exception>
#include <string>

#include "schema/json_dom.h"

namespace vxperf::internal {
namespace {

template <class Record>
Record read(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(json)).get(doc) != simdjson::SUCCESS) {
    throw FieldError("not valid JSON");
  }
  if (!doc.is_object()) throw FieldError("a record must be a JSON object");
  DomObject object{simdjson::dom::object(doc)};
  FieldReader<DomObject> reader(object);
  Record record;
  describe(reader, record);
  return record;
}

}  // namespace

int device_index_of(const std::string& device) {
  auto colon = device.rfind(':');
  if (colon == std::string::npos) return 0;
  // The form every record has, a few digits alone, read without stoi's copy (a records line
  // read it each time).
  const std::size_t digits = device.size() - colon - 1;
  if (digits > 0 && digits <= 9) {
    int index = 0;
    std::size_t i = colon + 1;
    for (; i < device.size() && device[i] >= '0' && device[i] <= '9'; ++i) {
      index = index * 10 + (device[i] - '0');
    }
    if (i == device.size()) return index;
  }
  try {
    return std::stoi(device.substr(colon + 1));
  } catch (const std::exception&) {
    return 0;
  }
}

RequestRecord read_request(std::string_view json) { return read<RequestRecord>(json); }
TrainWindowRecord read_window(std::string_view json) { return read<TrainWindowRecord>(json); }
TrainEndRecord read_end(std::string_view json) { return read<TrainEndRecord>(json); }

}  // namespace vxperf::internal
