#include "corgy/backends/blas/packed_gemm.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "corgy/backends/cpu/cpu_features.h"

namespace corgy::blas {

namespace {

/// Cache budgets of the blocking (bytes): a B panel (kc x nr) stays in L1 while the kernel sweeps A's panels
/// (l1_panel_bytes); an A block (mc x kc) stays in L2 while the sweep moves along B's panels.
constexpr std::size_t kL2BlockBytes = 512 * 1024;

/// The B panel's budget: half of this CPU's L1 data cache, so that the A panel and the C tile the kernel streams
/// beside it do not evict it. A panel the size of the whole 48 KiB L1 (kc = 256 for 48 columns) ran ResNet-50's 1x1
/// convolutions at batch 8 7-10% slower on an Intel Xeon with AVX-512 (the sum of their layers 280-290 ms against
/// 252-270, one thread; 16 and 32 KiB measured the same as 24).
std::size_t l1_panel_bytes() { return cpu_l1_data_cache_bytes() / 2; }

/// Columns of B packed per block, in panels.
constexpr int kPanelsPerBlock = 64;

struct Blocking {
  int kc;         // depth per block
  int mc_panels;  // A panels per block
};

/// `columns` of B at `depth`: when all of B fits in L2, the depth is not blocked at all, so that each of A's panels is
/// read from start to end and A as a whole is one sequential stream (the weights of a 13x13 layer's GEMM stream from
/// memory; blocking the depth made the stream jump every few kilobytes, defeating prefetch).
Blocking blocking_for(const GemmMicroKernel& kernel, int depth, int columns) {
  const std::size_t panels = (columns + kernel.nr - 1) / kernel.nr;
  const std::size_t whole_b = panels * depth * kernel.nr * sizeof(float);
  const int kc =
      whole_b <= kL2BlockBytes ? depth : std::max(16, static_cast<int>(l1_panel_bytes() / (sizeof(float) * kernel.nr)));
  const int mc_panels = std::max(1, static_cast<int>(kL2BlockBytes / (sizeof(float) * kc * kernel.mr)));
  return {kc, mc_panels};
}

/// One C tile: the kernel writes it in place when it lies wholly inside C (and, with `images`, inside one image),
/// else through a tile-sized buffer. `c` is the tile's first element, or with `images` C's first (image 0, row 0,
/// column 0) and `column` the tile's first column. `residual` (or null; images only) is laid out as C, `c` and it
/// pointing at the same element: the epilogue adds it.
void run_tile(const GemmMicroKernel& kernel, std::size_t kc, const float* a_panel, const float* b_panel,
              const std::int32_t* row_offsets, float* c, std::size_t ldc, int rows, int cols, bool accumulate,
              const TileEpilogue* epilogue, bool padded_columns, const ImageColumns* images = nullptr, int column = 0,
              const float* residual = nullptr) {
  const int mr = kernel.mr;
  const int nr = kernel.nr;
  TileEpilogue with_residual;
  const auto run = [&](float* target, std::size_t ld, const float* residual_tile, std::size_t residual_ld) {
    const TileEpilogue* applied = epilogue;
    if (epilogue && residual_tile) {
      with_residual = *epilogue;
      with_residual.residual = residual_tile;
      with_residual.residual_ld = residual_ld;
      applied = &with_residual;
    }
    if (row_offsets) {
      kernel.run_rows(kc, a_panel, b_panel, row_offsets, target, ld, accumulate, applied);
    } else {
      kernel.run(kc, a_panel, b_panel, target, ld, accumulate, applied);
    }
  };
  const bool adds_residual = residual && epilogue;
  if (images) {
    const int image = column / images->pixels;
    const int pixel = column - image * images->pixels;
    const std::size_t first = image * images->image_stride + pixel;
    if (pixel + cols <= images->pixels) {
      run_tile(kernel, kc, a_panel, b_panel, row_offsets, c + first, ldc, rows, cols, accumulate, epilogue, false,
               nullptr, 0, residual ? residual + first : nullptr);
      return;
    }
    // The tile's columns run into the next image(s): through the buffer, a run of columns per image.
    alignas(64) float tile[32 * 32] = {};
    alignas(64) float residual_tile[32 * 32];
    const auto each_run = [&](auto&& copy) {
      for (int j = 0, n = image, p = pixel; j < cols; ++n, p = 0) {
        const int length = std::min(cols - j, images->pixels - p);
        copy(n * images->image_stride + p, j, length);
        j += length;
      }
    };
    if (accumulate) {
      each_run([&](std::size_t at, int j, int length) {
        for (int i = 0; i < rows; ++i) std::memcpy(tile + i * nr + j, c + at + i * ldc, sizeof(float) * length);
      });
    }
    if (adds_residual) {
      std::fill(residual_tile, residual_tile + mr * nr, 0.0f);
      each_run([&](std::size_t at, int j, int length) {
        for (int i = 0; i < rows; ++i) {
          std::memcpy(residual_tile + i * nr + j, residual + at + i * ldc, sizeof(float) * length);
        }
      });
    }
    run(tile, static_cast<std::size_t>(nr), adds_residual ? residual_tile : nullptr, static_cast<std::size_t>(nr));
    each_run([&](std::size_t at, int j, int length) {
      for (int i = 0; i < rows; ++i) std::memcpy(c + at + i * ldc, tile + i * nr + j, sizeof(float) * length);
    });
    return;
  }
  if (rows == mr && (cols == nr || padded_columns)) {
    run(c, ldc, adds_residual ? residual : nullptr, ldc);
  } else {
    alignas(64) float tile[32 * 32] = {};
    alignas(64) float residual_tile[32 * 32];
    if (accumulate) {
      for (int i = 0; i < rows; ++i) std::memcpy(tile + i * nr, c + i * ldc, sizeof(float) * cols);
    }
    if (adds_residual) {
      std::fill(residual_tile, residual_tile + mr * nr, 0.0f);
      for (int i = 0; i < rows; ++i) std::memcpy(residual_tile + i * nr, residual + i * ldc, sizeof(float) * cols);
    }
    run(tile, static_cast<std::size_t>(nr), adds_residual ? residual_tile : nullptr, static_cast<std::size_t>(nr));
    for (int i = 0; i < rows; ++i) std::memcpy(c + i * ldc, tile + i * nr, sizeof(float) * cols);
  }
}

/// The depth a product covers: [begin, end) of A's columns and B's rows (end < 0: to A's depth). A partial one (a
/// share of the depth that other products add to) gets no epilogue: no bias, residual or activation.
struct DepthRange {
  int begin = 0;
  int end = -1;
  bool partial = false;
};

/// A block's last columns (fewer than nr) in a narrower tile: its kernel and its panel, packed that narrow.
struct NarrowerPanel {
  const GemmMicroKernel* kernel = nullptr;
  PackedBlock block;
};

/// Multiplies A's panels [panel_begin, panel_end) by one packed block of B (columns [n0, n0 + nc)) over the depth
/// [k0, k0 + kc). With `narrower`, the block's last panel is that one.
void multiply_block(const GemmMicroKernel& kernel, const Blocking& blocking, const PackedA& a, int panel_begin,
                    int panel_end, const PackedBlock& block, int k0, int kc, int n0, int nc, float* c, int c_origin,
                    std::size_t ldc, Activation activation, bool padded_columns = false,
                    const ImageColumns* images = nullptr, const DepthRange& depth = {},
                    const NarrowerPanel* narrower = nullptr) {
  const int mr = kernel.mr;
  const int nr = kernel.nr;
  const bool accumulate = k0 > depth.begin;
  const bool last = !depth.partial && k0 + kc == a.depth();
  const int b_panels = (nc + nr - 1) / nr;
  const auto tile = [&](int ip, int jp) {
    const int col = n0 + jp * nr;
    const int row = ip * mr;
    const TileEpilogue epilogue{a.bias() ? a.bias() + row : nullptr, activation.kind, activation.slope};
    const bool narrow = narrower && jp == b_panels - 1;
    const PackedBlock& panels = narrow ? narrower->block : block;
    run_tile(narrow ? *narrower->kernel : kernel, static_cast<std::size_t>(kc),
             a.panel(ip) + static_cast<std::size_t>(k0) * mr, panels.base + (narrow ? 0 : jp * panels.panel_stride),
             panels.row_offsets, images ? c + row * ldc : c + row * ldc + (col - c_origin), ldc,
             std::min(mr, a.rows() - row), std::min(nr, n0 + nc - col), accumulate, last ? &epilogue : nullptr,
             padded_columns, images, col, images && images->residual ? images->residual + row * ldc : nullptr);
  };
  if (static_cast<std::size_t>(b_panels) * kc * nr * sizeof(float) <= kL2BlockBytes) {
    // The whole block of B stays in L2: each A panel is read once (from memory, the weights of a large layer) and
    // used against every B panel while it is in L1.
    for (int ip = panel_begin; ip < panel_end; ++ip) {
      for (int jp = 0; jp < b_panels; ++jp) tile(ip, jp);
    }
    return;
  }
  // A block of A's panels stays in L2 while each B panel, in L1, is swept across it.
  for (int m_block = panel_begin; m_block < panel_end; m_block += blocking.mc_panels) {
    const int m_block_end = std::min(panel_end, m_block + blocking.mc_panels);
    for (int jp = 0; jp < b_panels; ++jp) {
      for (int ip = m_block; ip < m_block_end; ++ip) tile(ip, jp);
    }
  }
}

/// packed_gemm_columns over A's panels [panel_begin, panel_end).
void gemm_panel_columns(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end,
                        const BSource& b, int column_begin, int column_end, float* c, std::size_t ldc,
                        Activation activation, std::vector<float>& scratch, bool padded_columns,
                        const ImageColumns* images = nullptr, const DepthRange& depth = {}) {
  const int depth_end = depth.end < 0 ? a.depth() : depth.end;
  const Blocking blocking = blocking_for(kernel, depth_end - depth.begin, column_end - column_begin);
  const int nr = kernel.nr;
  const int panels = (column_end - column_begin + nr - 1) / nr;
  const std::size_t needed = static_cast<std::size_t>(blocking.kc) * nr * std::min(kPanelsPerBlock, panels);
  if (!b.prepacked() && scratch.size() < needed) scratch.resize(needed);
  // The columns past the last whole tile in a narrower one where the kernel has it and pack() packs B here, in
  // panels as wide as asked (a prepacked B keeps its whole tiles): of a 14x14 map's 196 pixels, 4 in a 16-column
  // tile, not in a fifth tile of 48. It is the last block's last panel, swept with the others (as a GEMM of its own
  // it read A once more: EfficientNet-B0 at batch 8 ran 3% slower so).
  const int whole_end = column_begin + (column_end - column_begin) / nr * nr;
  const std::optional<GemmMicroKernel> tail =
      whole_end < column_end && !b.prepacked() ? narrower_tile(kernel, column_end - whole_end) : std::nullopt;
  for (int n0 = column_begin; n0 < column_end; n0 += kPanelsPerBlock * nr) {
    const int nc = std::min(kPanelsPerBlock * nr, column_end - n0);
    const bool narrow_last = tail && n0 + nc == column_end;
    // The block's columns in panels of nr: all of them, or all but the narrower panel's.
    const int whole = narrow_last ? whole_end - n0 : nc;
    for (int k0 = depth.begin; k0 < depth_end; k0 += blocking.kc) {
      const int kc = std::min(blocking.kc, depth_end - k0);
      const PackedBlock block = whole > 0 ? b.pack(k0, kc, n0, whole, nr, scratch.data()) : PackedBlock{};
      NarrowerPanel narrower;
      if (narrow_last) {
        float* after_whole = scratch.data() + static_cast<std::size_t>(whole / nr) * kc * nr;
        narrower = {&*tail, b.pack(k0, kc, whole_end, column_end - whole_end, tail->nr, after_whole)};
      }
      multiply_block(kernel, blocking, a, panel_begin, panel_end, block, k0, kc, n0, nc, c, column_begin, ldc,
                     activation, padded_columns, images, depth, narrow_last ? &narrower : nullptr);
    }
  }
}

}  // namespace

PackedA::PackedA(const float* a, int rows, int depth, std::size_t lda, const float* bias, int mr)
    : rows_(rows), depth_(depth), mr_(mr) {
  const int panel_count = panels();
  data_ = std::make_shared<cpu::AlignedBuffer>(elements());
  base_ = data_->data();
  float* out = base_;
  for (int p = 0; p < panel_count; ++p) {
    for (int k = 0; k < depth; ++k) {
      for (int i = 0; i < mr; ++i) {
        const int row = p * mr + i;
        *out++ = row < rows ? a[row * lda + k] : 0.0f;
      }
    }
  }
  if (bias) {
    bias_ = cpu::AlignedBuffer(static_cast<std::size_t>(panel_count) * mr);
    std::fill(bias_.data(), bias_.data() + bias_.size(), 0.0f);
    std::copy(bias, bias + rows, bias_.data());
  }
}

std::vector<PackedA> PackedA::in_one_buffer(int count, int rows, int depth, int mr) {
  std::vector<PackedA> matrices(static_cast<std::size_t>(count));
  const std::size_t elements = static_cast<std::size_t>((rows + mr - 1) / mr) * depth * mr;
  const auto buffer = std::make_shared<cpu::AlignedBuffer>(elements * static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < matrices.size(); ++i) {
    PackedA& matrix = matrices[i];
    matrix.rows_ = rows;
    matrix.depth_ = depth;
    matrix.mr_ = mr;
    matrix.data_ = buffer;
    matrix.base_ = buffer->data() + i * elements;
    matrix.zero_padding_rows();
  }
  return matrices;
}

void PackedA::assign_scaled_columns(const PackedA& source, const float* scale) {
  rows_ = source.rows_;
  depth_ = source.depth_;
  mr_ = source.mr_;
  if (!data_ || data_.use_count() > 1 || data_->size() < elements())
    data_ = std::make_shared<cpu::AlignedBuffer>(elements());
  base_ = data_->data();
  const float* from = source.base_;
  float* to = base_;
  for (int p = 0; p < panels(); ++p) {
    for (int k = 0; k < depth_; ++k, from += mr_, to += mr_) {
      for (int i = 0; i < mr_; ++i) to[i] = from[i] * scale[k];
    }
  }
  if (source.bias_.empty()) {
    bias_ = cpu::AlignedBuffer();
  } else {
    if (bias_.size() != source.bias_.size()) bias_ = cpu::AlignedBuffer(source.bias_.size());
    std::copy(source.bias_.data(), source.bias_.data() + source.bias_.size(), bias_.data());
  }
}

bool PackedA::share_buffer_if_equal(const PackedA& other) {
  if (base_ == nullptr || other.base_ == nullptr) return false;
  if (base_ == other.base_) return true;
  if (rows_ != other.rows_ || depth_ != other.depth_ || mr_ != other.mr_ ||
      std::memcmp(base_, other.base_, bytes()) != 0) {
    return false;
  }
  // A matrix of in_one_buffer's shares that buffer with its siblings: it is freed once every one of them reads
  // another's.
  data_ = other.data_;
  base_ = other.base_;
  return true;
}

void PackedA::zero_padding_rows() {
  for (int row = rows_; row < panels() * mr_; ++row) {
    for (int k = 0; k < depth_; ++k) at(row, k) = 0.0f;
  }
}

PackedBlock MatrixB::pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const {
  const int panels = (nc + nr - 1) / nr;
  for (int p = 0; p < panels; ++p) {
    const int col = n0 + p * nr;
    const int cols = std::max(0, std::min(nr, columns_ - col));
    float* out = scratch + static_cast<std::size_t>(p) * kc * nr;
    for (int k = 0; k < kc; ++k, out += nr) {
      std::memcpy(out, b_ + (k0 + k) * ld_ + col, sizeof(float) * cols);
      std::fill(out + cols, out + nr, 0.0f);
    }
  }
  return {scratch, static_cast<std::size_t>(kc) * nr};
}

PackedBlock PrepackedB::pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const {
  (void)kc;
  (void)nc;
  (void)scratch;
  return {data_ + (static_cast<std::size_t>(n0 / nr) * depth_ + k0) * nr, static_cast<std::size_t>(depth_) * nr};
}

void packed_gemm(const TeamMember& member, const GemmMicroKernel& kernel, const PackedA& a, const BSource& b, float* c,
                 std::size_t ldc, Activation activation, GemmWorkspace& workspace) {
  const Blocking blocking = blocking_for(kernel, a.depth(), b.columns());
  const int nr = kernel.nr;
  const int depth = a.depth();
  const int b_panels = (b.columns() + nr - 1) / nr;
  const int members = member.count();
  if (b_panels >= members) {
    // Enough columns for everyone: each member packs and multiplies its own share of B's panels.
    const TeamMember::Range mine = member.share(static_cast<std::size_t>(b_panels));
    if (workspace.per_member.size() < static_cast<std::size_t>(members)) {
      member.sync();  // grown by member 0 only, while nobody uses it
      if (member.index() == 0) workspace.per_member.resize(members);
      member.sync();
    }
    std::vector<float>& scratch = workspace.per_member[member.index()];
    const std::size_t needed = static_cast<std::size_t>(blocking.kc) * nr * std::min(kPanelsPerBlock, b_panels);
    if (scratch.size() < needed) scratch.resize(needed);
    for (int p0 = static_cast<int>(mine.begin); p0 < static_cast<int>(mine.end); p0 += kPanelsPerBlock) {
      const int n0 = p0 * nr;
      const int nc = std::min(std::min(static_cast<int>(mine.end) - p0, kPanelsPerBlock) * nr, b.columns() - n0);
      for (int k0 = 0; k0 < depth; k0 += blocking.kc) {
        const int kc = std::min(blocking.kc, depth - k0);
        const PackedBlock block = b.pack(k0, kc, n0, nc, nr, scratch.data());
        multiply_block(kernel, blocking, a, 0, a.panels(), block, k0, kc, n0, nc, c, 0, ldc, activation);
      }
    }
    member.sync();
    return;
  }
  // Fewer column panels than members: all share one packed block of B (packed by member 0 unless B comes packed)
  // and split A's panels.
  const TeamMember::Range mine = member.share(static_cast<std::size_t>(a.panels()));
  const int nc = b.columns();
  if (member.index() == 0 && !b.prepacked()) {
    const std::size_t needed = static_cast<std::size_t>(blocking.kc) * nr * b_panels;
    if (workspace.shared.size() < needed) workspace.shared.resize(needed);
  }
  for (int k0 = 0; k0 < depth; k0 += blocking.kc) {
    const int kc = std::min(blocking.kc, depth - k0);
    PackedBlock block;
    if (b.prepacked()) {
      block = b.pack(k0, kc, 0, nc, nr, nullptr);
    } else {
      member.sync();  // everyone is done with the previous block
      if (member.index() == 0) b.pack(k0, kc, 0, nc, nr, workspace.shared.data());
      member.sync();
      block = {workspace.shared.data(), static_cast<std::size_t>(kc) * nr};
    }
    multiply_block(kernel, blocking, a, static_cast<int>(mine.begin), static_cast<int>(mine.end), block, k0, kc, 0, nc,
                   c, 0, ldc, activation);
  }
  member.sync();
}

void packed_gemm_columns(const GemmMicroKernel& kernel, const PackedA& a, const BSource& b, int column_begin,
                         int column_end, float* c, std::size_t ldc, Activation activation, std::vector<float>& scratch,
                         bool padded_columns) {
  gemm_panel_columns(kernel, a, 0, a.panels(), b, column_begin, column_end, c, ldc, activation, scratch,
                     padded_columns);
}

void packed_gemm_panels(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end,
                        const BSource& b, int column_begin, int column_end, float* c, std::size_t ldc,
                        Activation activation, std::vector<float>& scratch, bool padded_columns) {
  gemm_panel_columns(kernel, a, panel_begin, panel_end, b, column_begin, column_end, c, ldc, activation, scratch,
                     padded_columns);
}

void packed_gemm_partial_depth(const GemmMicroKernel& kernel, const PackedA& a, int depth_begin, int depth_end,
                               const BSource& b, int column_begin, int column_end, float* c, std::size_t ldc,
                               std::vector<float>& scratch) {
  gemm_panel_columns(kernel, a, 0, a.panels(), b, column_begin, column_end, c, ldc, Activation::none(), scratch, false,
                     nullptr, {depth_begin, depth_end, true});
}

void packed_gemm_image_columns(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end,
                               const BSource& b, int column_begin, int column_end, float* c, const ImageColumns& images,
                               Activation activation, std::vector<float>& scratch) {
  gemm_panel_columns(kernel, a, panel_begin, panel_end, b, column_begin, column_end, c, images.pixels, activation,
                     scratch, false, &images);
}

}  // namespace corgy::blas
