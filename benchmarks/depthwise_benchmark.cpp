// The blas backend's depthwise kernels at the depthwise layers of MobileNetV2 / V3 and EfficientNet-B0 (batch 1, one
// thread, every channel plane of one image, as depthwise_conv runs them): each way of computing a plane
// (DepthwisePath), the automatic choice and the channel-block kernel, on the widest instruction set of this CPU.
// GFLOP/s counts 2 * taps per output. Run with --benchmark_enable_random_interleaving=true on a shared machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "corgy/backends/blas/depthwise_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"

namespace {

/// A depthwise layer: kernel, stride, channels, input height = width ("same" padding).
struct DepthwiseShape {
  int kernel;
  int stride;
  int channels;
  int size;
};

/// MobileNetV2's, MobileNetV3-Large's and EfficientNet-B0's depthwise layers (one of each distinct shape).
constexpr DepthwiseShape kShapes[] = {
    {3, 1, 32, 112}, {3, 2, 96, 112}, {3, 1, 144, 56}, {3, 2, 144, 56}, {3, 1, 192, 28}, {3, 2, 192, 28},
    {3, 1, 384, 14}, {3, 1, 576, 14}, {3, 2, 576, 14}, {3, 1, 960, 7},  {5, 2, 72, 56},  {5, 1, 120, 28},
    {5, 2, 240, 28}, {5, 1, 480, 14}, {5, 1, 672, 14}, {5, 2, 672, 14}, {5, 1, 960, 7},  {5, 1, 1152, 7},
};

std::string label(const DepthwiseShape& s) {
  return std::to_string(s.kernel) + "x" + std::to_string(s.kernel) + "s" + std::to_string(s.stride) + "/" +
         std::to_string(s.channels) + "x" + std::to_string(s.size) + "x" + std::to_string(s.size);
}

/// One image of a depthwise layer: its geometry and seeded input and weights, and room for its output.
struct DepthwiseLayer {
  explicit DepthwiseLayer(const DepthwiseShape& shape)
      : channels(shape.channels),
        geometry(
            corgy::blas::depthwise_geometry(shape.kernel, shape.stride, 1, shape.kernel / 2, shape.size, shape.size)),
        in_plane(static_cast<std::size_t>(shape.size) * shape.size),
        out_plane(static_cast<std::size_t>(geometry.out_h) * geometry.out_w),
        input(in_plane * channels),
        weights(static_cast<std::size_t>(geometry.taps) * channels),
        output(out_plane * channels) {
    std::mt19937 generator(11);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (float& x : input) x = value(generator);
    for (float& w : weights) w = value(generator);
  }

  /// The layer's rate counter: 2 * taps per output.
  void count_flops(benchmark::State& state) const {
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * geometry.taps * static_cast<double>(out_plane) * channels * 1e-9,
                           benchmark::Counter::kIsIterationInvariantRate);
  }

  int channels;
  corgy::blas::DepthwiseGeometry geometry;
  std::size_t in_plane;
  std::size_t out_plane;
  std::vector<float> input;
  std::vector<float> weights;
  std::vector<float> output;
};

void BM_Depthwise(benchmark::State& state, DepthwiseShape shape, corgy::blas::DepthwisePath path) {
  using namespace corgy::blas;
  DepthwiseLayer layer(shape);
  const DepthwiseKernel kernel = depthwise_kernel(corgy::widest_cpu_isa(), path);
  std::vector<float> buffer;
  prepare_depthwise_buffer(layer.geometry, buffer);
  for (auto _ : state) {
    for (int c = 0; c < layer.channels; ++c) {
      kernel(layer.geometry, layer.input.data() + c * layer.in_plane, layer.weights.data() + c * layer.geometry.taps,
             0.1f, corgy::Activation::relu6(), layer.output.data() + c * layer.out_plane, buffer.data());
    }
    benchmark::DoNotOptimize(layer.output.data());
    benchmark::ClobberMemory();
  }
  layer.count_flops(state);
}

/// The same layer by the channel-block kernel (every plane of the image in one call, as a member's queue item).
void BM_DepthwiseChannelBlocks(benchmark::State& state, DepthwiseShape shape) {
  using namespace corgy::blas;
  DepthwiseLayer layer(shape);
  const DepthwiseChannelBlockKernel kernel = depthwise_channel_block_kernel(corgy::widest_cpu_isa());
  const std::vector<float> bias(layer.channels, 0.1f);
  const std::vector<float> packed =
      pack_depthwise_channel_weights(layer.weights.data(), bias.data(), layer.channels, layer.geometry.taps);
  std::vector<float> buffer;
  prepare_depthwise_channel_buffer(layer.geometry, buffer);
  for (auto _ : state) {
    kernel(layer.geometry, layer.input.data(), 0, layer.channels, layer.channels, packed.data(),
           corgy::Activation::relu6(), layer.output.data(), buffer.data());
    benchmark::DoNotOptimize(layer.output.data());
    benchmark::ClobberMemory();
  }
  layer.count_flops(state);
}

/// Five repetitions of at least 0.2 s, reported as their median, mean, deviation and minimum.
template <class... Args>
void register_repeated(const std::string& name, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.2)
      ->Repetitions(5)
      ->ReportAggregatesOnly(true)
      ->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

}  // namespace

int main(int argc, char** argv) {
  for (const DepthwiseShape& shape : kShapes) {
    for (const auto& [name, path] : {std::pair{"automatic", corgy::blas::DepthwisePath::automatic},
                                     std::pair{"extended_rows", corgy::blas::DepthwisePath::extended_rows},
                                     std::pair{"row_blocks", corgy::blas::DepthwisePath::row_blocks},
                                     std::pair{"direct_blocks", corgy::blas::DepthwisePath::direct_blocks}}) {
      register_repeated("depthwise/" + label(shape) + "/" + name, BM_Depthwise, shape, path);
    }
    if (corgy::blas::depthwise_channel_blocks_apply(shape.kernel, shape.stride, 1)) {
      register_repeated("depthwise/" + label(shape) + "/channel_blocks", BM_DepthwiseChannelBlocks, shape);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
