// The denoising steps of requests, from the two places that hold every call's time: a level-2 log
// and an event script (vxperf/report.h's read_denoising_steps).
#include <simdjson.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string_view>

#include "base/env_parse.h"
#include "vxperf/report.h"
#include "vxperf/stages.h"

namespace vxperf::analysis {
namespace {

namespace dom = simdjson::dom;

// Lenient: what is absent or of another type reads as the fallback.
double number(dom::object o, const char* key, double fallback) {
  double d = 0;
  return o.at_key(key).get_double().get(d) == simdjson::SUCCESS ? d : fallback;
}
std::string_view text(dom::object o, const char* key) {
  std::string_view s;
  return o.at_key(key).get_string().get(s) == simdjson::SUCCESS ? s : std::string_view();
}

// An event script: a request's transformer calls, each the larger of its host and device times.
class ScriptSteps {
 public:
  void event(dom::object ev, std::vector<DenoisingRequest>& out) {
    std::string_view kind = text(ev, "ev");
    if (kind == "config") {
      rank_ = static_cast<int>(number(ev, "rank", 0));
      warmup_ = 0;
      dom::object env;
      if (ev.at_key("env").get(env) == simdjson::SUCCESS) {
        std::string_view w = text(env, "VIDEOX_PERF_WARMUP");
        if (!w.empty()) {
          warmup_ = std::max<std::int64_t>(internal::parse_int(std::string(w)).value_or(0), 0);
        }
      }
      requests_ = 0;
      depth_ = 0;
    } else if (kind == "request_begin") {
      if (depth_++ == 0) open_ = DenoisingRequest{rank_, requests_, requests_ < warmup_, {}};
    } else if (kind == "request_end") {
      if (depth_ > 0 && --depth_ == 0) {
        ++requests_;
        if (!open_.ms.empty()) out.push_back(std::move(open_));
      }
    } else if (kind == "stage" && depth_ > 0 && is_priced_stage(text(ev, "name"))) {
      double host_ms = (number(ev, "t1", 0) - number(ev, "t0", 0)) * 1000.0;
      double device_ms = number(ev, "device_ms", 0);
      open_.ms.push_back(std::max(host_ms, device_ms));
    }
  }

 private:
  int rank_ = 0;
  std::int64_t warmup_ = 0, requests_ = 0;
  int depth_ = 0;
  DenoisingRequest open_;
};

// A log: "<tag> req#N[ warmup] | ..." then "<tag> <stage> steps(ms): a, b" per stage, by name.
class LogSteps {
 public:
  void line(const std::string& text, std::vector<DenoisingRequest>& out) {
    if (auto at = text.find(" req#"); at != std::string::npos) {
      std::string tag = text.substr(0, at);
      std::size_t digits = at + 5, end = digits;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      bool warmup = text.compare(end, 9, " warmup |") == 0;
      if (end == digits || (!warmup && text.compare(end, 2, " |") != 0)) return;
      auto& open = open_[tag];
      if (!open.ms.empty()) out.push_back(std::move(open));
      open =
          DenoisingRequest{rank_of(tag), std::stoll(text.substr(digits, end - digits)), warmup, {}};
      return;
    }
    auto at = text.find(" steps(ms): ");
    if (at == std::string::npos) return;
    auto space = text.rfind(' ', at - 1);
    if (space == std::string::npos) return;
    std::string tag = text.substr(0, space);
    auto open = open_.find(tag);  // steps before any request line of the tag: not ours
    if (open == open_.end() ||
        !is_priced_stage(std::string_view(text).substr(space + 1, at - space - 1))) {
      return;
    }
    const char* p = text.c_str() + at + 12;
    while (*p) {
      char* end = nullptr;
      double ms = std::strtod(p, &end);
      if (end == p) break;
      open->second.ms.push_back(ms);
      p = end;
      while (*p == ',' || *p == ' ') ++p;
    }
  }
  void finish(std::vector<DenoisingRequest>& out) {
    for (auto& [tag, open] : open_) {
      if (!open.ms.empty()) out.push_back(std::move(open));
    }
  }

 private:
  // "[Perf][rank3]" names rank 3; a tag without one is rank 0's.
  static int rank_of(const std::string& tag) {
    auto at = tag.find("[rank");
    return at == std::string::npos ? 0 : std::atoi(tag.c_str() + at + 5);
  }
  std::map<std::string, DenoisingRequest> open_;  // by tag: one per rank in a merged log
};

}  // namespace

DenoisingSteps read_denoising_steps(const std::vector<std::string>& paths) {
  DenoisingSteps steps;
  for (const auto& path : paths) {
    std::ifstream file(path);
    if (!file) throw InputError(path, 0, std::string("cannot open: ") + std::strerror(errno));
    std::size_t before = steps.requests.size();
    ScriptSteps script;
    LogSteps log;
    dom::parser parser;
    std::string line;
    while (std::getline(file, line)) {
      dom::object ev;
      if (!line.empty() && line[0] == '{') {
        if (parser.parse(line).get(ev) == simdjson::SUCCESS) script.event(ev, steps.requests);
      } else {
        log.line(line, steps.requests);
      }
    }
    if (file.bad()) throw InputError(path, 0, "read error");
    log.finish(steps.requests);
    if (steps.requests.size() == before) {
      steps.warnings.push_back(path +
                               ": no transformer calls (it needs the VIDEOX_PERF=2 log or a "
                               "VIDEOX_PERF_TRACE event script of requests)");
    }
  }
  return steps;
}

}  // namespace vxperf::analysis
