// The blas backend's per-instruction-set kernels, each variant this CPU can run (not only the widest, which the
// layer harness covers through the backend): every variant against the scalar definitions it must agree with.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "corgy/backend.h"
#include "corgy/backends/blas/activation_kernels.h"
#include "corgy/backends/blas/depthwise_conv.h"
#include "corgy/backends/blas/few_channels_conv.h"
#include "corgy/backends/blas/gemm_kernels.h"
#include "corgy/backends/blas/packed_gemm.h"
#include "corgy/backends/blas/unary_kernels.h"
#include "corgy/backends/cpu/cpu_features.h"
#include "corgy/tensor_math.h"
#include "test_util.h"

namespace corgy::testing {
namespace {

std::vector<Activation> every_activation() {
  return {Activation::none(),
          Activation::relu(),
          Activation::leaky_relu(0.1f),
          Activation::sigmoid(),
          Activation::tanh(),
          Activation::mish(),
          Activation::swish(),
          Activation::clipped_relu(6.0f),
          Activation::clipped_relu(1.0f),
          Activation::hard_swish(),
          Activation::gelu()};
}

/// -120 .. 120 in steps of 1/64 (where the exponential activations bend and saturate), and values around the
/// thresholds of exp's clamp and mish's cut-off.
std::vector<float> activation_inputs() {
  std::vector<float> values;
  for (int i = -120 * 64; i <= 120 * 64; ++i) values.push_back(static_cast<float>(i) / 64.0f);
  for (const float x : {1e-30f, 1e-6f, 19.99f, 20.01f, 43.9f, 44.1f, 86.9f, 87.1f, 87.9f, 88.1f, 1e30f}) {
    values.push_back(x);
    values.push_back(-x);
  }
  return values;
}

TEST(CpuKernels, BiasActivationAgreesWithApplyActivation) {
  const std::vector<float> inputs = activation_inputs();
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::BiasActivationKernel kernel = blas::activation_kernels(isa).bias_activate;
    for (const Activation activation : every_activation()) {
      for (const float bias : {0.0f, 0.75f}) {
        std::vector<float> got(inputs.size());
        kernel(inputs.data(), got.data(), inputs.size(), bias, activation);
        double worst = 0.0;
        float worst_x = 0.0f;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          const double want = apply_activation(activation, inputs[i] + bias);
          // Relative to the value, with an absolute floor for results near zero (tanh and swish cross it, where
          // e^x's relative error of ~1e-7 becomes an absolute one).
          const double error = std::abs(got[i] - want) / std::max(1.0, std::abs(want));
          if (!(error <= worst)) {
            worst = error;
            worst_x = inputs[i];
          }
        }
        EXPECT_LE(worst, 1e-6) << isa_name(isa) << " " << activation.str() << " bias " << bias
                               << ": worst at x = " << worst_x;
      }
    }
  }
}

TEST(CpuKernels, BiasActivationWritesExactlyCountValuesInPlace) {
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::BiasActivationKernel kernel = blas::activation_kernels(isa).bias_activate;
    for (std::size_t count = 0; count <= 40; ++count) {
      std::vector<float> values(count + 1);
      for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 20.0f;
      kernel(values.data(), values.data(), count, 1.0f, Activation::relu());
      for (std::size_t i = 0; i < count; ++i) {
        EXPECT_EQ(values[i], std::max(0.0f, static_cast<float>(i) - 19.0f)) << isa_name(isa) << " count " << count;
      }
      EXPECT_EQ(values[count], static_cast<float>(count) - 20.0f) << isa_name(isa) << ": wrote past count " << count;
    }
  }
}

TEST(CpuKernels, AddActivationAddsBeforeActivating) {
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::AddActivationKernel kernel = blas::activation_kernels(isa).add_activate;
    for (const Activation activation : every_activation()) {
      for (std::size_t count = 0; count <= 40; ++count) {
        std::vector<float> source(count + 1), addend(count + 1), target(count + 1, 7.0f);
        for (std::size_t i = 0; i <= count; ++i) {
          source[i] = static_cast<float>(i) * 0.37f - 6.0f;
          addend[i] = 2.5f - static_cast<float>(i) * 0.11f;
        }
        kernel(source.data(), addend.data(), target.data(), count, activation);
        for (std::size_t i = 0; i < count; ++i) {
          const float want = apply_activation(activation, source[i] + addend[i]);
          EXPECT_NEAR(target[i], want, 1e-6 * std::max(1.0f, std::abs(want)))
              << isa_name(isa) << " " << activation.str() << " count " << count << " i " << i;
        }
        EXPECT_EQ(target[count], 7.0f) << isa_name(isa) << ": wrote past count " << count;
      }
    }
  }
}

