// ModelHandle: what every Python model object holds. The C++ model behind a lock, the forward with the GIL released,
// the input staged into a Variable (or used as it is when it is a corgy.empty array), close().
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "arrays.h"
#include "corgy/error.h"
#include "corgy/model/sequential.h"

namespace corgy::python {

/// The base of corgy.Model. Subclasses own a C++ model (a Sequential, an OnnxModel, a DarknetModel, ...) and say how
/// a forward runs and what it returns.
///
/// Threads: the GIL is released while the network runs, so Python threads with models of their own run in parallel.
/// One model is used by one thread at a time (the C++ thread contract); a second thread that calls into a model
/// while a forward runs gets corgy.Error instead of waiting or corrupting memory.
class ModelHandle {
 public:
  virtual ~ModelHandle() = default;

  /// The network; throws corgy::Error when the model was closed.
  Sequential& network();
  const Sequential& network() const;
  bool closed() const { return closed_; }
  /// Frees the model (its weights and buffers; arrays returned earlier keep their own memory). Later calls throw.
  void close();

  void set_backend(const std::string& name, int threads);
  std::string backend_name();

  /// The input Variable of a forward for `array`: corgy.empty's own Variable (no copy) or the staging Variable with
  /// the array's values copied in. Call with the GIL released and the model locked.
  const Variable& stage_input(const float* data, const Shape& shape);

  /// Holds the model for one call; throws corgy::Error when another thread holds it.
  class Lock {
   public:
    explicit Lock(ModelHandle& model);
    ~Lock() { model_.busy_.unlock(); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    ModelHandle& model_;
  };

  /// The model's description for messages ("ONNX model resnet18.onnx").
  virtual std::string name() const = 0;
  /// model(x): runs the network and returns what this kind of model returns (an array, a list of arrays).
  virtual pybind11::object forward(pybind11::handle x, bool copy, bool check_finite) = 0;
  /// The input shape summary() and flops() use when none is given; nullopt when the model does not fix one.
  virtual std::optional<Shape> default_input_shape() const { return std::nullopt; }

 protected:
  /// The Sequential of the C++ model (null once closed).
  virtual Sequential* sequential() = 0;
  /// Destroys the C++ model.
  virtual void release() = 0;

 private:
  std::mutex busy_;
  bool closed_ = false;
  Variable staging_;
  std::shared_ptr<Variable> zero_copy_input_;
  Variable zero_copy_view_;
};

/// A call on a Python input for `model`: converts and checks the array (float32_input), locks the model, stages
/// the input, runs `run(input)` with the GIL released, then returns `finish()` (with the GIL, the model still locked,
/// so its outputs cannot change under it).
template <class Run, class Finish>
pybind11::object call_locked(ModelHandle& model, pybind11::handle x, bool check_finite, Run&& run, Finish&& finish) {
  const std::string what = model.name() + " input";
  auto array = float32_input(x, what.c_str(), check_finite);
  const Shape shape = shape_of_dims({array.shape(), array.shape() + array.ndim()}, what.c_str());
  ModelHandle::Lock lock(model);
  model.network();  // throws when closed
  const float* data = array.data();
  {
    pybind11::gil_scoped_release release;
    run(model.stage_input(data, shape));
  }
  return finish();
}

}  // namespace corgy::python
