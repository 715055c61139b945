#!/usr/bin/env node
// Reference for corgy's tiny face detector: runs @vladmandic/face-api's own TinyFaceDetector (TensorFlow.js 4.22,
// pure-JavaScript CPU backend) and stores what it finds as tests/fixtures/face_api/tiny_face_detector.json.
//
// It also (re)makes data/face_api from the npm package, so that corgy and face-api read the same files:
//   - the model (tiny_face_detector_model.bin + its weights manifest) and the package's LICENSE, copied as they are;
//   - the package's demo photos demo/sample1..6.jpg as PNG: decoded by jpeg-js, shrunk 3x by averaging 3x3 blocks
//     (1920 pixels wide -> 640; rows beyond a multiple of 3 are dropped) and written losslessly by pngjs. face-api
//     then runs on the pixels read back from those PNGs, which stb_image (corgy's load_image) decodes identically;
//     two JPEG decoders would not agree to the last bit.
//
// Usage (by hand, not in CI; needs network access to the npm registry once):
//   npm ci --prefix tools        # tools/package.json pins the versions; node_modules is ignored by git
//   node tools/face_api_reference.mjs
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';

const require = createRequire(import.meta.url);
// The build for Node with the pure-JS TensorFlow.js (face-api.node.js would need the native tfjs-node). It also
// registers the WASM backend; we select the CPU one.
const faceapi = require('@vladmandic/face-api/dist/face-api.node-wasm.js');
const { tf } = faceapi;

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const packageDir = path.dirname(require.resolve('@vladmandic/face-api/package.json'));
const dataDir = path.join(root, 'data', 'face_api');
const fixturePath = path.join(root, 'tests', 'fixtures', 'face_api', 'tiny_face_detector.json');

const photos = [1, 2, 3, 4, 5, 6].map((n) => `sample${n}`);
const inputSizes = [416, 608];
// face-api's default score threshold, and a lower one that keeps more (and weaker) boxes to compare.
const scoreThresholds = [0.5, 0.3];
const shrink = 3;

function copyModel() {
  fs.mkdirSync(dataDir, { recursive: true });
  for (const file of ['tiny_face_detector_model-weights_manifest.json', 'tiny_face_detector_model.bin']) {
    fs.copyFileSync(path.join(packageDir, 'model', file), path.join(dataDir, file));
  }
  fs.copyFileSync(path.join(packageDir, 'LICENSE'), path.join(dataDir, 'LICENSE'));
}

// RGB bytes of a JPEG shrunk by averaging shrink x shrink blocks.
function shrinkPhoto(jpegPath) {
  const photo = jpeg.decode(fs.readFileSync(jpegPath), { useTArray: true, formatAsRGBA: false });
  const width = Math.floor(photo.width / shrink);
  const height = Math.floor(photo.height / shrink);
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let dy = 0; dy < shrink; dy++) {
          for (let dx = 0; dx < shrink; dx++) {
            sum += photo.data[((y * shrink + dy) * photo.width + x * shrink + dx) * 3 + c];
          }
        }
        rgb[(y * width + x) * 3 + c] = Math.round(sum / (shrink * shrink));
      }
    }
  }
  return { width, height, rgb };
}

function writePng(file, { width, height, rgb }) {
  const png = new PNG({ width, height, colorType: 2, inputColorType: 2, inputHasAlpha: false });
  png.data = Buffer.from(rgb);
  fs.writeFileSync(file, PNG.sync.write(png, { colorType: 2, inputColorType: 2, inputHasAlpha: false, deflateLevel: 9 }));
}

// The PNG's pixels as face-api takes an image tensor: int32 (H, W, 3), values 0..255.
function readPng(file) {
  const png = PNG.sync.read(fs.readFileSync(file));
  const rgb = new Int32Array(png.width * png.height * 3);
  for (let i = 0; i < png.width * png.height; i++) {
    for (let c = 0; c < 3; c++) rgb[i * 3 + c] = png.data[i * 4 + c];
  }
  return { width: png.width, height: png.height, tensor: tf.tensor3d(rgb, [png.height, png.width, 3], 'int32') };
}

async function detect(tensor, inputSize, scoreThreshold) {
  const options = new faceapi.TinyFaceDetectorOptions({ inputSize, scoreThreshold });
  const faces = await faceapi.detectAllFaces(tensor, options);
  return faces.map(({ score, box }) => ({ score, x: box.x, y: box.y, width: box.width, height: box.height }));
}

async function main() {
  await tf.setBackend('cpu');
  await tf.ready();
  copyModel();
  await faceapi.nets.tinyFaceDetector.loadFromDisk(path.join(packageDir, 'model'));
  const images = [];
  for (const name of photos) {
    const png = path.join(dataDir, `${name}.png`);
    writePng(png, shrinkPhoto(path.join(packageDir, 'demo', `${name}.jpg`)));
    const { width, height, tensor } = readPng(png);
    const runs = [];
    for (const inputSize of inputSizes) {
      for (const scoreThreshold of scoreThresholds) {
        const faces = await detect(tensor, inputSize, scoreThreshold);
        runs.push({ input_size: inputSize, score_threshold: scoreThreshold, faces });
        console.log(`${name}.png ${width}x${height} size ${inputSize} threshold ${scoreThreshold}: ${faces.length} faces`);
      }
    }
    tensor.dispose();
    images.push({ image: path.relative(root, png), width, height, runs });
  }
  const versions = { 'face-api': faceapi.version, tfjs: tf.version.tfjs, backend: tf.getBackend() };
  // The detector's constants as face-api holds them, so that the tests can check corgy's copies.
  const { config } = faceapi.nets.tinyFaceDetector;
  const detector = {
    iou_threshold: config.iouThreshold,
    anchors: config.anchors.map(({ x, y }) => [x, y]),
    mean_rgb: config.meanRgb,
  };
  const fixture = { generator: 'tools/face_api_reference.mjs', versions, detector, images };
  fs.mkdirSync(path.dirname(fixturePath), { recursive: true });
  fs.writeFileSync(fixturePath, `${JSON.stringify(fixture, null, 1)}\n`);
  console.log(`wrote ${path.relative(root, fixturePath)} and data/face_api`);
}

await main();
