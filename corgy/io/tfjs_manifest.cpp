#include "corgy/io/tfjs_manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"

namespace corgy {

namespace {

// tfjs writes its typed arrays as they lie in memory on the little-endian machines it runs on.
static_assert(std::endian::native == std::endian::little, "TensorFlow.js shards are little-endian");

using Json = nlohmann::json;

// How one manifest entry is stored in its shard.
enum class StoredAs { float32, uint8, uint16, float16 };

struct Entry {
  std::string name;
  std::vector<int> shape;
  StoredAs stored = StoredAs::float32;
  double scale = 1.0;
  double min = 0.0;

  // Only called once ModelBytes has bounded the count, so the product cannot overflow.
  std::size_t count() const {
    std::size_t n = 1;
    for (int d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
  std::size_t bytes() const {
    const std::size_t width = stored == StoredAs::float32 ? 4 : stored == StoredAs::uint8 ? 1 : 2;
    return count() * width;
  }
};

std::string shape_text(const std::vector<int>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// The quantization of an entry whose "dtype" is float32: none, uint8/uint16 with scale and min, or float16.
void read_quantization(const Json& q, Entry& entry, const std::string& where) {
  const std::string dtype = q.at("dtype").get<std::string>();
  if (dtype == "float16") {
    entry.stored = StoredAs::float16;
    return;
  }
  if (dtype != "uint8" && dtype != "uint16") {
    throw Error(
        fmt::format("{}: unknown quantization dtype '{}' (corgy reads uint8, uint16 and float16)", where, dtype));
  }
  if (!q.contains("scale") || !q.contains("min")) {
    throw Error(fmt::format("{}: {} quantization needs 'scale' and 'min'", where, dtype));
  }
  entry.stored = dtype == "uint8" ? StoredAs::uint8 : StoredAs::uint16;
  entry.scale = q.at("scale").get<double>();
  entry.min = q.at("min").get<double>();
}

// Each dimension must be a whole number in [0, INT_MAX]: nlohmann's get<int> of 1e30 or 5000000000 would convert
// out of range (a float 1e30 is undefined behaviour).
std::vector<int> read_shape(const Json& json, const std::string& where) {
  if (!json.is_array())
    throw Error(fmt::format("{}: 'shape' must be an array of dimensions, not {}", where, json.dump()));
  std::vector<int> shape;
  for (const Json& dim : json) {
    if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0 || dim.get<std::int64_t>() > INT_MAX) {
      throw Error(fmt::format("{}: shape {} has a dimension that is not a whole number from 0 to {}", where,
                              json.dump(), INT_MAX));
    }
    shape.push_back(static_cast<int>(dim.get<std::int64_t>()));
  }
  return shape;
}

Entry read_entry(const Json& json, const std::string& source, ModelBytes& model_bytes) {
  Entry entry;
  entry.name = json.at("name").get<std::string>();
  const std::string where = fmt::format("{}: tensor '{}'", source, entry.name);
  entry.shape = read_shape(json.at("shape"), where);
  const std::vector<std::int64_t> dims(entry.shape.begin(), entry.shape.end());
  model_bytes.add(fmt::format("tensor '{}' {}", entry.name, shape_text(entry.shape)), float32_bytes(dims));
  const std::string dtype = json.at("dtype").get<std::string>();
  if (dtype != "float32") {
    throw Error(fmt::format("{}: unsupported dtype '{}' (corgy reads float32 tensors, stored as float32 or quantized)",
                            where, dtype));
  }
  if (json.contains("quantization")) read_quantization(json.at("quantization"), entry, where);
  return entry;
}

// IEEE 754 half -> float, subnormals, infinities and NaN included.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  const std::uint32_t bits = exponent == 0x1f
                                 ? (sign | 0x7f800000u | (mantissa << 13))
                                 : (sign | (static_cast<std::uint32_t>(exponent + 112) << 23) | (mantissa << 13));
  return std::bit_cast<float>(bits);
}

// Decodes `entry` from its bytes. Dequantization in double, then rounded to float, as tfjs computes it
// (io_utils.ts: decodeWeights).
std::vector<float> decode(const Entry& entry, const std::byte* bytes) {
  std::vector<float> values(entry.count());
  for (std::size_t i = 0; i < values.size(); ++i) {
    switch (entry.stored) {
      case StoredAs::float32: std::memcpy(&values[i], bytes + 4 * i, 4); break;
      case StoredAs::uint8:
        values[i] =
            static_cast<float>(static_cast<double>(std::to_integer<std::uint8_t>(bytes[i])) * entry.scale + entry.min);
        break;
      case StoredAs::uint16: {
        std::uint16_t q = 0;
        std::memcpy(&q, bytes + 2 * i, 2);
        values[i] = static_cast<float>(static_cast<double>(q) * entry.scale + entry.min);
        break;
      }
      case StoredAs::float16: {
        std::uint16_t h = 0;
        std::memcpy(&h, bytes + 2 * i, 2);
        values[i] = half_to_float(h);
        break;
      }
    }
  }
  return values;
}

// A shard path as the manifest gives it, checked to stay inside the manifest's folder: a downloaded manifest must
// not make corgy read /etc/passwd or ../../secret.bin.
std::filesystem::path shard_path(const std::string& path, const std::filesystem::path& folder,
                                 const std::string& source) {
  const std::filesystem::path relative(path);
  const bool escapes = relative.empty() || relative.is_absolute() || relative.has_root_name() ||
                       std::any_of(relative.begin(), relative.end(), [](const auto& part) { return part == ".."; });
  if (escapes) {
    throw Error(fmt::format("{}: shard path '{}' must be a relative path inside the manifest's folder", source, path));
  }
  return folder / relative;
}

// One group: the shards, which hold its tensors one after the other, and the tensors' entries.
struct Group {
  std::vector<std::string> paths;
  std::vector<Entry> entries;
  std::size_t bytes = 0;
};

Group read_group_entries(const Json& group, const std::string& source, ModelBytes& model_bytes) {
  Group result;
  result.paths = group.at("paths").get<std::vector<std::string>>();
  for (const Json& json : group.at("weights")) {
    try {
      result.entries.push_back(read_entry(json, source, model_bytes));
    } catch (const Json::exception& e) {
      const std::string name = json.is_object() && json.contains("name") ? json.at("name").dump() : "without a name";
      throw Error(
          fmt::format("{}: weight entry {} ({}) is malformed: {}", source, result.entries.size(), name, e.what()));
    }
    result.bytes += result.entries.back().bytes();
  }
  return result;
}

// The shards of one group, concatenated (tfjs lets a tensor straddle two shards), once their sizes add up to what
// the group's tensors take.
std::vector<std::byte> read_shards(const Group& group, const std::filesystem::path& folder, const std::string& source) {
  std::vector<std::unique_ptr<MappedFile>> shards;
  std::size_t found = 0;
  for (const std::string& path : group.paths) {
    try {
      shards.push_back(
          std::make_unique<MappedFile>(shard_path(path, folder, source).string(), "TensorFlow.js weight shard"));
    } catch (const Error& e) {
      throw Error(fmt::format("{} (named by {})", e.what(), source));
    }
    found += shards.back()->size();
  }
  if (found != group.bytes) {
    const std::size_t count = group.paths.size();
    throw Error(fmt::format("{}: shard{} {} hold{} {} bytes, but the manifest's tensors there ({}) take {} bytes ({})",
                            source, count == 1 ? "" : "s", fmt::join(group.paths, " + "), count == 1 ? "s" : "", found,
                            group.entries.size(), group.bytes,
                            found < group.bytes ? "short: truncated or from another model?" : "too many bytes"));
  }
  std::vector<std::byte> bytes;
  bytes.reserve(found);
  for (const auto& shard : shards) bytes.insert(bytes.end(), shard->bytes().begin(), shard->bytes().end());
  return bytes;
}

std::vector<TfjsTensor> read_group(const Group& group, const std::filesystem::path& folder, const std::string& source) {
  const std::vector<std::byte> bytes = read_shards(group, folder, source);
  std::vector<TfjsTensor> tensors;
  std::size_t offset = 0;
  for (const Entry& entry : group.entries) {
    tensors.push_back({entry.name, entry.shape, decode(entry, bytes.data() + offset)});
    offset += entry.bytes();
  }
  return tensors;
}

std::string read_text(const std::string& path, const LoadLimits& limits) {
  const MappedFile file(path, "TensorFlow.js weights manifest");
  if (file.size() > limits.max_model_bytes) {
    throw Error(fmt::format("{}: a manifest of {} bytes is more than LoadLimits::max_model_bytes ({})", path,
                            file.size(), limits.max_model_bytes));
  }
  return {reinterpret_cast<const char*>(file.bytes().data()), file.size()};
}

}  // namespace

TfjsWeights TfjsWeights::load(const std::string& manifest_path, const LoadLimits& limits) {
  TfjsWeights weights;
  weights.source_ = manifest_path;
  const std::filesystem::path folder = std::filesystem::path(manifest_path).parent_path();
  try {
    Json manifest = Json::parse(read_text(manifest_path, limits));
    // A model.json carries the manifest under "weightsManifest".
    if (manifest.is_object() && manifest.contains("weightsManifest")) manifest = manifest.at("weightsManifest");
    if (!manifest.is_array()) throw Error(fmt::format("{}: expects a JSON list of weight groups", manifest_path));
    // Every entry is checked against the limits before any shard is read.
    ModelBytes model_bytes(limits, manifest_path);
    std::vector<Group> groups;
    for (const Json& group : manifest) groups.push_back(read_group_entries(group, manifest_path, model_bytes));
    for (const Group& group : groups) {
      std::vector<TfjsTensor> tensors = read_group(group, folder, manifest_path);
      std::move(tensors.begin(), tensors.end(), std::back_inserter(weights.tensors_));
    }
  } catch (const Json::exception& e) {
    throw Error(fmt::format("{}: not a TensorFlow.js weights manifest: {}", manifest_path, e.what()));
  }
  std::set<std::string> names;
  for (const TfjsTensor& tensor : weights.tensors_) {
    if (!names.insert(tensor.name).second) {
      throw Error(fmt::format("{}: tensor '{}' appears twice", manifest_path, tensor.name));
    }
  }
  return weights;
}

bool TfjsWeights::contains(const std::string& name) const {
  return std::any_of(tensors_.begin(), tensors_.end(), [&](const TfjsTensor& t) { return t.name == name; });
}

const TfjsTensor& TfjsWeights::at(const std::string& name) const {
  const auto it = std::find_if(tensors_.begin(), tensors_.end(), [&](const TfjsTensor& t) { return t.name == name; });
  if (it == tensors_.end()) {
    throw Error(fmt::format("{}: no tensor named '{}' (the manifest has {} tensors)", source_, name, tensors_.size()));
  }
  return *it;
}

std::span<const float> TfjsWeights::values(const std::string& name, const std::vector<int>& shape) const {
  const TfjsTensor& tensor = at(name);
  if (tensor.shape != shape) {
    throw Error(fmt::format("{}: tensor '{}' has shape {}, expected {}", source_, name, shape_text(tensor.shape),
                            shape_text(shape)));
  }
  return tensor.values;
}

std::vector<float> hwio_to_oihw(std::span<const float> hwio, int kh, int kw, int in, int out) {
  std::vector<float> oihw(hwio.size());
  for (int y = 0; y < kh; ++y) {
    for (int x = 0; x < kw; ++x) {
      for (int i = 0; i < in; ++i) {
        for (int o = 0; o < out; ++o) {
          oihw[((static_cast<std::size_t>(o) * in + i) * kh + y) * kw + x] =
              hwio[((static_cast<std::size_t>(y) * kw + x) * in + i) * out + o];
        }
      }
    }
  }
  return oihw;
}

std::vector<float> depthwise_hwcm_to_oihw(std::span<const float> hwcm, int kh, int kw, int channels, int multiplier) {
  // HWCM is HWIO with I = channels and O = multiplier; output channel c * multiplier + m takes input c alone.
  std::vector<float> oihw(hwcm.size());
  for (int y = 0; y < kh; ++y) {
    for (int x = 0; x < kw; ++x) {
      for (int c = 0; c < channels; ++c) {
        for (int m = 0; m < multiplier; ++m) {
          const std::size_t o = static_cast<std::size_t>(c) * multiplier + m;
          oihw[(o * kh + y) * kw + x] = hwcm[((static_cast<std::size_t>(y) * kw + x) * channels + c) * multiplier + m];
        }
      }
    }
  }
  return oihw;
}

void load_tfjs_conv(Conv2d& conv, const TfjsWeights& weights, const std::string& kernel, const std::string& bias) {
  const Conv2dDesc& d = conv.desc();
  const bool depthwise = d.groups > 1 && d.groups == d.in_channels;
  if (d.groups != 1 && !depthwise) {
    throw Error(
        fmt::format("{}: cannot load '{}' into {}: TensorFlow kernels fit convolutions with groups 1 or "
                    "groups = in_channels (depthwise)",
                    weights.source(), kernel, conv.describe()));
  }
  const int multiplier = d.out_channels / d.in_channels;
  const std::vector<int> shape = depthwise ? std::vector<int>{d.kernel, d.kernel, d.in_channels, multiplier}
                                           : std::vector<int>{d.kernel, d.kernel, d.in_channels, d.out_channels};
  std::span<const float> values;
  try {
    values = weights.values(kernel, shape);
  } catch (const Error& e) {
    throw Error(fmt::format("{} (for {})", e.what(), conv.describe()));
  }
  conv.set_weights(depthwise ? depthwise_hwcm_to_oihw(values, d.kernel, d.kernel, d.in_channels, multiplier)
                             : hwio_to_oihw(values, d.kernel, d.kernel, d.in_channels, d.out_channels));
  if (!bias.empty()) conv.set_bias(weights.values(bias, {d.out_channels}));
}

}  // namespace corgy
