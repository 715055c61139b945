#include "corgy/backends/vulkan/conv_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "corgy/backends/vulkan/dispatch_math.h"
#include "corgy/error.h"

namespace corgy::vulkan {

namespace {

// Workgroups that keep a large GPU (100+ compute units) busy.
constexpr double busy_workgroups = 132.0;
// A split K costs a second dispatch and a round trip of the partial sums through memory.
constexpr double split_cost = 0.85;
constexpr std::uint32_t most_splits = 16;

// conv2d_implicit_gemm.comp's shapes with their speed relative to the fastest, measured on an H100 (driver
// 580.159.04) at Tiny YOLO's 13x13x1024 -> 1024 layer, batch 64 (benchmarks/vulkan_conv_benchmark, docs/vulkan.md):
// 29.1, 27.8, 24.7, 21.6 and 12.8 TFLOP/s. Smaller tiles give small layers more workgroups; 16 rows fit the layers
// with 16 output channels. Shapes with 8 columns per thread ran at 2 TFLOP/s there once the grid was large (at
// 1.9 TFLOP/s against 29 for 128x64x16/8x4 on the same layer), so the table leaves them out.
constexpr RatedConvTiles implicit_tiles[] = {
    {{128, 64, 16, 8, 4}, 1.0},  // 256 threads
    {{64, 64, 16, 4, 4}, 0.95},  // 256 threads
    {{32, 64, 16, 4, 4}, 0.85},  // 128 threads
    {{32, 32, 16, 4, 4}, 0.74},  // 64 threads
    {{16, 64, 16, 4, 4}, 0.44},  // 64 threads
};

// conv2d_coopmat.comp's shapes: warps_m x warps_n subgroups of frags_m x frags_n 16x16 fragments, K step; speed
// relative to the fastest, measured on an H100 (driver 580.159.04, benchmarks/vulkan_conv_benchmark) over Tiny
// YOLO's fp16 layers at batch 64 once the epilogue stored coalesced: the tall 128x64 tile, slowest when every lane
// stored eight columns of one row, became the fastest on the large layers.
// Then, on an H200 (2026-11-28), with the activation compiled into the kernel and the fp16 epilogue's scratch in
// fp16: 128x128 tiles with K steps of 64 ran 1x1 layers at batch 32 1.4-1.6x faster than the best tile before
// (1024 -> 1024 at 32x32: 0.35 against 0.50 ms; 256 -> 256 at 56x56: 0.098 against 0.157), while the 128x64 tile
// became 1.3x slower than it was; the first place is the larger tile's.
// Then (H200, 2026-11-29, vulkan_conv_benchmark --layers vgg16,gemm --batches 32), with the epilogue's scratch
// over the tiles (36 KB for 128x128x64, so that 256x128 tiles fit NVIDIA's 48 KB): 256x128 tiles of 16 subgroups
// gather each B element for twice the rows, and ran VGG-16's 56x56 and 28x28 3x3 layers 1.5-1.6x faster (14x14:
// 1.2x) than 128x128x64 (56x56 256 -> 256: 0.81 against 1.29 ms; 28x28 512 -> 512: 0.80 against 1.29), the 1x1
// layers 0.91-1.05x as fast;
// ResNet-50 in fp16 at batch 32 went from 3.98-4.04 to 3.49 ms of dispatches. 128x256 tiles were slower than both.
constexpr RatedCoopmatTiles coopmat_tiles[] = {
    {{4, 4, 4, 2, 32}, 1.0},   // 256x128, 512 threads: 29 KB of shared memory
    {{2, 4, 4, 2, 64}, 0.95},  // 128x128, K steps of 64, 256 threads: 36 KB
    {{4, 2, 2, 2, 32}, 0.9},   // 128x64, 256 threads
    {{2, 4, 2, 2, 32}, 0.8},   // 64x128, 256 threads
    {{2, 4, 4, 2, 32}, 0.74},  // 128x128, 256 threads
    {{2, 2, 2, 2, 32}, 0.7},   // 64x64, 128 threads
    {{1, 4, 2, 2, 32}, 0.47},  // 32x128, 128 threads
    {{1, 2, 1, 2, 32}, 0.27},  // 16x64, 64 threads: layers with 16 output channels
    {{1, 4, 1, 2, 32}, 0.24},  // 16x128, 128 threads
};

bool implicit_tiles_fit(const VulkanGemmTiles& t, const VkPhysicalDeviceLimits& limits) {
  return t.shared_bytes() <= limits.maxComputeSharedMemorySize && t.threads() <= limits.maxComputeWorkGroupInvocations;
}

bool coopmat_tiles_fit(const VulkanCoopmatTiles& t, const VkPhysicalDeviceLimits& limits) {
  return t.shared_bytes() <= limits.maxComputeSharedMemorySize && t.threads() <= limits.maxComputeWorkGroupInvocations;
}

void check_implicit_tiles(const VulkanGemmTiles& t, const VkPhysicalDeviceLimits& limits) {
  const auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("Vulkan: implicit-GEMM convolution tiles {}x{}x{} with {}x{} per thread: {}", t.tile_m,
                            t.tile_n, t.tile_k, t.thread_m, t.thread_n, rule));
  };
  if (t.thread_m == 0 || t.thread_n == 0 || t.thread_m % 4 || t.thread_n % 4 || t.tile_k == 0 || t.tile_k % 4) {
    fail("thread_m, thread_n and tile_k must be positive multiples of 4");
  }
  if (t.tile_m % t.thread_m || t.tile_n % t.thread_n) fail("a tile must be a whole number of thread blocks");
  if (t.threads() % (t.tile_n / 4)) fail("the threads must be a whole number of tile rows of vec4s");
  if (!implicit_tiles_fit(t, limits)) {
    fail(fmt::format("needs {} threads and {} bytes of shared memory; the device allows {} and {}", t.threads(),
                     t.shared_bytes(), limits.maxComputeWorkGroupInvocations, limits.maxComputeSharedMemorySize));
  }
}

