#include "corgy/backends/blas/pointwise_batch_gemm.h"

#include <algorithm>

namespace corgy::blas {

ChannelPlanesB::ChannelPlanesB(std::span<const Variable* const> inputs, const InputAffine* affine,
                               PlaneRowsPacker packer)
    : pixels_(static_cast<int>(inputs[0]->shape().plane_count())),
      columns_(inputs[0]->shape().n * pixels_),
      affine_(affine),
      packer_(packer) {
  std::size_t depth = 0;
  for (const Variable* input : inputs) depth += static_cast<std::size_t>(input->shape().c);
  const float* scale = affine ? affine->scale : nullptr;
  const float* shift = affine ? affine->shift : nullptr;
  const float* image_scale = affine ? affine->image_scale : nullptr;
  for (const Variable* input : inputs) {
    const Shape& shape = input->shape();
    for (int c = 0; c < shape.c; ++c) {
      const std::size_t k = rows_.size();
      rows_.push_back({input->data() + static_cast<std::size_t>(c) * pixels_, shape.image_count(),
                       scale ? scale[k] : 1.0f, shift ? shift[k] : 0.0f, image_scale ? image_scale + k : nullptr,
                       depth});
    }
  }
}

PackedBlock ChannelPlanesB::pack(int k0, int kc, int n0, int nc, int nr, float* scratch) const {
  const std::size_t panel_stride = static_cast<std::size_t>(kc) * nr;
  const int valid = std::max(0, std::min(nc, columns_ - n0));
  packer_(rows_.data() + k0, kc, pixels_, n0, valid, nr, panel_stride, affine_ != nullptr,
          affine_ ? affine_->activation.kind : ActivationKind::none, affine_ ? affine_->activation.slope : 0.0f,
          scratch);
  return {scratch, panel_stride};
}

namespace {

/// B columns per packed chunk: about what L2 holds beside A's panel, whole panels.
constexpr std::size_t kChunkBytes = std::size_t{512} << 10;

struct Split {
  int chunk_panels;  // column panels per chunk
  int chunks;
  int row_parts;  // A's panels cut into this many parts
  std::size_t items() const { return static_cast<std::size_t>(chunks) * row_parts; }
};

Split split_for(const GemmMicroKernel& kernel, const PackedA& a, const Shape& output, int members) {
  const int columns = output.n * static_cast<int>(output.plane_count());
  const int panels = (columns + kernel.nr - 1) / kernel.nr;
  const std::size_t panel_bytes = static_cast<std::size_t>(a.depth()) * kernel.nr * sizeof(float);
  int chunk_panels = static_cast<int>(std::clamp<std::size_t>(kChunkBytes / panel_bytes, 1, 64));
  // At least four chunks per member where the panels allow, so that a queue evens out the members.
  while (chunk_panels > 1 && (panels + chunk_panels - 1) / chunk_panels < 4 * members) chunk_panels /= 2;
  const int chunks = (panels + chunk_panels - 1) / chunk_panels;
  // Where the chunks do not share evenly (9 among 2), each chunk's rows in `members` parts too: every member then
  // packs its chunks' B again, a cost of 1 / (rows / members) of the arithmetic.
  const auto slowest = [&](int parts) {
    const long items = static_cast<long>(chunks) * parts;
    return static_cast<double>((items + members - 1) / members) / parts;
  };
  int row_parts = 1;
  if (members > 1 && a.panels() >= members && slowest(members) < 0.97 * slowest(1)) row_parts = members;
  return {chunk_panels, chunks, row_parts};
}

}  // namespace

std::size_t pointwise_batch_items(const GemmMicroKernel& kernel, const PackedA& a, const Shape& output, int members) {
  return split_for(kernel, a, output, members).items();
}

void pointwise_batch_gemm(const TeamMember& member, WorkQueue& queue, const GemmMicroKernel& kernel, const PackedA& a,
                          std::span<const Variable* const> inputs, const InputAffine* affine, Activation activation,
                          const Variable* residual, Variable& output, std::vector<float>& scratch) {
  const Shape& out = output.shape();
  const Split split = split_for(kernel, a, out, member.count());
  const ChannelPlanesB b(inputs, affine, gemm_kernels(kernel.isa).pack_channel_planes);
  const ImageColumns images{static_cast<int>(out.plane_count()), out.image_count(),
                            residual ? residual->data() : nullptr};
  const int chunk_columns = split.chunk_panels * kernel.nr;
  std::size_t item = 0;
  while (queue.next(member, item)) {
    const int chunk = static_cast<int>(item) / split.row_parts;
    const int part = static_cast<int>(item) % split.row_parts;
    const int panel_begin = a.panels() * part / split.row_parts;
    const int panel_end = a.panels() * (part + 1) / split.row_parts;
    const int column_begin = chunk * chunk_columns;
    const int column_end = std::min(b.columns(), column_begin + chunk_columns);
    packed_gemm_image_columns(kernel, a, panel_begin, panel_end, b, column_begin, column_end, output.data(), images,
                              activation, scratch);
  }
  member.sync();
}

}  // namespace corgy::blas
