// The blas backend's depthwise kernels at the depthwise layers of MobileNetV2 / V3 and EfficientNet-B0 (batch 1, one
// thread, every channel plane of one image, as depthwise_conv runs them): each way of computing a plane
// (DepthwisePath), the automatic choice and the channel-block kernel, on the widest instruction set of this CPU.
// GFLOP/s counts 2 * taps per output. Run with --benchmark_enable_random_interleaving=true on a shared machine.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
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

void BM_Depthwise(benchmark::State& state, DepthwiseShape shape, corgy::blas::DepthwisePath path) {
  using namespace corgy::blas;
  const int padding = shape.kernel / 2;
  const DepthwiseGeometry geometry = depthwise_geometry(shape.kernel, shape.stride, 1, padding, shape.size, shape.size);
  const DepthwiseKernel kernel = depthwise_kernel(corgy::widest_cpu_isa(), path);
  const std::size_t in_plane = static_cast<std::size_t>(shape.size) * shape.size;
  const std::size_t out_plane = static_cast<std::size_t>(geometry.out_h) * geometry.out_w;
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> input(in_plane * shape.channels);
  std::vector<float> weights(static_cast<std::size_t>(geometry.taps) * shape.channels);
  for (float& x : input) x = value(generator);
  for (float& w : weights) w = value(generator);
  std::vector<float> output(out_plane * shape.channels);
  std::vector<float> buffer;
  prepare_depthwise_buffer(geometry, buffer);
  for (auto _ : state) {
    for (int c = 0; c < shape.channels; ++c) {
      kernel(geometry, input.data() + c * in_plane, weights.data() + c * geometry.taps, 0.1f,
             corgy::Activation::relu6(), output.data() + c * out_plane, buffer.data());
    }
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * geometry.taps * static_cast<double>(out_plane) * shape.channels * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

/// The same layer by the channel-block kernel (every plane of the image in one call, as a member's queue item).
void BM_DepthwiseChannelBlocks(benchmark::State& state, DepthwiseShape shape) {
  using namespace corgy::blas;
  const int padding = shape.kernel / 2;
  const DepthwiseGeometry geometry = depthwise_geometry(shape.kernel, shape.stride, 1, padding, shape.size, shape.size);
  const DepthwiseChannelBlockKernel kernel = depthwise_channel_block_kernel(corgy::widest_cpu_isa());
  const std::size_t in_plane = static_cast<std::size_t>(shape.size) * shape.size;
  const std::size_t out_plane = static_cast<std::size_t>(geometry.out_h) * geometry.out_w;
  std::mt19937 generator(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> input(in_plane * shape.channels);
  std::vector<float> weights(static_cast<std::size_t>(geometry.taps) * shape.channels);
  std::vector<float> bias(shape.channels, 0.1f);
  for (float& x : input) x = value(generator);
  for (float& w : weights) w = value(generator);
  const std::vector<float> packed =
      pack_depthwise_channel_weights(weights.data(), bias.data(), shape.channels, geometry.taps);
  std::vector<float> output(out_plane * shape.channels);
  std::vector<float> buffer;
  prepare_depthwise_channel_buffer(geometry, buffer);
  for (auto _ : state) {
    kernel(geometry, input.data(), 0, shape.channels, shape.channels, packed.data(), corgy::Activation::relu6(),
           output.data(), buffer.data());
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * geometry.taps * static_cast<double>(out_plane) * shape.channels * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const DepthwiseShape& shape : kShapes) {
    for (const auto& [name, path] : {std::pair{"automatic", corgy::blas::DepthwisePath::automatic},
                                     std::pair{"extended_rows", corgy::blas::DepthwisePath::extended_rows},
                                     std::pair{"row_blocks", corgy::blas::DepthwisePath::row_blocks},
                                     std::pair{"direct_blocks", corgy::blas::DepthwisePath::direct_blocks}}) {
      const std::string full = "depthwise/" + label(shape) + "/" + name;
      benchmark::RegisterBenchmark(full.c_str(), BM_Depthwise, shape, path)
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.2)
          ->Repetitions(5)
          ->ReportAggregatesOnly(true)
          ->ComputeStatistics("min",
                              [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    }
    if (corgy::blas::depthwise_channel_blocks_apply(shape.kernel, shape.stride, 1)) {
      const std::string full = "depthwise/" + label(shape) + "/channel_blocks";
      benchmark::RegisterBenchmark(full.c_str(), BM_DepthwiseChannelBlocks, shape)
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.2)
          ->Repetitions(5)
          ->ReportAggregatesOnly(true)
          ->ComputeStatistics("min",
                              [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
