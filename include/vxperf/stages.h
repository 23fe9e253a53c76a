// The well-known stages: the one table of the stages vxperf names itself.
//
// A stage is any name a program times (vxperf::stage("name") interns it); these are the ones
// vxperf knows: the components of a video diffusion pipeline, as the front ends time them (a
// diffusers pipeline's components, the LibTorch adapter's roles). Every part of vxperf that names
// them or asks what a stage is reads this table: the stage registry (it interns the names in
// table order, so a row's index is its StageId and kTransformer ... in vxperf/inference.h are
// constants), the request's settling and `vxperf report` (which calls are priced, the denoising
// model's: is_priced_stage), the transformer calls of a log or trace, the LibTorch adapter
// (a Role is a row: its stage, its phase in training, whether its inputs give tokens), replay (a
// declared model's default stage) and the Python package (through the extension's stages() and
// is_priced_stage()).
//
// Thread safety: constant data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vxperf/phases.h"

namespace vxperf {

// A stage name interned once: StageScope takes the id, so the hot path never touches a string.
struct StageId {
  std::uint32_t value = 0;
};

enum class KnownStage : std::uint8_t {
  kTransformer,
  kTransformer2,
  kTextEncoder,
  kVaeEncode,
  kVaeDecode,
  kVision,
  kAux,
};

struct StageInfo {
  KnownStage stage;  // its key; its index in the table is its StageId
  const char* name;  // in records, lines, scripts and the Python package
  // Priced in FLOPs by the model declared for it, its calls the denoising model's: what
  // is_priced_stage says of its name (and of any name outside the table).
  bool priced;
  Phase phase;  // the training phase a model call of it belongs to
};

// In order: the registry interns the names in this order.
inline constexpr std::array<StageInfo, 7> kStages = {{
    {KnownStage::kTransformer, "transformer", true, Phase::kForward},
    {KnownStage::kTransformer2, "transformer_2", true, Phase::kForward},
    {KnownStage::kTextEncoder, "text_encoder", false, Phase::kTextEncoder},
    {KnownStage::kVaeEncode, "vae_enc", false, Phase::kVaeEncode},
    {KnownStage::kVaeDecode, "vae_dec", false, Phase::kVaeDecode},
    {KnownStage::kVision, "vision", false, Phase::kAux},
    {KnownStage::kAux, "aux", false, Phase::kAux},
}};

inline constexpr const StageInfo& stage_info(KnownStage stage) {
  return kStages[static_cast<std::size_t>(stage)];
}
// The id the registry gives the stage's name.
inline constexpr StageId stage_id(KnownStage stage) {
  return StageId{static_cast<std::uint32_t>(stage)};
}

// Whether calls of the stage `name` are priced in FLOPs, the denoising model's calls: a name
// starting with the transformer stage's ("transformer", "transformer_2", a program's own
// "transformer_3"). The same for every stage, of the table or not.
constexpr bool is_priced_stage(std::string_view name) {
  std::string_view prefix = stage_info(KnownStage::kTransformer).name;
  return name.substr(0, prefix.size()) == prefix;
}

constexpr bool stage_table_in_order() {
  for (std::size_t i = 0; i < kStages.size(); ++i) {
    if (static_cast<std::size_t>(kStages[i].stage) != i) return false;
  }
  return true;
}
static_assert(stage_table_in_order(), "kStages rows must follow the KnownStage enumerators");

constexpr bool stage_table_priced_by_the_rule() {
  for (const StageInfo& s : kStages) {
    if (s.priced != is_priced_stage(s.name)) return false;
    // What is priced is the denoising forward: its calls in training are the forward phase.
    if (s.priced && s.phase != Phase::kForward) return false;
    if (phase_info(s.phase).source != PhaseSource::kModelCall) return false;
  }
  return true;
}
static_assert(stage_table_priced_by_the_rule(),
              "a row is priced as is_priced_stage says, and its phase is a model call's");

}  // namespace vxperf
