#include "bind_models.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "arrays.h"
#include "corgy/io/darknet.h"
#include "corgy/io/darknet_weights.h"
#include "corgy/io/onnx.h"
#include "corgy/model/profile.h"
#include "corgy/models/darknet_detector.h"
#include "corgy/models/mnist.h"
#include "corgy/models/style_transfer.h"
#include "corgy/models/tiny_face_detector.h"
#include "onnx_handle.h"

namespace corgy::python {

namespace py = pybind11;
using namespace pybind11::literals;

py::object SequentialHandle::forward(py::handle x, bool copy, bool check_finite) {
  const Variable* output = nullptr;
  return call_locked(
      *this, x, check_finite, [&](const Variable& input) { output = &model_->forward(input); },
      [&] { return array_of(*output, copy); });
}

namespace {

/// A darknet network: forward returns the raw tensors of its heads; detect() decodes boxes.
class DarknetHandle : public ModelHandle {
 public:
  DarknetHandle(DarknetModel model, std::string label)
      : model_(std::make_unique<DarknetModel>(std::move(model))), label_(std::move(label)) {}
  std::string name() const override { return label_; }
  std::optional<Shape> default_input_shape() const override { return darknet().input_shape(1); }

  py::object forward(py::handle x, bool copy, bool check_finite) override {
    std::vector<const Variable*> raw;
    return call_locked(
        *this, x, check_finite, [&](const Variable& input) { raw = model_->forward(input); },
        [&] {
          py::list result;
          for (const Variable* tensor : raw) result.append(array_of(*tensor, copy));
          return result;
        });
  }
  std::vector<LabeledBox> detect(const py::handle image, const DetectOptions& options) {
    auto array = float32_input(image, (label_ + " image").c_str(), true);
    Variable picture = variable_of(array, (label_ + " image").c_str());
    Lock lock(*this);
    network();
    py::gil_scoped_release release;
    return detect_objects(*model_, picture, options);
  }
  const DarknetModel& darknet() const {
    network();
    return *model_;
  }

 protected:
  Sequential* sequential() override { return model_ ? &model_->model : nullptr; }
  void release() override { model_.reset(); }

 private:
  std::unique_ptr<DarknetModel> model_;
  std::string label_;
};

/// face-api's tiny face detector with its trained weights.
class FaceDetectorHandle : public SequentialHandle {
 public:
  FaceDetectorHandle(Sequential model, std::string label)
      : SequentialHandle(std::move(model), std::move(label), Shape{1, 3, 416, 416}) {}
  std::vector<LabeledBox> detect(const py::handle image, const FaceDetectorOptions& options) {
    auto array = float32_input(image, (name() + " image").c_str(), true);
    Variable picture = variable_of(array, (name() + " image").c_str());
    Lock lock(*this);
    Sequential& model = network();
    py::gil_scoped_release release;
    return detect_faces(model, picture, options);
  }
};

/// The multi-style transfer network.
class StyleTransferHandle : public ModelHandle {
 public:
  StyleTransferHandle(StyleTransferModel model, std::string label)
      : model_(std::make_unique<StyleTransferModel>(std::move(model))), label_(std::move(label)) {}
  std::string name() const override { return label_; }
  std::optional<Shape> default_input_shape() const override { return Shape{1, 3, 256, 256}; }
  py::object forward(py::handle x, bool copy, bool check_finite) override {
    const Variable* output = nullptr;
    return call_locked(
        *this, x, check_finite, [&](const Variable& input) { output = &model_->stylise(input); },
        [&] { return array_of(*output, copy); });
  }
  StyleTransferModel& style_model() {
    network();
    return *model_;
  }

 protected:
  Sequential* sequential() override { return model_ ? &model_->network() : nullptr; }
  void release() override { model_.reset(); }

