// A segmentation network's answer: the class of each pixel, mapped back onto the original image and written as a
// colour PNG in PASCAL VOC's palette.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "corgy/io/image_preprocess.h"
#include "corgy/variable.h"

namespace corgy {

/// A class index per pixel, row-major, width x height.
struct ClassMask {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> classes;
};

/// The class index of pixels that the network did not see (outside the center crop): PASCAL VOC's "void".
inline constexpr int mask_void_class = 255;

/// The per-pixel argmax over the classes of image `n` of `scores`, (N, K, H, W) with 2 <= K <= 255; ties go to the
/// lower class. Throws corgy::Error naming `source` and the shape for another K or n out of range.
ClassMask argmax_class_mask(const Variable& scores, int n, const std::string& source);

/// `mask`, which covers the crop of `geometry`, at the original image's size: each image pixel's centre mapped
/// through the resize and the crop onto the mask (nearest neighbour); pixels outside the crop are mask_void_class.
/// Throws corgy::Error for a mask whose classes are not width x height or a geometry with a size that is not positive.
ClassMask class_mask_on_image(const ClassMask& mask, const PreprocessGeometry& geometry);

/// PASCAL VOC's colour of class `index` (0..255): its colour map, bits of the index spread over R, G and B
/// (0 black = background, 1 dark red, ..., 255 = void is (224, 224, 192)).
std::array<std::uint8_t, 3> voc_color(int index);

/// The mask in voc_color(): 8-bit RGB interleaved row by row, height x width x 3 bytes (image_from_pixels() reads
/// them). Throws corgy::Error naming `source` for a mask whose classes are not width x height.
std::vector<std::uint8_t> class_mask_rgb(const ClassMask& mask, const std::string& source);

/// Writes the mask as an 8-bit RGB PNG in voc_color(). Throws corgy::Error when the file cannot be written.
void save_class_mask_png(const std::string& path, const ClassMask& mask);

}  // namespace corgy
