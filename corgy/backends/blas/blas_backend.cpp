#include "corgy/backends/blas/blas_backend.h"

#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>

#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/conv_bands.h"
#include "corgy/backends/blas/conv_plan.h"
#include "corgy/backends/blas/conv_tuner.h"
#include "corgy/backends/blas/depthwise_conv.h"
#include "corgy/backends/blas/im2col.h"
#include "corgy/backends/blas/pointwise_batch_gemm.h"
#include "corgy/backends/blas/separable_pool.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/blas/tuning_cache.h"
#include "corgy/backends/cpu/fma_peak.h"
#include "corgy/error.h"

namespace corgy {

namespace {

using blas::TeamMember;

/// The most rows of a Linear that run as a 1x1 convolution of 1x1 images. Its GEMM gathers each input feature across
/// the rows while packing (a transpose): cheap for a batch, but for a channels-last TensorLinear's thousands of rows
/// it cost more than OpenBLAS's whole GEMM (ConvNeXt-T's 3136 x 96 -> 384: 8.9 ms against 2.4 at one thread).
constexpr int kMostRowsAsImages = 32;
/// ... and the largest weights it packs a second copy of: VGG-16's 25088 -> 4096 classifier (411 MB) took its peak RSS
/// at batch 8 from 990 to 1778 MB; the classifiers of ResNet-50 (8 MB), the MobileNets and EfficientNet (5 MB) stay
/// below it.
constexpr std::size_t kMostRowsAsImagesWeightBytes = std::size_t{16} << 20;

/// Below this many floats per thread a loop is not worth splitting (a team wake-up costs a few microseconds).
constexpr std::size_t kMinElementsPerThread = std::size_t{1} << 15;

/// Pixels per softmax task: enough for vectorised passes, few enough that the per-pixel state stays in L1.
constexpr int kSoftmaxBlock = 256;

/// Softmax over `channels` for `width` consecutive pixels of one image, starting at `first_pixel`. Channels
/// lie a plane apart, so each pass walks channel by channel over the block: contiguous, vectorisable reads
/// instead of one strided walk per pixel. Subtracting the maximum keeps exp from overflowing.
void softmax_block(const float* input, float* output, int channels, std::size_t plane_size, int first_pixel,
                   int width) {
  std::array<float, kSoftmaxBlock> max;
  std::fill(max.begin(), max.end(), -std::numeric_limits<float>::infinity());
  for (int c = 0; c < channels; ++c) {
    const float* x = input + c * plane_size + first_pixel;
    for (int p = 0; p < width; ++p) max[p] = std::max(max[p], x[p]);
  }
  std::array<double, kSoftmaxBlock> sum{};
  for (int c = 0; c < channels; ++c) {
    const float* x = input + c * plane_size + first_pixel;
    float* y = output + c * plane_size + first_pixel;
    for (int p = 0; p < width; ++p) {
      y[p] = std::exp(x[p] - max[p]);
      sum[p] += y[p];
    }
  }
  std::array<float, kSoftmaxBlock> inverse_sum;
  for (int p = 0; p < width; ++p) inverse_sum[p] = static_cast<float>(1.0 / sum[p]);
  for (int c = 0; c < channels; ++c) {
    float* y = output + c * plane_size + first_pixel;
    for (int p = 0; p < width; ++p) y[p] *= inverse_sum[p];
  }
}

/// Smallest GEMM (in multiply-adds) worth a thread of its own; below it, waking the team costs more than it saves.
constexpr double kMinMultiplyAddsPerThread = double{1 << 18};

/// Threads worth using for a GEMM of m x n x k multiply-adds.
int gemm_threads(int max_threads, int m, int n, int k) {
  const double work = static_cast<double>(m) * n * k;
  return static_cast<int>(std::clamp(work / kMinMultiplyAddsPerThread, 1.0, static_cast<double>(max_threads)));
}

/// c[m x n] = op(a) x op(b), row-major, computed by a team: each member runs a single-threaded OpenBLAS sgemm on its
/// own slice of c's rows (or columns, when c is wider than tall), then the team meets at a barrier.
///
/// Why not OpenBLAS's own threads: they would be a second pool beside the team's, and OpenBLAS's idle threads
/// busy-wait, taking cores from the team's loops between GEMMs. With OpenBLAS single-threaded, one team does it all.
void team_sgemm(const TeamMember& member, bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
                int lda, const float* b, int ldb, float* c, int ldc) {
  const bool split_rows = m >= n;
  // Column slices start at multiples of 16 floats so that each member's stores stay aligned for the SIMD kernels.
  const TeamMember::Range slice = member.share(static_cast<std::size_t>(split_rows ? m : n), split_rows ? 1 : 16);
  const int begin = static_cast<int>(slice.begin);
  const int end = static_cast<int>(slice.end);
  if (begin < end) {
    const std::size_t offset = slice.begin;
    const float* a_slice = split_rows ? a + (transpose_a ? offset : offset * lda) : a;
    const float* b_slice = split_rows ? b : b + (transpose_b ? offset * ldb : offset);
    float* c_slice = split_rows ? c + offset * ldc : c + offset;
    cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
                split_rows ? end - begin : m, split_rows ? n : end - begin, k, 1.0f, a_slice, lda, b_slice, ldb, 0.0f,
                c_slice, ldc);
  }
  member.sync();
}

/// A 1x1 kernel at stride 1 without padding reads every pixel once, in order (dilation does not move a 1x1 kernel).
bool reads_pixels_in_order(const Conv2dWindow& w) {
  return w.kernel_h == 1 && w.kernel_w == 1 && w.stride_h == 1 && w.stride_w == 1 && w.pad_top == 0 &&
         w.pad_left == 0 && w.pad_bottom == 0 && w.pad_right == 0;
}

/// The im2col + GEMM convolution of one (image, group): weights [group_out_channels x depth] times columns
/// [depth x pixels] gives that group's output channels, already in NCHW order.
struct GemmConv {
  GemmConv(const Conv2dDesc& desc, const Shape& in_shape, const Shape& out_shape)
      : in_channels(in_shape.c),
        in_plane_size(in_shape.plane_count()),
        out_channels(out_shape.c),
        group_in_channels(desc.in_channels / desc.groups),
        group_out_channels(desc.out_channels / desc.groups),
        depth(group_in_channels * desc.taps()),
        pixels(out_shape.h * out_shape.w),
        // Then the image's channel planes already are the column matrix.
        image_is_columns(reads_pixels_in_order(desc.window())) {}

