// The blas backend's own GEMM: C = A x B with A packed once (a layer's weights) and B packed block by block from
// wherever it lives (a matrix, or an image read through implicit im2col), fed to the micro-kernels of
// gemm_kernels.h. Bias and ReLU / leaky ReLU are applied in the kernel's registers on the last block of the depth.
// Columns past the last whole tile go to a narrower tile of the same rows (gemm_kernels.h's narrower_tile) where B
// is packed here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "corgy/activation.h"
#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/cpu/aligned_buffer.h"
#include "corgy/variable.h"

namespace corgy::blas {

/// A row-major matrix (rows x depth) packed for a micro-kernel of `mr` rows: panel p holds rows [p*mr, p*mr + mr)
/// as `depth` columns of mr floats (k-major), rows past the end zero. Its per-row bias is padded the same way.
class PackedA {
 public:
  PackedA() = default;
  /// `bias` (rows values) may be null.
  PackedA(const float* a, int rows, int depth, std::size_t lda, const float* bias, int mr);
  /// `count` matrices of one geometry in one allocation, to be filled element by element through at() (Winograd's
  /// transformed weights); the padding rows are zero. Winograd's 36 matrices of a 512-channel layer are 1 MiB each,
  /// which as separate buffers got 4 KiB pages (aligned_buffer.cpp) and ran their one-thread GEMMs at a seventh of
  /// their speed in a model (ResNet-50's 7x7 layers at batch 8: 40 ms against 5.5); together they get huge pages.
  static std::vector<PackedA> in_one_buffer(int count, int rows, int depth, int mr);
  /// This matrix becomes `source` with its column k (depth k) times scale[k] (depth values), its bias as source's:
  /// a squeeze-excite gate folded into the weights of the convolution after it. Reuses this matrix's buffers where
  /// they are large enough and its own.
  void assign_scaled_columns(const PackedA& source, const float* scale);
  /// Makes this matrix read `other`'s buffer where both hold the same values in the same geometry (the same weights
  /// packed again, for another input shape), so that the two plans hold them once; returns whether it does. The
  /// bias stays this matrix's own.
  bool share_buffer_if_equal(const PackedA& other);

  /// Where element (row, k) lives: at(row, k) is data()[offset(row, k)], the same offset in every PackedA of this
  /// geometry.
  std::size_t offset(int row, int k) const {
    return (static_cast<std::size_t>(row / mr_) * depth_ + k) * mr_ + row % mr_;
  }
  float& at(int row, int k) { return base_[offset(row, k)]; }
  float* data() { return base_; }

  int rows() const { return rows_; }
  int depth() const { return depth_; }
  int mr() const { return mr_; }
  int panels() const { return (rows_ + mr_ - 1) / mr_; }
  const float* panel(int index) const { return base_ + static_cast<std::size_t>(index) * depth_ * mr_; }
  /// rows rounded up to mr values, or null.
  const float* bias() const { return bias_.empty() ? nullptr : bias_.data(); }
  std::size_t bytes() const { return elements() * sizeof(float); }

 private:
  std::size_t elements() const { return static_cast<std::size_t>(panels()) * depth_ * mr_; }
  void zero_padding_rows();

  int rows_ = 0;
  int depth_ = 0;
  int mr_ = 0;
  float* base_ = nullptr;  // this matrix's first element, in data_ (which in_one_buffer's matrices share)
  std::shared_ptr<cpu::AlignedBuffer> data_;
  cpu::AlignedBuffer bias_;
};

/// A block of B in panels of nr columns: panel p's row k is at base + p * panel_stride + k * nr, or, when
/// row_offsets is set, at base + p * panel_stride + row_offsets[k] (rows read in place, not packed).
struct PackedBlock {
  const float* base = nullptr;
  std::size_t panel_stride = 0;
  const std::int32_t* row_offsets = nullptr;
};

/// Where B comes from. pack() returns rows [k0, k0 + kc) and columns [n0, n0 + nc) in panels of nr (columns past
/// the matrix zero), written to `scratch` (room for ceil(nc / nr) * kc * nr floats) unless B is packed already.
/// n0 is a multiple of nr.
class BSource {
 public:
  virtual ~BSource() = default;
  virtual int depth() const = 0;
  virtual int columns() const = 0;
  virtual PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const = 0;
  /// True when pack() only points into data packed already (it writes nothing and needs no scratch).
  virtual bool prepacked() const { return false; }
};

/// A row-major matrix (depth x columns, rows `ld` apart).
class MatrixB final : public BSource {
 public:
  MatrixB(const float* b, int depth, int columns, std::size_t ld) : b_(b), depth_(depth), columns_(columns), ld_(ld) {}
  int depth() const override { return depth_; }
  int columns() const override { return columns_; }
  PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const override;

