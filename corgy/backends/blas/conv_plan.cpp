#include "corgy/backends/blas/conv_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/blas/depthwise_conv.h"

namespace corgy::blas {

std::vector<std::span<const float>> ConvPlan::weight_buffers() const {
  std::vector<std::span<const float>> buffers;
  const auto add_packed = [&](const PackedA& matrix) {
    if (matrix.rows() > 0) buffers.emplace_back(matrix.panel(0), matrix.bytes() / sizeof(float));
  };
  for (const PackedA& group : packed.groups) add_packed(group);
  for (const PackedA& point : winograd.points) add_packed(point);
  if (channel_panels.data) buffers.emplace_back(channel_panels.data->data(), channel_panels.floats());
  if (!depthwise_packed.empty()) buffers.emplace_back(depthwise_packed);
  if (!few_channels_packed.empty()) buffers.emplace_back(few_channels_packed);
  return buffers;
}

void ConvPlan::share_packed_weights(const ConvPlan& other) {
  const auto share = [](std::vector<PackedA>& mine, const std::vector<PackedA>& theirs) {
    if (mine.size() != theirs.size()) return;
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i].share_buffer_if_equal(theirs[i]);
  };
  share(packed.groups, other.packed.groups);
  share(winograd.points, other.winograd.points);
  channel_panels.share_buffer_if_equal(other.channel_panels);
}

bool ConvPlan::holds_weights() const {
  switch (algorithm) {
    case ConvAlgorithm::packed_gemm:
    case ConvAlgorithm::winograd:
    case ConvAlgorithm::pointwise_batch:
    case ConvAlgorithm::channels_in_lanes:
    case ConvAlgorithm::few_channels: return true;
    case ConvAlgorithm::im2col_openblas:
    case ConvAlgorithm::depthwise:
    case ConvAlgorithm::depthwise_channel_blocks: return false;  // a band of rows takes the plane kernel
  }
  return false;
}

std::string ConvPlan::describe() const {
  std::string text;
  switch (algorithm) {
    case ConvAlgorithm::im2col_openblas:
      return desc.kernel == 1 && desc.stride == 1 && desc.padding == 0 ? "OpenBLAS sgemm (1x1: no im2col)"
                                                                       : "im2col + OpenBLAS sgemm";
    case ConvAlgorithm::depthwise:
      text = depthwise_direct_blocks_apply(depthwise)
                 ? fmt::format("depthwise {} kernel, direct blocks", isa_name(widest_cpu_isa()))
                 : fmt::format("depthwise {} kernel, {} phase plane{}", isa_name(widest_cpu_isa()),
                               depthwise.stride * depthwise.stride, depthwise.stride > 1 ? "s" : "");
      break;
    case ConvAlgorithm::depthwise_channel_blocks:
      text = fmt::format("depthwise {} kernel, channel blocks", isa_name(widest_cpu_isa()));
      break;
    case ConvAlgorithm::packed_gemm:
      text = fmt::format("packed sgemm {}, {}", kernel->name,
                         reads_planes_in_place(desc) ? "input planes in place"
                         : reads_padded_rows(desc)   ? "input rows in place"
                                                     : "implicit im2col");
      break;
    case ConvAlgorithm::pointwise_batch:
      text = fmt::format("packed sgemm {}, one GEMM over the batch's pixels", kernel->name);
      break;
    case ConvAlgorithm::channels_in_lanes:
      text = fmt::format("packed sgemm {}, output channels in the lanes, {}", kernel->name,
                         reads_planes_in_place(desc)          ? "input planes packed"
                         : channels_in_lanes_reads_taps(desc) ? "taps read in place"
                                                              : "implicit im2col");
      break;
    case ConvAlgorithm::few_channels: {
      const FewChannelsKernel k = few_channels_kernel();
      text = fmt::format("direct, few input channels, {} kernel of {} channels x {} pixels", isa_name(widest_cpu_isa()),
                         k.channels, k.step);
      break;
    }
    case ConvAlgorithm::winograd:
      text = fmt::format("winograd F({0}x{0},{1}x{1}), sgemm {2}, {3} tiles/block",
                         winograd_geometry(winograd.variant).output_tile, winograd_geometry(winograd.variant).kernel,
                         kernel->name, winograd.tiles_per_block);
      break;
  }
  return text + " [" + origin + "]";
}

