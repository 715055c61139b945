// BlasBackend: the CPU backend. Convolution is im2col + one OpenBLAS sgemm per image and group; every other
// loop is spread over the cores by the backend's ThreadTeam.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/thread_team.h"
#include "corgy/backends/cpu/cpu_profiler.h"

namespace corgy {

namespace blas {
class ConvPlanCache;
struct InputAffine;
struct ConvPlan;
struct ChannelBlockResidualPlan;
struct BandBuffers;
struct Fastest;
class TuningTable;
}  // namespace blas

/// How BlasBackend computes convolutions.
enum class BlasConvolution {
  automatic,    ///< the fastest algorithm for each layer, chosen when the layer first runs at an input shape
  im2col,       ///< im2col + OpenBLAS sgemm for every convolution: corgy's baseline (backend name "blas:im2col")
  packed,       ///< our packed GEMM for every convolution it computes ("blas:packed"; tests)
  winograd,     ///< Winograd F(4x4, 3x3) wherever it applies, else the automatic choice ("blas:winograd"; tests)
  winograd2x2,  ///< Winograd F(2x2, 3x3) likewise ("blas:winograd2x2"; tests)
  /// Convolutions as automatic, and every inverted residual block that can run in bands of rows does, in bands of
  /// two rows, whatever its size and measured speed ("blas:bands"; tests).
  bands,
  /// Convolutions as automatic, every depthwise convolution that the channel-block kernel computes by it, and
  /// every inverted residual block that channel_block_residual.h computes by that ("blas:channel_blocks"; tests).
  channel_blocks,
  /// Every pointwise convolution (1x1, stride 1, no padding, one group) as one GEMM over the batch's pixels, the
  /// others as automatic ("blas:batch"; tests).
  batch,
  /// Every convolution of one group as the transposed GEMM, output channels in the vector lanes
  /// (channels_in_lanes_gemm.h), the others as automatic ("blas:channels_in_lanes"; tests).
  channels_in_lanes,
  /// Every convolution with few input channels (few_channels_conv.h: a network's stem) by the direct kernel, the
  /// others as automatic ("blas:few_channels"; tests).
  few_channels,
};

struct BlasOptions {
  /// The team that runs every loop and shares each GEMM (0 = all cores).
  int threads = 0;
  BlasConvolution convolution = BlasConvolution::automatic;
  /// Pin each worker thread to its own CPU (of those the process may use; see ThreadTeam). Off: the scheduler places
  /// them, which on a busy machine can put them on the calling thread's CPU.
  bool pin_threads = true;
  /// The file that keeps the measured choices of automatic plans for later processes (blas/tuning_cache.h); empty:
  /// blas-tuning-<CPU model hash>.jsonl in default_tuning_cache_folder() ($XDG_CACHE_HOME/corgy or ~/.cache/corgy).
  std::string tuning_cache{};
  /// False: the measured choices are kept in this process only (no file is read or written).
  bool use_tuning_cache = true;
};

/// Not safe to call from several threads at once: the im2col buffer is per instance (use one backend per thread).
class BlasBackend final : public Backend {
 public:
  /// threads: the team that runs every loop and shares each GEMM (0 = all cores).
  explicit BlasBackend(int threads = 0);
  explicit BlasBackend(const BlasOptions& options);
  ~BlasBackend() override;

  /// "blas", or "blas:<algorithm>" when convolutions are forced onto one (BlasConvolution).
  std::string name() const override;
  /// Sets the team size (0 = all cores). Throws corgy::Error if negative.
  void set_threads(int threads) override;
  int threads() const override { return threads_; }

  /// Convolution weights and biases: packed for the chosen algorithm at the first forward that needs them.
  void upload_constant(const Variable& tensor) override;
  /// Each convolution keeps its plans (packed weights) for that many input shapes.
  void set_kept_plans(int count) override;
  void set_profiling(bool enabled) override { profiler_.set_enabled(enabled); }
  /// Saves the choices measured in the forward to the tuning cache (BlasOptions::tuning_cache).
  void end_forward() override;
  void begin_layer(int index) override { profiler_.begin_layer(index); }
  std::vector<OpProfile> take_profile() override { return profiler_.take(); }

