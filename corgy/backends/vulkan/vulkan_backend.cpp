#include "corgy/backends/vulkan/vulkan_backend.h"

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/backends/vulkan/global_pool.h"
#include "corgy/backends/vulkan/runtime.h"

namespace corgy {

namespace vulkan {

std::uint32_t elementwise_groups(std::size_t elements) {
  // Enough workgroups to fill any GPU; the kernels' grid-stride loops cover the rest.
  constexpr std::size_t most = 65535;
  const std::size_t groups = (elements + elementwise_workgroup - 1) / elementwise_workgroup;
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(groups, 1, most));
}

const Pipeline& elementwise_pipeline(Runtime& runtime, const KernelInfo& fp32_kernel, const KernelInfo& fp16_kernel,
                                     const BufferUse& source, const BufferUse& result, const BufferUse* second_source) {
  const bool source_half = source.format == TensorFormat::fp16;
  const bool second_half = second_source && second_source->format == TensorFormat::fp16;
  const bool result_half = result.format == TensorFormat::fp16;
  if (!source_half && !second_half && !result_half) return runtime.pipelines.get(fp32_kernel);
  SpecializationConstants constants;
  constants.set_flag(ElementwiseFp16Constant::source_fp16, source_half)
      .set_flag(ElementwiseFp16Constant::result_fp16, result_half);
  if (second_source) constants.set_flag(ElementwiseFp16Constant::second_source_fp16, second_half);
  return runtime.pipelines.get(fp16_kernel, constants);
}

}  // namespace vulkan

using vulkan::elementwise_groups;
using vulkan::elementwise_pipeline;
using vulkan::u32;

VulkanBackend::VulkanBackend(const VulkanOptions& options) : runtime_(std::make_unique<vulkan::Runtime>(options)) {}

VulkanBackend::~VulkanBackend() = default;

const VulkanDeviceInfo& VulkanBackend::device() const { return runtime_->context.physical().info; }

bool VulkanBackend::zero_copy() const { return runtime_->tensors.zero_copy(); }

const VulkanStats& VulkanBackend::stats() const { return runtime_->stats; }

Precision VulkanBackend::precision() const { return runtime_->half_precision() ? Precision::fp16 : Precision::fp32; }

bool VulkanBackend::cooperative_matrix() const { return runtime_->context.features().cooperative_matrix; }

void VulkanBackend::set_profiling(bool enabled) { runtime_->recorder.set_profiling(enabled); }

bool VulkanBackend::keeps_pipeline_statistics() const { return runtime_->context.features().pipeline_statistics; }

std::vector<VulkanPipelineStatistics> VulkanBackend::pipeline_statistics() const {
  return runtime_->pipelines.statistics();
}

const std::vector<VulkanDispatchProfile>& VulkanBackend::dispatch_profile() const {
  return runtime_->recorder.profile();
}

void VulkanBackend::begin_layer(int index) { runtime_->recorder.set_layer(index); }

std::vector<OpProfile> VulkanBackend::take_profile() { return runtime_->recorder.take_profile(); }

void VulkanBackend::set_device_only(std::span<const std::uint64_t> storage_ids) {
  runtime_->tensors.set_device_only(storage_ids);
}

void VulkanBackend::upload_constant(const Variable& tensor) { runtime_->tensors.upload_constant(tensor); }

void VulkanBackend::begin_forward() {
  runtime_->recorder.begin();
  runtime_->tuner.begin_forward();
}

void VulkanBackend::end_forward() {
  runtime_->tuner.finish_forward();  // times the shapes met for the first time, before the forward runs
  runtime_->recorder.end();          // binds the forward's pipelines: their compiles are over
  runtime_->stats.pipeline_compile_ms = runtime_->pipelines.compile_ms();
  runtime_->pipelines.save();
}

