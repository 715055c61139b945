#include "serve/model_repository.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "corgy/error.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "corgy/io/onnx.h"

namespace corgy::serve {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int int_key(const json& value, const std::string& where, int low, int high) {
  if (!value.is_number_integer() || value.get<std::int64_t>() < low || value.get<std::int64_t>() > high) {
    throw Error(fmt::format("{}: must be an integer from {} to {}, got {}", where, low, high, value.dump()));
  }
  return static_cast<int>(value.get<std::int64_t>());
}

/// "backend": a name, or a list of names (one per instance).
std::vector<std::string> backend_key(const json& value, const std::string& where) {
  const auto is_name = [](const json& v) { return v.is_string() && !v.get<std::string>().empty(); };
  if (is_name(value)) return {value.get<std::string>()};
  if (!value.is_array() || value.empty() || value.size() > 64 || !std::all_of(value.begin(), value.end(), is_name)) {
    throw Error(
        fmt::format("{}: must be a backend name such as \"blas\", \"naive\" or \"vulkan:0\", or a list of "
                    "them (one per instance), got {}",
                    where, value.dump()));
  }
  return value.get<std::vector<std::string>>();
}

bool valid_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool is_version(const std::string& name) {
  return !name.empty() && name.size() <= 9 && name[0] != '0' &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int instance_threads(const ModelConfig& config) {
  if (config.threads > 0) return config.threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / config.instances);
}

class OnnxInstance final : public ModelInstance {
 public:
  explicit OnnxInstance(corgy::OnnxModel net) : net_(std::move(net)) {}
  corgy::OnnxModel& net() { return net_; }
  void keep_plans(int count) override { net_.model.set_kept_plans(count); }
  std::vector<const Variable*> forward(const Variable& input) override {
    net_.forward(input);
    std::vector<const Variable*> outputs;
    for (std::size_t k = 0; k < net_.outputs.size(); ++k) outputs.push_back(&net_.output(k));
    return outputs;
  }

 private:
  corgy::OnnxModel net_;
};

class DarknetInstance final : public ModelInstance {
 public:
  explicit DarknetInstance(corgy::DarknetModel net) : net_(std::move(net)) {}
  corgy::DarknetModel& net() { return net_; }
  void keep_plans(int count) override { net_.model.set_kept_plans(count); }
  std::vector<const Variable*> forward(const Variable& input) override { return net_.forward(input); }

 private:
  corgy::DarknetModel net_;
};

std::unique_ptr<OnnxInstance> load_onnx_instance(const RepositoryEntry& entry, int index) {
  auto instance = std::make_unique<OnnxInstance>(corgy::load_onnx((entry.directory / "model.onnx").string()));
  instance->net().model.set_backend(entry.config.backend_of(index), instance_threads(entry.config));
  return instance;
}

std::unique_ptr<DarknetInstance> load_darknet_instance(const RepositoryEntry& entry, int index) {
  const ModelConfig& config = entry.config;
  corgy::DarknetModel net =
      corgy::build_darknet_model(corgy::read_darknet_cfg((entry.directory / "model.cfg").string()),
                                 {.width = config.width, .height = config.height});
  const fs::path weights = entry.directory / "model.weights";
  if (fs::exists(weights)) {
    corgy::load_darknet_weights(net, weights.string());
  } else if (config.random_weights_seed) {
    corgy::load_darknet_weights(net, corgy::random_darknet_weights(net, *config.random_weights_seed), "random weights");
  } else {
    throw Error(
        fmt::format("{}: no model.weights (and no random_weights_seed in config.json)", entry.directory.string()));
  }
  auto instance = std::make_unique<DarknetInstance>(std::move(net));
  instance->net().model.set_backend(config.backend_of(index), instance_threads(config));
  return instance;
}

/// The output dims of `spec` (file dims, batch first) with free dimensions other than the batch filled in from the
/// shape corgy infers for batch 1, when it has one.
std::vector<std::int64_t> output_dims(std::vector<std::int64_t> dims, const std::optional<Shape>& inferred) {
  if (dims.size() != 2 && dims.size() != 4) dims.assign(4, -1);
  if (inferred) {
    const std::vector<std::int64_t> known = from_corgy_shape(*inferred, dims.size());
    for (std::size_t a = 1; a < dims.size(); ++a) dims[a] = known[a];
  }
  dims[0] = -1;
  return dims;
}

ModelSignature onnx_signature(const corgy::OnnxModel& net) {
  ModelSignature signature{.platform = "corgy_onnx", .input = {net.input.name, net.input.dims}, .outputs = {}};
  signature.input.dims[0] = -1;
  const bool fixed =
      std::all_of(net.input.dims.begin() + 1, net.input.dims.end(), [](std::int64_t d) { return d > 0; });
  std::vector<Shape> shapes;
  if (fixed) shapes = net.model.infer_shapes(net.input_shape(1));
  for (std::size_t k = 0; k < net.outputs.size(); ++k) {
    std::optional<Shape> inferred;
    if (fixed) inferred = shapes.at(static_cast<std::size_t>(net.output_layers.at(k)));
    signature.outputs.push_back({net.outputs[k].name, output_dims(net.outputs[k].dims, inferred)});
  }
  return signature;
}

ModelSignature darknet_signature(const corgy::DarknetModel& net) {
  ModelSignature signature{
      .platform = "corgy_darknet", .input = {"input", {-1, net.channels, net.height, net.width}}, .outputs = {}};
  const std::vector<Shape> shapes = net.model.infer_shapes(net.input_shape(1));
  std::vector<int> layers;
  for (const corgy::DarknetHead& head : net.heads) layers.push_back(head.layer);
  if (layers.empty()) layers.push_back(net.model.size() - 1);
  for (std::size_t k = 0; k < layers.size(); ++k) {
    signature.outputs.push_back(
        {fmt::format("output_{}", k), output_dims({-1, -1, -1, -1}, shapes.at(static_cast<std::size_t>(layers[k])))});
  }
  return signature;
}

}  // namespace