  std::size_t column_count() const { return static_cast<std::size_t>(depth) * pixels; }

  const float* group_input(const float* input, int image, int group) const {
    return input + (static_cast<std::size_t>(image) * in_channels + group * group_in_channels) * in_plane_size;
  }

  /// The one GEMM of (image, group), shared among the team.
  void multiply(const TeamMember& member, const float* weights, const float* columns, float* output, int image,
                int group) const {
    const std::size_t first_channel = static_cast<std::size_t>(image) * out_channels + group * group_out_channels;
    team_sgemm(member, false, false, group_out_channels, pixels, depth,
               weights + static_cast<std::size_t>(group) * group_out_channels * depth, depth, columns, pixels,
               output + first_channel * pixels, pixels);
  }

  int in_channels;
  std::size_t in_plane_size;
  int out_channels;
  int group_in_channels;
  int group_out_channels;
  int depth;
  int pixels;
  bool image_is_columns;
};

/// planes[c][i] = activation(planes[c][i] + bias[c]) for `channels` planes of `plane_size`; bias may be null.
/// The channels are shared among the team.
void add_channel_bias_and_activate(const TeamMember& member, Activation activation, const float* bias, int channels,
                                   std::size_t plane_size, float* planes) {
  if (!bias && activation.kind == ActivationKind::none) return;
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(channels));
  for (std::size_t c = mine.begin; c < mine.end; ++c) {
    float* plane = planes + c * plane_size;
    blas::bias_activate(plane, plane, plane_size, bias ? bias[c] : 0.0f, activation);
  }
  member.sync();
}

/// Floats per task of the element-wise passes: a few pages, so that a team splits even a small tensor evenly.
constexpr std::size_t kElementsPerTask = 4096;

bool is_depthwise_plan(const blas::ConvPlan& plan) {
  return plan.algorithm == blas::ConvAlgorithm::depthwise ||
         plan.algorithm == blas::ConvAlgorithm::depthwise_channel_blocks;
}

}  // namespace

BlasBackend::BlasBackend(int threads) : BlasBackend(BlasOptions{.threads = threads}) {}

BlasBackend::BlasBackend(const BlasOptions& options)
    : convolution_(options.convolution),
      pin_threads_(options.pin_threads),
      plans_(std::make_unique<blas::ConvPlanCache>()),
      tuning_(blas::TuningTable::of_file(!options.use_tuning_cache ? std::filesystem::path()
                                         : options.tuning_cache.empty()
                                             ? blas::default_blas_tuning_cache_file()
                                             : std::filesystem::path(options.tuning_cache))) {
  set_threads(options.threads);
}

// Choices measured outside a forward (operations called one by one) are saved here.
BlasBackend::~BlasBackend() { tuning_->save(); }

void BlasBackend::end_forward() { tuning_->save(); }

void BlasBackend::upload_constant(const Variable& tensor) {
  if (!tensor.empty()) plans_->add_constant(tensor.storage()->id());
}

std::string BlasBackend::name() const {
  switch (convolution_) {
    case BlasConvolution::automatic: break;
    case BlasConvolution::im2col: return "blas:im2col";
    case BlasConvolution::packed: return "blas:packed";
    case BlasConvolution::winograd: return "blas:winograd";
    case BlasConvolution::winograd2x2: return "blas:winograd2x2";
    case BlasConvolution::bands: return "blas:bands";
    case BlasConvolution::channel_blocks: return "blas:channel_blocks";
    case BlasConvolution::batch: return "blas:batch";
    case BlasConvolution::channels_in_lanes: return "blas:channels_in_lanes";
    case BlasConvolution::few_channels: return "blas:few_channels";
  }
  return "blas";
}

void BlasBackend::set_threads(int threads) {
  if (threads < 0) {
    throw Error("BlasBackend: thread count must be >= 0 (0 = all cores), got " + std::to_string(threads));
  }
  threads_ = threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  team_ = std::make_unique<blas::ThreadTeam>(threads_, pin_threads_);
  keep_openblas_single_threaded();
}

int BlasBackend::threads_for(std::size_t elements) const {
  return static_cast<int>(std::clamp<std::size_t>(elements / kMinElementsPerThread, 1, threads_));
}

void BlasBackend::set_kept_plans(int count) { plans_->set_kept_shapes(count); }

void BlasBackend::keep_openblas_single_threaded() const { openblas_set_num_threads(1); }

float* BlasBackend::column_buffer(std::size_t count) {
  if (columns_.size() < count) columns_.resize(count);
  return columns_.data();
}

namespace {

/// The times the calling thread was taken off its CPU for another (involuntary context switches).
long involuntary_switches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_nivcsw;
}

}  // namespace

blas::Fastest BlasBackend::fastest_measured(std::size_t candidates, const std::function<double(std::size_t)>& time_ms) {
  const CpuIsa isa = widest_cpu_isa();
  const bool probes = isa == CpuIsa::avx512 || isa == CpuIsa::avx2;
  std::vector<double> slowest_rates;  // per run, the slowest member's probe
  std::vector<double> member_rates(static_cast<std::size_t>(threads_));
  std::vector<long> switches(static_cast<std::size_t>(threads_));
  int preempted_runs = 0;
  blas::Fastest fastest = blas::fastest_candidate(candidates, [&](std::size_t i) {
    team_->run(threads_, [&](const TeamMember& member) {
      if (probes) {
        // The second of two probes: a core that idled may take the first to reach its clock.
        fma_probe_gflops(isa);
        member_rates[member.index()] = fma_probe_gflops(isa);
      }
      switches[member.index()] = involuntary_switches();
    });
    slowest_rates.push_back(*std::min_element(member_rates.begin(), member_rates.end()));
    const double ms = time_ms(i);
    std::atomic<bool> preempted = false;
    team_->run(threads_, [&](const TeamMember& member) {
      if (involuntary_switches() != switches[member.index()]) preempted = true;
    });
    preempted_runs += preempted ? 1 : 0;
    return ms;
  });
  // Disturbed: most runs shared a core with another thread (a neighbour on the sibling hyperthread: the probes'
  // median low), or had one taken off its core for another (time-sliced with a busy process: the switches). Without
  // probes (a CPU without AVX2) the rates are 0, which TuningTable::undisturbed does not judge.
  std::ranges::sort(slowest_rates);
  const bool cores_quiet = slowest_rates.empty() || tuning_->undisturbed(slowest_rates[slowest_rates.size() / 2]);
  fastest.undisturbed = cores_quiet && 2 * preempted_runs <= static_cast<int>(slowest_rates.size());
  return fastest;
}

