// corgy-run: runs a darknet model, an ONNX model or the MNIST network on an input and writes the raw tensors that feed
// its detection heads, or times it. The command-line interface is stable and documented in docs/corgy-run.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "corgy/backends/cpu/fma_peak.h"
#include "corgy/corgy.h"
#include "corgy/model/profile.h"

namespace {

/// The command line (docs/corgy-run.md), as CLI11 parses it.
struct Options {
  std::string cfg;
  std::string weights;
  std::optional<std::uint32_t> random_weights;
  std::string mnist;
  std::string onnx;
  bool list_ops = false;
  std::string input;
  std::string backend = "auto";
  int threads = 0;
  int batch = 0;  // 0: not given (one image, or all the images of a .npy)
  std::string output;
  std::optional<int> repeat;
  bool profile = false;
  int width = 0;
  int height = 0;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Runs a darknet model, an ONNX model or corgy's MNIST network on an input and writes the raw tensors that feed "
      "its "
      "detection heads, or times it (docs/corgy-run.md).\n"
      "  corgy-run --cfg FILE (--weights FILE | --random-weights SEED) [options]\n"
      "  corgy-run --mnist DIR [options]\n"
      "  corgy-run --onnx FILE [options]\n"
      "  corgy-run --list-ops");
  CLI::Option* cfg = app.add_option("--cfg", options.cfg, "darknet cfg")->type_name("FILE");
  CLI::Option* weights =
      app.add_option("--weights", options.weights, "darknet .weights for that cfg")->type_name("FILE");
  CLI::Option* random = app.add_option("--random-weights", options.random_weights,
                                       "deterministic random weights instead (see docs/darknet.md)")
                            ->type_name("SEED");
  CLI::Option* mnist =
      app.add_option("--mnist", options.mnist,
                     "instead of a cfg: corgy's MNIST network with the weight files of DIR (data/mnist)")
          ->type_name("DIR");
  CLI::Option* onnx =
      app.add_option("--onnx", options.onnx, "instead of a cfg: an ONNX model (docs/onnx.md lists the operators)")
          ->type_name("FILE");
  app.add_flag("--list-ops", options.list_ops, "print the ONNX operators corgy supports and exit");
  weights->excludes(random);
  cfg->excludes(mnist);
  cfg->excludes(onnx);
  mnist->excludes(onnx);
  weights->needs(cfg);
  random->needs(cfg);
  app.add_option("--input", options.input,
                 ".npy (float32, NCHW) or an image (JPEG/PNG: letterboxed to the input size as darknet does; for "
                 "MNIST read as a grey digit resized to 28 x 28); default: a mid-grey image")
      ->type_name("FILE");
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--batch", options.batch,
                 "run N copies of a one-image input at once (default: 1, or all images "
                 "of a .npy)")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--output", options.output,
                 "write the raw input of each [region]/[yolo] layer, in cfg order, as PREFIX.0.npy, PREFIX.1.npy, ... "
                 "(the final output when the cfg has no such layer; the logits for MNIST; every graph output, in "
                 "order, for ONNX)")
      ->type_name("PREFIX");
  app.add_option("--repeat", options.repeat, "time N forwards after one warm-up; print median, min and max")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  app.add_flag("--profile", options.profile,
               "after the forwards, profile --repeat (default 10) more and print each layer's algorithm, ms, "
               "GFLOP/s and % of the CPU's FMA peak");
  app.add_option("--width", options.width, "network input width instead of the cfg's")
      ->type_name("W")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--height", options.height, "network input height instead of the cfg's")
      ->type_name("H")
      ->check(CLI::Range(1, 1 << 30));
}

// One image (1, C, H, W) repeated `batch` times along N.
corgy::Variable repeat_batch(const corgy::Variable& image, int batch) {
  corgy::Shape shape = image.shape();
  shape.n = batch;
  corgy::Variable out(shape);
  for (int n = 0; n < batch; ++n) std::copy(image.data(), image.data() + image.count(), out.data() + n * image.count());
  return out;
}

// What corgy-run runs: a darknet cfg or the MNIST network.
class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  virtual corgy::Sequential& sequential() = 0;
  /// (1, C, H, W) of one input image.
  virtual corgy::Shape input_shape() const = 0;
  /// An image file prepared as the model expects it, (1, C, H, W).
  virtual corgy::Variable read_image(const std::string& path) const = 0;
  /// The tensors --output writes.
  virtual std::vector<const corgy::Variable*> forward(const corgy::Variable& input) = 0;
  /// A .npy input as the model takes it; throws corgy::Error naming `path` when it does not fit.
  virtual corgy::Variable prepare_npy(corgy::Variable tensor, const std::string& path) const {
    if (tensor.shape().c != input_shape().c) {
      throw corgy::Error(fmt::format("{}: expects (N, {}, H, W), got {}", path, input_shape().c, tensor.shape().str()));
    }
    return tensor;
  }
  /// What --output calls output k.
  virtual std::string output_name(std::size_t k) const {
    (void)k;
    return "";
  }
  /// The shape --output writes output k (of the last forward) with: corgy's 4-D one unless the model declares another.
  virtual std::vector<std::int64_t> output_dims(std::size_t k, const corgy::Variable& output) const {
    (void)k;
    const corgy::Shape& s = output.shape();
    return {s.n, s.c, s.h, s.w};
  }
};

