// Photos in, answers out: an image prepared as a network expects it (corgy/io/image_preprocess.h), a classifier's
// most probable classes (corgy/classify/top_classes.h), a segmentation network's class mask mapped back onto the
// photo (corgy/segment/class_mask.h) and a YOLOv8 export's boxes in the photo (corgy/models/yolov8_detector.h). The
// same C++ functions corgy-run's --preset, --top, --mask and --boxes call.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <span>

#include "arrays.h"
#include "bind_models.h"
#include "corgy/classify/top_classes.h"
#include "corgy/error.h"
#include "corgy/io/image.h"
#include "corgy/io/image_preprocess.h"
#include "corgy/models/yolov8_detector.h"
#include "corgy/segment/class_mask.h"
#include "onnx_handle.h"

namespace corgy::python {

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

/// What preprocess_image returns: the tensor as a numpy array (corgy's page-aligned memory) and its geometry.
struct PreprocessedArray {
  py::array_t<float> tensor;
  PreprocessGeometry geometry;
};

/// What top_classes returns.
struct TopClassesResult {
  py::array_t<std::int64_t> indices;
  py::array_t<float> probabilities;
  bool from_logits = false;
  py::object labels;  // list[str] or None
};

constexpr py::ssize_t max_int = std::numeric_limits<int>::max();

std::vector<py::ssize_t> dims_of(const py::array& array) { return {array.shape(), array.shape() + array.ndim()}; }

std::string type_name(py::handle x) { return py::str(py::type::of(x).attr("__name__")); }

/// A numpy array of `x` (numpy's own or through numpy.asarray), with its dtype checked: TypeError naming `what`.
py::array array_of_dtype(py::handle x, const py::dtype& dtype, const std::string& what) {
  py::array array = py::isinstance<py::array>(x) ? py::reinterpret_borrow<py::array>(x)
                                                 : py::module_::import("numpy").attr("asarray")(x);
  if (!array.dtype().is(dtype)) {
    const std::string expected = py::str(py::handle(dtype));
    throw py::type_error(fmt::format("{}: expected {}, got {} (convert with .astype(numpy.{}))", what, expected,
                                     std::string(py::str(array.dtype())), expected));
  }
  return array;
}

/// An image argument as load_image() gives it, (1, channels, H, W) in [0, 1]: a path (str or os.PathLike) read with
/// `channels` channels, a uint8 array (H, W, C) of RGB(A) pixels or (H, W) of grey ones (as PIL's numpy.asarray and
/// OpenCV's cv2.cvtColor(..., COLOR_BGR2RGB) give them), or a float32 (1, C, H, W) in [0, 1] (corgy.load_image's).
/// `source` is set to what messages call it.
Variable image_argument(py::handle image, int channels, const std::string& what, std::string& source) {
  if (py::isinstance<py::str>(image) || py::hasattr(image, "__fspath__")) {
    source = py::str(py::module_::import("os").attr("fspath")(image));
    py::gil_scoped_release release;
    return load_image(source, channels);
  }
  if (!py::isinstance<py::array>(image) && !py::hasattr(image, "__array__") && !py::hasattr(image, "__dlpack__")) {
    throw py::type_error(
        fmt::format("{}: expected a path, a uint8 (H, W, 3) RGB array or a float32 (1, 3, H, W) image "
                    "in [0, 1], got {}",
                    what, type_name(image)));
  }
  py::array array = py::isinstance<py::array>(image) ? py::reinterpret_borrow<py::array>(image)
                                                     : py::module_::import("numpy").attr("asarray")(image);
  source = what;
  if (array.dtype().is(py::dtype::of<float>())) {
    auto floats = float32_input(array, what.c_str(), true);
    if (floats.ndim() != 4 || floats.shape(0) != 1) {
      throw py::value_error(
          fmt::format("{}: a float32 image is (1, C, H, W) in [0, 1], got shape {}", what, dims_str(dims_of(floats))));
    }
    return variable_of(floats, what.c_str());
  }
  if (!array.dtype().is(py::dtype::of<std::uint8_t>())) {
    throw py::type_error(fmt::format("{}: expected uint8 pixels (H, W, C) or a float32 (1, C, H, W) image, got {}",
                                     what, std::string(py::str(array.dtype()))));
  }
  const std::vector<py::ssize_t> dims = dims_of(array);
  if ((array.ndim() != 2 && array.ndim() != 3) || (array.ndim() == 3 && (dims[2] < 1 || dims[2] > 4)) || dims[0] <= 0 ||
      dims[1] <= 0 || dims[0] > max_int || dims[1] > max_int) {
    throw py::value_error(fmt::format("{}: uint8 pixels are (H, W, C) with 1 to 4 channels or (H, W), got shape {}",
                                      what, dims_str(dims)));
  }
  // Made C-contiguous (a copy only when it is not, e.g. image[:, :, ::-1]).
  auto pixels = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(array);
  const int depth = array.ndim() == 3 ? static_cast<int>(dims[2]) : 1;
  return image_from_pixels(std::span(pixels.data(), static_cast<std::size_t>(pixels.size())), static_cast<int>(dims[1]),
                           static_cast<int>(dims[0]), depth, what);
}

/// One image's class scores, (F,), (1, F) or corgy's (1, F, 1, 1), as a float32 array that stays alive while the
/// span is read. ValueError for another shape, TypeError for another dtype.
py::array_t<float> class_scores(py::handle x, const char* what) {
  py::array array = array_of_dtype(x, py::dtype::of<float>(), what);
  const std::vector<py::ssize_t> dims = dims_of(array);
  const bool one_image = (dims.size() == 1) || (dims.size() == 2 && dims[0] == 1) ||
                         (dims.size() == 4 && dims[0] == 1 && dims[2] == 1 && dims[3] == 1);
  if (!one_image || array.size() == 0) {
    throw py::value_error(
        fmt::format("{}: expected one image's class scores (F,), (1, F) or (1, F, 1, 1), got shape "
                    "{}{}",
                    what, dims_str(dims), dims.size() >= 2 && dims[0] > 1 ? " (pass one image: output[i])" : ""));
  }
  return py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
}

/// A uint8 (H, W) mask array as corgy's ClassMask (a copy).
ClassMask class_mask_of(py::handle x, const char* what) {
  py::array array = array_of_dtype(x, py::dtype::of<std::uint8_t>(), what);
  const std::vector<py::ssize_t> dims = dims_of(array);
  if (dims.size() != 2 || dims[0] <= 0 || dims[1] <= 0 || dims[0] > max_int || dims[1] > max_int) {
    throw py::value_error(fmt::format("{}: a class mask is uint8 (H, W), got shape {}", what, dims_str(dims)));
  }
  auto classes = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>::ensure(array);
  return {.width = static_cast<int>(dims[1]),
          .height = static_cast<int>(dims[0]),
          .classes = {classes.data(), classes.data() + classes.size()}};
}

py::array_t<std::uint8_t> mask_array(const ClassMask& mask) {
  py::array_t<std::uint8_t> out({static_cast<py::ssize_t>(mask.height), static_cast<py::ssize_t>(mask.width)});
  std::copy(mask.classes.begin(), mask.classes.end(), out.mutable_data());
  return out;
}

std::string preprocess_repr(const ImagePreprocess& o) {
  std::string resize = "none";
  if (o.resize_shorter > 0) resize = fmt::format("shorter side {}", o.resize_shorter);
  if (o.resize_width > 0 || o.resize_height > 0) resize = fmt::format("{} x {}", o.resize_width, o.resize_height);
  return fmt::format("<corgy.ImagePreprocess resize {}, crop {}, scale {}, mean ({}), std ({}), {}>", resize,
                     o.crop_width > 0 ? fmt::format("{} x {}", o.crop_width, o.crop_height) : "none", o.scale,
                     fmt::join(o.mean, ", "), fmt::join(o.std, ", "), o.bgr ? "BGR" : "RGB");
}

void bind_preprocessing(py::module_& m) {
  py::class_<ImagePreprocess>(m, "ImagePreprocess",
                              R"doc(How an image becomes a network's input (corgy::ImagePreprocess,
docs/corgy-run.md "Images in, answers out"); the steps, in this order, on the 8-bit values 0..255:
  1. resize (optional): the shorter side to resize_shorter pixels (the longer one to int(resize_shorter * longer /
     shorter), torchvision's Resize(int)), or to exactly resize_width x resize_height; bilinear with half-pixel
     centres and no antialiasing, as cv2.resize(INTER_LINEAR);
  2. center crop (optional) to crop_width x crop_height (torchvision's center_crop);
  3. value * scale, then (value - mean[c]) / std[c] per channel (one number applies to every channel);
  4. RGB order, or BGR when bgr.
0 means "none" for the sizes. corgy.imagenet_preprocess() gives torchvision's ImageNet preprocessing.)doc")
      .def(py::init([](int resize_shorter, int resize_width, int resize_height, int crop_width, int crop_height,
                       float scale, std::vector<float> mean, std::vector<float> std, bool bgr) {
             return ImagePreprocess{.resize_shorter = resize_shorter,
                                    .resize_width = resize_width,
                                    .resize_height = resize_height,
                                    .crop_width = crop_width,
                                    .crop_height = crop_height,
                                    .scale = scale,
                                    .mean = std::move(mean),
                                    .std = std::move(std),
                                    .bgr = bgr};
           }),
           py::kw_only(), "resize_shorter"_a = 0, "resize_width"_a = 0, "resize_height"_a = 0, "crop_width"_a = 0,
           "crop_height"_a = 0, "scale"_a = 1.0f / 255.0f, "mean"_a = std::vector<float>{0.0f},
           "std"_a = std::vector<float>{1.0f}, "bgr"_a = false)
      .def_readwrite("resize_shorter", &ImagePreprocess::resize_shorter)
      .def_readwrite("resize_width", &ImagePreprocess::resize_width)
      .def_readwrite("resize_height", &ImagePreprocess::resize_height)
      .def_readwrite("crop_width", &ImagePreprocess::crop_width)
      .def_readwrite("crop_height", &ImagePreprocess::crop_height)
      .def_readwrite("scale", &ImagePreprocess::scale)
      .def_readwrite("mean", &ImagePreprocess::mean)
      .def_readwrite("std", &ImagePreprocess::std)
      .def_readwrite("bgr", &ImagePreprocess::bgr)
      .def("__repr__", &preprocess_repr);
  m.def("imagenet_preprocess", &imagenet_preprocess,
        "torchvision's ImageNet preprocessing: shorter side to 256, center crop 224, scale 1/255, mean (0.485, "
        "0.456, 0.406),\nstd (0.229, 0.224, 0.225), RGB; change its fields for another size.");

  py::class_<PreprocessGeometry>(m, "PreprocessGeometry", R"doc(Where a preprocessed tensor lies in the original image:
image_width x image_height (the original), resized_width x resized_height (after the resize), and the crop inside
the resized image at (crop_x, crop_y) of crop_width x crop_height (the tensor's W and H). class_mask_on_image maps a
mask back through it.)doc")
      .def(py::init([](int image_width, int image_height, int resized_width, int resized_height, int crop_x, int crop_y,
                       int crop_width, int crop_height) {
             return PreprocessGeometry{.image_width = image_width,
                                       .image_height = image_height,
                                       .resized_width = resized_width,
                                       .resized_height = resized_height,
                                       .crop_x = crop_x,
                                       .crop_y = crop_y,
                                       .crop_width = crop_width,
                                       .crop_height = crop_height};
           }),
           py::kw_only(), "image_width"_a, "image_height"_a, "resized_width"_a, "resized_height"_a, "crop_x"_a,
           "crop_y"_a, "crop_width"_a, "crop_height"_a)
      .def_readwrite("image_width", &PreprocessGeometry::image_width)
      .def_readwrite("image_height", &PreprocessGeometry::image_height)
      .def_readwrite("resized_width", &PreprocessGeometry::resized_width)
      .def_readwrite("resized_height", &PreprocessGeometry::resized_height)
      .def_readwrite("crop_x", &PreprocessGeometry::crop_x)
      .def_readwrite("crop_y", &PreprocessGeometry::crop_y)
      .def_readwrite("crop_width", &PreprocessGeometry::crop_width)
      .def_readwrite("crop_height", &PreprocessGeometry::crop_height)
      .def("__repr__", [](const PreprocessGeometry& g) {
        return fmt::format("<corgy.PreprocessGeometry image {} x {}, resized {} x {}, crop {} x {} at ({}, {})>",
                           g.image_width, g.image_height, g.resized_width, g.resized_height, g.crop_width,
                           g.crop_height, g.crop_x, g.crop_y);
      });

  py::class_<PreprocessedArray>(m, "PreprocessedImage",
                                "What preprocess_image gives: tensor, float32 (1, C, H, W) in corgy's page-aligned "
                                "memory (a forward reads it\nwithout a copy), and geometry, a PreprocessGeometry.")
      .def_readonly("tensor", &PreprocessedArray::tensor)
      .def_readonly("geometry", &PreprocessedArray::geometry)
      .def("__iter__", [](const PreprocessedArray& p) { return py::iter(py::make_tuple(p.tensor, p.geometry)); })
      .def("__repr__", [](const PreprocessedArray& p) {
        return fmt::format("<corgy.PreprocessedImage tensor {}, {}>", dims_str(dims_of(p.tensor)),
                           std::string(py::repr(py::cast(p.geometry))));
      });

  m.def(
      "preprocess_image",
      [](py::handle image, const ImagePreprocess& options, int channels) {
        std::string source;
        const Variable picture = image_argument(image, channels, "preprocess_image image", source);
        PreprocessedImage prepared;
        {
          py::gil_scoped_release release;
          prepared = corgy::preprocess_image(picture, options, source);
        }
        return PreprocessedArray{adopted_array(std::move(prepared.tensor)), prepared.geometry};
      },
      R"doc(Prepares an image as a network expects it (corgy::preprocess_image; what corgy-run --preset, --resize,
--crop, --scale, --mean, --std and --bgr do) and returns a PreprocessedImage: .tensor, float32 (1, C, h, w), and
.geometry, where that tensor lies in the image (for class_mask_on_image); `tensor, geometry = ...` unpacks it.

image: a path (JPEG, PNG, ...; read with `channels` channels), a uint8 array (H, W, C) of RGB pixels or (H, W) of
   grey ones (PIL's numpy.asarray(img); OpenCV's images are BGR: cv2.cvtColor(img, cv2.COLOR_BGR2RGB) first), or a
   float32 (1, C, H, W) in [0, 1] as corgy.load_image gives it.
options: an ImagePreprocess (default: no resize or crop, values / 255), e.g. corgy.imagenet_preprocess().
Raises corgy.Error naming the file for one that cannot be read, and for bad options or a crop larger than the
resized image (naming both sizes); TypeError for an array of another dtype; ValueError for another shape.)doc",
      "image"_a, "options"_a = ImagePreprocess{}, py::kw_only(), "channels"_a = 3);
}

void bind_classes(py::module_& m) {
  m.def(
      "class_probabilities",
      [](py::handle scores) {
        auto array = class_scores(scores, "class_probabilities scores");
        const ClassProbabilities p =
            corgy::class_probabilities(std::span(array.data(), static_cast<std::size_t>(array.size())));
        py::array_t<float> values(static_cast<py::ssize_t>(p.values.size()));
        std::copy(p.values.begin(), p.values.end(), values.mutable_data());
        return py::make_tuple(values, p.from_logits);
      },
      R"doc(One image's class scores, (F,), (1, F) or (1, F, 1, 1) float32, as probabilities: returns (probabilities
float32 (F,), from_logits). The scores themselves when they already are a distribution (every value in [0, 1],
summing to 1 within 1e-3, as after a Softmax layer; from_logits False), else their softmax (from_logits True).
Raises corgy.Error for a NaN or infinite score.)doc",
      "scores"_a);

