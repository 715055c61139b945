# Loads an ONNX model (a CNN exported from PyTorch), runs it on the OpenBLAS backend and prints its output.
import sys

import numpy as np

import corgy

if len(sys.argv) < 3:
    sys.exit("usage: onnx_example.py MODEL.onnx INPUT.npy")
model = corgy.load_onnx(sys.argv[1], backend="blas")  # raises corgy.Error for anything it cannot run
x = np.load(sys.argv[2])                                # float32 (N, C, H, W)
y = model(x)                                            # the first output, shaped as the graph declares it
print(f"{model.input_name} {x.shape} -> {model.output_names[0]} {y.shape}")
print("first values:", " ".join(f"{v:.4f}" for v in y.ravel()[:5]))
