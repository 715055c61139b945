#include "corgy/backends/blas/winograd.h"

#include <algorithm>

namespace corgy::blas {

namespace {

/// Weights of up to this size are re-read for every block of tiles; larger ones are read once per forward, all tiles
/// in one block, whatever the block's size (Tiny YOLO's 13x13 layers: up to 151 MB of F(4x4) weights).
constexpr double kSmallWeightsBytes = 2.0 * (1 << 20);
/// The transformed tiles and products of one block: about what stays in L2 plus a share of L3 ...
constexpr double kBlockBytes = 2.0 * (1 << 20);
/// ... or, for large weights, at most this.
constexpr double kLargestBlockBytes = 64.0 * (1 << 20);
// Points lie a few cache lines more than a multiple of 4 KiB apart, so the streams of stores to them do not all map to
// the same cache sets.
constexpr std::size_t kPointPadding = 48;
// The output transform reads whole registers past a row's last tile.
constexpr std::size_t kProductsSlack = 64;

/// The output tiles of a forward: per image tiles_h x tiles_w, numbered image by image, row by row.
struct TileGrid {
  int images;
  int tiles_h;
  int tiles_w;
  int per_image() const { return tiles_h * tiles_w; }
  int total() const { return images * per_image(); }
};

TileGrid tile_grid(const Shape& output, int output_tile) {
  return {output.n, (output.h + output_tile - 1) / output_tile, (output.w + output_tile - 1) / output_tile};
}

Shape output_shape(const Conv2dDesc& desc, const Shape& input) {
  return {input.n, desc.out_channels, desc.output_size(input.h), desc.output_size(input.w)};
}

/// G (input_tile x kernel) of each variant: row i holds p_i^c / prod_{j != i} (p_i - p_j) for the points p
/// (0, 1, -1, 2, -2, then infinity's row), the Toom-Cook construction.
constexpr double kG4x4[6][3] = {{1.0 / 4, 0, 0},
                                {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                {0, 0, 1}};
constexpr double kG2x2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr double kG2x2Kernel5[6][5] = {{1.0 / 4, 0, 0, 0, 0},
                                       {-1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 3, 2.0 / 3},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6, -1.0 / 3, 2.0 / 3},
                                       {0, 0, 0, 0, 1}};

/// U = G g G^T for one R x R filter, in double precision (N x N values, row-major). The sizes are compile-time
/// constants so the loops unroll and G's zeros fold away: planning transforms every filter of a layer (a million
/// for Tiny YOLO's 1024->1024).
template <int N, int R>
void transform_filter(const double (&G)[N][R], const float* g, double* u) {
  double gg[N][R] = {};  // G g
  for (int i = 0; i < N; ++i) {
    for (int c = 0; c < R; ++c) {
      for (int k = 0; k < R; ++k) gg[i][c] += G[i][k] * g[k * R + c];
    }
  }
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int c = 0; c < R; ++c) sum += gg[i][c] * G[j][c];
      u[i * N + j] = sum;
    }
  }
}

void transform_filter(WinogradVariant variant, const float* g, double* u) {
  switch (variant) {
    case WinogradVariant::f2x2: return transform_filter(kG2x2, g, u);
    case WinogradVariant::f4x4: return transform_filter(kG4x4, g, u);
    case WinogradVariant::f2x2_5x5: return transform_filter(kG2x2Kernel5, g, u);
  }
}

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

/// Calls body(t, n, ty, tx, count) for the runs of tiles [first, first + count) that lie in one tile row.
template <class Body>
void for_each_tile_run(const TileGrid& grid, int first, int count, const Body& body) {
  for (int t = first; t < first + count;) {
    const int n = t / grid.per_image();
    const int ty = t % grid.per_image() / grid.tiles_w;
    const int tx = t % grid.tiles_w;
    const int run = std::min(grid.tiles_w - tx, first + count - t);
    body(t, n, ty, tx, run);
    t += run;
  }
}

/// The strides of one block of `columns` tiles in the tiles and products buffers.
struct BlockLayout {
  std::size_t tiles_point_stride;
  std::size_t products_point_stride;
  std::size_t tiles_size;
  std::size_t products_size;
};

BlockLayout block_layout(int points, int cin, int cout, int columns) {
  BlockLayout layout;
  layout.tiles_point_stride = static_cast<std::size_t>(cin) * columns + kPointPadding;
  layout.products_point_stride = static_cast<std::size_t>(cout) * columns + kPointPadding;
  layout.tiles_size = points * layout.tiles_point_stride;
  layout.products_size = points * layout.products_point_stride + kProductsSlack;
  return layout;
}

}  // namespace

bool winograd_applies(const Conv2dDesc& desc) {
  return (desc.kernel == 3 || desc.kernel == 5) && desc.stride == 1 && desc.dilation == 1 && desc.groups == 1;
}

