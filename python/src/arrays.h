// Arrays between Python and corgy: float32 arrays in (numpy, or anything with __dlpack__ / __array__), numpy views of
// corgy's Variables out, and corgy.empty's page-aligned arrays that a forward reads without a copy.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <vector>

#include "corgy/variable.h"

namespace corgy::python {

namespace py = pybind11;

/// The corgy Shape of an array's dimensions: (N, C, H, W) as it is, (N, F) as (N, F, 1, 1), a batch of feature
/// vectors (corgy/shape.h). Throws py::value_error for another rank or a zero dimension.
Shape shape_of_dims(const std::vector<py::ssize_t>& dims, const char* what);

/// `x` as a C-contiguous float32 numpy array, without a copy: a numpy array as it is, an object with __dlpack__
/// (a CPU torch tensor) through numpy.from_dlpack, one with __array__ through numpy.asarray. Throws TypeError for
/// another dtype, ValueError for a non-contiguous array, a rank other than 2 or 4, or (when `check_finite`) a NaN
/// or infinity, naming `what` and the index.
py::array_t<float> float32_input(py::handle x, const char* what, bool check_finite);

/// The Variable that corgy.empty made for the memory at `data`, or null when the memory is not one of them.
std::shared_ptr<Variable> empty_array_variable(const float* data, std::size_t count);

/// corgy.empty(shape): a zero-filled float32 array over a Variable's page-aligned storage.
py::array_t<float> empty_array(const std::vector<py::ssize_t>& dims);

/// An array that owns `variable` (its 4-D shape) and that a forward reads without a copy, as corgy.empty's
/// (load_image's result).
py::array_t<float> adopted_array(Variable variable);

/// A Variable with the values of a C-contiguous float32 array of rank 4 or 2: corgy.empty's own (no copy) or a copy.
Variable variable_of(const py::array_t<float>& array, const char* what);

/// A numpy array over `variable`'s memory with `dims` (their product must be variable.count()): a view that keeps
/// the storage alive (never freed under it; overwritten by the model's next forward), or with `copy` an array of
/// its own.
py::array_t<float> array_of(const Variable& variable, const std::vector<py::ssize_t>& dims, bool copy);

/// The same with the Variable's own 4-D shape.
py::array_t<float> array_of(const Variable& variable, bool copy);

/// Copies an array of exactly `shape` into a new Variable (weights, biases). Throws ValueError naming `what` and
/// both shapes when they differ.
std::vector<float> values_of(py::handle x, const std::vector<py::ssize_t>& expected_dims, const std::string& what);

/// A shape as Python shows it: "(1, 3, 224, 224)".
std::string dims_str(const std::vector<py::ssize_t>& dims);

}  // namespace corgy::python