  py::class_<TopClassesResult>(m, "TopClasses",
                               "What top_classes gives: indices (int64 (k,)), probabilities (float32 (k,)), best "
                               "first; from_logits\n(whether the probabilities are the softmax of the scores); labels "
                               "(the names of the indices, or None).")
      .def_readonly("indices", &TopClassesResult::indices)
      .def_readonly("probabilities", &TopClassesResult::probabilities)
      .def_readonly("from_logits", &TopClassesResult::from_logits)
      .def_readonly("labels", &TopClassesResult::labels)
      .def("__len__", [](const TopClassesResult& t) { return t.indices.size(); })
      .def("__repr__", [](const TopClassesResult& t) {
        std::vector<std::string> rows;
        for (py::ssize_t i = 0; i < t.indices.size(); ++i) {
          rows.push_back(fmt::format("{} {:.6f}", t.indices.at(i), t.probabilities.at(i)));
        }
        return fmt::format("<corgy.TopClasses {}>", fmt::join(rows, ", "));
      });

  m.def(
      "top_classes",
      [](py::handle scores, int k, std::optional<std::vector<std::string>> labels) {
        if (k <= 0) throw py::value_error(fmt::format("top_classes: k must be at least 1, got {}", k));
        auto array = class_scores(scores, "top_classes scores");
        const auto classes = static_cast<std::size_t>(array.size());
        if (labels && labels->size() != classes) {
          throw py::value_error(fmt::format("top_classes: {} labels, but the scores {} have {} classes", labels->size(),
                                            dims_str(dims_of(array)), classes));
        }
        const ClassProbabilities p = corgy::class_probabilities(std::span(array.data(), classes));
        const std::vector<ClassScore> top = corgy::top_classes(p.values, k);
        TopClassesResult result{.indices = py::array_t<std::int64_t>(static_cast<py::ssize_t>(top.size())),
                                .probabilities = py::array_t<float>(static_cast<py::ssize_t>(top.size())),
                                .from_logits = p.from_logits,
                                .labels = py::none()};
        py::list names;
        for (std::size_t i = 0; i < top.size(); ++i) {
          result.indices.mutable_at(static_cast<py::ssize_t>(i)) = top[i].index;
          result.probabilities.mutable_at(static_cast<py::ssize_t>(i)) = top[i].probability;
          if (labels) names.append((*labels)[static_cast<std::size_t>(top[i].index)]);
        }
        if (labels) result.labels = names;
        return result;
      },
      R"doc(The k most probable classes of one image's class scores, (F,), (1, F) or (1, F, 1, 1) float32 (a
classifier's output, e.g. model(x)[i] of a batch): class_probabilities, then corgy::top_classes (ties to the lower
index; k larger than F gives all), as corgy-run --top prints them. labels: the class names, one per class (e.g.
data/imagenet/imagenet_classes.txt's lines). Returns a TopClasses (.indices, .probabilities, .from_logits,
.labels). Raises ValueError for k < 1, another shape or another number of labels; TypeError for another dtype.)doc",
      "scores"_a, "k"_a = 5, "labels"_a = py::none());
}

