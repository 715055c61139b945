// An ONNX model from memory (load_onnx_from_memory), and, when its input shape is fixed and its forward small, a
// forward on the naive and the OpenBLAS backend, which must agree: the operators' shape rules run on fuzzed
// attributes, not only the protobuf parsing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/error.h"
#include "corgy/io/onnx.h"
#include "fuzz_target.h"

namespace {

// Small enough for a forward to take milliseconds, whatever the graph asks for.
constexpr double max_flops = 3e7;
constexpr std::size_t max_input_elements = std::size_t{1} << 16;
// Fuzzed weights can make values so large that float32 sums of their squares (instance norm, softmax) overflow in
// the blas backend while the naive reference sums in double: a forward with such a value anywhere is not compared.
constexpr float max_compared_magnitude = 1e15f;

bool has_huge_value(const corgy::Variable& values) {
  for (float v : values.values()) {
    if (!(std::fabs(v) <= max_compared_magnitude)) return true;  // NaN and infinities too
  }
  return false;
}

// The backends may order their sums differently; they must agree to a small fraction of the output's magnitude.
void check_agreement(const corgy::Variable& reference, const corgy::Variable& actual) {
  if (reference.shape() != actual.shape()) std::abort();
  float magnitude = 0.0f;
  for (float v : reference.values()) {
    if (std::isfinite(v)) magnitude = std::max(magnitude, std::fabs(v));
  }
  for (std::size_t i = 0; i < reference.count(); ++i) {
    const float r = reference.data()[i];
    const float a = actual.data()[i];
    if (!std::isfinite(r) || !std::isfinite(a)) continue;  // overflowed in both or either: nothing to compare
    if (std::fabs(r - a) > 1e-3f * magnitude + 1e-5f) {
      std::fprintf(stderr, "naive and blas disagree at %zu of %s: %g vs %g (magnitude %g)\n", i,
                   reference.shape().str().c_str(), static_cast<double>(r), static_cast<double>(a),
                   static_cast<double>(magnitude));
      std::abort();
    }
  }
}

}  // namespace

CORGY_FUZZ_TARGET(onnx) {
  try {
    corgy::OnnxModel net =
        corgy::load_onnx_from_memory(corgy::fuzz::as_bytes(input), "input.onnx", {.limits = corgy::fuzz::limits});
    const corgy::Shape shape = net.input_shape(1);
    if (shape.count() > max_input_elements || net.model.flops(shape) > max_flops) return;
    corgy::Variable image(shape);
    for (std::size_t i = 0; i < image.count(); ++i) image.data()[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
    // Every layer's output is kept, so the check below sees the intermediate values too.
    for (int layer = 0; layer < net.model.size(); ++layer) net.model.mark_output(layer);
    net.forward(image);
    for (int layer = 0; layer < net.model.size(); ++layer) {
      if (has_huge_value(net.model.output(layer))) return;
    }
    std::vector<corgy::Variable> reference;
    for (std::size_t k = 0; k < net.outputs.size(); ++k) reference.push_back(net.output(k).clone());

    net.model.set_backend(std::make_unique<corgy::BlasBackend>(1));
    net.forward(image);
    for (std::size_t k = 0; k < net.outputs.size(); ++k) check_agreement(reference[k], net.output(k));
  } catch (const corgy::Error&) {
  }
}
