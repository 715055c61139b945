// model_benchmark: times whole-model forwards end to end (input in host memory -> outputs in host memory) on one
// backend, as benchmarks/run.sh needs them: warm-up, N timed forwards, median / min / max, GFLOP/s, and on Vulkan
// the GPU time of each forward from timestamp queries. Prints one JSON object per run on stdout.
//
//   model_benchmark --cfg data/darknet/yolov3-tiny.cfg --random-weights 1 --input x.npy --backend blas --threads 1
//                   --repeat 20 [--warmup 2] [--warmup-ms 200] [--output PREFIX]
//   model_benchmark --mnist data/mnist --input digits.npy --backend vulkan:0 --repeat 50
//   model_benchmark --cfg FILE --random-weights SEED --write-weights FILE   (the .weights the peers load)
//   model_benchmark --list-devices                                         (Vulkan devices, JSON)
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "corgy/corgy.h"
#if CORGY_HAS_VULKAN
#include "corgy/backends/vulkan/vulkan_backend.h"
#endif

namespace {

constexpr const char* usage =
    R"(usage: model_benchmark (--cfg FILE --random-weights SEED | --mnist DIR) --input FILE.npy
                       --backend NAME [--threads N] [--repeat N] [--warmup N] [--warmup-ms MS] [--output PREFIX]
       model_benchmark --cfg FILE --random-weights SEED --write-weights FILE
       model_benchmark --list-devices

  --input FILE.npy   float32 NCHW input; its N is the batch
  --backend NAME     naive, blas, vulkan, vulkan:<index> or vulkan:<part of the device name>
  --threads N        CPU threads of the CPU backends, 0 = all cores (default 0)
  --repeat N         timed forwards (default 10)
  --warmup N         untimed forwards first, at least N (default 1) ...
  --warmup-ms MS     ... and until MS milliseconds have passed (default 0; a GPU needs ~200 to reach its clock)
  --output PREFIX    after timing, write the raw head inputs (darknet) or the logits (MNIST) as PREFIX.<k>.npy
  --write-weights F  write the deterministic random .weights of --random-weights for the cfg to F and exit
)";

using Flags = std::map<std::string, std::string>;

Flags parse_flags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "--list-devices") {
      flags[flag] = "1";
    } else if (flag.starts_with("--") && i + 1 < argc) {
      flags[flag] = argv[++i];
    } else {
      throw corgy::Error(fmt::format("unexpected argument '{}'\n{}", flag, usage));
    }
  }
  return flags;
}

int int_flag(const Flags& flags, const std::string& name, int fallback, int minimum) {
  const auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  int value = 0;
  const std::string& text = it->second;
  const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (status != std::errc() || end != text.data() + text.size() || value < minimum) {
    throw corgy::Error(fmt::format("{} expects an integer >= {}, got '{}'", name, minimum, text));
  }
  return value;
}

const std::string& required(const Flags& flags, const std::string& name) {
  const auto it = flags.find(name);
  if (it == flags.end()) throw corgy::Error(fmt::format("{} is required\n{}", name, usage));
  return it->second;
}

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

/// The GPU time of the last forward when the backend is Vulkan and has timestamp queries; 0 otherwise.
double last_gpu_ms([[maybe_unused]] corgy::Backend& backend) {
#if CORGY_HAS_VULKAN
  if (const auto* vulkan = dynamic_cast<const corgy::VulkanBackend*>(&backend)) return vulkan->stats().last_gpu_ms;
#endif
  return 0.0;
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
  if (backend.name() == "blas") return fmt::format("OpenBLAS {}", openblas_get_corename());
  return "CPU";
}

