#include "corgy/backends/blas/channel_block_residual.h"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <span>

#include "corgy/backends/blas/depthwise_conv.h"
#include "corgy/backends/cpu/cpu_features.h"
#include "corgy/error.h"

namespace corgy::blas {

namespace {

/// The three buffers of one expansion panel, in floats: its rows (the input's pixels rounded up to whole tiles), its
/// blocks with their borders, their depthwise output and a tile of the projection's reads past it.
struct PanelFloats {
  std::size_t rows = 0;
  std::size_t tiles = 0;
  std::size_t filtered = 0;
};

PanelFloats panel_floats(const Shape& input, const DepthwiseGeometry& geometry, int expand_mr, int expand_nr,
                         int project_mr, int lanes) {
  const std::size_t pixels = static_cast<std::size_t>(input.h) * input.w;
  const std::size_t blocks = static_cast<std::size_t>(expand_nr / lanes);
  const std::size_t padded = static_cast<std::size_t>(geometry.pad_top + geometry.in_h + geometry.pad_bottom) *
                             (geometry.in_w + 2 * geometry.padding);
  const std::size_t out_pixels = static_cast<std::size_t>(geometry.out_h) * geometry.out_w;
  return {(pixels + expand_mr - 1) / expand_mr * expand_mr * expand_nr, blocks * padded * lanes,
          (blocks * out_pixels + project_mr) * lanes};
}

/// The GEMM kernel for a pointwise layer's W^T with output channels in the lanes, `output` one image's: for one
/// member channels_in_lanes_kernel's choice. Several members split an image by the kernel's panels of channels
/// (run_channel_block_residual), never by pixels: of the tiles at least two registers wide, the one that leaves the
/// busiest member the fewest padded elements. EfficientNet-B0's 40 -> 240 expansion at 28x28 had five panels of 48
/// channels, three for one member and two for the other; in eight of 32 it splits evenly.
const GemmMicroKernel& lanes_kernel(const Conv2dDesc& desc, const Shape& output, int members,
                                    const GemmKernelSet& set = gemm_kernels()) {
  if (members <= 1) return channels_in_lanes_kernel(desc, output, 1, set);
  const GemmMicroKernel* best = nullptr;
  long long best_work = 0;
  const long long pixels = static_cast<long long>(output.h) * output.w;
  const auto consider = [&](const GemmMicroKernel& kernel) {
    if (!kernel.run || one_register_wide(kernel)) return;
    const long long panels = (desc.out_channels + kernel.nr - 1) / kernel.nr;
    const long long work =
        (panels + members - 1) / members * kernel.nr * ((pixels + kernel.mr - 1) / kernel.mr) * kernel.mr;
    if (!best || work < best_work) {
      best = &kernel;
      best_work = work;
    }
  };
  consider(set.seven_rows);
  consider(set.fourteen_rows);
  for (const GemmMicroKernel& kernel : set.kernels) consider(kernel);
  return best ? *best : channels_in_lanes_kernel(desc, output, 1, set);
}

/// Asks for share `index` of `count` of the `bytes` at `first` to be brought into L2 (one prefetch per line).
void prefetch_share(const char* first, std::size_t bytes, int index, int count) {
  const std::size_t share = (bytes / count + 63) / 64 * 64;
  const std::size_t end = std::min(bytes, (index + 1) * share);
  for (std::size_t b = index * share; b < end; b += 64) __builtin_prefetch(first + b, 0, 2);
}

}  // namespace

bool channel_block_residual_applies(const InvertedResidualDesc& desc, const Shape& input, std::size_t budget_bytes,
                                    int members) {
  const Conv2dDesc& d = desc.depthwise.desc;
  if (!desc.expand.weights || !desc.project.weights || !desc.expand.desc.is_square() || !d.is_square() ||
      !desc.project.desc.is_square() || !is_depthwise(d) ||
      !depthwise_channel_blocks_apply(d.kernel, d.stride, d.dilation)) {
    return false;
  }
  const Conv2dDesc& e = desc.expand.desc;
  const Conv2dDesc& p = desc.project.desc;
  const bool pointwise = e.kernel == 1 && e.stride == 1 && e.padding == 0 && e.groups == 1 && p.kernel == 1 &&
                         p.stride == 1 && p.padding == 0 && p.groups == 1;
  if (!pointwise) return false;
  const DepthwiseGeometry geometry = depthwise_geometry(d.kernel, d.stride, d.dilation, d.padding, input.h, input.w);
  const Shape expanded_output{1, d.in_channels, input.h, input.w};
  const Shape output{1, p.out_channels, geometry.out_h, geometry.out_w};
  const GemmMicroKernel& expand = lanes_kernel(e, expanded_output, members);
  const GemmMicroKernel& project = lanes_kernel(p, output, desc.excite.channels > 0 ? members : 1);
  if (!expand.run_taps[0] || !project.run_blocked) return false;
  const int lanes = channel_block_kernels().lanes;
  const PanelFloats floats = panel_floats(input, geometry, expand.mr, expand.nr, project.mr, lanes);
  if ((floats.rows + floats.tiles + floats.filtered) * sizeof(float) > budget_bytes) return false;
  if (desc.excite.channels == 0) return true;
  const std::size_t excited = static_cast<std::size_t>((d.in_channels + lanes - 1) / lanes) * geometry.out_h *
                              geometry.out_w * lanes * sizeof(float);
  return desc.excite.channels == d.out_channels && excited <= 2 * budget_bytes;
}

std::vector<std::span<const float>> ChannelBlockResidualPlan::weight_buffers() const {
  return {{expand.data->data(), expand.floats()},
          {depthwise_packed.data(), depthwise_packed.size()},
          {project.data->data(), project.floats()}};
}

ChannelBlockResidualPlan plan_channel_block_residual(const InvertedResidualDesc& desc, const Shape& image_input,
                                                     int members, CpuIsa isa) {
  const GemmKernelSet& set = gemm_kernels(isa);
  const Conv2dDesc& d = desc.depthwise.desc;
  ChannelBlockResidualPlan plan;
  plan.input = image_input;
  plan.expanded = d.in_channels;
  plan.kernels = channel_block_kernels(isa);
  plan.depthwise = depthwise_geometry(d.kernel, d.stride, d.dilation, d.padding, image_input.h, image_input.w);
  plan.output = {1, desc.project.desc.out_channels, plan.depthwise.out_h, plan.depthwise.out_w};
  plan.expand_kernel = &lanes_kernel(desc.expand.desc, {1, plan.expanded, image_input.h, image_input.w}, members, set);
  plan.expand = pack_channel_panels(desc.expand.desc, desc.expand.weights->data(),
                                    desc.expand.bias ? desc.expand.bias->data() : nullptr, *plan.expand_kernel);
  plan.expand_activation = desc.expand.desc.activation;
  plan.depthwise_packed = pack_depthwise_channel_weights(desc.depthwise.weights->data(),
                                                         desc.depthwise.bias ? desc.depthwise.bias->data() : nullptr,
                                                         plan.expanded, d.kernel * d.kernel);
  plan.depthwise_activation = d.activation;
  // Without a squeeze-and-excitation the members split the projection by its depth (their expansion panels), not by
  // its panels.
  plan.project_kernel = &lanes_kernel(desc.project.desc, plan.output, desc.excite.channels > 0 ? members : 1, set);
  plan.project = pack_channel_panels(desc.project.desc, desc.project.weights->data(),
                                     desc.project.bias ? desc.project.bias->data() : nullptr, *plan.project_kernel);
  plan.project_activation = desc.project.desc.activation;
  const int lanes = plan.kernels.lanes;
  const std::size_t in_plane = image_input.plane_count();
  for (int k = 0; k < image_input.c; ++k) {
    plan.input_offsets.push_back(static_cast<std::int32_t>(k * in_plane));
    plan.tail_offsets.push_back(k * plan.expand_kernel->mr);
  }
  const std::size_t out_plane = plan.output.plane_count();
  const auto block_offset = [&](int k) { return static_cast<std::int32_t>(k / lanes * out_plane * lanes + k % lanes); };
  for (int k = 0; k < plan.expand_kernel->nr; ++k) plan.filtered_offsets.push_back(block_offset(k));
  if (desc.excite.channels > 0) {
    const SqueezeExciteWeights& w = desc.excite_weights;
    plan.excite = desc.excite;
    plan.reduce_weights = w.reduce_weights->data();
    plan.reduce_bias = w.reduce_bias ? w.reduce_bias->data() : nullptr;
    plan.expand_weights = w.expand_weights->data();
    plan.expand_bias = w.expand_bias ? w.expand_bias->data() : nullptr;
    for (int k = 0; k < plan.expanded; ++k) plan.excited_offsets.push_back(block_offset(k));
  }
  return plan;
}

namespace {

/// Rows of the projection's sums per panel of output channels: its pixels in whole tiles, and a register of rows
/// that rows_to_planes may read past them.
std::size_t projected_rows(const ChannelBlockResidualPlan& plan) {
  const GemmMicroKernel& project = *plan.project_kernel;
  const int out_pixels = plan.output.h * plan.output.w;
  return static_cast<std::size_t>((out_pixels + project.mr - 1) / project.mr) * project.mr + plan.kernels.lanes;
}

}  // namespace

int channel_block_output_groups(const ChannelBlockResidualPlan& plan) {
  return (plan.output.c + plan.kernels.lanes - 1) / plan.kernels.lanes;
}

std::size_t channel_block_excited_floats(const ChannelBlockResidualPlan& plan) {
  const int lanes = plan.kernels.lanes;
  const std::size_t blocks = static_cast<std::size_t>((plan.expanded + lanes - 1) / lanes);
  return (blocks * plan.output.h * plan.output.w + plan.project_kernel->mr) * lanes;
}

std::size_t channel_block_projected_floats(const ChannelBlockResidualPlan& plan) {
  return static_cast<std::size_t>(plan.project.panels()) * projected_rows(plan) * plan.project_kernel->nr;
}

void channel_block_residual_panels(const ChannelBlockResidualPlan& plan, const float* input, int first, int end,
                                   ChannelBlockBuffers& buffers, const ExcitedTargets* excited) {
  const ChannelBlockKernels& kernels = plan.kernels;
  const int lanes = kernels.lanes;
  const DepthwiseGeometry& g = plan.depthwise;
  const GemmMicroKernel& expand = *plan.expand_kernel;
  const GemmMicroKernel& project = *plan.project_kernel;
  const int in_pixels = plan.input.h * plan.input.w;
  const int out_pixels = plan.output.h * plan.output.w;
  const int in_channels = plan.input.c;
  const int expand_tiles = (in_pixels + expand.mr - 1) / expand.mr;
  const int project_tiles = (out_pixels + project.mr - 1) / project.mr;
  const std::size_t project_rows = projected_rows(plan);
  const PanelFloats floats = panel_floats(plan.input, g, expand.mr, expand.nr, project.mr, lanes);
  const auto grow = [](std::vector<float>& buffer, std::size_t size) {
    if (buffer.size() < size) buffer.resize(size);
  };
  grow(buffers.expanded_rows, floats.rows);
  grow(buffers.tiles, floats.tiles);
  if (!excited) {  // else the depthwise output and the projection's sums go elsewhere
    grow(buffers.filtered, floats.filtered);
    grow(buffers.projected, channel_block_projected_floats(plan));
  }
  grow(buffers.tail, static_cast<std::size_t>(in_channels) * expand.mr);
  // The blocks' zero borders (the depthwise convolution's padding): each panel writes their interiors only.
  std::fill_n(buffers.tiles.begin(), floats.tiles, 0.0f);
  // The last tile of input pixels, if partial, from a copy: read in place its rows would run past the image.
  const int full_tiles = in_pixels / expand.mr;
  if (full_tiles < expand_tiles) {
    const int tail_first = full_tiles * expand.mr;
    const int count = in_pixels - tail_first;
    for (int k = 0; k < in_channels; ++k) {
      float* row = buffers.tail.data() + static_cast<std::size_t>(k) * expand.mr;
      std::copy_n(input + static_cast<std::size_t>(k) * in_pixels + tail_first, count, row);
      std::fill(row + count, row + expand.mr, 0.0f);
    }
  }
  const std::size_t padded_w = static_cast<std::size_t>(g.in_w + 2 * g.padding);
  const std::size_t block_tile = (g.pad_top + g.in_h + g.pad_bottom) * padded_w * lanes;
  const std::size_t weight_stride = static_cast<std::size_t>(plan.expanded) + kDepthwiseChannelBlock;
  const int expand_nr = expand.nr;
  for (int panel = first; panel < end; ++panel) {
    const int c0 = panel * expand_nr;
    const int channels = std::min(expand_nr, plan.expanded - c0);
    const int blocks = (channels + lanes - 1) / lanes;
    // 1. The expansion of this panel's channels, a row per input pixel. The weights stream from memory (a late
    // block's are a megabyte or more, each value used for only 49 or 196 pixels): while these are multiplied, the
    // next panel's are asked for, a share per tile, into L2, as channels_in_lanes_gemm.cpp's sweep does.
    const float* weights = plan.expand.panel(panel);
    const bool last_panel = panel + 1 == end;
    const std::size_t expand_bytes = static_cast<std::size_t>(in_channels) * expand_nr * sizeof(float);
    const char* next_expand = last_panel ? nullptr : reinterpret_cast<const char*>(plan.expand.panel(panel + 1));
    for (int t = 0; t < expand_tiles; ++t) {
      if (next_expand) prefetch_share(next_expand, expand_bytes, t, expand_tiles);
      float* rows = buffers.expanded_rows.data() + static_cast<std::size_t>(t) * expand.mr * expand_nr;
      if (t < full_tiles) {
        expand.run_taps[0](static_cast<std::size_t>(in_channels), input + static_cast<std::size_t>(t) * expand.mr,
                           plan.input_offsets.data(), weights, rows, static_cast<std::size_t>(expand_nr), false);
      } else {
        expand.run_taps[0](static_cast<std::size_t>(in_channels), buffers.tail.data(), plan.tail_offsets.data(),
                           weights, rows, static_cast<std::size_t>(expand_nr), false);
      }
    }
    // 2. Into channel blocks inside their borders, with the bias and activation; then each block's depthwise
    // convolution.
    for (int b = 0; b < blocks; ++b) {
      float* tile = buffers.tiles.data() + b * block_tile;
      const float* bias = plan.expand.bias.data() + c0 + b * lanes;
      for (int y = 0; y < g.in_h; ++y) {
        kernels.store_rows(
            buffers.expanded_rows.data() + (static_cast<std::size_t>(y) * g.in_w * expand_nr) + b * lanes,
            static_cast<std::size_t>(expand_nr), g.in_w, bias, plan.expand_activation,
            tile + ((y + g.pad_top) * padded_w + g.padding) * lanes);
      }
      float* filtered = excited ? excited->excited + static_cast<std::size_t>(c0 / lanes + b) * out_pixels * lanes
                                : buffers.filtered.data() + static_cast<std::size_t>(b) * out_pixels * lanes;
      kernels.depthwise(g, tile, plan.depthwise_packed.data() + c0 + b * lanes, weight_stride,
                        plan.depthwise_activation, filtered);
      if (excited) {
        // Each channel's sum over the pixels, for the gates (the block's last lanes past the channels dropped).
        float* sums = excited->sums + c0 + b * lanes;
        const int count = std::min(lanes, plan.expanded - (c0 + b * lanes));
        for (int l = 0; l < count; ++l) sums[l] = 0.0f;
        for (int p = 0; p < out_pixels; ++p) {
          for (int l = 0; l < count; ++l) sums[l] += filtered[static_cast<std::size_t>(p) * lanes + l];
        }
      }
    }
    if (excited) continue;  // the projection waits for the gates
    // 3. The projection's share of the depth: these channels, read in place from the depthwise output.
    for (int q = 0; q < plan.project.panels(); ++q) {
      const float* sub_panel = plan.project.panel(q) + static_cast<std::size_t>(c0) * project.nr;
      float* sums = buffers.projected.data() + static_cast<std::size_t>(q) * project_rows * project.nr;
      // The next panel's rows of this projection panel follow these.
      const std::size_t sub_panel_bytes = static_cast<std::size_t>(expand_nr) * project.nr * sizeof(float);
      const char* next_rows =
          last_panel ? nullptr
                     : reinterpret_cast<const char*>(sub_panel + static_cast<std::size_t>(expand_nr) * project.nr);
      for (int t = 0; t < project_tiles; ++t) {
        if (next_rows) prefetch_share(next_rows, sub_panel_bytes, t, project_tiles);
        project.run_blocked(static_cast<std::size_t>(channels),
                            buffers.filtered.data() + static_cast<std::size_t>(t) * project.mr * lanes,
                            plan.filtered_offsets.data(), sub_panel,
                            sums + static_cast<std::size_t>(t) * project.mr * project.nr,
                            static_cast<std::size_t>(project.nr), panel > first);
      }
    }
  }
}

void channel_block_residual_output(const ChannelBlockResidualPlan& plan, std::span<ChannelBlockBuffers* const> sums,
                                   int first_group, int end_group, const float* residual, float* output,
                                   std::vector<float>& staging) {
  const ChannelBlockKernels& kernels = plan.kernels;
  const int lanes = kernels.lanes;
  const int nr = plan.project_kernel->nr;
  const int out_pixels = plan.output.h * plan.output.w;
  const std::size_t project_rows = projected_rows(plan);
  if (staging.size() < static_cast<std::size_t>(lanes) * out_pixels + lanes) {
    staging.resize(static_cast<std::size_t>(lanes) * out_pixels + lanes);
  }
  for (int group = first_group; group < end_group; ++group) {
    const int c = group * lanes;
    const std::size_t column = static_cast<std::size_t>(c / nr) * project_rows * nr + c % nr;
    float* rows = sums[0]->projected.data() + column;
    // The other members' shares of the depth added into the first's, a register of channels per row.
    for (std::size_t m = 1; m < sums.size(); ++m) {
      const float* more = sums[m]->projected.data() + column;
      for (std::size_t r = 0; r < project_rows; ++r) {
        for (int l = 0; l < lanes; ++l) rows[r * nr + l] += more[r * nr + l];
      }
    }
    const std::size_t offset = static_cast<std::size_t>(c) * out_pixels;
    kernels.rows_to_planes(rows, static_cast<std::size_t>(nr), out_pixels, std::min(lanes, plan.output.c - c),
                           plan.project.bias.data() + c, residual ? residual + offset : nullptr,
                           plan.project_activation, staging.data(), output + offset);
  }
}

void channel_block_excited_squeeze(const ChannelBlockResidualPlan& plan, const float* sums, int first, int end,
                                   float* squeezed) {
  const SqueezeExciteDesc& e = plan.excite;
  if (end <= first) return;
  // The means, scaled into the product: squeezed = act(W (sums / pixels) + b).
  const float scale = 1.0f / static_cast<float>(plan.output.h * plan.output.w);
  // A matrix-vector product of a few thousand multiply-adds per row share: the backend keeps OpenBLAS on one thread.
  cblas_sgemv(CblasRowMajor, CblasNoTrans, end - first, e.channels, scale,
              plan.reduce_weights + static_cast<std::size_t>(first) * e.channels, e.channels, sums, 1, 0.0f,
              squeezed + first, 1);
  for (int s = first; s < end; ++s) {
    squeezed[s] = apply_activation(e.reduce_activation, squeezed[s] + (plan.reduce_bias ? plan.reduce_bias[s] : 0.0f));
  }
}

void channel_block_excited_expand(const ChannelBlockResidualPlan& plan, const float* squeezed, int first, int end,
                                  float* gates) {
  const SqueezeExciteDesc& e = plan.excite;
  if (end <= first) return;
  cblas_sgemv(CblasRowMajor, CblasNoTrans, end - first, e.squeeze_channels, 1.0f,
              plan.expand_weights + static_cast<std::size_t>(first) * e.squeeze_channels, e.squeeze_channels, squeezed,
              1, 0.0f, gates + first, 1);
  for (int c = first; c < end; ++c) {
    gates[c] = apply_activation(e.expand_activation, gates[c] + (plan.expand_bias ? plan.expand_bias[c] : 0.0f));
  }
}

void channel_block_excited_gates(const ChannelBlockResidualPlan& plan, const float* sums,
                                 ChannelBlockBuffers& buffers) {
  buffers.squeezed.resize(static_cast<std::size_t>(plan.excite.squeeze_channels));
  buffers.gates.resize(static_cast<std::size_t>(plan.excite.channels));
  channel_block_excited_squeeze(plan, sums, 0, plan.excite.squeeze_channels, buffers.squeezed.data());
  channel_block_excited_expand(plan, buffers.squeezed.data(), 0, plan.excite.channels, buffers.gates.data());
}

void channel_block_excited_projection(const ChannelBlockResidualPlan& plan, const float* excited, const float* gates,
                                      int first, int end, ChannelBlockBuffers& buffers, float* projected) {
  const GemmMicroKernel& project = *plan.project_kernel;
  const int lanes = plan.kernels.lanes;
  const int nr = project.nr;
  const int depth = plan.expanded;
  const int out_pixels = plan.output.h * plan.output.w;
  const int tiles = (out_pixels + project.mr - 1) / project.mr;
  const std::size_t rows = projected_rows(plan);
  if (buffers.gated.size() < static_cast<std::size_t>(depth) * nr) {
    buffers.gated.resize(static_cast<std::size_t>(depth) * nr);
  }
  // Depth in blocks whose panel rows stay in L1 while every tile of pixels reads them.
  constexpr int kDepthBlock = 128;
  for (int q = first; q < end; ++q) {
    // The gates scale the weights (depth x nr values), not the depthwise output (depth x pixels).
    const float* panel = plan.project.panel(q);
    for (int k = 0; k < depth; ++k) {
      const float gate = gates[k];
      for (int j = 0; j < nr; ++j) {
        buffers.gated[static_cast<std::size_t>(k) * nr + j] = panel[static_cast<std::size_t>(k) * nr + j] * gate;
      }
    }
    float* sums = projected + static_cast<std::size_t>(q) * rows * nr;
    for (int k0 = 0; k0 < depth; k0 += kDepthBlock) {
      const int kc = std::min(kDepthBlock, depth - k0);
      for (int t = 0; t < tiles; ++t) {
        project.run_blocked(static_cast<std::size_t>(kc), excited + static_cast<std::size_t>(t) * project.mr * lanes,
                            plan.excited_offsets.data() + k0, buffers.gated.data() + static_cast<std::size_t>(k0) * nr,
                            sums + static_cast<std::size_t>(t) * project.mr * nr, static_cast<std::size_t>(nr), k0 > 0);
      }
    }
  }
}

void channel_block_residual_image(const ChannelBlockResidualPlan& plan, const float* input, const float* residual,
                                  float* output, ChannelBlockBuffers& buffers) {
  if (plan.excites()) {
    const std::size_t excited_floats = channel_block_excited_floats(plan);
    if (buffers.excited.size() < excited_floats) buffers.excited.resize(excited_floats);
    if (buffers.sums.size() < static_cast<std::size_t>(plan.expanded)) buffers.sums.resize(plan.expanded);
    const ExcitedTargets targets{buffers.excited.data(), buffers.sums.data()};
    channel_block_residual_panels(plan, input, 0, plan.expand.panels(), buffers, &targets);
    channel_block_excited_gates(plan, buffers.sums.data(), buffers);
    const std::size_t projected_floats = channel_block_projected_floats(plan);
    if (buffers.projected.size() < projected_floats) buffers.projected.resize(projected_floats);
    channel_block_excited_projection(plan, buffers.excited.data(), buffers.gates.data(), 0, plan.project.panels(),
                                     buffers, buffers.projected.data());
    ChannelBlockBuffers* const all[] = {&buffers};
    return channel_block_residual_output(plan, all, 0, channel_block_output_groups(plan), residual, output,
                                         buffers.staging);
  }
  channel_block_residual_panels(plan, input, 0, plan.expand.panels(), buffers);
  ChannelBlockBuffers* const sums[] = {&buffers};
  channel_block_residual_output(plan, sums, 0, channel_block_output_groups(plan), residual, output, buffers.staging);
}

ChannelBlockKernels channel_block_kernels(CpuIsa isa) {
  if (!cpu_has(isa)) throw Error(fmt::format("blas: this CPU cannot run the {} channel-block kernels", isa_name(isa)));
  switch (isa) {
    case CpuIsa::avx512: return avx512_channel_block_kernels();
    case CpuIsa::avx2: return avx2_channel_block_kernels();
    case CpuIsa::generic: break;
  }
  return generic_channel_block_kernels();
}

const ChannelBlockKernels& channel_block_kernels() {
  static const ChannelBlockKernels best = channel_block_kernels(widest_cpu_isa());
  return best;
}

}  // namespace corgy::blas
