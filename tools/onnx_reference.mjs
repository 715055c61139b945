// Runs ONNX Runtime (npm onnxruntime-node, CPU) on test models and writes its outputs as the reference that
// corgy's ONNX tests compare against.
//
// For every folder DIR given (or every folder under tests/fixtures/onnx but the torch_* ones, whose reference is
// PyTorch), reads DIR/model.onnx and DIR/input.npy,
// runs the model and writes each graph output k as DIR/output_<k>.npy (float32, C order, ONNX Runtime's shape) and
// DIR/outputs.json (the output names and shapes, in graph order).
//
// Usage: node tools/onnx_reference.mjs [DIR...]
// onnxruntime-node must be resolvable: NODE_PATH=<folder with node_modules/onnxruntime-node>/node_modules, e.g.
//   npm install --ignore-scripts --prefix build/onnx-reference onnxruntime-node@1.30.0
//   NODE_PATH=build/onnx-reference/node_modules node tools/onnx_reference.mjs
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");
const { readNpy } = require("./npy.cjs");
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function writeNpy(file, shape, data) {
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shapeText}, }`;
  header += " ".repeat(64 - ((10 + header.length + 1) % 64)) + "\n";  // data starts on a 64-byte boundary
  const prefix = Buffer.alloc(10);
  prefix.write("\x93NUMPY", 0, "latin1");
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(header.length, 8);
  const body = Buffer.from(new Float32Array(data).buffer);
  fs.writeFileSync(file, Buffer.concat([prefix, Buffer.from(header, "latin1"), body]));
}

async function reference(directory) {
  const session = await ort.InferenceSession.create(path.join(directory, "model.onnx"), {
    executionProviders: ["cpu"],
    intraOpNumThreads: 1,
    graphOptimizationLevel: "disabled",  // the operators as the file states them, no fusions of ORT's own
  });
  const input = readNpy(path.join(directory, "input.npy"));
  const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", input.data, input.shape) };
  const results = await session.run(feeds);
  const outputs = session.outputNames.map((name, k) => {
    const tensor = results[name];
    const shape = tensor.dims.map(Number);
    writeNpy(path.join(directory, `output_${k}.npy`), shape, tensor.data);
    return { name, shape };
  });
  fs.writeFileSync(path.join(directory, "outputs.json"), JSON.stringify({ onnxruntime: ort.env.versions?.common ?? "", outputs }, null, 1) + "\n");
  console.log(`${directory}: ${outputs.map((o) => `${o.name} (${o.shape.join(", ")})`).join(", ")}`);
}

const fixtures = path.join(root, "tests", "fixtures", "onnx");
// torch_* folders hold PyTorch's own outputs (tools/make_onnx_torch_op_models.py): left as they are.
const directories = process.argv.length > 2
  ? process.argv.slice(2)
  : fs.readdirSync(fixtures)
      .filter((d) => !d.startsWith("torch_"))
      .map((d) => path.join(fixtures, d))
      .filter((d) => fs.existsSync(path.join(d, "model.onnx")));
for (const directory of directories) await reference(directory);
