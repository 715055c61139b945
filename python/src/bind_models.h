// The Python model classes: corgy.Model and its kinds (Sequential, OnnxModel, DarknetModel, FaceDetector,
// StyleTransfer) and the functions that load them.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "model_handle.h"

namespace corgy::python {

/// A model that is a Sequential of its own: one built in Python (corgy.Sequential), MNIST, the face detector.
class SequentialHandle : public ModelHandle {
 public:
  SequentialHandle(Sequential model, std::string label, std::optional<Shape> input_shape = std::nullopt)
      : model_(std::make_unique<Sequential>(std::move(model))), label_(std::move(label)), input_shape_(input_shape) {}
  std::string name() const override { return label_; }
  std::optional<Shape> default_input_shape() const override { return input_shape_; }
  pybind11::object forward(pybind11::handle x, bool copy, bool check_finite) override;

 protected:
  Sequential* sequential() override { return model_.get(); }
  void release() override { model_.reset(); }

 private:
  std::unique_ptr<Sequential> model_;
  std::string label_;
  std::optional<Shape> input_shape_;
};

void bind_models(pybind11::module_& m);
/// corgy.Sequential's layer building (bind_layers.cpp); called after bind_models, which defines the class.
void bind_layers(pybind11::module_& m,
                 pybind11::class_<SequentialHandle, ModelHandle, std::shared_ptr<SequentialHandle>>& sequential);
/// load_image, save_png, load_npy, backends, vulkan_devices, empty (bind_io.cpp).
void bind_io(pybind11::module_& m);
/// preprocess_image, top_classes, the class mask functions, detect_objects_yolov8 (bind_answers.cpp).
void bind_answers(pybind11::module_& m);

}  // namespace corgy::python
