// The denoising steps of requests, from the two places that hold every call's time: a level-2 log
// and an event script (vxperf/report.h's read_denoising_steps).
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/env_parse.h"
#include "vxperf/report.h"

namespace vxperf::analysis {
namespace {

using Json = nlohmann::json;

bool is_transformer(std::string_view stage) { return stage.rfind("transformer", 0) == 0; }

double number(const Json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// An event script: a request's transformer calls, each the larger of its host and device times.
class ScriptSteps {
 public:
  void event(const Json& ev, std::vector<DenoisingRequest>& out) {
    std::string kind = ev.value("ev", std::string());
    if (kind == "config") {
      rank_ = static_cast<int>(number(ev, "rank", 0));
      warmup_ = 0;
      if (auto env = ev.find("env"); env != ev.end() && env->is_object()) {
        if (auto w = env->find("VIDEOX_PERF_WARMUP"); w != env->end() && w->is_string()) {
          warmup_ =
              std::max<std::int64_t>(internal::parse_int(w->get<std::string>()).value_or(0), 0);
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
    } else if (kind == "stage" && depth_ > 0 && is_transformer(ev.value("name", std::string()))) {
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
        !is_transformer(std::string_view(text).substr(space + 1, at - space - 1))) {
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
    std::string text;
    while (std::getline(file, text)) {
      if (!text.empty() && text[0] == '{') {
        Json ev = Json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (ev.is_object()) script.event(ev, steps.requests);
      } else {
        log.line(text, steps.requests);
      }
    }
    if (file.bad()) throw InputError(path, 0, "read error");
    log.finish(steps.requests);
    if (steps.requests.size() == before) {
      steps.warnings.push_back(path +
                               ": no denoising steps (it needs the VIDEOX_PERF=2 log or a "
                               "VIDEOX_PERF_TRACE event script of requests)");
    }
  }
  return steps;
}

}  // namespace vxperf::analysis
