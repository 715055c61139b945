"""Finds the faces in photos with face-api's trained tiny face detector, from Python.

    python3 python/examples/detect_faces.py data/face_api/sample1.png [more photos...] [--backend blas]

The photo is read into corgy's page-aligned memory (corgy.load_image), so the forward reads it without a copy;
the boxes are in the photo's pixels. scripts/demo.sh runs this on the six photos of data/face_api.
"""

import argparse
import pathlib
import time

import corgy

REPOSITORY = pathlib.Path(__file__).resolve().parents[2]
MANIFEST = REPOSITORY / "data" / "face_api" / "tiny_face_detector_model-weights_manifest.json"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("photos", nargs="+", help="JPEG or PNG files")
    parser.add_argument("--backend", default="auto", help="naive, blas, vulkan or auto (default)")
    parser.add_argument("--input-size", type=int, default=416, help="network input side, a multiple of 32")
    args = parser.parse_args()

    with corgy.load_face_detector(str(MANIFEST), backend=args.backend) as detector:
        print(f"face detector on {detector.backend}: {detector.flops((1, 3, args.input_size, args.input_size)) / 1e9:.2f} "
              f"GFLOP per photo")
        for photo in args.photos:
            image = corgy.load_image(photo)
            start = time.perf_counter()
            faces = detector.detect(image, input_size=args.input_size)
            elapsed_ms = (time.perf_counter() - start) * 1e3
            print(f"{photo}: {image.shape[3]}x{image.shape[2]}, {len(faces)} face(s) in {elapsed_ms:.1f} ms")
            for face in faces:
                print(f"  score {face['probability']:.3f} at ({face['left']:.0f}, {face['top']:.0f}) - "
                      f"({face['right']:.0f}, {face['bottom']:.0f})")


if __name__ == "__main__":
    main()
