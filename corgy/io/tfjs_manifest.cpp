#include "corgy/io/tfjs_manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
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

Entry read_entry(const Json& json, const std::string& source) {
  Entry entry;
  entry.name = json.at("name").get<std::string>();
  const std::string where = fmt::format("{}: tensor '{}'", source, entry.name);
  entry.shape = json.at("shape").get<std::vector<int>>();
  if (std::any_of(entry.shape.begin(), entry.shape.end(), [](int d) { return d < 0; })) {
    throw Error(fmt::format("{}: negative dimension in shape {}", where, shape_text(entry.shape)));
  }
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

// The shards of one group, concatenated: tfjs lets a tensor straddle two shards.
std::vector<std::byte> read_shards(const std::vector<std::string>& paths, const std::filesystem::path& folder,
                                   const std::string& source) {
  std::vector<std::byte> bytes;
  for (const std::string& path : paths) {
    try {
      const MappedFile shard((folder / path).string(), "TensorFlow.js weight shard");
      bytes.insert(bytes.end(), shard.bytes().begin(), shard.bytes().end());
    } catch (const Error& e) {
      throw Error(fmt::format("{} (named by {})", e.what(), source));
    }
  }
  return bytes;
}

std::vector<TfjsTensor> read_group(const Json& group, const std::filesystem::path& folder, const std::string& source) {
  const auto paths = group.at("paths").get<std::vector<std::string>>();
  std::vector<Entry> entries;
  std::size_t needed = 0;
  for (const Json& json : group.at("weights")) {
    try {
      entries.push_back(read_entry(json, source));
    } catch (const Json::exception& e) {
      const std::string name = json.is_object() && json.contains("name") ? json.at("name").dump() : "without a name";
      throw Error(fmt::format("{}: weight entry {} ({}) is malformed: {}", source, entries.size(), name, e.what()));
    }
    needed += entries.back().bytes();
  }
  const std::vector<std::byte> bytes = read_shards(paths, folder, source);
  if (bytes.size() != needed) {
    throw Error(fmt::format("{}: shard{} {} hold{} {} bytes, but the manifest's tensors there ({}) take {} bytes ({})",
                            source, paths.size() == 1 ? "" : "s", fmt::join(paths, " + "), paths.size() == 1 ? "s" : "",
                            bytes.size(), entries.size(), needed,
                            bytes.size() < needed ? "short: truncated or from another model?" : "too many bytes"));
  }
  std::vector<TfjsTensor> tensors;
  std::size_t offset = 0;
  for (const Entry& entry : entries) {
    tensors.push_back({entry.name, entry.shape, decode(entry, bytes.data() + offset)});
    offset += entry.bytes();
  }
  return tensors;
}

std::string read_text(const std::string& path) {
  const MappedFile file(path, "TensorFlow.js weights manifest");
  return {reinterpret_cast<const char*>(file.bytes().data()), file.size()};
}

}  // namespace

TfjsWeights TfjsWeights::load(const std::string& manifest_path) {
  TfjsWeights weights;
  weights.source_ = manifest_path;
  const std::filesystem::path folder = std::filesystem::path(manifest_path).parent_path();
  try {
    Json manifest = Json::parse(read_text(manifest_path));
    // A model.json carries the manifest under "weightsManifest".
    if (manifest.is_object() && manifest.contains("weightsManifest")) manifest = manifest.at("weightsManifest");
    if (!manifest.is_array()) throw Error(fmt::format("{}: expects a JSON list of weight groups", manifest_path));
    for (const Json& group : manifest) {
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