ConvPlan plan_convolution(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias,
                          const ConvChoice& choice, ThreadTeam& team) {
  ConvPlan plan;
  plan.desc = desc;
  plan.input = input;
  plan.algorithm = choice.algorithm;
  const float* bias_values = bias ? bias->data() : nullptr;
  plan.bias = bias_values;
  if (plan.algorithm == ConvAlgorithm::depthwise || plan.algorithm == ConvAlgorithm::depthwise_channel_blocks) {
    plan.depthwise = depthwise_geometry(desc.kernel, desc.stride, desc.dilation, desc.padding, input.h, input.w);
  }
  if (plan.algorithm == ConvAlgorithm::depthwise_channel_blocks) {
    plan.depthwise_packed =
        pack_depthwise_channel_weights(weights.data(), bias_values, desc.out_channels, desc.kernel * desc.kernel);
  } else if (plan.algorithm == ConvAlgorithm::packed_gemm) {
    const int pixels = desc.output_h(input.h) * desc.output_w(input.w);
    plan.kernel = &kernel_for(gemm_kernels(), desc.out_channels / desc.groups, pixels);
    plan.packed = pack_conv_weights(desc, weights.data(), bias_values, *plan.kernel);
  } else if (plan.algorithm == ConvAlgorithm::pointwise_batch) {
    const int columns = input.n * desc.output_size(input.h) * desc.output_size(input.w);
    plan.kernel = &kernel_for(gemm_kernels(), desc.out_channels, columns);
    plan.packed = pack_conv_weights(desc, weights.data(), bias_values, *plan.kernel);
  } else if (plan.algorithm == ConvAlgorithm::channels_in_lanes) {
    const Shape output{input.n, desc.out_channels, desc.output_size(input.h), desc.output_size(input.w)};
    plan.kernel = &channels_in_lanes_kernel(desc, output, team.size());
    plan.channel_panels = pack_channel_panels(desc, weights.data(), bias_values, *plan.kernel);
  } else if (plan.algorithm == ConvAlgorithm::few_channels) {
    plan.few_channels_packed =
        pack_few_channels_weights(weights.data(), bias_values, desc.out_channels, desc.in_channels,
                                  desc.kernel * desc.kernel, few_channels_kernel().channels);
  } else if (plan.algorithm == ConvAlgorithm::winograd) {
    plan.winograd = plan_winograd(desc, input, weights.data(), bias_values, choice.variant, team);
    plan.kernel = plan.winograd.kernel;
  }
  return plan;
}

ConvPlan plan_convolution(const Conv2dDesc& desc, const Shape& input, const Variable& weights, const Variable* bias,
                          BlasConvolution choice, ThreadTeam& team) {
  ConvChoice chosen{ConvAlgorithm::im2col_openblas};
  if (choice == BlasConvolution::im2col || (is_depthwise(desc) && !depthwise_kernel_applies(desc))) {
    // im2col + OpenBLAS; for a depthwise convolution, the baseline's scalar loop (also for kernels too large for
    // the SIMD kernels).
  } else if (choice == BlasConvolution::few_channels && few_channels_applies(desc)) {
    chosen = {ConvAlgorithm::few_channels};
  } else if (choice == BlasConvolution::channel_blocks && depthwise_kernel_applies(desc) &&
             depthwise_channel_blocks_apply(desc.kernel, desc.stride, desc.dilation)) {
    chosen = {ConvAlgorithm::depthwise_channel_blocks};
  } else if (depthwise_kernel_applies(desc) && choice != BlasConvolution::automatic) {
    chosen = {ConvAlgorithm::depthwise};
  } else if ((choice == BlasConvolution::winograd || choice == BlasConvolution::winograd2x2) &&
             winograd_applies(desc)) {
    chosen = {ConvAlgorithm::winograd, desc.kernel == 5                         ? WinogradVariant::f2x2_5x5
                                       : choice == BlasConvolution::winograd2x2 ? WinogradVariant::f2x2
                                                                                : WinogradVariant::f4x4};
  } else if (choice == BlasConvolution::batch && reads_planes_in_place(desc) && desc.groups == 1) {
    chosen = {ConvAlgorithm::pointwise_batch};
  } else if (choice == BlasConvolution::channels_in_lanes && channels_in_lanes_applies(desc, input)) {
    chosen = {ConvAlgorithm::channels_in_lanes};
  } else if (choice == BlasConvolution::packed) {
    chosen = {ConvAlgorithm::packed_gemm};
  } else {
    chosen = candidate_algorithms(desc, input).front();
  }
  ConvPlan plan = plan_convolution(desc, input, weights, bias, chosen, team);
  plan.origin = choice == BlasConvolution::automatic ? "table" : "forced";
  return plan;
}