void VulkanBackend::as_forward(const char* operation, const std::function<void()>& record) {
  vulkan::CommandRecorder& recorder = runtime_->recorder;
  // An operation made of others (conv2d_maxpool) names their dispatches.
  const char* outer = recorder.operation();
  const bool nested = recorder.in_forward() && outer != nullptr;
  if (!nested) recorder.set_operation(operation);
  if (recorder.in_forward()) {
    record();
    if (!nested) recorder.set_operation(nullptr);
    return;
  }
  begin_forward();
  try {
    record();
  } catch (...) {
    recorder.abandon();
    recorder.set_operation(nullptr);
    throw;
  }
  recorder.set_operation(nullptr);
  end_forward();
}

void VulkanBackend::pool2d(const Pool2dDesc& d, const Variable& input, Variable& output) {
  as_forward("pool2d", [&] {
    const Shape& in = input.shape();
    if (vulkan::is_global_pool(d, in)) return vulkan::record_global_pool(*runtime_, d.kind, input, output);
    const Shape& out = output.shape();
    const vulkan::Pool2dParams params{
        u32(in.n * in.c),
        u32(in.h),
        u32(in.w),
        u32(out.h),
        u32(out.w),
        u32(d.kernel_h),
        u32(d.kernel_w),
        u32(d.stride_h),
        u32(d.stride_w),
        u32(d.pad_top),
        u32(d.pad_left),
        d.kind == PoolKind::max ? vulkan::PoolKernelKind::max : vulkan::PoolKernelKind::average,
        d.count_include_pad ? 1u : 0u};
    const vulkan::BufferUse source = runtime_->tensors.read(input);
    const vulkan::BufferUse result = runtime_->tensors.write(output, true);
    runtime_->recorder.dispatch(
        elementwise_pipeline(*runtime_, vulkan::kernels::pool2d, vulkan::kernels::pool2d_fp16, source, result),
        {source, result}, params, elementwise_groups(output.count()));
  });
}

void VulkanBackend::activation(Activation activation, const Variable& input, Variable& output) {
  as_forward("activation", [&] {
    const vulkan::ActivationParams params{u32(input.count()), vulkan::activation_kind(activation), activation.slope};
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::activation),
                                {runtime_->tensors.read(input), runtime_->tensors.write(output)}, params,
                                elementwise_groups(input.count()));
  });
}

void VulkanBackend::softmax(const Variable& input, Variable& output) {
  as_forward("softmax", [&] {
    const Shape& s = input.shape();
    const vulkan::SoftmaxParams params{u32(s.n), u32(s.c), u32(s.plane_count())};
    runtime_->recorder.dispatch(runtime_->pipelines.get(vulkan::kernels::softmax),
                                {runtime_->tensors.read(input), runtime_->tensors.write(output)}, params,
                                elementwise_groups(static_cast<std::size_t>(s.n) * s.plane_count()));
  });
}

void VulkanBackend::channel_affine(const Variable& input, const Variable& scale, const Variable& shift,
                                   Activation activation, Variable& output) {
  as_forward("channel_affine", [&] {
    const Shape& s = input.shape();
    const vulkan::ChannelAffineParams params{u32(input.count()), u32(s.c), u32(s.plane_count()),
                                             vulkan::activation_kind(activation), activation.slope};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    const vulkan::BufferUse source = tensors.read(input);
    const vulkan::BufferUse result = tensors.write(output, true);
    runtime_->recorder.dispatch(elementwise_pipeline(*runtime_, vulkan::kernels::channel_affine,
                                                     vulkan::kernels::channel_affine_fp16, source, result),
                                {source, tensors.read(scale), tensors.read(shift), result}, params,
                                elementwise_groups(input.count()));
  });
}

