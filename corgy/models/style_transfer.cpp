#include "corgy/models/style_transfer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"
#include "corgy/io/npy.h"
#include "corgy/layers/add.h"
#include "corgy/layers/conditional_instance_norm.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/pad.h"
#include "corgy/layers/upsample.h"

namespace corgy {

namespace {

using Json = nlohmann::json;

constexpr const char* manifest_format = "corgy-style-transfer";
constexpr int manifest_version = 1;
// Bounds on what a manifest may ask for, so that a corrupt or hostile file cannot make the builder allocate
// without end: the largest network they allow (width 1024, 64 residual blocks, 1024 styles) holds about 4 G floats
// of convolution weights, and each .npy is checked against its expected shape before it is read into a layer.
constexpr int max_width = 1024;
constexpr int max_residual_blocks = 64;
constexpr int max_styles = 1024;
constexpr std::size_t max_manifest_bytes = std::size_t{16} << 20;

void check_options(const StyleTransferOptions& o) {
  if (o.styles < 1 || o.width < 1 || o.residual_blocks < 1) {
    throw Error(fmt::format("style transfer: styles {}, width {} and residual_blocks {} must all be >= 1", o.styles,
                            o.width, o.residual_blocks));
  }
  if (o.padding != PadMode::reflect && o.padding != PadMode::constant) {
    throw Error(
        fmt::format("style transfer: padding must be reflect or zeros (constant), got {}", pad_mode_name(o.padding)));
  }
}

// The Sequential's layers and the named blocks of one network.
struct StyleNetworkBuilder {
  const StyleTransferOptions& options;
  Sequential& network;
  std::vector<StyleTransferModel::Block>& blocks;

  // conv (no bias, padding kernel / 2) -> conditional instance norm with `activation`; returns the norm's index.
  int conv_norm(const std::string& name, int in, int out, int kernel, int stride, Activation activation,
                std::vector<int> inputs = {}) {
    const int conv = network.add(Conv2d({.in_channels = in,
                                         .out_channels = out,
                                         .kernel = kernel,
                                         .stride = stride,
                                         .padding = kernel / 2,
                                         .padding_mode = options.padding,
                                         .bias = false}),
                                 std::move(inputs));
    const int norm = network.add(ConditionalInstanceNorm(out, options.styles, options.epsilon, activation));
    blocks.push_back({name, conv, norm});
    return norm;
  }