void BlasBackend::place_for_timing(std::vector<std::span<const float>> weights, const Variable& input) {
  weights.emplace_back(input.data(), input.count());
  blas::evict_from_caches(weights);
  team_->run(threads_, [&](const TeamMember& member) { blas::read_column_share(member, input.data(), input.shape()); });
}

const blas::ConvPlan* BlasBackend::plan_for(const Conv2dDesc& desc, const Shape& in, const Variable* input,
                                            const Variable& weights, const Variable* bias, const Variable* residual,
                                            const Pool2dDesc* pool) {
  // Weights that are not constants (a lone call) are not worth packing: the baseline reads them as they are.
  if (!plans_->is_constant(weights)) return nullptr;
  if (const blas::ConvPlan* plan = plans_->find(desc, in, weights, bias)) return plan;
  if (convolution_ != BlasConvolution::automatic && convolution_ != BlasConvolution::bands) {
    return &plans_->store(weights, blas::plan_convolution(desc, in, weights, bias, convolution_, *team_));
  }
  const std::vector<blas::ConvChoice> candidates = blas::candidate_algorithms(desc, in);
  std::vector<std::string> names;
  for (const blas::ConvChoice& candidate : candidates) names.push_back(blas::choice_name(candidate));
  // Measured with the residual add (conv2d_add) or the max pool (conv2d_maxpool) the choice can differ: only the
  // batch GEMM fuses the add, only the packed GEMM and Winograd the pool.
  const std::string key =
      blas::tuning_key(desc, in, threads_) + (residual ? " + add" : "") + (pool ? " + max pool" : "");
  if (const std::optional<std::size_t> known = tuning_->find(key, names)) {
    blas::ConvPlan plan = blas::plan_convolution(desc, in, weights, bias, candidates[*known], *team_);
    plan.origin = "measured before";
    return &plans_->store(weights, std::move(plan));
  }
  const Shape out{in.n, desc.out_channels, desc.output_size(in.h), desc.output_size(in.w)};
  const double multiply_adds =
      static_cast<double>(out.count()) * (desc.in_channels / desc.groups) * desc.kernel * desc.kernel;
  if (candidates.size() == 1 || multiply_adds > blas::kMaxTunedMultiplyAdds || !input) {
    return &plans_->store(weights, blas::plan_convolution(desc, in, weights, bias, BlasConvolution::automatic, *team_));
  }
  // Time every candidate on this input into a scratch tensor of the output's shape (no trace in the profile). One
  // candidate's plan is alive at a time, packed again for each run: the candidates' packed weights side by side
  // (Winograd F(4x4)'s are four times the layer's, F(2x2)'s 1.8 times) raised ResNet-18's peak RSS at batch 1 by
  // 52 MB over what its forwards hold, for packing that costs little next to the runs.
  std::optional<blas::ConvPlan> candidate;
  std::size_t candidate_index = 0;
  const auto plan_of = [&](std::size_t i) -> blas::ConvPlan& {
    if (!candidate || candidate_index != i) {
      candidate.reset();
      candidate = blas::plan_convolution(desc, in, weights, bias, candidates[i], *team_);
      candidate_index = i;
    }
    return *candidate;
  };
  // The candidates' output, freed when the timing is done: no forward writes there (VGG-16's 224 x 224 x 64 layers
  // at batch 8 kept 98 MB for it). A candidate that pools in a pass of its own grows conv_output_scratch_, which
  // gets back what it was: the forward that follows grows it again if the chosen plan is such a one.
  Variable scratch(out);
  Variable conv_output_before =
      conv_output_scratch_.empty() ? Variable() : conv_output_scratch_.view(conv_output_scratch_.shape());
  // The channels-in-lanes GEMM's buffers as they were: a candidate that loses gives back what it grew them by (its
  // padded input or pixel panels, the size of the layer's input or more), which no forward would use.
  blas::ChannelsInLanesBuffers& lanes = plans_->channels_in_lanes;
  std::vector<std::size_t> lanes_before{lanes.pixel_panels.size()};
  for (const std::vector<float>& block : lanes.blocks) lanes_before.push_back(block.size());
  const auto release_grown = [&](const std::vector<std::size_t>& sizes) {
    const auto shrink = [](std::vector<float>& buffer, std::size_t size) {
      if (buffer.size() <= size) return;
      buffer.resize(size);
      buffer.shrink_to_fit();
    };
    shrink(lanes.pixel_panels, sizes[0]);
    for (std::size_t i = 0; i < lanes.blocks.size(); ++i)
      shrink(lanes.blocks[i], i + 1 < sizes.size() ? sizes[i + 1] : 0);
  };
  // With the pool: where run_plan does not fuse it, it keeps the convolution's output in conv_output_scratch_.
  Variable pooled = pool ? Variable(Shape{out.n, out.c, pool->output_h(out.h), pool->output_w(out.w)}) : Variable();
  profiler_.set_muted(true);
  const blas::Fastest fastest = fastest_measured(candidates.size(), [&](std::size_t i) {
    const blas::ConvPlan& plan = plan_of(i);
    // The weights as a forward finds them (conv_tuner.h): the packed ones, and the layer's own where the plan reads
    // those (the depthwise plane kernel; the others' would be paged back in from their file: ConvPlanCache::store).
    std::vector<std::span<const float>> weight_buffers = plan.weight_buffers();
    if (!plan.holds_weights()) weight_buffers.emplace_back(weights.data(), weights.count());
    place_for_timing(std::move(weight_buffers), *input);
    const auto start = std::chrono::steady_clock::now();
    if (is_depthwise_plan(plan)) {
      run_depthwise(plan, *input, weights, bias, scratch);
    } else if (residual && plan.algorithm == blas::ConvAlgorithm::pointwise_batch) {
      const Variable* inputs[] = {input};
      run_pointwise_batch(plan, inputs, nullptr, residual, Activation::none(), scratch);
    } else if (residual && plan.algorithm == blas::ConvAlgorithm::channels_in_lanes) {
      run_channels_in_lanes(plan, *input, residual, Activation::none(), scratch);
    } else if (pool) {
      run_plan(plan, pool, *input, out, pooled);
    } else {
      run_plan(plan, nullptr, *input, out, scratch);
      if (residual) add_residual(*residual, Activation::none(), scratch);
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  });
  profiler_.set_muted(false);
  tuning_->record(key, {names[fastest.index], fastest.ms}, !fastest.undisturbed);
  blas::ConvPlan& chosen = plan_of(fastest.index);
  if (chosen.algorithm != blas::ConvAlgorithm::channels_in_lanes) release_grown(lanes_before);
  conv_output_scratch_ = std::move(conv_output_before);
  chosen.origin = fmt::format("measured of {}", candidates.size());
  return &plans_->store(weights, std::move(chosen));
}

const blas::ConvPlan* BlasBackend::general_window_plan(const Conv2dDesc& desc, const Variable& input,
                                                       const Variable& weights, const Variable* bias) {
  const Conv2dWindow w = desc.window();
  if (convolution_ == BlasConvolution::im2col || !plans_->is_constant(weights) || w.stride_h != w.stride_w ||
      w.dilation_h != w.dilation_w) {
    return nullptr;
  }
  if (const blas::ConvPlan* plan = plans_->find(desc, input.shape(), weights, bias)) return plan;
  return &plans_->store(weights, blas::plan_convolution(desc, input.shape(), weights, bias,
                                                        blas::ConvChoice{blas::ConvAlgorithm::packed_gemm}, *team_));
}

void BlasBackend::conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                         Variable& output) {
  // A window that differs between the axes (Inception's 1x7 and 7x1) has one planned algorithm, the packed GEMM on
  // padded input rows read in place (conv_gemm.h: PaddedRowsB), where its stride and dilation are the same along
  // both axes; im2col + OpenBLAS takes any other.
  if (!desc.is_square()) {
    const blas::ConvPlan* plan = general_window_plan(desc, input, weights, bias);
    if (!plan) return conv2d_baseline(desc, input, weights, bias, output);
    run_plan(*plan, nullptr, input, output.shape(), output);
    return;
  }
  if (is_strided_pointwise(desc) && plans_->is_constant(weights) && convolution_ != BlasConvolution::im2col) {
    profiler_.note("1x1 stride " + std::to_string(desc.stride) + " as pointwise on the subsampled input");
    return conv2d(pointwise_of(desc), subsampled_input(desc, input), weights, bias, output);
  }
  const blas::ConvPlan* plan = plan_for(desc, input.shape(), &input, weights, bias);
  if (!plan || plan->algorithm == blas::ConvAlgorithm::im2col_openblas) {
    conv2d_baseline(desc, input, weights, bias, output);
    return;
  }
  if (is_depthwise_plan(*plan)) {
    run_depthwise(*plan, input, weights, bias, output);
    return;
  }
  run_plan(*plan, nullptr, input, output.shape(), output);
}

