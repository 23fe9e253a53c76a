#include "schema/script_reader.h"

#include <new>

namespace vxperf::internal {

std::string ScriptEvent::kind() const {
  simdjson::dom::element ev;
  if (json_.at_key("ev").get(ev) != simdjson::SUCCESS || !ev.is_string()) {
    fail("an event needs a string field \"ev\"");
  }
  return std::string(std::string_view(ev));
}

int read_script(std::istream& script, const std::function<void(const ScriptEvent&)>& event,
                const std::function<void(int line)>& torn) {
  simdjson::dom::parser parser;
  std::string text;
  int line = 0;
  // A line too long for memory ends the reading with std::bad_alloc, never as a quiet end.
  ThrowOnBadRead throw_on_bad_read(script);
  while (std::getline(script, text)) {
    ++line;
    bool complete = !script.eof();  // a last line cut short has no newline
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    simdjson::dom::element json;
    auto error = parser.parse(text).get(json);
    if (error == simdjson::MEMALLOC) throw std::bad_alloc();
    if (error != simdjson::SUCCESS && !complete) {
      torn(line);
      continue;
    }
    if (error != simdjson::SUCCESS || !json.is_object())
      throw ScriptError(line, "not a JSON object");
    event(ScriptEvent(simdjson::dom::object(json), line));
  }
  return line;
}

}  // namespace vxperf::internal
