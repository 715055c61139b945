// BlasBackend::inverted_residual: MobileNetV2's block in bands of output rows. Each band's expanded rows (the block's
// 1x1 expansion of the input rows its depthwise convolution reads) and their depthwise output live in one member's
// buffers, in L2, and the projection reads them there: the expanded tensor, six times the block's input and the
// largest of the network, is never written to memory and read back, twice. The price: the rows a band's depthwise
// convolution shares with the next (kernel - stride of them) are expanded by both.
//
// Where bands do not pay, the three convolutions run in turn, one image at a time: an image's expanded tensor stays
// in L2 between them, where the batch's would not (MobileNetV3's 14 x 14 x 240 blocks at batch 8 ran 1.3-1.6x slower
// per image than at batch 1, each convolution streaming the whole batch's expanded tensor through memory).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/blas_backend.h"
#include "corgy/backends/blas/channel_block_residual.h"
#include "corgy/backends/blas/conv_gemm.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/conv_tuner.h"
#include "corgy/backends/blas/depthwise_conv.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/blas/tuning_cache.h"
#include "corgy/backends/cpu/cpu_features.h"
#include "corgy/error.h"

namespace corgy {

namespace {

/// Expanded tensors smaller than this (one image's) fit in L2 as they are: banding them gains nothing at batch 1.
/// At a larger batch, small images make bands of whole images, one member's each, which the tuner also times: the
/// members then share the batch's images with no barrier between them, where the three convolutions split each
/// image's small maps among them (MobileNetV3's 14 x 14 and 7 x 7 blocks at batch 8, 2 threads).
constexpr std::size_t kMinBandedExpandedBytes = std::size_t{1} << 20;
/// A band's expanded rows and depthwise output together: about what L2 holds beside the weights.
constexpr std::size_t kBandBytes = std::size_t{640} << 10;

/// Whether one image's block on a small map may also run as a band per member, for the tuner to time against the
/// three convolutions, which split each small map among the members with a wait for all of them after each
/// (two threads, batch 1, medians of six interleaved processes on a shared 2-core EPYC: MobileNetV2 5.17 -> 4.69 ms,
/// MobileNetV3-Large 4.56 -> 4.47, EfficientNet-B0 8.2 -> 8.35, within the noise). Only where a band's output rows,
/// times the stride, are at least twice the rows it shares with the next (kernel - stride): EfficientNet-B0's 5x5
/// blocks at 14 x 14, bands of 7 rows expanding 11, ran slower in the forward than the tuner had timed them.
bool members_share_image_in_bands(const Conv2dDesc& depthwise, const Shape& out, int threads) {
  if (out.n != 1 || threads < 2) return false;
  const int rows = out.h / threads;
  return rows * depthwise.stride >= 2 * (depthwise.kernel - depthwise.stride);
}

/// Variable `scratch` viewed as `shape`, grown when it holds less.
Variable scratch_of(Variable& scratch, const Shape& shape) {
  if (scratch.capacity() < shape.count()) scratch = Variable(shape);
  return scratch.view(shape);
}

/// The tuning table's key of a block at an input shape.
std::string block_key(const InvertedResidualDesc& desc, const Shape& input, bool residual, int threads) {
  const std::string expansion = desc.expand.weights ? blas::tuning_key(desc.expand.desc, input, 0) : "no expansion";
  return fmt::format("inverted residual {} / {} / {}{} in {} t{} {}", expansion,
                     desc.depthwise.desc.kernel * 100 + desc.depthwise.desc.stride, desc.project.desc.out_channels,
                     residual ? " + add" : "", input.str(), threads, isa_name(widest_cpu_isa()));
}

/// The key of a block's channel-block plan: its weights and biases (where they lie: constants keep their storage),
/// one image's input shape and the members that share an image.
std::string channel_block_key(const InvertedResidualDesc& desc, const Shape& image_input, int members) {
  const auto where = [](const Variable* v) { return v ? static_cast<const void*>(v->data()) : nullptr; };
  return fmt::format("{} {} {} {} {} {} {} m{}", where(desc.expand.weights), where(desc.expand.bias),
                     where(desc.depthwise.weights), where(desc.depthwise.bias), where(desc.project.weights),
                     where(desc.project.bias), image_input.str(), members);
}

}  // namespace

void BlasBackend::inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                                    Variable& output) {
  if (desc.excite.channels > 0) return excited_inverted_residual(desc, input, residual, output);
  const bool expands = desc.expand.weights != nullptr;
  if ((expands && !desc.expand.desc.is_square()) || !desc.depthwise.desc.is_square() ||
      !desc.project.desc.is_square() || (!expands && !desc.project.weights)) {
    throw Error(
        "BlasBackend::inverted_residual: the block's kernels take square windows only, and a block without an "
        "expansion needs its projection (fusion.cpp fuses no other)");
  }
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const Conv2dDesc& d = desc.depthwise.desc;
  const int expanded = d.in_channels;
  const Shape expanded_shape{in.n, expanded, in.h, in.w};
  // Planned at one image's shape, as both ways of running the block use them (a plan per batch size as well would
  // pack the weights again at every forward: a backend keeps one shape's plan per weights).
  const Shape image_input{1, in.c, in.h, in.w};
  const Shape image_output{1, out.c, out.h, out.w};
  const blas::ConvPlan* expand =
      expands ? plan_for(desc.expand.desc, image_input, nullptr, *desc.expand.weights, desc.expand.bias) : nullptr;
  const bool projects = desc.project.weights != nullptr;
  const blas::ConvPlan* project = projects ? plan_for(desc.project.desc, {1, expanded, out.h, out.w}, nullptr,
                                                      *desc.project.weights, desc.project.bias)
                                           : nullptr;
  const bool can_band =
      (!expands || (expand && expand->algorithm == blas::ConvAlgorithm::packed_gemm)) && (project || !projects) &&
      (!project || project->algorithm == blas::ConvAlgorithm::packed_gemm) && blas::depthwise_kernel_applies(d) &&
      (convolution_ == BlasConvolution::bands ||
       (convolution_ == BlasConvolution::automatic &&
        (in.n > 1 || expanded_shape.image_count() * sizeof(float) >= kMinBandedExpandedBytes ||
         members_share_image_in_bands(d, out, threads_))));
  // One image (image_input -> image_output): the projection adds `added` where given, else applies `projection`'s
  // activation.
  const auto image_three_convolutions = [&](const Variable& x, const Conv2dDesc& projection, const Variable* added,
                                            Variable& y) {
    Variable expansion;
    if (expands) {
      expansion = scratch_of(block_expanded_, {1, expanded, in.h, in.w});
      conv2d(desc.expand.desc, x, *desc.expand.weights, desc.expand.bias, expansion);
    }
    const Variable& expanded_image = expands ? expansion : x;  // no expansion: the depthwise reads the input
    if (!projects) return conv2d(d, expanded_image, *desc.depthwise.weights, desc.depthwise.bias, y);
    Variable filtered = scratch_of(block_filtered_, {1, expanded, out.h, out.w});
    conv2d(d, expanded_image, *desc.depthwise.weights, desc.depthwise.bias, filtered);
    if (added) {
      conv2d_add(projection, filtered, *desc.project.weights, desc.project.bias, *added, y);
    } else {
      conv2d(projection, filtered, *desc.project.weights, desc.project.bias, y);
    }
  };
  const auto three_convolutions = [&] {
    if (in.n == 1) return image_three_convolutions(input, desc.project.desc, residual, output);
    // Each image through a copy of its input (a view cannot start at an offset), its output into a scratch image,
    // then added to the residual (or copied) into the batch's output.
    Variable x = scratch_of(block_image_input_, image_input);
    Variable y = scratch_of(block_image_output_, image_output);
    const bool adds = residual && projects;
    Conv2dDesc projection = desc.project.desc;
    if (adds) projection.activation = Activation::none();
    for (std::size_t n = 0; n < static_cast<std::size_t>(in.n); ++n) {
      std::copy_n(input.data() + n * in.image_count(), in.image_count(), x.data());
      image_three_convolutions(x, projection, nullptr, y);
      float* target = output.data() + n * out.image_count();
      if (adds) {
        blas::add_activate(y.data(), residual->data() + n * out.image_count(), target, out.image_count(),
                           desc.project.desc.activation);
      } else {
        std::copy_n(y.data(), out.image_count(), target);
      }
    }
  };
  // In channel blocks (channel_block_residual.h): only where the expansion and projection are constants (planned),
  // a candidate of the tuner, or forced by blas:channel_blocks (tests).
  const bool blocks_apply =
      expand && project &&
      (convolution_ == BlasConvolution::automatic || convolution_ == BlasConvolution::channel_blocks) &&
      blas::channel_block_residual_applies(desc, image_input, kBandBytes, channel_block_members(in));
  const auto in_channel_blocks = [&] {
    run_channel_block_residual(channel_block_plan(desc, in), input, residual, output);
  };
  if (blocks_apply && convolution_ == BlasConvolution::channel_blocks) return in_channel_blocks();
  if (convolution_ == BlasConvolution::bands) {
    if (!can_band) return three_convolutions();
    return run_inverted_residual_bands(desc, expand, project, input, residual, output, BandHeight::within_budget);
  }
  if (!can_band && !blocks_apply) return three_convolutions();
  // Bands win where the expanded tensor would go to memory and back, and lose where it stays in a cache anyway
  // (their shared rows are expanded twice): which depends on the CPU's caches and the batch, so the first forward
  // times them all (conv_tuner.h), as for a convolution's algorithms. At a batch, whole images are a third
  // candidate where the budget cuts an image into bands: each member takes its own images through the block, no
  // rows expanded twice and no wait between the three convolutions, with a little more than the budget in its L2
  // (EfficientNet-B0's 14 x 14 x 480 blocks: 750 KB per image). Channel blocks are the fourth, on small maps.
  enum class Way { convolutions, bands, whole_images, channel_blocks };
  std::vector<Way> ways{Way::convolutions};
  if (can_band) {
    ways.push_back(Way::bands);
    if (in.n > 1 && inverted_residual_band_rows(d, expands, in, out, BandHeight::within_budget) < out.h) {
      ways.push_back(Way::whole_images);
    }
  }
  if (blocks_apply) ways.push_back(Way::channel_blocks);
  const auto run = [&](Way way) {
    switch (way) {
      case Way::convolutions: return three_convolutions();
      case Way::bands:
        return run_inverted_residual_bands(desc, expand, project, input, residual, output, BandHeight::within_budget);
      case Way::whole_images:
        return run_inverted_residual_bands(desc, expand, project, input, residual, output, BandHeight::whole_image);
      case Way::channel_blocks: return in_channel_blocks();
    }
  };
  const std::string key = block_key(desc, in, residual != nullptr, threads_);
  std::vector<std::string> names;
  for (const Way way : ways) {
    names.emplace_back(way == Way::convolutions   ? "convolutions"
                       : way == Way::bands        ? "bands"
                       : way == Way::whole_images ? "whole_images"
                                                  : "channel_blocks");
  }
  std::optional<std::size_t> choice = tuning_->find(key, names);
  if (!choice) {
    // Each timed run finds the block's weights as a forward does, out of the caches (conv_tuner.h): the bands read
    // them once per band, the image-by-image convolutions once per image.
    std::vector<std::span<const float>> weight_buffers;
    for (const blas::ConvPlan* plan : {expand, project}) {
      if (plan) std::ranges::copy(plan->weight_buffers(), std::back_inserter(weight_buffers));
    }
    if (blocks_apply)
      std::ranges::copy(channel_block_plan(desc, in).weight_buffers(), std::back_inserter(weight_buffers));
    // The depthwise weights as they are (its kernels read those); the expansion's and projection's live in their
    // plans, and theirs are paged out (ConvPlanCache::store).
    weight_buffers.emplace_back(desc.depthwise.weights->data(), desc.depthwise.weights->count());
    profiler_.set_muted(true);
    const blas::Fastest fastest = fastest_measured(ways.size(), [&](std::size_t i) {
      place_for_timing(weight_buffers, input);
      const auto start = std::chrono::steady_clock::now();
      run(ways[i]);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    });
    profiler_.set_muted(false);
    choice = fastest.index;
    tuning_->record(key, {names[fastest.index], fastest.ms}, !fastest.undisturbed);
    // A plan not chosen holds packed weights for nothing.
    if (blocks_apply && ways[*choice] != Way::channel_blocks) drop_channel_block_plan(desc, in);
  }
  run(ways[*choice]);
}

