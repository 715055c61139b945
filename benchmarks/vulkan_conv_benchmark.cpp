// vulkan_conv_benchmark: where a GPU spends a Tiny YOLO forward, and which convolution plan is fastest for
// each layer. One run checks every variant against the fp32 im2col reference on the same GPU and times it.
//
//   vulkan_conv_benchmark [--device NAME|INDEX] [--repeats N] [--sections layers,models] [--batches 1,64]
//                         [--layers NAME-PART] [--variants PART,PART] [--pipeline-stats] [--data data/darknet]
//
// layers: every convolution shape of Tiny YOLO v2-VOC and YOLOv3-tiny (416x416), with its following max pool
//   (fused where it can be), or with --layers those whose name holds the text (VGG-16's 224x224 shapes: vgg16;
//   large 1x1 convolutions: gemm), at
//   each batch, for each variant: im2col + GEMM (the reference), the implicit GEMM
//   (automatic plan, each tile shape, forced split), Winograd F(2x2, 3x3) with several GEMM tiles, fp16 precision with
//   the implicit GEMM and with cooperative matrices (each tile shape). Times are the GPU time of the convolution's
//   dispatches (per-dispatch timestamps), median of --repeats; the input is fp32 or fp16 as the previous layer would
//   leave it.
//   --variants keeps, besides the reference, the variants whose name holds one of the parts ("auto fp16,patch").
//   --pipeline-stats prints, after each variant, the driver's statistics of the convolution pipelines it compiled
//   (VulkanOptions::pipeline_statistics; NVIDIA's: registers, local memory for spills, shared memory).
// models: Tiny YOLO v2-VOC as a chain of operations, fused (conv2d_maxpool) and unfused, and the darknet cfgs
//   through Sequential, fp32 and fp16, with wall, command-buffer and dispatch-only GPU times, the fp16 outputs'
//   difference to fp32, and the per-dispatch profile of each.
// The last lines are a summary table. Every number is a median after warm-up.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "corgy/backends/vulkan/conv_plan.h"
#include "corgy/backends/vulkan/direct_conv.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/winograd_conv.h"
#include "corgy/corgy.h"

namespace {

using corgy::Shape;
using corgy::Variable;
using corgy::VulkanConvAlgorithm;

struct Settings {
  std::string device;
  int repeats = 9;
  int warmup = 2;
  std::string sections = "layers,models";
  std::vector<int> batches = {1, 64};
  std::string data = "data/darknet";
  std::string only_layers;  // run only the layer shapes whose name contains this (a quick check on a slow device)
  std::vector<std::string> only_variants;  // with the reference, only the variants whose name contains one of these
  bool pipeline_statistics = false;        // print the driver's statistics of each variant's convolution pipelines
  bool wants(const std::string& section) const { return sections.find(section) != std::string::npos; }
};

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

Variable random_variable(Shape shape, std::mt19937& rng, float scale = 1.0f) {
  Variable tensor(shape);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& value : tensor.values()) value = uniform(rng);
  return tensor;
}

/// max |a - b| over max |b|; NaN anywhere gives infinity.
double relative_error(const Variable& actual, const Variable& expected) {
  double magnitude = 1e-6;
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.count(); ++i) {
    const double a = actual.data()[i];
    const double e = expected.data()[i];
    if (!std::isfinite(a)) return INFINITY;
    magnitude = std::max(magnitude, std::abs(e));
    worst = std::max(worst, std::abs(a - e));
  }
  return worst / magnitude;
}

enum class PoolAfter { none, max_2_2, darknet_2_1 };

corgy::Pool2dDesc pool_desc(PoolAfter pool) {
  corgy::Pool2dDesc desc;
  if (pool == PoolAfter::darknet_2_1) {
    desc.stride_h = desc.stride_w = 1;
    desc.pad_bottom = desc.pad_right = 1;
  }
  return desc;
}

struct LayerShape {
  const char* model;
  int size, in, out, kernel;
  PoolAfter pool;

  corgy::Conv2dDesc desc() const {
    corgy::Conv2dDesc d;
    d.in_channels = in;
    d.out_channels = out;
    d.kernel = kernel;
    d.padding = kernel / 2;
    d.activation = kernel == 1 ? corgy::Activation::none() : corgy::Activation::leaky_relu();
    return d;
  }
  std::string name() const {
    const char* pool_name = pool == PoolAfter::max_2_2 ? " +pool" : pool == PoolAfter::darknet_2_1 ? " +pool/1" : "";
    return fmt::format("{} {}x{} {}->{} k{}{}", model, size, size, in, out, kernel, pool_name);
  }
  double flops(int batch) const { return 2.0 * batch * size * size * out * in * kernel * kernel; }
};