void BlasBackend::conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights,
                             const Variable* bias, const Variable& residual, Variable& output) {
  if (is_strided_pointwise(desc) && plans_->is_constant(weights) && convolution_ != BlasConvolution::im2col) {
    profiler_.note("1x1 stride " + std::to_string(desc.stride) + " as pointwise on the subsampled input");
    return conv2d_add(pointwise_of(desc), subsampled_input(desc, input), weights, bias, residual, output);
  }
  Conv2dDesc before_add = desc;
  before_add.activation = Activation::none();
  if (desc.is_square()) {
    // The plan conv2d(before_add) would run; one GEMM over the batch's pixels adds the residual in its epilogue.
    const blas::ConvPlan* plan = plan_for(before_add, input.shape(), &input, weights, bias, &residual);
    if (plan && plan->algorithm == blas::ConvAlgorithm::pointwise_batch) {
      const Variable* inputs[] = {&input};
      return run_pointwise_batch(*plan, inputs, nullptr, &residual, desc.activation, output);
    }
    if (plan && plan->algorithm == blas::ConvAlgorithm::channels_in_lanes) {
      return run_channels_in_lanes(*plan, input, &residual, desc.activation, output);
    }
  }
  conv2d(before_add, input, weights, bias, output);
  add_residual(residual, desc.activation, output);
}

void BlasBackend::add_residual(const Variable& residual, Activation activation, Variable& output) {
  const std::size_t count = output.count();
  parallel_for(threads_for(count), (count + kElementsPerTask - 1) / kElementsPerTask, [&](std::size_t task) {
    const std::size_t begin = task * kElementsPerTask;
    blas::add_activate(output.data() + begin, residual.data() + begin, output.data() + begin,
                       std::min(kElementsPerTask, count - begin), activation);
  });
}

void BlasBackend::run_depthwise(const blas::ConvPlan& plan, const Variable& input, const Variable& weights,
                                const Variable* bias, Variable& output) {
  profiler_.note(plan.describe());
  const std::size_t planes = static_cast<std::size_t>(output.shape().n) * output.shape().c;
  const bool channel_blocks = plan.algorithm == blas::ConvAlgorithm::depthwise_channel_blocks;
  const std::size_t per_item = channel_blocks ? blas::depthwise_channel_planes_per_item(planes, threads_)
                                              : blas::depthwise_planes_per_item(output.shape());
  const std::size_t items = (planes + per_item - 1) / per_item;
  const int team = static_cast<int>(std::min<std::size_t>(items, static_cast<std::size_t>(threads_)));
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(items, team);
  team_->run(team, [&](const TeamMember& member) {
    std::vector<float>& buffer = plans_->band_buffers[member.index()].depthwise;
    if (channel_blocks) {
      blas::depthwise_conv_channel_blocks(member, queue, per_item, plan, input, output, buffer);
    } else {
      blas::depthwise_conv(member, queue, plan.desc, plan.depthwise, input, weights, bias, output, buffer);
    }
  });
}

