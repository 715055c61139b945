// ONNX Runtime (npm onnxruntime-node, CPU execution provider) on the ONNX export of the PyTorch rebuild of a corgy
// benchmark network, for benchmarks/run.sh. Same protocol as peer_benchmark.py: outputs first compared with
// corgy's (largest absolute difference / largest magnitude of corgy's output, tolerance 1e-3; a peer that
// disagrees is not timed), then per thread count warm-up and timed runs, end to end (input in host memory ->
// outputs in host memory). One JSON object per thread count on stdout.
//
//   NODE_PATH=<folder with onnxruntime-node> node onnxruntime_benchmark.js --onnx M.onnx --model NAME
//       --input x.npy --reference PREFIX [--threads 1 2] [--repeat 20] [--warmup 2] [--warmup-ms 0]
//       [--forward-times]   (every timed forward's ms too, in order: forward_ms)
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const {readNpy} = require('../tools/npy.cjs');

const TOLERANCE = 1e-3;

function parseArgs(argv) {
  const args = {threads: [1], repeat: 20, warmup: 2, warmupMs: 0};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--threads') {
      args.threads = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith('--')) args.threads.push(Number(argv[++i]));
    } else if (flag === '--forward-times') {
      args.forwardTimes = true;
    } else if (flag === '--warmup-ms') {
      args.warmupMs = Number(argv[++i]);
    } else if (flag.startsWith('--')) {
      args[flag.slice(2)] = argv[++i];
    } else {
      throw new Error(`unexpected argument ${flag}`);
    }
  }
  args.repeat = Number(args.repeat);
  args.warmup = Number(args.warmup);
  return args;
}

function relativeError(outputs, referencePrefix) {
  let worst = 0;
  for (let k = 0; k < outputs.length; k++) {
    const expected = readNpy(`${referencePrefix}.${k}.npy`).data;
    const actual = outputs[k];
    if (actual.length !== expected.length) return Infinity;
    if (!actual.every(Number.isFinite) || !expected.every(Number.isFinite)) return Infinity;  // NaN is no agreement
    let maxDiff = 0;
    let maxMagnitude = 1e-30;
    for (let i = 0; i < expected.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(actual[i] - expected[i]));
      maxMagnitude = Math.max(maxMagnitude, Math.abs(expected[i]));
    }
    worst = Math.max(worst, maxDiff / maxMagnitude);
  }
  return fs.existsSync(`${referencePrefix}.${outputs.length}.npy`) ? Infinity : worst;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function nowMs() {
  return Number(process.hrtime.bigint()) / 1e6;
}

async function timeForwards(forward, args) {
  const start = nowMs();
  let warmups = 0;
  while (warmups < args.warmup || nowMs() - start < args.warmupMs) {
    await forward();
    warmups++;
  }
  const ms = [];
  for (let i = 0; i < args.repeat; i++) {
    const begin = nowMs();
    await forward();
    ms.push(nowMs() - begin);
  }
  const times = {warmups, repeat: args.repeat, median_ms: median(ms), min_ms: Math.min(...ms), max_ms: Math.max(...ms)};
  // Every forward in order, as model_benchmark --forward-times lists corgy's.
  if (args.forwardTimes) times.forward_ms = ms.map((value) => Number(value.toFixed(4)));
  return times;
}

function ortVersion() {
  const main = require.resolve('onnxruntime-node');
  let dir = path.dirname(main);
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const input = readNpy(args.input);
  const base = {peer: 'onnxruntime', model: args.model, batch: input.shape[0],
    version: `ONNX Runtime ${ortVersion()} (onnxruntime-node, CPU)`};
  for (const threads of args.threads) {
    const session = await ort.InferenceSession.create(args.onnx, {
      intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
      graphOptimizationLevel: 'all'});
    const forward = async () => {
      const feeds = {[session.inputNames[0]]: new ort.Tensor('float32', input.data, input.shape)};
      const results = await session.run(feeds);
      return session.outputNames.map((name) => results[name].data);
    };
    const error = relativeError(await forward(), args.reference);
    // JSON has no Infinity: null stands for "no finite error" (missing, mis-sized or non-finite outputs).
    let result = {...base, threads, max_rel_err: Number.isFinite(error) ? error : null, agrees: error <= TOLERANCE,
      finite_checked: true};
    if (result.agrees) result = {...result, ...(await timeForwards(forward, args))};
    // The process's peak resident memory (node itself included, about 40 MB); one thread count per process gives
    // each its own (benchmarks/run.sh).
    result.peak_rss_mb = process.resourceUsage().maxRSS / 1024;
    console.log(JSON.stringify(result));
    await session.release();
  }
}

main().catch((error) => {
  console.error(`onnxruntime_benchmark: ${error.message}`);
  process.exit(1);
});
