# Builds a small CNN, gives it weights, runs it on the OpenBLAS backend and reads the result.
import numpy as np

import corgy

model = corgy.Sequential()
conv = corgy.Conv2d(1, 2, kernel=3, padding=1, activation="relu")
model.add(conv)
model.add(corgy.MaxPool2d(2))
fc = corgy.Linear(2 * 4 * 4, 3)
model.add(fc)
model.add(corgy.Softmax())

# Weights start at zero. Conv2d takes OIHW (out, in, kh, kw) and Linear (out, in), as PyTorch stores them.
sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.float32)  # dark-to-bright edges
conv.set_weights(np.stack([sobel, -sobel])[:, None])                 # (2, 1, 3, 3): both edge directions
fc.set_weights(0.05 * (np.arange(3 * 32) % 5).reshape(3, 32))

model.set_backend("blas")  # "naive" is the single-threaded reference; set_backend("blas", 2) for 2 threads

image = corgy.empty((1, 1, 8, 8))  # (N, C, H, W) in corgy's page-aligned memory: read without a copy
image[0, 0, :, 4:] = 1.0           # bright right half
print(model.summary(image.shape), end="")

probabilities = model(image)  # (1, 3, 1, 1), a view of corgy's output: valid until the next forward
for c in range(3):
    print(f"class {c}: {probabilities[0, c, 0, 0]:.3f}")