/// erf and the GELUs against double-precision definitions (std::erf, std::tanh in double) on every instruction set,
/// over activation_inputs() (-120 .. 120, +-1e-30 .. +-1e30) and the extremes; an odd count leaves a partial register.
TEST(CpuKernels, UnaryKernelsAgreeWithTheirDefinitions) {
  std::vector<float> inputs = activation_inputs();
  for (const float x : {0.0f, -0.0f, 0.4999f, 0.5001f, -0.4999f, -0.5001f, 3.0e-4f, -3.0e-4f}) inputs.push_back(x);
  inputs.push_back(0.25f);  // an odd count
  const auto erf = [](double x) { return std::erf(x); };
  // 1 + erf(x / sqrt 2) as erfc(-x / sqrt 2): in double the sum cancels to 0 below x = -8.
  const auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  const auto gelu_tanh = [](double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  };
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::UnaryKernelSet& kernels = blas::unary_kernels(isa);
    const std::vector<std::pair<const char*, std::pair<blas::UnaryKernel, double (*)(double)>>> cases = {
        {"erf", {kernels.erf, +erf}}, {"gelu", {kernels.gelu, +gelu}}, {"gelu_tanh", {kernels.gelu_tanh, +gelu_tanh}}};
    for (const auto& [name, functions] : cases) {
      std::vector<float> got(inputs.size() + 1, 7.0f);  // one guard value past the end
      functions.first(inputs.data(), got.data(), inputs.size());
      double worst = 0.0;
      float worst_x = 0.0f;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const double want = functions.second(inputs[i]);
        const double error = std::abs(got[i] - want) / std::max(1.0, std::abs(want));
        if (!(error <= worst)) {
          worst = error;
          worst_x = inputs[i];
        }
      }
      EXPECT_LE(worst, 5e-7) << isa_name(isa) << " " << name << " at x = " << worst_x;
      EXPECT_EQ(got.back(), 7.0f) << isa_name(isa) << " " << name << " wrote past count";
    }
    // Small arguments keep their relative precision (erf's Taylor branch, GELU's tail for negative x).
    const std::vector<float> small = {1e-6f, -1e-6f, 0.3f, -6.0f, -9.0f};
    std::vector<float> erf_got(small.size()), gelu_got(small.size());
    kernels.erf(small.data(), erf_got.data(), small.size());
    kernels.gelu(small.data(), gelu_got.data(), small.size());
    for (std::size_t i = 0; i < small.size(); ++i) {
      if (std::abs(small[i]) < 1.0f) {
        EXPECT_NEAR(erf_got[i], erf(small[i]), 1e-6 * std::abs(erf(small[i]))) << isa_name(isa) << " x " << small[i];
      } else {
        EXPECT_NEAR(gelu_got[i], gelu(small[i]), 1e-5 * std::abs(gelu(small[i]))) << isa_name(isa) << " x " << small[i];
      }
    }
  }
}