void bind_class_mask(py::module_& m) {
  m.attr("mask_void_class") = mask_void_class;
  m.def(
      "argmax_class_mask",
      [](py::handle scores, int n) {
        auto array = float32_input(scores, "argmax_class_mask scores", true);
        if (array.ndim() != 4) {
          throw py::value_error(
              fmt::format("argmax_class_mask scores: expected (N, K, H, W), got shape {}", dims_str(dims_of(array))));
        }
        const Variable variable = variable_of(array, "argmax_class_mask scores");
        return mask_array(corgy::argmax_class_mask(variable, n, "argmax_class_mask scores"));
      },
      R"doc(The class of each pixel of image n of a segmentation network's scores, float32 (N, K, H, W) with
2 <= K <= 255: the argmax over K (ties to the lower class), uint8 (H, W). Raises corgy.Error for another K or n out
of range, ValueError for another rank.)doc",
      "scores"_a, "n"_a = 0);
  m.def(
      "class_mask_on_image",
      [](py::handle mask, const PreprocessGeometry& geometry) {
        return mask_array(corgy::class_mask_on_image(class_mask_of(mask, "class_mask_on_image mask"), geometry));
      },
      R"doc(A mask (uint8 (h, w), covering the crop of `geometry`) at the original image's size, uint8
(image_height, image_width): each image pixel's centre mapped through the resize and the crop onto the mask
(nearest neighbour), as corgy-run --mask draws it; pixels outside the crop are corgy.mask_void_class (255, VOC's
void). geometry: preprocess_image's.)doc",
      "mask"_a, "geometry"_a);
  m.def(
      "class_mask_rgb",
      [](py::handle mask) {
        const ClassMask classes = class_mask_of(mask, "class_mask_rgb mask");
        const std::vector<std::uint8_t> rgb = corgy::class_mask_rgb(classes, "class_mask_rgb mask");
        py::array_t<std::uint8_t> out(
            {static_cast<py::ssize_t>(classes.height), static_cast<py::ssize_t>(classes.width), py::ssize_t{3}});
        std::copy(rgb.begin(), rgb.end(), out.mutable_data());
        return out;
      },
      R"doc(A mask (uint8 (H, W) of class indices) in PASCAL VOC's colours: uint8 (H, W, 3) RGB (class 0 black,
1 dark red, ..., 255 void (224, 224, 192)), the pixels corgy-run --mask writes.)doc",
      "mask"_a);
  m.def(
      "save_class_mask_png",
      [](const std::string& path, py::handle mask) {
        corgy::save_class_mask_png(path, class_mask_of(mask, "save_class_mask_png mask"));
      },
      "Writes a mask (uint8 (H, W) of class indices) as an RGB PNG in PASCAL VOC's colours (class_mask_rgb).", "path"_a,
      "mask"_a);
}

