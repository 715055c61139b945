#include "corgy/io/darknet_weights.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "corgy/error.h"
#include "corgy/io/mapped_file.h"
#include "corgy/layers/conv2d.h"
#include "corgy/layers/linear.h"

namespace corgy {

namespace {

static_assert(std::endian::native == std::endian::little, "darknet .weights files are little-endian");

// The kinds of values a layer stores, in file order.
enum class Values { biases, scales, means, variances, weights };

struct Block {
  Values kind;
  std::size_t count;
  std::size_t fan_in;
};

struct LayerParameters {
  int cfg_layer;
  std::vector<Block> blocks;
  std::size_t count() const {
    std::size_t total = 0;
    for (const Block& b : blocks) total += b.count;
    return total;
  }
};

std::vector<Block> batch_norm_blocks(std::size_t outputs) {
  return {{Values::scales, outputs, 0}, {Values::means, outputs, 0}, {Values::variances, outputs, 0}};
}

// What each weighted layer stores, in cfg order (darknet's load_convolutional_weights / load_connected_weights).
std::vector<LayerParameters> parameter_layout(const DarknetModel& net) {
  std::vector<LayerParameters> layout;
  for (int i = 0; i < static_cast<int>(net.cfg.layers.size()); ++i) {
    const DarknetLayerParams& params = net.cfg.layers[i].params;
    if (const auto* conv = std::get_if<DarknetConvolutional>(&params)) {
      const Conv2dDesc& d = dynamic_cast<const Conv2d&>(net.model.layer(net.layer_of_cfg[i])).desc();
      const auto outputs = static_cast<std::size_t>(d.out_channels);
      const auto fan_in = static_cast<std::size_t>(d.in_channels / d.groups) * d.kernel * d.kernel;
      LayerParameters layer{i, {{Values::biases, outputs, 0}}};
      if (conv->batch_normalize) {
        for (const Block& b : batch_norm_blocks(outputs)) layer.blocks.push_back(b);
      }
      layer.blocks.push_back({Values::weights, outputs * fan_in, fan_in});
      layout.push_back(std::move(layer));
    } else if (const auto* fc = std::get_if<DarknetConnected>(&params)) {
      const LinearOptions& o = dynamic_cast<const Linear&>(net.model.layer(net.layer_of_cfg[i])).options();
      const auto outputs = static_cast<std::size_t>(o.out_features);
      const auto inputs = static_cast<std::size_t>(o.in_features);
      LayerParameters layer{i, {{Values::biases, outputs, 0}, {Values::weights, outputs * inputs, inputs}}};
      if (fc->batch_normalize) {
        for (const Block& b : batch_norm_blocks(outputs)) layer.blocks.push_back(b);
      }
      layout.push_back(std::move(layer));
    }
  }
  return layout;
}

std::size_t parameter_count(const std::vector<LayerParameters>& layout) {
  std::size_t total = 0;
  for (const LayerParameters& layer : layout) total += layer.count();
  return total;
}

struct Header {
  std::int32_t major = 0;
  std::int32_t minor = 0;
  std::int32_t revision = 0;
  std::size_t size = 0;
  // Files written with the transposed [connected] layout of old darknet versions (parser.c: load_weights_upto).
  bool transposed_connected = false;
};

Header read_header(std::span<const std::byte> bytes, const std::string& source) {
  Header h;
  if (bytes.size() < 12) {
    throw Error(
        fmt::format("{}: {} bytes is too short for a darknet weights header (at least 16)", source, bytes.size()));
  }
  std::memcpy(&h.major, bytes.data(), 4);
  std::memcpy(&h.minor, bytes.data() + 4, 4);
  std::memcpy(&h.revision, bytes.data() + 8, 4);
  // darknet's test, major * 10 + minor >= 2, in 64 bits: a hostile header must not overflow it.
  const bool wide_seen = std::int64_t{h.major} * 10 + h.minor >= 2 && h.major < 1000 && h.minor < 1000;
  h.size = 12 + (wide_seen ? 8 : 4);
  h.transposed_connected = h.major > 1000 || h.minor > 1000;
  return h;
}

[[noreturn]] void throw_size_mismatch(const DarknetModel& net, const std::vector<LayerParameters>& layout,
                                      const Header& header, std::size_t found, const std::string& source) {
  const std::size_t parameters = parameter_count(layout);
  const std::size_t expected = header.size + 4 * parameters;
  const std::string needs = fmt::format(
      "the cfg needs {} bytes ({}-byte header of version {}.{}.{} + 4 x {} "
      "parameters)",
      expected, header.size, header.major, header.minor, header.revision, parameters);
  if (found > expected) {
    throw Error(fmt::format("{}: {} bytes more than expected: {}, the file has {}; was it written for another cfg?",
                            source, found - expected, needs, found));
  }
  if (found < header.size) {
    throw Error(fmt::format("{}: the file ends inside the header; {}, the file has {}", source, needs, found));
  }
  std::size_t end = header.size;
  for (const LayerParameters& layer : layout) {
    const std::size_t start = end;
    end += 4 * layer.count();
    if (end > found) {
      throw Error(fmt::format("{}: the file ends inside {}, which needs bytes {}..{}; {}, the file has {}", source,
                              net.cfg.location(layer.cfg_layer), start, end, needs, found));
    }
  }
  throw Error(fmt::format("{}: {}, the file has {}", source, needs, found));  // unreachable for found != expected
}

// Reads consecutive floats out of the file's bytes.
class FloatReader {
 public:
  FloatReader(std::span<const std::byte> bytes, std::size_t offset) : bytes_(bytes), offset_(offset) {}

