// conv_benchmark: Conv2d through the Backend interface at Tiny YOLO's layer shapes, ResNet-18's and ResNet-50's:
// naive, the blas backend's baseline (im2col + OpenBLAS) and its own algorithms, with warm caches, (the *_cold
// configs) with the weights streaming from memory as in a model's forward, (blas_2t_foreign) with the input and
// output last written by other cores, as the layers before leave them at two threads, and (the *_2t_forward configs:
// the tuner's choice, and each algorithm forced) both; the raw sgemm of the 13x13x1024->1024 layer (OpenBLAS) and the
// micro-kernels alone on cache-resident panels, for context; and the max pools of the stems (pool2d/). Results and
// commands: docs/benchmarks.md.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/variable.h"

namespace {

/// One convolution at "same" padding (kernel / 2), batch 1.
struct ConvShape {
  int size;  // input height and width
  int in_channels;
  int out_channels;
  int kernel;
  int stride = 1;
  int groups = 1;
  int output_size() const { return (size + 2 * (kernel / 2) - kernel) / stride + 1; }
};

/// Tiny YOLO v2's convolutions at 416x416 input, plus 104x104x64->128, the 104x104 layer the issue quotes.
constexpr ConvShape kTinyYoloShapes[] = {
    {416, 3, 16, 3},   {208, 16, 32, 3},  {104, 32, 64, 3},   {104, 64, 128, 3},   {52, 64, 128, 3},
    {26, 128, 256, 3}, {13, 256, 512, 3}, {13, 512, 1024, 3}, {13, 1024, 1024, 3}, {13, 1024, 125, 1},
};

/// ResNet-50's last stage at batch 1 (224 x 224 input): its 7x7 maps fill 49 of 64 lanes of the packed GEMM's
/// pixel panels. The 1x1 / 2 shortcut runs as a pointwise convolution of the subsampled 7x7 input.
constexpr ConvShape kResNet50LastStage[] = {
    {7, 512, 2048, 1}, {7, 2048, 512, 1}, {7, 1024, 2048, 1}, {7, 512, 512, 3}, {14, 512, 512, 3, 2},
};

/// ResNet-18's 3x3 convolutions at batch 1: the Winograd layers of stages 1-3 and the strided ones that start stages
/// 2-4, whose second thread gained least in a forward.
constexpr ConvShape kResNet18ThreeByThree[] = {
    {56, 64, 64, 3},     {28, 128, 128, 3},    {14, 256, 256, 3},
    {56, 64, 128, 3, 2}, {28, 128, 256, 3, 2}, {14, 256, 512, 3, 2},
};

/// ResNet-50's 1x1 convolutions of stages 1-3 at batch 1 (its bottlenecks' reductions and expansions): most of its
/// layers, at 56x56, 28x28 and 14x14.
constexpr ConvShape kResNet50Pointwise[] = {
    {56, 64, 256, 1}, {56, 256, 64, 1}, {28, 128, 512, 1}, {28, 512, 128, 1}, {14, 256, 1024, 1}, {14, 1024, 256, 1},
};

/// MobileNetV2's expansions and projections at 14x14 and 7x7 (batch 1): shallow or narrow GEMMs over few pixels, where
/// its blocks lost 10-20% against ONNX Runtime's convolutions.
constexpr ConvShape kMobileNetV2Pointwise[] = {
    {14, 64, 384, 1}, {14, 384, 64, 1}, {14, 96, 576, 1}, {14, 576, 96, 1}, {7, 160, 960, 1}, {7, 960, 160, 1},
};

/// ResNeXt-50 32x4d's grouped 3x3 convolutions of stages 3 and 4 at batch 1: 32 groups of 16 and 32 channels, each
/// group a GEMM too small to pack for.
constexpr ConvShape kResNeXtGrouped[] = {
    {28, 512, 512, 3, 2, 32},
    {14, 512, 512, 3, 1, 32},
    {14, 1024, 1024, 3, 2, 32},
    {7, 1024, 1024, 3, 1, 32},
};

/// The ImageNet networks' strided layers at batch 1 (224 x 224 input): MobileNetV2's (and EfficientNet's) stem,
/// whose 3 input channels make a GEMM of depth 27, ResNet's 7x7 / 2 stem, and ResNet-50's 3x3 / 2 convolutions at the
/// start of stages 2-4.
constexpr ConvShape kImageNetStridedShapes[] = {
    {224, 3, 32, 3, 2},
    {224, 3, 64, 7, 2},
    {56, 128, 128, 3, 2},
    {28, 256, 256, 3, 2},
};

/// DenseNet-121's growth convolutions (3x3, 128 -> 32) at batch 1, one per dense block: deep and narrow, 4x more input
/// channels than output, so that Winograd's transformed input outweighs its products and its GEMMs are 32 rows.
constexpr ConvShape kDenseNetGrowth[] = {
    {56, 128, 32, 3},
    {28, 128, 32, 3},
    {14, 128, 32, 3},
    {7, 128, 32, 3},
};

/// One backend configuration to compare.
struct BackendConfig {
  const char* label;
  const char* backend;
  int threads;
  /// Evict the caches before each call (untimed), so that the weights stream from memory as in a model's forward,
  /// where each layer's weights were last read a whole forward ago.
  bool cold = false;
  /// Before each call (untimed, after the eviction), threads on CPUs 1 and 0 write the first and second halves of the
  /// input and the output, as a network's earlier layers leave them: modified in the caches of whichever core wrote
  /// them last.
  bool foreign_buffers = false;
};

constexpr BackendConfig kConfigs[] = {{"naive", "naive", 1},
                                      {"im2col_1t", "blas:im2col", 1},
                                      {"im2col_2t", "blas:im2col", 2},
                                      {"blas_1t", "blas", 1},
                                      {"winograd_1t", "blas:winograd", 1},
                                      {"winograd2_1t", "blas:winograd2x2", 1},
                                      {"winograd_2t", "blas:winograd", 2},
                                      {"winograd2_2t", "blas:winograd2x2", 2},
                                      {"packed_1t", "blas:packed", 1},
                                      {"blas_2t", "blas", 2},
                                      {"lanes_1t", "blas:channels_in_lanes", 1},
                                      {"lanes_2t", "blas:channels_in_lanes", 2},
                                      {"few_1t", "blas:few_channels", 1},
                                      {"few_2t", "blas:few_channels", 2},
                                      {"packed_2t", "blas:packed", 2},
                                      {"lanes_1t_cold", "blas:channels_in_lanes", 1, true},
                                      {"packed_1t_cold", "blas:packed", 1, true},
                                      {"blas_1t_cold", "blas", 1, true},
                                      {"blas_2t_cold", "blas", 2, true},
                                      {"blas_2t_foreign", "blas", 2, false, true},
                                      {"blas_2t_forward", "blas", 2, true, true},
                                      {"packed_2t_forward", "blas:packed", 2, true, true},
                                      {"batch_2t_forward", "blas:batch", 2, true, true},
                                      {"lanes_2t_forward", "blas:channels_in_lanes", 2, true, true}};

/// Writes (adds zero to) one float per cache line of [data, data + count) from a thread pinned to `cpu` (left
/// unpinned where the process may not run there), so that the lines end modified in that core's caches.
void write_from_cpu(int cpu, float* data, std::size_t count) {
  std::thread writer([=] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    for (std::size_t i = 0; i < count; i += 16) data[i] += 0.0f;
  });
  writer.join();
}