float threshold_argument(float value, const char* name) {
  if (!(value >= 0.0f && value <= 1.0f)) {
    throw py::value_error(fmt::format("detect_objects_yolov8: {} must be in [0, 1], got {}", name, value));
  }
  return value;
}

void bind_yolov8(py::module_& m) {
  py::class_<Yolov8Layout>(m, "Yolov8Layout",
                           "What a YOLOv8 export fixes: its input width and height, its class count and anchors.")
      .def_readonly("width", &Yolov8Layout::width)
      .def_readonly("height", &Yolov8Layout::height)
      .def_readonly("classes", &Yolov8Layout::classes)
      .def_readonly("anchors", &Yolov8Layout::anchors)
      .def("__repr__", [](const Yolov8Layout& l) {
        return fmt::format("<corgy.Yolov8Layout input {} x {}, {} classes, {} anchors>", l.width, l.height, l.classes,
                           l.anchors);
      });
  m.def(
      "yolov8_layout", [](const OnnxHandle& model) { return corgy::yolov8_layout(model.onnx()); },
      "The layout of a YOLOv8 export (corgy.load_onnx's): input (N, 3, H, W) fixed, first output (N, 4 + classes,\n"
      "anchors). Raises corgy.Error naming the file and the dims for another model.",
      "model"_a);
  m.def(
      "detect_objects_yolov8",
      [](OnnxHandle& model, py::handle image, float score_threshold, float iou_threshold, bool letterbox) {
        const DetectOptions options{.threshold = threshold_argument(score_threshold, "score_threshold"),
                                    .nms = threshold_argument(iou_threshold, "iou_threshold"),
                                    .fit = letterbox ? ImageFit::letterbox : ImageFit::resize};
        std::string source;
        const Variable picture = image_argument(image, 3, "detect_objects_yolov8 image", source);
        const std::vector<LabeledBox> found = model.detect_yolov8(picture, options);
        const auto count = static_cast<py::ssize_t>(found.size());
        py::array_t<float> boxes({count, py::ssize_t{4}});
        py::array_t<float> scores(count);
        py::array_t<std::int64_t> class_ids(count);
        for (py::ssize_t i = 0; i < count; ++i) {
          const LabeledBox& b = found[static_cast<std::size_t>(i)];
          boxes.mutable_at(i, 0) = b.box.left();
          boxes.mutable_at(i, 1) = b.box.top();
          boxes.mutable_at(i, 2) = b.box.right();
          boxes.mutable_at(i, 3) = b.box.bottom();
          scores.mutable_at(i) = b.probability;
          class_ids.mutable_at(i) = b.class_id;
        }
        return py::make_tuple(boxes, scores, class_ids);
      },
      R"doc(The objects a YOLOv8 (or YOLO11) ONNX export finds in an image (corgy::detect_objects_yolov8, what
corgy-run --boxes prints): the image letterboxed to the model's input (darknet's letterbox; letterbox=False
stretches it), one forward, each anchor's best class kept when its score exceeds score_threshold, per-class NMS
dropping a box that overlaps a higher-scoring one of its class by an IoU above iou_threshold, the boxes mapped back
to the image. Defaults: Ultralytics' predict (conf 0.25, iou 0.7).

model: corgy.load_onnx's model of an Ultralytics export, first output (1, 4 + classes, anchors).
image: a path, uint8 pixels (H, W, 3) RGB, or a float32 (1, 3, H, W) in [0, 1] (corgy.load_image's).
Returns (boxes, scores, class_ids), most probable first: boxes float32 (K, 4) as x1, y1, x2, y2 in pixels of the
image (not clipped to it), scores float32 (K,), class_ids int64 (K,). model.outputs() then holds the raw output.
Raises corgy.Error for a model of another layout (naming its dims), an image that cannot be read or is not RGB;
ValueError for a threshold outside [0, 1].)doc",
      "model"_a, "image"_a, py::kw_only(), "score_threshold"_a = 0.25f, "iou_threshold"_a = 0.7f, "letterbox"_a = true);
}

}  // namespace

void bind_answers(py::module_& m) {
  bind_preprocessing(m);
  bind_classes(m);
  bind_class_mask(m);
  bind_yolov8(m);
}

}  // namespace corgy::python