WinogradPlan plan_winograd(const Conv2dDesc& desc, const Shape& input, const float* weights, const float* bias,
                           WinogradVariant variant, ThreadTeam& team) {
  const WinogradGeometry geometry = winograd_geometry(variant);
  const int points = geometry.points;
  const int cin = desc.in_channels;
  const int cout = desc.out_channels;
  const TileGrid grid = tile_grid(output_shape(desc, input), geometry.output_tile);
  const double per_tile = sizeof(float) * points * static_cast<double>(cin + cout);
  const double weight_bytes = sizeof(float) * points * static_cast<double>(cin) * cout;
  const double budget = weight_bytes > kSmallWeightsBytes ? kLargestBlockBytes : kBlockBytes;
  int block = std::clamp(static_cast<int>(budget / per_tile), 1, grid.total());

  WinogradPlan plan;
  plan.variant = variant;
  plan.kernel = &kernel_for(gemm_kernels(), cout, block, /*narrower_tails=*/false);  // B: prepacked tiles
  if (block < grid.total()) block = std::max(plan.kernel->nr, block / plan.kernel->nr * plan.kernel->nr);
  plan.tiles_per_block = std::min(block, grid.total());

  // U of every filter, into each point's packed matrix, by the team (panels of output channels). A panel's filters
  // for a few input channels are transformed into a small buffer, point-major, then each point's values are copied
  // as one run: they are consecutive in its packed matrix. (Storing the 36 values of each filter straight away made
  // 36 interleaved streams of 4-byte stores into equally sized arrays, which alias in L1: 1 s for Tiny YOLO.)
  plan.points = PackedA::in_one_buffer(points, cout, cin, plan.kernel->mr);
  const int mr = plan.kernel->mr;
  const int taps = desc.kernel * desc.kernel;
  constexpr int kChannelsPerRun = 16;
  const int panels = plan.points.front().panels();
  team.run(team.size(), [&](const TeamMember& member) {
    std::vector<float> run(static_cast<std::size_t>(points) * kChannelsPerRun * mr);
    const TeamMember::Range mine = member.share(static_cast<std::size_t>(panels));
    for (int panel = static_cast<int>(mine.begin); panel < static_cast<int>(mine.end); ++panel) {
      const int rows = std::min(mr, cout - panel * mr);
      for (int i0 = 0; i0 < cin; i0 += kChannelsPerRun) {
        const int channels = std::min(kChannelsPerRun, cin - i0);
        const std::size_t length = static_cast<std::size_t>(channels) * mr;
        std::fill(run.begin(), run.end(), 0.0f);  // rows past cout stay zero
        for (int i = i0; i < i0 + channels; ++i) {
          for (int row = 0; row < rows; ++row) {
            const int o = panel * mr + row;
            double filter[36];
            transform_filter(variant, weights + (static_cast<std::size_t>(o) * cin + i) * taps, filter);
            for (int p = 0; p < points; ++p) run[p * length + (i - i0) * mr + row] = static_cast<float>(filter[p]);
          }
        }
        const std::size_t offset = plan.points.front().offset(panel * mr, i0);
        for (int p = 0; p < points; ++p) {
          std::copy(run.begin() + p * length, run.begin() + (p + 1) * length, plan.points[p].data() + offset);
        }
      }
    }
  });
  plan.bias.assign(cout, 0.0f);
  if (bias) std::copy(bias, bias + cout, plan.bias.begin());
  return plan;
}

void winograd_conv_rows(const Conv2dDesc& desc, const WinogradPlan& plan, const Variable& input, const Shape& output,
                        int n0, int n1, int ty0, int ty1, float* target, std::size_t channel_stride,
                        std::size_t image_stride, WinogradBandBuffers& buffers) {
  const WinogradGeometry geometry = winograd_geometry(plan.variant);
  const Shape& in = input.shape();
  const int tiles_w = (output.w + geometry.output_tile - 1) / geometry.output_tile;
  const int cin = desc.in_channels;
  const int cout = desc.out_channels;
  const GemmMicroKernel& kernel = *plan.kernel;
  const int nr = kernel.nr;
  const int per_image = (ty1 - ty0) * tiles_w;  // tiles, numbered image by image, row by row
  const int count = (n1 - n0) * per_image;
  const int columns = round_up(count, nr);
  const BlockLayout layout = block_layout(geometry.points, cin, cout, columns);
  if (buffers.tiles.size() < layout.tiles_size) buffers.tiles.resize(layout.tiles_size);
  if (buffers.products.size() < layout.products_size) buffers.products.resize(layout.products_size);
  const WinogradTransforms& transforms = winograd_kernels(kernel.isa)[plan.variant];

  for (int n = n0; n < n1; ++n) {
    for (int c = 0; c < cin; ++c) {
      const WinogradPackedTiles packed{buffers.tiles.data() + static_cast<std::size_t>(c) * nr,
                                       layout.tiles_point_stride, static_cast<std::size_t>(cin) * nr, nr};
      const WinogradInputPlane plane{input.data() + (static_cast<std::size_t>(n) * in.c + c) * in.plane_count(), in.h,
                                     in.w, desc.padding};
      for (int ty = ty0; ty < ty1; ++ty) {
        transforms.input(plane, ty, 0, tiles_w, packed, (n - n0) * per_image + (ty - ty0) * tiles_w);
      }
    }
  }
  for (int p = 0; p < geometry.points; ++p) {
    const PrepackedB tiles(buffers.tiles.data() + p * layout.tiles_point_stride, cin, count);
    packed_gemm_columns(kernel, plan.points[p], tiles, 0, count,
                        buffers.products.data() + p * layout.products_point_stride, static_cast<std::size_t>(columns),
                        Activation::none(), buffers.gemm_scratch, true);
  }
  const int rows = std::min(output.h, geometry.output_tile * ty1) - geometry.output_tile * ty0;
  for (int n = n0; n < n1; ++n) {
    for (int o = 0; o < cout; ++o) {
      const WinogradProducts products{buffers.products.data() + static_cast<std::size_t>(o) * columns,
                                      layout.products_point_stride};
      float* values = target + (n - n0) * image_stride + static_cast<std::size_t>(o) * channel_stride;
      const WinogradOutputPlane plane{
          values, rows, output.w, plan.bias[o], desc.activation.kind, desc.activation.slope};
      for (int ty = ty0; ty < ty1; ++ty) {
        transforms.output(products, (n - n0) * per_image + (ty - ty0) * tiles_w, plane, ty - ty0, 0, tiles_w);
      }
    }
  }
}

