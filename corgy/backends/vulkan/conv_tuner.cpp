#include "corgy/backends/vulkan/conv_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <tuple>

#include "corgy/backends/vulkan/conv_plan.h"
#include "corgy/backends/vulkan/direct_conv.h"
#include "corgy/backends/vulkan/embedded_kernels.h"
#include "corgy/backends/vulkan/implicit_gemm_conv.h"
#include "corgy/backends/vulkan/patch_coopmat_conv.h"
#include "corgy/backends/vulkan/runtime.h"
#include "corgy/backends/vulkan/winograd_conv.h"
#include "corgy/error.h"
#include "corgy/io/cache_file.h"

#ifndef CORGY_VERSION
#error "CORGY_VERSION comes from corgy/CMakeLists.txt"
#endif

namespace corgy::vulkan {

namespace {

// The version of the candidate lists and of the cache file: raise it when the candidates, their meaning or their
// timing change (a kernel's change alone is caught by the kernels' fingerprint), so that old files are ignored.
constexpr int tuning_format_version = 3;
// Enough to cover each algorithm and the table's best tile shapes, few enough to keep a first forward short.
constexpr std::size_t most_candidates = 8;
// Each candidate runs once to warm up and once timed; then, in timing_rounds rounds, those within this factor of
// the fastest so far run again, repeated to fill about target_ms of GPU time, and are judged by their fastest
// measurement.
constexpr double close_enough = 4.0;
constexpr double target_ms = 1.0;
constexpr int most_repetitions = 20;
constexpr int timing_rounds = 2;

// The kernels the candidates run: a change to any of them invalidates the measurements.
constexpr const char* tuned_kernels[] = {
    "conv2d_implicit_gemm",
    "conv2d_implicit_gemm_fp16",
    "conv2d_coopmat_fp16",
    "conv2d_patch_coopmat_fp16",
    "conv2d_direct",
    "conv2d_direct_fp16",
    "winograd_input_transform",
    "winograd_input_transform_fp16",
    "winograd_output_transform",
    "winograd_output_transform_fp16",
    "gemm_tiled",
    "conv2d_split_k_reduce",
    "conv2d_split_k_reduce_fp16",
};

std::string kernels_fingerprint() {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a
  for (const char* name : tuned_kernels) {
    for (const std::uint32_t word : embedded_spirv(name)) {
      hash = (hash ^ word) * 1099511628211ull;
    }
  }
  return fmt::format("{:016x}", hash);
}

VulkanConvolutionOptions gemm_choice(const ConvPlan& plan, bool fuse_pool) {
  VulkanConvolutionOptions choice{.algorithm = plan.algorithm, .split_k = plan.splits, .fuse_pool = fuse_pool};
  if (plan.algorithm == VulkanConvAlgorithm::cooperative_matrix) {
    choice.coopmat_tiles = plan.coopmat_tiles;
  } else {
    choice.tiles = plan.tiles;
  }
  return choice;
}

ConvShapeKey shape_key(Runtime& runtime, const Conv2dDesc& d, const Pool2dDesc* pool, bool residual,
                       const Variable& input) {
  const bool half_input = runtime.tensors.read(input).format == TensorFormat::fp16;
  const Shape& in = input.shape();
  ConvShapeKey key{{runtime.half_precision() ? 1 : 0, half_input ? 1 : 0, d.in_channels, d.out_channels, d.kernel,
                    d.stride, d.padding, d.dilation, d.groups, in.n, in.c, in.h, in.w, pool ? 1 : 0}};
  if (pool) {
    const int rest[] = {pool->kind == PoolKind::max ? 1 : 2,
                        pool->kernel_h,
                        pool->kernel_w,
                        pool->stride_h,
                        pool->stride_w,
                        pool->pad_top,
                        pool->pad_left,
                        pool->pad_bottom,
                        pool->pad_right,
                        runtime.options.convolution.fuse_pool ? 1 : 0};
    std::copy(std::begin(rest), std::end(rest), key.values.begin() + 14);
  }
  key.values[24] = residual ? 1 : 0;
  return key;
}

// The key of a convolution in the cache file: what the candidates' speed depends on (the activation and bias cost
// the same on every plan), as text a person can read.
std::string tuning_key(const ConvShapeKey& shape) {
  const auto& v = shape.values;
  std::string text =
      fmt::format("{} conv {}->{} k{} s{} p{} d{} g{} in ({}, {}, {}, {}){}", v[0] ? "fp16" : "fp32", v[2], v[3], v[4],
                  v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[1] ? " fp16" : "");
  if (v[13]) {
    text += fmt::format(" {}pool {}x{}/{}x{} pad {} {} {} {}{}", v[14] == 1 ? "max" : "avg", v[15], v[16], v[17], v[18],
                        v[19], v[20], v[21], v[22], v[23] ? "" : " unfused");
  }
  // Where a residual is added, the kernels that add it in their epilogue save a dispatch: another choice may win.
  if (v[24]) text += " + add";
  return text;
}

// Scratch needs that cover both `a` and `b`, slot by slot.
std::vector<VkDeviceSize> covering(std::vector<VkDeviceSize> a, const std::vector<VkDeviceSize>& b) {
  for (std::size_t slot = 0; slot < a.size(); ++slot) a[slot] = std::max(a[slot], b[slot]);
  return a;
}

}  // namespace

std::size_t ConvShapeKeyHash::operator()(const ConvShapeKey& key) const {
  std::size_t hash = 14695981039346656037ull;  // FNV-1a over the numbers
  for (const int value : key.values) hash = (hash ^ static_cast<std::uint32_t>(value)) * 1099511628211ull;
  return hash;
}

bool same_plan(const VulkanConvolutionOptions& a, const VulkanConvolutionOptions& b) {
  const auto tiles = [](const VulkanGemmTiles& t) {
    return std::tie(t.tile_m, t.tile_n, t.tile_k, t.thread_m, t.thread_n);
  };
  const auto coopmat = [](const VulkanCoopmatTiles& t) {
    return std::tie(t.warps_m, t.warps_n, t.frags_m, t.frags_n, t.tile_k);
  };
  return a.algorithm == b.algorithm && tiles(a.tiles) == tiles(b.tiles) &&
         coopmat(a.coopmat_tiles) == coopmat(b.coopmat_tiles) && a.split_k == b.split_k &&
         a.fuse_residual == b.fuse_residual;
}

std::vector<VulkanConvolutionOptions> conv_candidates(const Runtime& runtime, const Conv2dDesc& conv,
                                                      const Pool2dDesc* pool, bool residual, const Shape& input,
                                                      const Shape& output) {
  const bool fuse = runtime.options.convolution.fuse_pool;
  const VulkanConvolutionOptions automatic{.fuse_pool = fuse};
  // The same decisions as record_conv_as (vulkan_convolution.cpp): which pools the kernels fuse, and the
  // convolution's own output where they do not.
  const bool fusable = pool && conv.in_channels / conv.groups > 1 && pool_fusable(*pool) && fuse;
  const Shape gemm_output =
      pool && !fusable ? Shape{input.n, conv.out_channels, conv.output_size(input.h), conv.output_size(input.w)}
                       : output;
  const ConvDevice device{&runtime.context.limits(), runtime.context.features().cooperative_matrix};
  const std::vector<ConvPlan> gemm_plans =
      ranked_convolution_plans(implicit_gemm_problem(conv, fusable, input, gemm_output), automatic, device);
  const VulkanConvolutionOptions direct{.algorithm = VulkanConvAlgorithm::direct, .fuse_pool = fuse};
  const VulkanConvolutionOptions patch{.algorithm = VulkanConvAlgorithm::patch_cooperative_matrix, .fuse_pool = fuse};
  const VulkanConvolutionOptions winograd{.algorithm = VulkanConvAlgorithm::winograd, .fuse_pool = fuse};

  std::vector<VulkanConvolutionOptions> candidates;
  const auto add = [&](const VulkanConvolutionOptions& choice) {
    if (candidates.size() >= most_candidates) return;
    const auto same = [&](const VulkanConvolutionOptions& other) { return same_plan(choice, other); };
    if (std::none_of(candidates.begin(), candidates.end(), same)) candidates.push_back(choice);
  };
  // The static table's choice, as the backend makes it with automatic options.
  if (direct_conv_chosen(conv, automatic)) {
    add(direct);
  } else if (patch_coopmat_chosen(runtime, conv, automatic)) {
    add(patch);
  } else {
    const bool by_winograd =
        winograd_chosen(runtime, conv, input, automatic) && (!fusable || winograd_pool_fusable(*pool));
    add(by_winograd ? winograd : gemm_choice(gemm_plans.front(), fuse));
  }
  // The residual's add in the epilogue costs the kernel a read per output element, a separate add.comp a pass: which
  // is faster depends on the kernel and the layer (the cooperative-matrix epilogue's scalar reads measured slower
  // on ResNet-50's 56x56 layers in fp16), so the first choice also competes without it.
  const bool fuse_residual = runtime.options.convolution.fuse_residual;
  if (residual && fuse_residual && candidates.front().algorithm != VulkanConvAlgorithm::direct &&
      candidates.front().algorithm != VulkanConvAlgorithm::patch_cooperative_matrix) {
    VulkanConvolutionOptions unfused = candidates.front();
    unfused.fuse_residual = false;
    add(unfused);
  }
  if (direct_conv_fits(conv)) add(direct);
  // The patch saves the gather of a window's taps; a 1x1 convolution of many channels has none to save (the
  // cooperative-matrix kernel reads its B operand in 16-byte units).
  if (patch_coopmat_fits(runtime, conv) && (conv.kernel > 1 || conv.in_channels <= 64)) add(patch);
  if (winograd_runs(runtime, conv, input)) add(winograd);
  // With tensor cores the table rates only their tiles. On small layers (batch 1 on 14x14 and 7x7) the implicit GEMM
  // with fp32 arithmetic on the same fp16 tensors is faster: its best-rated tiles compete too, so that fp16
  // precision is not slower than fp32 there.
  if (device.cooperative_matrix) {
    VulkanConvolutionOptions plain = automatic;
    plain.algorithm = VulkanConvAlgorithm::implicit_gemm;
    const std::vector<ConvPlan> plain_plans =
        ranked_convolution_plans(implicit_gemm_problem(conv, fusable, input, gemm_output), plain, device);
    for (std::size_t i = 0; i < std::min<std::size_t>(2, plain_plans.size()); ++i) {
      add(gemm_choice(plain_plans[i], fuse));
    }
  }
  for (const ConvPlan& plan : gemm_plans) add(gemm_choice(plan, fuse));
  // The best-rated tile shape without its split of K: the estimate of a split's cost is the least certain part.
  if (gemm_plans.front().splits > 1) {
    VulkanConvolutionOptions unsplit = gemm_choice(gemm_plans.front(), fuse);
    unsplit.split_k = 1;
    add(unsplit);
  }
  if (!fuse_residual) {
    for (VulkanConvolutionOptions& candidate : candidates) candidate.fuse_residual = false;
  }
  return candidates;
}

TuningIdentity tuning_identity(const Runtime& runtime) {
  const VkPhysicalDeviceProperties& properties = runtime.context.physical().properties;
  TuningIdentity identity;
  identity.device = properties.deviceName;
  identity.vendor_id = properties.vendorID;
  identity.device_id = properties.deviceID;
  identity.driver_version = properties.driverVersion;
  for (const std::uint8_t byte : properties.pipelineCacheUUID)
    identity.pipeline_cache_uuid += fmt::format("{:02x}", byte);
  identity.corgy_version = CORGY_VERSION;
  identity.kernels = kernels_fingerprint();
  identity.format = tuning_format_version;
  return identity;
}

ConvTuner::ConvTuner(Runtime& runtime) : runtime_(runtime) {}

ConvTuner::~ConvTuner() = default;

bool ConvTuner::enabled() const {
  const VulkanConvolutionOptions& o = runtime_.options.convolution;
  const bool forced = o.algorithm != VulkanConvAlgorithm::automatic || !o.tiles.automatic() ||
                      !o.coopmat_tiles.automatic() || o.split_k != 0 || o.most_splits != 0 ||
                      !runtime_.options.gemm_tiles.automatic();
  if (forced || o.tuning == VulkanTuning::off) return false;
  // On a CPU device (lavapipe) the tables' GPU-rated choices are as good a guess as any, and the timing of every
  // layer would make every test slower: tuning there is asked for (VulkanTuning::on).
  return o.tuning == VulkanTuning::on || runtime_.context.physical().info.type != "CPU";
}

TuningCache& ConvTuner::cache() {
  if (!cache_) {
    const VulkanOptions& options = runtime_.options;
    const TuningIdentity identity = tuning_identity(runtime_);
    std::filesystem::path file;
    if (options.use_tuning_cache) {
      file = options.tuning_cache;
      if (file.empty()) {
        const std::filesystem::path folder = default_tuning_cache_folder();
        if (!folder.empty()) file = folder / tuning_cache_file_name(identity);
      }
    }
    cache_ = std::make_unique<TuningCache>(file, identity);
  }
  return *cache_;
}

void ConvTuner::note_source(PlanSource source) {
  if (runtime_.recorder.profiling() && source != PlanSource::static_table) {
    runtime_.recorder.append_to_last_detail(source == PlanSource::timed ? " [tuned]" : " [tuning cache]");
  }
}

PlanSource ConvTuner::record(const Conv2dDesc& conv, const Pool2dDesc* pool, bool residual, const Variable& input,
                             const Shape& output, const std::function<void(const VulkanConvolutionOptions&)>& record) {
  // Depthwise convolutions and windows that differ between height and width have one kernel each (depthwise_conv2d,
  // im2col + GEMM): nothing to choose.
  if (!enabled() || conv.in_channels / conv.groups == 1 || !conv.is_square()) {
    record(runtime_.options.convolution);
    return PlanSource::static_table;
  }
  const ConvShapeKey shape = shape_key(runtime_, conv, pool, residual, input);
  auto found = chosen_.find(shape);
  if (found == chosen_.end()) {
    // The time spent choosing (tuning_ms): finding the candidates and the file's entry, describing the candidates.
    const auto start = std::chrono::steady_clock::now();
    const std::vector<VulkanConvolutionOptions> candidates =
        conv_candidates(runtime_, conv, pool, residual, input.shape(), output);
    bool pending = false;
    if (const auto index = pending_index_.find(shape); index != pending_index_.end()) {
      describe_pending(index->second, candidates, record);  // another layer of a shape met earlier in this forward
      pending = true;
    } else if (candidates.size() == 1) {
      found = chosen_.emplace(shape, std::pair{candidates.front(), PlanSource::static_table}).first;
    } else {
      const std::string key = tuning_key(shape);
      // A remembered choice counts only when it is one of this layer's candidates on this device: a file edited,
      // damaged or written for other limits cannot make the backend run a plan that does not fit.
      const std::optional<VulkanConvolutionOptions> remembered = cache().find(key);
      const auto same = [&](const VulkanConvolutionOptions& c) { return remembered && same_plan(c, *remembered); };
      if (const auto cached = std::find_if(candidates.begin(), candidates.end(), same); cached != candidates.end()) {
        ++runtime_.stats.conv_plans_from_cache;
        found = chosen_.emplace(shape, std::pair{*cached, PlanSource::cached}).first;
      } else {
        pending_index_.emplace(shape, pending_shapes_.size());
        pending_shapes_.push_back({shape, key});
        describe_pending(pending_shapes_.size() - 1, candidates, record);
        pending = true;
      }
    }
    const std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
    runtime_.stats.tuning_ms += spent.count();
    if (pending) return PlanSource::timed;  // the profile's note comes with the plan that stays (finish_forward)
  }
  const auto [plan, source] = found->second;  // a copy: `record` may reach the tuner again
  record(plan);
  note_source(source);
  return source;
}

void ConvTuner::describe_pending(std::size_t shape, const std::vector<VulkanConvolutionOptions>& candidates,
                                 const std::function<void(const VulkanConvolutionOptions&)>& record) {
  CommandRecorder& recorder = runtime_.recorder;
  const std::vector<VkDeviceSize> needs = recorder.scratch_needs();
  PendingLayer layer;
  layer.shape = shape;
  // Each candidate is described on its own, with its own scratch needs, and taken out of the forward; describing it
  // asks for its pipelines, which then compile on the compiler's threads while the rest of the forward is described.
  for (const VulkanConvolutionOptions& candidate : candidates) {
    DescribedPlan plan{candidate, {}, {}, true};
    recorder.set_scratch_needs(std::vector<VkDeviceSize>(needs.size(), 0));
    const std::size_t mark = recorder.dispatch_count();
    try {
      record(candidate);
    } catch (const Error&) {
      plan.runs = false;  // a plan the device cannot run at this size (a dispatch over its limits): not a candidate
    }
    plan.dispatches = recorder.take_dispatches_from(mark);
    plan.scratch_needs = recorder.scratch_needs();
    layer.plans.push_back(std::move(plan));
  }
  recorder.set_scratch_needs(needs);
  const auto runs = std::find_if(layer.plans.begin(), layer.plans.end(), [](const auto& p) { return p.runs; });
  if (runs == layer.plans.end()) {
    record(candidates.front());  // throws the reason again, as an untuned forward would
    return;
  }
  // The placeholder's scratch needs are not added: finish_forward adds those of the plan that stays.
  layer.placeholder = static_cast<std::size_t>(runs - layer.plans.begin());
  layer.begin = recorder.dispatch_count();
  recorder.append_dispatches(layer.plans[layer.placeholder].dispatches);
  layer.end = recorder.dispatch_count();
  pending_layers_.push_back(std::move(layer));
}

void ConvTuner::begin_forward() {
  pending_shapes_.clear();
  pending_index_.clear();
  pending_layers_.clear();
}

void ConvTuner::finish_forward() {
  if (!pending_layers_.empty()) {
    const auto start = std::chrono::steady_clock::now();
    CommandRecorder& recorder = runtime_.recorder;
    const std::vector<VkDeviceSize> base_needs = recorder.scratch_needs();
    // Each shape is timed on its first layer's buffers; every layer of that shape then runs the fastest plan.
    std::vector<std::size_t> best(pending_shapes_.size(), 0);
    std::vector<bool> timed(pending_shapes_.size(), false);
    for (PendingLayer& layer : pending_layers_) {
      if (timed[layer.shape]) continue;
      timed[layer.shape] = true;
      double best_ms = 0.0;
      best[layer.shape] = fastest(layer.plans, base_needs, best_ms);
      if (!layer.plans[best[layer.shape]].runs) best[layer.shape] = layer.placeholder;  // none could be timed
      const PendingShape& pending = pending_shapes_[layer.shape];
      const VulkanConvolutionOptions& plan = layer.plans[best[layer.shape]].options;
      cache().store(pending.key, {plan, best_ms});
      chosen_.emplace(pending.shape, std::pair{plan, PlanSource::timed});
      ++runtime_.stats.conv_plans_timed;
    }
    // From the last layer back, so that a replacement of another length leaves the earlier ranges where they are.
    std::vector<VkDeviceSize> needs = base_needs;
    for (auto layer = pending_layers_.rbegin(); layer != pending_layers_.rend(); ++layer) {
      std::size_t chosen = best[layer->shape];
      if (!layer->plans[chosen].runs) chosen = layer->placeholder;
      DescribedPlan& plan = layer->plans[chosen];
      needs = covering(std::move(needs), plan.scratch_needs);
      if (recorder.profiling() && !plan.dispatches.empty()) plan.dispatches.back().detail += " [tuned]";
      recorder.replace_dispatches(layer->begin, layer->end, std::move(plan.dispatches));
    }
    recorder.restore_scratch_needs(needs);  // frees what only the candidates that lost needed
    begin_forward();
    const std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
    runtime_.stats.tuning_ms += spent.count();
  }
  // Plans measured in this forward are saved whether or not it runs: the measurements hold either way.
  if (cache_) cache_->save();
}

std::size_t ConvTuner::fastest(std::vector<DescribedPlan>& plans, const std::vector<VkDeviceSize>& base_needs,
                               double& best_ms) {
  CommandRecorder& recorder = runtime_.recorder;
  if (!timer_) timer_ = std::make_unique<DispatchTimer>(runtime_.context);
  const auto time_ms = [&](DescribedPlan& plan, int repetitions) {
    const auto start = std::chrono::steady_clock::now();
    recorder.set_scratch_needs(covering(base_needs, plan.scratch_needs));
    recorder.prepare_for_timing();
    const double ms = timer_->time_ms(plan.dispatches, repetitions);
    const std::chrono::duration<double, std::milli> spent = std::chrono::steady_clock::now() - start;
    runtime_.stats.tuning_timing_ms += spent.count();
    return ms;
  };
  // Every candidate was described (its pipelines compiling) before any is timed: a compile is a pause in which a GPU
  // lowers its clocks, and a candidate timed right after one measured up to 5x slower than itself (VGG-16's layers
  // at batch 32 on an H100), which made the tuner keep a slower plan.
  std::vector<double> ms(plans.size(), std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i].runs) continue;
    try {
      ms[i] = time_ms(plans[i], 1);
    } catch (const Error&) {
      plans[i].runs = false;  // a pipeline the driver refused to compile
      continue;
    }
    ++runtime_.stats.conv_candidates_timed;
  }
  // Rounds over the candidates that came close, each judged by its fastest measurement: a change of the GPU's speed
  // within one round (clocks rising under the load of the first) then favours none of them.
  for (int round = 0; round < timing_rounds; ++round) {
    const double best = *std::min_element(ms.begin(), ms.end());
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (!plans[i].runs || ms[i] >= close_enough * best) continue;
      const int repetitions =
          static_cast<int>(std::clamp(target_ms / std::max(ms[i], 1e-3), 1.0, 1.0 * most_repetitions));
      ms[i] = std::min(ms[i], time_ms(plans[i], repetitions));
    }
  }
  const std::size_t best = static_cast<std::size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
  best_ms = std::isfinite(ms[best]) ? ms[best] : 0.0;
  return best;
}

}  // namespace corgy::vulkan