void BlasBackend::excited_inverted_residual(const InvertedResidualDesc& desc, const Variable& input,
                                            const Variable* residual, Variable& output) {
  // The block's expansion and depthwise convolution, then the squeeze-and-excitation and projection that read it.
  InvertedResidualDesc first = desc;
  first.project = {};
  first.excite = {};
  first.excite_weights = {};
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const auto apart = [&] {
    Variable filtered = scratch_of(block_excite_input_, {out.n, desc.depthwise.desc.out_channels, out.h, out.w});
    inverted_residual(first, input, nullptr, filtered);
    squeeze_excite_conv2d(desc.excite, desc.excite_weights, desc.project.desc, filtered, *desc.project.weights,
                          desc.project.bias, residual, output);
  };
  // Or the whole block in channel blocks (channel_block_residual.h), where the expansion and projection are
  // constants: timed against the two operations apart at the first forward (each of those times its own ways
  // then), or forced by blas:channel_blocks (tests).
  const Shape image_input{1, in.c, in.h, in.w};
  const bool blocks_apply =
      plans_->is_constant(*desc.expand.weights) && plans_->is_constant(*desc.project.weights) &&
      (convolution_ == BlasConvolution::automatic || convolution_ == BlasConvolution::channel_blocks) &&
      blas::channel_block_residual_applies(desc, image_input, kBandBytes, channel_block_members(in));
  if (!blocks_apply) return apart();
  const auto in_channel_blocks = [&] {
    run_channel_block_residual(channel_block_plan(desc, in), input, residual, output);
  };
  if (convolution_ == BlasConvolution::channel_blocks) return in_channel_blocks();
  const std::string key = block_key(desc, in, residual != nullptr, threads_) + " + excite";
  const std::string names[] = {"apart", "channel_blocks"};
  std::optional<std::size_t> choice = tuning_->find(key, names);
  if (!choice) {
    // A first run of each outside the timing: the two operations apart tune their own ways at their first call.
    profiler_.set_muted(true);
    apart();
    in_channel_blocks();
    std::vector<std::span<const float>> weight_buffers = channel_block_plan(desc, in).weight_buffers();
    weight_buffers.emplace_back(desc.depthwise.weights->data(), desc.depthwise.weights->count());
    const blas::Fastest fastest = fastest_measured(2, [&](std::size_t i) {
      place_for_timing(weight_buffers, input);
      const auto start = std::chrono::steady_clock::now();
      i == 0 ? apart() : in_channel_blocks();
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    });
    profiler_.set_muted(false);
    choice = fastest.index;
    tuning_->record(key, {names[fastest.index], fastest.ms}, !fastest.undisturbed);
    if (*choice == 0) drop_channel_block_plan(desc, in);
  }
  *choice == 0 ? apart() : in_channel_blocks();
}