struct Timings {
  int warmups = 0;
  double first_ms = 0.0;
  std::vector<double> wall_ms;
  std::vector<double> gpu_ms;
  /// The tensors of the last forward, valid until the next one.
  std::vector<const corgy::Variable*> outputs;
};

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Timings time_forwards(Network& network, const corgy::Variable& input, const Flags& flags) {
  const int min_warmups = int_flag(flags, "--warmup", 1, 0);
  const double warmup_ms = int_flag(flags, "--warmup-ms", 0, 0);
  const int repeat = int_flag(flags, "--repeat", 10, 1);
  Timings timings;
  const auto warmup_start = Clock::now();
  while (timings.warmups < min_warmups || ms_since(warmup_start) < warmup_ms) {
    const auto start = Clock::now();
    timings.outputs = network.forward(input);
    if (timings.warmups++ == 0) timings.first_ms = ms_since(start);
  }
  corgy::Backend& backend = network.sequential().backend();
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    timings.outputs = network.forward(input);
    timings.wall_ms.push_back(ms_since(start));
    if (i == 0 && timings.warmups == 0) timings.first_ms = timings.wall_ms.back();
    timings.gpu_ms.push_back(last_gpu_ms(backend));
  }
  return timings;
}

void write_outputs(const std::vector<const corgy::Variable*>& outputs, const std::string& prefix) {
  for (std::size_t k = 0; k < outputs.size(); ++k) corgy::save_npy(fmt::format("{}.{}.npy", prefix, k), *outputs[k]);
}

void print_result(const Flags& flags, Network& network, const corgy::Variable& input, const Timings& timings) {
  corgy::Backend& backend = network.sequential().backend();
  const Summary wall = summarize(timings.wall_ms);
  const Summary gpu = summarize(timings.gpu_ms);
  const double gflop = network.sequential().flops(input.shape()) / 1e9;
  const std::string model = flags.contains("--mnist") ? "mnist" : flags.at("--cfg");
  fmt::print(
      "{{\"model\": {}, \"batch\": {}, \"backend\": {}, \"device\": {}, \"threads\": {}, \"warmups\": {}, "
      "\"repeat\": {}, \"first_ms\": {:.4f}, \"median_ms\": {:.4f}, \"min_ms\": {:.4f}, \"max_ms\": {:.4f}, "
      "\"gpu_median_ms\": {:.4f}, \"gpu_min_ms\": {:.4f}, \"gpu_max_ms\": {:.4f}, \"gflop\": {:.6f}, "
      "\"gflops\": {:.3f}}}\n",
      json_string(model), input.shape().n, json_string(flags.at("--backend")), json_string(device_of(backend)),
      backend.threads(), timings.warmups, timings.wall_ms.size(), timings.first_ms, wall.median, wall.min, wall.max,
      gpu.median, gpu.min, gpu.max, gflop, gflop / (wall.median / 1e3));
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

void write_random_weights(const Flags& flags) {
  const corgy::DarknetModel net = corgy::build_darknet_model(corgy::read_darknet_cfg(required(flags, "--cfg")));
  const auto seed = static_cast<std::uint32_t>(int_flag(flags, "--random-weights", 0, 0));
  const std::vector<std::byte> bytes = corgy::random_darknet_weights(net, seed);
  const std::string& path = flags.at("--write-weights");
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!file.flush()) throw corgy::Error(fmt::format("{}: cannot write {} bytes", path, bytes.size()));
}

std::unique_ptr<Network> make_network(const Flags& flags) {
  if (flags.contains("--mnist")) return std::make_unique<MnistNetwork>(flags.at("--mnist"));
  const auto seed = static_cast<std::uint32_t>(int_flag(flags, "--random-weights", 0, 0));
  required(flags, "--random-weights");
  return std::make_unique<DarknetNetwork>(required(flags, "--cfg"), seed);
}

int run(int argc, char** argv) {
  const Flags flags = parse_flags(argc, argv);
  if (flags.contains("--help")) {
    fmt::print("{}", usage);
    return 0;
  }
  if (flags.contains("--list-devices")) {
    list_devices();
    return 0;
  }
  if (flags.contains("--write-weights")) {
    write_random_weights(flags);
    return 0;
  }
  const std::unique_ptr<Network> network = make_network(flags);
  network->sequential().set_backend(required(flags, "--backend"), int_flag(flags, "--threads", 0, 0));
  const corgy::Variable input = corgy::load_npy(required(flags, "--input"));
  const Timings timings = time_forwards(*network, input, flags);
  print_result(flags, *network, input, timings);
  if (flags.contains("--output")) write_outputs(timings.outputs, flags.at("--output"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "model_benchmark: {}\n", e.what());
    return 1;
  }
}
