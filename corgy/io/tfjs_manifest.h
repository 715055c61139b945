// TensorFlow.js weights: a weights manifest (`*-weights_manifest.json`, or the "weightsManifest" of a model.json)
// and the binary shards it names, dequantized to float32 and converted to corgy's layouts.
// Format: https://www.tensorflow.org/js/guide/save_load (tfjs-core src/io/types.ts, WeightsManifestConfig).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "corgy/io/load_limits.h"
#include "corgy/layers/conv2d.h"

namespace corgy {

/// One tensor of a manifest as float32, in TensorFlow's layout: conv kernels HWIO (kh, kw, in, out), depthwise
/// kernels HWCM (kh, kw, channels, multiplier), biases (out).
struct TfjsTensor {
  std::string name;
  std::vector<int> shape;
  std::vector<float> values;
};

/// Every tensor of a TensorFlow.js weights manifest, read from its shards and dequantized.
///
/// The manifest is a JSON list of groups {"paths": [shard files], "weights": [entries]}; a group's tensors lie one
/// after the other in the concatenation of its shards. An entry is {"name", "shape", "dtype": "float32"} with an
/// optional "quantization": {"dtype": "uint8" or "uint16", "scale", "min"} (value = q * scale + min, the same
/// linear per-tensor range as MPSCNN's rangesForUInt8Kernel) or {"dtype": "float16"}. Other dtypes (int32, bool,
/// string) are refused: corgy's layers take float32.
class TfjsWeights {
 public:
  /// Reads the manifest at `manifest_path` and its shards (paths relative to the manifest's folder). Throws
  /// corgy::Error naming the file for: JSON that is not a manifest, a shard path that is absolute or leaves the
  /// manifest's folder (".."), a missing shard, shards shorter or longer than the tensors they should hold, an
  /// unknown dtype, a repeated tensor name; and, before reading any shard, a tensor (as float32) over
  /// `limits.max_tensor_bytes` or tensors (or a manifest text) over `limits.max_model_bytes` in all.
  static TfjsWeights load(const std::string& manifest_path, const LoadLimits& limits = {});

  /// The manifest's path, for messages.
  const std::string& source() const { return source_; }
  /// All tensors in manifest order.
  const std::vector<TfjsTensor>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const;
  /// The tensor named `name`; throws corgy::Error naming the manifest when there is none.
  const TfjsTensor& at(const std::string& name) const;
  /// The values of tensor `name` after checking that its shape is `shape`; throws corgy::Error with both shapes.
  std::span<const float> values(const std::string& name, const std::vector<int>& shape) const;

 private:
  std::string source_;
  std::vector<TfjsTensor> tensors_;
};

/// TensorFlow's conv kernel HWIO (kh, kw, in, out) -> corgy's OIHW (out, in, kh, kw).
std::vector<float> hwio_to_oihw(std::span<const float> hwio, int kh, int kw, int in, int out);

/// TensorFlow's depthwise kernel HWCM (kh, kw, channels, multiplier) -> corgy's (channels * multiplier, 1, kh, kw)
/// for a Conv2d with groups = channels. Output channel c * multiplier + m, as TensorFlow numbers them.
std::vector<float> depthwise_hwcm_to_oihw(std::span<const float> hwcm, int kh, int kw, int channels, int multiplier);

/// Sets `conv`'s weights from the TensorFlow kernel `kernel` (HWIO for groups = 1, HWCM for a depthwise conv with
/// groups = in_channels) and, unless `bias` is empty, its bias from tensor `bias` (out_channels). Throws
/// corgy::Error naming the manifest, the tensor and the layer when a tensor is missing or its shape does not fit.
void load_tfjs_conv(Conv2d& conv, const TfjsWeights& weights, const std::string& kernel, const std::string& bias);

}  // namespace corgy