 private:
  std::unique_ptr<StyleTransferModel> model_;
  std::string label_;
};

Shape shape_or_default(ModelHandle& model, const std::optional<std::vector<py::ssize_t>>& dims, const char* call) {
  if (dims) return shape_of_dims(*dims, call);
  if (auto shape = model.default_input_shape()) return *shape;
  throw py::value_error(
      fmt::format("{}.{}: give the input shape, e.g. (1, 3, 224, 224); the model fixes none", model.name(), call));
}

py::list boxes_to_python(const std::vector<LabeledBox>& boxes, const std::vector<std::string>* names) {
  py::list result;
  for (const LabeledBox& b : boxes) {
    py::dict box("left"_a = b.box.left(), "top"_a = b.box.top(), "right"_a = b.box.right(), "bottom"_a = b.box.bottom(),
                 "class_id"_a = b.class_id, "probability"_a = b.probability);
    if (names && b.class_id >= 0 && static_cast<std::size_t>(b.class_id) < names->size()) {
      box["label"] = (*names)[static_cast<std::size_t>(b.class_id)];
    }
    result.append(box);
  }
  return result;
}

const char* const forward_doc = R"doc(Runs the network on `x` and returns its output.

x: a C-contiguous float32 array (numpy, or anything with __dlpack__ or __array__, e.g. a CPU torch tensor) of
   shape (N, C, H, W), or (N, features) for a network that starts with a Linear layer. An array from corgy.empty()
   or corgy.load_image() is read where it lies (no copy; the Vulkan backend imports its pages); any other is copied.
copy: False (default) returns a view of corgy's output buffer: no copy, valid until the next forward of this model,
   which overwrites it (the memory itself stays valid as long as the array lives). True returns an array of its own.
check_finite: raise ValueError when x holds a NaN or an infinity (default True).
The GIL is released while the network runs. Raises corgy.Error for a shape the model does not take, TypeError for
another dtype, ValueError for a non-contiguous array or a rank other than 2 or 4.)doc";

}  // namespace