  void conv2d(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
              Variable& output) override;
  void conv2d_maxpool(const Conv2dDesc& conv, const Pool2dDesc& pool, const Variable& input, const Variable& weights,
                      const Variable* bias, Variable& output) override;
  /// A pointwise convolution planned as one GEMM over the batch's pixels adds the residual in its epilogue; others
  /// run without their activation, then one pass of output = activation(output + residual).
  void conv2d_add(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                  const Variable& residual, Variable& output) override;
  /// Defined in inverted_residual.cpp: bands of rows through the three convolutions, or the three in turn image by
  /// image, whichever the first forward measured faster (where the expanded tensor fits in cache anyway, the three).
  void inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                         Variable& output) override;
  /// Pointwise (with constant weights): one GEMM over the batch's pixels whose B is packed from the inputs with the
  /// affine applied (pointwise_batch_gemm.h); other convolutions: the concatenation and the affine into a scratch
  /// tensor, then conv2d.
  void preactivated_conv2d(const Conv2dDesc& desc, std::span<const Variable* const> inputs, const Variable& scale,
                           const Variable& shift, Activation input_activation, const Pool2dDesc* input_pool,
                           const Variable& weights, const Variable* bias, Variable& output) override;
  /// Defined in squeeze_excite.cpp.
  void squeeze_excite(const SqueezeExciteDesc& desc, const Variable& input, const Variable& reduce_weights,
                      const Variable* reduce_bias, const Variable& expand_weights, const Variable* expand_bias,
                      Variable& output) override;
  /// Defined in squeeze_excite_conv2d.cpp: where the projection's plan is one GEMM over the batch's pixels, the
  /// gates, then that GEMM with its B packed from the input with each (image, channel) gate applied
  /// (pointwise_batch_gemm.h); where it is the packed GEMM reading the input planes in place, the gates, then
  /// each image's GEMM with its gates folded into the weights (squeeze_excite_gated_weights); with another plan,
  /// squeeze_excite into a scratch tensor, then the convolution.
  void squeeze_excite_conv2d(const SqueezeExciteDesc& excite, const SqueezeExciteWeights& excite_weights,
                             const Conv2dDesc& conv, const Variable& input, const Variable& weights,
                             const Variable* bias, const Variable* residual, Variable& output) override;
  void pool2d(const Pool2dDesc& desc, const Variable& input, Variable& output) override;
  void activation(Activation activation, const Variable& input, Variable& output) override;
  void linear(const Variable& input, const Variable& weights, const Variable* bias, Activation activation,
              Variable& output) override;
  void softmax(const Variable& input, Variable& output) override;
  void channel_affine(const Variable& input, const Variable& scale, const Variable& shift, Activation activation,
                      Variable& output) override;
  void upsample_nearest(int scale, const Variable& input, Variable& output) override;
  void concat_channels(std::span<const Variable* const> inputs, Variable& output) override;
  void gather_channels(const ChannelGatherDesc& desc, const Variable& input, Variable& output) override;
  /// Runs along the last axis as memcpy, fill or strided loops, split among the team (strided_copy.cpp).
  void copy_strided(const StridedCopyDesc& desc, const Variable& input, Variable& output) override;
  void add(const Variable& a, const Variable& b, Activation activation, Variable& output) override;
  void matmul(const Variable& a, bool transpose_a, const Variable& b, bool transpose_b, Variable& c) override;
  // Arithmetic on tensors of any rank, defined in broadcast_binary.cpp, unary.cpp, reduce_axis.cpp, softmax_axis.cpp,
  // batched_matmul.cpp and layer_norm.cpp.
  void broadcast_binary(BinaryOp op, const BroadcastDesc& desc, const Variable& a, const Variable& b,
                        Variable& output) override;
  void unary(UnaryOp op, const Variable& input, Variable& output) override;
  void reduce_axis(ReduceOp op, const AxisExtent& axis, const Variable& input, Variable& output) override;
  void softmax_axis(const AxisExtent& axis, bool log, const Variable& input, Variable& output) override;
  void batched_matmul(const BatchedMatmulDesc& desc, const Variable& a, const Variable& b, Variable& output) override;
  void layer_norm(const AxisExtent& axis, float epsilon, const Variable& scale, const Variable& shift,
                  const Variable& input, Variable& output) override;
  /// One GEMM per image and group (the weights transposed times the input), then col2im (im2col.h) into the output.
  void conv_transpose2d(const ConvTranspose2dDesc& desc, const Variable& input, const Variable& weights,
                        const Variable* bias, Variable& output) override;
  // Defined in files of their own (instance_norm.cpp, pad.cpp, elementwise.cpp, prelu.cpp, resize.cpp), beside what
  // they compute.
  void instance_norm(const Variable& input, const Variable& scale, const Variable& shift, float epsilon,
                     Activation activation, Variable& output) override;
  void pad(const PadDesc& desc, const Variable& input, Variable& output) override;
  void elementwise(ElementwiseOp op, const Variable& a, const Variable& b, Variable& output) override;
  void prelu(const Variable& input, const Variable& slope, Variable& output) override;
  /// Per-axis tables of taps and weights, then each plane's pixels as weighted sums of the taps.
  void resize(const ResizeDesc& desc, const Variable& input, Variable& output) override;

