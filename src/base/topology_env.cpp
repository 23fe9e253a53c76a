#include "base/topology_env.h"

#include <cstdint>

#include "base/env_parse.h"

namespace vxperf::internal {

namespace {

Topology ranks_from_env(const EnvLookup& env, std::vector<std::string>* problems);

// torchrun's restart count: the attempt this process is of its job.
std::optional<int> attempt_from_env(const EnvLookup& env, std::vector<std::string>* problems) {
  auto text = env("TORCHELASTIC_RESTART_COUNT");
  if (!text) return std::nullopt;
  auto count = parse_int(*text);
  if (!count || *count < 0 || *count > INT32_MAX) {
    if (problems != nullptr) {
      problems->push_back("vxperf: TORCHELASTIC_RESTART_COUNT=\"" + *text +
                          "\" is not a restart count; the records say no attempt");
    }
    return std::nullopt;
  }
  return static_cast<int>(*count);
}

}  // namespace

Topology topology_from_env(const EnvLookup& env, std::vector<std::string>* problems) {
  Topology t = ranks_from_env(env, problems);
  t.attempt = attempt_from_env(env, problems);
  return t;
}

namespace {

Topology ranks_from_env(const EnvLookup& env, std::vector<std::string>* problems) {
  // The launchers' conventions, most common first.
  static const char* const kPairs[][2] = {{"RANK", "WORLD_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"PMI_RANK", "PMI_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"}};
  Topology t;
  for (const auto& names : kPairs) {
    auto rank_text = env(names[0]);
    auto world_text = env(names[1]);
    if (!rank_text && !world_text) continue;
    auto rank = rank_text ? parse_int(*rank_text) : std::optional<std::int64_t>(0);
    auto world = world_text ? parse_int(*world_text) : std::optional<std::int64_t>(1);
    if (!rank || !world || *rank < 0 || *world < 1 || *rank > INT32_MAX || *world > INT32_MAX) {
      if (problems != nullptr) {
        problems->push_back(std::string("vxperf: ") + names[0] + "=\"" + rank_text.value_or("") +
                            "\" " + names[1] + "=\"" + world_text.value_or("") +
                            "\" is not a valid rank and world size; using rank 0 of 1");
      }
      return t;
    }
    // The reference takes a rank at or above the world size as it is (its records file, its
    // rank tag); so does vxperf, with a word, since a launcher rarely means it.
    if (*rank >= *world && problems != nullptr) {
      problems->push_back(std::string("vxperf: ") + names[0] + "=" + std::to_string(*rank) +
                          " is not below " + names[1] + "=" + std::to_string(*world) +
                          "; using it as given");
    }
    t.rank = static_cast<int>(*rank);
    t.world_size = static_cast<int>(*world);
    return t;
  }
  return t;
}

}  // namespace

}  // namespace vxperf::internal
