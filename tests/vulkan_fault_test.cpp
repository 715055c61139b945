// GPU faults become corgy::Error, and the model stays usable on another backend (or on the same one once the fault
// is gone): a missing or broken Vulkan loader or driver, no device, device creation failing, out of device memory
// at upload and during a forward, a lost device, and a tensor larger than the device's buffer limit. Faults that
// lavapipe cannot produce on demand come from tests/vulkan_fault_loader.cpp, a loader that wraps the real one.
#include <dlfcn.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "corgy/backends/blas/blas_backend.h"
#include "test_util.h"
#include "vulkan_test_options.h"

namespace corgy::testing {
namespace {

// Kept in step with Fault in tests/vulkan_fault_loader.cpp.
enum class FaultKind {
  none = 0,
  no_driver = 1,
  no_device = 2,
  device_creation_fails = 3,
  out_of_device_memory = 4,
  device_lost_at_submit = 5,
  device_lost_at_wait = 6,
};

// Sets the fault of the wrapping loader (loaded by the backends that name it) and clears it when destroyed.
class Fault {
 public:
  Fault() {
    library_ = dlopen(CORGY_VULKAN_FAULT_LOADER, RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) throw std::runtime_error(dlerror());
    set_ = reinterpret_cast<void (*)(int, long long)>(dlsym(library_, "corgy_vulkan_fault"));
  }
  ~Fault() {
    set(FaultKind::none);
    dlclose(library_);
  }
  void set(FaultKind kind, long long parameter = 0) { set_(static_cast<int>(kind), parameter); }

 private:
  void* library_ = nullptr;
  void (*set_)(int, long long) = nullptr;
};

VulkanOptions faulty_options() {
  VulkanOptions options = validated_vulkan_options();
  options.loader = CORGY_VULKAN_FAULT_LOADER;
  return options;
}

// Conv (weights 16 x 8 x 3 x 3 = 4.5 KiB), ReLU, conv, global average: intermediates of 16 x 32 x 32 floats (64 KiB).
Sequential small_model() {
  Sequential model;
  model.add(Conv2d({.in_channels = 8, .out_channels = 16, .kernel = 3, .padding = 1}));
  model.add(ReLU());
  model.add(Conv2d({.in_channels = 16, .out_channels = 4, .kernel = 3, .padding = 1}));
  model.add(AvgPool2d(AvgPool2d::global()));
  std::mt19937 rng(5);
  randomize_parameters(model, rng);
  return model;
}

Variable small_input() {
  std::mt19937 rng(6);
  return random_variable(Shape{1, 8, 32, 32}, rng);
}

Variable naive_output(Sequential& model, const Variable& input) {
  model.set_backend("naive");
  return model.forward(input).clone();
}

// After a fault the model moves to OpenBLAS and computes what the naive backend computes.
void expect_usable_on_blas(Sequential& model, const Variable& input, const Variable& expected) {
  model.set_backend(std::make_unique<BlasBackend>(1));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));
}

TEST(VulkanFaults, MissingLoaderIsAnError) {
  VulkanOptions options;
  options.loader = "libvulkan-that-is-not-installed.so.1";
  const std::string message = error_of([&] { VulkanBackend backend(options); });
  EXPECT_TRUE(contains(message, "Vulkan: cannot open the Vulkan loader 'libvulkan-that-is-not-installed.so.1'"))
      << message;
}

TEST(VulkanFaults, LibraryThatIsNotALoaderIsAnError) {
  VulkanOptions options;
  options.loader = "libm.so.6";
  const std::string message = error_of([&] { VulkanBackend backend(options); });
  EXPECT_TRUE(contains(message, "'libm.so.6' is not a Vulkan loader")) << message;
}

TEST(VulkanFaults, NoDriverIsAnError) {
  Fault fault;
  fault.set(FaultKind::no_driver);
  const std::string message = error_of([] { VulkanBackend backend(faulty_options()); });
  EXPECT_TRUE(contains(message, "Vulkan: no Vulkan device found: the loader found no driver")) << message;
}

// The real loader with no usable driver: an ICD manifest naming a library that is not a Vulkan driver. Each test
// runs in a process of its own (ctest), so the environment variable touches no other test.
TEST(VulkanFaults, BrokenDriverIsAnError) {
  const std::filesystem::path manifest = std::filesystem::temp_directory_path() / "corgy-broken-icd.json";
  std::ofstream(manifest) << R"({"file_format_version": "1.0.0",
                                 "ICD": {"library_path": "libm.so.6", "api_version": "1.1.0"}})";
  ::setenv("VK_ICD_FILENAMES", manifest.c_str(), 1);
  ::setenv("VK_DRIVER_FILES", manifest.c_str(), 1);
  const std::string message = error_of([] { VulkanBackend backend; });
  // "auto" falls back to OpenBLAS and says why.
  const std::string automatic = make_backend("auto")->name();
  ::unsetenv("VK_ICD_FILENAMES");
  ::unsetenv("VK_DRIVER_FILES");
  std::filesystem::remove(manifest);
  EXPECT_TRUE(contains(message, "Vulkan: no Vulkan device found")) << message;
  EXPECT_EQ(automatic, "blas");
}

TEST(VulkanFaults, NoDeviceIsAnError) {
  Fault fault;
  fault.set(FaultKind::no_device);
  const std::string message = error_of([] { VulkanBackend backend(faulty_options()); });
  EXPECT_TRUE(contains(message, "Vulkan: no Vulkan device found")) << message;
}