 private:
  /// Threads worth waking for a loop over `elements` floats: small loops stay on the calling thread, where
  /// waking the team would cost more than the loop.
  int threads_for(std::size_t elements) const;
  /// Each GEMM is split among the team, so OpenBLAS itself must run single-threaded (see team_sgemm in the
  /// .cpp). Its thread count is process-wide and the application may have changed it: set it before each GEMM.
  void keep_openblas_single_threaded() const;
  /// The im2col scratch, grown to at least `count` floats when needed and reused across calls.
  float* column_buffer(std::size_t count);
  /// The baseline: a direct loop for depthwise convolutions, else im2col + one OpenBLAS sgemm per image and group.
  void conv2d_baseline(const Conv2dDesc& desc, const Variable& input, const Variable& weights, const Variable* bias,
                       Variable& output);
  /// A planned convolution (packed GEMM or Winograd), with `pool` (or null) applied to its `conv_output`-shaped result:
  /// in bands when its weights are small, else as one team-shared computation.
  void run_plan(const blas::ConvPlan& plan, const Pool2dDesc* pool, const Variable& input, const Shape& conv_output,
                Variable& output);
  /// The plan of a convolution with these weights at input shape `in`: made (and with BlasConvolution::automatic
  /// and the input given, its algorithm measured on it against the others that apply, conv_tuner.h) at the first
  /// call, kept afterwards. Null for weights that are not constants. With `residual` (conv2d_add), each candidate is
  /// timed with the add: in the batch GEMM's epilogue, else as add_residual's pass. With `pool` (conv2d_maxpool),
  /// with the max pool: fused into the bands of the packed GEMM and Winograd, a pass of its own after the others.
  const blas::ConvPlan* plan_for(const Conv2dDesc& desc, const Shape& in, const Variable* input,
                                 const Variable& weights, const Variable* bias, const Variable* residual = nullptr,
                                 const Pool2dDesc* pool = nullptr);
  /// The plan of a convolution whose window differs between the axes: the packed GEMM (conv_gemm.h: padded input
  /// rows read in place), made at the first call. Null where im2col + OpenBLAS runs it instead: weights that are
  /// not constants, a stride or dilation that differs between the axes, or BlasConvolution::im2col forced.
  const blas::ConvPlan* general_window_plan(const Conv2dDesc& desc, const Variable& input, const Variable& weights,
                                            const Variable* bias);
  /// output = activation(output + residual), one pass split among the team.
  void add_residual(const Variable& residual, Activation activation, Variable& output);
  /// blas::fastest_candidate, and whether its timing was undisturbed (Fastest::undisturbed), which decides whether
  /// the choice counts towards the tuning cache's agreement (tuning_cache.h): before each timed run (outside its
  /// time) every member runs fma_probe_gflops, and the median over the runs of the slowest member's rate must be an
  /// undisturbed one (TuningTable::undisturbed); after each run, whether a member was taken off its CPU for another
  /// thread, which at most half of the runs may have been. The
  /// median, not the lowest: a probe of 60 us catches the odd interrupt, which the runs' best-of-rounds leaves out
  /// anyway; a neighbour on the sibling hyperthread through the timing lowers most of them.
  blas::Fastest fastest_measured(std::size_t candidates, const std::function<double(std::size_t)>& time_ms);
  /// Before a timed run: the caches as a forward leaves them for this layer. `weights` (the buffers the run reads
  /// its weights from) evicted, last read a whole forward ago; `input` evicted and then each member's share of its
  /// columns read on that member (conv_tuner.h: read_column_share), as the layer before left it.
  void place_for_timing(std::vector<std::span<const float>> weights, const Variable& input);
  /// How tall inverted_residual's bands are: what fits the L2 budget, or whole images (one member's each).
  enum class BandHeight { within_budget, whole_image };
  /// Defined in inverted_residual.cpp: the output rows of each band of a block whose depthwise convolution is `d`
  /// (`expands`: the block has an expansion, whose rows the band holds too) ...
  int inverted_residual_band_rows(const Conv2dDesc& d, bool expands, const Shape& in, const Shape& out,
                                  BandHeight height) const;
  /// ... the block in such bands, shared by the team (`expand` null: no expansion) ...
  void run_inverted_residual_bands(const InvertedResidualDesc& desc, const blas::ConvPlan* expand,
                                   const blas::ConvPlan* project, const Variable& input, const Variable* residual,
                                   Variable& output, BandHeight height);
  /// ... and one band of output rows [r0, r1) of image n of it, by one member; a band of a whole image runs the
  /// depthwise convolution by `channel_blocks` (a depthwise_channel_blocks plan at one image's shape) where given.
  void inverted_residual_band(const InvertedResidualDesc& desc, const blas::ConvPlan* expand,
                              const blas::ConvPlan* project, const blas::ConvPlan* channel_blocks,
                              const Variable& input, const Variable* residual, Variable& output, int n, int r0, int r1,
                              blas::BandBuffers& buffers);
  /// Defined in inverted_residual.cpp: a block with a squeeze-and-excitation.
  void excited_inverted_residual(const InvertedResidualDesc& desc, const Variable& input, const Variable* residual,
                                 Variable& output);
  /// Defined in inverted_residual.cpp: the members that share each image of a batch of `input` in channel blocks.
  int channel_block_members(const Shape& input) const;
  /// ... the block planned in channel blocks (channel_block_residual.h) for one image of `input` and those members,
  /// made at the first call and kept in plans_ (drop_channel_block_plan drops it) ...
  const blas::ChannelBlockResidualPlan& channel_block_plan(const InvertedResidualDesc& desc, const Shape& input);
  void drop_channel_block_plan(const InvertedResidualDesc& desc, const Shape& input);
  /// ... and the block by it, the batch's images shared among the team, one member's each.
  void run_channel_block_residual(const blas::ChannelBlockResidualPlan& plan, const Variable& input,
                                  const Variable* residual, Variable& output);
  /// A pointwise_batch plan on the channel concatenation of `inputs` (one input: a plain convolution), with the
  /// per-input-channel `affine` (or null) applied while B is packed, and `residual` (or null) added before
  /// `activation`.
  /// A channels_in_lanes plan into output, the residual (output's shape, or null) added before the activation.
  void run_channels_in_lanes(const blas::ConvPlan& plan, const Variable& input, const Variable* residual,
                             Activation activation, Variable& output);
  void run_pointwise_batch(const blas::ConvPlan& plan, std::span<const Variable* const> inputs,
                           const blas::InputAffine* affine, const Variable* residual, Activation activation,
                           Variable& output);
  /// Defined in strided_pointwise.cpp: a 1x1 convolution of stride > 1 (no padding) runs as the pointwise
  /// convolution pointwise_of(desc) of subsampled_input(desc, input), the input's every stride-th pixel (a view of
  /// a scratch tensor, valid until the next call).
  static bool is_strided_pointwise(const Conv2dDesc& desc);
  static Conv2dDesc pointwise_of(const Conv2dDesc& desc);
  const Variable& subsampled_input(const Conv2dDesc& desc, const Variable& input);
  /// A depthwise plan: the planes shared among the team by a queue.
  void run_few_channels(const blas::ConvPlan& plan, const Variable& input, Variable& output);
  /// The same followed by `pool`, in bands of pooled rows that pool their convolution rows from the cache
  /// (few_channels_conv_pooled): ResNet's stem output, 64 x 112 x 112 (3.2 MB an image), never goes through memory.
  void run_few_channels_pooled(const blas::ConvPlan& plan, const Pool2dDesc& pool, const Variable& input,
                               const Shape& conv_output, Variable& output);
  void run_depthwise(const blas::ConvPlan& plan, const Variable& input, const Variable& weights, const Variable* bias,
                     Variable& output);