void BlasBackend::run_few_channels(const blas::ConvPlan& plan, const Variable& input, Variable& output) {
  profiler_.note(plan.describe());
  const int bands = blas::few_channels_bands(plan.desc, input.shape(), threads_);
  const std::size_t items = static_cast<std::size_t>(output.shape().n) * bands;
  const int team = static_cast<int>(std::min<std::size_t>(items, static_cast<std::size_t>(threads_)));
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(items, team);
  team_->run(team, [&](const TeamMember& member) {
    blas::few_channels_conv(member, queue, bands, plan.desc, plan.few_channels_packed, input, output,
                            plans_->band_buffers[member.index()].depthwise);
  });
}

void BlasBackend::run_few_channels_pooled(const blas::ConvPlan& plan, const Pool2dDesc& pool, const Variable& input,
                                          const Shape& conv_output, Variable& output) {
  profiler_.note(plan.describe() + " + fused max pool, bands of pooled rows");
  const int bands = blas::few_channels_pooled_bands(pool, conv_output, output.shape(), threads_);
  const std::size_t items = static_cast<std::size_t>(output.shape().n) * bands;
  const int team = static_cast<int>(std::min<std::size_t>(items, static_cast<std::size_t>(threads_)));
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(items, team);
  team_->run(team, [&](const TeamMember& member) {
    blas::few_channels_conv_pooled(member, queue, bands, plan.desc, pool, plan.few_channels_packed, input, conv_output,
                                   output, plans_->band_buffers[member.index()].few_channels_pool);
  });
}

void BlasBackend::run_pointwise_batch(const blas::ConvPlan& plan, std::span<const Variable* const> inputs,
                                      const blas::InputAffine* affine, const Variable* residual, Activation activation,
                                      Variable& output) {
  const Conv2dDesc& desc = plan.desc;
  const Shape& out = output.shape();
  const blas::PackedA& a = plan.packed.groups[0];
  const int team = std::max(
      threads_for(out.count()),
      gemm_threads(threads_, desc.out_channels, static_cast<int>(out.n * out.plane_count()), desc.in_channels));
  const char* packing = !affine               ? ""
                        : affine->image_scale ? ", gates applied while packing"
                                              : ", input affine applied while packing";
  profiler_.note(plan.describe() + packing + (residual ? ", residual added in the epilogue" : ""));
  if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
  blas::WorkQueue queue(blas::pointwise_batch_items(*plan.kernel, a, out, team), team);
  team_->run(team, [&](const TeamMember& member) {
    blas::pointwise_batch_gemm(member, queue, *plan.kernel, a, inputs, affine, activation, residual, output,
                               plans_->band_buffers[member.index()].gemm.packed_b);
  });
}

void BlasBackend::run_channels_in_lanes(const blas::ConvPlan& plan, const Variable& input, const Variable* residual,
                                        Activation activation, Variable& output) {
  const Conv2dDesc& desc = plan.desc;
  const Shape& out = output.shape();
  const int team = std::max(threads_for(out.count()),
                            gemm_threads(threads_, desc.out_channels, static_cast<int>(out.n * out.plane_count()),
                                         plan.channel_panels.depth));
  profiler_.note(
      plan.describe() +
      (team > 1 && blas::channels_in_lanes_splits_pixels(desc, out, *plan.kernel, team) ? ", split over pixels" : "") +
      (residual ? ", residual added in the write-out" : ""));
  team_->run(team, [&](const TeamMember& member) {
    blas::channels_in_lanes_conv(member, *plan.kernel, desc, plan.channel_panels, input, residual, activation, output,
                                 plans_->channels_in_lanes);
  });
}