int BlasBackend::channel_block_members(const Shape& input) const {
  // run_channel_block_residual: whole images, one member's each, where there are enough; else each image split.
  return input.n < threads_ ? threads_ : 1;
}

const blas::ChannelBlockResidualPlan& BlasBackend::channel_block_plan(const InvertedResidualDesc& desc,
                                                                      const Shape& input) {
  auto& plans = plans_->channel_block_plans;
  const Shape image_input{1, input.c, input.h, input.w};
  const int members = channel_block_members(input);
  const std::string key = channel_block_key(desc, image_input, members);
  auto found = plans.find(key);
  if (found == plans.end()) {
    found = plans.emplace(key, blas::plan_channel_block_residual(desc, image_input, members)).first;
  }
  return found->second;
}

void BlasBackend::drop_channel_block_plan(const InvertedResidualDesc& desc, const Shape& input) {
  const Shape image_input{1, input.c, input.h, input.w};
  plans_->channel_block_plans.erase(channel_block_key(desc, image_input, channel_block_members(input)));
}

void BlasBackend::run_channel_block_residual(const blas::ChannelBlockResidualPlan& plan, const Variable& input,
                                             const Variable* residual, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  profiler_.note(fmt::format("inverted residual in channel blocks: {} + depthwise {}{} + {}", plan.expand_kernel->name,
                             isa_name(widest_cpu_isa()), plan.excites() ? " + squeeze-excite" : "",
                             plan.project_kernel->name));
  const int panels = plan.expand.panels();
  if (plan.excites()) keep_openblas_single_threaded();  // the gates' two matrix-vector products
  if (in.n >= threads_ || panels < 2) {
    // Whole images, one member's each.
    const int team = std::min(in.n, threads_);
    if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
    blas::WorkQueue queue(static_cast<std::size_t>(in.n), team);
    team_->run(team, [&](const blas::TeamMember& member) {
      std::size_t n = 0;
      while (queue.next(member, n)) {
        blas::channel_block_residual_image(
            plan, input.data() + n * in.image_count(), residual ? residual->data() + n * out.image_count() : nullptr,
            output.data() + n * out.image_count(), plans_->band_buffers[member.index()].channel_blocks);
      }
    });
    return;
  }
  // Fewer images than members: each image's expanded channels split among them, each member's panels adding their
  // share of the projection's depth into its own sums, which the members then add up a group of output channels
  // each. With a squeeze-and-excitation the panels write the image's depthwise output and channel sums into shared
  // buffers (member 0's) instead; after a wait each member computes the gates and a share of the projection's
  // panels over the whole depth, into shared sums, which the output step then reads alone.
  const int team = std::min(threads_, panels);
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  std::vector<blas::ChannelBlockBuffers*> sums;
  for (int m = 0; m < team; ++m) sums.push_back(&plans_->band_buffers[m].channel_blocks);
  const std::size_t groups = static_cast<std::size_t>(blas::channel_block_output_groups(plan));
  blas::ChannelBlockBuffers& shared = *sums[0];
  std::optional<blas::ExcitedTargets> targets;
  if (plan.excites()) {
    const auto grow = [](std::vector<float>& buffer, std::size_t size) {
      if (buffer.size() < size) buffer.resize(size);
    };
    grow(shared.excited, blas::channel_block_excited_floats(plan));
    grow(shared.sums, static_cast<std::size_t>(plan.expanded));
    grow(shared.projected, blas::channel_block_projected_floats(plan));
    grow(shared.squeezed, static_cast<std::size_t>(plan.excite.squeeze_channels));
    grow(shared.gates, static_cast<std::size_t>(plan.expanded));
    targets = blas::ExcitedTargets{shared.excited.data(), shared.sums.data()};
  }
  const std::span<blas::ChannelBlockBuffers* const> summed =
      plan.excites() ? std::span<blas::ChannelBlockBuffers* const>(sums.data(), 1) : std::span(sums);
  team_->run(team, [&](const blas::TeamMember& member) {
    blas::ChannelBlockBuffers& mine = *sums[member.index()];
    for (std::size_t n = 0; n < static_cast<std::size_t>(in.n); ++n) {
      const blas::TeamMember::Range panel_share = member.share(static_cast<std::size_t>(panels));
      blas::channel_block_residual_panels(plan, input.data() + n * in.image_count(),
                                          static_cast<int>(panel_share.begin), static_cast<int>(panel_share.end), mine,
                                          targets ? &*targets : nullptr);
      member.sync();
      if (targets) {
        // The gates' two products split by rows: each member reads its share of the weights (both reading all of
        // them took as long as one reading all).
        const blas::TeamMember::Range squeeze_share =
            member.share(static_cast<std::size_t>(plan.excite.squeeze_channels));
        blas::channel_block_excited_squeeze(plan, shared.sums.data(), static_cast<int>(squeeze_share.begin),
                                            static_cast<int>(squeeze_share.end), shared.squeezed.data());
        member.sync();
        const blas::TeamMember::Range gate_share = member.share(static_cast<std::size_t>(plan.expanded));
        blas::channel_block_excited_expand(plan, shared.squeezed.data(), static_cast<int>(gate_share.begin),
                                           static_cast<int>(gate_share.end), shared.gates.data());
        member.sync();
        const blas::TeamMember::Range projection_share = member.share(static_cast<std::size_t>(plan.project.panels()));
        blas::channel_block_excited_projection(plan, shared.excited.data(), shared.gates.data(),
                                               static_cast<int>(projection_share.begin),
                                               static_cast<int>(projection_share.end), mine, shared.projected.data());
        member.sync();
      }
      const blas::TeamMember::Range group_share = member.share(groups);
      blas::channel_block_residual_output(plan, summed, static_cast<int>(group_share.begin),
                                          static_cast<int>(group_share.end),
                                          residual ? residual->data() + n * out.image_count() : nullptr,
                                          output.data() + n * out.image_count(), mine.staging);
      member.sync();
    }
  });
}