class DarknetRun final : public Model {
 public:
  explicit DarknetRun(const Options& options)
      : net_(corgy::build_darknet_model(corgy::read_darknet_cfg(options.cfg), {options.width, options.height})) {
    if (!options.weights.empty()) {
      corgy::load_darknet_weights(net_, options.weights);
    } else if (options.random_weights) {
      const std::uint32_t seed = *options.random_weights;
      corgy::load_darknet_weights(net_, corgy::random_darknet_weights(net_, seed), "random weights");
      fmt::print("weights: deterministic random (seed {})\n", seed);
    } else {
      throw corgy::Error("--weights or --random-weights is required (--help lists the options)");
    }
  }
  std::string name() const override { return net_.cfg.source; }
  corgy::Sequential& sequential() override { return net_.model; }
  corgy::Shape input_shape() const override { return net_.input_shape(); }
  corgy::Variable read_image(const std::string& path) const override {
    return corgy::letterbox_image(corgy::load_image(path, net_.channels), net_.width, net_.height);
  }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override { return net_.forward(input); }

 private:
  corgy::DarknetModel net_;
};

class MnistRun final : public Model {
 public:
  explicit MnistRun(const std::string& directory) : directory_(directory), model_(corgy::load_mnist_model(directory)) {}
  std::string name() const override { return "MNIST (" + directory_ + ")"; }
  corgy::Sequential& sequential() override { return model_; }
  corgy::Shape input_shape() const override { return {1, 1, corgy::mnist_side, corgy::mnist_side}; }
  corgy::Variable read_image(const std::string& path) const override { return corgy::load_mnist_digit(path, true); }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    model_.forward(input);
    return {&model_.output(corgy::MnistLayers::fc1)};
  }

 private:
  std::string directory_;
  corgy::Sequential model_;
};

class OnnxRun final : public Model {
 public:
  explicit OnnxRun(const std::string& path) : net_(corgy::load_onnx(path)) {}
  std::string name() const override {
    return fmt::format("{} (ONNX opset {}, {})", net_.source, net_.opset, net_.producer);
  }
  corgy::Sequential& sequential() override { return net_.model; }
  corgy::Shape input_shape() const override { return net_.input_shape(); }
  corgy::Variable read_image(const std::string& path) const override {
    throw corgy::Error(
        fmt::format("{}: an ONNX model takes its input as a .npy (float32 NCHW, prepared as the model "
                    "expects: scaled, normalised)",
                    path));
  }
  std::vector<const corgy::Variable*> forward(const corgy::Variable& input) override {
    net_.forward(input);
    std::vector<const corgy::Variable*> outputs;
    for (std::size_t k = 0; k < net_.outputs.size(); ++k) outputs.push_back(&net_.output(k));
    return outputs;
  }
  /// The graph's declared rank: a classifier's (N, 1000), not corgy's (N, 1000, 1, 1).
  std::vector<std::int64_t> output_dims(std::size_t k, const corgy::Variable& output) const override {
    (void)output;
    return net_.output_dims(k);
  }
  corgy::Variable prepare_npy(corgy::Variable tensor, const std::string& path) const override {
    // A 2-D (N, F) array is read as (1, 1, N, F): corgy's batch of vectors is (N, F, 1, 1).
    const corgy::Shape s = tensor.shape();
    if (net_.input.dims.size() == 2 && s.n == 1 && s.c == 1) tensor.reshape({s.h, s.w, 1, 1});
    try {
      net_.check_input(tensor.shape());
    } catch (const corgy::Error& e) {
      throw corgy::Error(fmt::format("{}: {}", path, e.what()));
    }
    return tensor;
  }
  std::string output_name(std::size_t k) const override { return net_.outputs.at(k).name; }

 private:
  corgy::OnnxModel net_;
};

