// A classifier's answer: its output as class probabilities and the most probable classes.
#pragma once

#include <span>
#include <vector>

namespace corgy {

/// One class of a classifier's output: its index and probability.
struct ClassScore {
  int index = 0;
  float probability = 0.0f;
};

/// A classifier's scores for one image as probabilities.
struct ClassProbabilities {
  std::vector<float> values;
  /// true: `values` is the softmax of the scores (logits); false: the scores already were a distribution (every
  /// value in [0, 1], summing to 1 within 1e-3, as after a Softmax layer) and are `values` unchanged.
  bool from_logits = false;
};

/// The scores (F values, F >= 1) as probabilities: themselves when they already are a distribution, else their
/// softmax. Throws corgy::Error for no scores or a non-finite one.
ClassProbabilities class_probabilities(std::span<const float> scores);

/// The `k` most probable classes, best first; ties go to the lower index. k larger than the class count gives all.
std::vector<ClassScore> top_classes(std::span<const float> probabilities, int k);

}  // namespace corgy
