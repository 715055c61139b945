// model_benchmark: times whole-model forwards end to end (input in host memory -> outputs in host memory) on one
// backend, as benchmarks/run.sh needs them: warm-up, N timed forwards, median / min / max, GFLOP/s, and on Vulkan
// the GPU time of each forward from timestamp queries. Prints one JSON object per run on stdout.
//
//   model_benchmark --cfg data/darknet/yolov3-tiny.cfg --random-weights 1 --input x.npy --backend blas --threads 1
//                   --repeat 20 [--warmup 2] [--warmup-ms 200] [--output PREFIX]
//   model_benchmark --mnist data/mnist --input digits.npy --backend vulkan:0 --repeat 50
//   model_benchmark --style-transfer data/style_transfer/weights --input photo512.npy --backend blas
//   model_benchmark --onnx resnet18.onnx --input images.npy --backend blas --repeat 20   (every graph output)
//   model_benchmark --cfg FILE --random-weights SEED --write-weights FILE   (the .weights the peers load)
//   model_benchmark --list-devices                                         (Vulkan devices, JSON)
//   model_benchmark ... --profile      (then a table: each layer's algorithm, ms, GFLOP/s and % of the FMA peak)
//   model_benchmark ... --forward-times   (every timed forward's ms too, in order: "forward_ms")
//   model_benchmark ... --backend vulkan --no-tuning | --tuning-cache FILE   (static tables | where tuning is kept)
#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "corgy/backends/cpu/fma_peak.h"
#include "corgy/corgy.h"
#include "corgy/model/profile.h"
#if CORGY_HAS_VULKAN
#include "corgy/backends/vulkan/vulkan_backend.h"
#endif

namespace {

/// The command line.
struct Options {
  std::string cfg;
  std::optional<std::uint32_t> random_weights;
  std::string mnist;
  std::string style_transfer;
  std::string onnx;
  std::string input;
  std::string backend;
  int threads = 0;
  int repeat = 10;
  int warmup = 1;
  int warmup_ms = 0;
  std::string output;
  std::string write_weights;
  bool list_devices = false;
  bool profile = false;
  bool forward_times = false;
  bool no_tuning = false;
  std::string tuning_cache;
  double peak_gflops = 0.0;
  std::string peak_label;
};

/// A JSON string literal; device and file names are the only free text written.
std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) quoted += c;
  }
  return quoted + "\"";
}

/// A darknet cfg with random weights, or the MNIST network: what is timed and which tensors it yields.
class Network {
 public:
  virtual ~Network() = default;
  virtual corgy::Sequential& sequential() = 0;
  virtual std::vector<const corgy::Variable*> forward(const corgy::Variable& input) = 0;
};

class DarknetNetwork final : public Network {
 public:
  DarknetNetwork(const std::string& cfg, std::uint32_t seed)
      : net_(corgy::build_darknet_model(corgy::read_darknet_cfg(cfg))) {
    corgy::load_darknet_weights(net_, corgy::random_darknet_weights(net_, seed), "random weights");
  }
  corgy::Sequential& sequential() override { return net_.model; }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override { return net_.forward(input); }

 private:
  corgy::DarknetModel net_;
};

class MnistNetwork final : public Network {
 public:
  explicit MnistNetwork(const std::string& directory) : model_(corgy::load_mnist_model(directory)) {}
  corgy::Sequential& sequential() override { return model_; }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    model_.forward(input);
    return {&model_.output(corgy::MnistLayers::fc1)};
  }

 private:
  corgy::Sequential model_;
};

/// The trained style network of data/style_transfer, rendering an even blend of its first two styles (a blend
/// costs what one style costs: the mix is made on the host when it is set).
class StyleTransferNetwork final : public Network {
 public:
  explicit StyleTransferNetwork(const std::string& directory) : model_(corgy::StyleTransferModel::load(directory)) {
    std::vector<float> blend(model_.style_names().size(), 0.0f);
    blend[0] = 0.5f;
    blend[blend.size() > 1 ? 1 : 0] += 0.5f;
    model_.set_style(blend);
  }
  corgy::Sequential& sequential() override { return model_.network(); }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    return {&model_.stylise(input)};
  }

 private:
  corgy::StyleTransferModel model_;
};

