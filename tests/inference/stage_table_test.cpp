#include <gtest/gtest.h>

#include <string>

#include "inference/request.h"
#include "vxperf/inference.h"
#include "vxperf/stages.h"

namespace vxperf {
namespace {

// The public constants are the table's rows.
static_assert(kTransformer.value == 0 && kTransformer2.value == 1 && kTextEncoder.value == 2 &&
              kVaeEncode.value == 3 && kVaeDecode.value == 4);

TEST(StageTable, TheConstantsNameTheirRows) {
  EXPECT_STREQ(stage_info(KnownStage::kTransformer).name, "transformer");
  EXPECT_EQ(stage_name(kTransformer), "transformer");
  EXPECT_EQ(stage_name(kTransformer2), "transformer_2");
  EXPECT_EQ(stage_name(kTextEncoder), "text_encoder");
  EXPECT_EQ(stage_name(kVaeEncode), "vae_enc");
  EXPECT_EQ(stage_name(kVaeDecode), "vae_dec");
}

TEST(StageTable, TheRegistryInternsEveryRowAtItsIndex) {
  for (std::size_t i = 0; i < kStages.size(); ++i) {
    const StageInfo& row = kStages[i];
    SCOPED_TRACE(row.name);
    EXPECT_EQ(stage_id(row.stage).value, i);
    EXPECT_EQ(stage(row.name).value, i);
    EXPECT_EQ(stage_name(StageId{static_cast<std::uint32_t>(i)}), row.name);
    EXPECT_EQ(internal::is_transformer_stage(static_cast<std::uint32_t>(i)), row.priced);
  }
}

TEST(StageTable, PricedStagesAreTheTransformersOfAnyName) {
  EXPECT_TRUE(is_priced_stage("transformer"));
  EXPECT_TRUE(is_priced_stage("transformer_2"));
  EXPECT_TRUE(is_priced_stage("transformer_lora"));
  EXPECT_FALSE(is_priced_stage("vae_dec"));
  EXPECT_FALSE(is_priced_stage("my_transformer"));
  EXPECT_FALSE(is_priced_stage("transforme"));
  EXPECT_FALSE(is_priced_stage(""));
  // A program's own stage follows the same rule through the registry.
  EXPECT_TRUE(internal::is_transformer_stage(stage("transformer_upsampler").value));
  EXPECT_FALSE(internal::is_transformer_stage(stage("upsampler").value));
}

TEST(StageTable, EachRowSaysTheTrainingPhaseOfItsCalls) {
  EXPECT_EQ(stage_info(KnownStage::kTransformer).phase, Phase::kForward);
  EXPECT_EQ(stage_info(KnownStage::kTransformer2).phase, Phase::kForward);
  EXPECT_EQ(stage_info(KnownStage::kTextEncoder).phase, Phase::kTextEncoder);
  EXPECT_EQ(stage_info(KnownStage::kVaeEncode).phase, Phase::kVaeEncode);
  EXPECT_EQ(stage_info(KnownStage::kVaeDecode).phase, Phase::kVaeDecode);
  EXPECT_EQ(stage_info(KnownStage::kVision).phase, Phase::kAux);
  EXPECT_EQ(stage_info(KnownStage::kAux).phase, Phase::kAux);
}

}  // namespace
}  // namespace vxperf
