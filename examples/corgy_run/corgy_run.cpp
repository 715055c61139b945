// corgy-run: runs a darknet model (or the MNIST network) on an input and writes the raw tensors that feed its
// detection heads, or times it. The command-line interface is stable and documented in docs/corgy-run.md.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

constexpr const char* usage = R"(usage: corgy-run --cfg FILE (--weights FILE | --random-weights SEED) [options]
       corgy-run --mnist DIR [options]

  --cfg FILE             darknet cfg
  --weights FILE         darknet .weights for that cfg
  --random-weights SEED  deterministic random weights instead (see docs/darknet.md)
  --mnist DIR            instead of a cfg: corgy's MNIST network with the weight files of DIR (e.g. data/mnist)
  --input FILE           .npy (float32, NCHW) or an image (JPEG/PNG: letterboxed to the input size as darknet does;
                         for MNIST read as a grey digit resized to 28 x 28); default: a mid-grey image
  --backend NAME         naive, blas, vulkan or auto (default auto)
  --threads N            CPU threads, 0 = all cores (default 0)
  --batch N              run N copies of a one-image input at once (default: 1, or all images of a .npy)
  --output PREFIX        write the raw input of each [region]/[yolo] layer, in cfg order, as PREFIX.0.npy,
                         PREFIX.1.npy, ... (the final output when the cfg has no such layer; the logits for MNIST)
  --repeat N             time N forwards after one warm-up; print median, min and max
  --width W --height H   network input size instead of the cfg's
)";

std::map<std::string, std::string> parse_flags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help") {
      flags[flag] = "1";
    } else if (flag.starts_with("--") && i + 1 < argc) {
      flags[flag] = argv[++i];
    } else {
      throw corgy::Error(fmt::format("unexpected argument '{}'\n{}", flag, usage));
    }
  }
  return flags;
}

std::string flag_or(const std::map<std::string, std::string>& flags, const std::string& name, std::string fallback) {
  const auto it = flags.find(name);
  return it == flags.end() ? fallback : it->second;
}

// The integer value of flag `name` (or `fallback`), at least `minimum`.
int int_flag(const std::map<std::string, std::string>& flags, const std::string& name, int fallback, int minimum) {
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
};

class DarknetRun final : public Model {
 public:
  explicit DarknetRun(const std::map<std::string, std::string>& flags)
      : net_(corgy::build_darknet_model(corgy::read_darknet_cfg(flags.at("--cfg")),
                                        {int_flag(flags, "--width", 0, 1), int_flag(flags, "--height", 0, 1)})) {
    if (flags.contains("--weights")) {
      corgy::load_darknet_weights(net_, flags.at("--weights"));
    } else if (flags.contains("--random-weights")) {
      const auto seed = static_cast<std::uint32_t>(int_flag(flags, "--random-weights", 0, 0));
      corgy::load_darknet_weights(net_, corgy::random_darknet_weights(net_, seed), "random weights");
      fmt::print("weights: deterministic random (seed {})\n", seed);
    } else {
      throw corgy::Error(fmt::format("--weights or --random-weights is required\n{}", usage));
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

// The input tensor; `batch` 0 means "not given": one image, or as many as the .npy holds.
corgy::Variable read_input(const std::map<std::string, std::string>& flags, const Model& model, int batch) {
  if (!flags.contains("--input")) {
    corgy::Shape shape = model.input_shape();
    shape.n = std::max(batch, 1);
    corgy::Variable grey(shape);
    grey.fill(0.5f);
    return grey;
  }
  const std::string& path = flags.at("--input");
  if (!path.ends_with(".npy")) return repeat_batch(model.read_image(path), std::max(batch, 1));
  corgy::Variable tensor = corgy::load_npy(path);
  const corgy::Shape& shape = tensor.shape();
  if (shape.c != model.input_shape().c) {
    throw corgy::Error(fmt::format("{}: expects (N, {}, H, W), got {}", path, model.input_shape().c, shape.str()));
  }
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

int run(int argc, char** argv) {
  const auto flags = parse_flags(argc, argv);
  if (flags.contains("--help") || (!flags.contains("--cfg") && !flags.contains("--mnist"))) {
    fmt::print("{}", usage);
    return flags.contains("--help") ? 0 : 2;
  }
  std::unique_ptr<Model> model;
  if (flags.contains("--mnist")) {
    model = std::make_unique<MnistRun>(flags.at("--mnist"));
  } else {
    model = std::make_unique<DarknetRun>(flags);
  }
  model->sequential().set_backend(flag_or(flags, "--backend", "auto"), int_flag(flags, "--threads", 0, 0));
  const corgy::Variable input = read_input(flags, *model, int_flag(flags, "--batch", 0, 1));
  const corgy::Backend& backend = model->sequential().backend();
  fmt::print("model {}: input {}, backend {} ({} threads)\n", model->name(), input.shape().str(), backend.name(),
             backend.threads());

  const std::vector<const corgy::Variable*> outputs = model->forward(input);  // also the warm-up
  if (flags.contains("--output")) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const std::string path = fmt::format("{}.{}.npy", flags.at("--output"), k);
      corgy::save_npy(path, *outputs[k]);
      fmt::print("wrote {} {}\n", path, outputs[k]->shape().str());
    }
  }
  if (flags.contains("--repeat")) time_forwards(*model, input, int_flag(flags, "--repeat", 1, 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "corgy-run: {}\n", e.what());
    return 1;
  }
}
