// Darknet .weights files: reading them into a DarknetModel, and writing deterministic random ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "corgy/io/darknet.h"

namespace corgy {

/// Reads a darknet .weights file (memory-mapped, copied straight into the layers) into the Conv2d and Linear layers
/// of `net`. Format: int32 major, minor, revision; `seen` as int64 when major * 10 + minor >= 2 (and both < 1000),
/// else int32; then for each [convolutional] in cfg order: biases, then scales, rolling means and rolling variances
/// when batch_normalize=1, then OIHW weights; for each [connected]: biases, [out][in] weights (stored [in][out] when
/// major or minor > 1000), then the batch-norm values. Batch norm is folded into the weights with darknet's
/// inference formula y = scale * (x - mean) / (sqrt(variance) + 0.000001) + bias.
/// Throws corgy::Error unless the file size equals header + 4 x parameters, saying the bytes expected and found and,
/// for a short file, at which layer it runs out.
void load_darknet_weights(DarknetModel& net, const std::string& path);

/// The same from bytes in memory; `source` names them in messages.
void load_darknet_weights(DarknetModel& net, std::span<const std::byte> bytes, const std::string& source);

/// Size in bytes of a .weights file for `net` with a 20-byte header (version 0.2.0).
std::size_t darknet_weights_size(const DarknetModel& net);

/// A .weights file (version 0.2.0, seen = 0) for `net` with parameters drawn from a fixed counter-based generator,
/// identical on every platform and reproduced by tools/darknet_reference.py: the k-th parameter of the file is
/// centre + amplitude * (2u - 1) with u = (fmix32(k * 0x9E3779B1 + seed * 0x85EBCA77) >> 8) / 2^24 (float32
/// arithmetic, fmix32 = MurmurHash3's finaliser) and, per kind of value, (centre, amplitude) = biases (0, 0.1),
/// batch-norm scales (1, 0.2), means (0, 0.1), variances (1, 0.2), weights (0, sqrt(6 / fan-in)), which keeps
/// activations of order one through a deep network. For tests, benchmarks and demos without trained weights.
std::vector<std::byte> random_darknet_weights(const DarknetModel& net, std::uint32_t seed);

/// The generator above: u in [0, 1) for counter k.
float darknet_random_uniform(std::uint32_t seed, std::uint32_t k);

}  // namespace corgy