TEST(CpuKernels, TapsMicroKernelsAgreeWithTheDefinition) {
  // Every tile of every instruction set this CPU has, reading A in place (MicroKernelTaps) at steps 1 and 2 from
  // scattered offsets, overwriting and accumulating: c[i][j] (+)= sum over k of a[offsets[k] + i * step] * b[k][j].
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> a(4096);
  for (float& x : a) x = value(random);
  const int depth = 37;
  std::vector<std::int32_t> offsets(depth);
  for (std::int32_t& offset : offsets) offset = static_cast<std::int32_t>(random() % 3000);
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::GemmKernelSet& set = blas::gemm_kernels(isa);
    std::vector<blas::GemmMicroKernel> tiles;
    for (const blas::GemmMicroKernel& extra : set.kernels) {
      if (extra.run) tiles.push_back(extra);
    }
    for (const blas::GemmMicroKernel& extra : {set.seven_rows, set.fourteen_rows, set.fourteen_rows_narrow}) {
      if (extra.run) tiles.push_back(extra);
    }
    for (const blas::GemmMicroKernel& tile : tiles) {
      std::vector<float> b(static_cast<std::size_t>(depth) * tile.nr);
      for (float& x : b) x = value(random);
      for (const int step : {1, 2}) {
        ASSERT_NE(tile.run_taps[step - 1], nullptr) << tile.name;
        for (const bool accumulate : {false, true}) {
          const std::size_t ldc = tile.nr + 5;
          std::vector<float> c(tile.mr * ldc, 0.5f);
          tile.run_taps[step - 1](depth, a.data(), offsets.data(), b.data(), c.data(), ldc, accumulate);
          for (int i = 0; i < tile.mr; ++i) {
            for (int j = 0; j < tile.nr; ++j) {
              double expected = accumulate ? 0.5 : 0.0;
              for (int k = 0; k < depth; ++k) {
                expected +=
                    static_cast<double>(a[offsets[k] + i * step]) * b[static_cast<std::size_t>(k) * tile.nr + j];
              }
              ASSERT_NEAR(c[i * ldc + j], expected, 1e-4)
                  << tile.name << " step " << step << (accumulate ? " accumulating" : "") << " at " << i << ", " << j;
            }
            EXPECT_EQ(c[i * ldc + tile.nr], 0.5f) << tile.name << ": wrote past its tile";
          }
        }
      }
    }
  }
}

