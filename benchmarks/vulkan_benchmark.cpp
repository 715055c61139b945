// vulkan_benchmark: the Vulkan backend against OpenBLAS (all cores) in the same run. Results: docs/benchmarks.md.
//
//   vulkan_benchmark [--device NAME|INDEX] [--repeats N] [--quick] [--sections gemm,conv,yolo,zerocopy]
//
// Sections: the GEMM kernel at 2048^3 and 1024x169x4608 (MxNxK) for each tile shape; Tiny YOLO v2's 3x3
// convolutions at 416x416, batch 1; a whole Tiny YOLO v2 forward; zero-copy Variables against forced staging.
// Every figure is the median of --repeats runs after warm-up. "GPU ms" comes from timestamp queries around the
// forward's command buffer; "wall ms" is begin_forward() to end_forward() on the host (record or reuse, submit,
// wait, host copies). The GEMM and convolution sections keep operands on the device (weights and inputs
// uploaded as constants, outputs device-only) so that they time the kernels; the zero-copy section times the
// copies. This is a table printer rather than a Google Benchmark binary because each row needs both clocks.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/corgy.h"

namespace {

using corgy::Shape;
using corgy::Variable;

struct Settings {
  std::string device;
  int repeats = 20;
  int warmup = 3;
  std::string sections = "gemm,conv,yolo,zerocopy";

  bool wants(const std::string& section) const { return sections.find(section) != std::string::npos; }
};

struct Timing {
  double gpu_ms = 0.0;
  double wall_ms = 0.0;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Variable random_variable(Shape shape, std::mt19937& rng) {
  Variable tensor(shape);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& value : tensor.values()) value = uniform(rng);
  return tensor;
}

double max_relative_error(const Variable& actual, const Variable& expected) {
  double magnitude = 1e-6;
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.count(); ++i) {
    magnitude = std::max(magnitude, static_cast<double>(std::abs(expected.data()[i])));
    worst = std::max(worst, static_cast<double>(std::abs(actual.data()[i] - expected.data()[i])));
  }
  return worst / magnitude;
}

/// Runs `forward` (operations between begin_forward and end_forward) warm-up + repeats times. The warm-up lasts
/// at least 200 ms as well, so that a GPU that idled (while the CPU baseline ran) is back at full clock.
Timing time_forward(corgy::Backend& backend, const Settings& settings, const std::function<void()>& forward) {
  auto* vulkan = dynamic_cast<corgy::VulkanBackend*>(&backend);
  const auto run_once = [&] {
    backend.begin_forward();
    forward();
    backend.end_forward();
  };
  const auto warmup_start = std::chrono::steady_clock::now();
  for (int run = 0; run < settings.warmup || (vulkan && milliseconds_since(warmup_start) < 200.0); ++run) run_once();
  std::vector<double> gpu;
  std::vector<double> wall;
  for (int run = 0; run < settings.repeats; ++run) {
    const auto start = std::chrono::steady_clock::now();
    run_once();
    wall.push_back(milliseconds_since(start));
    gpu.push_back(vulkan ? vulkan->stats().last_gpu_ms : 0.0);
  }
  return {median(gpu), median(wall)};
}

corgy::VulkanOptions vulkan_options(const Settings& settings, corgy::VulkanGemmTiles tiles = {}) {
  corgy::VulkanOptions options;
  options.device = settings.device;
  options.gemm_tiles = tiles;
  return options;
}

std::string tiles_name(const corgy::VulkanGemmTiles& t) {
  if (t.automatic()) return "auto";
  return fmt::format("{}x{}x{}/{}x{}", t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n);
}

// Tile shapes to compare: block of C x K step / block per thread.
constexpr corgy::VulkanGemmTiles tile_shapes[] = {
    {},
    {128, 128, 8, 8, 8},
    {128, 128, 16, 8, 4},
    {128, 64, 16, 8, 4},
    {64, 128, 16, 4, 8},
    {64, 128, 32, 4, 8},
    {64, 64, 16, 4, 4},
    {64, 64, 32, 4, 4},
    {32, 32, 16, 4, 4},
};

