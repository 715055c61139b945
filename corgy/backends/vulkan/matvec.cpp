#include "corgy/backends/vulkan/matvec.h"

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"

namespace corgy::vulkan {

void record_matvec(Runtime& runtime, const Variable& input, const Variable& weights, const Variable* bias,
                   Activation activation, int rows, int columns, Variable& output, bool fp16_output) {
  const std::uint32_t images = u32(input.count() / static_cast<std::size_t>(columns));
  const MatvecParams params{images,          u32(rows), u32(columns), bias ? 1u : 0u, activation_kind(activation),
                            activation.slope};
  const BufferUse source = runtime.tensors.read(input);
  const BufferUse result = runtime.tensors.write(output, fp16_output);
  const std::uint32_t row_groups = (u32(rows) + matvec_rows_per_group - 1) / matvec_rows_per_group;
  runtime.recorder.dispatch(elementwise_pipeline(runtime, kernels::matvec, kernels::matvec_fp16, source, result),
                            {source, runtime.tensors.read(weights),
                             bias ? runtime.tensors.read(*bias) : runtime.recorder.unused_binding(), result},
                            params, std::min<std::uint32_t>(row_groups, 65535), std::min<std::uint32_t>(images, 65535));
}

}  // namespace corgy::vulkan