TEST(VulkanFaults, DeviceCreationFailureIsAnError) {
  Fault fault;
  fault.set(FaultKind::device_creation_fails);
  const std::string message = error_of([] { VulkanBackend backend(faulty_options()); });
  EXPECT_TRUE(contains(message, "Vulkan: vkCreateDevice failed: VK_ERROR_INITIALIZATION_FAILED")) << message;
}

TEST(VulkanFaults, OutOfDeviceMemoryAtUploadIsAnErrorAndTheModelStaysUsable) {
  Fault fault;
  Sequential model = small_model();
  const Variable input = small_input();
  const Variable expected = naive_output(model, input);
  model.set_backend(std::make_unique<VulkanBackend>(faulty_options()));
  fault.set(FaultKind::out_of_device_memory, 1);  // every allocation from now on: the weights' come first
  const std::string message = error_of([&] { model.forward(input); });
  EXPECT_TRUE(contains(message, "Vulkan: out of device memory allocating")) << message;
  EXPECT_TRUE(contains(message, "VK_ERROR_OUT_OF_DEVICE_MEMORY")) << message;
  // The same backend works once memory is there again, and so does another backend.
  fault.set(FaultKind::none);
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));
  expect_usable_on_blas(model, input, expected);
}

TEST(VulkanFaults, OutOfDeviceMemoryDuringAForwardIsAnErrorAndTheModelStaysUsable) {
  Fault fault;
  Sequential model = small_model();
  const Variable input = small_input();
  const Variable expected = naive_output(model, input);
  auto backend = std::make_unique<VulkanBackend>(faulty_options());
  const VulkanBackend& vulkan = *backend;
  model.set_backend(std::move(backend));
  // Larger than every weight, smaller than the 64 KiB intermediates and the im2col scratch.
  fault.set(FaultKind::out_of_device_memory, 32 * 1024);
  const std::string message = error_of([&] { model.forward(input); });
  EXPECT_TRUE(contains(message, "Vulkan: out of device memory allocating")) << message;
  EXPECT_EQ(vulkan.stats().submissions, 0u);
  fault.set(FaultKind::none);
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));  // and again, from the recorded commands
  expect_usable_on_blas(model, input, expected);
}

void expect_device_loss_is_an_error(FaultKind kind, const std::string& where) {
  Fault fault;
  Sequential model = small_model();
  const Variable input = small_input();
  const Variable expected = naive_output(model, input);
  model.set_backend(std::make_unique<VulkanBackend>(faulty_options()));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));
  fault.set(kind);
  const std::string message = error_of([&] { model.forward(input); });
  EXPECT_TRUE(contains(message, "was lost (VK_ERROR_DEVICE_LOST at " + where + ")")) << message;
  EXPECT_TRUE(contains(message, "set_backend to another backend")) << message;
  // A lost device stays lost: the next forward fails at once, without touching the device.
  fault.set(FaultKind::none);
  const std::string again = error_of([&] { model.forward(input); });
  EXPECT_TRUE(contains(again, "was lost earlier")) << again;
  expect_usable_on_blas(model, input, expected);
  // A new Vulkan backend (a new logical device) works.
  model.set_backend(std::make_unique<VulkanBackend>(faulty_options()));
  EXPECT_TRUE(outputs_match(model.forward(input), expected, 1e-4));
}

TEST(VulkanFaults, DeviceLostAtSubmitIsAnErrorAndTheModelStaysUsable) {
  expect_device_loss_is_an_error(FaultKind::device_lost_at_submit, "vkQueueSubmit");
}

TEST(VulkanFaults, DeviceLostWhileWaitingIsAnErrorAndTheModelStaysUsable) {
  expect_device_loss_is_an_error(FaultKind::device_lost_at_wait, "vkWaitForFences");
}

// A real limit of the real device: a tensor larger than one storage buffer may be (maxStorageBufferRange, 128 MiB
// on lavapipe). It is refused before anything is allocated for it, and the model runs on another backend.
TEST(VulkanFaults, TensorLargerThanTheDeviceAllowsIsAnError) {
  auto backend = std::make_unique<VulkanBackend>(validated_vulkan_options());
  const std::uint64_t range = 128ull << 20;
  if (backend->device().name.find("llvmpipe") == std::string::npos) {
    GTEST_SKIP() << "sized for lavapipe's 128 MiB maxStorageBufferRange; device is " << backend->device().name;
  }
  Sequential model;
  model.add(ReLU());
  model.set_backend(std::move(backend));
  const int rows = static_cast<int>(range / sizeof(float) / 1024) + 1;  // just over the range
  Variable input(Shape{1, 1, rows, 1024});
  input.fill(-1.0f);
  const std::string message = error_of([&] { model.forward(input); });
  EXPECT_TRUE(contains(message, fmt::format("a tensor of shape (1, 1, {}, 1024) ({} bytes) is larger than", rows,
                                            static_cast<std::uint64_t>(rows) * 1024 * 4)))
      << message;
  model.set_backend("blas", 1);
  const Variable& output = model.forward(input);
  EXPECT_EQ(output.data()[0], 0.0f);
  EXPECT_EQ(output.data()[output.count() - 1], 0.0f);
}

}  // namespace
}  // namespace corgy::testing