void ConvPlanCache::add_constant(std::uint64_t storage_id) {
  constants_.insert(storage_id);
  plans_.clear();  // a constant changed: its plan (and its packed bias, keyed by the weights) must be made again
  channel_block_plans.clear();
}

const ConvPlan* ConvPlanCache::find(const Conv2dDesc& desc, const Shape& input, const Variable& weights,
                                    const Variable* bias) {
  const auto found = plans_.find(weights.storage()->id());
  if (found == plans_.end()) return nullptr;
  std::list<ConvPlan>& kept = found->second;
  for (auto plan = kept.begin(); plan != kept.end(); ++plan) {
    const Conv2dDesc& d = plan->desc;
    const bool same_desc = d.in_channels == desc.in_channels && d.out_channels == desc.out_channels &&
                           d.kernel == desc.kernel && d.stride == desc.stride && d.padding == desc.padding &&
                           d.dilation == desc.dilation && d.general == desc.general && d.groups == desc.groups &&
                           d.activation.kind == desc.activation.kind && d.activation.slope == desc.activation.slope;
    if (plan->input == input && same_desc && plan->bias == (bias ? bias->data() : nullptr)) {
      kept.splice(kept.begin(), kept, plan);  // moves the node, not the plan: references stay valid
      return &kept.front();
    }
  }
  return nullptr;
}

const ConvPlan& ConvPlanCache::store(const Variable& weights, ConvPlan plan) {
  std::list<ConvPlan>& kept = plans_[weights.storage()->id()];
  // Another plan of the same shape (another description of the same weights) is replaced, not kept beside it.
  kept.remove_if([&](const ConvPlan& p) { return p.input == plan.input; });
  // A plan for another batch size of the same layer usually packs the same values (the tile and algorithm that
  // decide the layout rarely depend on the batch): those are then held once. ResNet-50 served at batch sizes 1, 2, 4
  // and 8 held its weights packed four times (corgy-serve: 921-931 MB resident against 315 MB at one batch size).
  for (const ConvPlan& other : kept) plan.share_packed_weights(other);
  kept.push_front(std::move(plan));
  while (kept.size() > kept_shapes_) kept.pop_back();
  // Every kept plan computes from its own copy: the layer's weights are not read again until a plan for another
  // input shape is made (or their owner reads them), so their pages go to a file (Storage::page_out) and the weights
  // are held once in memory. (Again after each such plan, whose packing read them back: Storage::page_out then only
  // drops the pages it read, without writing the file again.)
  if (std::ranges::all_of(kept, [](const ConvPlan& p) { return p.holds_weights(); })) weights.storage()->page_out();
  return kept.front();
}

void ConvPlanCache::set_kept_shapes(int count) {
  kept_shapes_ = static_cast<std::size_t>(std::max(1, count));
  for (auto& [id, kept] : plans_) {
    while (kept.size() > kept_shapes_) kept.pop_back();
  }
}

}  // namespace corgy::blas