// The input tensor; `batch` 0 means "not given": one image, or as many as the .npy holds.
corgy::Variable read_input(const std::string& path, const Model& model, int batch) {
  if (path.empty()) {
    corgy::Shape shape = model.input_shape();
    shape.n = std::max(batch, 1);
    corgy::Variable grey(shape);
    grey.fill(0.5f);
    return grey;
  }
  if (!path.ends_with(".npy")) return repeat_batch(model.read_image(path), std::max(batch, 1));
  corgy::Variable tensor = model.prepare_npy(corgy::load_npy(path), path);
  const corgy::Shape& shape = tensor.shape();
  if (batch == 0 || shape.n == batch) return tensor;
  if (shape.n == 1) return repeat_batch(tensor, batch);
  throw corgy::Error(fmt::format("{} holds a batch of {}; --batch {} asks for another", path, shape.n, batch));
}

void time_forwards(Model& model, const corgy::Variable& input, int repeat) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model.forward(input);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  const double gflop = model.sequential().flops(input.shape()) / 1e9;
  fmt::print(
      "forward: median {:.2f} ms, min {:.2f} ms, max {:.2f} ms over {} runs after 1 warm-up; {:.2f} GFLOP, "
      "{:.1f} GFLOP/s at the median\n",
      median, ms.front(), ms.back(), repeat, gflop, gflop / (median / 1e3));
}

/// The per-layer profile (corgy/model/profile.h) against the FMA peak of the backend's threads, measured now (CPU
/// backends; a GPU backend's rows have no peak).
void print_profile(Model& model, const corgy::Variable& input, int repeat) {
  corgy::Sequential& sequential = model.sequential();
  const std::vector<corgy::LayerProfile> rows = corgy::profile_forward(sequential, input, repeat);
  if (rows.empty()) {
    fmt::print("backend {} does not profile\n", sequential.backend().name());
    return;
  }
  const corgy::CpuIsa isa = corgy::widest_cpu_isa();
  double peak = 0.0;
  std::string label = "none (a GPU backend, or a CPU without AVX2)";
  if (!sequential.backend().name().starts_with("vulkan") && isa != corgy::CpuIsa::generic) {
    const int threads = std::max(1, sequential.backend().threads());
    peak = corgy::fma_peak_gflops(isa, threads, 5, 5'000'000);
    label = fmt::format("{} FMA peak of {} thread{}, measured now: {:.1f} GFLOP/s", corgy::isa_name(isa), threads,
                        threads == 1 ? "" : "s", peak);
  }
  fmt::print("{}", corgy::format_profile(rows, peak, label));
}

int run(const Options& options) {
  std::unique_ptr<Model> model;
  if (!options.mnist.empty()) {
    model = std::make_unique<MnistRun>(options.mnist);
  } else if (!options.onnx.empty()) {
    model = std::make_unique<OnnxRun>(options.onnx);
  } else {
    model = std::make_unique<DarknetRun>(options);
  }
  model->sequential().set_backend(options.backend, options.threads);
  const corgy::Variable input = read_input(options.input, *model, options.batch);
  const corgy::Backend& backend = model->sequential().backend();
  fmt::print("model {}: input {}, backend {} ({} threads)\n", model->name(), input.shape().str(), backend.name(),
             backend.threads());

  const std::vector<const corgy::Variable*> outputs = model->forward(input);  // also the warm-up
  if (!options.output.empty()) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const std::string path = fmt::format("{}.{}.npy", options.output, k);
      const std::vector<std::int64_t> dims = model->output_dims(k, *outputs[k]);
      corgy::save_npy(path, *outputs[k], dims);
      const std::string name = model->output_name(k);
      fmt::print("wrote {} ({}){}\n", path, fmt::join(dims, ", "), name.empty() ? "" : " = output '" + name + "'");
    }
  }
  if (options.repeat) time_forwards(*model, input, *options.repeat);
  if (options.profile) print_profile(*model, input, options.repeat.value_or(10));
  return 0;
}

void list_operators() {
  fmt::print("ONNX operators corgy-run --onnx (corgy::load_onnx) supports, opsets {} to {} (docs/onnx.md):\n",
             corgy::onnx_min_opset, corgy::onnx_max_opset);
  for (const corgy::OnnxOperatorSupport& op : corgy::onnx_supported_operators()) {
    const std::string opsets = op.first_opset == corgy::onnx_min_opset && op.last_opset == corgy::onnx_max_opset
                                   ? std::string()
                                   : fmt::format(" (opsets {} to {})", op.first_opset, op.last_opset);
    fmt::print("  {:<22} {}{}\n", op.op_type, op.becomes, opsets);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "corgy-run");
  Options options;
  define_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help: 0; a bad flag or value: the message on stderr, 1
  }
  if (options.list_ops) {
    list_operators();
    return 0;
  }
  if (options.cfg.empty() && options.mnist.empty() && options.onnx.empty()) {
    fmt::print("{}", app.help());
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "corgy-run: {}\n", e.what());
    return 1;
  }
}
