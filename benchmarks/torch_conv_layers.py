"""cuDNN's time per convolution layer, for comparison with vulkan_conv_benchmark's per-layer table on the same GPU.

Runs on the device tool's GPU machine (PyTorch with CUDA; not a dependency of anything else): each 3x3 convolution
of Tiny YOLO v2-VOC (416 x 416, batch 64) and VGG-16 (224 x 224, batch 32), as PyTorch eager runs it, fp16 in
channels-last (as the zoo's fp16 cells compare against) and fp32 with TF32 off, cudnn.benchmark on. Two times per
layer, medians of CUDA-event timings after warm-up: the convolution alone, and the convolution with what eager
runs after it as separate kernels (batch norm, leaky ReLU or ReLU, and the layer's max pool), which corgy fuses into
the convolution's dispatch. vulkan_conv_benchmark's "auto fp16" column is the counterpart of the first. --models gemm
times large 1x1 convolutions at batch 32 (vulkan_conv_benchmark --layers gemm), each a plain GEMM, with TFLOP/s.

    python3 benchmarks/torch_conv_layers.py [--models yolo,vgg16,gemm] [--repeat 50]
"""

import argparse

import torch
import torch.nn.functional as F

# (in channels, out channels, input size, pool after: 0 none, 2 a 2x2/2 max pool, 1 darknet's 2x2/1 max pool)
LAYERS = {
    "yolo": (64, [(3, 16, 416, 2), (16, 32, 208, 2), (32, 64, 104, 2), (64, 128, 52, 2), (128, 256, 26, 2),
                  (256, 512, 13, 1), (512, 1024, 13, 0), (1024, 1024, 13, 0)]),
    "vgg16": (32, [(3, 64, 224, 0), (64, 64, 224, 2), (64, 128, 112, 0), (128, 128, 112, 2), (128, 256, 56, 0),
                   (256, 256, 56, 0), (256, 512, 28, 0), (512, 512, 28, 0), (512, 512, 14, 0)]),
    # 1x1 convolutions (a fifth element: the kernel size), vulkan_conv_benchmark's "gemm" shapes.
    "gemm": (32, [(1024, 1024, 32, 0, 1), (2048, 2048, 32, 0, 1), (256, 256, 56, 0, 1), (512, 512, 28, 0, 1)]),
}


def median_ms(function, repeat):
    for _ in range(10):
        function()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeat):
        start.record()
        function()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="yolo,vgg16")
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    for model in args.models.split(","):
        batch, layers = LAYERS[model]
        for dtype in (torch.float16, torch.float32):
            sums = [0.0, 0.0]
            for cin, cout, size, pool, *kernel in layers:
                kernel = kernel[0] if kernel else 3
                conv = torch.nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False).cuda().to(dtype)
                norm = torch.nn.BatchNorm2d(cout).cuda().to(dtype).eval()
                x = torch.randn(batch, cin, size, size, device="cuda", dtype=dtype)
                if dtype == torch.float16:
                    conv = conv.to(memory_format=torch.channels_last)
                    x = x.to(memory_format=torch.channels_last)

                def layer():
                    y = norm(conv(x))
                    y = F.leaky_relu(y, 0.1) if model == "yolo" else F.relu(y)
                    if pool == 2:
                        y = F.max_pool2d(y, 2, 2)
                    elif pool == 1:
                        y = F.max_pool2d(F.pad(y, (0, 1, 0, 1), mode="replicate"), 2, 1)
                    return y

                with torch.no_grad():
                    times = (median_ms(lambda: conv(x), args.repeat), median_ms(layer, args.repeat))
                sums = [s + t for s, t in zip(sums, times)]
                name = "fp16" if dtype == torch.float16 else "fp32"
                tflops = 2 * batch * size * size * cin * cout * kernel * kernel / times[0] / 1e9
                print(f"{model} b{batch} {name} {size}x{size} {cin}->{cout} k{kernel} pool {pool}: "
                      f"conv {times[0]:.3f} ms ({tflops:.0f} TFLOP/s), "
                      f"with norm, activation and pool {times[1]:.3f} ms")
            print(f"{model} b{batch} {name} sum: conv {sums[0]:.3f} ms, with the rest {sums[1]:.3f} ms")


if __name__ == "__main__":
    main()
