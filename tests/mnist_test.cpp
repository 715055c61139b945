// The MNIST network end to end with the weights tools/train_mnist.py trained (data/mnist): logits against PyTorch's
// for the same digits (tests/fixtures/mnist) on every backend, accuracy on the held-out digits, both weight layouts
// (MPSCNN's OHWI .dat files and PyTorch's OIHW .npy files), IDX and image reading, and every way a file can be wrong.
#include <fmt/format.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "test_util.h"

namespace corgy::testing {
namespace {

std::string mnist_data(const std::string& name) { return std::string(CORGY_MNIST_DATA_DIR) + "/" + name; }

const MnistWeightOptions pytorch_npy{.format = MnistWeightFormat::npy};
const MnistWeightOptions pytorch_order_dat{MnistWeightFormat::raw, ConvWeightLayout::oihw,
                                           LinearWeightLayout::out_by_in};

/// The first `count` images of `images` as a batch of their own.
Variable first_images(const Variable& images, int count) {
  Variable batch(Shape{count, 1, mnist_side, mnist_side});
  std::memcpy(batch.data(), images.data(), batch.count() * sizeof(float));
  return batch;
}

double max_abs_difference(std::span<const float> actual, std::span<const float> expected) {
  double worst = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(actual[i]) - static_cast<double>(expected[i])));
  }
  return worst;
}

bool same_bits(const Variable& a, const Variable& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.count() * sizeof(float)) == 0;
}

/// Expects the weights and biases of two MNIST models to be bit for bit the same.
void expect_same_parameters(Sequential& a, Sequential& b) {
  for (const int index : {MnistLayers::conv1, MnistLayers::conv2}) {
    EXPECT_TRUE(same_bits(a.layer_as<Conv2d>(index).weights(), b.layer_as<Conv2d>(index).weights())) << index;
    EXPECT_TRUE(same_bits(a.layer_as<Conv2d>(index).bias(), b.layer_as<Conv2d>(index).bias())) << index;
  }
  EXPECT_TRUE(
      same_bits(a.layer_as<Linear>(MnistLayers::fc1).weights(), b.layer_as<Linear>(MnistLayers::fc1).weights()));
  EXPECT_TRUE(same_bits(a.layer_as<Linear>(MnistLayers::fc1).bias(), b.layer_as<Linear>(MnistLayers::fc1).bias()));
}

/// How many of the (N, 10, 1, 1) class scores (logits or probabilities) have their maximum at the label.
int correct_classes(const Variable& scores, std::span<const std::uint8_t> labels) {
  int correct = 0;
  for (int n = 0; n < scores.shape().n; ++n) {
    const float* p = scores.data() + n * mnist_classes;
    correct += std::max_element(p, p + mnist_classes) - p == labels[n];
  }
  return correct;
}

/// Fraction of `images` whose most probable class is their label, `batch` digits per forward.
double accuracy(Sequential& model, const Variable& images, std::span<const std::uint8_t> labels, int batch) {
  const int count = images.shape().n;
  const std::size_t image_size = images.shape().image_count();
  int correct = 0;
  for (int start = 0; start < count; start += batch) {
    const int size = std::min(batch, count - start);
    Variable part(Shape{size, 1, mnist_side, mnist_side});
    std::memcpy(part.data(), images.data() + start * image_size, part.count() * sizeof(float));
    correct += correct_classes(model.forward(part), labels.subspan(start, size));
  }
  return static_cast<double>(correct) / count;
}

LabeledImages heldout_digits() {
  return load_idx_dataset(mnist_data("heldout-images-idx3-ubyte"), mnist_data("heldout-labels-idx1-ubyte"));
}

class MnistOnBackend : public ::testing::TestWithParam<std::string> {};

/// Logits of `model` for the 64 fixture digits, and their largest difference from PyTorch's.
std::pair<Variable, double> fixture_logits(Sequential& model) {
  const Variable input = load_npy(fixture_path("mnist/input.npy"));
  const Variable expected = load_npy(fixture_path("mnist/logits.npy"));
  if (input.shape() != Shape{64, 1, mnist_side, mnist_side} || expected.shape() != Shape::matrix(64, mnist_classes)) {
    throw Error(
        fmt::format("tests/fixtures/mnist: unexpected shapes {} and {}", input.shape().str(), expected.shape().str()));
  }
  model.forward(input);
  Variable logits = model.output(MnistLayers::fc1).clone();
  EXPECT_EQ(logits.shape(), (Shape{64, mnist_classes, 1, 1}));
  const double error = max_abs_difference(logits.values(), expected.values());
  return {std::move(logits), error};
}