void BlasBackend::run_plan(const blas::ConvPlan& plan, const Pool2dDesc* pool, const Variable& input,
                           const Shape& conv_output, Variable& output) {
  const Conv2dDesc& desc = plan.desc;
  // The kernels that do not fuse a pool: the convolution into conv_output_scratch_, then the pool's own pass.
  const auto then_pool = [&](const auto& convolve) {
    if (!pool) return convolve(output);
    if (conv_output_scratch_.capacity() < conv_output.count()) conv_output_scratch_ = Variable(conv_output);
    Variable conv_result = conv_output_scratch_.view(conv_output);
    convolve(conv_result);
    pool2d(*pool, conv_result, output);
  };
  if (plan.algorithm == blas::ConvAlgorithm::few_channels) {
    if (pool) return run_few_channels_pooled(plan, *pool, input, conv_output, output);
    return then_pool([&](Variable& result) { run_few_channels(plan, input, result); });
  }
  if (plan.algorithm == blas::ConvAlgorithm::channels_in_lanes) {
    return then_pool([&](Variable& result) { run_channels_in_lanes(plan, input, nullptr, desc.activation, result); });
  }
  if (plan.algorithm == blas::ConvAlgorithm::pointwise_batch) {
    const Variable* inputs[] = {&input};
    return then_pool(
        [&](Variable& result) { run_pointwise_batch(plan, inputs, nullptr, nullptr, desc.activation, result); });
  }
  // The work of every group: a grouped layer's per-group GEMMs are each too small for a second thread (RegNet's 26
  // groups of 8 channels on 14x14), all of them together are not.
  const int team = std::max(threads_for(conv_output.count()),
                            gemm_threads(threads_, desc.out_channels, static_cast<int>(conv_output.plane_count()),
                                         desc.in_channels / desc.groups * desc.taps()));
  // Pointwise on a small image: members split the output channels, each over the whole image (bands of rows of a
  // 7x7 or 14x14 image come in too few, uneven pieces to share). On larger images bands were faster (MobileNetV2's
  // 56x56 layers: each member's output stays in few contiguous rows).
  // Only where the panels share evenly, though: 3 panels among 2 members left one idle a third of the layer
  // (EfficientNet-B0's 14x14 480 -> 80 projection in panels of 28: 0.79 of its one-thread time at two threads),
  // where bands of rows split it in halves.
  constexpr std::size_t kMostPixelsSplitByChannels = 28 * 28;
  const int channel_panels = plan.packed.groups.empty() ? 0 : plan.packed.groups[0].panels() * desc.groups;
  const bool panels_share_evenly = channel_panels % team == 0 || channel_panels >= 4 * team;
  if (!pool && team > 1 && plan.algorithm == blas::ConvAlgorithm::packed_gemm && blas::reads_planes_in_place(desc) &&
      conv_output.plane_count() <= kMostPixelsSplitByChannels && channel_panels >= team &&
      (panels_share_evenly || !blas::bands_for(plan, conv_output, team))) {
    if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
    // A reduction (an input at least four times as deep as the output, ResNet's 1024 -> 256) on a 14x14 or 28x28
    // map: the members split the depth instead. A layer split over output channels left each member's share of
    // the input planes in its own core's caches, and a split over output channels here would read half of them from
    // the other core's; partial sums of the output's size cross instead (ResNet-50 at batch 1, two threads, AMD
    // EPYC, `model_benchmark --profile`: its 14x14 1024 -> 256 layers 0.41-0.47 -> 0.31-0.36 ms, 28x28 512 -> 128
    // 0.32-0.33 -> 0.28-0.29). Not on 7x7 maps: ResNet-50's 2048 -> 512 went from 0.36-0.40 to 0.40-0.43 ms and
    // MobileNetV2's 960 -> 160 projections gained nothing, the sums there as costly as the input they save.
    constexpr int kLeastReductionSplitByDepth = 4;
    constexpr std::size_t kLeastPixelsSplitByDepth = 14 * 14;
    if (desc.groups == 1 && desc.in_channels >= kLeastReductionSplitByDepth * desc.out_channels &&
        conv_output.plane_count() >= kLeastPixelsSplitByDepth) {
      profiler_.note(plan.describe() + ", split over the depth");
      team_->run(team, [&](const TeamMember& member) {
        blas::conv_pointwise_by_depth(member, *plan.kernel, desc, plan.packed, input, output,
                                      plans_->pointwise_partial_sums, plans_->band_buffers[member.index()].gemm);
      });
      return;
    }
    profiler_.note(plan.describe() + ", split over output channels");
    team_->run(team, [&](const TeamMember& member) {
      blas::conv_pointwise_by_channels(member, *plan.kernel, desc, plan.packed, input, output,
                                       plans_->band_buffers[member.index()].gemm);
    });
    return;
  }
  if (!pool && desc.groups == 1 && blas::reads_padded_rows(desc) &&
      blas::splits_weights_by_channels(plan, conv_output, team)) {
    if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
    profiler_.note(plan.describe() + ", split over output channels");
    team_->run(team, [&](const TeamMember& member) {
      blas::conv_padded_rows_by_channels(member, *plan.kernel, desc, plan.packed, input, output,
                                         plans_->band_buffers[member.index()].gemm);
    });
    return;
  }
  const blas::Bands bands = blas::bands_for(plan, conv_output, team);
  if (bands) {
    const std::string band = bands.images > 1 ? fmt::format("bands of {} images", bands.images)
                                              : fmt::format("bands of {} rows", bands.rows);
    profiler_.note(plan.describe() + ", " + band + (pool ? " + fused max pool" : ""));
    if (plans_->band_buffers.size() < static_cast<std::size_t>(team)) plans_->band_buffers.resize(team);
    blas::WorkQueue queue(blas::band_count(bands, pool, conv_output, output.shape()), team);
    team_->run(team, [&](const TeamMember& member) {
      blas::conv_in_bands(member, queue, plan, bands, pool, input, conv_output, output,
                          plans_->band_buffers[member.index()]);
    });
    return;
  }
  profiler_.note(plan.describe());
  Variable conv_result;
  if (pool) {
    if (conv_output_scratch_.capacity() < conv_output.count()) conv_output_scratch_ = Variable(conv_output);
    conv_result = conv_output_scratch_.view(conv_output);
  }
  Variable& target = pool ? conv_result : output;
  team_->run(team, [&](const TeamMember& member) {
    if (plan.algorithm == blas::ConvAlgorithm::winograd) {
      blas::winograd_conv(member, desc, plan.winograd, input, target, plans_->winograd_workspace);
    } else {
      blas::conv_gemm(member, *plan.kernel, desc, plan.packed, input, target, plans_->workspace);
    }
  });
  if (pool) pool2d(*pool, conv_result, output);
}

void BlasBackend::conv2d_baseline(const Conv2dDesc& desc, const Variable& input, const Variable& weights,
                                  const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const float* bias_values = bias ? bias->data() : nullptr;
  if (blas::is_depthwise(desc) && desc.is_square()) {
    profiler_.note("direct depthwise loop");
    parallel_for(threads_for(output.count()), static_cast<std::size_t>(out.n) * out.c, [&](std::size_t plane) {
      blas::depthwise_conv2d_plane(desc, in, input.data(), weights.data(), bias_values, out, output.data(), plane);
    });
    return;
  }
  const GemmConv conv(desc, in, out);
  profiler_.note(conv.image_is_columns ? "OpenBLAS sgemm (1x1: no im2col)" : "im2col + OpenBLAS sgemm");
  float* columns = conv.image_is_columns ? nullptr : column_buffer(conv.column_count());
  keep_openblas_single_threaded();
  const int team = std::max(threads_for(std::max(conv.column_count(), out.image_count())),
                            gemm_threads(threads_, conv.group_out_channels, conv.pixels, conv.depth));
  // Every member walks all (image, group) pairs: im2col's rows, each GEMM's slices and the epilogue's channels are
  // shared among the team.
  team_->run(team, [&](const TeamMember& member) {
    for (int n = 0; n < out.n; ++n) {
      for (int group = 0; group < desc.groups; ++group) {
        const float* group_input = conv.group_input(input.data(), n, group);
        if (!conv.image_is_columns) {
          blas::im2col(member, group_input, conv.group_in_channels, in.h, in.w, desc, out.h, out.w, columns);
        }
        conv.multiply(member, weights.data(), conv.image_is_columns ? group_input : columns, output.data(), n, group);
      }
      add_channel_bias_and_activate(member, desc.activation, bias_values, out.c, out.plane_count(),
                                    output.data() + n * out.image_count());
    }
  });
}

