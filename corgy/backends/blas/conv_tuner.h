// Plan-time tuning of the blas backend's convolutions: where several algorithms apply to a layer (our packed GEMM,
// Winograd F(4x4, 3x3), F(2x2, 3x3), F(2x2, 5x5)), each is timed on the layer's own input at its first forward and
// the fastest kept, as cudnn.benchmark does on a GPU. Which is fastest depends on the CPU (its FMA rate against its
// memory bandwidth) and on the shape: on a 7x7 map at batch 1, F(4x4, 3x3)'s transformed weights (4x the
// direct ones) stream from memory for four tiles, and F(2x2, 3x3) ran 8x faster; at batch 8 the order reversed.
//
// Choices are kept for the process and in a file (TuningTable, tuning_cache.h), so a shape repeated in a network,
// in another model or in a later process on a backend of the same thread count is timed once.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/blas/tuning_cache.h"
#include "corgy/backends/blas/winograd_kernels.h"

namespace corgy::blas {

enum class ConvAlgorithm;

/// An algorithm choice for one convolution.
struct ConvChoice {
  ConvAlgorithm algorithm;
  WinogradVariant variant = WinogradVariant::f4x4;  // winograd only
};

/// The choice's name in the tuning cache: "packed_gemm", "winograd f2x2", ...
std::string choice_name(const ConvChoice& choice);

/// The algorithms that compute `desc`, in the order of the static table's preference (the first is what the table
/// picks).
std::vector<ConvChoice> candidate_algorithms(const Conv2dDesc& desc, const Shape& input);

/// Layers larger than this many multiply-adds (per forward, direct) are not timed: a few runs of each candidate
/// would cost seconds at the first forward (VGG's at batch 8). They take the static table's choice.
constexpr double kMaxTunedMultiplyAdds = 2.5e9;

/// The table key of a layer: its geometry (activation excluded: it costs the same on every algorithm), input shape,
/// thread count and instruction set.
std::string tuning_key(const Conv2dDesc& desc, const Shape& input, int threads);

/// Evicts `buffers` from every level of the CPU's caches (clflush). The tuner times each candidate with its packed
/// weights evicted so: in a model's forward a layer's weights were last read a whole forward ago and come from
/// memory, and timed while still cached from packing, an algorithm that streams them without prefetching won where
/// it lost in the model (the output-channels-in-lanes GEMM: MobileNetV2's 7x7 320 -> 1280 0.42-0.46 ms against the
/// packed GEMM's 0.47 when timed cached, 0.53-0.56 against 0.49-0.51 evicted, 0.54-0.56 against 0.48-0.49 in the
/// model). Does nothing on CPUs other than x86.
void evict_from_caches(std::span<const std::span<const float>> buffers);

/// Reads, on the calling member, its share of an NCHW tensor's columns (its images x pixels, cut as TeamMember::share
/// cuts them, each in every channel): with `data` evicted first, each member's core then holds the part of the input
/// that a producer splitting its output by columns (the packed GEMM, Winograd, the depthwise kernels) left there.
/// The tuner times candidates on an input so placed, not on one that both cores had read whole (the previous
/// candidate's run), which a forward never gives a layer: at two threads ResNet-50, EfficientNet-B0, MobileNetV2 and
/// DenseNet-121 ran 3-10% faster at batch 1 with the choices made so.
void read_column_share(const TeamMember& member, const float* data, const Shape& shape);

/// The candidate that fastest_candidate picked, and its time.
struct Fastest {
  std::size_t index = 0;
  double ms = 0.0;
  /// False where the cores were disturbed while the candidates were timed (BlasBackend::fastest_measured sets it).
  bool undisturbed = true;
};

/// The fastest of `candidates`: `time_ms(i)` runs candidate i once and returns its wall time. Each is run twice,
/// the two rounds interleaved, and judged by its fastest run (a run slowed down by another process counts less).
/// Where the runner-up is within kCloseCall of the leader, the two run kCloseCallRounds more rounds: the choice is
/// kept in the tuning cache for every later process, so one noisy pair of runs must not decide it (the same
/// layer's time moved by 5-10% between processes).
inline constexpr double kCloseCall = 0.10;
inline constexpr int kCloseCallRounds = 3;
Fastest fastest_candidate(std::size_t candidates, const std::function<double(std::size_t)>& time_ms);

}  // namespace corgy::blas
