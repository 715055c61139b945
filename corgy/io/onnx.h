// ONNX models: a .onnx file (a CNN exported from PyTorch, Keras, a model zoo) turned into a corgy Sequential.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "corgy/io/load_limits.h"
#include "corgy/model/sequential.h"

namespace corgy {

struct OnnxOptions {
  /// What the file may make the loader allocate: the file itself and the total of its weights (max_model_bytes),
  /// each tensor (max_tensor_bytes). Checked against the sizes the file declares before anything is allocated.
  LoadLimits limits{};
};

/// A graph input or output: its name in the file and its ONNX dimensions (batch first; -1 where the file leaves a
/// dimension free, e.g. a batch named "N").
struct OnnxTensorInfo {
  std::string name;
  std::vector<std::int64_t> dims;
};

/// An ONNX model as corgy runs it:
///
///   corgy::OnnxModel net = corgy::load_onnx("resnet18.onnx");
///   net.model.set_backend("blas");
///   const corgy::Variable& logits = net.forward(images);   // images: (N, 3, 224, 224)
///
/// Operators become corgy layers (docs/onnx.md lists them): batch norm is folded into the convolution before it,
/// activations are fused into the layer before them, Identity and Dropout vanish, and a graph runs on every
/// backend like any Sequential. Any batch size works; other dimensions must be the file's where it fixes them.
struct OnnxModel {
  /// The file name (or the name given to load_onnx_from_memory), for messages.
  std::string source;
  /// The opset of the default ONNX domain the file imports.
  int opset = 0;
  std::string producer;
  /// The file's metadata_props (key -> value), as written: Ultralytics' exports keep their class names and strides
  /// there; tools/make_onnx_models.py marks its random weights with "weights".
  std::map<std::string, std::string> metadata;
  Sequential model;
  OnnxTensorInfo input;
  /// In graph order; `layers[k]` is the Sequential layer whose output is outputs[k] (kept with mark_output).
  std::vector<OnnxTensorInfo> outputs;
  std::vector<int> output_layers;

  /// The input shape for a batch of `batch` when the file fixes the other dimensions: (N, C, H, W), or (N, F, 1, 1)
  /// for a 2-D input. Throws corgy::Error when a dimension other than the batch is free.
  Shape input_shape(int batch = 1) const;
  /// Runs the model and returns its first output. Throws corgy::Error when `input` does not fit the graph's input.
  const Variable& forward(const Variable& input);
  /// Output `name` (or number k) of the last forward, in corgy's 4-D shape: an ONNX (N, F) is (N, F, 1, 1).
  const Variable& output(std::string_view name) const;
  const Variable& output(std::size_t k) const;
  /// Output k of the last forward's shape as the graph declares it: (N, F) for a 2-D output (a classifier's
  /// (1, 1000), which corgy holds as (1, 1000, 1, 1)); for rank 1 or 3 with the dimensions after the batch known,
  /// the declared dims with this forward's batch (a rank-3 (N, 4, A) is held as (N, 4, 1, A)); else (N, C, H, W).
  /// What corgy-run --output writes and the Python binding returns.
  std::vector<std::int64_t> output_dims(std::size_t k) const;
  /// Checks that `shape` fits the graph input (the same rank's corgy shape, fixed dimensions equal); throws
  /// corgy::Error naming both otherwise.
  void check_input(const Shape& shape) const;
};

/// Reads an ONNX model file (the file is memory-mapped and parsed once with the ONNX project's own protobuf schema;
/// each weight is then copied once, into its layer). Throws corgy::Error naming the file for a file that is not
/// ONNX or is truncated, a graph that fails the ONNX checker, has a cycle or reads a value nothing produces, a
/// tensor whose data does not match its declared shape or exceeds the limits, external data (models > 2 GB), and,
/// all at once, every operator of the graph that corgy cannot run (node, op type, opset).
OnnxModel load_onnx(const std::string& path, const OnnxOptions& options = {});

/// The same from bytes in memory; `name` stands for the file in messages. Never reads outside `bytes`: any input,
/// however malformed, gives a model or a corgy::Error.
OnnxModel load_onnx_from_memory(std::span<const std::byte> bytes, const std::string& name,
                                const OnnxOptions& options = {});

/// An operator load_onnx supports: its ONNX name, the opsets it is mapped for, and what it becomes with its limits.
struct OnnxOperatorSupport {
  std::string_view op_type;
  int first_opset;
  int last_opset;
  std::string_view becomes;
};

/// Every supported operator, alphabetically (corgy-run --list-ops prints them; docs/onnx.md lists them too).
std::span<const OnnxOperatorSupport> onnx_supported_operators();

/// The opsets of the default domain that load_onnx accepts.
inline constexpr int onnx_min_opset = 7;
inline constexpr int onnx_max_opset = 18;

}  // namespace corgy
