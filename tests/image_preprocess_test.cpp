// corgy::preprocess_image against OpenCV and numpy: tools/image_preprocess_reference.py computed each case of
// tests/fixtures/image_preprocess/cases.json from the same PNG with cv2.resize(INTER_LINEAR) and numpy; and its
// errors for options that cannot be applied.
#include "corgy/io/image_preprocess.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "corgy/error.h"
#include "corgy/io/image.h"
#include "corgy/io/npy.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

using Json = nlohmann::json;

// The reference's options (tools/image_preprocess_reference.py: CASES) in corgy's terms.
ImagePreprocess options_of(const Json& item) {
  ImagePreprocess options;
  if (item.contains("resize_shorter")) options.resize_shorter = item["resize_shorter"].get<int>();
  if (item.contains("resize")) {
    options.resize_width = item["resize"][0].get<int>();
    options.resize_height = item["resize"][1].get<int>();
  }
  if (item.contains("crop")) {
    options.crop_width = item["crop"][0].get<int>();
    options.crop_height = item["crop"][1].get<int>();
  }
  if (item.contains("scale")) options.scale = item["scale"].get<float>();
  if (item.contains("mean")) options.mean = item["mean"].get<std::vector<float>>();
  if (item.contains("std")) options.std = item["std"].get<std::vector<float>>();
  if (item.contains("bgr")) options.bgr = item["bgr"].get<bool>();
  return options;
}

TEST(ImagePreprocess, EqualsOpenCvAndNumpy) {
  std::ifstream file(fixture_path("image_preprocess/cases.json"));
  const Json cases = Json::parse(file);
  const std::string image_path = fixture_path(cases["image"].get<std::string>());
  const Variable image = load_image(image_path);
  int checked = 0;
  for (const auto& [name, item] : cases["cases"].items()) {
    SCOPED_TRACE(name);
    const Variable expected = load_npy(fixture_path("image_preprocess/" + name + ".npy"));
    const PreprocessedImage actual = preprocess_image(image, options_of(item), image_path);
    ASSERT_EQ(actual.tensor.shape(), expected.shape());
    float worst = 0.0f;
    for (std::size_t i = 0; i < expected.count(); ++i) {
      worst = std::max(worst, std::abs(actual.tensor.data()[i] - expected.data()[i]));
    }
    EXPECT_LE(worst, 1e-5f);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

TEST(ImagePreprocess, GeometryOfImagenetOnAWideImage) {
  Variable image(Shape{1, 3, 300, 400});
  const PreprocessedImage prepared = preprocess_image(image, imagenet_preprocess(), "wide.png");
  const PreprocessGeometry& g = prepared.geometry;
  EXPECT_EQ(prepared.tensor.shape(), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(g.image_width, 400);
  EXPECT_EQ(g.image_height, 300);
  EXPECT_EQ(g.resized_width, 341);  // int(256 * 400 / 300)
  EXPECT_EQ(g.resized_height, 256);
  EXPECT_EQ(g.crop_x, 58);  // round(58.5) to even
  EXPECT_EQ(g.crop_y, 16);
}

TEST(ImagePreprocess, SameSizeResizeIsTheIdentity) {
  Variable image(Shape{1, 2, 3, 4});
  for (std::size_t i = 0; i < image.count(); ++i) image.data()[i] = static_cast<float>(i);
  const Variable same = resize_bilinear_half_pixel(image, 4, 3);
  for (std::size_t i = 0; i < image.count(); ++i) EXPECT_EQ(same.data()[i], image.data()[i]);
}

TEST(ImagePreprocess, BadOptionsAreClearErrors) {
  const Variable image(Shape{1, 3, 72, 96});
  const auto error_for = [&](const ImagePreprocess& options) {
    return error_of([&] { preprocess_image(image, options, "photo.png"); });
  };
  ImagePreprocess crop;
  crop.resize_shorter = 64;
  crop.crop_width = crop.crop_height = 72;
  EXPECT_EQ(error_for(crop), "photo.png: cannot crop 72 x 72 out of the 85 x 64 image (resized from 96 x 72)");
  ImagePreprocess two_means;
  two_means.mean = {0.5f, 0.5f};
  EXPECT_TRUE(contains(error_for(two_means),
                       "photo.png: image preprocessing: mean takes 1 value or one per channel (3), "
                       "got 2 (0.5, 0.5)"))
      << error_for(two_means);
  ImagePreprocess zero_std;
  zero_std.std = {0.2f, 0.0f, 0.2f};
  EXPECT_TRUE(contains(error_for(zero_std), "std must be finite and not 0, got 0.2, 0, 0.2")) << error_for(zero_std);
  ImagePreprocess both;
  both.resize_shorter = 10;
  both.resize_width = both.resize_height = 10;
  EXPECT_TRUE(contains(error_for(both), "resize the shorter side to 10 or to 10 x 10, not both")) << error_for(both);
  ImagePreprocess half_crop;
  half_crop.crop_width = 10;
  EXPECT_TRUE(contains(error_for(half_crop), "a crop needs a width and a height, got 10 x 0"));
  ImagePreprocess scale;
  scale.scale = 0.0f;
  EXPECT_TRUE(contains(error_for(scale), "scale must be finite and not 0"));
  ImagePreprocess bgr;
  bgr.bgr = true;
  const Variable grey(Shape{1, 1, 8, 8});
  EXPECT_TRUE(contains(error_of([&] { preprocess_image(grey, bgr, "grey.png"); }), "BGR order needs 3 channels"));
}

}  // namespace
}  // namespace corgy::testing
