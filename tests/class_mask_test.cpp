// corgy's segmentation masks: the per-pixel argmax, its mapping back through a resize and crop onto the image (void
// outside the crop), PASCAL VOC's colours and the PNG they are written to.
#include "corgy/segment/class_mask.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "corgy/io/image.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

TEST(ClassMask, ArgmaxPerPixelTiesToTheLowerClass) {
  // (1, 3, 1, 3): pixel 0 is class 2, pixel 1 a tie of classes 0 and 1, pixel 2 class 1.
  const Variable scores(Shape{1, 3, 1, 3}, std::vector<float>{0, 5, 1, /**/ 0, 5, 2, /**/ 1, 4, 0});
  const ClassMask mask = argmax_class_mask(scores, 0, "scores");
  EXPECT_EQ(mask.width, 3);
  EXPECT_EQ(mask.height, 1);
  EXPECT_EQ(mask.classes, (std::vector<std::uint8_t>{2, 0, 1}));
  EXPECT_EQ(error_of([&] {
              argmax_class_mask(Variable(Shape{1, 1, 2, 2}), 0, "one class");
            }),
            "one class: a class mask needs scores (N, K, H, W) with 2 <= K <= 255 classes and image 0 of N, got "
            "(1, 1, 2, 2)");
  EXPECT_TRUE(contains(error_of([&] { argmax_class_mask(scores, 1, "scores"); }), "image 1 of N"));
}

TEST(ClassMask, MappedThroughResizeAndCropWithVoidOutside) {
  // A 2 x 1 mask over the center 4 x 2 crop of an image resized from 12 x 3 to 8 x 2 (crop x = 2).
  const ClassMask mask{.width = 2, .height = 1, .classes = {1, 2}};
  const PreprocessGeometry geometry{.image_width = 12,
                                    .image_height = 3,
                                    .resized_width = 8,
                                    .resized_height = 2,
                                    .crop_x = 2,
                                    .crop_y = 0,
                                    .crop_width = 4,
                                    .crop_height = 2};
  const ClassMask on_image = class_mask_on_image(mask, geometry);
  ASSERT_EQ(on_image.width, 12);
  ASSERT_EQ(on_image.height, 3);
  // Image column x has its centre at (x + 0.5) * 8 / 12 in the resized image: columns 0-2 fall left of the crop,
  // 3-5 in its first half, 6-8 in its second, 9-11 right of it.
  const std::vector<std::uint8_t> row = {255, 255, 255, 1, 1, 1, 2, 2, 2, 255, 255, 255};
  for (int y = 0; y < 3; ++y) {
    EXPECT_EQ(std::vector<std::uint8_t>(on_image.classes.begin() + y * 12, on_image.classes.begin() + (y + 1) * 12),
              row);
  }
}

TEST(ClassMask, GeometryOfNoSizeIsAnError) {
  const ClassMask mask{.width = 2, .height = 1, .classes = {1, 2}};
  PreprocessGeometry geometry{.image_width = 4,
                              .image_height = 2,
                              .resized_width = 4,
                              .resized_height = 2,
                              .crop_x = 0,
                              .crop_y = 0,
                              .crop_width = 0,
                              .crop_height = 0};
  EXPECT_TRUE(contains(error_of([&] { class_mask_on_image(mask, geometry); }),
                       "the geometry's sizes must be positive, got image 4 x 2, resized 4 x 2, crop 0 x 0"));
  geometry.crop_width = 4;
  geometry.crop_height = 2;
  EXPECT_EQ(class_mask_on_image(mask, geometry).classes, (std::vector<std::uint8_t>{1, 1, 2, 2, 1, 1, 2, 2}));
  EXPECT_TRUE(
      contains(error_of([&] { class_mask_on_image(ClassMask{.width = 3, .height = 1, .classes = {}}, geometry); }),
               "class_mask_on_image: a class mask of 3 x 1 needs 3 classes, got 0"));
}

TEST(ClassMask, RgbBytesAreTheVocColours) {
  const ClassMask mask{.width = 2, .height = 1, .classes = {15, 255}};
  EXPECT_EQ(class_mask_rgb(mask, "mask"), (std::vector<std::uint8_t>{192, 128, 128, 224, 224, 192}));
}

TEST(ClassMask, VocColours) {
  EXPECT_EQ(voc_color(0), (std::array<std::uint8_t, 3>{0, 0, 0}));
  EXPECT_EQ(voc_color(1), (std::array<std::uint8_t, 3>{128, 0, 0}));
  EXPECT_EQ(voc_color(15), (std::array<std::uint8_t, 3>{192, 128, 128}));  // person
  EXPECT_EQ(voc_color(mask_void_class), (std::array<std::uint8_t, 3>{224, 224, 192}));
}

TEST(ClassMask, PngHoldsTheColours) {
  const ClassMask mask{.width = 3, .height = 2, .classes = {0, 1, 2, 15, 255, 1}};
  const std::string path = ::testing::TempDir() + "class_mask_test.png";
  save_class_mask_png(path, mask);
  const Variable image = load_image(path);
  std::remove(path.c_str());
  ASSERT_EQ(image.shape(), (Shape{1, 3, 2, 3}));
  for (std::size_t i = 0; i < mask.classes.size(); ++i) {
    const std::array<std::uint8_t, 3> color = voc_color(mask.classes[i]);
    for (std::size_t c = 0; c < 3; ++c) {
      EXPECT_EQ(static_cast<int>(std::lround(image.data()[c * 6 + i] * 255.0f)), color[c]) << i << " " << c;
    }
  }
  EXPECT_TRUE(contains(error_of([&] { save_class_mask_png(path, ClassMask{.width = 2, .height = 2, .classes = {1}}); }),
                       "a class mask of 2 x 2 needs 4 classes, got 1"));
}

}  // namespace
}  // namespace corgy::testing
