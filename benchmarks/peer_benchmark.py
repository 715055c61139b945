#!/usr/bin/python3
"""Times what users would pick instead of corgy on the same network, weights and input, for benchmarks/run.sh.

Each peer first runs the input once and its outputs are compared with corgy's (model_benchmark --output): the
largest absolute difference over every head, divided by the largest magnitude of corgy's output. Above the
tolerance the peer is reported as disagreeing and not timed. Then, per thread count: warm-up forwards (at least
--warmup and --warmup-ms), --repeat timed forwards, end to end (NumPy input on the host -> outputs on the host).
One JSON object per thread count on stdout.

  peer_benchmark.py run --peer torch|torch-jit|opencv|darknet|torch-cuda|torch-cuda-jit|torch-cuda-graph|torch-cuda-fp16
                    --model CFG|mnist --weights W
                    --input x.npy --reference PREFIX [--threads 1 2] [--repeat 20] [--onnx mnist.onnx] [--signs-only]
  peer_benchmark.py export-onnx --model CFG|mnist|<a model of the ImageNet zoo, torch_models.py> --weights W --batch N
                    --out model.onnx

Peers: torch (eager), torch-jit (torch.jit.trace + torch.jit.freeze), opencv (cv2.dnn: readNetFromDarknet on the
same cfg and .weights; for MNIST, readNetFromONNX on the ONNX export), darknet (Debian's libdarknet, darknet cfgs
only, one thread), torch-cuda / torch-cuda-jit (fp32 on the GPU with TF32 off and cudnn.benchmark on; also
reports the GPU-only time between CUDA events), torch-cuda-graph (the same fp32 eager model captured in a CUDA graph:
each forward is one replay, launch overhead gone), torch-cuda-fp16 (the model in fp16 and channels-last, as cuDNN
is fastest on tensor cores; compared with corgy's fp16 outputs at the fp16 tolerance).
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TOLERANCE = 1e-3
# fp16 peers against corgy's fp16 outputs: both within ~1e-3 of fp32, the bound for fp16 is 2e-2.
FP16_TOLERANCE = 2e-2


def relative_error(outputs, reference_prefix):
    """Largest |peer - corgy| over every output, relative to corgy's largest magnitude; infinite when an output is
    missing, of another size, or not finite (NaN must not compare as agreement)."""
    worst = 0.0
    for k, output in enumerate(outputs):
        expected = np.load(f"{reference_prefix}.{k}.npy")
        output = np.asarray(output, np.float32)
        if output.size != expected.size or not (np.all(np.isfinite(output)) and np.all(np.isfinite(expected))):
            return float("inf")
        error = np.max(np.abs(output.reshape(expected.shape) - expected)) / max(np.max(np.abs(expected)), 1e-30)
        worst = max(worst, float(error))
    if os.path.exists(f"{reference_prefix}.{len(outputs)}.npy"):
        return float("inf")  # corgy has a head more than the peer returned
    return worst


def time_forwards(forward, warmup, warmup_ms, repeat, gpu_timer=None):
    # The first forward sets up (cuDNN's autotuning, a CUDA graph's capture); the warm-up time counts from its end,
    # as in corgy's model_benchmark.
    start = time.perf_counter()
    done = 0
    while done < warmup or (warmup_ms > 0 and done == 0) or (time.perf_counter() - start) * 1e3 < warmup_ms:
        forward()
        done += 1
        if done == 1:
            start = time.perf_counter()
    wall, gpu = [], []
    for _ in range(repeat):
        begin = time.perf_counter()
        forward()
        wall.append((time.perf_counter() - begin) * 1e3)
        if gpu_timer:
            gpu.append(gpu_timer())
    summary = {"warmups": done, "repeat": repeat, "median_ms": float(np.median(wall)), "min_ms": min(wall),
               "max_ms": max(wall)}
    if gpu:
        summary.update(gpu_median_ms=float(np.median(gpu)), gpu_min_ms=min(gpu), gpu_max_ms=max(gpu))
    return summary


def keep_signs_only(model):
    """Each convolution and linear weight becomes +-b with b = its layer's bound / sqrt(3), the variance of the seeded
    uniform values: one bit a weight, so that ResNet-50 compresses to a few MB for the GPU machine. The peers on the GPU
    machine build the same network with --signs-only, so that their outputs still agree with corgy's."""
    import torch

    with torch.no_grad():
        for tensor in model.state_dict().values():
            if tensor.dim() > 1 and tensor.is_floating_point():
                tensor.copy_(torch.sign(tensor) * (tensor.abs().max() / 3 ** 0.5))
    return model