int BlasBackend::inverted_residual_band_rows(const Conv2dDesc& d, bool expands, const Shape& in, const Shape& out,
                                             BandHeight height) const {
  // blas:bands (tests): bands of two rows, so that small images have many bands and every kind of band edge.
  if (convolution_ == BlasConvolution::bands) return std::min(2, out.h);
  if (height == BandHeight::whole_image) return out.h;
  const int expanded = d.in_channels;
  // Output rows per band: its depthwise output (expanded x rows x out.w) and the expanded rows it reads (about
  // stride x as many rows of in.w; none without an expansion: the depthwise convolution reads the input rows in
  // place) within the budget.
  const std::size_t read_row = expands ? static_cast<std::size_t>(d.stride) * in.w : 0;
  const std::size_t row_bytes = sizeof(float) * expanded * (static_cast<std::size_t>(out.w) + read_row);
  // Bands of equal height within the budget: 14 rows in a budget of 12 make two bands of 7, not 12 and 2 (a member
  // given the short band idles while the other computes the long one; MobileNetV3's 14 x 14 and 28 x 28 blocks at
  // batch 8, 2 threads, scaled 0.80-0.92x from 1 thread with such bands).
  const int budget_rows = std::clamp(static_cast<int>(kBandBytes / row_bytes), 1, out.h);
  int fewest_bands = (out.h + budget_rows - 1) / budget_rows;
  // One image and several members: a whole number of bands per member (one band would leave the others idle, three
  // bands on two members one of them idle for a third of the time).
  if (out.n == 1 && threads_ > 1) fewest_bands = std::min(out.h, (fewest_bands + threads_ - 1) / threads_ * threads_);
  return (out.h + fewest_bands - 1) / fewest_bands;
}

