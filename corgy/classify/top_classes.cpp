#include "corgy/classify/top_classes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "corgy/error.h"

namespace corgy {

namespace {

bool is_distribution(std::span<const float> scores) {
  double sum = 0.0;
  for (float value : scores) {
    if (value < 0.0f || value > 1.0f) return false;
    sum += value;
  }
  return std::abs(sum - 1.0) <= 1e-3;
}

}  // namespace

ClassProbabilities class_probabilities(std::span<const float> scores) {
  if (scores.empty()) throw Error("class_probabilities: no scores");
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!std::isfinite(scores[i])) {
      throw Error(fmt::format("class_probabilities: score {} of {} is {}", i, scores.size(), scores[i]));
    }
  }
  ClassProbabilities out{.values = std::vector<float>(scores.begin(), scores.end()), .from_logits = false};
  if (is_distribution(scores)) return out;
  // Shifted by the largest logit so that exp never overflows; summed in double.
  const float largest = *std::max_element(scores.begin(), scores.end());
  double sum = 0.0;
  for (float& value : out.values) {
    value = std::exp(value - largest);
    sum += value;
  }
  for (float& value : out.values) value = static_cast<float>(value / sum);
  out.from_logits = true;
  return out;
}

std::vector<ClassScore> top_classes(std::span<const float> probabilities, int k) {
  std::vector<int> order(probabilities.size());
  std::iota(order.begin(), order.end(), 0);
  const auto count = static_cast<std::ptrdiff_t>(
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), 0, probabilities.size()));
  std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int a, int b) {
    const float pa = probabilities[static_cast<std::size_t>(a)];
    const float pb = probabilities[static_cast<std::size_t>(b)];
    return pa > pb || (pa == pb && a < b);
  });
  std::vector<ClassScore> top;
  for (std::ptrdiff_t i = 0; i < count; ++i) {
    const int index = order[static_cast<std::size_t>(i)];
    top.push_back({index, probabilities[static_cast<std::size_t>(index)]});
  }
  return top;
}

}  // namespace corgy
