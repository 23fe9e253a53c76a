// Records reader: the JSON lines the records file holds, back into the record structs through
// their field tables (src/schema/record_fields.h).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>

#include "schema/json_fields.h"
#include "schema/record_reader.h"
#include "vxperf/records_reader.h"

namespace vxperf::analysis {
namespace {

using internal::Json;

[[noreturn]] void reject(const std::string& message) { internal::JsonFields::fail(message); }

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r") == std::string::npos; }

}  // namespace

void read_records(std::istream& in, const std::string& name, RecordSet& into) {
  std::string text;
  int line = 0;
  try {
    internal::ThrowOnBadRead throw_on_bad_read(in);  // a line too long for memory is said as such
    // One line at a time: a file far larger than memory fails on its records, not its text.
    // `line` is the line being read or parsed, so that running out of memory names it.
    while (++line, std::getline(in, text)) {
      // getline stops at the end without a newline only on a last line cut short.
      bool complete = !in.eof();
      if (blank(text)) continue;
      Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (json.is_discarded()) {
        // Only a last line without its newline can be a writer that died mid-write.
        if (!complete) {
          into.warnings.push_back(name + ":" + std::to_string(line) +
                                  ": torn last line skipped (not complete JSON)");
          continue;
        }
        throw InputError(name, line, "not valid JSON");
      }
      if (!json.is_object()) throw InputError(name, line, "a record must be a JSON object");
      try {
        auto kind = json.find("kind");
        if (kind == json.end() || !kind->is_string()) {
          reject("a record needs a string \"kind\"");
        }
        const auto& k = kind->get_ref<const std::string&>();
        if (k == "request") {
          into.requests.push_back(internal::read_request(json));
        } else if (k == "train_window") {
          into.windows.push_back(internal::read_window(json));
        } else {
          reject("unknown record kind \"" + k + "\" (expected request or train_window)");
        }
      } catch (const internal::FieldError& e) {
        throw InputError(name, line, e.what());
      }
    }
  } catch (const std::bad_alloc&) {
    text = std::string();  // give back the line before saying so
    throw InputError(name, line,
                     "out of memory after " +
                         std::to_string(into.requests.size() + into.windows.size()) +
                         " records: too much to summarize at once (split the input)");
  }
}

RecordSet read_record_files(const std::vector<std::string>& paths) {
  RecordSet set;
  for (const auto& path : paths) {
    if (path == "-") {
      read_records(std::cin, "<stdin>", set);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      throw InputError(path, 0, "is a directory, not a records file");
    }
    std::ifstream file(path);
    if (!file) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    read_records(file, path, set);
    if (file.bad()) throw InputError(path, 0, "read error");
  }
  return set;
}

}  // namespace vxperf::analysis