void BlasBackend::run_inverted_residual_bands(const InvertedResidualDesc& desc, const blas::ConvPlan* expand,
                                              const blas::ConvPlan* project, const Variable& input,
                                              const Variable* residual, Variable& output, BandHeight height) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const Conv2dDesc& d = desc.depthwise.desc;
  const int expanded = d.in_channels;
  const int rows = inverted_residual_band_rows(d, expand != nullptr, in, out, height);
  const int bands_per_image = (out.h + rows - 1) / rows;
  const std::size_t items = static_cast<std::size_t>(out.n) * bands_per_image;
  // Bands of whole images take the depthwise convolution's own plan where it runs by channel blocks (the tuner's
  // choice when the block also ran as three convolutions, else the static table's): on small maps the channel-block
  // kernel beats the plane kernel, which a band of rows needs for its edges.
  const Shape expanded_image{1, expanded, in.h, in.w};
  const blas::ConvPlan* depthwise =
      rows == out.h ? plan_for(d, expanded_image, nullptr, *desc.depthwise.weights, desc.depthwise.bias) : nullptr;
  if (depthwise && convolution_ == BlasConvolution::bands &&
      depthwise->algorithm != blas::ConvAlgorithm::depthwise_channel_blocks &&
      blas::depthwise_channel_blocks_apply(d.kernel, d.stride, d.dilation)) {
    // blas:bands (tests): the channel blocks wherever they apply, so that the harness checks them in whole images.
    depthwise =
        &plans_->store(*desc.depthwise.weights,
                       blas::plan_convolution(d, expanded_image, *desc.depthwise.weights, desc.depthwise.bias,
                                              blas::ConvChoice{blas::ConvAlgorithm::depthwise_channel_blocks}, *team_));
  }
  const blas::ConvPlan* channel_blocks =
      depthwise && depthwise->algorithm == blas::ConvAlgorithm::depthwise_channel_blocks ? depthwise : nullptr;
  profiler_.note(fmt::format("inverted residual in bands of {} rows: {} + depthwise {} kernel{}{}", rows,
                             expand ? expand->describe() : "no expansion", isa_name(widest_cpu_isa()),
                             channel_blocks ? ", channel blocks" : "", project ? " + " + project->describe() : ""));
  const int team = static_cast<int>(std::min<std::size_t>(items, static_cast<std::size_t>(threads_)));
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(items, team);
  team_->run(team, [&](const blas::TeamMember& member) {
    std::size_t item = 0;
    while (queue.next(member, item)) {
      const int n = static_cast<int>(item / bands_per_image);
      const int r0 = static_cast<int>(item % bands_per_image) * rows;
      inverted_residual_band(desc, expand, project, channel_blocks, input, residual, output, n, r0,
                             std::min(out.h, r0 + rows), plans_->band_buffers[member.index()]);
    }
  });
}