// Tiny YOLO v2-VOC's convolutions, then the shapes only YOLOv3-tiny has.
constexpr LayerShape layer_shapes[] = {
    {"v2", 416, 3, 16, 3, PoolAfter::max_2_2},
    {"v2", 208, 16, 32, 3, PoolAfter::max_2_2},
    {"v2", 104, 32, 64, 3, PoolAfter::max_2_2},
    {"v2", 52, 64, 128, 3, PoolAfter::max_2_2},
    {"v2", 26, 128, 256, 3, PoolAfter::max_2_2},
    {"v2", 13, 256, 512, 3, PoolAfter::darknet_2_1},
    {"v2", 13, 512, 1024, 3, PoolAfter::none},
    {"v2", 13, 1024, 1024, 3, PoolAfter::none},
    {"v2", 13, 1024, 125, 1, PoolAfter::none},
    {"v3", 13, 1024, 256, 1, PoolAfter::none},
    {"v3", 13, 256, 512, 3, PoolAfter::none},
    {"v3", 13, 512, 255, 1, PoolAfter::none},
    {"v3", 13, 256, 128, 1, PoolAfter::none},
    {"v3", 26, 384, 256, 3, PoolAfter::none},
    {"v3", 26, 256, 255, 1, PoolAfter::none},
    // 1x1 convolutions, each a GEMM on the tensor cores with B read as whole 16-byte units; run only when --layers
    // names them (--layers gemm; benchmarks/torch_conv_layers.py --models gemm times cuDNN on the same shapes).
    {"gemm", 32, 1024, 1024, 1, PoolAfter::none},
    {"gemm", 32, 2048, 2048, 1, PoolAfter::none},
    {"gemm", 56, 256, 256, 1, PoolAfter::none},
    {"gemm", 28, 512, 512, 1, PoolAfter::none},
    // VGG-16's convolutions at 224x224, a network the tables were not measured on; run only when --layers names
    // them (--layers vgg16), so that a default run stays Tiny YOLO's.
    {"vgg16", 224, 3, 64, 3, PoolAfter::none},
    {"vgg16", 224, 64, 64, 3, PoolAfter::max_2_2},
    {"vgg16", 112, 64, 128, 3, PoolAfter::none},
    {"vgg16", 112, 128, 128, 3, PoolAfter::max_2_2},
    {"vgg16", 56, 128, 256, 3, PoolAfter::none},
    {"vgg16", 56, 256, 256, 3, PoolAfter::none},
    {"vgg16", 28, 256, 512, 3, PoolAfter::none},
    {"vgg16", 28, 512, 512, 3, PoolAfter::none},
    {"vgg16", 14, 512, 512, 3, PoolAfter::none},
};

bool selected(const LayerShape& shape, const Settings& settings) {
  if (settings.only_layers.empty()) return std::string(shape.model) == "v2" || std::string(shape.model) == "v3";
  return shape.name().find(settings.only_layers) != std::string::npos;
}

struct Variant {
  std::string name;
  corgy::Precision precision;
  corgy::VulkanConvolutionOptions convolution;
  corgy::VulkanGemmTiles gemm_tiles{};  // Winograd's GEMMs (and im2col's)
};