// Also the naive backend's accuracy check: at about 1 s per digit in the sanitizer build, it gets no more digits.
TEST_P(MnistOnBackend, LogitsMatchPyTorchForTheFixtureDigits) {
  Sequential model = load_mnist_model(mnist_data(""));
  model.set_backend(GetParam());
  const auto [logits, error] = fixture_logits(model);
  RecordProperty("max_abs_logit_error", fmt::format("{:.3g}", error));
  fmt::print("{}: max |logit - PyTorch's| = {:.3g} over the 64 fixture digits\n", GetParam(), error);
  EXPECT_LE(error, 1e-4) << GetParam();
  // The fixture digits are the first 64 held-out digits.
  const std::vector<std::uint8_t> labels = heldout_digits().labels;
  const int correct = correct_classes(logits, std::span(labels).first(64));
  EXPECT_GE(correct, 63) << GetParam() << ": " << correct << " of the 64 fixture digits classified correctly";
}

INSTANTIATE_TEST_SUITE_P(EveryBackend, MnistOnBackend, ::testing::ValuesIn(all_backends()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

std::vector<std::string> optimised_backends() {
  std::vector<std::string> names = all_backends();
  std::erase(names, "naive");
  return names;
}

class MnistHeldOut : public ::testing::TestWithParam<std::string> {};

// The whole held-out set on blas; the first 256 digits elsewhere (Vulkan on lavapipe in CI: ~40 ms per digit), and on
// blas too under the sanitizers (the same code on more digits, 9 s there; the Release run checks the whole set).
TEST_P(MnistHeldOut, AccuracyIsAtLeast98Percent) {
  const LabeledImages heldout = heldout_digits();
  const bool whole_set = GetParam() == "blas" && !CORGY_TESTS_SANITIZED;
  const int count = whole_set ? heldout.images.shape().n : 256;
  Sequential model = load_mnist_model(mnist_data(""));
  // One thread: ctest runs tests side by side, and CPU threads that outnumber the cores slow the blas backend badly.
  model.set_backend(GetParam(), 1);
  const double measured =
      accuracy(model, first_images(heldout.images, count), std::span(heldout.labels).first(count), 64);
  RecordProperty("accuracy", fmt::format("{:.4f}", measured));
  fmt::print("{}: accuracy {:.4f} on the first {} held-out digits\n", GetParam(), measured, count);
  EXPECT_GE(measured, 0.98);
  if (whole_set) {
    std::ifstream pytorch_file(fixture_path("mnist/heldout_accuracy.txt"));
    double pytorch = 0;
    ASSERT_TRUE(pytorch_file >> pytorch);
    // Logits within 1e-4 of PyTorch's can flip only a near tie: allow one digit in 2,000.
    EXPECT_NEAR(measured, pytorch, 0.0005 + 1e-9) << "PyTorch measured " << pytorch;
  }
}

INSTANTIATE_TEST_SUITE_P(OptimisedBackends, MnistHeldOut, ::testing::ValuesIn(optimised_backends()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

TEST(MnistWeights, OhwiDatFilesHoldTheSameWeightsAsPyTorchsNpyFiles) {
  Sequential from_dat = load_mnist_model(mnist_data(""));
  Sequential from_npy = load_mnist_model(mnist_data(""), pytorch_npy);
  expect_same_parameters(from_dat, from_npy);
}

TEST(MnistWeights, NpyWeightsGiveTheSameLogits) {
  Sequential from_dat = load_mnist_model(mnist_data(""));
  Sequential from_npy = load_mnist_model(mnist_data(""), pytorch_npy);
  from_dat.set_backend("blas", 1);
  from_npy.set_backend("blas", 1);
  const auto [npy_logits, npy_error] = fixture_logits(from_npy);
  EXPECT_LE(npy_error, 1e-4);
  EXPECT_TRUE(same_bits(fixture_logits(from_dat).first, npy_logits));
}

TEST(MnistWeights, SwappedLayoutsLoadDifferentWeights) {
  // Guards the test above: a layout option that were ignored would also pass it.
  Sequential ohwi = load_mnist_model(mnist_data(""));
  Sequential oihw = load_mnist_model(mnist_data(""), pytorch_order_dat);
  EXPECT_FALSE(same_bits(ohwi.layer_as<Conv2d>(MnistLayers::conv2).weights(),
                         oihw.layer_as<Conv2d>(MnistLayers::conv2).weights()));
  EXPECT_FALSE(
      same_bits(ohwi.layer_as<Linear>(MnistLayers::fc1).weights(), oihw.layer_as<Linear>(MnistLayers::fc1).weights()));
}

TEST(MnistData, IdxDigitsEqualTheFixtureInputBitForBit) {
  const LabeledImages heldout = heldout_digits();
  EXPECT_EQ(heldout.images.shape(), (Shape{2000, 1, 28, 28}));
  ASSERT_EQ(heldout.labels.size(), 2000u);
  EXPECT_TRUE(std::all_of(heldout.labels.begin(), heldout.labels.end(), [](std::uint8_t l) { return l < 10; }));
  EXPECT_TRUE(same_bits(first_images(heldout.images, 64), load_npy(fixture_path("mnist/input.npy"))));
}

TEST(MnistData, SampleImagesEqualTheirIdxDigitsAndAreClassifiedAsLabelled) {
  const LabeledImages heldout = heldout_digits();
  Sequential model = load_mnist_model(mnist_data(""));
  model.set_backend("blas");
  // samples/digit_<i>_label_<l>.{png,pgm} are held-out digits 0..4 (tools/train_mnist.py).
  for (int i = 0; i < 5; ++i) {
    const int label = heldout.labels[i];
    for (const char* extension : {"png", "pgm"}) {
      const std::string path = mnist_data(fmt::format("samples/digit_{}_label_{}.{}", i, label, extension));
      const Variable digit = load_mnist_digit(path);
      Variable expected(Shape{1, 1, mnist_side, mnist_side});
      std::memcpy(expected.data(), heldout.images.data() + i * expected.count(), expected.count() * sizeof(float));
      EXPECT_TRUE(same_bits(digit, expected)) << path;
      const Variable& probabilities = model.forward(digit);
      EXPECT_EQ(std::max_element(probabilities.data(), probabilities.data() + mnist_classes) - probabilities.data(),
                label)
          << path;
    }
  }
}

TEST(RawWeights, OhwiConvolutionBecomesOihwPerGroup) {
  // weight[o][y][x][i] = 1000 o + 100 y + 10 x + i must land at OIHW (o, i, y, x).
  Conv2d conv({.in_channels = 4, .out_channels = 6, .kernel = 3, .groups = 2});
  std::vector<float> ohwi;
  for (int o = 0; o < 6; ++o)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 3; ++x)
        for (int i = 0; i < 2; ++i) ohwi.push_back(static_cast<float>(1000 * o + 100 * y + 10 * x + i));
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("corgy_ohwi_{}.dat", getpid()));
  save_raw(path, ohwi);
  load_raw_weights(conv, path, ConvWeightLayout::ohwi);
  std::filesystem::remove(path);
  for (int o = 0; o < 6; ++o)
    for (int i = 0; i < 2; ++i)
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
          EXPECT_EQ(conv.weights().at(o, i, y, x), static_cast<float>(1000 * o + 100 * y + 10 * x + i));
}

/// Writes files into a directory of its own that is removed after each test.
class MnistFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "corgy_mnist_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string path(const std::string& name) const { return (directory_ / name).string(); }
  std::string write(const std::string& name, const std::vector<char>& bytes) const {
    std::ofstream file(path(name), std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path(name);
  }
  /// A copy of data/mnist's weight files (not the digits).
  void copy_weights() const {
    for (const char* name : {"conv1", "conv2", "fc1"}) {
      for (const std::string& file : {fmt::format("weights_{}.dat", name), fmt::format("bias_{}.dat", name),
                                      fmt::format("{}.weight.npy", name), fmt::format("{}.bias.npy", name)}) {
        std::filesystem::copy_file(mnist_data(file), path(file), std::filesystem::copy_options::overwrite_existing);
      }
    }
  }
  std::string directory() const { return directory_.string(); }

 private:
  std::filesystem::path directory_;
};

/// An IDX header: the magic, then big-endian dimensions; `data_bytes` zero bytes after it.
std::vector<char> idx_file(std::uint32_t magic, std::vector<std::uint32_t> dims, std::size_t data_bytes) {
  std::vector<char> bytes;
  for (std::uint32_t value : [&] {
         dims.insert(dims.begin(), magic);
         return dims;
       }()) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((value >> shift) & 0xff));
  }
  bytes.resize(bytes.size() + data_bytes, 0);
  return bytes;
}