/// Multiply-adds count twice: 2 * Cout * Cin * k * k * Ho * Wo.
double conv_flops(const ConvShape& shape) {
  return 2.0 * shape.out_channels * (shape.in_channels / shape.groups) * shape.kernel * shape.kernel *
         shape.output_size() * shape.output_size();
}

std::string shape_label(const ConvShape& shape) {
  const std::string size = std::to_string(shape.size);
  return size + "x" + size + "x" + std::to_string(shape.in_channels) + "->" + std::to_string(shape.out_channels) +
         (shape.kernel == 1 ? "_1x1" : "") + (shape.stride > 1 ? "_s" + std::to_string(shape.stride) : "") +
         (shape.groups > 1 ? "_g" + std::to_string(shape.groups) : "");
}

/// Uniform values in [-1, 1]; convolution speed does not depend on them, but zeros or denormals could.
corgy::Variable random_variable(corgy::Shape shape, std::mt19937& generator) {
  corgy::Variable variable(shape);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  for (float& value : variable.values()) value = distribution(generator);
  return variable;
}

void BM_Conv2d(benchmark::State& state, BackendConfig config, ConvShape shape) {
  const std::unique_ptr<corgy::Backend> backend = corgy::make_backend(config.backend, config.threads);
  corgy::Conv2dDesc desc;
  desc.in_channels = shape.in_channels;
  desc.out_channels = shape.out_channels;
  desc.kernel = shape.kernel;
  desc.padding = shape.kernel / 2;
  desc.stride = shape.stride;
  desc.groups = shape.groups;
  // Tiny YOLO's layers: folded batch norm as a bias, then leaky ReLU; the 1x1 detection layer is linear.
  desc.activation = shape.kernel == 1 ? corgy::Activation::none() : corgy::Activation::leaky_relu();
  std::mt19937 generator(2024);
  corgy::Variable input = random_variable({1, shape.in_channels, shape.size, shape.size}, generator);
  const corgy::Variable weights =
      random_variable({shape.out_channels, shape.in_channels / shape.groups, shape.kernel, shape.kernel}, generator);
  const corgy::Variable bias = random_variable(corgy::Shape::vector(shape.out_channels), generator);
  corgy::Variable output({1, shape.out_channels, shape.output_size(), shape.output_size()});

  // Weights are constants, as in a model: the blas backend packs them for its algorithm at the first call.
  backend->upload_constant(weights);
  backend->upload_constant(bias);
  // Warm-up: the first call plans the layer and grows the backend's buffers.
  backend->conv2d(desc, input, weights, &bias, output);
  std::vector<float> evictor(config.cold ? std::size_t{16} << 20 : 0);  // 64 MB: more than an L3
  for (auto _ : state) {
    if (config.cold) {
      state.PauseTiming();
      for (std::size_t i = 0; i < evictor.size(); i += 16) evictor[i] += 1.0f;
      benchmark::DoNotOptimize(evictor.data());
      state.ResumeTiming();
    }
    if (config.foreign_buffers) {
      state.PauseTiming();
      for (corgy::Variable* buffer : {&input, &output}) {
        const std::size_t half = buffer->count() / 2;
        write_from_cpu(1, buffer->data(), half);
        write_from_cpu(0, buffer->data() + half, buffer->count() - half);
      }
      state.ResumeTiming();
    }
    backend->conv2d(desc, input, weights, &bias, output);
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(conv_flops(shape) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// The GEMM inside the 13x13x1024->1024 convolution: weights [1024 x 9216] times columns [9216 x 169].
void BM_Sgemm(benchmark::State& state, int threads) {
  constexpr int kRows = 1024;
  constexpr int kCols = 169;
  constexpr int kDepth = 9216;
  std::mt19937 generator(2024);
  const corgy::Variable a = random_variable(corgy::Shape::matrix(kRows, kDepth), generator);
  const corgy::Variable b = random_variable(corgy::Shape::matrix(kDepth, kCols), generator);
  corgy::Variable c(corgy::Shape::matrix(kRows, kCols));
  openblas_set_num_threads(threads);
  const auto multiply = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kRows, kCols, kDepth, 1.0f, a.data(), kDepth, b.data(),
                kCols, 0.0f, c.data(), kCols);
  };
  multiply();  // warm-up
  for (auto _ : state) {
    multiply();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kRows * kCols * kDepth * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

/// A micro-kernel alone, on panels that stay in L1: the ceiling of the packed GEMM on this CPU.
void BM_MicroKernel(benchmark::State& state, corgy::blas::GemmMicroKernel kernel, std::size_t kDepth) {
  std::mt19937 generator(7);
  const corgy::Variable a = random_variable(corgy::Shape::vector(static_cast<int>(kDepth) * kernel.mr), generator);
  const corgy::Variable b = random_variable(corgy::Shape::vector(static_cast<int>(kDepth) * kernel.nr), generator);
  corgy::Variable c(corgy::Shape::matrix(kernel.mr, kernel.nr));
  constexpr int kCalls = 64;
  for (auto _ : state) {
    for (int i = 0; i < kCalls; ++i) kernel.run(kDepth, a.data(), b.data(), c.data(), kernel.nr, i > 0, nullptr);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kernel.mr * kernel.nr * static_cast<double>(kDepth) * kCalls * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

/// One max pool (k x k, stride s, padding p on every side) of a batch-1 map, as the stems of ResNet, DenseNet and
/// Inception v3 and Inception's blocks pool.
struct PoolShape {
  int channels;
  int size;
  int kernel;
  int stride;
  int padding;
};
constexpr PoolShape kPoolShapes[] = {
    {64, 112, 3, 2, 1}, {192, 56, 3, 2, 1}, {64, 147, 3, 2, 0}, {256, 28, 3, 1, 1}, {128, 56, 2, 2, 0}};

void BM_Pool2d(benchmark::State& state, PoolShape shape, int threads) {
  const std::unique_ptr<corgy::Backend> backend = corgy::make_backend("blas", threads);
  corgy::Pool2dDesc desc;
  desc.kernel_h = desc.kernel_w = shape.kernel;
  desc.stride_h = desc.stride_w = shape.stride;
  desc.pad_top = desc.pad_left = desc.pad_bottom = desc.pad_right = shape.padding;
  std::mt19937 generator(11);
  const corgy::Variable input = random_variable({1, shape.channels, shape.size, shape.size}, generator);
  const int out = desc.output_h(shape.size);
  corgy::Variable output({1, shape.channels, out, out});
  backend->pool2d(desc, input, output);  // warm-up
  for (auto _ : state) {
    backend->pool2d(desc, input, output);
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
  }
}

/// Median of 5 repetitions of wall-clock time (OpenBLAS's worker threads are invisible to the CPU timer).
void configure(benchmark::internal::Benchmark* benchmark) {
  benchmark->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5)->Repetitions(5)->ReportAggregatesOnly(true);
  // The fastest repetition too: on a shared machine every disturbance only adds time.
  benchmark->ComputeStatistics("min",
                               [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& shapes :
       {std::span<const ConvShape>(kTinyYoloShapes), std::span<const ConvShape>(kResNet50LastStage),
        std::span<const ConvShape>(kResNet18ThreeByThree), std::span<const ConvShape>(kResNet50Pointwise),
        std::span<const ConvShape>(kMobileNetV2Pointwise), std::span<const ConvShape>(kImageNetStridedShapes),
        std::span<const ConvShape>(kResNeXtGrouped), std::span<const ConvShape>(kDenseNetGrowth)}) {
    for (const ConvShape& shape : shapes) {
      for (const BackendConfig& config : kConfigs) {
        const std::string name = "conv2d/" + shape_label(shape) + "/" + config.label;
        configure(benchmark::RegisterBenchmark(name.c_str(), BM_Conv2d, config, shape));
      }
    }
  }
  for (const PoolShape& shape : kPoolShapes) {
    for (const int threads : {1, 2}) {
      const std::string name = "pool2d/max_" + std::to_string(shape.channels) + "x" + std::to_string(shape.size) + "x" +
                               std::to_string(shape.size) + "_" + std::to_string(shape.kernel) + "x" +
                               std::to_string(shape.kernel) + "_s" + std::to_string(shape.stride) + "_p" +
                               std::to_string(shape.padding) + "/" + std::to_string(threads) + "t";
      configure(benchmark::RegisterBenchmark(name.c_str(), BM_Pool2d, shape, threads));
    }
  }
  for (const int threads : {1, 2}) {
    const std::string name = "sgemm/1024x169x9216/" + std::to_string(threads) + "t";
    configure(benchmark::RegisterBenchmark(name.c_str(), BM_Sgemm, threads));
  }
  for (const corgy::CpuIsa isa : {corgy::CpuIsa::generic, corgy::CpuIsa::avx2, corgy::CpuIsa::avx512}) {
    if (!corgy::cpu_has(isa)) continue;
    const corgy::blas::GemmKernelSet& kernels = corgy::blas::gemm_kernels(isa);
    std::vector<corgy::blas::GemmMicroKernel> all;
    for (const corgy::blas::GemmMicroKernel& kernel : kernels.kernels) {
      if (kernel.run) all.push_back(kernel);
    }
    if (kernels.seven_rows.run) all.push_back(kernels.seven_rows);
    if (kernels.fourteen_rows.run) all.push_back(kernels.fourteen_rows);
    // The narrower tiles of the GEMM's last columns (named after their family: "avx512 8x48 16 wide").
    std::vector<std::string> names;
    for (const corgy::blas::GemmMicroKernel& kernel : all) names.emplace_back(kernel.name);
    for (const corgy::blas::GemmMicroKernel& kernel : kernels.kernels) {
      for (const corgy::blas::GemmMicroKernel::Narrower& narrower : kernel.narrower) {
        if (!kernel.run || !narrower.run) continue;
        all.push_back(*corgy::blas::narrower_tile(kernel, narrower.nr));
        names.push_back(std::string(kernel.name) + " " + std::to_string(narrower.nr) + " wide");
      }
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      const corgy::blas::GemmMicroKernel& kernel = all[i];
      for (const std::size_t depth : {16, 32, 64, 128}) {
        const std::string name = "micro_kernel/" + names[i] + "/k" + std::to_string(depth);
        configure(benchmark::RegisterBenchmark(name.c_str(), BM_MicroKernel, kernel, depth));
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