// The fraction of the rated speed a tile shape reaches on `problem` with K in `splits` parts: full when the
// GPU has enough workgroups, less for ragged edges and for the split's extra pass.
double estimated_speed(double rated, std::uint32_t tile_m, std::uint32_t tile_n, const ConvProblem& problem,
                       std::uint32_t splits) {
  const double tiles = static_cast<double>(ceil_div(problem.m, tile_m)) * ceil_div(problem.n, tile_n);
  const double workgroups = tiles * problem.groups * splits;
  const double useful = static_cast<double>(problem.m) * problem.n / (tiles * tile_m * tile_n);
  return std::min(1.0, workgroups / busy_workgroups) * useful * rated * (splits > 1 ? split_cost : 1.0);
}

// The split of K that the estimate favours, never leaving a part shorter than four steps of the tile.
std::uint32_t choose_splits(double rated, std::uint32_t tile_m, std::uint32_t tile_n, std::uint32_t tile_k,
                            const ConvProblem& problem, std::uint32_t limit, double& speed) {
  std::uint32_t best = 1;
  speed = estimated_speed(rated, tile_m, tile_n, problem, 1);
  for (std::uint32_t splits = 2; splits <= limit; ++splits) {
    if (problem.k / splits < 4 * tile_k) break;
    const double candidate = estimated_speed(rated, tile_m, tile_n, problem, splits);
    if (candidate > speed * 1.02) {
      speed = candidate;
      best = splits;
    }
  }
  return best;
}

void set_splits(ConvPlan& plan, const ConvProblem& problem, std::uint32_t splits) {
  const std::uint32_t step = plan.tile_k();
  plan.k_per_split = ceil_div(ceil_div(problem.k, std::max(splits, 1u)), step) * step;
  plan.splits = ceil_div(problem.k, plan.k_per_split);
}

}  // namespace

std::span<const RatedConvTiles> implicit_gemm_tile_choices() { return implicit_tiles; }
std::span<const RatedCoopmatTiles> coopmat_tile_choices() { return coopmat_tiles; }

std::uint32_t ConvPlan::tile_m() const {
  return algorithm == VulkanConvAlgorithm::cooperative_matrix ? coopmat_tiles.tile_m() : tiles.tile_m;
}
std::uint32_t ConvPlan::tile_n() const {
  return algorithm == VulkanConvAlgorithm::cooperative_matrix ? coopmat_tiles.tile_n() : tiles.tile_n;
}
std::uint32_t ConvPlan::tile_k() const {
  return algorithm == VulkanConvAlgorithm::cooperative_matrix ? coopmat_tiles.tile_k : tiles.tile_k;
}

std::string ConvPlan::describe() const {
  std::string text;
  if (algorithm == VulkanConvAlgorithm::cooperative_matrix) {
    const VulkanCoopmatTiles& t = coopmat_tiles;
    text = fmt::format("{}x{}x{} ({}x{} warps of {}x{})", t.tile_m(), t.tile_n(), t.tile_k, t.warps_m, t.warps_n,
                       t.frags_m, t.frags_n);
  } else {
    text = fmt::format("{}x{}x{}/{}x{}", tiles.tile_m, tiles.tile_n, tiles.tile_k, tiles.thread_m, tiles.thread_n);
  }
  if (splits > 1) text += fmt::format(" split {}", splits);
  return text;
}

