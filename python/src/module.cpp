// corgy._corgy: the Python extension module. python/corgy/__init__.py re-exports it as `corgy`.
#include <pybind11/pybind11.h>

#include "bind_models.h"
#include "corgy/error.h"

PYBIND11_MODULE(_corgy, m) {
  namespace py = pybind11;
  m.doc() = "corgy: CNN inference (im2col + GEMM on the CPU and Vulkan), from Python.";
  // corgy::Error (bad shapes, files, parameters, unavailable backends) as corgy.Error, with the C++ message.
  py::register_exception<corgy::Error>(m, "Error", PyExc_RuntimeError);
  corgy::python::bind_io(m);
  corgy::python::bind_models(m);
  corgy::python::bind_answers(m);
}
