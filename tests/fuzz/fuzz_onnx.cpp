// An ONNX model from memory (load_onnx_from_memory), and, when its input shape is fixed and its forward small, a
// forward on the naive and the OpenBLAS backend, which must agree: the operators' shape rules run on fuzzed
// attributes, not only the protobuf parsing.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "corgy/backends/blas/blas_backend.h"
#include "corgy/error.h"
#include "corgy/io/onnx.h"
#include "fuzz_target.h"

namespace {

// Small enough for a forward to take milliseconds, whatever the graph asks for.
constexpr double max_flops = 3e7;
constexpr std::size_t max_input_elements = std::size_t{1} << 16;
// Layers that move data without arithmetic (Resize, Expand, Pad) count no FLOPs: a fuzzed Resize to 65525 x 9 took
// 3.4 s of the naive backend under ASan. Every intermediate is bounded too.
constexpr std::size_t max_intermediate_elements = std::size_t{1} << 20;

bool has_large_intermediate(const corgy::Sequential& model, const corgy::Shape& input) {
  for (const corgy::Shape& shape : model.infer_shapes(input)) {
    if (shape.count() > max_intermediate_elements) return true;
  }
  return false;
}
// Fuzzed weights can make values so large that float32 sums of their squares (instance norm, softmax) overflow in
// the blas backend while the naive reference sums in double: a forward with such a value anywhere (or a NaN) is run
// but not compared.
constexpr float max_compared_magnitude = 1e15f;

bool is_unusual(double v) { return !(std::fabs(v) <= max_compared_magnitude); }  // NaN and infinities too

bool has_huge_value(const corgy::Variable& values) {
  return std::any_of(values.values().begin(), values.values().end(), [](float v) { return is_unusual(v); });
}

// The same for the model's own numbers: a NaN or huge weight folded into a fused layer (conv + batch norm + clip)
// never shows in a layer's output, and min/max of a NaN differ between the backends' instructions.
bool tensor_has_unusual_value(const onnx::TensorProto& tensor) {
  if (tensor.data_type() == onnx::TensorProto::DOUBLE) {
    return std::any_of(tensor.double_data().begin(), tensor.double_data().end(), is_unusual);
  }
  if (tensor.data_type() != onnx::TensorProto::FLOAT) return false;
  if (std::any_of(tensor.float_data().begin(), tensor.float_data().end(), is_unusual)) return true;
  const std::string& raw = tensor.raw_data();
  for (std::size_t offset = 0; offset + sizeof(float) <= raw.size(); offset += sizeof(float)) {
    float v = 0.0f;
    std::memcpy(&v, raw.data() + offset, sizeof v);
    if (is_unusual(v)) return true;
  }
  return false;
}

bool graph_has_unusual_value(const onnx::GraphProto& graph) {
  for (const onnx::TensorProto& tensor : graph.initializer()) {
    if (tensor_has_unusual_value(tensor)) return true;
  }
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if ((attribute.has_f() && is_unusual(attribute.f())) ||
          std::any_of(attribute.floats().begin(), attribute.floats().end(), is_unusual) ||
          (attribute.has_t() && tensor_has_unusual_value(attribute.t())) ||
          std::any_of(attribute.tensors().begin(), attribute.tensors().end(), tensor_has_unusual_value) ||
          (attribute.has_g() && graph_has_unusual_value(attribute.g()))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

CORGY_FUZZ_TARGET(onnx) {
  try {
    corgy::OnnxModel net =
        corgy::load_onnx_from_memory(corgy::fuzz::as_bytes(input), "input.onnx", {.limits = corgy::fuzz::limits});
    const corgy::Shape shape = net.input_shape(1);
    if (shape.count() > max_input_elements || net.model.flops(shape) > max_flops) return;
    if (has_large_intermediate(net.model, shape)) return;
    onnx::ModelProto proto;
    if (!proto.ParseFromArray(input.data(), static_cast<int>(input.size()))) std::abort();  // load_onnx parsed it
    const bool comparable = !graph_has_unusual_value(proto.graph());
    corgy::Variable image(shape);
    for (std::size_t i = 0; i < image.count(); ++i) image.data()[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
    // Every layer's output is kept, so the check below sees the intermediate values too.
    for (int layer = 0; layer < net.model.size(); ++layer) net.model.mark_output(layer);
    net.forward(image);
    float largest_intermediate = 0.0f;
    for (int layer = 0; layer < net.model.size(); ++layer) {
      const corgy::Variable& values = net.model.output(layer);
      if (!comparable || has_huge_value(values)) return;
      for (float v : values.values()) largest_intermediate = std::max(largest_intermediate, std::fabs(v));
    }
    std::vector<corgy::Variable> reference;
    for (std::size_t k = 0; k < net.outputs.size(); ++k) reference.push_back(net.output(k).clone());

    net.model.set_backend(std::make_unique<corgy::BlasBackend>(1));
    net.forward(image);
    for (std::size_t k = 0; k < net.outputs.size(); ++k) {
      corgy::fuzz::check_backends_agree(reference[k], net.output(k), largest_intermediate);
    }
  } catch (const corgy::Error&) {
  }
}
