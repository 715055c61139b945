// Everything a VulkanBackend owns, in the order it must be built and torn down.
#pragma once

#include <array>

#include "corgy/backends/vulkan/command_recorder.h"
#include "corgy/backends/vulkan/conv_tuner.h"
#include "corgy/backends/vulkan/pipelines.h"
#include "corgy/backends/vulkan/tensor_buffers.h"
#include "corgy/backends/vulkan/tuning_cache.h"
#include "corgy/backends/vulkan/vulkan_backend.h"
#include "corgy/backends/vulkan/vulkan_context.h"

namespace corgy::vulkan {

struct Runtime {
  explicit Runtime(const VulkanOptions& chosen)
      : options(chosen),
        context(chosen),
        tensors(context, chosen.force_staging, context.features().storage_16bit),
        pipelines(context, stats,
                  pipeline_cache_file(chosen, context.physical().properties.vendorID,
                                      context.physical().properties.deviceID)),
        recorder(context, tensors, stats, chosen.spin_wait_us),
        tuner(*this) {
    stats.pipeline_cache_loaded_bytes = pipelines.loaded_bytes();
    if (half_precision()) {
      SpecializationConstants from_fp16;
      from_fp16.set_flag(ElementwiseFp16Constant::source_fp16, true)
          .set_flag(ElementwiseFp16Constant::result_fp16, false);
      recorder.set_fp16_converter(&pipelines.get(kernels::tensor_convert_fp16, from_fp16));
    }
  }

  /// fp16 precision asked for and possible: intermediates may be fp16.
  bool half_precision() const { return context.features().storage_16bit; }

  /// The scratch tensors one operation may use at the same time.
  static constexpr int scratch_slots = 5;
  /// The slot of squeeze_excite_conv2d's scaled tensor, which the block's own scratch tensors (slots 0 to 2) and a
  /// convolution's (slot 0) must not share.
  static constexpr int excited_slot = 3;
  /// The slot of an inverted residual block's depthwise output when a squeeze-and-excitation (squeeze_excite_conv2d,
  /// slots 0 to 3) reads it.
  static constexpr int excite_input_slot = 4;
  /// A device-only tensor of `shape` for an intermediate that no layer owns (a fused convolution's output, the
  /// means and gates of a squeeze-and-excitation). One storage per slot serves every use of that slot; the recorder
  /// puts barriers between the dispatches that share it. Operations that need several at once use distinct slots.
  Variable scratch_tensor(const Shape& shape, int slot = 0) {
    Variable& storage = scratch_storage.at(static_cast<std::size_t>(slot));
    if (storage.capacity() < shape.count()) storage = Variable(Shape::vector(static_cast<int>(shape.count())));
    tensors.add_device_only(storage.storage()->id());
    return storage.view(shape);
  }

  VulkanOptions options;
  Context context;
  TensorBuffers tensors;
  PipelineCache pipelines;
  VulkanStats stats;
  CommandRecorder recorder;
  ConvTuner tuner;
  std::array<Variable, scratch_slots> scratch_storage;
};

/// The pipeline of an element-wise kernel that has an _fp16 variant (source binding: constant 0, result: constant 1,
/// a second source, if any: constant 2; ElementwiseFp16Constant): the fp32 kernel when no buffer holds fp16, else
/// the variant with its constants.
const Pipeline& elementwise_pipeline(Runtime& runtime, const KernelInfo& fp32_kernel, const KernelInfo& fp16_kernel,
                                     const BufferUse& source, const BufferUse& result,
                                     const BufferUse* second_source = nullptr);

}  // namespace corgy::vulkan