  void read_into(float* target, std::size_t count) {
    std::memcpy(target, bytes_.data() + offset_, count * sizeof(float));
    offset_ += count * sizeof(float);
  }
  std::vector<float> read(std::size_t count) {
    std::vector<float> values(count);
    read_into(values.data(), count);
    return values;
  }

 private:
  std::span<const std::byte> bytes_;
  std::size_t offset_;
};

struct BatchNormValues {
  std::vector<float> scales;
  std::vector<float> means;
  std::vector<float> variances;
};

BatchNormValues read_batch_norm(FloatReader& reader, std::size_t outputs) {
  BatchNormValues bn;
  bn.scales = reader.read(outputs);
  bn.means = reader.read(outputs);
  bn.variances = reader.read(outputs);
  return bn;
}

// The one batch-norm fold of the darknet loader, for [convolutional] and [connected] alike. Darknet's inference
// (batchnorm_layer.c: normalize_cpu) divides by sqrt(variance) + .000001f, not by sqrt(variance + epsilon).
void fold_batch_norm(float* weights, std::size_t per_output, std::vector<float>& biases, const BatchNormValues& bn) {
  for (std::size_t o = 0; o < biases.size(); ++o) {
    const float factor = bn.scales[o] / (std::sqrt(bn.variances[o]) + .000001f);
    for (std::size_t i = 0; i < per_output; ++i) weights[o * per_output + i] *= factor;
    biases[o] -= bn.means[o] * factor;
  }
}

void load_convolutional(Conv2d& conv, bool batch_normalize, FloatReader& reader) {
  const auto outputs = static_cast<std::size_t>(conv.desc().out_channels);
  std::vector<float> biases = reader.read(outputs);
  BatchNormValues bn;
  if (batch_normalize) bn = read_batch_norm(reader, outputs);
  reader.read_into(conv.weights().data(), conv.weights().count());
  if (batch_normalize) fold_batch_norm(conv.weights().data(), conv.weights().count() / outputs, biases, bn);
  conv.set_bias(biases);
}

void load_connected(Linear& fc, bool batch_normalize, bool transposed, FloatReader& reader) {
  const auto outputs = static_cast<std::size_t>(fc.options().out_features);
  const auto inputs = static_cast<std::size_t>(fc.options().in_features);
  std::vector<float> biases = reader.read(outputs);
  float* weights = fc.weights().data();
  if (transposed) {
    const std::vector<float> in_by_out = reader.read(inputs * outputs);
    for (std::size_t o = 0; o < outputs; ++o) {
      for (std::size_t i = 0; i < inputs; ++i) weights[o * inputs + i] = in_by_out[i * outputs + o];
    }
  } else {
    reader.read_into(weights, inputs * outputs);
  }
  if (batch_normalize) fold_batch_norm(weights, inputs, biases, read_batch_norm(reader, outputs));
  fc.set_bias(biases);
}

std::uint32_t fmix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// (centre, amplitude) of the random values of each kind; see random_darknet_weights().
std::pair<float, float> random_range(const Block& block) {
  switch (block.kind) {
    case Values::biases: return {0.0f, 0.1f};
    case Values::scales: return {1.0f, 0.2f};
    case Values::means: return {0.0f, 0.1f};
    case Values::variances: return {1.0f, 0.2f};
    case Values::weights: return {0.0f, std::sqrt(6.0f / static_cast<float>(block.fan_in))};
  }
  return {0.0f, 0.0f};
}

template <class T>
std::byte* write_value(std::byte* out, T value) {
  std::memcpy(out, &value, sizeof(T));
  return out + sizeof(T);
}

}  // namespace

void load_darknet_weights(DarknetModel& net, std::span<const std::byte> bytes, const std::string& source) {
  const Header header = read_header(bytes, source);
  const std::vector<LayerParameters> layout = parameter_layout(net);
  if (bytes.size() != header.size + 4 * parameter_count(layout)) {
    throw_size_mismatch(net, layout, header, bytes.size(), source);
  }
  FloatReader reader(bytes, header.size);
  for (const LayerParameters& layer : layout) {
    const DarknetLayerParams& params = net.cfg.layers[layer.cfg_layer].params;
    const int index = net.layer_of_cfg[layer.cfg_layer];
    if (const auto* conv = std::get_if<DarknetConvolutional>(&params)) {
      load_convolutional(net.model.layer_as<Conv2d>(index), conv->batch_normalize, reader);
    } else {
      load_connected(net.model.layer_as<Linear>(index), std::get<DarknetConnected>(params).batch_normalize,
                     header.transposed_connected, reader);
    }
  }
  net.model.weights_changed();
}

void load_darknet_weights(DarknetModel& net, const std::string& path) {
  const MappedFile file(path, "darknet weights");
  load_darknet_weights(net, file.bytes(), path);
}

std::size_t darknet_weights_size(const DarknetModel& net) { return 20 + 4 * parameter_count(parameter_layout(net)); }

float darknet_random_uniform(std::uint32_t seed, std::uint32_t k) {
  const std::uint32_t hash = fmix32(k * 0x9E3779B1u + seed * 0x85EBCA77u);
  return static_cast<float>(hash >> 8) * 0x1p-24f;
}

std::vector<std::byte> random_darknet_weights(const DarknetModel& net, std::uint32_t seed) {
  const std::vector<LayerParameters> layout = parameter_layout(net);
  std::vector<std::byte> bytes(20 + 4 * parameter_count(layout));
  std::byte* out = bytes.data();
  out = write_value<std::int32_t>(out, 0);   // major
  out = write_value<std::int32_t>(out, 2);   // minor
  out = write_value<std::int32_t>(out, 0);   // revision
  out = write_value<std::uint64_t>(out, 0);  // seen
  std::uint32_t k = 0;
  for (const LayerParameters& layer : layout) {
    for (const Block& block : layer.blocks) {
      const auto [centre, amplitude] = random_range(block);
      for (std::size_t i = 0; i < block.count; ++i, ++k) {
        out = write_value<float>(out, centre + amplitude * (2.0f * darknet_random_uniform(seed, k) - 1.0f));
      }
    }
  }
  return bytes;
}

}  // namespace corgy