  void build() {
    const int w = options.width;
    const Activation relu = Activation::relu();
    conv_norm("conv1", 3, w, 9, 1, relu);
    conv_norm("conv2", w, 2 * w, 3, 2, relu);
    int last = conv_norm("conv3", 2 * w, 4 * w, 3, 2, relu);
    for (int r = 1; r <= options.residual_blocks; ++r) {
      const std::string prefix = fmt::format("res{}.", r);
      conv_norm(prefix + "conv1", 4 * w, 4 * w, 3, 1, relu, {last});
      const int second = conv_norm(prefix + "conv2", 4 * w, 4 * w, 3, 1, {});
      last = network.add(Add(), {last, second});
    }
    network.add(Upsample(2));
    conv_norm("up1", 4 * w, 2 * w, 3, 1, relu);
    network.add(Upsample(2));
    conv_norm("up2", 2 * w, w, 3, 1, relu);
    conv_norm("out", w, 3, 9, 1, Activation::sigmoid());
  }
};

// --- the weights directory -----------------------------------------------------------------------------------

struct ManifestTensor {
  std::string file;
  std::vector<int> shape;
};

struct Manifest {
  StyleTransferOptions options;
  std::vector<std::string> styles;
  std::map<std::string, ManifestTensor> tensors;
};

template <class T>
T require(const Json& object, const char* key, const std::string& source) {
  if (!object.contains(key)) throw Error(fmt::format("{}: has no \"{}\"", source, key));
  try {
    return object.at(key).get<T>();
  } catch (const Json::exception& e) {
    throw Error(fmt::format("{}: \"{}\" is malformed: {}", source, key, e.what()));
  }
}

int require_int(const Json& object, const char* key, int low, int high, const std::string& source) {
  const auto value = require<long long>(object, key, source);
  if (!object.at(key).is_number_integer() || value < low || value > high) {
    throw Error(fmt::format("{}: \"{}\" must be an integer from {} to {}, got {}", source, key, low, high,
                            object.at(key).dump()));
  }
  return static_cast<int>(value);
}

// A plain file name inside the directory: no folders, no "..", nothing absolute.
void check_file_name(const std::string& file, const std::string& tensor, const std::string& source) {
  if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
      file.find('\\') != std::string::npos || file.find('\0') != std::string::npos) {
    throw Error(fmt::format("{}: tensor '{}' names file '{}', which is not a plain file name in the weights folder",
                            source, tensor, file));
  }
}

Manifest read_manifest(const std::string& path) {
  std::string text;
  {
    const MappedFile file(path, "style transfer manifest");
    if (file.size() > max_manifest_bytes) {
      throw Error(
          fmt::format("{}: {} bytes, more than a manifest may hold ({})", path, file.size(), max_manifest_bytes));
    }
    text.assign(reinterpret_cast<const char*>(file.bytes().data()), file.size());
  }
  Json json;
  try {
    json = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  if (!json.is_object()) throw Error(fmt::format("{}: expects a JSON object", path));
  const auto format = require<std::string>(json, "format", path);
  const int version = require_int(json, "version", 0, 1 << 30, path);
  if (format != manifest_format || version != manifest_version) {
    throw Error(fmt::format("{}: expects format \"{}\" version {}, got \"{}\" version {}", path, manifest_format,
                            manifest_version, format, version));
  }
  Manifest manifest;
  StyleTransferOptions& o = manifest.options;
  o.width = require_int(json, "width", 1, max_width, path);
  o.residual_blocks = require_int(json, "residual_blocks", 1, max_residual_blocks, path);
  const auto padding = require<std::string>(json, "padding", path);
  if (padding == "reflect") {
    o.padding = PadMode::reflect;
  } else if (padding == "zeros") {
    o.padding = PadMode::constant;
  } else {
    throw Error(fmt::format("{}: \"padding\" must be \"reflect\" or \"zeros\", got \"{}\"", path, padding));
  }
  const auto epsilon = require<double>(json, "epsilon", path);
  if (!(epsilon >= 0.0 && epsilon < 1.0)) {
    throw Error(fmt::format("{}: \"epsilon\" must be in [0, 1), got {}", path, epsilon));
  }
  o.epsilon = static_cast<float>(epsilon);
  manifest.styles = require<std::vector<std::string>>(json, "styles", path);
  if (manifest.styles.empty() || manifest.styles.size() > static_cast<std::size_t>(max_styles)) {
    throw Error(
        fmt::format("{}: \"styles\" must name 1 to {} styles, got {}", path, max_styles, manifest.styles.size()));
  }
  o.styles = static_cast<int>(manifest.styles.size());
  const auto tensors = require<std::vector<Json>>(json, "tensors", path);
  for (const Json& entry : tensors) {
    if (!entry.is_object()) throw Error(fmt::format("{}: each entry of \"tensors\" must be an object", path));
    const auto name = require<std::string>(entry, "name", path);
    const std::string where = fmt::format("{}: tensor '{}'", path, name);
    ManifestTensor tensor{require<std::string>(entry, "file", where), require<std::vector<int>>(entry, "shape", where)};
    check_file_name(tensor.file, name, path);
    if (!manifest.tensors.emplace(name, std::move(tensor)).second) {
      throw Error(fmt::format("{}: tensor '{}' appears twice", path, name));
    }
  }
  return manifest;
}

std::string npy_shape_text(const std::vector<int>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Reads tensor `name` of the manifest, checking the manifest's shape and the file's against `expected`.
Variable read_tensor(const Manifest& manifest, const std::filesystem::path& directory, const std::string& source,
                     const std::string& name, const std::vector<int>& expected) {
  const auto it = manifest.tensors.find(name);
  if (it == manifest.tensors.end()) {
    throw Error(fmt::format("{}: tensor '{}' is missing (shape {} expected)", source, name, npy_shape_text(expected)));
  }
  if (it->second.shape != expected) {
    throw Error(fmt::format("{}: tensor '{}' has shape {}, the network needs {}", source, name,
                            npy_shape_text(it->second.shape), npy_shape_text(expected)));
  }
  const std::string file = (directory / it->second.file).string();
  Variable tensor = load_npy(file);
  Shape want{1, 1, 1, 1};
  if (expected.size() == 4) want = {expected[0], expected[1], expected[2], expected[3]};
  if (expected.size() == 2) want = {1, 1, expected[0], expected[1]};
  if (tensor.shape() != want) {
    throw Error(fmt::format("{}: tensor '{}' has shape {} in its file, the network needs {}", file, name,
                            tensor.shape().str(), npy_shape_text(expected)));
  }
  return tensor;
}

}  // namespace

StyleTransferModel::StyleTransferModel(const StyleTransferOptions& options) : options_(options) {
  check_options(options);
  StyleNetworkBuilder{options_, network_, blocks_}.build();
  for (int s = 0; s < options.styles; ++s) style_names_.push_back(fmt::format("style {}", s));
  style_.assign(options.styles, 0.0f);
  style_[0] = 1.0f;
}

void StyleTransferModel::set_style_names(std::vector<std::string> names) {
  if (names.size() != static_cast<std::size_t>(options_.styles)) {
    throw Error(fmt::format("style transfer: {} style names for {} styles", names.size(), options_.styles));
  }
  style_names_ = std::move(names);
}

void StyleTransferModel::set_style(std::span<const float> weights) {
  if (weights.size() != static_cast<std::size_t>(options_.styles)) {
    throw Error(fmt::format("style transfer: the network has {} styles, got {} style weights", options_.styles,
                            weights.size()));
  }
  for (const Block& block : blocks_) network_.layer_as<ConditionalInstanceNorm>(block.norm).set_style_weights(weights);
  style_.assign(weights.begin(), weights.end());
}

StyleTransferModel StyleTransferModel::load(const std::string& directory, std::optional<PadMode> padding) {
  const std::filesystem::path folder(directory);
  const std::string source = (folder / "manifest.json").string();
  Manifest manifest = read_manifest(source);
  if (padding) manifest.options.padding = *padding;
  StyleTransferModel model(manifest.options);
  model.set_style_names(manifest.styles);
  std::size_t used = 0;
  for (const Block& block : model.blocks_) {
    auto& conv = model.network_.layer_as<Conv2d>(block.conv);
    const Shape w = conv.weights().shape();
    const Variable weights = read_tensor(manifest, folder, source, block.name + ".conv.weight", {w.n, w.c, w.h, w.w});
    conv.set_weights({weights.data(), weights.count()});
    auto& norm = model.network_.layer_as<ConditionalInstanceNorm>(block.norm);
    const std::vector<int> norm_shape = {norm.styles(), norm.channels()};
    const Variable gamma = read_tensor(manifest, folder, source, block.name + ".norm.gamma", norm_shape);
    const Variable beta = read_tensor(manifest, folder, source, block.name + ".norm.beta", norm_shape);
    norm.set_style_parameters({gamma.data(), gamma.count()}, {beta.data(), beta.count()});
    used += 3;
  }
  if (used != manifest.tensors.size()) {
    for (const auto& entry : manifest.tensors) {
      // Not a structured binding: clang before 16 cannot capture one in a lambda (the fuzz build uses clang).
      const std::string& name = entry.first;
      const bool known = std::any_of(model.blocks_.begin(), model.blocks_.end(), [&](const Block& block) {
        return name == block.name + ".conv.weight" || name == block.name + ".norm.gamma" ||
               name == block.name + ".norm.beta";
      });
      if (!known) {
        throw Error(fmt::format("{}: tensor '{}' is not part of the network (width {}, {} residual blocks)", source,
                                name, manifest.options.width, manifest.options.residual_blocks));
      }
    }
  }
  return model;
}

std::vector<float> parse_style_weights(const std::string& text, int styles) {
  std::vector<float> weights;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    float value = 0.0f;
    const auto [last, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || last != item.data() + item.size() || !std::isfinite(value)) {
      throw Error(fmt::format("style weights '{}': '{}' is not a number", text, item));
    }
    weights.push_back(value);
    if (end == text.size()) break;
    begin = end + 1;
  }
  if (weights.size() != static_cast<std::size_t>(styles)) {
    throw Error(
        fmt::format("style weights '{}': the network has {} styles, got {} weights", text, styles, weights.size()));
  }
  return weights;
}

}  // namespace corgy