// columns = W_g^T x input_g per image and group (W_g: the group's rows of the (in_channels, out/groups * kH * kW)
// weight matrix), then col2im adds each column row into its output plane, which starts as the bias.
void BlasBackend::conv_transpose2d(const ConvTranspose2dDesc& desc, const Variable& input, const Variable& weights,
                                   const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const int in_per_group = desc.in_channels / desc.groups;
  const int out_per_group = desc.out_channels / desc.groups;
  const int rows = out_per_group * desc.kernel_h * desc.kernel_w;
  const int pixels = in.h * in.w;
  const std::size_t plane = out.plane_count();
  profiler_.note("OpenBLAS sgemm + col2im");
  float* columns = column_buffer(static_cast<std::size_t>(rows) * pixels);
  keep_openblas_single_threaded();
  const int team = std::max(threads_for(std::max(static_cast<std::size_t>(rows) * pixels, out.image_count())),
                            gemm_threads(threads_, rows, pixels, in_per_group));
  team_->run(team, [&](const TeamMember& member) {
    for (int n = 0; n < out.n; ++n) {
      float* image = output.data() + n * out.image_count();
      const TeamMember::Range mine = member.share(static_cast<std::size_t>(out.c));
      for (std::size_t c = mine.begin; c < mine.end; ++c) {
        std::fill(image + c * plane, image + (c + 1) * plane, bias ? bias->data()[c] : 0.0f);
      }
      member.sync();
      for (int group = 0; group < desc.groups; ++group) {
        const float* group_input = input.data() + (static_cast<std::size_t>(n) * in.c + group * in_per_group) * pixels;
        team_sgemm(member, true, false, rows, pixels, in_per_group,
                   weights.data() + static_cast<std::size_t>(group) * in_per_group * rows, rows, group_input, pixels,
                   columns, pixels);
        blas::col2im(member, columns, out_per_group, in.h, in.w, desc, out.h, out.w,
                     image + static_cast<std::size_t>(group) * out_per_group * plane);
      }
    }
  });
}

void BlasBackend::conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input,
                                 const Variable& weights, const Variable* bias, Variable& output) {
  const Shape& in = input.shape();
  const Shape conv_shape{in.n, conv.out_channels, conv.output_h(in.h), conv.output_w(in.w)};
  const blas::ConvPlan* plan =
      conv.is_square() ? plan_for(conv, input.shape(), &input, weights, bias, nullptr, &pool) : nullptr;
  // The packed GEMM, Winograd and the stem's direct kernel fuse the pool into their bands.
  if (plan &&
      (plan->algorithm == blas::ConvAlgorithm::packed_gemm || plan->algorithm == blas::ConvAlgorithm::winograd ||
       plan->algorithm == blas::ConvAlgorithm::few_channels)) {
    run_plan(*plan, &pool, input, conv_shape, output);
    return;
  }
  if (conv_output_scratch_.capacity() < conv_shape.count()) conv_output_scratch_ = Variable(conv_shape);
  Variable conv_output = conv_output_scratch_.view(conv_shape);
  conv2d(conv, input, weights, bias, conv_output);
  pool2d(pool, conv_output, output);
}

void BlasBackend::pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) {
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  if (blas::pools_whole_plane(desc, in, out)) {
    profiler_.note(desc.kind == PoolKind::max ? "global max pool, one pass per plane"
                                              : "global average pool, one pass per plane");
    // Tasks of whole runs of planes: one task per 7 x 7 plane cost more than its sum.
    constexpr std::size_t kPlanesPerTask = 64;
    const std::size_t planes = static_cast<std::size_t>(in.n) * in.c;
    const std::size_t plane_size = in.plane_count();
    parallel_for(threads_for(input.count()), (planes + kPlanesPerTask - 1) / kPlanesPerTask, [&](std::size_t task) {
      const std::size_t first = task * kPlanesPerTask;
      blas::pool_whole_planes(desc.kind, input.data() + first * plane_size, plane_size,
                              std::min(kPlanesPerTask, planes - first), output.data() + first);
    });
    return;
  }
  profiler_.note(desc.kind == PoolKind::max ? "max pool, separable passes" : "average pool, separable passes");
  parallel_for(threads_for(input.count()), static_cast<std::size_t>(out.n * out.c), [&](std::size_t plane) {
    thread_local std::vector<float> line;  // each member's reduced row, kept between calls
    blas::pool_plane(desc, input.data() + plane * in.plane_count(), in, output.data() + plane * out.plane_count(), out,
                     line);
  });
}

void BlasBackend::activation(Activation activation, const Variable& input, Variable& output) {
  profiler_.note("activation loop");
  const std::size_t count = input.count();
  parallel_for(threads_for(count), (count + kElementsPerTask - 1) / kElementsPerTask, [&](std::size_t task) {
    const std::size_t begin = task * kElementsPerTask;
    blas::bias_activate(input.data() + begin, output.data() + begin, std::min(kElementsPerTask, count - begin), 0.0f,
                        activation);
  });
}

void BlasBackend::linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
                         Variable& output) {
  const int batch = input.shape().n;
  const int in_features = weights.shape().cols();
  const int out_features = weights.shape().rows();
  if (batch > 1 && batch <= kMostRowsAsImages && weights.count() * sizeof(float) <= kMostRowsAsImagesWeightBytes &&
      plans_->is_constant(weights) && convolution_ != BlasConvolution::im2col) {
    // A few rows are a 1x1 convolution of 1x1 images, planned and measured as one (our packed GEMM over the batch,
    // weights packed once): OpenBLAS's sgemm ran MobileNetV3's 960 -> 1280 and 1280 -> 1000 at batch 8 at 16-18% of
    // the FMA peak (0.64 and 0.56 ms at 2 threads; 0.30 and 0.31 this way).
    Conv2dDesc desc;
    desc.in_channels = in_features;
    desc.out_channels = out_features;
    desc.activation = activation;
    Variable rows_as_images = output.view({batch, out_features, 1, 1});
    return conv2d(desc, input.view({batch, in_features, 1, 1}), weights.view({out_features, in_features, 1, 1}), bias,
                  rows_as_images);
  }
  profiler_.note(batch == 1 ? "OpenBLAS sgemv" : "OpenBLAS sgemm");
  const float* bias_values = bias ? bias->data() : nullptr;
  const bool has_epilogue = bias || activation.kind != ActivationKind::none;
  keep_openblas_single_threaded();
  team_->run(gemm_threads(threads_, batch, out_features, in_features), [&](const TeamMember& member) {
    if (batch == 1) {
      // One image: a matrix-vector product, each member its share of the output rows. OpenBLAS's sgemm with one
      // row ran at a fifth of sgemv's rate (MobileNetV3's 960 -> 1280 classifier layer: 0.30 against 0.06 ms).
      const TeamMember::Range rows = member.share(static_cast<std::size_t>(out_features), 16);
      if (rows.begin < rows.end) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(rows.end - rows.begin), in_features, 1.0f,
                    weights.data() + rows.begin * in_features, in_features, input.data(), 1, 0.0f,
                    output.data() + rows.begin, 1);
      }
      member.sync();
    } else {
      // The whole batch in one GEMM: input [batch x in] times weights [out x in] transposed.
      team_sgemm(member, false, true, batch, out_features, in_features, input.data(), in_features, weights.data(),
                 in_features, output.data(), out_features);
    }
    if (has_epilogue) {
      const TeamMember::Range mine = member.share(static_cast<std::size_t>(batch));
      for (std::size_t n = mine.begin; n < mine.end; ++n) {
        float* row = output.data() + n * out_features;
        if (bias_values) {
          for (int o = 0; o < out_features; ++o) row[o] += bias_values[o];
        }
        blas::bias_activate(row, row, static_cast<std::size_t>(out_features), 0.0f, activation);
      }
    }
  });
}

