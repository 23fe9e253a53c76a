#include "explain/hta_rules.h"

#include <algorithm>
#include <array>

#include "base/enum_names.h"
#include "base/strings.h"

namespace vxperf::explain {
namespace {

using internal::starts_with;

// Python's `.*X` under re.match: X within the first line (`.` stops at a newline).
bool in_first_line(std::string_view s, std::string_view x) {
  return s.substr(0, s.find('\n')).find(x) != std::string_view::npos;
}

// HTA's names of its kernel types, by KernelType.
constexpr std::array<const char*, 4> kKernelTypeNames = {"COMPUTATION", "COMMUNICATION", "MEMORY",
                                                         "OTHER"};
static_assert(kKernelTypeNames.size() == internal::enumerators_through(KernelType::kOther));

}  // namespace

bool is_step_string(std::string_view s) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  return starts_with(s, kPrefix) && s.size() > kPrefix.size() && s[kPrefix.size()] >= '0' &&
         s[kPrefix.size()] <= '9';
}

const char* kernel_type_name(KernelType t) {
  return internal::enum_name(t, kKernelTypeNames, "OTHER");
}

KernelType kernel_type_of(std::string_view name) {
  if (starts_with(name, "nccl") || starts_with(name, "hip") || starts_with(name, "hccl") ||
      in_first_line(name, "ncclKernel")) {
    return KernelType::kCommunication;
  }
  if (starts_with(name, "Memcpy") || starts_with(name, "Memset") || starts_with(name, "dma")) {
    return KernelType::kMemory;
  }
  static constexpr std::string_view kExcludedPrefixes[] = {
      "nccl",   "Stream Wait Event", "runFunction",       "hip",  "job_exe",
      "packet", "pe_exe",            "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"};
  static constexpr std::string_view kExcludedWords[] = {"Memcpy", "Memset", "dma", "Sync"};
  for (std::string_view p : kExcludedPrefixes) {
    if (starts_with(name, p)) return KernelType::kOther;
  }
  for (std::string_view w : kExcludedWords) {
    if (in_first_line(name, w)) return KernelType::kOther;
  }
  if (starts_with(name, "cuda") && in_first_line(name.substr(4), "LaunchKernel")) {
    return KernelType::kOther;
  }
  return KernelType::kComputation;
}

std::vector<Interval> union_of(std::vector<Interval> rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  UnionBuilder u;
  u.reserve();
  for (const Interval& r : rows) u.add(r.begin, r.end);
  return u.take();
}

double length(const std::vector<Interval>& u) {
  double total = 0;
  for (const Interval& i : u) total += i.end - i.begin;
  return total;
}

std::vector<Edge> sorted_edges(const std::vector<std::vector<Interval>>& unions) {
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < unions.size(); ++i) {
    for (const Interval& r : unions[i]) {
      edges.push_back({r.begin, 1 << i});
      edges.push_back({r.end, -(1 << i)});
    }
  }
  std::stable_sort(edges.begin(), edges.end(),
                   [](const Edge& a, const Edge& b) { return a.time < b.time; });
  return edges;
}

double numpy_quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double n = static_cast<double>(values.size());
  // numpy's virtual index for method "linear" (alpha = beta = 1), then its lerp.
  double index = n * q + (1.0 + q * (1.0 - 1.0 - 1.0)) - 1.0;
  index = std::clamp(index, 0.0, n - 1);
  const double below = std::floor(index);
  const double t = index - below;
  const auto lo = static_cast<std::size_t>(below);
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  const double a = values[lo], b = values[hi];
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

bool is_memory_name(std::string_view name) {
  return starts_with(name, "Memcpy") || starts_with(name, "Memset") ||
         starts_with(name, "hipMemcpy") || starts_with(name, "hipMemset") ||
         starts_with(name, "dma");
}

std::string shorten_name(std::string_view name) {
  if (is_memory_name(name)) return std::string(name);
  if (name.find('<') == std::string_view::npos && name.find('(') == std::string_view::npos) {
    return std::string(name);
  }
  std::string kept;  // the characters not yet dropped, as a stack
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '-' && i + 1 < name.size() && name[i + 1] == '>') {  // "->" is taken out first
      ++i;
      continue;
    }
    if (c == '>' || c == ')') {
      const char opener = c == '>' ? '<' : '(';
      while (!kept.empty() && kept.back() != opener) kept.pop_back();
      if (!kept.empty()) kept.pop_back();
    } else {
      kept.push_back(c);
    }
  }
  const std::size_t space = kept.rfind(' ');
  return space == std::string::npos ? kept : kept.substr(space + 1);
}

}  // namespace vxperf::explain