void winograd_conv(const TeamMember& member, const Conv2dDesc& desc, const WinogradPlan& plan, const Variable& input,
                   Variable& output, WinogradWorkspace& workspace) {
  const WinogradGeometry geometry = winograd_geometry(plan.variant);
  const Shape& in = input.shape();
  const Shape& out = output.shape();
  const TileGrid grid = tile_grid(out, geometry.output_tile);
  const int cin = desc.in_channels;
  const int cout = desc.out_channels;
  const GemmMicroKernel& kernel = *plan.kernel;
  const int nr = kernel.nr;
  const int block = plan.tiles_per_block;
  const int columns = round_up(block, nr);  // of the packed tiles and of each product row
  const BlockLayout layout = block_layout(geometry.points, cin, cout, columns);
  if (member.index() == 0) {
    if (workspace.tiles.size() < layout.tiles_size) workspace.tiles.resize(layout.tiles_size);
    if (workspace.products.size() < layout.products_size) workspace.products.resize(layout.products_size);
    if (workspace.gemm_scratch.size() < static_cast<std::size_t>(member.count())) {
      workspace.gemm_scratch.resize(member.count());
    }
  }
  member.sync();

  const WinogradTransforms& transforms = winograd_kernels(kernel.isa)[plan.variant];
  for (int first = 0; first < grid.total(); first += block) {
    const int count = std::min(block, grid.total() - first);
    // 1. Input tiles B^T d B, by channel.
    const TeamMember::Range channels = member.share(static_cast<std::size_t>(cin));
    for (int c = static_cast<int>(channels.begin); c < static_cast<int>(channels.end); ++c) {
      const WinogradPackedTiles packed{workspace.tiles.data() + static_cast<std::size_t>(c) * nr,
                                       layout.tiles_point_stride, static_cast<std::size_t>(cin) * nr, nr};
      for_each_tile_run(grid, first, count, [&](int t, int n, int ty, int tx, int run) {
        const WinogradInputPlane plane{input.data() + (static_cast<std::size_t>(n) * in.c + c) * in.plane_count(), in.h,
                                       in.w, desc.padding};
        transforms.input(plane, ty, tx, run, packed, t - first);
      });
    }
    member.sync();
    // 2. One GEMM [cout x cin] x [cin x count] per point, by point.
    const TeamMember::Range points = member.share(static_cast<std::size_t>(geometry.points));
    for (int p = static_cast<int>(points.begin); p < static_cast<int>(points.end); ++p) {
      const PrepackedB tiles(workspace.tiles.data() + p * layout.tiles_point_stride, cin, count);
      packed_gemm_columns(
          kernel, plan.points[p], tiles, 0, count, workspace.products.data() + p * layout.products_point_stride,
          static_cast<std::size_t>(columns), Activation::none(), workspace.gemm_scratch[member.index()], true);
    }
    member.sync();
    // 3. Output tiles A^T M A with bias and activation, by output channel.
    const TeamMember::Range channels_out = member.share(static_cast<std::size_t>(cout));
    for (int o = static_cast<int>(channels_out.begin); o < static_cast<int>(channels_out.end); ++o) {
      const WinogradProducts products{workspace.products.data() + static_cast<std::size_t>(o) * columns,
                                      layout.products_point_stride};
      for_each_tile_run(grid, first, count, [&](int t, int n, int ty, int tx, int run) {
        const WinogradOutputPlane plane{output.data() + (static_cast<std::size_t>(n) * out.c + o) * out.plane_count(),
                                        out.h,
                                        out.w,
                                        plan.bias[o],
                                        desc.activation.kind,
                                        desc.activation.slope};
        transforms.output(products, t - first, plane, ty, tx, run);
      });
    }
    member.sync();
  }
}

}  // namespace corgy::blas