void benchmark_gemm_tiles(const Settings& settings, const corgy::VulkanGemmTiles& tiles, const Variable& a,
                          const Variable& b, const Variable& reference, double blas_ms) {
  const int m = a.shape().rows();
  const int k = a.shape().cols();
  const int n = b.shape().cols();
  const double flops = 2.0 * m * n * k;
  corgy::VulkanBackend vulkan(vulkan_options(settings, tiles));
  Variable c(Shape::matrix(m, n));
  vulkan.upload_constant(a);
  vulkan.upload_constant(b);
  const std::uint64_t device_only[] = {c.storage()->id()};
  vulkan.set_device_only(device_only);
  const Timing t = time_forward(vulkan, settings, [&] { vulkan.matmul(a, false, b, false, c); });
  vulkan.set_device_only({});  // once more with C on the host, to check it
  vulkan.matmul(a, false, b, false, c);
  fmt::print("  {:<16} {:>9.3f} {:>9.3f} {:>12.0f} {:>12.0f} {:>7.1f}x {:>10.2g}\n", tiles_name(tiles), t.gpu_ms,
             t.wall_ms, flops / t.gpu_ms * 1e-6, flops / t.wall_ms * 1e-6, blas_ms / t.wall_ms,
             max_relative_error(c, reference));
}

void benchmark_gemm(const Settings& settings, int m, int n, int k) {
  std::mt19937 rng(1);
  const Variable a = random_variable(Shape::matrix(m, k), rng);
  const Variable b = random_variable(Shape::matrix(k, n), rng);
  Variable reference(Shape::matrix(m, n));
  const double flops = 2.0 * m * n * k;
  auto blas = corgy::make_backend("blas", 0);
  const Timing cpu = time_forward(*blas, settings, [&] { blas->matmul(a, false, b, false, reference); });
  fmt::print("GEMM {}x{}x{} (MxNxK), {:.2f} GFLOP; OpenBLAS {:.2f} ms = {:.0f} GFLOP/s\n", m, n, k, flops * 1e-9,
             cpu.wall_ms, flops / cpu.wall_ms * 1e-6);
  fmt::print("  {:<16} {:>9} {:>9} {:>12} {:>12} {:>8} {:>10}\n", "tiles", "GPU ms", "wall ms", "GFLOP/s GPU",
             "GFLOP/s wall", "vs blas", "max error");
  for (const corgy::VulkanGemmTiles& tiles : tile_shapes) {
    try {
      benchmark_gemm_tiles(settings, tiles, a, b, reference, cpu.wall_ms);
    } catch (const corgy::Error& e) {
      fmt::print("  {:<16} skipped: {}\n", tiles_name(tiles), e.what());
    }
  }
}

struct ConvShape {
  int size, in_channels, out_channels;
};

// Tiny YOLO v2's 3x3 convolutions at 416x416 (stride 1, pad 1, batch 1).
constexpr ConvShape tiny_yolo_convs[] = {{416, 3, 16},   {208, 16, 32},  {104, 32, 64},   {52, 64, 128},
                                         {26, 128, 256}, {13, 256, 512}, {13, 512, 1024}, {13, 1024, 1024}};

void benchmark_convolutions(const Settings& settings, const corgy::VulkanGemmTiles& tiles) {
  fmt::print(
      "\nConv2d 3x3 pad 1 + bias + leaky, batch 1, GEMM tiles {} (weights and input on the device, output "
      "device-only)\n",
      tiles_name(tiles));
  fmt::print("  {:<18} {:>9} {:>9} {:>12} {:>9} {:>8} {:>10}\n", "shape", "GPU ms", "wall ms", "GFLOP/s GPU", "blas ms",
             "vs blas", "max error");
  corgy::VulkanBackend vulkan(vulkan_options(settings, tiles));
  auto blas = corgy::make_backend("blas", 0);
  std::mt19937 rng(2);
  for (const ConvShape& s : tiny_yolo_convs) {
    corgy::Conv2dDesc desc;
    desc.in_channels = s.in_channels;
    desc.out_channels = s.out_channels;
    desc.kernel = 3;
    desc.padding = 1;
    desc.activation = corgy::Activation::leaky_relu();
    const Variable input = random_variable({1, s.in_channels, s.size, s.size}, rng);
    const Variable weights = random_variable({s.out_channels, s.in_channels, 3, 3}, rng);
    const Variable bias = random_variable(Shape::vector(s.out_channels), rng);
    Variable expected({1, s.out_channels, s.size, s.size});
    Variable output({1, s.out_channels, s.size, s.size});
    const Timing cpu = time_forward(*blas, settings, [&] { blas->conv2d(desc, input, weights, &bias, expected); });
    for (const Variable* constant : {&input, &weights, &bias}) vulkan.upload_constant(*constant);
    const std::uint64_t device_only[] = {output.storage()->id()};
    vulkan.set_device_only(device_only);
    const Timing t = time_forward(vulkan, settings, [&] { vulkan.conv2d(desc, input, weights, &bias, output); });
    vulkan.set_device_only({});
    vulkan.conv2d(desc, input, weights, &bias, output);
    const double flops = 2.0 * s.out_channels * s.in_channels * 9.0 * s.size * s.size;
    fmt::print("  {:<18} {:>9.3f} {:>9.3f} {:>12.0f} {:>9.3f} {:>7.1f}x {:>10.2g}\n",
               fmt::format("{0}x{0}x{1}->{2}", s.size, s.in_channels, s.out_channels), t.gpu_ms, t.wall_ms,
               flops / t.gpu_ms * 1e-6, cpu.wall_ms, cpu.wall_ms / t.wall_ms, max_relative_error(output, expected));
  }
}