std::vector<Variant> variants() {
  using corgy::Precision;
  std::vector<Variant> list = {
      {"im2col fp32 (reference)", Precision::fp32, {.algorithm = VulkanConvAlgorithm::im2col_gemm, .fuse_pool = false}},
      {"implicit fp32", Precision::fp32, {}},
      {"implicit fp32 unfused", Precision::fp32, {.fuse_pool = false}},
      {"implicit fp32 no split", Precision::fp32, {.split_k = 1}},
      {"direct fp32", Precision::fp32, {.algorithm = VulkanConvAlgorithm::direct}},
      {"direct fp16", Precision::fp16, {.algorithm = VulkanConvAlgorithm::direct}},
  };
  std::vector<corgy::VulkanGemmTiles> tiles;
  for (const auto& rated : corgy::vulkan::implicit_gemm_tile_choices()) tiles.push_back(rated.tiles);
  for (const corgy::VulkanGemmTiles t :
       {corgy::VulkanGemmTiles{128, 64, 16, 8, 4}, {64, 128, 32, 4, 8}, {128, 128, 16, 8, 8}, {64, 64, 32, 4, 4}}) {
    tiles.push_back(t);
  }
  for (const corgy::VulkanGemmTiles& t : tiles) {
    list.push_back({fmt::format("implicit fp32 {}x{}x{}/{}x{}", t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n),
                    Precision::fp32,
                    {.tiles = t}});
  }
  list.push_back({"winograd fp32", Precision::fp32, {.algorithm = VulkanConvAlgorithm::winograd}});
  for (const corgy::VulkanGemmTiles t :
       {corgy::VulkanGemmTiles{64, 128, 16, 4, 8}, {128, 128, 8, 8, 8}, {128, 64, 16, 8, 4}, {64, 64, 16, 4, 4}}) {
    list.push_back({fmt::format("winograd fp32 {}x{}x{}/{}x{}", t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n),
                    Precision::fp32,
                    {.algorithm = VulkanConvAlgorithm::winograd},
                    t});
  }
  list.push_back({"auto fp16", Precision::fp16, {}});
  list.push_back({"winograd fp16", Precision::fp16, {.algorithm = VulkanConvAlgorithm::winograd}});
  list.push_back({"implicit fp16", Precision::fp16, {.algorithm = VulkanConvAlgorithm::implicit_gemm}});
  list.push_back({"coopmat fp16", Precision::fp16, {.algorithm = VulkanConvAlgorithm::cooperative_matrix}});
  list.push_back({"patch coopmat fp16", Precision::fp16, {.algorithm = VulkanConvAlgorithm::patch_cooperative_matrix}});
  list.push_back({"coopmat fp16 unfused",
                  Precision::fp16,
                  {.algorithm = VulkanConvAlgorithm::cooperative_matrix, .fuse_pool = false}});
  list.push_back(
      {"coopmat fp16 no split", Precision::fp16, {.algorithm = VulkanConvAlgorithm::cooperative_matrix, .split_k = 1}});
  std::vector<corgy::VulkanCoopmatTiles> coopmat;
  for (const auto& rated : corgy::vulkan::coopmat_tile_choices()) coopmat.push_back(rated.tiles);
  // Beyond the table: longer K steps (fewer barriers) and larger subgroup tiles.
  const std::vector<corgy::VulkanCoopmatTiles> more_coopmat = {{4, 2, 2, 2, 64}, {2, 4, 2, 2, 64}, {2, 2, 2, 2, 64},
                                                               {4, 2, 2, 4, 32}, {2, 2, 4, 4, 32}, {2, 4, 4, 4, 32},
                                                               {4, 2, 4, 4, 32}};
  for (const corgy::VulkanCoopmatTiles& t : more_coopmat) coopmat.push_back(t);
  for (const corgy::VulkanCoopmatTiles& t : coopmat) {
    list.push_back(
        {fmt::format("coopmat fp16 {}x{}x{} ({}x{} warps)", t.tile_m(), t.tile_n(), t.tile_k, t.warps_m, t.warps_n),
         Precision::fp16,
         {.algorithm = VulkanConvAlgorithm::cooperative_matrix, .coopmat_tiles = t}});
  }
  // Winograd's GEMMs with the table's first shape and the longer K steps.
  for (const corgy::VulkanCoopmatTiles t :
       {corgy::VulkanCoopmatTiles{4, 2, 2, 2, 32}, {4, 2, 2, 2, 64}, {2, 4, 2, 2, 64}}) {
    list.push_back(
        {fmt::format("winograd fp16 {}x{}x{} ({}x{} warps)", t.tile_m(), t.tile_n(), t.tile_k, t.warps_m, t.warps_n),
         Precision::fp16,
         {.algorithm = VulkanConvAlgorithm::winograd, .coopmat_tiles = t}});
  }
  return list;
}

struct LayerResult {
  double ms = 0.0;
  double error = 0.0;
  std::string detail;
  bool ran = false;
  std::string failure;
};

struct LayerData {
  Variable input, weights, bias, reference;
  Shape conv_shape, output_shape;
};

/// Sums the GPU time of the dispatches that belong to the convolution (not the identity pool before it).
double convolution_ms(const corgy::VulkanBackend& vulkan, std::string* detail) {
  double ms = 0.0;
  for (const corgy::VulkanDispatchProfile& d : vulkan.dispatch_profile()) {
    if (d.operation == "pool2d") continue;
    ms += d.ms;
    if (detail && !d.detail.empty() && d.flops > 0) *detail = d.detail;
  }
  return ms;
}