std::string ModelConfig::backend_names() const { return fmt::format("{}", fmt::join(backends, ",")); }

int ModelConfig::padded_batch_size(int items) const {
  const auto size = std::lower_bound(allowed_batch_sizes.begin(), allowed_batch_sizes.end(), items);
  return size == allowed_batch_sizes.end() ? items : *size;
}

ModelConfig read_model_config(const fs::path& path) {
  std::ifstream file(path);
  if (!file) throw Error(fmt::format("{}: cannot be read", path.string()));
  std::stringstream text;
  text << file.rdbuf();
  const json document = json::parse(text.str(), nullptr, false);
  if (document.is_discarded() || !document.is_object()) {
    throw Error(fmt::format("{}: is not a JSON object", path.string()));
  }
  ModelConfig config;
  bool instances_given = false;
  for (const auto& [key, value] : document.items()) {
    const std::string where = fmt::format("{}: \"{}\"", path.string(), key);
    if (key == "backend") {
      config.backends = backend_key(value, where);
    } else if (key == "threads") {
      config.threads = int_key(value, where, 0, 1024);
    } else if (key == "max_batch_size") {
      config.max_batch_size = int_key(value, where, 1, 4096);
    } else if (key == "max_queue_delay_us") {
      config.max_queue_delay_us = int_key(value, where, 0, 10'000'000);
    } else if (key == "instances") {
      config.instances = int_key(value, where, 1, 64);
      instances_given = true;
    } else if (key == "max_queue_size") {
      config.max_queue_size = int_key(value, where, 1, 1'000'000);
    } else if (key == "allowed_batch_sizes") {
      if (!value.is_array() || value.empty() || value.size() > 4096) {
        throw Error(fmt::format("{}: must be a list of batch sizes such as [1, 2, 4, 8], got {}", where, value.dump()));
      }
      config.allowed_batch_sizes.clear();
      for (const json& size : value) config.allowed_batch_sizes.push_back(int_key(size, where, 1, 4096));
    } else if (key == "width") {
      config.width = int_key(value, where, 0, 1 << 16);
    } else if (key == "height") {
      config.height = int_key(value, where, 0, 1 << 16);
    } else if (key == "random_weights_seed") {
      config.random_weights_seed =
          static_cast<std::uint32_t>(int_key(value, where, 0, std::numeric_limits<int>::max()));
    } else {
      throw Error(fmt::format("{}: unknown key (docs/serving.md lists them)", where));
    }
  }
  // A list of backends is the list of instances.
  const int listed = static_cast<int>(config.backends.size());
  if (listed > 1) {
    if (instances_given && config.instances != listed) {
      throw Error(fmt::format("{}: \"instances\" is {} but \"backend\" lists {} backends (one per instance)",
                              path.string(), config.instances, listed));
    }
    config.instances = listed;
  }
  std::vector<int>& sizes = config.allowed_batch_sizes;
  if (sizes.empty()) {
    for (int size = 1; size < config.max_batch_size; size *= 2) sizes.push_back(size);
    sizes.push_back(config.max_batch_size);
  } else if (!std::is_sorted(sizes.begin(), sizes.end(), std::less_equal<>()) ||
             sizes.back() != config.max_batch_size) {
    throw Error(fmt::format("{}: \"allowed_batch_sizes\" {} must increase and end with max_batch_size {}",
                            path.string(), json(sizes).dump(), config.max_batch_size));
  }
  if (config.max_queue_size < config.max_batch_size) {
    throw Error(fmt::format("{}: max_queue_size {} is below max_batch_size {}", path.string(), config.max_queue_size,
                            config.max_batch_size));
  }
  return config;
}