// Tiny YOLO v2 (VOC): nine 3x3 convolutions with leaky ReLU and six max pools, then a 1x1 convolution.
corgy::Sequential tiny_yolo_v2() {
  corgy::Sequential model;
  const int widths[] = {16, 32, 64, 128, 256, 512};
  int channels = 3;
  for (int i = 0; i < 6; ++i) {
    model.add(corgy::Conv2d({.in_channels = channels,
                             .out_channels = widths[i],
                             .kernel = 3,
                             .padding = 1,
                             .activation = corgy::Activation::leaky_relu()}));
    model.add(i < 5 ? corgy::MaxPool2d({.kernel = 2}) : corgy::MaxPool2d::darknet(2, 1));
    channels = widths[i];
  }
  model.add(corgy::Conv2d({.in_channels = 512,
                           .out_channels = 1024,
                           .kernel = 3,
                           .padding = 1,
                           .activation = corgy::Activation::leaky_relu()}));
  model.add(corgy::Conv2d({.in_channels = 1024,
                           .out_channels = 1024,
                           .kernel = 3,
                           .padding = 1,
                           .activation = corgy::Activation::leaky_relu()}));
  model.add(corgy::Conv2d({.in_channels = 1024, .out_channels = 125, .kernel = 1}));
  std::mt19937 rng(3);
  for (int i = 0; i < model.size(); ++i) {
    if (auto* conv = dynamic_cast<corgy::Conv2d*>(&model.layer(i))) {
      const float scale = 1.0f / std::sqrt(static_cast<float>(conv->weights().count() / conv->desc().out_channels));
      std::uniform_real_distribution<float> uniform(-scale, scale);
      for (float& w : conv->weights().values()) w = uniform(rng);
      for (float& b : conv->bias().values()) b = uniform(rng);
    }
  }
  return model;
}

/// Median wall and GPU times of model.forward(input), warmed up as time_forward() does.
Timing time_model(corgy::Sequential& model, const Variable& input, const Settings& settings) {
  auto* vulkan = dynamic_cast<corgy::VulkanBackend*>(&model.backend());
  const auto warmup_start = std::chrono::steady_clock::now();
  for (int run = 0; run < settings.warmup || (vulkan && milliseconds_since(warmup_start) < 200.0); ++run) {
    model.forward(input);
  }
  std::vector<double> wall;
  std::vector<double> gpu;
  for (int run = 0; run < settings.repeats; ++run) {
    const auto start = std::chrono::steady_clock::now();
    model.forward(input);
    wall.push_back(milliseconds_since(start));
    gpu.push_back(vulkan ? vulkan->stats().last_gpu_ms : 0.0);
  }
  return {median(gpu), median(wall)};
}

void benchmark_tiny_yolo(const Settings& settings) {
  corgy::Sequential model = tiny_yolo_v2();
  std::mt19937 rng(4);
  const Variable input = random_variable({1, 3, 416, 416}, rng);
  const double flops = model.flops(input.shape());
  model.set_backend("blas");
  const Timing cpu = time_model(model, input, settings);
  const Variable expected = model.forward(input).clone();
  fmt::print("\nTiny YOLO v2 forward, 416x416, batch 1, {:.2f} GFLOP (input and output on the host)\n", flops * 1e-9);
  fmt::print("  {:<22} {:>9} {:>9} {:>12} {:>8} {:>10} {:>11}\n", "variables", "GPU ms", "wall ms", "GFLOP/s wall",
             "vs blas", "max error", "submissions");
  fmt::print("  {:<22} {:>9} {:>9.3f} {:>12.0f}\n", "blas (all cores)", "-", cpu.wall_ms, flops / cpu.wall_ms * 1e-6);
  for (bool staging : {false, true}) {
    corgy::VulkanOptions options = vulkan_options(settings);
    options.force_staging = staging;
    auto owned = std::make_unique<corgy::VulkanBackend>(options);
    const corgy::VulkanBackend& vulkan = *owned;
    model.set_backend(std::move(owned));
    const Timing t = time_model(model, input, settings);
    fmt::print("  {:<22} {:>9.3f} {:>9.3f} {:>12.0f} {:>7.1f}x {:>10.2g} {:>11}\n",
               vulkan.zero_copy() ? "zero-copy (imported)" : "staging copies", t.gpu_ms, t.wall_ms,
               flops / t.wall_ms * 1e-6, cpu.wall_ms / t.wall_ms, max_relative_error(model.forward(input), expected),
               vulkan.stats().submissions);
  }
}

