// Drawing boxes and labels, and the PNG round trip of images.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "corgy/detect/draw.h"
#include "corgy/io/image.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

bool has_color(const Variable& image, int x, int y, Color c) {
  return image.at(0, 0, y, x) == c.r && image.at(0, 1, y, x) == c.g && image.at(0, 2, y, x) == c.b;
}

std::string temp_png(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("corgy_{}_{}.png", name, ::getpid())).string();
}

TEST(DetectDraw, BoxOutlineCoversItsEdgesOnly) {
  Variable image(Shape{1, 3, 10, 12});
  const Color red{1, 0, 0};
  draw_box(image, {4, 5, 4, 4}, red, 1);  // left 2, right 6, top 3, bottom 7
  for (int x = 2; x <= 6; ++x) {
    EXPECT_TRUE(has_color(image, x, 3, red)) << x;
    EXPECT_TRUE(has_color(image, x, 7, red)) << x;
  }
  for (int y = 3; y <= 7; ++y) {
    EXPECT_TRUE(has_color(image, 2, y, red)) << y;
    EXPECT_TRUE(has_color(image, 6, y, red)) << y;
  }
  EXPECT_TRUE(has_color(image, 4, 5, {0, 0, 0}));
  EXPECT_TRUE(has_color(image, 1, 3, {0, 0, 0}));
  EXPECT_TRUE(has_color(image, 7, 7, {0, 0, 0}));
  draw_box(image, {0, 0, 40, 40}, red, 3);  // clipped, no crash
  EXPECT_THROW(draw_box(*std::make_unique<Variable>(Shape{1, 1, 4, 4}), {}, red, 1), Error);
}

TEST(DetectDraw, LabelsAreTextOnABackground) {
  Variable image(Shape{1, 3, 20, 40});
  const Color white{1, 1, 1};
  const Color blue{0, 0, 1};
  draw_label(image, 2, 2, "Hi\x01", white, blue, 1);
  int text = 0;
  int background = 0;
  for (int y = 0; y < 20; ++y) {
    for (int x = 0; x < 40; ++x) {
      text += has_color(image, x, y, white);
      background += has_color(image, x, y, blue);
    }
  }
  EXPECT_GT(text, 10);
  EXPECT_GT(background, text);
  EXPECT_TRUE(has_color(image, 2, 2, blue));         // the margin around the text
  EXPECT_TRUE(has_color(image, 39, 19, {0, 0, 0}));  // outside the label
}

TEST(DetectDraw, ClassColorsFollowDarknet) {
  const Color first = class_color(0, 20);  // offset 0: darknet's first palette entry, magenta
  EXPECT_EQ(first.r, 1.0f);
  EXPECT_EQ(first.g, 0.0f);
  EXPECT_EQ(first.b, 1.0f);
  // offset 123457 % 20 = 17: ratio 4.25 between palette entries {1, 1, 0} and {1, 0, 0}, read as (b, g, r)
  const Color other = class_color(1, 20);
  EXPECT_NEAR(other.r, 0.0f, 1e-6);
  EXPECT_NEAR(other.g, 0.75f, 1e-6);
  EXPECT_NEAR(other.b, 1.0f, 1e-6);
}

TEST(DetectDraw, DetectionsGetBoxesAndLabels) {
  Variable image(Shape{1, 3, 60, 80});
  draw_detections(image, {{{40, 35, 30, 20}, 1, 0.87f}}, {"cat", "dog"}, 2);
  const Color color = class_color(1, 2);
  EXPECT_TRUE(has_color(image, 25, 45, color));  // bottom-left corner of the box
  EXPECT_TRUE(has_color(image, 26, 12, color));  // the label's background above the box
}

TEST(DetectDraw, PngRoundTripKeepsEightBitValues) {
  std::mt19937 rng(2);
  Variable image(Shape{1, 3, 7, 9});
  for (float& v : image.values()) v = static_cast<float>(rng() % 256) / 255.0f;
  const std::string path = temp_png("roundtrip");
  save_png(path, image);
  const Variable back = load_image(path);
  std::filesystem::remove(path);
  EXPECT_TRUE(outputs_match(back, image, 1e-6));
  const Variable grey = load_image(fixture_path("darknet/photo.png"), 1);
  EXPECT_EQ(grey.shape(), (Shape{1, 1, 72, 96}));
}

TEST(DetectDraw, ImageErrorsNameTheFile) {
  try {
    load_image("/nonexistent/photo.jpg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/photo.jpg: cannot open the image"), std::string::npos);
  }
  EXPECT_THROW(save_png("/nonexistent/dir/out.png", Variable(Shape{1, 3, 2, 2})), Error);
  EXPECT_THROW(save_png(temp_png("bad"), Variable(Shape{1, 2, 2, 2})), Error);
  EXPECT_THROW(letterbox_image(Variable(Shape{2, 3, 4, 4}), 8, 8), Error);
  EXPECT_THROW(resize_image(Variable(Shape{1, 3, 4, 4}), 0, 8), Error);
}

TEST(DetectDraw, ResizeToOneRowTakesTheFirstRow) {
  Variable image(Shape{1, 1, 3, 4});
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) image.at(0, 0, y, x) = static_cast<float>(10 * y + x);
  }
  const Variable row = resize_image(image, 4, 1);
  ASSERT_EQ(row.shape(), (Shape{1, 1, 1, 4}));
  for (int x = 0; x < 4; ++x) EXPECT_EQ(row.at(0, 0, 0, x), static_cast<float>(x));
  const Variable single = resize_image(image, 1, 1);
  EXPECT_EQ(single.at(0, 0, 0, 0), 3.0f);  // the last column of the first row
}

TEST(DetectDraw, LetterboxKeepsTheAspectRatioOnGrey) {
  Variable image(Shape{1, 3, 10, 20});
  image.fill(1.0f);
  const Variable boxed = letterbox_image(image, 16, 16);  // scaled to 16 x 8, rows 4..11
  EXPECT_EQ(boxed.at(0, 0, 0, 0), 0.5f);
  EXPECT_EQ(boxed.at(0, 0, 3, 8), 0.5f);
  EXPECT_EQ(boxed.at(0, 0, 4, 0), 1.0f);
  EXPECT_EQ(boxed.at(0, 2, 11, 15), 1.0f);
  EXPECT_EQ(boxed.at(0, 1, 12, 8), 0.5f);
}

}  // namespace
}  // namespace corgy::testing
