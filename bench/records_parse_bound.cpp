// The parse-only bound beside `vxperf report` (bench/records_bench.py): each line of each records
// file through simdjson's On-Demand parser, every value converted (numbers to double, strings
// unescaped), nothing built. No reader of these files can be faster than this on this machine.
//
//   vxperf_records_parse_bound FILE...    prints "lines values"
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

namespace od = simdjson::ondemand;

std::size_t values = 0;

void visit(od::value v);

void visit_object(od::object o) {
  for (auto field : o) visit(field.value());
}

void visit(od::value v) {
  ++values;
  switch (v.type()) {
    case od::json_type::object:
      visit_object(v.get_object());
      break;
    case od::json_type::array:
      for (auto element : v.get_array()) visit(element.value());
      break;
    case od::json_type::number:
      (void)double(v.get_double());
      break;
    case od::json_type::string:
      (void)std::string_view(v.get_string());
      break;
    case od::json_type::boolean:
      (void)bool(v.get_bool());
      break;
    case od::json_type::null:
      (void)v.is_null();
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  od::parser parser;
  std::size_t lines = 0;
  std::string line;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "cannot open %s\n", argv[i]);
      return 1;
    }
    while (std::getline(in, line)) {
      std::size_t size = line.size();
      line.append(simdjson::SIMDJSON_PADDING, ' ');
      od::document doc = parser.iterate(line.data(), size, line.size());
      visit_object(doc.get_object());
      ++lines;
    }
  }
  std::printf("%zu %zu\n", lines, values);
  return 0;
}
