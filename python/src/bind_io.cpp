// Arrays, images and what this machine offers: corgy.empty, load_image, save_png, load_npy, backends,
// vulkan_devices.
#include <pybind11/stl.h>

#include "arrays.h"
#include "bind_models.h"
#include "corgy/backend.h"
#include "corgy/io/image.h"
#include "corgy/io/npy.h"
#if CORGY_HAS_VULKAN
#include "corgy/backends/vulkan/vulkan_backend.h"
#endif

namespace corgy::python {

namespace py = pybind11;
using namespace pybind11::literals;

void bind_io(py::module_& m) {
  m.def("empty", &empty_array, R"doc(A zero-filled float32 array of `shape` ((N, C, H, W) or (N, features)) over
corgy's page-aligned memory: a forward reads it where it lies, without a copy (the Vulkan backend imports its pages
as they are). Fill it in place (x[...] = values) and pass it to a model.)doc",
        "shape"_a);
  m.def(
      "load_image",
      [](const std::string& path, int channels) {
        Variable image;
        {
          py::gil_scoped_release release;
          image = load_image(path, channels);
        }
        return adopted_array(std::move(image));
      },
      R"doc(Reads a JPEG, PNG, BMP, GIF, TGA, PSD, HDR or PNM file as float32 (1, channels, H, W) in [0, 1], RGB
order, in corgy's page-aligned memory (a forward reads it without a copy). Raises corgy.Error naming the file.)doc",
      "path"_a, "channels"_a = 3);
  m.def(
      "save_png",
      [](const std::string& path, py::handle image) {
        auto array = float32_input(image, "save_png image", true);
        save_png(path, variable_of(array, "save_png image"));
      },
      "Writes a (1, C, H, W) image, C = 1, 3 or 4, values clamped to [0, 1], as an 8-bit PNG.", "path"_a, "image"_a);
  m.def(
      "load_npy", [](const std::string& path) { return adopted_array(load_npy(path)); },
      "Reads a float32 .npy file of up to 4 dimensions as corgy's 4-D (N, C, H, W) array.", "path"_a);
  m.def("backends", &available_backends,
        "The backends built into this corgy, best first ('vulkan', 'blas', 'naive'); make_backend may still refuse\n"
        "one that this machine cannot run (no Vulkan driver).");
  m.def(
      "vulkan_devices",
      [] {
        py::list devices;
#if CORGY_HAS_VULKAN
        for (const VulkanDeviceInfo& d : vulkan_devices()) {
          devices.append(py::dict("index"_a = d.index, "name"_a = d.name, "type"_a = d.type, "driver"_a = d.driver,
                                  "api_version"_a = d.api_version, "host_import"_a = d.host_import));
        }
#endif
        return devices;
      },
      "Every Vulkan device the loader reports (index, name, type, driver, api_version, host_import); empty when\n"
      "corgy was built without Vulkan. Raises corgy.Error when the Vulkan loader cannot be opened.");
}

}  // namespace corgy::python
