// The .npy reader and writer: round trips, files written by numpy (tools/make_fixtures.py writes them under
// tests/fixtures/pytorch/npy), and every way a file can be wrong, each a corgy::Error naming the file.
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "test_util.h"

namespace corgy::testing {
namespace {

using Bytes = std::vector<char>;

std::string numpy_file(const std::string& name) { return fixture_path("pytorch/npy/" + name); }

Bytes read_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

/// A version 1.0 .npy file with `header` (padded as numpy pads it) followed by `data_bytes` zero bytes.
Bytes npy_v1(std::string header, std::size_t data_bytes) {
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string file("\x93NUMPY\x01\x00", 8);
  file.push_back(static_cast<char>(header.size() & 0xff));
  file.push_back(static_cast<char>(header.size() >> 8));
  file += header;
  file.append(data_bytes, '\0');
  return {file.begin(), file.end()};
}

/// Writes files into a directory of its own that is removed after each test.
class NpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "corgy_npy_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    directory_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  std::string path(const std::string& name) const { return (directory_ / name).string(); }
  std::string write(const std::string& name, const Bytes& bytes) const {
    std::ofstream file(path(name), std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path(name);
  }

 private:
  std::filesystem::path directory_;
};

/// load_npy(path) must throw corgy::Error whose message starts with the file's name and then says `reason`.
void expect_load_error(const std::string& path, const std::string& reason) {
  try {
    load_npy(path);
    ADD_FAILURE() << path << ": loaded without an error, expected one about '" << reason << "'";
  } catch (const Error& e) {
    const std::string message = e.what();
    ASSERT_EQ(message.rfind(path + ": ", 0), 0u) << "message does not start with the file's name: " << message;
    EXPECT_NE(message.find(reason, path.size()), std::string::npos) << "expected '" << reason << "' in: " << message;
  }
}

TEST_F(NpyFiles, RoundTripKeepsShapeAndEveryBit) {
  std::mt19937 rng(5);
  for (const Shape shape : {Shape{2, 3, 4, 5}, Shape{1, 1, 1, 7}, Shape{3, 1, 2, 1}}) {
    const Variable tensor = random_variable(shape, rng, 100.0f);
    save_npy(path("tensor.npy"), tensor);
    const Variable loaded = load_npy(path("tensor.npy"));
    EXPECT_EQ(loaded.shape(), shape);
    ASSERT_EQ(loaded.count(), tensor.count());
    EXPECT_EQ(std::memcmp(loaded.data(), tensor.data(), tensor.count() * sizeof(float)), 0) << shape.str();
  }
}

TEST_F(NpyFiles, SavesWithAGivenShapeOfAnyRank) {
  // An ONNX graph's declared (N, F): corgy's (N, F, 1, 1) written as numpy and ONNX Runtime shape it.
  const Variable tensor(Shape{2, 5, 1, 1}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const std::int64_t matrix[] = {2, 5};
  save_npy(path("matrix.npy"), tensor, matrix);
  const Bytes bytes = read_bytes(path("matrix.npy"));
  EXPECT_NE(std::string(bytes.begin(), bytes.end()).find("'shape': (2, 5)"), std::string::npos);
  EXPECT_EQ(load_npy(path("matrix.npy")).shape(), (Shape{1, 1, 2, 5}));  // load_npy's 4-D reading of (2, 5)
  const std::int64_t vector[] = {10};
  save_npy(path("vector.npy"), tensor, vector);
  const Bytes vector_bytes = read_bytes(path("vector.npy"));
  EXPECT_NE(std::string(vector_bytes.begin(), vector_bytes.end()).find("'shape': (10,)"), std::string::npos);
  const std::int64_t wrong[] = {3, 5};
  try {
    save_npy(path("wrong.npy"), tensor, wrong);
    ADD_FAILURE() << "saved 10 values as (3, 5)";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot save 10 values as shape (3, 5)"), std::string::npos) << e.what();
  }
}

TEST_F(NpyFiles, SavedHeaderIsPaddedTo64BytesAndNamesTheShape) {
  save_npy(path("tensor.npy"), Variable(Shape{2, 3, 4, 5}));
  const Bytes bytes = read_bytes(path("tensor.npy"));
  ASSERT_GE(bytes.size(), 10u);
  const std::size_t header_length =
      static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  EXPECT_EQ((10 + header_length) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_length + 2 * 3 * 4 * 5 * sizeof(float));
  const std::string header(bytes.data() + 10, header_length);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (2, 3, 4, 5)"), std::string::npos) << header;
}

TEST_F(NpyFiles, SavingWhereNoFileCanBeCreatedNamesTheFile) {
  const std::string unwritable = path("no_such_directory/tensor.npy");
  try {
    save_npy(unwritable, Variable(Shape{1, 1, 1, 3}));
    ADD_FAILURE() << "saved into a directory that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(unwritable), std::string::npos) << e.what();
  }
}

// numpy's files: element i in C order is i * 0.25 - 1 (tools/make_fixtures.py).
TEST(NpyNumpyFiles, ReadsOneToFourDimensionsIntoTrailingAxes) {
  const std::vector<std::pair<std::string, Shape>> files = {
      {"vector_5.npy", {1, 1, 1, 5}},       {"matrix_2x3.npy", {1, 1, 2, 3}},   {"tensor_2x3x4.npy", {1, 2, 3, 4}},
      {"tensor_2x3x4x5.npy", {2, 3, 4, 5}}, {"version2_3x4.npy", {1, 1, 3, 4}},
  };
  for (const auto& [name, shape] : files) {
    const Variable tensor = load_npy(numpy_file(name));
    ASSERT_EQ(tensor.shape(), shape) << name;
    for (std::size_t i = 0; i < tensor.count(); ++i) {
      ASSERT_EQ(tensor.data()[i], static_cast<float>(i) * 0.25f - 1.0f) << name << " element " << i;
    }
  }
  // C order: the last axis varies fastest.
  EXPECT_EQ(load_npy(numpy_file("tensor_2x3x4.npy")).at(0, 1, 2, 3), (1 * 12 + 2 * 4 + 3) * 0.25f - 1.0f);
}

TEST(NpyNumpyFiles, RejectsWhatCorgyCannotRepresent) {
  expect_load_error(numpy_file("float64_2x3.npy"), "float32");
  expect_load_error(numpy_file("big_endian_2x3.npy"), "float32");
  expect_load_error(numpy_file("fortran_2x3.npy"), "C order");
  expect_load_error(numpy_file("five_d.npy"), "5 dimensions");
  expect_load_error(numpy_file("scalar.npy"), "0 dimensions");
  expect_load_error(numpy_file("empty.npy"), "no elements");
}

TEST_F(NpyFiles, MissingFileNamesTheFile) { expect_load_error(path("missing.npy"), "cannot open"); }

TEST_F(NpyFiles, BadMagicIsRejected) {
  Bytes bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
  bytes[1] = 'X';
  expect_load_error(write("bad_magic.npy", bytes), "bad magic");
  expect_load_error(write("empty_file.npy", {}), "bad magic");
  expect_load_error(write("text.npy", Bytes{'h', 'e', 'l', 'l', 'o', '\n'}), "bad magic");
}

TEST_F(NpyFiles, DataSizeMustMatchTheShape) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_NO_THROW(load_npy(write("exact.npy", npy_v1(header, 24))));
  expect_load_error(write("truncated.npy", npy_v1(header, 20)), "needs 24 data bytes, the file has 20");
  expect_load_error(write("extra.npy", npy_v1(header, 28)), "needs 24 data bytes, the file has 28");
}

TEST_F(NpyFiles, TruncatedHeaderIsRejected) {
  Bytes bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0);
  bytes.resize(40);
  expect_load_error(write("truncated_header.npy", bytes), "truncated");
  const Bytes version2_prefix = {'\x93', 'N', 'U', 'M', 'P', 'Y', '\x02', '\x00', '\x10', '\x00'};
  expect_load_error(write("truncated_v2_length.npy", version2_prefix), "truncated");
}

TEST_F(NpyFiles, UnsupportedVersionIsRejected) {
  Bytes bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12);
  bytes[6] = '\x07';
  expect_load_error(write("version7.npy", bytes), "version 7");
}