 private:
  const float* b_;
  int depth_;
  int columns_;
  std::size_t ld_;
};

/// B packed already in panels of nr columns over the whole depth (panel p's row k at data + (p * depth + k) * nr):
/// Winograd's input transform writes its tiles this way.
class PrepackedB final : public BSource {
 public:
  PrepackedB(const float* data, int depth, int columns) : data_(data), depth_(depth), columns_(columns) {}
  int depth() const override { return depth_; }
  int columns() const override { return columns_; }
  PackedBlock pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const override;
  bool prepacked() const override { return true; }

 private:
  const float* data_;
  int depth_;
  int columns_;
};

/// Buffers a GEMM reuses across calls: one packed-B block per team member, and one the team shares.
struct GemmWorkspace {
  std::vector<std::vector<float>> per_member;
  std::vector<float> shared;
};

/// c[a.rows() x b.columns()] (rows ldc apart) = activation(a x b + a.bias()), computed by every member of the team
/// that calls it (each must call it; it returns after the team's barrier). Rows of c past a.rows() and columns
/// past b.columns() are not written.
void packed_gemm(const TeamMember& member, const GemmMicroKernel& kernel, const PackedA& a, const BSource& b, float* c,
                 std::size_t ldc, Activation activation, GemmWorkspace& workspace);

/// The columns [column_begin, column_end) of that product, by the calling thread alone: c points at column
/// column_begin of C (a band of a convolution's output). B is packed into `scratch`; column_begin need not be a
/// multiple of the kernel's nr unless B is prepacked. With `padded_columns`, C's rows have room up to the next
/// multiple of nr and the kernel writes whole tiles there (faster than cropping them through a buffer).
void packed_gemm_columns(const GemmMicroKernel& kernel, const PackedA& a, const BSource& b, int column_begin,
                         int column_end, float* c, std::size_t ldc, Activation activation, std::vector<float>& scratch,
                         bool padded_columns = false);
/// The same for A's row panels [panel_begin, panel_end) only: C's rows panel_begin * mr on (a share of the output
/// channels, when the team splits a layer by channels).
void packed_gemm_panels(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end,
                        const BSource& b, int column_begin, int column_end, float* c, std::size_t ldc,
                        Activation activation, std::vector<float>& scratch, bool padded_columns = false);

/// C = the part of that product over the depth [depth_begin, depth_end) alone (A's columns and B's rows there), every
/// row panel of A, no bias nor activation: a share of the depth whose partial sums are added up elsewhere. By the
/// calling thread alone; the blocks of B that pack() returns hold rows depth_begin on.
void packed_gemm_partial_depth(const GemmMicroKernel& kernel, const PackedA& a, int depth_begin, int depth_end,
                               const BSource& b, int column_begin, int column_end, float* c, std::size_t ldc,
                               std::vector<float>& scratch);

/// C's columns spread over the images of an NCHW tensor whose channels are C's rows: column j is pixel j % pixels of
/// image j / pixels, images image_stride floats apart, rows (channels) `pixels` floats apart. One GEMM then covers
/// every image of a batch, so the last column panel of a small map is padded once, not once per image.
struct ImageColumns {
  int pixels = 0;
  std::size_t image_stride = 0;
  /// A tensor laid out as C that the epilogue adds before the bias and activation (a residual connection), or null.
  const float* residual = nullptr;
};

/// packed_gemm_panels into such a C: c points at image 0's first channel (row 0); column_begin need not be a
/// multiple of nr unless B is prepacked. By the calling thread alone.
void packed_gemm_image_columns(const GemmMicroKernel& kernel, const PackedA& a, int panel_begin, int panel_end,
                               const BSource& b, int column_begin, int column_end, float* c, const ImageColumns& images,
                               Activation activation, std::vector<float>& scratch);

}  // namespace corgy::blas
