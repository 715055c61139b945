// The columns of a convolution's implicit GEMM (conv2d_implicit_gemm.comp, conv2d_coopmat.comp and their
// split-K reduction): which output pixel of which image a GEMM column n computes.
//
// Without a fused pool, column n = (image * out_height + y) * out_width + x runs over every output pixel of
// every image, so one GEMM covers the whole batch. With a fused 2x2 stride-2 max pool, four consecutive
// columns are the four cells of one pooling window: n = ((image * pool_height + py) * pool_width + px) * 4 + q,
// and cell q is the convolution pixel (2 py + q / 2 - pool_pad_top, 2 px + q % 2 - pool_pad_left), which may
// fall on the pool's padding (then it takes no part in the maximum).

struct ConvGeometry {
  uint out_height;
  uint out_width;
  bool pool;
  uint pool_height;
  uint pool_width;
  uint pool_pad_top;
  uint pool_pad_left;
};

// The image of column n, and its convolution pixel (y, x); y = -1 when the column is a padded pool cell.
void conv_column(ConvGeometry g, uint n, out uint image, out int y, out int x) {
  if (!g.pool) {
    const uint plane = g.out_height * g.out_width;
    image = n / plane;
    const uint pixel = n - image * plane;
    y = int(pixel / g.out_width);
    x = int(pixel - uint(y) * g.out_width);
    return;
  }
  const uint window = n / 4;
  const uint cell = n % 4;
  const uint plane = g.pool_height * g.pool_width;
  image = window / plane;
  const uint pixel = window - image * plane;
  const uint py = pixel / g.pool_width;
  const uint px = pixel - py * g.pool_width;
  y = int(2 * py + cell / 2) - int(g.pool_pad_top);
  x = int(2 * px + cell % 2) - int(g.pool_pad_left);
  if (y < 0 || y >= int(g.out_height) || x < 0 || x >= int(g.out_width)) y = -1;
}

// Where the result of output channel `channel` lands for the column group starting at n (a multiple of 4 when
// pooling): the element index in the (N, C, H, W) output, pooled or not.
uint conv_output_index(ConvGeometry g, uint out_channels, uint channel, uint n) {
  if (g.pool) {
    const uint window = n / 4;
    const uint plane = g.pool_height * g.pool_width;
    const uint image = window / plane;
    return (image * out_channels + channel) * plane + (window - image * plane);
  }
  const uint plane = g.out_height * g.out_width;
  const uint image = n / plane;
  return (image * out_channels + channel) * plane + (n - image * plane);
}