TEST_F(NpyFiles, MalformedShapesAreRejected) {
  struct BadShape {
    std::string name;
    std::string shape;
    std::string reason;
  };
  const std::vector<BadShape> shapes = {
      {"no_shape", "", "has no shape"},
      {"negative", "'shape': (-1,), ", "malformed .npy shape (-1,)"},
      {"not_a_number", "'shape': (2, x), ", "malformed .npy shape (2, x)"},
      {"empty_entry", "'shape': (2, , 3), ", "malformed .npy shape (2, , 3)"},
      {"too_large", "'shape': (99999999999, 1), ", "has a dimension too large"},
      {"too_many_elements", "'shape': (2000000, 2000000, 2000000), ", "more than 2^64 bytes"},
  };
  for (const BadShape& bad : shapes) {
    SCOPED_TRACE(bad.name);
    const std::string header = "{'descr': '<f4', 'fortran_order': False, " + bad.shape + "}";
    expect_load_error(write(bad.name + ".npy", npy_v1(header, 4)), bad.reason);
  }
}

TEST_F(NpyFiles, DirectoryIsNotAFile) { expect_load_error(path(""), ".npy"); }

TEST_F(NpyFiles, SavingAnEmptyVariableIsAnError) { EXPECT_THROW(save_npy(path("empty.npy"), Variable()), Error); }

}  // namespace
}  // namespace corgy::testing
