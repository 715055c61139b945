#!/usr/bin/python3
"""The GPU's matrix-product ceilings, measured through PyTorch (cuBLAS) on the device tool's machine, for the '% of
peak' column of corgy's Vulkan profile (benchmarks/run.sh --gpu-machine): an 8192^3 fp32 product with TF32 off
(plain fp32 FMA units) and an fp16 one (tensor cores), each the median of 10 after 3 warm-ups, on random data.
Prints one JSON object."""

import json

import torch


def gflops(dtype, size=8192, repeat=10):
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(repeat + 3):
        begin.record()
        torch.mm(a, b)
        end.record()
        end.synchronize()
        if i >= 3:
            times.append(begin.elapsed_time(end))
    times.sort()
    return 2.0 * size ** 3 / (times[len(times) // 2] * 1e6)


print(json.dumps({"framework": "gpu-peak", "device": torch.cuda.get_device_name(),
                  "fp32_gflops": gflops(torch.float32), "fp16_gflops": gflops(torch.float16)}))
