// VulkanBackend::squeeze_excite: four dispatches (global_pool.comp for the means, matvec.comp for each small
// product, scale_channels.comp for the output), where the block's layers took a pool walked by one thread per
// plane, two 1x1 convolutions on (N, C, 1, 1) as tiled GEMMs (with split-K reductions) and an fp32-only multiply.
#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/global_pool.h"
#include "corgy/backends/vulkan/matvec.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

using vulkan::u32;

void VulkanBackend::squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                                   const Variable* reduce_bias, const Variable& expand_weights,
                                   const Variable* expand_bias, Variable& output) {
  as_forward("squeeze_excite", [&] {
    vulkan::Runtime& runtime = *runtime_;
    const Shape& in = input.shape();
    // The means, squeezed values and gates in device-only scratch tensors (one value per channel and image).
    Variable means = runtime.scratch_tensor({in.n, desc.channels, 1, 1}, 0);
    Variable squeezed = runtime.scratch_tensor({in.n, desc.squeeze_channels, 1, 1}, 1);
    Variable gates = runtime.scratch_tensor({in.n, desc.channels, 1, 1}, 2);
    vulkan::record_global_pool(runtime, PoolKind::average, input, means);
    vulkan::record_matvec(runtime, means, reduce_weights, reduce_bias, desc.reduce_activation, desc.squeeze_channels,
                          desc.channels, squeezed, true);
    vulkan::record_matvec(runtime, squeezed, expand_weights, expand_bias, desc.expand_activation, desc.channels,
                          desc.squeeze_channels, gates, false);  // scale_channels reads fp32 gates
    const vulkan::ScaleChannelsParams params{u32(input.count()), u32(in.plane_count())};
    const vulkan::BufferUse source = runtime.tensors.read(input);
    const vulkan::BufferUse scales = runtime.tensors.read(gates);
    const vulkan::BufferUse result = runtime.tensors.write(output, true);
    runtime.recorder.dispatch(vulkan::elementwise_pipeline(runtime, vulkan::kernels::scale_channels,
                                                           vulkan::kernels::scale_channels_fp16, source, result),
                              {source, scales, result}, params, vulkan::elementwise_groups(input.count()));
  });
}

void VulkanBackend::squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                                          const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                                          const Variable* bias, const Variable* residual, Variable& output) {
  as_forward("squeeze_excite_conv2d", [&] {
    // The scaled tensor in its own scratch slot: the block's means, squeezed values and gates take slots 0 to 2,
    // and the convolution may take slot 0 for an intermediate of its own.
    Variable excited = runtime_->scratch_tensor(input.shape(), vulkan::Runtime::excited_slot);
    squeeze_excite(excite, input, *excite_weights.reduce_weights, excite_weights.reduce_bias,
                   *excite_weights.expand_weights, excite_weights.expand_bias, excited);
    if (residual) return conv2d_add(conv, excited, weights, bias, *residual, output);
    conv2d(conv, excited, weights, bias, output);
  });
}

}  // namespace corgy
