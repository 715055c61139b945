// The model repository, laid out as Triton's: <repo>/<model>/<version>/model.onnx (or model.cfg + model.weights for
// darknet) and an optional <repo>/<model>/config.json. Scanning it, reading the configuration, and loading one
// version as corgy models (one per instance) with the signature the protocol reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "corgy/shape.h"
#include "corgy/variable.h"

namespace corgy::serve {

/// <repo>/<model>/config.json; every key is optional. docs/serving.md describes each one.
struct ModelConfig {
  /// The corgy backend names ("blas", "naive", "vulkan", "vulkan:0", "auto"...): one for every instance, or one per
  /// instance (config.json's "backend" as a list, such as ["vulkan:0", "vulkan:1"]: an instance on each GPU).
  std::vector<std::string> backends = {"blas"};
  int threads = 0;             ///< CPU threads of each instance; 0: the cores divided among the instances
  int max_batch_size = 8;      ///< the most items (the N of the inputs, summed) one forward runs
  int max_queue_delay_us = 0;  ///< how long a batch waits for more requests after its first one
  int instances = 1;           ///< models loaded, each with its own backend and worker thread
  int max_queue_size = 64;     ///< the most items waiting; more are refused with 503
  /// The batch sizes a forward runs at, increasing, the last max_batch_size: a batch of k items is padded with
  /// zeros up to the smallest size >= k. Each size is planned at load and its plan kept (a backend plans, times
  /// its algorithms and builds pipelines per input shape), so a batch never waits for a plan. Empty until
  /// read_model_config fills it: by default the powers of two below max_batch_size, then max_batch_size.
  std::vector<int> allowed_batch_sizes;
  int width = 0;   ///< darknet: network input width instead of the cfg's (0: the cfg's)
  int height = 0;  ///< darknet: network input height instead of the cfg's
  /// darknet without model.weights: deterministic random weights (as corgy-run --random-weights), for tests and
  /// load tests only.
  std::optional<std::uint32_t> random_weights_seed;

  /// The backend of instance `index` (0 <= index < instances).
  const std::string& backend_of(int index) const {
    return backends.size() == 1 ? backends.front() : backends.at(static_cast<std::size_t>(index));
  }
  /// "blas", or the list "vulkan:0,vulkan:1", for messages.
  std::string backend_names() const;
  /// The allowed batch size a batch of `items` (1 <= items <= max_batch_size) runs at.
  int padded_batch_size(int items) const;
};

/// Reads a config.json; throws corgy::Error naming the file and the key for invalid JSON, an unknown key, a value
/// of the wrong type or out of range.
ModelConfig read_model_config(const std::filesystem::path& path);

/// One version of one model found in the repository.
struct RepositoryEntry {
  std::string name;
  std::string version;  ///< a positive integer, as text
  std::filesystem::path directory;
  std::string format;  ///< "onnx" or "darknet"
  ModelConfig config;
};

/// Every model version of the repository, by model name then version number. Throws corgy::Error for a missing
/// folder, a model folder without any version, a version folder without a model file, a bad config.json, a model
/// name that is not [A-Za-z0-9_.-]+.
std::vector<RepositoryEntry> scan_repository(const std::filesystem::path& root);

/// A tensor of the model's signature: name and dimensions, the batch first as -1, -1 also where any size is taken.
struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> dims;
};

struct ModelSignature {
  std::string platform;  ///< "corgy_onnx" or "corgy_darknet"
  TensorSpec input;
  std::vector<TensorSpec> outputs;
};

/// One loaded corgy model: a Sequential serves one thread at a time, so each instance is used by one worker.
class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  /// Keeps the plans of `count` input shapes (Sequential::set_kept_plans): one per allowed batch size.
  virtual void keep_plans(int count) = 0;
  /// Runs `input` (corgy's 4-D layout) and returns every output in signature order, valid until the next forward.
  virtual std::vector<const Variable*> forward(const Variable& input) = 0;
};

struct LoadedModel {
  ModelSignature signature;
  std::vector<std::unique_ptr<ModelInstance>> instances;
};

/// Loads config.instances models of the entry, instance i on config.backend_of(i), then runs each once at every
/// allowed batch size (when the input's size is fixed) so that the first requests find them planned. Throws
/// corgy::Error naming the file.
LoadedModel load_model(const RepositoryEntry& entry);

/// A request shape (the signature's rank, batch first) in corgy's 4-D layout: (N, C, H, W) as is, (N, F) as
/// (N, F, 1, 1). The caller has checked it against the signature.
Shape to_corgy_shape(const std::vector<std::int64_t>& dims);
/// An output's shape in the signature's rank: (N, C, H, W) for rank 4, (N, C*H*W) for rank 2.
std::vector<std::int64_t> from_corgy_shape(const Shape& shape, std::size_t rank);

}  // namespace corgy::serve