void BlasBackend::inverted_residual_band(const InvertedResidualDesc& desc, const blas::ConvPlan* expand,
                                         const blas::ConvPlan* project, const blas::ConvPlan* channel_blocks,
                                         const Variable& input, const Variable* residual, Variable& output, int n,
                                         int r0, int r1, blas::BandBuffers& buffers) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const Conv2dDesc& d = desc.depthwise.desc;
  const int expanded = d.in_channels;
  // The input rows the band's depthwise outputs read, clipped to the image; the rest is the convolution's padding.
  const int first = r0 * d.stride - d.padding;
  const int end = (r1 - 1) * d.stride - d.padding + d.dilation * (d.kernel - 1) + 1;
  const int e0 = std::max(first, 0);
  const int e1 = std::min(end, in.h);
  const int in_rows = e1 - e0;
  const int out_rows = r1 - r0;
  const std::size_t expanded_plane = static_cast<std::size_t>(in_rows) * in.w;
  const std::size_t filtered_plane = static_cast<std::size_t>(out_rows) * out.w;
  if (expand && buffers.block_expanded.size() < expanded * expanded_plane)
    buffers.block_expanded.resize(expanded * expanded_plane);
  if (project && buffers.block_filtered.size() < expanded * filtered_plane)
    buffers.block_filtered.resize(expanded * filtered_plane);

  // 1. The expansion of input rows [e0, e1): B is the input planes' rows in place. Without an expansion the
  // depthwise convolution reads those rows in place.
  const float* rows =
      input.data() + static_cast<std::size_t>(n) * in.image_count() + static_cast<std::size_t>(e0) * in.w;
  const float* source = rows;
  std::size_t source_plane = in.plane_count();
  if (expand) {
    blas::planes_gemm(*expand->kernel, expand->packed.groups[0], 0, expand->packed.groups[0].panels(), rows,
                      in.plane_count(), static_cast<int>(expanded_plane), buffers.block_expanded.data(), expanded_plane,
                      desc.expand.desc.activation, buffers.gemm);
    source = buffers.block_expanded.data();
    source_plane = expanded_plane;
  }

  // 2. The depthwise convolution of those rows, the image's padding above and below where the band meets its edges.
  // Without a projection, its output rows [r0, r1) are the block's, straight into each output plane.
  float* target =
      output.data() + static_cast<std::size_t>(n) * out.image_count() + static_cast<std::size_t>(r0) * out.w;
  float* filtered = project ? buffers.block_filtered.data() : target;
  const std::size_t filtered_stride = project ? filtered_plane : out.plane_count();
  if (channel_blocks && in_rows == in.h) {
    // A whole image (every input row read: not so where the last rows fall between strides): its expanded planes
    // are a tensor of one image, as the channel-block kernel reads them.
    blas::prepare_depthwise_channel_buffer(channel_blocks->depthwise, buffers.depthwise);
    blas::depthwise_channel_block_kernel()(channel_blocks->depthwise, source, 0, static_cast<std::size_t>(expanded),
                                           expanded, channel_blocks->depthwise_packed.data(), d.activation, filtered,
                                           buffers.depthwise.data());
  } else {
    const blas::DepthwiseGeometry geometry =
        blas::depthwise_band_geometry(d.kernel, d.stride, d.dilation, d.padding, e0 - first, end - e1, in_rows, in.w);
    blas::prepare_depthwise_buffer(geometry, buffers.depthwise);
    const blas::DepthwiseKernel depthwise = blas::depthwise_kernel();
    const int taps = d.kernel * d.kernel;
    for (int c = 0; c < expanded; ++c) {
      depthwise(geometry, source + c * source_plane, desc.depthwise.weights->data() + c * taps,
                desc.depthwise.bias ? desc.depthwise.bias->data()[c] : 0.0f, d.activation,
                filtered + c * filtered_stride, buffers.depthwise.data());
    }
  }
  if (!project) return;

  // 3. The projection into output rows [r0, r1), the residual added before its activation.
  const Conv2dDesc& p = desc.project.desc;
  blas::planes_gemm(*project->kernel, project->packed.groups[0], 0, project->packed.groups[0].panels(),
                    buffers.block_filtered.data(), filtered_plane, static_cast<int>(filtered_plane), target,
                    out.plane_count(), residual ? Activation::none() : p.activation, buffers.gemm);
  if (residual) {
    const float* added = residual->data() + (target - output.data());
    for (int o = 0; o < out.c; ++o) {
      float* plane_rows = target + static_cast<std::size_t>(o) * out.plane_count();
      blas::add_activate(plane_rows, added + static_cast<std::size_t>(o) * out.plane_count(), plane_rows,
                         filtered_plane, p.activation);
    }
  }
}

}  // namespace corgy
