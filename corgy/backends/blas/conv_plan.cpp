#include "corgy/backends/blas/conv_plan.h"

#include <fmt/format.h>

#include "corgy/backends/blas/depthwise_conv.h"

namespace corgy::blas {

std::string ConvPlan::describe() const {
  switch (algorithm) {
    case ConvAlgorithm::im2col_openblas:
      return desc.kernel == 1 && desc.stride == 1 && desc.padding == 0 ? "OpenBLAS sgemm (1x1: no im2col)"
                                                                       : "im2col + OpenBLAS sgemm";
    case ConvAlgorithm::depthwise:
      return fmt::format("depthwise {} kernel, {} phase plane{}", isa_name(widest_cpu_isa()),
                         depthwise.stride * depthwise.stride, depthwise.stride > 1 ? "s" : "");
    case ConvAlgorithm::packed_gemm:
      return fmt::format("packed sgemm {}, {}", kernel->name,
                         reads_padded_rows(desc) ? "input rows in place" : "implicit im2col");
    case ConvAlgorithm::winograd:
      return fmt::format("winograd F({0}x{0},{1}x{1}), sgemm {2}, {3} tiles/block",
                         winograd_geometry(winograd.variant).output_tile, winograd_geometry(winograd.variant).kernel,
                         kernel->name, winograd.tiles_per_block);
  }
  return "?";
}

namespace {

/// The automatic choice (BlasConvolution::automatic), from measurements on Tiny YOLO's and MNIST's layers
/// (benchmarks/conv_benchmark): Winograd wherever it applies to more than a few channels, else our packed GEMM.
ConvAlgorithm fastest_algorithm(const Conv2dDesc& desc) {
  if (winograd_applies(desc) && desc.in_channels >= 8 && desc.out_channels >= 8) return ConvAlgorithm::winograd;
  return ConvAlgorithm::packed_gemm;
}

}  // namespace

ConvPlan plan_convolution(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias,
                          BlasConvolution choice, ThreadTeam& team) {
  ConvPlan plan;
  plan.desc = desc;
  plan.input = input;
  const float* bias_values = bias ? bias->data() : nullptr;
  if (choice == BlasConvolution::im2col) {
    plan.algorithm = ConvAlgorithm::im2col_openblas;  // for a depthwise convolution, the baseline's scalar loop
  } else if (depthwise_kernel_applies(desc)) {
    plan.algorithm = ConvAlgorithm::depthwise;
    plan.depthwise = depthwise_geometry(desc.kernel, desc.stride, desc.dilation, desc.padding, input.h, input.w);
  } else if (is_depthwise(desc)) {
    plan.algorithm = ConvAlgorithm::im2col_openblas;  // a kernel too large for the SIMD kernels: the scalar loop
    plan.algorithm = ConvAlgorithm::im2col_openblas;
  } else if ((choice == BlasConvolution::winograd || choice == BlasConvolution::winograd2x2) &&
             winograd_applies(desc)) {
    plan.algorithm = ConvAlgorithm::winograd;
  } else if (choice == BlasConvolution::packed) {
    plan.algorithm = ConvAlgorithm::packed_gemm;
  } else {
    plan.algorithm = fastest_algorithm(desc);
  }
  if (plan.algorithm == ConvAlgorithm::packed_gemm) {
    const int pixels = desc.output_size(input.h) * desc.output_size(input.w);
    plan.kernel = &kernel_for(gemm_kernels(), desc.out_channels / desc.groups, pixels);
    plan.packed = pack_conv_weights(desc, weights.data(), bias_values, *plan.kernel);
  } else if (plan.algorithm == ConvAlgorithm::winograd) {
    // F(4x4, 3x3) measured faster on every Tiny YOLO layer, the 13x13 ones at batch 1 included (conv_benchmark);
    // F(2x2, 3x3), half as many points and more accurate, is there to force.
    const WinogradVariant variant = desc.kernel == 5                         ? WinogradVariant::f2x2_5x5
                                    : choice == BlasConvolution::winograd2x2 ? WinogradVariant::f2x2
                                                                             : WinogradVariant::f4x4;
    plan.winograd = plan_winograd(desc, input, weights.data(), bias_values, variant, team);
    plan.kernel = plan.winograd.kernel;
  }
  return plan;
}

void ConvPlanCache::add_constant(std::uint64_t storage_id) {
  constants_.insert(storage_id);
  plans_.clear();  // a constant changed: its plan (and its packed bias, keyed by the weights) must be made again
}

const ConvPlan* ConvPlanCache::find(const Conv2dDesc& desc, const Shape& input, const Variable& weights,
                                    const Variable* bias, BlasConvolution choice, ThreadTeam& team) {
  const std::uint64_t id = weights.storage()->id();
  if (!constants_.contains(id)) return nullptr;
  const auto found = plans_.find(id);
  const auto same_desc = [&](const Conv2dDesc& d) {
    return d.in_channels == desc.in_channels && d.out_channels == desc.out_channels && d.kernel == desc.kernel &&
           d.stride == desc.stride && d.padding == desc.padding && d.dilation == desc.dilation &&
           d.groups == desc.groups && d.activation.kind == desc.activation.kind &&
           d.activation.slope == desc.activation.slope;
  };
  if (found != plans_.end() && found->second.input == input && same_desc(found->second.desc)) return &found->second;
  return &(plans_[id] = plan_convolution(desc, input, weights, bias, choice, team));
}

}  // namespace corgy::blas
