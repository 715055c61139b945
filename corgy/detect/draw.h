// Drawing detections onto an image: box outlines and labels in a small bitmap font (stb_easy_font).
#pragma once

#include <string>
#include <vector>

#include "corgy/detect/detection.h"
#include "corgy/variable.h"

namespace corgy {

/// An RGB colour with components in [0, 1].
struct Color {
  float r = 0.0f;
  float g = 0.0f;
  float b = 0.0f;
};

/// Darknet's colour for a class (image.c: get_color), so boxes look as they do in darknet's predictions.png.
Color class_color(int class_id, int classes);

/// Draws the outline of `box` (pixel coordinates), `thickness` pixels wide, clipped to the image. image is
/// (1, 3, H, W); throws corgy::Error for another shape.
void draw_box(Variable& image, const Box& box, Color color, int thickness);

/// Draws `text` (printable ASCII; other characters become '?') with its top-left corner at (x, y), in
/// stb_easy_font's bitmap font enlarged `scale` times, on a filled rectangle of `background`; clipped to the image.
void draw_label(Variable& image, int x, int y, const std::string& text, Color text_color, Color background, int scale);

/// Draws every box with a "name 87%" label above it; boxes are in pixels of `image`. `names` gives the class names
/// (a class without a name is shown as "class <id>"); `classes` is the model's class count (for the colours).
void draw_detections(Variable& image, const std::vector<LabeledBox>& boxes, const std::vector<std::string>& names,
                     int classes);

}  // namespace corgy