/// `load` must throw corgy::Error whose message contains every one of `parts`.
template <class Load>
void expect_error(Load load, std::initializer_list<std::string> parts) {
  try {
    load();
    ADD_FAILURE() << "no error; expected one mentioning '" << *parts.begin() << "'";
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST_F(MnistFiles, PyTorchOrderDatFilesLoadTheSameWeights) {
  // weights_*.dat written in OIHW / [out][in] order from the .npy files, loaded with the matching layout options.
  Sequential reference = load_mnist_model(mnist_data(""));
  for (const char* name : {"conv1", "conv2", "fc1"}) {
    save_raw(path(fmt::format("weights_{}.dat", name)),
             load_npy(mnist_data(fmt::format("{}.weight.npy", name))).values());
    save_raw(path(fmt::format("bias_{}.dat", name)), load_npy(mnist_data(fmt::format("{}.bias.npy", name))).values());
  }
  Sequential from_oihw = load_mnist_model(directory(), pytorch_order_dat);
  expect_same_parameters(reference, from_oihw);
}

TEST_F(MnistFiles, TruncatedWeightFileSaysWhichFileLayerAndSizes) {
  copy_weights();
  std::filesystem::resize_file(path("weights_conv2.dat"), 204800 - 4);
  expect_error([&] { load_mnist_model(directory()); },
               {path("weights_conv2.dat"), "conv2d 5x5/1 pad 2, 32->64", "204800 bytes", "204796 bytes", "truncated",
                "OHWI (64, 5, 5, 32)"});
}

TEST_F(MnistFiles, OversizedWeightFileSaysWhichFileLayerAndSizes) {
  copy_weights();
  std::filesystem::resize_file(path("weights_fc1.dat"), 125440 + 40);
  expect_error([&] { load_mnist_model(directory()); },
               {path("weights_fc1.dat"), "linear 3136->10", "125440 bytes", "125480 bytes", "40 bytes too many"});
  // The bias of the right count but for another layer: weights_conv1 is fine, bias_conv1 has conv2's 64 values.
  copy_weights();
  std::filesystem::copy_file(mnist_data("bias_conv2.dat"), path("bias_conv1.dat"),
                             std::filesystem::copy_options::overwrite_existing);
  expect_error([&] { load_mnist_model(directory()); },
               {path("bias_conv1.dat"), "conv2d 5x5/1 pad 2, 1->32", "bias (32)", "128 bytes", "256 bytes"});
}

TEST_F(MnistFiles, MissingWeightFileIsNamed) {
  copy_weights();
  std::filesystem::remove(path("bias_fc1.dat"));
  expect_error([&] { load_mnist_model(directory()); }, {path("bias_fc1.dat"), "cannot open"});
}

TEST_F(MnistFiles, NpyOfTheWrongShapeIsRejected) {
  copy_weights();
  // fc1.weight transposed to (3136, 10): the right count, the wrong layout.
  const Variable fc1 = load_npy(mnist_data("fc1.weight.npy"));
  Variable transposed(Shape::matrix(3136, 10));
  for (int o = 0; o < 10; ++o)
    for (int i = 0; i < 3136; ++i) transposed.at(0, 0, i, o) = fc1.at(0, 0, o, i);
  save_npy(path("fc1.weight.npy"), transposed);
  expect_error([&] { load_mnist_model(directory(), pytorch_npy); },
               {path("fc1.weight.npy"), "linear 3136->10", "(1, 1, 10, 3136)", "(1, 1, 3136, 10)"});
}

TEST_F(MnistFiles, LinearAsConvNeedsAnInputShapeThatFitsTheLayer) {
  Linear fc({.in_features = 3136, .out_features = 10});
  expect_error(
      [&] {
        load_raw_weights(fc, mnist_data("weights_fc1.dat"), LinearWeightLayout::ohwi_conv, {1, 64, 7, 6});
      },
      {"weights_fc1.dat", "C*H*W = 3136", "(1, 64, 7, 6)"});
}

TEST_F(MnistFiles, IdxReadsWhatItWasGiven) {
  std::vector<char> images = idx_file(0x00000803, {2, 2, 3}, 12);
  images[16 + 5] = static_cast<char>(255);
  images[16 + 7] = 51;
  const std::vector<char> labels = {0, 0, 8, 1, 0, 0, 0, 2, 7, 3};
  const LabeledImages set = load_idx_dataset(write("images", images), write("labels", labels));
  EXPECT_EQ(set.images.shape(), (Shape{2, 1, 2, 3}));
  EXPECT_EQ(set.images.at(0, 0, 1, 2), 1.0f);
  EXPECT_EQ(set.images.at(1, 0, 0, 1), 0.2f);
  EXPECT_EQ(set.images.at(1, 0, 0, 0), 0.0f);
  EXPECT_EQ(set.labels, (std::vector<std::uint8_t>{7, 3}));
}

TEST_F(MnistFiles, IdxWithTheWrongMagicIsRejected) {
  const std::string labels_as_images = write("labels", idx_file(0x00000801, {4}, 4));
  expect_error([&] { load_idx_images(labels_as_images); },
               {labels_as_images, "magic number 0x00000801", "expected 0x00000803"});
  const std::string images_as_labels = write("images", idx_file(0x00000803, {1, 2, 2}, 4));
  expect_error([&] { load_idx_labels(images_as_labels); },
               {images_as_labels, "magic number 0x00000803", "expected 0x00000801"});
  const std::string png = mnist_data("samples/digit_0_label_6.png");
  expect_error([&] { load_idx_images(png); }, {png, "not IDX images", "magic number 0x89504e47"});
}

TEST_F(MnistFiles, TruncatedIdxIsRejected) {
  const std::string short_data = write("short", idx_file(0x00000803, {10, 28, 28}, 9 * 784));
  expect_error([&] { load_idx_images(short_data); },
               {short_data, "truncated IDX images", "10 x 28 x 28", "7840 data bytes", "7072 bytes"});
  std::vector<char> header = idx_file(0x00000803, {10, 28, 28}, 0);
  header.resize(10);
  const std::string short_header = write("header", header);
  expect_error([&] { load_idx_images(short_header); }, {short_header, "truncated IDX images", "header needs 16"});
  const std::string short_labels = write("labels", idx_file(0x00000801, {10}, 3));
  expect_error([&] { load_idx_labels(short_labels); }, {short_labels, "truncated IDX labels"});
  // Dimensions whose product overflows 64 bits are just too large for the file.
  const std::string huge = write("huge", idx_file(0x00000803, {0xffffffff, 0xffffffff, 0xffffffff}, 8));
  expect_error([&] { load_idx_images(huge); }, {huge, "truncated IDX images", "more than 24"});
  const std::string empty = write("empty", {});
  expect_error([&] { load_idx_labels(empty); }, {empty, "not IDX labels", "0 bytes"});
}

TEST_F(MnistFiles, IdxImagesAndLabelsMustHaveTheSameCount) {
  const std::string images = write("images", idx_file(0x00000803, {3, 28, 28}, 3 * 784));
  const std::string labels = write("labels", idx_file(0x00000801, {2}, 2));
  expect_error([&] { load_idx_dataset(images, labels); }, {images, "3 images", labels, "2 labels"});
}

TEST_F(MnistFiles, DigitImageOfTheWrongSizeIsRejectedUnlessResized) {
  Variable image(Shape{1, 1, 20, 24});
  image.fill(0.5f);
  save_png(path("digit.png"), image);
  expect_error([&] { load_mnist_digit(path("digit.png")); }, {path("digit.png"), "28 x 28", "24 x 20"});
  const Variable resized = load_mnist_digit(path("digit.png"), true);
  EXPECT_EQ(resized.shape(), (Shape{1, 1, 28, 28}));
  EXPECT_NEAR(resized.at(0, 0, 13, 13), 128.0f / 255.0f, 1e-6f);
}

}  // namespace
}  // namespace corgy::testing
