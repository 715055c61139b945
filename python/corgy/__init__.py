"""corgy: small, readable CNN inference (im2col + GEMM on the CPU and Vulkan), from Python.

    import corgy
    model = corgy.load_onnx("resnet18.onnx")           # backend="auto": the best one here
    logits = model(x)                                  # x: float32 numpy (N, 3, 224, 224) -> (N, 1000)

See docs/python.md for the whole API: models from ONNX, darknet and corgy's own, networks built layer by layer,
zero-copy arrays (corgy.empty), DLPack, threads and errors. corgy.dask (imported on its own: `import corgy.dask`)
runs models over Dask arrays and bags on a `distributed` cluster (docs/serving.md).
"""

from ._corgy import (  # noqa: F401  (the public API; types in _corgy.pyi)
    Activation,
    ActivationLayer,
    Add,
    AvgPool2d,
    BatchNorm2d,
    ChannelShuffle,
    ChannelSlice,
    Concat,
    Conv2d,
    DarknetModel,
    Error,
    FaceDetector,
    Flatten,
    GlobalAvgPool2d,
    ImagePreprocess,
    Layer,
    LeakyReLU,
    Linear,
    MaxPool2d,
    Model,
    OnnxModel,
    PreprocessGeometry,
    PreprocessedImage,
    ReLU,
    Sequential,
    Sigmoid,
    SimpleLayer,
    Softmax,
    StyleTransfer,
    Tanh,
    TopClasses,
    Upsample,
    Yolov8Layout,
    argmax_class_mask,
    backends,
    class_mask_on_image,
    class_mask_rgb,
    class_probabilities,
    detect_objects_yolov8,
    empty,
    imagenet_preprocess,
    load_darknet,
    load_face_detector,
    load_image,
    load_mnist,
    load_mnist_digit,
    load_npy,
    load_onnx,
    load_style_transfer,
    mask_void_class,
    preprocess_image,
    read_darknet_names,
    save_class_mask_png,
    save_png,
    top_classes,
    vulkan_devices,
    yolov8_layout,
)

__version__ = "0.1.0"
