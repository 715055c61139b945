// Loads an ONNX model (a CNN exported from PyTorch), runs it on the OpenBLAS backend and prints its output.
#include <corgy/corgy.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: onnx_example MODEL.onnx INPUT.npy\n");
    return 2;
  }
  corgy::OnnxModel net = corgy::load_onnx(argv[1]);  // throws corgy::Error for anything it cannot run
  net.model.set_backend("blas");

  // The input prepared as the model expects it (here a .npy: float32, NCHW, scaled like the training data).
  const corgy::Variable input = corgy::load_npy(argv[2]);
  const corgy::Variable& output = net.forward(input);  // the first graph output; net.output("name") for others
  std::printf("%s: '%s' %s -> '%s' %s\n", argv[1], net.input.name.c_str(), input.shape().str().c_str(),
              net.outputs[0].name.c_str(), output.shape().str().c_str());
  for (int c = 0; c < output.shape().c && c < 5; ++c) std::printf("  %d: %.4f\n", c, output.at(0, c, 0, 0));
}