TEST(CpuKernels, PackedGemmComputesTheLastColumnsInNarrowerTiles) {
  // Every tile of every instruction set this CPU has, over column counts that leave every remainder a narrower tile
  // takes (and none): C = relu(A x B + bias) by packed_gemm_columns (C's columns past B's untouched) and, over
  // images of 37 pixels whose tiles cross from one image into the next, by packed_gemm_image_columns.
  std::mt19937 random(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const int depth = 29;
  const float untouched = 7.0f;
  for (const CpuIsa isa : isas_of_this_cpu()) {
    for (const blas::GemmMicroKernel& kernel : blas::gemm_kernels(isa).kernels) {
      if (!kernel.run) continue;
      const int lanes = isa == CpuIsa::avx512 ? 16 : isa == CpuIsa::avx2 ? 8 : 4;
      const int rows = kernel.mr + 3;
      std::vector<float> a(static_cast<std::size_t>(rows) * depth);
      std::vector<float> bias(rows);
      for (float& x : a) x = value(random);
      for (float& x : bias) x = value(random);
      const blas::PackedA packed(a.data(), rows, depth, depth, bias.data(), kernel.mr);
      for (const int columns : {3, kernel.nr, kernel.nr + 1, kernel.nr + lanes - 1, kernel.nr + lanes,
                                kernel.nr + lanes + 3, 2 * kernel.nr - 1, 3 * 37}) {
        const int last = columns % kernel.nr;
        if (last != 0 && last <= kernel.nr - lanes) {
          const std::optional<blas::GemmMicroKernel> tail = blas::narrower_tile(kernel, last);
          ASSERT_TRUE(tail.has_value()) << kernel.name << ", " << last << " columns";
          EXPECT_EQ(tail->nr, (last + lanes - 1) / lanes * lanes) << kernel.name;
        }
        const std::size_t ldb = columns + 7;
        std::vector<float> b(depth * ldb);
        for (float& x : b) x = value(random);
        const auto expected = [&](int i, int j) {
          double sum = bias[i];
          for (int k = 0; k < depth; ++k) sum += static_cast<double>(a[i * depth + k]) * b[k * ldb + j];
          return std::max(sum, 0.0);
        };
        const blas::MatrixB matrix(b.data(), depth, columns, ldb);
        std::vector<float> scratch;
        const std::size_t ldc = columns + 9;
        std::vector<float> c(rows * ldc, untouched);
        blas::packed_gemm_columns(kernel, packed, matrix, 0, columns, c.data(), ldc, Activation::relu(), scratch);
        for (int i = 0; i < rows; ++i) {
          for (int j = 0; j < columns; ++j) {
            ASSERT_NEAR(c[i * ldc + j], expected(i, j), 1e-4)
                << kernel.name << ", " << columns << " columns at " << i << ", " << j;
          }
          for (std::size_t j = columns; j < ldc; ++j) {
            ASSERT_EQ(c[i * ldc + j], untouched) << kernel.name << ", " << columns << " columns: wrote column " << j;
          }
        }
        if (columns % 37 != 0) continue;
        // Images of 37 pixels, each `rows` channels, 5 floats apart: C's column j is pixel j % 37 of image j / 37.
        const int images = columns / 37;
        const std::size_t image_stride = static_cast<std::size_t>(rows) * 37 + 5;
        std::vector<float> planes(images * image_stride, untouched);
        blas::packed_gemm_image_columns(kernel, packed, 0, packed.panels(), matrix, 0, columns, planes.data(),
                                        {37, image_stride, nullptr}, Activation::relu(), scratch);
        for (int j = 0; j < columns; ++j) {
          for (int i = 0; i < rows; ++i) {
            ASSERT_NEAR(planes[j / 37 * image_stride + i * 37 + j % 37], expected(i, j), 1e-4)
                << kernel.name << ", images: column " << j << ", row " << i;
          }
        }
        for (int n = 0; n < images; ++n) {
          for (std::size_t f = static_cast<std::size_t>(rows) * 37; f < image_stride; ++f) {
            ASSERT_EQ(planes[n * image_stride + f], untouched) << kernel.name << ": wrote past image " << n;
          }
        }
      }
    }
  }
}

TEST(CpuKernels, Im2colRowPackingAgreesWithTheDefinition) {
  // One plane of 9 x 37; rows of the column matrix at strides 1-3 and offsets reaching past every edge, written from
  // several first pixels and counts into panels of nr columns.
  const int height = 9, width = 37;
  std::vector<float> plane(static_cast<std::size_t>(height) * width);
  for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = static_cast<float>(i) + 1.0f;
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::Im2colRowPacker pack = blas::gemm_kernels(isa).pack_im2col_row;
    for (const int stride : {1, 2, 3}) {
      for (const int y_offset : {-2, 0, 3}) {
        for (const int x_offset : {-3, -1, 0, 2, 5}) {
          const int out_w = (width - 1) / stride + 1;
          const blas::Im2colRow row{plane.data(), height, width, y_offset, x_offset, stride, out_w};
          for (const int pixel : {0, 5, out_w - 1}) {
            const int count = 3 * out_w - pixel;
            const int nr = 16;
            const std::size_t panel_stride = 64;
            std::vector<float> out(static_cast<std::size_t>((count + nr - 1) / nr) * panel_stride, -7.0f);
            pack(row, pixel, count, nr, panel_stride, out.data());
            for (int j = 0; j < count; ++j) {
              const int p = pixel + j;
              const int y = p / out_w * stride + y_offset;
              const int x = p % out_w * stride + x_offset;
              const float want = y >= 0 && y < height && x >= 0 && x < width ? plane[y * width + x] : 0.0f;
              ASSERT_EQ(out[(j / nr) * panel_stride + j % nr], want)
                  << isa_name(isa) << " stride " << stride << " offsets " << y_offset << ", " << x_offset << " pixel "
                  << pixel << " j " << j;
            }
            EXPECT_EQ(out[((count - 1) / nr) * panel_stride + nr], -7.0f) << "wrote past a panel";
          }
        }
      }
    }
  }
}

struct DepthwiseCase {
  int kernel, stride, dilation, padding, in_h, in_w;
};

