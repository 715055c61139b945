// mnist: classifies handwritten digits with corgy's MNIST network and the weights trained by tools/train_mnist.py
// (data/mnist). Reads IDX files (MNIST's own format) or digit images, prints predictions, the accuracy when labels
// are given, and the time per batch and per image.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "corgy/corgy.h"

namespace {

struct Options {
  std::vector<std::string> image_files;
  std::string images;
  std::string labels;
  std::string weights;
  std::string format = "dat";
  std::string backend = "auto";
  int threads = 0;
  int batch = 64;
  int limit = 0;
  std::optional<int> show;
  bool resize = false;
};

void define_options(CLI::App& app, Options& options) {
  app.description(
      "Classifies handwritten digits with corgy's MNIST network and the weights trained by tools/train_mnist.py "
      "(data/mnist): prints predictions, the accuracy when labels are given, and the time per batch and per image.");
  CLI::Option* files =
      app.add_option("IMAGE", options.image_files,
                     "digit images (PNG, PGM, JPEG, ...): 28 x 28 grey, a white digit on black as in MNIST")
          ->type_name("IMAGE");
  CLI::Option* images = app.add_option("--images", options.images,
                                       "IDX images (idx3-ubyte); without IMAGEs and --images: the held-out digits of "
                                       "the weights directory (heldout-images-idx3-ubyte, with "
                                       "heldout-labels-idx1-ubyte)")
                            ->type_name("FILE");
  files->excludes(images);
  app.add_option("--labels", options.labels, "IDX labels (idx1-ubyte) for --images: prints the accuracy")
      ->type_name("FILE")
      ->needs(images);
  app.add_option("--weights", options.weights,
                 "directory of the weight files (default: data/mnist of corgy's source tree)")
      ->type_name("DIR");
  app.add_option("--format", options.format,
                 "dat: weights_*.dat / bias_*.dat, conv OHWI, fc as a 7x7 OHWI conv (MPSCNN's); dat-oihw: the same "
                 "files in PyTorch's orders (conv OIHW, fc [out][in]); npy: conv1.weight.npy, conv1.bias.npy, ... "
                 "(PyTorch's state_dict names and orders)")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"dat", "dat-oihw", "npy"}))
      ->capture_default_str();
  app.add_option("--backend", options.backend, "naive, blas, vulkan or auto")->type_name("NAME")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU threads, 0 = all cores")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  app.add_option("--batch", options.batch, "images per forward")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  app.add_option("--limit", options.limit, "classify only the first N images (0: all)")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("--show", options.show, "print the first N predictions (default: 10 from IDX files, every IMAGE)")
      ->type_name("N")
      ->check(CLI::Range(0, 1 << 30));
  app.add_flag("--resize", options.resize, "resize IMAGEs that are not 28 x 28 instead of rejecting them");
}

// --weights, else data/mnist of the source tree this program was built from, else ./data/mnist.
std::string weights_directory(const std::string& weights) {
  if (!weights.empty()) return weights;
  for (const char* candidate : {CORGY_MNIST_DATA_DIR, "data/mnist"}) {
    if (std::filesystem::exists(std::filesystem::path(candidate) / "weights_conv1.dat")) return candidate;
  }
  throw corgy::Error(fmt::format("no MNIST weights in {} or ./data/mnist: pass --weights DIR", CORGY_MNIST_DATA_DIR));
}

corgy::MnistWeightOptions weight_options(const std::string& format) {
  using corgy::MnistWeightFormat;
  if (format == "dat") return {};
  if (format == "dat-oihw") {
    return {MnistWeightFormat::raw, corgy::ConvWeightLayout::oihw, corgy::LinearWeightLayout::out_by_in};
  }
  if (format == "npy") return {.format = MnistWeightFormat::npy};
  throw corgy::Error(fmt::format("--format must be dat, dat-oihw or npy, got '{}'", format));
}

// The digits to classify, their names for the listing, and their labels when known.
struct Digits {
  corgy::Variable images;  // (N, 1, 28, 28)
  std::vector<std::string> names;
  std::vector<int> labels;  // empty when unknown
  std::string source;
};

Digits read_image_files(const std::vector<std::string>& paths, bool resize) {
  Digits digits{corgy::Variable(corgy::Shape{static_cast<int>(paths.size()), 1, corgy::mnist_side, corgy::mnist_side}),
                paths,
                {},
                fmt::format("{} image files", paths.size())};
  const std::size_t size = static_cast<std::size_t>(corgy::mnist_side) * corgy::mnist_side;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const corgy::Variable digit = corgy::load_mnist_digit(paths[i], resize);
    std::copy(digit.data(), digit.data() + size, digits.images.data() + i * size);
  }
  return digits;
}

Digits read_idx(const Options& options, const std::string& weights) {
  const bool held_out = options.images.empty();
  const std::string images_path = held_out ? weights + "/heldout-images-idx3-ubyte" : options.images;
  const std::string labels_path = held_out ? weights + "/heldout-labels-idx1-ubyte" : options.labels;
  Digits digits;
  digits.source = images_path;
  if (labels_path.empty()) {
    digits.images = corgy::load_idx_images(images_path);
  } else {
    corgy::LabeledImages set = corgy::load_idx_dataset(images_path, labels_path);
    digits.images = std::move(set.images);
    digits.labels.assign(set.labels.begin(), set.labels.end());
  }
  for (int i = 0; i < digits.images.shape().n; ++i) digits.names.push_back(fmt::format("#{}", i));
  return digits;
}