// What importing host memory saves: operations whose inputs and outputs are host Variables.
void benchmark_zero_copy(const Settings& settings) {
  fmt::print("\nZero-copy against staging: wall ms with host input and output (GPU ms in brackets)\n");
  fmt::print("  {:<34} {:>20} {:>20} {:>8}\n", "operation", "zero-copy", "staging", "saved");
  std::mt19937 rng(5);
  const Variable big = random_variable({1, 16, 1024, 1024}, rng);  // 64 MiB
  Variable big_out(big.shape());
  const Variable image = random_variable({1, 3, 416, 416}, rng);
  const Variable weights = random_variable({16, 3, 3, 3}, rng);
  Variable conv_out({1, 16, 416, 416});
  corgy::Conv2dDesc desc;
  desc.in_channels = 3;
  desc.out_channels = 16;
  desc.padding = 1;
  const Variable a = random_variable(Shape::matrix(1024, 4608), rng);
  const Variable b = random_variable(Shape::matrix(4608, 169), rng);
  Variable c(Shape::matrix(1024, 169));
  struct Case {
    const char* name;
    std::function<void(corgy::Backend&)> run;
  };
  const Case cases[] = {
      {"relu, 64 MiB in and out", [&](corgy::Backend& be) { be.activation(corgy::Activation::relu(), big, big_out); }},
      {"conv 416x416x3->16, 2 + 11 MiB",
       [&](corgy::Backend& be) { be.conv2d(desc, image, weights, nullptr, conv_out); }},
      {"matmul 1024x169x4608, 19 + 0.7 MiB", [&](corgy::Backend& be) { be.matmul(a, false, b, false, c); }},
  };
  for (const Case& test : cases) {
    Timing timings[2];
    for (bool staging : {false, true}) {
      corgy::VulkanOptions options = vulkan_options(settings);
      options.force_staging = staging;
      corgy::VulkanBackend vulkan(options);
      timings[staging] = time_forward(vulkan, settings, [&] { test.run(vulkan); });
    }
    fmt::print("  {:<34} {:>11.3f} ({:>6.3f}) {:>11.3f} ({:>6.3f}) {:>7.0f}%\n", test.name, timings[0].wall_ms,
               timings[0].gpu_ms, timings[1].wall_ms, timings[1].gpu_ms,
               100.0 * (timings[1].wall_ms - timings[0].wall_ms) / timings[1].wall_ms);
  }
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      settings.device = argv[++i];
    } else if (arg == "--repeats" && i + 1 < argc) {
      settings.repeats = std::max(1, std::stoi(argv[++i]));
    } else if (arg == "--sections" && i + 1 < argc) {
      settings.sections = argv[++i];
    } else if (arg == "--quick") {
      settings.repeats = 3;
      settings.warmup = 1;
    } else {
      throw corgy::Error(
          fmt::format("vulkan_benchmark: unknown argument '{}'; usage: vulkan_benchmark "
                      "[--device NAME|INDEX] [--repeats N] [--quick] [--sections gemm,conv,yolo,zerocopy]",
                      arg));
    }
  }
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings settings = parse(argc, argv);
    const corgy::VulkanBackend probe(vulkan_options(settings));
    const corgy::VulkanDeviceInfo& device = probe.device();
    fmt::print("Device: {} ({}), driver {}, Vulkan {}, zero-copy {}; median of {} runs after {} warm-up\n\n",
               device.name, device.type, device.driver, device.api_version, probe.zero_copy() ? "yes" : "no",
               settings.repeats, settings.warmup);
    if (settings.wants("gemm")) {
      benchmark_gemm(settings, 2048, 2048, 2048);
      benchmark_gemm(settings, 1024, 169, 4608);
    }
    if (settings.wants("conv")) {
      benchmark_convolutions(settings, {});
      benchmark_convolutions(settings, {64, 64, 16, 4, 4});
    }
    if (settings.wants("yolo")) benchmark_tiny_yolo(settings);
    if (settings.wants("zerocopy")) benchmark_zero_copy(settings);
  } catch (const corgy::Error& e) {
    fmt::print(stderr, "vulkan_benchmark: {}\n", e.what());
    return 1;
  }
  return 0;
}