/// The plane through a double-precision loop over taps: the definition of a depthwise convolution.
std::vector<float> depthwise_reference(const DepthwiseCase& c, const std::vector<float>& input,
                                       const std::vector<float>& weights, float bias, Activation activation) {
  const int out_h = (c.in_h + 2 * c.padding - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
  const int out_w = (c.in_w + 2 * c.padding - c.dilation * (c.kernel - 1) - 1) / c.stride + 1;
  std::vector<float> output(static_cast<std::size_t>(out_h) * out_w);
  for (int oy = 0; oy < out_h; ++oy) {
    for (int ox = 0; ox < out_w; ++ox) {
      double sum = bias;
      for (int ky = 0; ky < c.kernel; ++ky) {
        for (int kx = 0; kx < c.kernel; ++kx) {
          const int y = oy * c.stride + ky * c.dilation - c.padding;
          const int x = ox * c.stride + kx * c.dilation - c.padding;
          if (y >= 0 && y < c.in_h && x >= 0 && x < c.in_w) {
            sum += static_cast<double>(weights[ky * c.kernel + kx]) * input[static_cast<std::size_t>(y) * c.in_w + x];
          }
        }
      }
      output[static_cast<std::size_t>(oy) * out_w + ox] = apply_activation(activation, static_cast<float>(sum));
    }
  }
  return output;
}

TEST(CpuKernels, DepthwiseAgreesWithTheDefinition) {
  // Kernel sizes of MobileNet / EfficientNet / ConvNeXt, strides 1-3, dilation, padding from none to more than the
  // kernel reaches, and planes from 1 x 1 up, wide and tall, of sizes that are not multiples of a register.
  const std::vector<DepthwiseCase> cases = {
      {3, 1, 1, 1, 7, 7},   {3, 1, 1, 1, 112, 112}, {3, 2, 1, 1, 112, 112}, {3, 2, 1, 1, 7, 7},    {5, 1, 1, 2, 14, 14},
      {5, 2, 1, 2, 28, 28}, {5, 2, 1, 2, 15, 13},   {7, 1, 1, 3, 14, 14},   {3, 1, 2, 2, 17, 9},   {3, 2, 2, 2, 20, 21},
      {3, 3, 1, 0, 10, 11}, {3, 1, 1, 0, 3, 3},     {3, 1, 1, 1, 1, 1},     {5, 1, 1, 4, 2, 3},    {3, 1, 1, 1, 3, 40},
      {1, 1, 1, 0, 5, 6},   {1, 2, 1, 0, 9, 9},     {3, 1, 1, 1, 8, 13},    {11, 1, 1, 5, 12, 12}, {3, 2, 3, 3, 19, 23},
      {5, 2, 1, 2, 57, 55}, {3, 2, 1, 1, 29, 30},   {5, 1, 1, 2, 6, 33},    {3, 1, 1, 1, 2, 12},   {3, 2, 1, 0, 27, 26},
      {5, 2, 1, 1, 30, 70}, {3, 2, 1, 1, 2, 64},    {5, 2, 1, 2, 3, 100},   {3, 2, 1, 2, 26, 33}};
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  // Every way of computing a plane on every case (each path falls back where it does not apply).
  std::vector<std::pair<CpuIsa, blas::DepthwisePath>> kernels;
  for (const CpuIsa isa : isas_of_this_cpu()) {
    for (const blas::DepthwisePath path : {blas::DepthwisePath::automatic, blas::DepthwisePath::extended_rows,
                                           blas::DepthwisePath::row_blocks, blas::DepthwisePath::direct_blocks}) {
      kernels.emplace_back(isa, path);
    }
  }
  for (const auto& [isa, path] : kernels) {
    const blas::DepthwiseKernel kernel = blas::depthwise_kernel(isa, path);
    const int path_name = static_cast<int>(path);
    for (const DepthwiseCase& c : cases) {
      for (const Activation activation : {Activation::none(), Activation::relu6(), Activation::swish()}) {
        const blas::DepthwiseGeometry geometry =
            blas::depthwise_geometry(c.kernel, c.stride, c.dilation, c.padding, c.in_h, c.in_w);
        std::vector<float> input(static_cast<std::size_t>(c.in_h) * c.in_w);
        std::vector<float> weights(static_cast<std::size_t>(c.kernel) * c.kernel);
        for (float& x : input) x = value(random);
        for (float& w : weights) w = value(random);
        const float bias = value(random);
        const std::vector<float> want = depthwise_reference(c, input, weights, bias, activation);
        ASSERT_EQ(want.size(), static_cast<std::size_t>(geometry.out_h) * geometry.out_w);
        std::vector<float> buffer;
        blas::prepare_depthwise_buffer(geometry, buffer);
        std::vector<float> got(want.size() + 1, 12345.0f);  // one more: nothing may be written past the plane
        kernel(geometry, input.data(), weights.data(), bias, activation, got.data(), buffer.data());
        double worst = 0.0;
        for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double{got[i]} - want[i]));
        EXPECT_LE(worst, 1e-5) << isa_name(isa) << " path " << path_name << " kernel " << c.kernel << " stride "
                               << c.stride << " dilation " << c.dilation << " padding " << c.padding << " plane "
                               << c.in_h << " x " << c.in_w << " " << activation.str();
        EXPECT_EQ(got.back(), 12345.0f) << isa_name(isa) << " path " << path_name << ": wrote past the plane";
      }
    }
  }
}

}  // namespace
TEST(CpuKernels, DepthwiseChannelBlocksAgreeWithTheDefinition) {
  // Kernels 3, 5 and 7 at strides 1 and 2 on planes from 1 x 1 up (odd, wide, tall), channel counts below, at and
  // past a register (so that blocks run from one image into the next), and plane ranges that start and end inside a
  // block.
  struct Case {
    DepthwiseCase conv;
    int images, channels;
    std::size_t first, end;
  };
  const std::vector<Case> cases = {
      {{3, 1, 1, 1, 7, 7}, 2, 20, 0, 40},    {{3, 2, 1, 1, 14, 14}, 3, 24, 5, 67}, {{5, 1, 1, 2, 7, 7}, 1, 37, 0, 37},
      {{5, 2, 1, 2, 14, 14}, 2, 17, 3, 34},  {{5, 2, 1, 2, 15, 13}, 1, 9, 0, 9},   {{7, 1, 1, 3, 9, 11}, 2, 5, 1, 10},
      {{7, 2, 1, 3, 12, 10}, 1, 33, 0, 33},  {{3, 1, 1, 1, 1, 1}, 3, 7, 0, 21},    {{3, 1, 1, 0, 3, 5}, 1, 16, 0, 16},
      {{5, 1, 1, 4, 2, 3}, 2, 3, 0, 6},      {{3, 2, 1, 1, 29, 30}, 1, 18, 2, 18}, {{3, 1, 1, 1, 3, 40}, 1, 4, 0, 4},
      {{5, 1, 1, 2, 28, 28}, 1, 32, 16, 32}, {{3, 2, 1, 0, 9, 9}, 2, 11, 0, 22},   {{3, 1, 1, 1, 2, 12}, 4, 3, 2, 11}};
  std::mt19937 random(9);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::DepthwiseChannelBlockKernel kernel = blas::depthwise_channel_block_kernel(isa);
    for (const Case& test : cases) {
      const DepthwiseCase& c = test.conv;
      ASSERT_TRUE(blas::depthwise_channel_blocks_apply(c.kernel, c.stride, c.dilation));
      const blas::DepthwiseGeometry geometry =
          blas::depthwise_geometry(c.kernel, c.stride, c.dilation, c.padding, c.in_h, c.in_w);
      const std::size_t planes = static_cast<std::size_t>(test.images) * test.channels;
      const std::size_t in_plane = static_cast<std::size_t>(c.in_h) * c.in_w;
      const std::size_t out_plane = static_cast<std::size_t>(geometry.out_h) * geometry.out_w;
      const int taps = c.kernel * c.kernel;
      std::vector<float> input(planes * in_plane);
      std::vector<float> weights(static_cast<std::size_t>(test.channels) * taps);
      std::vector<float> bias(test.channels);
      for (float& x : input) x = value(random);
      for (float& w : weights) w = value(random);
      for (float& b : bias) b = value(random);
      const std::vector<float> packed =
          blas::pack_depthwise_channel_weights(weights.data(), bias.data(), test.channels, taps);
      for (const Activation activation : {Activation::none(), Activation::relu6(), Activation::hard_swish()}) {
        std::vector<float> buffer;
        blas::prepare_depthwise_channel_buffer(geometry, buffer);
        // One more plane: nothing may be written outside planes [first, end).
        std::vector<float> got((planes + 1) * out_plane, 12345.0f);
        kernel(geometry, input.data(), test.first, test.end, test.channels, packed.data(), activation, got.data(),
               buffer.data());
        for (std::size_t p = 0; p <= planes; ++p) {
          const bool computed = p >= test.first && p < test.end;
          std::vector<float> want(out_plane, 12345.0f);
          if (computed) {
            const int channel = static_cast<int>(p % test.channels);
            const std::vector<float> plane_input(input.begin() + static_cast<std::ptrdiff_t>(p * in_plane),
                                                 input.begin() + static_cast<std::ptrdiff_t>((p + 1) * in_plane));
            const std::vector<float> plane_weights(weights.begin() + channel * taps,
                                                   weights.begin() + (channel + 1) * taps);
            want = depthwise_reference(c, plane_input, plane_weights, bias[channel], activation);
          }
          double worst = 0.0;
          for (std::size_t i = 0; i < out_plane; ++i) {
            worst = std::max(worst, std::abs(double{got[p * out_plane + i]} - want[i]));
          }
          EXPECT_LE(worst, 1e-5) << isa_name(isa) << " kernel " << c.kernel << " stride " << c.stride << " padding "
                                 << c.padding << " plane " << c.in_h << " x " << c.in_w << " channels " << test.channels
                                 << " plane " << p << (computed ? "" : " (not to be written)") << " "
                                 << activation.str();
        }
      }
    }
  }
}