// One layer on one backend: an identity pool turns the fp32 input into what the previous layer would have left
// (fp16 with fp16 precision), then the convolution (and its pool).
LayerResult run_layer(corgy::VulkanBackend& vulkan, const LayerShape& shape, LayerData& data, const Settings& settings,
                      bool is_reference) {
  const corgy::Conv2dDesc desc = shape.desc();
  corgy::Pool2dDesc identity;
  identity.kernel_h = identity.kernel_w = identity.stride_h = identity.stride_w = 1;
  Variable staged(data.input.shape());
  Variable output(data.output_shape);
  for (const Variable* constant : {&data.input, &data.weights, &data.bias}) vulkan.upload_constant(*constant);
  const auto forward = [&] {
    vulkan.begin_forward();
    vulkan.pool2d(identity, data.input, staged);
    if (shape.pool == PoolAfter::none) {
      vulkan.conv2d(desc, staged, data.weights, &data.bias, output);
    } else {
      vulkan.conv2d_maxpool(desc, pool_desc(shape.pool), staged, data.weights, &data.bias, output);
    }
    vulkan.end_forward();
  };
  LayerResult result;
  const std::uint64_t timed[] = {staged.storage()->id(), output.storage()->id()};
  vulkan.set_device_only(timed);
  vulkan.set_profiling(true);
  for (int i = 0; i < settings.warmup; ++i) forward();
  std::vector<double> times;
  for (int i = 0; i < settings.repeats; ++i) {
    forward();
    times.push_back(convolution_ms(vulkan, &result.detail));
  }
  result.ms = median(times);
  const std::uint64_t checked[] = {staged.storage()->id()};
  vulkan.set_device_only(checked);
  forward();
  if (is_reference) {
    data.reference = output.clone();
  } else {
    result.error = relative_error(output, data.reference);
  }
  result.ran = true;
  vulkan.set_device_only({});
  return result;
}

// The driver's statistics of the convolution pipelines a variant compiled (--pipeline-stats): registers, spills and
// shared memory say why a tile shape is slow where timings alone cannot.
void print_pipeline_statistics(const corgy::VulkanBackend& vulkan) {
  if (!vulkan.keeps_pipeline_statistics()) {
    fmt::print("  pipeline statistics: {} does not offer them (VK_KHR_pipeline_executable_properties)\n",
               vulkan.device().name);
    return;
  }
  for (const corgy::VulkanPipelineStatistics& pipeline : vulkan.pipeline_statistics()) {
    if (pipeline.kernel.find("conv2d") == std::string::npos && pipeline.kernel.find("winograd") == std::string::npos) {
      continue;
    }
    std::string constants;
    for (const auto& [id, value] : pipeline.constants) constants += fmt::format(" {}={}", id, value);
    std::string values;
    for (const auto& [name, value] : pipeline.values)
      values += fmt::format("{}{}: {}", values.empty() ? "" : ", ", name, value);
    fmt::print("  pipeline {} [constants{}]: {}\n", pipeline.kernel, constants, values);
  }
}

