#include "model_handle.h"

#include <cstring>

#include "corgy/error.h"

namespace corgy::python {

ModelHandle::Lock::Lock(ModelHandle& model) : model_(model) {
  if (!model.busy_.try_lock()) {
    throw Error(model.name() + ": another thread is using this model (one model serves one thread at a time; " +
                "give each thread a model of its own)");
  }
}

Sequential& ModelHandle::network() {
  Sequential* model = closed_ ? nullptr : sequential();
  if (!model) throw Error(name() + " is closed");
  return *model;
}

const Sequential& ModelHandle::network() const { return const_cast<ModelHandle*>(this)->network(); }

void ModelHandle::close() {
  Lock lock(*this);
  if (closed_) return;
  release();
  staging_ = {};
  zero_copy_input_.reset();
  zero_copy_view_ = {};
  closed_ = true;
}

void ModelHandle::set_backend(const std::string& backend, int threads) {
  Lock lock(*this);
  Sequential& model = network();
  pybind11::gil_scoped_release release;  // creating a Vulkan device takes a while
  model.set_backend(backend, threads);
}

std::string ModelHandle::backend_name() { return network().backend().name(); }

const Variable& ModelHandle::stage_input(const float* data, const Shape& shape) {
  if (auto variable = empty_array_variable(data, shape.count())) {
    // A corgy.empty array: its own page-aligned storage, seen with the input's shape.
    if (zero_copy_input_ != variable || zero_copy_view_.shape() != shape) {
      zero_copy_view_ = variable->view(shape);
      zero_copy_input_ = std::move(variable);
    }
    return zero_copy_view_;
  }
  if (staging_.empty() || staging_.shape() != shape) staging_ = Variable(shape);
  std::memcpy(staging_.data(), data, shape.count() * sizeof(float));
  return staging_;
}

}  // namespace corgy::python