// The first `count` digits (the whole set when count is 0 or larger).
void keep_first(Digits& digits, int count) {
  if (count == 0 || count >= digits.images.shape().n) return;
  corgy::Variable first(corgy::Shape{count, 1, corgy::mnist_side, corgy::mnist_side});
  std::copy(digits.images.data(), digits.images.data() + first.count(), first.data());
  digits.images = std::move(first);
  digits.names.resize(static_cast<std::size_t>(count));
  if (!digits.labels.empty()) digits.labels.resize(static_cast<std::size_t>(count));
}

struct Prediction {
  int digit;
  float probability;
};

struct Run {
  std::vector<Prediction> predictions;
  std::vector<double> full_batch_ms;  // one per batch of the requested size, after the warm-up
  double total_ms = 0;
};

// Classifies all digits, `batch` at a time, after one untimed warm-up forward (shape planning, weight upload).
Run classify(corgy::Sequential& model, const corgy::Variable& images, int batch) {
  const int count = images.shape().n;
  const std::size_t image_size = images.shape().image_count();
  auto slice = [&](int start, int size) {
    corgy::Variable part(corgy::Shape{size, 1, corgy::mnist_side, corgy::mnist_side});
    std::copy_n(images.data() + start * image_size, part.count(), part.data());
    return part;
  };
  model.forward(slice(0, std::min(batch, count)));
  Run run;
  for (int start = 0; start < count; start += batch) {
    const int size = std::min(batch, count - start);
    const corgy::Variable part = slice(start, size);
    const auto begin = std::chrono::steady_clock::now();
    const corgy::Variable& probabilities = model.forward(part);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
    run.total_ms += ms;
    if (size == batch) run.full_batch_ms.push_back(ms);
    for (int n = 0; n < size; ++n) {
      const float* p = probabilities.data() + n * corgy::mnist_classes;
      const auto best = std::max_element(p, p + corgy::mnist_classes);
      run.predictions.push_back({static_cast<int>(best - p), *best});
    }
  }
  return run;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

void print_predictions(const Digits& digits, const Run& run, int show) {
  const auto count = static_cast<int>(run.predictions.size());
  for (int i = 0; i < std::min(show, count); ++i) {
    const Prediction& p = run.predictions[i];
    std::string line = fmt::format("  {:<12} -> {}  ({:5.1f}%)", digits.names[i], p.digit, 100 * p.probability);
    if (!digits.labels.empty())
      line += fmt::format("  label {}{}", digits.labels[i], p.digit == digits.labels[i] ? "" : "  WRONG");
    fmt::print("{}\n", line);
  }
  if (show > 0 && show < count) fmt::print("  ... ({} more)\n", count - show);
}

void print_accuracy(const Digits& digits, const Run& run) {
  std::vector<std::string> mistakes;
  for (std::size_t i = 0; i < run.predictions.size(); ++i) {
    if (run.predictions[i].digit == digits.labels[i]) continue;
    mistakes.push_back(
        fmt::format("{} (label {}, said {})", digits.names[i], digits.labels[i], run.predictions[i].digit));
  }
  const std::size_t count = run.predictions.size();
  fmt::print("accuracy: {:.2f}% ({} of {} correct)\n",
             100.0 * static_cast<double>(count - mistakes.size()) / static_cast<double>(count), count - mistakes.size(),
             count);
  if (!mistakes.empty()) {
    mistakes.resize(std::min<std::size_t>(mistakes.size(), 5));
    fmt::print("first mistakes: {}\n", fmt::join(mistakes, ", "));
  }
}

void print_times(const Run& run, const corgy::Sequential& model, int batch, std::size_t count) {
  if (!run.full_batch_ms.empty()) {
    const double per_batch = median(run.full_batch_ms);
    const double gflop = model.flops({batch, 1, corgy::mnist_side, corgy::mnist_side}) / 1e9;
    fmt::print(
        "time: batch {}: {:.3f} ms per batch, {:.3f} ms per image, {:.1f} GFLOP/s (median of {} batches after "
        "1 warm-up)\n",
        batch, per_batch, per_batch / batch, gflop / (per_batch / 1000), run.full_batch_ms.size());
  }
  fmt::print("total: {} images in {:.1f} ms, {:.0f} images/s\n", count, run.total_ms,
             1000.0 * static_cast<double>(count) / run.total_ms);
}

int run(const Options& options) {
  const std::string weights = weights_directory(options.weights);
  corgy::Sequential model = corgy::load_mnist_model(weights, weight_options(options.format));
  model.set_backend(options.backend, options.threads);
  Digits digits =
      options.image_files.empty() ? read_idx(options, weights) : read_image_files(options.image_files, options.resize);
  keep_first(digits, options.limit);
  const auto count = static_cast<std::size_t>(digits.images.shape().n);

  fmt::print("mnist: weights {} ({}), backend {} ({} threads), {} digits from {}, batch {}\n", weights, options.format,
             model.backend().name(), model.backend().threads(), count, digits.source, options.batch);
  const Run result = classify(model, digits.images, options.batch);
  print_predictions(digits, result, options.show.value_or(options.image_files.empty() ? 10 : static_cast<int>(count)));
  if (!digits.labels.empty()) print_accuracy(digits, result);
  print_times(result, model, options.batch, count);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "mnist");
  Options options;
  define_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 1;  // --help: 0; a bad flag or value: the message on stderr, 1
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mnist: {}\n", e.what());
    return 1;
  }
}