void benchmark_layers(const Settings& settings, std::vector<std::string>& summary) {
  const std::vector<Variant> list = variants();
  const std::size_t layers = std::size(layer_shapes);
  // data[layer][batch]
  std::vector<std::vector<LayerData>> data(layers);
  std::mt19937 rng(1);
  for (std::size_t l = 0; l < layers; ++l) {
    const LayerShape& s = layer_shapes[l];
    if (!selected(s, settings)) continue;
    for (int batch : settings.batches) {
      LayerData d;
      const float scale = 1.0f / std::sqrt(static_cast<float>(s.in * s.kernel * s.kernel));
      d.input = random_variable({batch, s.in, s.size, s.size}, rng);
      d.weights = random_variable({s.out, s.in, s.kernel, s.kernel}, rng, scale);
      d.bias = random_variable(Shape::vector(s.out), rng, 0.5f);
      d.conv_shape = {batch, s.out, s.size, s.size};
      const corgy::Pool2dDesc p = pool_desc(s.pool);
      d.output_shape =
          s.pool == PoolAfter::none ? d.conv_shape : Shape{batch, s.out, p.output_h(s.size), p.output_w(s.size)};
      data[l].push_back(std::move(d));
    }
  }
  // results[variant][layer][batch]
  std::vector<std::vector<std::vector<LayerResult>>> results(
      list.size(), std::vector<std::vector<LayerResult>>(layers, std::vector<LayerResult>(settings.batches.size())));
  for (std::size_t v = 0; v < list.size(); ++v) {
    const auto named = [&](const std::string& part) { return list[v].name.find(part) != std::string::npos; };
    if (v > 0 && !settings.only_variants.empty() &&
        std::none_of(settings.only_variants.begin(), settings.only_variants.end(), named)) {
      continue;
    }
    corgy::VulkanOptions options;
    options.device = settings.device;
    options.precision = list[v].precision;
    options.convolution = list[v].convolution;
    options.gemm_tiles = list[v].gemm_tiles;
    options.pipeline_statistics = settings.pipeline_statistics;
    corgy::VulkanBackend vulkan(options);
    const bool tensor_cores = list[v].convolution.algorithm == VulkanConvAlgorithm::cooperative_matrix ||
                              list[v].convolution.algorithm == VulkanConvAlgorithm::patch_cooperative_matrix;
    if (tensor_cores && !vulkan.cooperative_matrix()) {
      fmt::print("{}: skipped, the device has no cooperative matrices for fp16\n", list[v].name);
      continue;
    }
    for (std::size_t l = 0; l < layers; ++l) {
      if (!selected(layer_shapes[l], settings)) continue;
      if (list[v].convolution.algorithm == VulkanConvAlgorithm::direct &&
          !corgy::vulkan::direct_conv_fits(layer_shapes[l].desc())) {
        continue;
      }
      if (list[v].convolution.algorithm == VulkanConvAlgorithm::winograd &&
          !corgy::vulkan::winograd_fits(layer_shapes[l].desc())) {
        continue;
      }
      for (std::size_t b = 0; b < settings.batches.size(); ++b) {
        try {
          results[v][l][b] = run_layer(vulkan, layer_shapes[l], data[l][b], settings, v == 0);
        } catch (const corgy::Error& e) {
          results[v][l][b].failure = e.what();
        }
      }
    }
    fmt::print("variant done: {}\n", list[v].name);
    if (settings.pipeline_statistics) print_pipeline_statistics(vulkan);
    std::fflush(stdout);
  }
  // Per layer: every variant, ms and TFLOP/s per batch, error against the reference.
  for (std::size_t l = 0; l < layers; ++l) {
    const LayerShape& s = layer_shapes[l];
    if (!results[0][l][0].ran) continue;
    fmt::print("\n{}\n  {:<40}", s.name(), "variant");
    for (int batch : settings.batches)
      fmt::print(" {:>9} {:>7} {:>8}", fmt::format("b{} ms", batch), "TFLOP/s", "error");
    fmt::print("  plan (largest batch)\n");
    for (std::size_t v = 0; v < list.size(); ++v) {
      if (!results[v][l][0].ran && results[v][l][0].failure.empty()) continue;
      fmt::print("  {:<40}", list[v].name);
      for (std::size_t b = 0; b < settings.batches.size(); ++b) {
        const LayerResult& r = results[v][l][b];
        if (!r.ran) {
          fmt::print(" {:>9} {:>7} {:>8}", "failed", "", "");
          continue;
        }
        fmt::print(" {:>9.4f} {:>7.1f} {:>8.1e}", r.ms, s.flops(settings.batches[b]) / r.ms * 1e-9, r.error);
      }
      const LayerResult& last = results[v][l].back();
      fmt::print("  {}\n", last.ran ? last.detail : last.failure);
    }
  }
  // Summary: the reference, the automatic fp32 and fp16 plans and the best of each precision per layer.
  const auto find = [&](const std::string& name) {
    for (std::size_t v = 0; v < list.size(); ++v) {
      if (list[v].name == name) return v;
    }
    return std::size_t{0};
  };
  const std::size_t automatic32 = find("implicit fp32");
  const std::size_t automatic16 = find("auto fp16");
  const std::size_t storage16 = find("implicit fp16");
  for (std::size_t b = 0; b < settings.batches.size(); ++b) {
    summary.push_back(fmt::format("layers, batch {}: ms of the convolution dispatches (max error vs im2col fp32)",
                                  settings.batches[b]));
    summary.push_back(fmt::format("  {:<28} {:>14} {:>14} {:>14} {:>14} {:>30} {:>30}", "layer", "im2col fp32",
                                  "auto fp32", "fp16 implicit", "auto coopmat", "best fp32", "best fp16"));
    double totals[6] = {};
    for (std::size_t l = 0; l < layers; ++l) {
      if (!results[0][l][b].ran) continue;
      const auto cell = [&](std::size_t v) {
        const LayerResult& r = results[v][l][b];
        return r.ran ? fmt::format("{:.4f} ({:.0e})", r.ms, r.error) : std::string("-");
      };
      std::size_t best[2] = {0, 0};
      double best_ms[2] = {INFINITY, INFINITY};
      for (std::size_t v = 0; v < list.size(); ++v) {
        const LayerResult& r = results[v][l][b];
        const int half = list[v].precision == corgy::Precision::fp16 ? 1 : 0;
        const double bound = half ? 2e-2 : 1e-4;
        if (r.ran && r.error <= bound && r.ms < best_ms[half]) {
          best_ms[half] = r.ms;
          best[half] = v;
        }
      }
      const std::size_t columns[] = {0, automatic32, storage16, automatic16};
      for (int c = 0; c < 4; ++c) totals[c] += results[columns[c]][l][b].ms;
      totals[4] += std::isfinite(best_ms[0]) ? best_ms[0] : 0.0;
      totals[5] += std::isfinite(best_ms[1]) ? best_ms[1] : 0.0;
      summary.push_back(fmt::format("  {:<28} {:>14} {:>14} {:>14} {:>14} {:>30} {:>30}", layer_shapes[l].name(),
                                    cell(0), cell(automatic32), cell(storage16), cell(automatic16),
                                    fmt::format("{:.4f} {}", best_ms[0], list[best[0]].name.substr(9)),
                                    fmt::format("{:.4f} {}", best_ms[1], list[best[1]].name.substr(8))));
    }
    summary.push_back(fmt::format("  {:<28} {:>14.3f} {:>14.3f} {:>14.3f} {:>14.3f} {:>30.3f} {:>30.3f}", "sum",
                                  totals[0], totals[1], totals[2], totals[3], totals[4], totals[5]));
  }
}