class OnnxNetwork final : public Network {
 public:
  explicit OnnxNetwork(const std::string& path) : net_(corgy::load_onnx(path)) {}
  corgy::Sequential& sequential() override { return net_.model; }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    net_.forward(input);
    std::vector<const corgy::Variable*> outputs;
    for (std::size_t k = 0; k < net_.outputs.size(); ++k) outputs.push_back(&net_.output(k));
    return outputs;
  }

 private:
  corgy::OnnxModel net_;
};

struct Summary {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

Summary summarize(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  const double median = values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
  return {median, values.front(), values.back()};
}

/// The GPU time of the last forward when the backend is Vulkan and has timestamp queries (its whole command buffer,
/// or with `dispatches_only` its dispatches without the copies of host tensors, comparable with a framework's forward
/// on an input already on the GPU); 0 otherwise.
double last_gpu_ms([[maybe_unused]] corgy::Backend& backend, [[maybe_unused]] bool dispatches_only = false) {
#if CORGY_HAS_VULKAN
  if (const auto* vulkan = dynamic_cast<const corgy::VulkanBackend*>(&backend)) {
    return dispatches_only ? vulkan->stats().last_compute_ms : vulkan->stats().last_gpu_ms;
  }
#endif
  return 0.0;
}

/// The Vulkan backend's convolution tuning so far, as JSON fields (zeros on the CPU backends): the shapes whose
/// candidates were timed, those planned from the cache file, the candidates timed, the host time it took (part of
/// first_ms) and of that the timed runs', and the pipelines the driver compiled (for the forward and the tuning).
std::string tuning_fields([[maybe_unused]] corgy::Backend& backend) {
  std::uint64_t timed = 0, cached = 0, candidates = 0, pipelines = 0;
  double ms = 0.0, timing_ms = 0.0, compile_ms = 0.0;
#if CORGY_HAS_VULKAN
  if (const auto* vulkan = dynamic_cast<const corgy::VulkanBackend*>(&backend)) {
    const corgy::VulkanStats& stats = vulkan->stats();
    timed = stats.conv_plans_timed;
    cached = stats.conv_plans_from_cache;
    candidates = stats.conv_candidates_timed;
    ms = stats.tuning_ms;
    timing_ms = stats.tuning_timing_ms;
    pipelines = stats.pipelines_compiled;
    compile_ms = stats.pipeline_compile_ms;
  }
#endif
  return fmt::format(
      "\"tuned_plans\": {}, \"cached_plans\": {}, \"tuned_candidates\": {}, \"tuning_ms\": {:.1f}, "
      "\"tuning_timing_ms\": {:.1f}, \"pipelines_compiled\": {}, \"pipeline_compile_ms\": {:.1f}",
      timed, cached, candidates, ms, timing_ms, pipelines, compile_ms);
}

/// What the backend runs on: the Vulkan device, or OpenBLAS's kernel family for blas.
std::string device_of([[maybe_unused]] corgy::Backend& backend) {
#if CORGY_HAS_VULKAN
  if (const auto* vulkan = dynamic_cast<const corgy::VulkanBackend*>(&backend)) {
    const corgy::VulkanDeviceInfo& device = vulkan->device();
    return fmt::format("{} ({}, {}{})", device.name, device.type, device.driver,
                       vulkan->zero_copy() ? ", zero-copy" : ", staging");
  }
#endif
  // blas:im2col convolves with OpenBLAS's kernels; blas with corgy's own (the widest ISA cpuid reports), and uses
  // OpenBLAS only for Linear.
  if (backend.name() == "blas:im2col") return fmt::format("OpenBLAS {}", openblas_get_corename());
  if (backend.name().starts_with("blas")) return fmt::format("corgy {}", corgy::isa_name(corgy::widest_cpu_isa()));
  return "CPU";
}

struct Timings {
  int warmups = 0;
  double first_ms = 0.0;
  std::vector<double> wall_ms;
  std::vector<double> gpu_ms;
  std::vector<double> compute_ms;
  /// The tensors of the last forward, valid until the next one.
  std::vector<const corgy::Variable*> outputs;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Timings time_forwards(Network& network, const corgy::Variable& input, const Options& options) {
  Timings timings;
  // The first forward sets up (memory plan, weight upload, pipelines: seconds on a GPU) and is reported apart as
  // first_ms; the warm-up time counts from its end, so that a slow setup does not eat the warm forwards a GPU
  // needs to reach its clocks.
  auto warm_start = Clock::now();
  while (timings.warmups < options.warmup || (options.warmup_ms > 0 && timings.warmups == 0) ||
         ms_since(warm_start) < options.warmup_ms) {
    const auto start = Clock::now();
    timings.outputs = network.forward(input);
    if (timings.warmups++ == 0) {
      timings.first_ms = ms_since(start);
      warm_start = Clock::now();
    }
  }
  corgy::Backend& backend = network.sequential().backend();
  for (int i = 0; i < options.repeat; ++i) {
    const auto start = Clock::now();
    timings.outputs = network.forward(input);
    timings.wall_ms.push_back(ms_since(start));
    if (i == 0 && timings.warmups == 0) timings.first_ms = timings.wall_ms.back();
    timings.gpu_ms.push_back(last_gpu_ms(backend));
    timings.compute_ms.push_back(last_gpu_ms(backend, true));
  }
  return timings;
}

void write_outputs(const std::vector<const corgy::Variable*>& outputs, const std::string& prefix) {
  for (std::size_t k = 0; k < outputs.size(); ++k) corgy::save_npy(fmt::format("{}.{}.npy", prefix, k), *outputs[k]);
}

/// The model's name in the results: the cfg, "mnist", "style<side>" (style256, style512) for the style
/// network, or the ONNX file's name without ".onnx".
std::string model_name(const Options& options, const corgy::Variable& input) {
  if (!options.style_transfer.empty()) return fmt::format("style{}", input.shape().w);
  if (!options.onnx.empty()) return std::filesystem::path(options.onnx).stem().string();
  return options.mnist.empty() ? options.cfg : "mnist";
}

/// The process's peak resident memory so far (MB): the model's weights as loaded and planned, the intermediates,
/// and the program itself, as the kernel counts them (getrusage).
double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

void print_result(const Options& options, Network& network, const corgy::Variable& input, const Timings& timings) {
  corgy::Backend& backend = network.sequential().backend();
  const Summary wall = summarize(timings.wall_ms);
  const Summary gpu = summarize(timings.gpu_ms);
  const Summary compute = summarize(timings.compute_ms);
  const double gflop = network.sequential().flops(input.shape()) / 1e9;
  fmt::print(
      "{{\"model\": {}, \"batch\": {}, \"backend\": {}, \"device\": {}, \"threads\": {}, \"warmups\": {}, "
      "\"repeat\": {}, \"first_ms\": {:.4f}, \"median_ms\": {:.4f}, \"min_ms\": {:.4f}, \"max_ms\": {:.4f}, "
      "\"gpu_median_ms\": {:.4f}, \"gpu_min_ms\": {:.4f}, \"gpu_max_ms\": {:.4f}, \"compute_median_ms\": {:.4f}, "
      "\"gflop\": {:.6f}, \"gflops\": {:.3f}, \"peak_rss_mb\": {:.1f}, {}{}}}\n",
      json_string(model_name(options, input)), input.shape().n, json_string(options.backend),
      json_string(device_of(backend)), backend.threads(), timings.warmups, timings.wall_ms.size(), timings.first_ms,
      wall.median, wall.min, wall.max, gpu.median, gpu.min, gpu.max, compute.median, gflop, gflop / (wall.median / 1e3),
      peak_rss_mb(), tuning_fields(backend),
      options.forward_times ? fmt::format(", \"forward_ms\": [{:.4f}]", fmt::join(timings.wall_ms, ", ")) : "");
}

/// Profiles `repeat` more forwards and prints the per-layer table, against the FMA peak of as many threads as the
/// backend uses (measured now, the best of several tries).
void print_profile(const Options& options, Network& network, const corgy::Variable& input) {
  corgy::Sequential& model = network.sequential();
  const std::vector<corgy::LayerProfile> rows = corgy::profile_forward(model, input, options.repeat);
  if (rows.empty()) {
    fmt::print("backend {} does not profile\n", model.backend().name());
    return;
  }
  const corgy::CpuIsa isa = corgy::widest_cpu_isa();
  const int threads = std::max(1, model.backend().threads());
  double peak = 0.0;
  std::string label = "unknown (no AVX2)";
  if (options.peak_gflops > 0.0) {
    // A GPU's peak comes from outside (benchmarks/run.sh measures the GPU's own GEMM libraries in the same run).
    peak = options.peak_gflops;
    label = fmt::format("{}: {:.0f} GFLOP/s", options.peak_label.empty() ? "given" : options.peak_label, peak);
  } else if (model.backend().name() == "vulkan") {
    label = "none given (--peak-gflops)";
  } else if (isa != corgy::CpuIsa::generic) {
    peak = corgy::fma_peak_gflops(isa, threads, 5, 5'000'000);
    label = fmt::format("{} FMA peak of {} thread{}, measured now: {:.1f} GFLOP/s", corgy::isa_name(isa), threads,
                        threads == 1 ? "" : "s", peak);
  }
  fmt::print("{}", corgy::format_profile(rows, peak, label));
}

void list_devices() {
  std::string list;
#if CORGY_HAS_VULKAN
  for (const corgy::VulkanDeviceInfo& device : corgy::vulkan_devices()) {
    list += fmt::format("{}{{\"index\": {}, \"name\": {}, \"type\": {}, \"driver\": {}, \"api\": {}}}",
                        list.empty() ? "" : ", ", device.index, json_string(device.name), json_string(device.type),
                        json_string(device.driver), json_string(device.api_version));
  }
#endif
  fmt::print("[{}]\n", list);
}

void write_random_weights(const Options& options) {
  const corgy::DarknetModel net = corgy::build_darknet_model(corgy::read_darknet_cfg(options.cfg));
  const std::vector<std::byte> bytes = corgy::random_darknet_weights(net, *options.random_weights);
  std::ofstream file(options.write_weights, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!file.flush()) throw corgy::Error(fmt::format("{}: cannot write {} bytes", options.write_weights, bytes.size()));
}

std::unique_ptr<Network> make_network(const Options& options) {
  if (!options.mnist.empty()) return std::make_unique<MnistNetwork>(options.mnist);
  if (!options.style_transfer.empty()) return std::make_unique<StyleTransferNetwork>(options.style_transfer);
  if (!options.onnx.empty()) return std::make_unique<OnnxNetwork>(options.onnx);
  return std::make_unique<DarknetNetwork>(options.cfg, *options.random_weights);
}

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Times whole-model forwards on one backend (warm-up, then timed forwards: median / min / max, GFLOP/s, GPU "
      "time on Vulkan) and prints one JSON object on stdout.");
  CLI::Option* cfg = app.add_option("--cfg", options.cfg, "darknet cfg of the model (with --random-weights)")
                         ->check(CLI::ExistingFile);
  CLI::Option* seed =
      app.add_option("--random-weights", options.random_weights, "seed of the deterministic random darknet weights");
  CLI::Option* mnist = app.add_option("--mnist", options.mnist, "folder of the trained MNIST model (data/mnist)")
                           ->check(CLI::ExistingDirectory);
  CLI::Option* onnx = app.add_option("--onnx", options.onnx,
                                     "an ONNX model (ResNet-18, MobileNetV2 exported from "
                                     "PyTorch: benchmarks/run.sh)")
                          ->check(CLI::ExistingFile);
  CLI::Option* style =
      app.add_option(
             "--style-transfer", options.style_transfer,
             "folder of the trained style network (data/style_transfer/weights); renders a blend of styles 0 and 1")
          ->check(CLI::ExistingDirectory);
  cfg->needs(seed);
  cfg->excludes(mnist);
  cfg->excludes(style);
  mnist->excludes(style);
  cfg->excludes(onnx);
  mnist->excludes(onnx);
  style->excludes(onnx);
  app.add_option("--input", options.input, "float32 NCHW input (.npy); its N is the batch")->check(CLI::ExistingFile);
  app.add_option("--backend", options.backend,
                 "naive, blas, blas:im2col, vulkan, vulkan:<index> or vulkan:<part of the device name>; vulkan "
                 "with +fp16 for fp16 precision (vulkan+fp16, vulkan:0+fp16)");
  app.add_option("--threads", options.threads, "CPU threads of the CPU backends, 0 = all cores")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--repeat", options.repeat, "timed forwards")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--warmup", options.warmup, "untimed forwards first, at least this many ...")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--warmup-ms", options.warmup_ms,
                 "... and until this many milliseconds have passed after the first (a GPU needs ~200)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option(
      "--output", options.output,
      "after timing, write the raw head inputs (darknet), the logits (MNIST), the image (style) or the graph "
      "outputs (ONNX) as PREFIX.<k>.npy");
  app.add_flag("--forward-times", options.forward_times,
               "also list every timed forward's wall time (forward_ms), in order: whether a process's forwards "
               "settle, drift or jump between two speeds, which its median alone hides");
  app.add_flag("--profile", options.profile,
               "after timing, profile --repeat more forwards and print each layer's algorithm, ms, GFLOP/s and % of "
               "the FMA peak");
  app.add_option("--peak-gflops", options.peak_gflops,
                 "the peak --profile's '% of peak' is of (a GPU's, measured elsewhere); default: the CPU's FMA peak, "
                 "measured now")
      ->check(CLI::PositiveNumber);
  app.add_option("--peak-label", options.peak_label, "what --peak-gflops is, for the profile's heading");
  app.add_option("--write-weights", options.write_weights,
                 "write the deterministic random .weights of --random-weights for --cfg to this file and exit")
      ->needs(cfg);
  app.add_flag("--no-tuning", options.no_tuning,
               "vulkan: the static tables' convolution plans, without timing candidates (BackendOptions::tuning)");
  app.add_option("--tuning-cache", options.tuning_cache,
                 "the tuning cache file (default: $XDG_CACHE_HOME/corgy/vulkan-tuning-<device>.jsonl on vulkan, "
                 "blas-tuning-<CPU>.jsonl on blas)");
  app.add_flag("--list-devices", options.list_devices, "print the Vulkan devices as JSON and exit");
}

int run(const Options& options) {
  if (options.list_devices) {
    list_devices();
    return 0;
  }
  if (!options.write_weights.empty()) {
    write_random_weights(options);
    return 0;
  }
  if (options.cfg.empty() && options.mnist.empty() && options.style_transfer.empty() && options.onnx.empty())
    throw corgy::Error("a model is required: --cfg FILE, --mnist DIR, --style-transfer DIR or --onnx FILE");
  if (options.input.empty() || options.backend.empty()) throw corgy::Error("--input and --backend are required");
  const std::unique_ptr<Network> network = make_network(options);
  network->sequential().set_backend(corgy::make_backend(
      options.backend,
      {.threads = options.threads, .tuning = !options.no_tuning, .tuning_cache = options.tuning_cache}));
  const corgy::Variable input = corgy::load_npy(options.input);
  const Timings timings = time_forwards(*network, input, options);
  print_result(options, *network, input, timings);
  if (!options.output.empty()) write_outputs(timings.outputs, options.output);
  if (options.profile) print_profile(options, *network, input);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"model_benchmark"};
  Options options;
  define_options(app, options);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "model_benchmark: {}\n", e.what());
    return 1;
  }
}