  /// A squeeze-and-excitation's per-image vectors: the channel means, the squeezed values, the gates ((N, C),
  /// (N, S), (N, C), row-major).
  struct SqueezeExciteScratch {
    std::vector<float> means;
    std::vector<float> squeezed;
    std::vector<float> gates;
  };
  static SqueezeExciteScratch squeeze_excite_scratch(const SqueezeExciteDesc& desc, const Shape& input);
  /// Defined in squeeze_excite_conv2d.cpp: squeeze_excite_conv2d where `plan` is a pointwise packed GEMM reading
  /// its input planes in place, by `team` members, each image's pixels in `chunks` pieces. The gates scale the
  /// projection's weights, once per image (C_out x C values), instead of the input (C x H x W values, a copy
  /// written and read back).
  void squeeze_excite_gated_weights(const blas::ConvPlan& plan, int team, int chunks, const SqueezeExciteDesc& excite,
                                    const SqueezeExciteWeights& excite_weights, const Conv2dDesc& conv,
                                    const Variable& input, const Variable* residual, Variable& output);
  /// The team that computes a block's gates.
  int squeeze_excite_team(const Variable& input, const SqueezeExciteWeights& weights) const;
  /// Defined in squeeze_excite.cpp: scratch.gates of `input`, by the whole team (each member calls it; it returns
  /// after the team's barrier). OpenBLAS must be single-threaded (keep_openblas_single_threaded).
  static void squeeze_excite_gates(const blas::TeamMember& member, const SqueezeExciteDesc& desc, const Variable& input,
                                   const SqueezeExciteWeights& weights, SqueezeExciteScratch& scratch);

