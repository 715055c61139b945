// corgy::class_probabilities and corgy::top_classes: a distribution passes unchanged, logits become their softmax,
// ties go to the lower index, and bad scores are errors.
#include "corgy/classify/top_classes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

namespace corgy::testing {
namespace {

TEST(TopClasses, ADistributionIsKept) {
  const std::vector<float> scores = {0.1f, 0.7f, 0.2f};
  const ClassProbabilities probabilities = class_probabilities(scores);
  EXPECT_FALSE(probabilities.from_logits);
  EXPECT_EQ(probabilities.values, scores);
}

TEST(TopClasses, LogitsBecomeTheirSoftmax) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 1000.0f};
  const ClassProbabilities probabilities = class_probabilities(logits);
  EXPECT_TRUE(probabilities.from_logits);
  EXPECT_FLOAT_EQ(probabilities.values[3], 1.0f);  // no overflow: shifted by the largest logit
  const std::vector<float> small = {1.0f, 3.0f, 2.0f};
  const ClassProbabilities three = class_probabilities(small);
  const double sum = std::exp(1.0) + std::exp(3.0) + std::exp(2.0);
  EXPECT_NEAR(three.values[1], std::exp(3.0) / sum, 1e-7);
  EXPECT_NEAR(three.values[0], std::exp(1.0) / sum, 1e-7);
  // Values in [0, 1] that do not sum to 1 are scores too (e.g. per-class sigmoids).
  EXPECT_TRUE(class_probabilities(std::vector<float>{0.9f, 0.8f}).from_logits);
}

TEST(TopClasses, BestFirstTiesToTheLowerIndex) {
  const std::vector<float> probabilities = {0.1f, 0.3f, 0.1f, 0.3f, 0.2f};
  const std::vector<ClassScore> top = top_classes(probabilities, 4);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);
  EXPECT_EQ(top[2].index, 4);
  EXPECT_EQ(top[3].index, 0);
  EXPECT_FLOAT_EQ(top[2].probability, 0.2f);
  EXPECT_EQ(top_classes(probabilities, 10).size(), 5u);
}

TEST(TopClasses, BadScoresAreErrors) {
  EXPECT_EQ(error_of([] { class_probabilities(std::vector<float>{}); }), "class_probabilities: no scores");
  const std::vector<float> nan = {0.5f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(error_of([&] { class_probabilities(nan); }), "class_probabilities: score 1 of 2 is nan");
}

}  // namespace
}  // namespace corgy::testing