void VulkanBackend::upsample_nearest(int scale, const Variable& input, Variable& output) {
  as_forward("upsample", [&] {
    const Shape& s = input.shape();
    const vulkan::UpsampleParams params{u32(s.n * s.c), u32(s.h), u32(s.w), u32(scale)};
    const vulkan::BufferUse source = runtime_->tensors.read(input);
    const vulkan::BufferUse result = runtime_->tensors.write(output, true);
    runtime_->recorder.dispatch(elementwise_pipeline(*runtime_, vulkan::kernels::upsample_nearest,
                                                     vulkan::kernels::upsample_nearest_fp16, source, result),
                                {source, result}, params, elementwise_groups(output.count()));
  });
}

void VulkanBackend::concat_channels(std::span<const Variable* const> inputs, Variable& output) {
  as_forward("concat", [&] {
    const Shape& out = output.shape();
    int first_channel = 0;
    // fp16 only when every input is: the output's format is one for all the copies.
    bool all_half = true;
    for (const Variable* input : inputs) {
      all_half = all_half && runtime_->tensors.read(*input).format == vulkan::TensorFormat::fp16;
    }
    for (const Variable* input : inputs) {
      const Shape& in = input->shape();
      const vulkan::ConcatCopyParams params{u32(in.n), u32(in.c), u32(in.plane_count()), u32(out.c),
                                            u32(first_channel)};
      const vulkan::BufferUse source = runtime_->tensors.read(*input);
      vulkan::BufferUse target = runtime_->tensors.write(output, all_half);
      // The region this copy writes, so that copies of one concatenation run without barriers between them.
      const std::size_t plane_bytes = out.plane_count() * vulkan::element_bytes(target.format);
      target.region_begin = first_channel * plane_bytes;
      target.bytes = ((static_cast<std::size_t>(in.n - 1) * out.c + first_channel + in.c) * plane_bytes);
      runtime_->recorder.dispatch(elementwise_pipeline(*runtime_, vulkan::kernels::concat_copy,
                                                       vulkan::kernels::concat_copy_fp16, source, target),
                                  {source, target}, params, elementwise_groups(input->count()));
      first_channel += in.c;
    }
  });
}

void VulkanBackend::gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) {
  as_forward("gather channels", [&] {
    const Shape& in = input.shape();
    const Shape& out = output.shape();
    const vulkan::GatherChannelsParams params{u32(out.n),
                                              u32(out.c),
                                              u32(in.c),
                                              u32(out.plane_count()),
                                              u32(desc.first),
                                              u32(desc.inner),
                                              u32(desc.inner_stride),
                                              u32(desc.outer_stride)};
    const vulkan::BufferUse source = runtime_->tensors.read(input);
    const vulkan::BufferUse result = runtime_->tensors.write(output, true);
    runtime_->recorder.dispatch(elementwise_pipeline(*runtime_, vulkan::kernels::gather_channels,
                                                     vulkan::kernels::gather_channels_fp16, source, result),
                                {source, result}, params, elementwise_groups(output.count()));
  });
}

void VulkanBackend::add(const Variable& a, const Variable& b, Activation activation, Variable& output) {
  as_forward("add", [&] {
    const vulkan::AddParams params{u32(a.count()), vulkan::activation_kind(activation), activation.slope};
    vulkan::TensorBuffers& tensors = runtime_->tensors;
    const vulkan::BufferUse left = tensors.read(a);
    const vulkan::BufferUse right = tensors.read(b);
    // In place (conv2d_add adds over the convolution's output), the sum keeps the format the convolution stored:
    // an invocation reads and writes its own element, and fp16 written over fp32 would move bytes that other
    // invocations still read.
    const auto keeps_format = [&](const Variable& input, const vulkan::BufferUse& use) {
      return input.storage() != output.storage() || use.format == vulkan::TensorFormat::fp16;
    };
    const vulkan::BufferUse result = tensors.write(output, keeps_format(a, left) && keeps_format(b, right));
    runtime_->recorder.dispatch(
        elementwise_pipeline(*runtime_, vulkan::kernels::add, vulkan::kernels::add_fp16, left, result, &right),
        {left, right, result}, params, elementwise_groups(a.count()));
  });
}

}  // namespace corgy