// ---- models ---------------------------------------------------------------------------------------------------

struct ModelTiming {
  double wall_ms = 0.0, gpu_ms = 0.0, compute_ms = 0.0;
  int dispatches = 0, barriers = 0;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

ModelTiming time_runs(const corgy::VulkanBackend& vulkan, const Settings& settings, int repeats,
                      const std::function<void()>& forward) {
  const auto warm = Clock::now();
  for (int i = 0; i < settings.warmup || ms_since(warm) < 300.0; ++i) forward();
  std::vector<double> wall, gpu, compute;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    forward();
    wall.push_back(ms_since(start));
    gpu.push_back(vulkan.stats().last_gpu_ms);
    compute.push_back(vulkan.stats().last_compute_ms);
  }
  return {median(wall), median(gpu), median(compute), vulkan.stats().last_dispatches, vulkan.stats().last_barriers};
}

void print_profile(const std::string& title, const corgy::VulkanBackend& vulkan) {
  fmt::print("\nprofile: {}\n  {:>5} {:<16} {:<28} {:<40} {:>9} {:>8}\n", title, "layer", "operation", "kernel", "plan",
             "ms", "TFLOP/s");
  double total = 0.0;
  for (const corgy::VulkanDispatchProfile& d : vulkan.dispatch_profile()) {
    total += d.ms;
    fmt::print("  {:>5} {:<16} {:<28} {:<40} {:>9.4f} {:>8.2f}\n", d.layer, d.operation, d.kernel, d.detail, d.ms,
               d.flops > 0 && d.ms > 0 ? d.flops / d.ms * 1e-9 : 0.0);
  }
  fmt::print("  sum of dispatches {:.4f} ms\n", total);
}

// Tiny YOLO v2-VOC as operations: nine convolutions, six max pools (the sixth darknet's 2/1).
struct ChainLayer {
  corgy::Conv2dDesc conv;
  PoolAfter pool;
  Variable weights, bias;
};

std::vector<ChainLayer> tiny_yolo_v2_chain(std::mt19937& rng) {
  std::vector<ChainLayer> chain;
  for (const LayerShape& s : layer_shapes) {
    if (std::string(s.model) != "v2") continue;
    const float scale = 1.0f / std::sqrt(static_cast<float>(s.in * s.kernel * s.kernel));
    chain.push_back({s.desc(), s.pool, random_variable({s.out, s.in, s.kernel, s.kernel}, rng, scale),
                     random_variable(Shape::vector(s.out), rng, 0.5f)});
  }
  return chain;
}