  /// body(i) for i in [0, total), split into contiguous shares among `threads` members of the team.
  template <typename Body>
  void parallel_for(int threads, std::size_t total, const Body& body) {
    team_->run(threads, [&](const blas::TeamMember& member) {
      const blas::TeamMember::Range mine = member.share(total);
      for (std::size_t i = mine.begin; i < mine.end; ++i) body(i);
    });
  }

  int threads_ = 1;
  BlasConvolution convolution_ = BlasConvolution::automatic;
  bool pin_threads_ = true;
  std::unique_ptr<blas::ThreadTeam> team_;
  std::vector<float> columns_;
  Variable conv_output_scratch_;
  Variable preactivated_input_;  // preactivated_conv2d's concatenated, normalised input where it is not fused
  Variable excited_input_;       // squeeze_excite_conv2d's scaled input where it is not fused
  Variable block_expanded_;      // inverted_residual's intermediates when it runs as its three convolutions
  Variable block_filtered_;
  Variable block_excite_input_;  // an excited block's depthwise output, when it runs as the block and the excitation
  Variable block_image_input_;   // ... and one image's input and output, when it runs them image by image
  Variable block_image_output_;
  Variable subsampled_input_;  // strided_pointwise.cpp's scratch, and the view of it in use
  Variable subsampled_view_;
  std::unique_ptr<blas::ConvPlanCache> plans_;
  std::shared_ptr<blas::TuningTable> tuning_;  // the measured choices, shared by the backends of the same file
  cpu::CpuProfiler profiler_;
};

}  // namespace corgy