void check_coopmat_tiles(const VulkanCoopmatTiles& t, const VkPhysicalDeviceLimits& limits) {
  const auto fail = [&](const std::string& rule) {
    throw Error(fmt::format("Vulkan: cooperative-matrix tiles of {}x{} warps with {}x{} fragments, K step {}: {}",
                            t.warps_m, t.warps_n, t.frags_m, t.frags_n, t.tile_k, rule));
  };
  if (t.warps_m == 0 || t.warps_n == 0 || t.frags_m == 0 || t.frags_n == 0) fail("every count must be positive");
  if (t.tile_k == 0 || t.tile_k % 16) fail("the K step must be a positive multiple of 16");
  if (t.threads() % (t.tile_n() / 8)) fail("the threads must be a whole number of tile rows of 8 halves");
  if (!coopmat_tiles_fit(t, limits)) {
    fail(fmt::format("needs {} threads and {} bytes of shared memory; the device allows {} and {}", t.threads(),
                     t.shared_bytes(), limits.maxComputeWorkGroupInvocations, limits.maxComputeSharedMemorySize));
  }
}

namespace {

// A plan of the tile shape `tiles` (with its rated speed) and the split of K that `options` force or the estimate
// favours, with the estimated speed.
struct EstimatedPlan {
  ConvPlan plan;
  double speed;
};

EstimatedPlan estimate_plan(const ConvPlan& tiles_only, double rated, const ConvProblem& problem,
                            const VulkanConvolutionOptions& options) {
  EstimatedPlan result{tiles_only, 0.0};
  std::uint32_t splits = options.split_k;
  if (splits == 0) {
    const std::uint32_t limit = options.most_splits > 0 ? std::min(options.most_splits, most_splits) : most_splits;
    splits = choose_splits(rated, tiles_only.tile_m(), tiles_only.tile_n(), tiles_only.tile_k(), problem, limit,
                           result.speed);
  } else {
    result.speed = estimated_speed(rated, tiles_only.tile_m(), tiles_only.tile_n(), problem, splits);
  }
  set_splits(result.plan, problem, splits);
  return result;
}

// Every plan `options` allow for `problem` on `device`, with its estimated speed, in the table's order.
std::vector<EstimatedPlan> estimated_plans(const ConvProblem& problem, const VulkanConvolutionOptions& options,
                                           const ConvDevice& device) {
  const VkPhysicalDeviceLimits& limits = *device.limits;
  ConvPlan plan;
  plan.algorithm = options.algorithm;
  if (plan.algorithm == VulkanConvAlgorithm::automatic) {
    plan.algorithm =
        device.cooperative_matrix ? VulkanConvAlgorithm::cooperative_matrix : VulkanConvAlgorithm::implicit_gemm;
  }
  if (plan.algorithm == VulkanConvAlgorithm::cooperative_matrix && !device.cooperative_matrix) {
    throw Error(
        "Vulkan: cooperative-matrix convolutions need fp16 precision and a device with VK_NV_cooperative_matrix");
  }
  std::vector<EstimatedPlan> plans;
  if (plan.algorithm == VulkanConvAlgorithm::cooperative_matrix) {
    if (!options.coopmat_tiles.automatic()) {
      check_coopmat_tiles(options.coopmat_tiles, limits);
      plan.coopmat_tiles = options.coopmat_tiles;
      plans.push_back(estimate_plan(plan, 1.0, problem, options));
    } else {
      for (const RatedCoopmatTiles& rated : coopmat_tiles) {
        if (!coopmat_tiles_fit(rated.tiles, limits)) continue;
        plan.coopmat_tiles = rated.tiles;
        plans.push_back(estimate_plan(plan, rated.speed, problem, options));
      }
    }
  } else {
    if (!options.tiles.automatic()) {
      check_implicit_tiles(options.tiles, limits);
      plan.tiles = options.tiles;
      plans.push_back(estimate_plan(plan, 1.0, problem, options));
    } else {
      for (const RatedConvTiles& rated : implicit_tiles) {
        if (!implicit_tiles_fit(rated.tiles, limits)) continue;
        plan.tiles = rated.tiles;
        plans.push_back(estimate_plan(plan, rated.speed, problem, options));
      }
    }
  }
  if (plans.empty()) throw Error("Vulkan: the device's workgroup limits are too small for every convolution tile");
  return plans;
}

}  // namespace

std::vector<ConvPlan> ranked_convolution_plans(const ConvProblem& problem, const VulkanConvolutionOptions& options,
                                               const ConvDevice& device) {
  std::vector<EstimatedPlan> plans = estimated_plans(problem, options, device);
  // Stable: among equal estimates the table's order decides, as in plan_convolution.
  std::stable_sort(plans.begin(), plans.end(),
                   [](const EstimatedPlan& a, const EstimatedPlan& b) { return a.speed > b.speed; });
  std::vector<ConvPlan> ranked;
  ranked.reserve(plans.size());
  for (const EstimatedPlan& estimated : plans) ranked.push_back(estimated.plan);
  return ranked;
}

ConvPlan plan_convolution(const ConvProblem& problem, const VulkanConvolutionOptions& options,
                          const ConvDevice& device) {
  return ranked_convolution_plans(problem, options, device).front();
}

}  // namespace corgy::vulkan