void benchmark_models(const Settings& settings, std::vector<std::string>& summary) {
  std::mt19937 rng(7);
  const std::vector<ChainLayer> chain = tiny_yolo_v2_chain(rng);
  summary.push_back(
      "models: wall / command buffer GPU / dispatches-only GPU ms (dispatches, barriers); fp16 error "
      "= max |fp16 - fp32| / max |fp32|");
  struct Config {
    std::string name;
    corgy::Precision precision;
    corgy::VulkanConvolutionOptions convolution;
  };
  const std::vector<Config> configs = {
      {"fp32 im2col (old path)",
       corgy::Precision::fp32,
       {.algorithm = VulkanConvAlgorithm::im2col_gemm, .fuse_pool = false}},
      {"fp32", corgy::Precision::fp32, {}},
      {"fp16 implicit", corgy::Precision::fp16, {.algorithm = VulkanConvAlgorithm::implicit_gemm}},
      {"fp16", corgy::Precision::fp16, {}},
  };
  for (int batch : settings.batches) {
    const int repeats = batch >= 32 ? std::max(5, settings.repeats / 2) : settings.repeats * 3;
    const Variable input = random_variable({batch, 3, 416, 416}, rng);
    // The chain, fused and unfused, through the backend's operations.
    std::map<std::string, Variable> fp32_outputs;
    for (const Config& config : configs) {
      for (const bool fused : {true, false}) {
        // Unfused only where fusing is the question: the automatic plans.
        if (!fused && config.convolution.algorithm != VulkanConvAlgorithm::automatic) continue;
        corgy::VulkanOptions options;
        options.device = settings.device;
        options.precision = config.precision;
        options.convolution = config.convolution;
        options.convolution.fuse_pool = fused && config.convolution.fuse_pool;
        corgy::VulkanBackend vulkan(options);
        if (config.precision == corgy::Precision::fp16 &&
            config.convolution.algorithm == VulkanConvAlgorithm::automatic && !vulkan.cooperative_matrix()) {
          summary.push_back(
              fmt::format("  v2 chain b{} {}: no cooperative matrices on this device", batch, config.name));
        }
        for (const ChainLayer& layer : chain) {
          vulkan.upload_constant(layer.weights);
          vulkan.upload_constant(layer.bias);
        }
        std::vector<Variable> outputs;
        Shape shape = input.shape();
        for (const ChainLayer& layer : chain) {
          shape = {batch, layer.conv.out_channels, layer.conv.output_size(shape.h), layer.conv.output_size(shape.w)};
          if (layer.pool != PoolAfter::none) {
            const corgy::Pool2dDesc p = pool_desc(layer.pool);
            shape = {batch, shape.c, p.output_h(shape.h), p.output_w(shape.w)};
          }
          outputs.emplace_back(shape);
        }
        std::vector<std::uint64_t> device_only;
        for (std::size_t i = 0; i + 1 < outputs.size(); ++i) device_only.push_back(outputs[i].storage()->id());
        vulkan.set_device_only(device_only);
        const auto forward = [&] {
          vulkan.begin_forward();
          const Variable* x = &input;
          for (std::size_t i = 0; i < chain.size(); ++i) {
            vulkan.begin_layer(static_cast<int>(i));
            const ChainLayer& layer = chain[i];
            if (layer.pool == PoolAfter::none) {
              vulkan.conv2d(layer.conv, *x, layer.weights, &layer.bias, outputs[i]);
            } else {
              vulkan.conv2d_maxpool(layer.conv, pool_desc(layer.pool), *x, layer.weights, &layer.bias, outputs[i]);
            }
            x = &outputs[i];
          }
          vulkan.end_forward();
        };
        vulkan.set_profiling(false);
        const ModelTiming t = time_runs(vulkan, settings, repeats, forward);
        vulkan.set_profiling(true);
        forward();
        const std::string name = fmt::format("v2 chain b{} {}{}", batch, config.name, fused ? " fused" : " unfused");
        print_profile(name, vulkan);
        std::string error;
        if (config.precision == corgy::Precision::fp32 &&
            config.convolution.algorithm == VulkanConvAlgorithm::automatic && fused) {
          fp32_outputs[std::to_string(batch)] = outputs.back().clone();
        } else if (config.precision == corgy::Precision::fp16 && fp32_outputs.contains(std::to_string(batch))) {
          error =
              fmt::format("  fp16 error {:.1e}", relative_error(outputs.back(), fp32_outputs[std::to_string(batch)]));
        }
        summary.push_back(fmt::format("  {:<44} {:>8.3f} / {:>8.3f} / {:>8.3f} ms ({} dispatches, {} barriers){}", name,
                                      t.wall_ms, t.gpu_ms, t.compute_ms, t.dispatches, t.barriers, error));
        std::fflush(stdout);
      }
    }
    // The darknet cfgs through Sequential, as model_benchmark runs them.
    for (const char* cfg : {"yolov2-tiny-voc", "yolov3-tiny"}) {
      corgy::DarknetModel net =
          corgy::build_darknet_model(corgy::read_darknet_cfg(fmt::format("{}/{}.cfg", settings.data, cfg)));
      corgy::load_darknet_weights(net, corgy::random_darknet_weights(net, 1), "random weights");
      const Variable image = random_variable(net.input_shape(batch), rng, 0.5f);
      std::vector<Variable> reference;
      // At small batches also the choices that trade GPU time for dispatches or host time: how the forward
      // waits for the GPU, and how far K may be split.
      struct ModelVariant {
        const char* name;
        int spin_wait_us;
        std::uint32_t split_k;
        std::uint32_t most_splits;
      };
      std::vector<ModelVariant> model_variants{{"", corgy::VulkanOptions{}.spin_wait_us, 0, 0}};
      if (batch <= 8) {
        model_variants.insert(model_variants.end(), {{" blocking wait", 0, 0, 0},
                                                     {" splits<=4", corgy::VulkanOptions{}.spin_wait_us, 0, 4},
                                                     {" splits<=2", corgy::VulkanOptions{}.spin_wait_us, 0, 2},
                                                     {" no split", corgy::VulkanOptions{}.spin_wait_us, 1, 0}});
      }
      for (const corgy::Precision precision : {corgy::Precision::fp32, corgy::Precision::fp16}) {
        for (const ModelVariant& variant : model_variants) {
          corgy::VulkanOptions options;
          options.device = settings.device;
          options.precision = precision;
          options.spin_wait_us = variant.spin_wait_us;
          options.convolution.split_k = variant.split_k;
          options.convolution.most_splits = variant.most_splits;
          auto owned = std::make_unique<corgy::VulkanBackend>(options);
          corgy::VulkanBackend& vulkan = *owned;
          net.model.set_backend(std::move(owned));
          std::vector<const Variable*> heads;
          const ModelTiming t = time_runs(vulkan, settings, repeats, [&] { heads = net.forward(image); });
          std::string error;
          if (precision == corgy::Precision::fp32 && reference.empty()) {
            for (const Variable* head : heads) reference.push_back(head->clone());
          } else if (precision == corgy::Precision::fp16) {
            double worst = 0.0;
            for (std::size_t h = 0; h < heads.size(); ++h)
              worst = std::max(worst, relative_error(*heads[h], reference[h]));
            error = fmt::format("  fp16 error {:.1e}", worst);
          }
          vulkan.set_profiling(true);
          net.forward(image);
          const std::string name = fmt::format("{} Sequential b{} {}{}", cfg, batch,
                                               precision == corgy::Precision::fp16 ? "fp16" : "fp32", variant.name);
          print_profile(name, vulkan);
          summary.push_back(fmt::format("  {:<44} {:>8.3f} / {:>8.3f} / {:>8.3f} ms ({} dispatches, {} barriers){}",
                                        name, t.wall_ms, t.gpu_ms, t.compute_ms, t.dispatches, t.barriers, error));
          std::fflush(stdout);
        }
      }
    }
  }
}