class TorchPeer:
    def __init__(self, args, jit, cuda, graph=False, half=False):
        import torch
        from torch_models import load_model

        self.torch, self.cuda, self.graph, self.half = torch, cuda, graph, half
        self.version = f"PyTorch {torch.__version__}"
        model = load_model(args.model, args.weights)
        if args.signs_only:
            keep_signs_only(model)
        self.x = torch.from_numpy(np.load(args.input))
        if cuda:
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
            model = model.cuda()
            self.version += f", cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}"
            self.x_device = self.x.cuda()
            if half:
                model = model.half().to(memory_format=torch.channels_last)
                self.x_device = self.x_device.half().contiguous(memory_format=torch.channels_last)
            self.events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        if jit:
            with torch.inference_mode():
                model = torch.jit.freeze(torch.jit.trace(model, self.x_device if cuda else self.x))
        self.model = model
        if graph:
            # A static input buffer, warm-up on a side stream, then one capture: a forward is one replay.
            with torch.inference_mode():
                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(3):
                        model(self.x_device)
                torch.cuda.current_stream().wait_stream(stream)
                self.cuda_graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.cuda_graph):
                    self.graph_outputs = model(self.x_device)

    def set_threads(self, threads):
        if threads > 0:  # 0: the CUDA peers, which keep PyTorch's default
            self.torch.set_num_threads(threads)

    def run_device(self):
        if self.graph:
            self.cuda_graph.replay()
            return self.graph_outputs
        return self.model(self.x_device)

    def forward(self):
        with self.torch.inference_mode():
            if not self.cuda:
                return [y.numpy() for y in self.model(self.x)]
            if self.graph or self.half:
                self.x_device.copy_(self.x.to(self.x_device.dtype).to(memory_format=self.torch.channels_last)
                                    if self.half else self.x)
                return [y.float().cpu().numpy() for y in self.run_device()]
            return [y.cpu().numpy() for y in self.model(self.x.cuda())]

    def gpu_forward_ms(self):
        """The forward alone, input already on the GPU, between two CUDA events."""
        begin, end = self.events
        with self.torch.inference_mode():
            begin.record()
            self.run_device()
            end.record()
        end.synchronize()
        return begin.elapsed_time(end)


class OpenCvPeer:
    def __init__(self, args):
        import cv2

        from torch_models import read_cfg

        self.cv2 = cv2
        self.version = f"OpenCV {cv2.__version__}"
        if args.model == "mnist":
            self.net = cv2.dnn.readNetFromONNX(args.onnx)
            self.names = self.net.getUnconnectedOutLayersNames()
        else:
            self.net = cv2.dnn.readNetFromDarknet(args.model, args.weights)
            # OpenCV names darknet layers after their cfg index; a head's input is the layer before it.
            sections = read_cfg(args.model)[1:]
            heads = [i for i, (kind, _) in enumerate(sections) if kind in ("region", "yolo")]
            self.names = [self.layer_name(i - 1, sections[i - 1][0]) for i in heads]
        self.net.setPreferableBackend(cv2.dnn.DNN_BACKEND_OPENCV)
        self.net.setPreferableTarget(cv2.dnn.DNN_TARGET_CPU)
        self.x = np.load(args.input)

    @staticmethod
    def layer_name(index, kind):
        if kind not in ("convolutional", "conv"):
            raise ValueError(f"a head fed by [{kind}] is not handled")
        return f"conv_{index}"

    def set_threads(self, threads):
        self.cv2.setNumThreads(threads)

    def forward(self):
        self.net.setInput(self.x)
        return self.net.forward(self.names)


