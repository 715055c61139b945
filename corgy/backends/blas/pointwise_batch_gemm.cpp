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
  int panels;     // column panels of the whole GEMM
  int chunks;     // chunk c: panels [panels * c / chunks, panels * (c + 1) / chunks)
  int row_parts;  // A's panels cut into this many parts
  std::size_t items() const { return static_cast<std::size_t>(chunks) * row_parts; }
  int first_panel(int chunk) const { return static_cast<int>(static_cast<long>(panels) * chunk / chunks); }
};

Split split_for(const GemmMicroKernel& kernel, const PackedA& a, const Shape& output, int members) {
  const int columns = output.n * static_cast<int>(output.plane_count());
  const int panels = (columns + kernel.nr - 1) / kernel.nr;
  const std::size_t panel_bytes = static_cast<std::size_t>(a.depth()) * kernel.nr * sizeof(float);
  const int budget_panels = static_cast<int>(std::clamp<std::size_t>(kChunkBytes / panel_bytes, 1, 64));
  // At least four chunks per member where the panels allow, so that a queue evens out the members, and a whole
  // number of chunks per member, of sizes that differ by one panel at most: 98 panels on two members made 13
  // chunks of 8 (one member idle for a chunk's time) and so each chunk's rows in two parts, every chunk of B packed
  // twice (EfficientNet-B0's 14 x 14 480 -> 80 projections at batch 8 scaled 0.69x from one thread to two).
  int chunks = std::max((panels + budget_panels - 1) / budget_panels, 4 * members);
  chunks = (chunks + members - 1) / members * members;
  if (chunks > panels) chunks = panels;
  // Fewer panels than members x 4: whole chunks cannot share evenly, so each chunk's rows in `members` parts too
  // (every member then packs its chunks' B again, a cost of 1 / (rows / members) of the arithmetic).
  const auto slowest = [&](int parts) {
    const long items = static_cast<long>(chunks) * parts;
    return static_cast<double>((items + members - 1) / members) / parts;
  };
  int row_parts = 1;
  if (members > 1 && a.panels() >= members && slowest(members) < 0.97 * slowest(1)) row_parts = members;
  return {panels, chunks, row_parts};
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
  std::size_t item = 0;
  while (queue.next(member, item)) {
    const int chunk = static_cast<int>(item) / split.row_parts;
    const int part = static_cast<int>(item) % split.row_parts;
    const int panel_begin = a.panels() * part / split.row_parts;
    const int panel_end = a.panels() * (part + 1) / split.row_parts;
    const int column_begin = split.first_panel(chunk) * kernel.nr;
    const int column_end = std::min(b.columns(), split.first_panel(chunk + 1) * kernel.nr);
    packed_gemm_image_columns(kernel, a, panel_begin, panel_end, b, column_begin, column_end, output.data(), images,
                              activation, scratch);
  }
  member.sync();
}

}  // namespace corgy::blas