Settings parse(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--device" && has_value) {
      settings.device = argv[++i];
    } else if (arg == "--repeats" && has_value) {
      settings.repeats = std::max(1, std::stoi(argv[++i]));
    } else if (arg == "--sections" && has_value) {
      settings.sections = argv[++i];
    } else if (arg == "--layers" && has_value) {
      settings.only_layers = argv[++i];
    } else if (arg == "--variants" && has_value) {
      std::string list = argv[++i];
      for (std::size_t start = 0; start < list.size();) {
        const std::size_t comma = list.find(',', start);
        settings.only_variants.push_back(list.substr(start, comma - start));
        start = comma == std::string::npos ? list.size() : comma + 1;
      }
    } else if (arg == "--pipeline-stats") {
      settings.pipeline_statistics = true;
    } else if (arg == "--data" && has_value) {
      settings.data = argv[++i];
    } else if (arg == "--batches" && has_value) {
      settings.batches.clear();
      std::string list = argv[++i];
      for (std::size_t start = 0; start < list.size();) {
        const std::size_t comma = list.find(',', start);
        settings.batches.push_back(std::stoi(list.substr(start, comma - start)));
        start = comma == std::string::npos ? list.size() : comma + 1;
      }
    } else {
      throw corgy::Error(
          fmt::format("vulkan_conv_benchmark: unknown argument '{}'; usage: vulkan_conv_benchmark "
                      "[--device D] [--repeats N] [--sections layers,models] [--batches 1,64] "
                      "[--layers NAME-PART] [--variants PART,PART] [--pipeline-stats] [--data data/darknet]",
                      arg));
    }
  }
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Settings settings = parse(argc, argv);
    corgy::VulkanOptions probe_options;
    probe_options.device = settings.device;
    probe_options.precision = corgy::Precision::fp16;
    const corgy::VulkanBackend probe(probe_options);
    const corgy::VulkanDeviceInfo& device = probe.device();
    fmt::print("Device: {} ({}), driver {}, Vulkan {}; fp16 storage {}, cooperative matrices {}\n", device.name,
               device.type, device.driver, device.api_version,
               probe.precision() == corgy::Precision::fp16 ? "yes" : "no", probe.cooperative_matrix() ? "yes" : "no");
    std::vector<std::string> summary;
    if (settings.wants("layers")) {
      benchmark_layers(settings, summary);
      fmt::print("\n----- layers summary -----\n");
      for (const std::string& line : summary) fmt::print("{}\n", line);
    }
    if (settings.wants("models")) {
      try {
        benchmark_models(settings, summary);
      } catch (const corgy::Error& e) {
        summary.push_back(fmt::format("models: stopped by an error: {}", e.what()));
      }
    }
    fmt::print("\n===== summary ({}, {}) =====\n", device.name, device.driver);
    for (const std::string& line : summary) fmt::print("{}\n", line);
  } catch (const corgy::Error& e) {
    fmt::print(stderr, "vulkan_conv_benchmark: {}\n", e.what());
    return 1;
  }
  return 0;
}