class DarknetPeer:
    """Debian's libdarknet (through ctypes, as tools/darknet_reference.py runs it): single-threaded, its own GEMM.
    Its network_predict returns the activated output of the last layer, so the raw head inputs of the check come from
    the cfg cut before each head; the timed forwards run the whole cfg."""

    def __init__(self, args):
        import ctypes
        import tempfile

        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
        import darknet_reference

        self.ctypes, self.reference = ctypes, darknet_reference
        self.lib = darknet_reference.open_darknet()
        self.version = "darknet (Debian libdarknet " + os.popen("dpkg-query -W -f='${Version}' darknet").read() + ")"
        self.x = np.ascontiguousarray(np.load(args.input))
        self.batch = self.x.shape[0]
        self.args, self.tempdir = args, tempfile.mkdtemp()
        with open(args.model) as cfg:
            self.sections = darknet_reference.read_sections(cfg.read())
        self.net = self.load(len(self.sections) - 1, "full")

    def load(self, layers, name):
        """The cfg's first `layers` layers, with [net] batch = the input's (darknet sizes its buffers by it when it
        parses the cfg; set_batch_network alone overruns them)."""
        sections = [(kind, dict(options)) for kind, options in self.sections]
        sections[0][1].update(batch=str(self.batch), subdivisions="1")
        net_options = sections[0][1]
        path = os.path.join(self.tempdir, f"{name}.cfg")
        with open(path, "w") as f:
            f.write(self.reference.cfg_text(sections, net_options["width"], net_options["height"], layers))
        return self.lib.load_network(path.encode(), self.args.weights.encode(), 0)

    def set_threads(self, threads):
        if threads != 1:
            raise ValueError("darknet runs on one thread")

    def predict(self, net):
        return self.lib.network_predict(net, self.x.ctypes.data_as(self.ctypes.POINTER(self.ctypes.c_float)))

    def forward(self):
        self.predict(self.net)

    def head_outputs(self):
        """The raw input of each head, from the cfg cut before it (for the check)."""
        heads = [i for i, (kind, _) in enumerate(self.sections[1:]) if kind in ("region", "yolo")]
        outputs = []
        for k, head in enumerate(heads):
            expected = np.load(f"{self.args.reference}.{k}.npy", mmap_mode="r")
            net = self.load(head, f"head{k}")
            out = self.predict(net)
            outputs.append(np.ctypeslib.as_array(out, shape=(expected.size,)).copy())
            self.lib.free_network(net)
        return outputs


def make_peer(args):
    if args.peer == "opencv":
        return OpenCvPeer(args)
    if args.peer == "darknet":
        return DarknetPeer(args)
    if args.peer in ("torch", "torch-jit", "torch-cuda", "torch-cuda-jit", "torch-cuda-graph", "torch-cuda-fp16"):
        return TorchPeer(args, jit=args.peer.endswith("jit"), cuda="cuda" in args.peer,
                         graph=args.peer == "torch-cuda-graph", half=args.peer == "torch-cuda-fp16")
    raise ValueError(f"unknown peer {args.peer}")


def run(args):
    peer = make_peer(args)
    batch = int(np.load(args.input, mmap_mode="r").shape[0])
    base = {"peer": args.peer, "model": args.model, "batch": batch, "version": peer.version}
    for threads in args.threads:
        peer.set_threads(threads)
        outputs = peer.head_outputs() if hasattr(peer, "head_outputs") else peer.forward()
        error = relative_error(outputs, args.reference)
        tolerance = FP16_TOLERANCE if args.peer.endswith("fp16") else TOLERANCE
        result = dict(base, threads=threads, max_rel_err=error, agrees=error <= tolerance, finite_checked=True)
        if result["agrees"]:
            gpu_timer = peer.gpu_forward_ms if getattr(peer, "cuda", False) else None
            result.update(time_forwards(peer.forward, args.warmup, args.warmup_ms, args.repeat, gpu_timer))
        # The process's peak resident memory (the interpreter and the framework included).
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result), flush=True)


def export_onnx(args):
    import torch

    from torch_models import DETECTOR_MODELS, load_model

    FIXED_BATCH_MODELS = set(DETECTOR_MODELS) | {"shufflenet_v2_x1_0", "fcn_resnet50", "lraspp_mobilenet_v3_large"}

    model = load_model(args.model, args.weights)
    if args.signs_only:
        keep_signs_only(model)
    example = torch.zeros((args.batch,) + model.input_shape)
    # A detector at a fixed batch, as Ultralytics exports by default: with a free batch its anchor grid
    # (torch.arange of the feature map's size) becomes Shape -> Range nodes on a tensor of unknown shape, which
    # corgy does not load; the same for ShuffleNet's channel shuffle and the segmentation heads' upsampling, which
    # read the batch or the size through Shape.
    dynamic_axes = {} if args.model in FIXED_BATCH_MODELS else {"input": {0: "batch"}}
    with torch.no_grad():
        # PRESERVE keeps batch norms as BatchNormalization nodes (eval mode: inference) instead of folding them into
        # the convolutions: the weights stay seeded_weights' repeating blocks, which compress for the GPU machine;
        # corgy and ONNX Runtime fold them when they load the model.
        torch.onnx.export(model, example, args.out, opset_version=13, input_names=["input"],
                          dynamic_axes=dynamic_axes, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.PRESERVE)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "export-onnx"])
    parser.add_argument("--peer")
    parser.add_argument("--model", required=True)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--input")
    parser.add_argument("--reference")
    parser.add_argument("--onnx")
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--warmup-ms", type=float, default=0)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--out")
    parser.add_argument("--signs-only", action="store_true",
                        help="weights of one bit each (export-onnx, and the torch peers that run such an export)")
    args = parser.parse_args()
    if args.command == "export-onnx":
        export_onnx(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
