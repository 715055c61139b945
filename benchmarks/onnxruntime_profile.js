// ONNX Runtime's time per node (npm onnxruntime-node, CPU execution provider, its profiler), for comparison with
// `model_benchmark --profile`'s per-layer table on the same model, input and thread count: where corgy loses to ORT,
// layer by layer. Prints one line per node (median over the runs after the first two, ms), then the sum.
//
//   NODE_PATH=<folder with onnxruntime-node> node benchmarks/onnxruntime_profile.js M.onnx x.npy THREADS [RUNS]
// benchmarks/run.sh installs onnxruntime-node into <build>/node/node_modules.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('../tools/npy.cjs');

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function main() {
  const [model, input, threads, runs = '8'] = process.argv.slice(2);
  if (!model || !input || !threads) throw new Error('usage: onnxruntime_profile.js M.onnx x.npy THREADS [RUNS]');
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'corgy-ort-profile-'));
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: path.join(folder, 'profile'),
  });
  const x = readNpy(input);
  const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape)};
  for (let i = 0; i < Number(runs); i++) await session.run(feeds);
  session.endProfiling();
  const file = fs.readdirSync(folder).find((name) => name.endsWith('.json'));
  const events = JSON.parse(fs.readFileSync(path.join(folder, file), 'utf8'));
  fs.rmSync(folder, {recursive: true});
  // Kernel events, in graph order; each node runs once per run: the first two runs are warm-up.
  const order = [];
  const times = new Map();
  const about = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!times.has(name)) {
      order.push(name);
      times.set(name, []);
      about.set(name, e.args);
    }
    times.get(name).push(e.dur / 1000);
  }
  let total = 0;
  for (const name of order) {
    const ms = median(times.get(name).slice(2));
    total += ms;
    const args = about.get(name);
    const shape = JSON.stringify(args.output_type_shape || []);
    console.log(`${ms.toFixed(3).padStart(9)}  ${(args.op_name || '').padEnd(20)} ${name}  ${shape}`);
  }
  console.log(`${total.toFixed(3).padStart(9)}  total (sum of the nodes' medians), ${threads} thread(s)`);
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