void bind_models(py::module_& m) {
  py::class_<ModelHandle, std::shared_ptr<ModelHandle>> model_class(m, "Model", R"doc(A network ready to run.

Models come from corgy.load_onnx, corgy.load_darknet, corgy.load_mnist, corgy.load_face_detector,
corgy.load_style_transfer, or corgy.Sequential() built layer by layer. They start on the backend their loader was
given ("auto" by default: the best one here). One model serves one thread at a time; models of their own run in
parallel in several threads. `with` closes the model at the end of the block.)doc");
  model_class
      .def("forward", &ModelHandle::forward, forward_doc, "x"_a, py::kw_only(), "copy"_a = false,
           "check_finite"_a = true)
      .def("__call__", &ModelHandle::forward, forward_doc, "x"_a, py::kw_only(), "copy"_a = false,
           "check_finite"_a = true)
      .def("set_backend", &ModelHandle::set_backend,
           "Moves the model to a backend: 'naive', 'blas', 'vulkan', 'vulkan:<index>', 'auto', with '+fp16' for\n"
           "fp16 on Vulkan (e.g. 'vulkan+fp16'); threads = 0 lets the CPU backend choose. Raises corgy.Error for\n"
           "an unknown or unavailable backend.",
           "name"_a, "threads"_a = 0)
      .def_property_readonly("backend", &ModelHandle::backend_name, "The backend's name, e.g. 'blas'.")
      .def(
          "summary",
          [](ModelHandle& self, std::optional<std::vector<py::ssize_t>> shape) {
            const Shape input = shape_or_default(self, shape, "summary");
            ModelHandle::Lock lock(self);
            return self.network().summary(input);
          },
          "One line per layer (index, description, inputs, output shape) for an input shape (N, C, H, W); the\n"
          "model's own input shape when it fixes one.",
          "input_shape"_a = py::none())
      .def(
          "flops",
          [](ModelHandle& self, std::optional<std::vector<py::ssize_t>> shape) {
            const Shape input = shape_or_default(self, shape, "flops");
            ModelHandle::Lock lock(self);
            return self.network().flops(input);
          },
          "Floating-point operations of one forward at an input shape.", "input_shape"_a = py::none())
      .def(
          "profile",
          [](ModelHandle& self, py::handle x, int repeat) {
            if (repeat < 1) throw py::value_error("profile: repeat must be at least 1");
            std::vector<LayerProfile> rows;
            return call_locked(
                self, x, true, [&](const Variable& input) { rows = profile_forward(self.network(), input, repeat); },
                [&] {
                  py::list result;
                  for (const LayerProfile& row : rows) {
                    result.append(py::dict("layer"_a = row.layer, "description"_a = row.description,
                                           "algorithm"_a = row.algorithm, "median_ms"_a = row.median_ms,
                                           "gflops"_a = row.median_ms > 0 ? row.flops / row.median_ms * 1e-6 : 0.0));
                  }
                  return py::object(result);
                });
          },
          "Runs `repeat` forwards of x with the backend's profiling on and returns one dict per step: layer,\n"
          "description, algorithm, median_ms, gflops. Empty when the backend does not profile.",
          "x"_a, "repeat"_a = 10)
      .def("close", &ModelHandle::close,
           "Frees the model's weights and buffers now. Arrays it returned keep their memory; later calls raise\n"
           "corgy.Error.")
      .def_property_readonly("closed", &ModelHandle::closed)
      .def("__enter__", [](std::shared_ptr<ModelHandle> self) { return self; })
      .def("__exit__", [](ModelHandle& self, py::args) { self.close(); })
      .def("__repr__", [](ModelHandle& self) {
        return self.closed() ? fmt::format("<corgy model {} (closed)>", self.name())
                             : fmt::format("<corgy model {} on {}, {} layers>", self.name(), self.backend_name(),
                                           self.network().size());
      });

  py::class_<SequentialHandle, ModelHandle, std::shared_ptr<SequentialHandle>> sequential(
      m, "Sequential", R"doc(A network built layer by layer, as corgy::Sequential in C++:

    model = corgy.Sequential()
    conv = corgy.Conv2d(1, 32, kernel=5, padding=2, activation="relu")
    conv.set_weights(w)             # numpy (32, 1, 5, 5), OIHW as PyTorch stores it
    model.add(conv)
    model.add(corgy.MaxPool2d(2))
    ...
    model.set_backend("blas")
    y = model(x)                    # x: float32 (N, 1, 28, 28)

Each layer is fed by the previous one, or by the layers whose indices (returned by add) are given.)doc");
  sequential.def(py::init([] { return std::make_shared<SequentialHandle>(Sequential(), "Sequential"); }),
                 "An empty network on the naive backend.");
  bind_layers(m, sequential);

  py::class_<OnnxHandle, ModelHandle, std::shared_ptr<OnnxHandle>>(m, "OnnxModel", R"doc(An ONNX model.

model(x) returns the graph's first output with the rank the graph declares ((N, 1000) for a classifier);
model.outputs() every output by name.)doc")
      .def("outputs", &OnnxHandle::outputs,
           "Every graph output by name: of a forward of x when given, else of the last forward. Same view/copy\n"
           "rules as forward.",
           "x"_a = py::none(), py::kw_only(), "copy"_a = false, "check_finite"_a = true)
      .def_property_readonly("input_name", [](const OnnxHandle& self) { return self.onnx().input.name; })
      .def_property_readonly(
          "input_dims", [](const OnnxHandle& self) { return self.onnx().input.dims; },
          "The graph input's dimensions as the file declares them (-1 where free, e.g. the batch).")
      .def_property_readonly("output_names",
                             [](const OnnxHandle& self) {
                               std::vector<std::string> names;
                               for (const auto& output : self.onnx().outputs) names.push_back(output.name);
                               return names;
                             })
      .def_property_readonly("opset", [](const OnnxHandle& self) { return self.onnx().opset; })
      .def_property_readonly("producer", [](const OnnxHandle& self) { return self.onnx().producer; })
      .def(
          "input_shape",
          [](const OnnxHandle& self, int batch) {
            const Shape s = self.onnx().input_shape(batch);
            return self.onnx().input.dims.size() == 2 ? py::make_tuple(s.n, s.c) : py::make_tuple(s.n, s.c, s.h, s.w);
          },
          "The input shape for a batch; raises corgy.Error when a dimension other than the batch is free.",
          "batch"_a = 1);

  m.def(
      "load_onnx",
      [](const std::string& path, const std::string& backend, int threads) {
        OnnxModel model;
        {
          py::gil_scoped_release release;
          model = load_onnx(path);
          model.model.set_backend(backend, threads);
        }
        return std::make_shared<OnnxHandle>(std::move(model));
      },
      R"doc(Loads an ONNX model file (a CNN exported from PyTorch, Keras, a model zoo; docs/onnx.md lists the
operators) onto a backend ("auto": the best one here; see Model.set_backend). Raises corgy.Error naming the file
for a file that is not ONNX, is truncated, or uses operators corgy cannot run (all of them listed).)doc",
      "path"_a, "backend"_a = "auto", "threads"_a = 0);

  py::class_<DarknetHandle, ModelHandle, std::shared_ptr<DarknetHandle>>(m, "DarknetModel", R"doc(A darknet network.

model(x) returns the raw input of each [region]/[yolo] head (before any activation), in cfg order, or the last
layer's output for a classifier; model.detect(image) the objects found.)doc")
      .def(
          "detect",
          [](DarknetHandle& self, py::handle image, float threshold, float nms, bool letterbox,
             std::optional<std::vector<std::string>> names) {
            DetectOptions options{
                .threshold = threshold, .nms = nms, .fit = letterbox ? ImageFit::letterbox : ImageFit::resize};
            const auto boxes = self.detect(image, options);
            return boxes_to_python(boxes, names ? &*names : nullptr);
          },
          R"doc(The objects in an image (1, C, H, W) with values in [0, 1] (as corgy.load_image gives it): one dict
per (box, class) above `threshold`, most probable first, with left, top, right, bottom in pixels of the image,
class_id, probability, and label when `names` (e.g. corgy.read_darknet_names("coco.names")) is given.)doc",
          "image"_a, "threshold"_a = 0.5f, "nms"_a = 0.45f, "letterbox"_a = true, "names"_a = py::none())
      .def(
          "input_shape",
          [](const DarknetHandle& self, int batch) {
            const Shape s = self.darknet().input_shape(batch);
            return py::make_tuple(s.n, s.c, s.h, s.w);
          },
          "The input shape for a batch: (N, channels, height, width) of the cfg.", "batch"_a = 1);

  m.def(
      "load_darknet",
      [](const std::string& cfg, std::optional<std::string> weights, std::optional<std::uint32_t> seed,
         const std::string& backend, int threads) {
        if (weights.has_value() == seed.has_value()) {
          throw py::value_error("load_darknet: give either weights (a .weights file) or random_weights_seed");
        }
        std::string label = "darknet model " + cfg;
        DarknetModel model;
        {
          py::gil_scoped_release release;
          if (weights) {
            model = load_darknet(cfg, *weights);
          } else {
            model = build_darknet_model(read_darknet_cfg(cfg));
            const std::vector<std::byte> bytes = random_darknet_weights(model, *seed);
            load_darknet_weights(model, bytes, fmt::format("random weights (seed {})", *seed));
            label += fmt::format(" with random weights (seed {})", *seed);
          }
          model.model.set_backend(backend, threads);
        }
        return std::make_shared<DarknetHandle>(std::move(model), label);
      },
      R"doc(Loads a darknet .cfg with its .weights, or with deterministic random weights (random_weights_seed),
for timing or testing a network whose trained weights you do not have: its detections mean nothing. Raises
corgy.Error naming the file and line for a malformed cfg or a weights file of the wrong size.)doc",
      "cfg"_a, "weights"_a = py::none(), py::kw_only(), "random_weights_seed"_a = py::none(), "backend"_a = "auto",
      "threads"_a = 0);
  m.def("read_darknet_names", &read_darknet_names, "The class names of a darknet .names file, one per line.", "path"_a);

  m.def(
      "load_mnist",
      [](const std::string& directory, const std::string& backend, int threads) {
        Sequential model;
        {
          py::gil_scoped_release release;
          model = load_mnist_model(directory);
          model.set_backend(backend, threads);
        }
        return std::make_shared<SequentialHandle>(std::move(model), "MNIST model " + directory, Shape{1, 1, 28, 28});
      },
      R"doc(The MNIST digit classifier with the weights of a directory (the repository's data/mnist): input
(N, 1, 28, 28), pixel = byte / 255, white digits on black; output (N, 10, 1, 1) class probabilities.)doc",
      "directory"_a, "backend"_a = "auto", "threads"_a = 0);
  m.def(
      "load_mnist_digit",
      [](const std::string& path, bool resize) { return adopted_array(load_mnist_digit(path, resize)); },
      "One digit image as grey (1, 1, 28, 28) in [0, 1]; resize=True resizes other sizes to 28 x 28.", "path"_a,
      "resize"_a = false);

  py::class_<FaceDetectorHandle, SequentialHandle, std::shared_ptr<FaceDetectorHandle>>(
      m, "FaceDetector",
      R"doc(face-api's tiny face detector.

model(x) returns the raw output (N, 25, S/32, S/32) for inputs (N, 3, S, S) made as face-api makes them;
model.detect(image) the faces in a picture.)doc")
      .def(
          "detect",
          [](FaceDetectorHandle& self, py::handle image, int input_size, float score_threshold, float iou_threshold) {
            FaceDetectorOptions options{
                .input_size = input_size, .score_threshold = score_threshold, .iou_threshold = iou_threshold};
            return boxes_to_python(self.detect(image, options), nullptr);
          },
          R"doc(The faces in an image (1, 3, H, W) with values in [0, 1] (as corgy.load_image gives it), as face-api's
detectAllFaces(TinyFaceDetectorOptions) finds them: dicts with left, top, right, bottom in pixels and probability
(the score), highest first. input_size: a multiple of 32 (416 by default; 608 for small faces).)doc",
          "image"_a, "input_size"_a = 416, "score_threshold"_a = 0.5f, "iou_threshold"_a = 0.4f);
  m.def(
      "load_face_detector",
      [](const std::string& manifest, const std::string& backend, int threads) {
        Sequential model;
        {
          py::gil_scoped_release release;
          model = load_tiny_face_detector(manifest);
          model.set_backend(backend, threads);
        }
        return std::make_shared<FaceDetectorHandle>(std::move(model), "face detector " + manifest);
      },
      R"doc(face-api's tiny face detector from its weights manifest (the repository's
data/face_api/tiny_face_detector_model-weights_manifest.json and the shard next to it).)doc",
      "manifest"_a, "backend"_a = "auto", "threads"_a = 0);

  py::class_<StyleTransferHandle, ModelHandle, std::shared_ptr<StyleTransferHandle>>(
      m, "StyleTransfer",
      R"doc(The multi-style transfer network.

model(x) renders RGB images (N, 3, H, W) in [0, 1] in the current style mix, (N, 3, H', W') in (0, 1).)doc")
      .def_property_readonly("style_names", [](StyleTransferHandle& self) { return self.style_model().style_names(); })
      .def_property(
          "style", [](StyleTransferHandle& self) { return self.style_model().style(); },
          [](StyleTransferHandle& self, const std::vector<float>& weights) {
            ModelHandle::Lock lock(self);
            self.style_model().set_style(weights);
          },
          "The style mix: one weight per style (a blend usually sums to 1).");
  m.def(
      "load_style_transfer",
      [](const std::string& directory, const std::string& backend, int threads) {
        std::optional<StyleTransferModel> model;
        {
          py::gil_scoped_release release;
          model.emplace(StyleTransferModel::load(directory));
          model->network().set_backend(backend, threads);
        }
        return std::make_shared<StyleTransferHandle>(std::move(*model), "style transfer " + directory);
      },
      "The style-transfer network with the weights of a directory (the repository's data/style_transfer/weights).",
      "directory"_a, "backend"_a = "auto", "threads"_a = 0);
}

}  // namespace corgy::python
