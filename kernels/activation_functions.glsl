// The activations of corgy/activation.h, shared by the kernels that fuse one into their output.
// The numbers follow corgy::ActivationKind (checked by a static_assert in corgy/backends/vulkan/kernel_params.h).
const uint ACTIVATION_NONE = 0;
const uint ACTIVATION_RELU = 1;
const uint ACTIVATION_LEAKY_RELU = 2;
const uint ACTIVATION_SIGMOID = 3;
const uint ACTIVATION_TANH = 4;
const uint ACTIVATION_MISH = 5;
const uint ACTIVATION_SWISH = 6;
const uint ACTIVATION_CLIPPED_RELU = 7;  // min(max(x, 0), slope): ReLU6 with slope 6
const uint ACTIVATION_HARD_SWISH = 8;
const uint ACTIVATION_GELU = 9;  // exact: x (1 + erf(x / sqrt 2)) / 2

// tanh through exp(-2|x|), which cannot overflow: some drivers return NaN from tanh() for large |x|.
float stable_tanh(float x) {
  const float t = exp(-2.0 * abs(x));
  const float magnitude = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -magnitude : magnitude;
}

// With darknet's thresholds, as corgy::apply_activation.
float softplus(float x) {
  if (x > 20.0) return x;
  if (x < -20.0) return exp(x);
  return log(1.0 + exp(x));
}

// GLSL has no erf: Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7.
float erf_approx(float x) {
  const float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  const float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const float magnitude = 1.0 - poly * exp(-x * x);
  return x < 0.0 ? -magnitude : magnitude;
}

float gelu(float x) { return 0.5 * x * (1.0 + erf_approx(x * 0.70710678)); }

float activate(uint kind, float slope, float x) {
  switch (kind) {
    case ACTIVATION_RELU: return max(x, 0.0);
    case ACTIVATION_LEAKY_RELU: return x > 0.0 ? x : slope * x;
    case ACTIVATION_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case ACTIVATION_TANH: return stable_tanh(x);
    case ACTIVATION_MISH: return x * stable_tanh(softplus(x));
    case ACTIVATION_SWISH: return x / (1.0 + exp(-x));
    case ACTIVATION_CLIPPED_RELU: return clamp(x, 0.0, slope);
    case ACTIVATION_HARD_SWISH: return x * clamp(x * (1.0 / 6.0) + 0.5, 0.0, 1.0);
    case ACTIVATION_GELU: return gelu(x);
    default: return x;
  }
}