std::vector<RepositoryEntry> scan_repository(const fs::path& root) {
  std::error_code error;
  if (!fs::is_directory(root, error)) throw Error(fmt::format("model repository {}: not a folder", root.string()));
  std::vector<fs::path> models;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (e.is_directory() && !e.path().filename().string().starts_with(".")) models.push_back(e.path());
  }
  std::sort(models.begin(), models.end());
  std::vector<RepositoryEntry> entries;
  for (const fs::path& model : models) {
    const std::string name = model.filename().string();
    if (!valid_name(name)) {
      throw Error(fmt::format("{}: a model name takes letters, digits, '_', '.' and '-' only", model.string()));
    }
    ModelConfig config;
    if (fs::exists(model / "config.json")) config = read_model_config(model / "config.json");
    std::vector<int> versions;
    for (const fs::directory_entry& e : fs::directory_iterator(model)) {
      const std::string version = e.path().filename().string();
      if (e.is_directory() && is_version(version)) versions.push_back(std::stoi(version));
    }
    std::sort(versions.begin(), versions.end());
    if (versions.empty()) {
      throw Error(fmt::format("{}: no version folder (<model>/1/model.onnx or model.cfg)", model.string()));
    }
    for (int v : versions) {
      const fs::path directory = model / std::to_string(v);
      std::string format;
      if (fs::exists(directory / "model.onnx")) {
        format = "onnx";
      } else if (fs::exists(directory / "model.cfg")) {
        format = "darknet";
      } else {
        throw Error(fmt::format("{}: neither model.onnx nor model.cfg", directory.string()));
      }
      entries.push_back({name, std::to_string(v), directory, format, config});
    }
  }
  return entries;
}

LoadedModel load_model(const RepositoryEntry& entry) {
  LoadedModel loaded;
  const ModelConfig& config = entry.config;
  for (int i = 0; i < config.instances; ++i) {
    if (entry.format == "onnx") {
      std::unique_ptr<OnnxInstance> instance = load_onnx_instance(entry, i);
      if (i == 0) loaded.signature = onnx_signature(instance->net());
      loaded.instances.push_back(std::move(instance));
    } else {
      std::unique_ptr<DarknetInstance> instance = load_darknet_instance(entry, i);
      if (i == 0) loaded.signature = darknet_signature(instance->net());
      loaded.instances.push_back(std::move(instance));
    }
  }
  // Every instance keeps a plan per allowed batch size and, where the input's size is fixed, makes them now, so that
  // the first requests find them made.
  for (std::unique_ptr<ModelInstance>& instance : loaded.instances) {
    instance->keep_plans(static_cast<int>(config.allowed_batch_sizes.size()));
  }
  std::vector<std::int64_t> dims = loaded.signature.input.dims;
  if (std::all_of(dims.begin() + 1, dims.end(), [](std::int64_t d) { return d > 0; })) {
    for (int size : config.allowed_batch_sizes) {
      dims[0] = size;
      const Variable warm_up(to_corgy_shape(dims));
      for (std::unique_ptr<ModelInstance>& instance : loaded.instances) instance->forward(warm_up);
    }
  }
  return loaded;
}

Shape to_corgy_shape(const std::vector<std::int64_t>& d) {
  if (d.size() == 2) return {static_cast<int>(d[0]), static_cast<int>(d[1]), 1, 1};
  if (d.size() == 4) {
    return {static_cast<int>(d[0]), static_cast<int>(d[1]), static_cast<int>(d[2]), static_cast<int>(d[3])};
  }
  throw Error(fmt::format("a shape of rank {}: corgy takes rank 2 or 4", d.size()));
}

std::vector<std::int64_t> from_corgy_shape(const Shape& s, std::size_t rank) {
  if (rank == 2) return {s.n, static_cast<std::int64_t>(s.c) * s.h * s.w};
  return {s.n, s.c, s.h, s.w};
}

}  // namespace corgy::serve