void BlasBackend::softmax(const Variable& input, Variable& output) {
  profiler_.note("softmax loop");
  const Shape& shape = input.shape();
  const int pixels = shape.h * shape.w;
  const int blocks_per_image = (pixels + kSoftmaxBlock - 1) / kSoftmaxBlock;
  parallel_for(threads_for(input.count()), static_cast<std::size_t>(shape.n * blocks_per_image), [&](std::size_t task) {
    const std::size_t image_offset = task / blocks_per_image * shape.image_count();
    const int first_pixel = static_cast<int>(task % blocks_per_image) * kSoftmaxBlock;
    softmax_block(input.data() + image_offset, output.data() + image_offset, shape.c, shape.plane_count(), first_pixel,
                  std::min(kSoftmaxBlock, pixels - first_pixel));
  });
}

void BlasBackend::channel_affine(const Variable& input, const Variable& scale, const Variable& shift,
                                 Activation activation, Variable& output) {
  profiler_.note("channel affine loop");
  const Shape& shape = input.shape();
  const std::size_t plane_size = shape.plane_count();
  parallel_for(threads_for(input.count()), static_cast<std::size_t>(shape.n * shape.c), [&](std::size_t plane) {
    const float channel_scale = scale.data()[plane % shape.c];
    const float channel_shift = shift.data()[plane % shape.c];
    const float* source = input.data() + plane * plane_size;
    float* target = output.data() + plane * plane_size;
    for (std::size_t i = 0; i < plane_size; ++i) target[i] = source[i] * channel_scale;
    blas::bias_activate(target, target, plane_size, channel_shift, activation);
  });
}

void BlasBackend::upsample_nearest(int scale, const Variable& input, Variable& output) {
  profiler_.note("upsample loop");
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  parallel_for(threads_for(output.count()), static_cast<std::size_t>(out.n * out.c), [&](std::size_t plane) {
    const float* source_plane = input.data() + plane * in.plane_count();
    float* target = output.data() + plane * out.plane_count();
    for (int y = 0; y < out.h; ++y, target += out.w) {
      const float* source = source_plane + static_cast<std::size_t>(y / scale) * in.w;
      for (int x = 0; x < out.w; ++x) target[x] = source[x / scale];
    }
  });
}

void BlasBackend::concat_channels(std::span<const Variable* const> inputs, Variable& output) {
  profiler_.note("channel copies");
  const Shape& shape = output.shape();
  const std::size_t plane_size = shape.plane_count();
  parallel_for(threads_for(output.count()), static_cast<std::size_t>(shape.n * shape.c), [&](std::size_t plane) {
    // Find which input holds this output channel, and its channel there.
    int channel = static_cast<int>(plane % shape.c);
    std::size_t source_index = 0;
    while (channel >= inputs[source_index]->shape().c) channel -= inputs[source_index++]->shape().c;
    const Variable& source = *inputs[source_index];
    const std::size_t source_plane = static_cast<std::size_t>(plane / shape.c) * source.shape().c + channel;
    std::memcpy(output.data() + plane * plane_size, source.data() + source_plane * plane_size,
                plane_size * sizeof(float));
  });
}

void BlasBackend::gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) {
  profiler_.note("channel copies");
  const Shape& shape = output.shape();
  const std::size_t plane_size = shape.plane_count();
  const auto in_channels = static_cast<std::size_t>(input.shape().c);
  parallel_for(threads_for(output.count()), static_cast<std::size_t>(shape.n * shape.c), [&](std::size_t plane) {
    const std::size_t image = plane / shape.c;
    const auto source = image * in_channels + desc.source_channel(static_cast<int>(plane % shape.c));
    std::memcpy(output.data() + plane * plane_size, input.data() + source * plane_size, plane_size * sizeof(float));
  });
}

void BlasBackend::add(const Variable& a, const Variable& b, Activation activation, Variable& output) {
  profiler_.note("add loop");
  const std::size_t count = a.count();
  parallel_for(threads_for(count), (count + kElementsPerTask - 1) / kElementsPerTask, [&](std::size_t task) {
    const std::size_t begin = task * kElementsPerTask;
    const std::size_t end = std::min(begin + kElementsPerTask, count);
    const float* left = a.data();
    const float* right = b.data();
    float* target = output.data();
    for (std::size_t i = begin; i < end; ++i) target[i] = left[i] + right[i];
    if (activation.kind != ActivationKind::none) {
      blas::bias_activate(target + begin, target + begin, end - begin, 0.0f, activation);
    }
  });
}

void BlasBackend::matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) {
  profiler_.note("OpenBLAS sgemm");
  const int rows = c.shape().rows();
  const int cols = c.shape().cols();
  const int inner = transpose_a ? a.shape().rows() : a.shape().cols();
  keep_openblas_single_threaded();
  team_->run(gemm_threads(threads_, rows, cols, inner), [&](const TeamMember& member) {
    team_sgemm(member, transpose_a, transpose_b, rows, cols, inner, a.data(), a.shape().cols(), b.data(),
               b.shape().cols(), c.data(), cols);
  });
}

}  // namespace corgy