TEST(CpuKernels, FewChannelsAgreeWithTheNaiveBackend) {
  // One image as one band (the backend's bands are the layer harness's): stems of 1 to 4 input channels, output
  // channels below, at and past a block of each instruction set, strides 1 to 4, dilation, padding past the window.
  const std::vector<std::pair<Shape, Conv2dDesc>> cases = {
      {{1, 3, 23, 19}, {.in_channels = 3, .out_channels = 32, .kernel = 3, .stride = 2, .padding = 1}},
      {{1, 3, 30, 30}, {.in_channels = 3, .out_channels = 7, .kernel = 7, .stride = 2, .padding = 3}},
      {{1, 1, 9, 40}, {.in_channels = 1, .out_channels = 9, .kernel = 3, .padding = 1}},
      {{1, 4, 16, 16}, {.in_channels = 4, .out_channels = 12, .kernel = 4, .stride = 4}},
      {{1, 2, 13, 11}, {.in_channels = 2, .out_channels = 5, .kernel = 3, .stride = 3, .padding = 4, .dilation = 2}},
      {{1, 3, 2, 3}, {.in_channels = 3, .out_channels = 17, .kernel = 5, .padding = 2}}};
  std::mt19937 random(11);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  const std::unique_ptr<Backend> naive = make_backend("naive");
  for (const CpuIsa isa : isas_of_this_cpu()) {
    const blas::FewChannelsKernel kernel = blas::few_channels_kernel(isa);
    for (auto [in, desc] : cases) {
      for (const Activation activation : {Activation::none(), Activation::relu6(), Activation::swish()}) {
        desc.activation = activation;
        const int taps = desc.kernel * desc.kernel;
        Variable input(in);
        Variable weights({desc.out_channels, desc.in_channels, desc.kernel, desc.kernel});
        Variable bias(Shape::vector(desc.out_channels));
        for (float& x : input.values()) x = value(random);
        for (float& w : weights.values()) w = value(random);
        for (float& b : bias.values()) b = value(random);
        const Shape out_shape{1, desc.out_channels, desc.output_size(in.h), desc.output_size(in.w)};
        Variable want(out_shape);
        naive->conv2d(desc, input, weights, &bias, want);

        const blas::DepthwiseGeometry geometry =
            blas::depthwise_geometry(desc.kernel, desc.stride, desc.dilation, desc.padding, in.h, in.w);
        const std::vector<float> packed = blas::pack_few_channels_weights(
            weights.data(), bias.data(), desc.out_channels, desc.in_channels, taps, kernel.channels);
        std::vector<float> buffer(blas::few_channels_buffer_floats(geometry, desc.in_channels));
        // One more on each side: the kernel writes its registers' lanes with masks, and nothing outside the output.
        std::vector<float> got(out_shape.count() + 2, 12345.0f);
        blas::FewChannelsBandArgs args;
        args.geometry = &geometry;
        args.input = input.data();
        args.input_plane = in.plane_count();
        args.in_channels = desc.in_channels;
        args.packed = packed.data();
        args.out_channels = desc.out_channels;
        args.activation = activation;
        args.output = got.data() + 1;
        args.output_plane = out_shape.plane_count();
        args.buffer = buffer.data();
        kernel.run(args);
        double worst = 0.0;
        for (std::size_t i = 0; i < out_shape.count(); ++i) {
          worst = std::max(worst, std::abs(double{got[i + 1]} - want.data()[i]));
        }
        EXPECT_LE(worst, 1e-5) << isa_name(isa) << " " << desc.in_channels << "->" << desc.out_channels << " kernel "
                               << desc.kernel << " stride " << desc.stride << " on " << in.str() << " "
                               << activation.str();
        EXPECT_EQ(got.front(), 12345.0f) << isa_name(isa) << ": wrote before the output";
        EXPECT_EQ(got.back(), 12345.0f) << isa_name(isa) << ": wrote past the output";
      }
    }
  }
}

}  // namespace corgy::testing
