// OnnxHandle: what a Python corgy.OnnxModel holds (bind_models.cpp defines the class; bind_answers.cpp's
// detect_objects_yolov8 runs it).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "corgy/io/onnx.h"
#include "corgy/models/yolov8_detector.h"
#include "model_handle.h"

namespace corgy::python {

/// An ONNX model; its outputs have the rank the graph declares ((N, 1000) for a classifier, not corgy's 4-D form).
class OnnxHandle : public ModelHandle {
 public:
  explicit OnnxHandle(OnnxModel model) : source_(model.source), model_(std::make_unique<OnnxModel>(std::move(model))) {}
  std::string name() const override { return "ONNX model " + source_; }
  std::optional<Shape> default_input_shape() const override {
    try {
      return onnx().input_shape(1);
    } catch (const Error&) {
      return std::nullopt;  // a free dimension other than the batch
    }
  }

  py::object forward(py::handle x, bool copy, bool check_finite) override {
    return call_locked(
        *this, x, check_finite, [&](const Variable& input) { model_->forward(input); },
        [&] { return output_array(0, copy); });
  }
  /// Every graph output of the last forward (of `x` first, when given), by name.
  py::dict outputs(py::object x, bool copy, bool check_finite) {
    const auto collect = [&] {
      py::dict result;
      for (std::size_t k = 0; k < model_->outputs.size(); ++k)
        result[py::str(model_->outputs[k].name)] = output_array(k, copy);
      return result;
    };
    if (x.is_none()) {
      Lock lock(*this);
      network();
      return collect();
    }
    return call_locked(
        *this, x, check_finite, [&](const Variable& input) { model_->forward(input); }, collect);
  }
  const OnnxModel& onnx() const {
    network();
    return *model_;
  }
  /// detect_objects_yolov8 on `image` (1, 3, H, W) in [0, 1], with the model locked and the GIL released; the raw
  /// output of its forward stays readable through outputs().
  std::vector<LabeledBox> detect_yolov8(const Variable& image, const DetectOptions& options) {
    Lock lock(*this);
    network();
    py::gil_scoped_release release;
    return detect_objects_yolov8(*model_, image, options);
  }

 protected:
  Sequential* sequential() override { return model_ ? &model_->model : nullptr; }
  void release() override { model_.reset(); }

 private:
  py::array_t<float> output_array(std::size_t k, bool copy) {
    const Variable& output = model_->output(k);
    if (model_->outputs[k].dims.size() == 2) {
      const std::vector<std::int64_t> dims = model_->output_dims(k);  // as corgy-run --output writes it
      return array_of(output, {static_cast<py::ssize_t>(dims[0]), static_cast<py::ssize_t>(dims[1])}, copy);
    }
    return array_of(output, copy);
  }

  std::string source_;
  std::unique_ptr<OnnxModel> model_;
};

}  // namespace corgy::python
