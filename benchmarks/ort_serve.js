// ONNX Runtime behind a minimal KServe v2 HTTP server, over npm onnxruntime-node: the peer of corgy-serve in the
// serve benchmark (benchmarks/serve_benchmark.py) on machines where the Python package onnxruntime is missing (this
// one: Debian has no onnxruntime package). benchmarks/ort_serve.py is the same server in Python; both speak the same
// subset of corgy-serve's protocol (docs/serving.md), so one client times all three:
//
//   GET  /v2/health/ready            200 {"ready": true} (the session is created before the port opens)
//   GET  /v2                         server metadata: name, version (ONNX Runtime's), extensions
//   POST /v2/models/{model}/infer    FP32 inputs as JSON "data" or binary (the binary tensor data extension:
//                                    Inference-Header-Content-Length, parameters.binary_data_size); outputs binary
//                                    when the request's parameters.binary_data_output is true, else JSON "data"
//
// One session, ONNX Runtime's intra-op threads on every core, one request at a time (as one corgy-serve instance runs
// one forward at a time; ort_serve.py takes a lock for the same), no batching. The session lives in a worker thread:
// onnxruntime-node's run() is synchronous, and on node's main thread it would stop the reading of other requests'
// bodies while it runs, which starved some connections (a p99 of 11 s against a p50 of 0.8 s for Tiny YOLO at 32
// clients) where corgy-serve and ort_serve.py read requests on threads of their own. Listens on 127.0.0.1 only;
// prints `listening on 127.0.0.1:PORT` first (--port 0 picks a free port); exits on SIGTERM or SIGINT, or by itself
// after --lifetime seconds.
//
//   NODE_PATH=<folder with onnxruntime-node> node ort_serve.js --onnx M.onnx --model NAME [--threads N] [--port 0]
//       [--lifetime 3600]
'use strict';

const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const {Worker, isMainThread, parentPort, workerData} = require('worker_threads');

const INFER_PATH = /^\/v2\/models\/([A-Za-z0-9_.-]+)\/infer$/;

function parseArgs(argv) {
  const args = {threads: os.cpus().length, port: 0, lifetime: 3600};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) throw new Error(`unexpected argument ${argv[i]}`);
    args[argv[i].slice(2)] = argv[i + 1];
  }
  if (!args.onnx || !args.model) throw new Error('usage: ort_serve.js --onnx M.onnx --model NAME [--threads N]');
  return {...args, threads: Number(args.threads), port: Number(args.port), lifetime: Number(args.lifetime)};
}

function ortVersion() {
  let dir = path.dirname(require.resolve('onnxruntime-node'));
  while (!fs.existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir);
  return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
}

// --- the worker thread: the session --------------------------------------------------------------------------------
// Messages in: {id, inputs: [{name, dims, data: Float32Array}]}; out: {ready, outputNames} once, then per request
// {id, outputs: [{name, dims, data}]} or {id, error}. One message at a time: run() blocks this thread.
async function sessionWorker({onnx, threads}) {
  const ort = require('onnxruntime-node');
  const session = await ort.InferenceSession.create(onnx, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all'});
  parentPort.on('message', async ({id, inputs}) => {
    try {
      const feeds = {};
      for (const input of inputs) feeds[input.name] = new ort.Tensor('float32', input.data, input.dims);
      const results = await session.run(feeds);
      const outputs = session.outputNames.map((name) => ({name, dims: results[name].dims, data: results[name].data}));
      parentPort.postMessage({id, outputs}, outputs.map((o) => o.data.buffer));
    } catch (error) {  // an input the model rejects: that request's 400
      parentPort.postMessage({id, error: `${error.name}: ${error.message}`});
    }
  });
  parentPort.postMessage({ready: true});
}

// --- the main thread: HTTP ----------------------------------------------------------------------------------------
// A request the model cannot take: answered 400 with its message.
class InferenceError extends Error {}

// [{name, dims, data}] of a KServe v2 request; `binary` is the body after the JSON header.
function readInputs(request, binary) {
  const inputs = [];
  let offset = 0;
  for (const tensor of request.inputs || []) {
    if (tensor.datatype !== 'FP32') {
      throw new InferenceError(`input ${tensor.name}: datatype ${tensor.datatype}, only FP32`);
    }
    const dims = tensor.shape.map(Number);
    const count = dims.reduce((a, b) => a * b, 1);
    const size = (tensor.parameters || {}).binary_data_size;
    let data;
    if (size !== undefined) {
      if (offset + size > binary.length || size !== 4 * count) {
        throw new InferenceError(`input ${tensor.name}: binary_data_size ${size} does not fit the shape or body`);
      }
      // A copy: the body's bytes need not be 4-byte aligned for a Float32Array view.
      data = new Float32Array(count);
      Buffer.from(data.buffer).set(binary.subarray(offset, offset + size));
      offset += size;
    } else {
      data = Float32Array.from(tensor.data.flat(Infinity));
      if (data.length !== count) {
        throw new InferenceError(`input ${tensor.name}: ${data.length} values for the shape ${dims}`);
      }
    }
    inputs.push({name: tensor.name, dims, data});
  }
  if (offset !== binary.length) throw new InferenceError(`${binary.length - offset} bytes that no input declares`);
  return inputs;
}

function reply(response, status, header, binary) {
  const body = Buffer.from(JSON.stringify(header));
  const headers = {'Content-Length': body.length + (binary ? binary.length : 0)};
  if (binary) {
    headers['Content-Type'] = 'application/octet-stream';
    headers['Inference-Header-Content-Length'] = body.length;
  } else {
    headers['Content-Type'] = 'application/json';
  }
  response.writeHead(status, headers);
  response.end(binary ? Buffer.concat([body, binary]) : body);
}

// The session's worker as a function: run(inputs) -> Promise of outputs, in the order asked.
function startSession(args) {
  const worker = new Worker(__filename, {workerData: {onnx: args.onnx, threads: args.threads}});
  const pending = new Map();
  let next = 0;
  let ready;
  const started = new Promise((resolve) => { ready = resolve; });
  worker.on('message', (message) => {
    if (message.ready) return ready();
    const {resolve, reject} = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(new InferenceError(message.error));
    else resolve(message.outputs);
  });
  worker.on('error', (error) => {
    console.error(`ort_serve.js: the session's worker failed: ${error.message}`);
    process.exit(1);
  });
  const run = (inputs) => new Promise((resolve, reject) => {
    const id = next++;
    pending.set(id, {resolve, reject});
    worker.postMessage({id, inputs}, inputs.map((input) => input.data.buffer));
  });
  return {started, run};
}

async function infer(session, modelName, body, headers) {
  const headerLength = Number(headers['inference-header-content-length'] || body.length);
  const request = JSON.parse(body.subarray(0, headerLength).toString('utf8'));
  const outputs = await session.run(readInputs(request, body.subarray(headerLength)));
  const asBinary = Boolean((request.parameters || {}).binary_data_output);
  const response = {model_name: modelName, outputs: []};
  const chunks = [];
  for (const {name, dims, data} of outputs) {
    const output = {name, datatype: 'FP32', shape: dims.map(Number)};
    if (asBinary) {
      output.parameters = {binary_data_size: data.byteLength};
      chunks.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    } else {
      output.data = Array.from(data);
    }
    response.outputs.push(output);
  }
  if (request.id !== undefined) response.id = request.id;
  return {response, binary: asBinary ? Buffer.concat(chunks) : null};
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const session = startSession(args);
  await session.started;
  const metadata = {name: 'ort_serve.js', version: `ONNX Runtime ${ortVersion()} (onnxruntime-node, CPU)`,
    extensions: ['binary_tensor_data']};

  const server = http.createServer({noDelay: true, keepAliveTimeout: 5000}, (request, response) => {
    const chunks = [];
    request.on('data', (chunk) => chunks.push(chunk));
    request.on('end', async () => {
      if (request.method === 'GET' && request.url === '/v2/health/ready') return reply(response, 200, {ready: true});
      if (request.method === 'GET' && request.url === '/v2') return reply(response, 200, metadata);
      const match = INFER_PATH.exec(request.url);
      if (request.method !== 'POST' || !match || match[1] !== args.model) {
        return reply(response, 404, {error: `no route or model ${request.url}`});
      }
      try {
        const {response: header, binary} = await infer(session, args.model, Buffer.concat(chunks), request.headers);
        reply(response, 200, header, binary);
      } catch (error) {  // a bad request or an input the model rejects: the server lives on
        reply(response, 400, {error: `${error.name}: ${error.message}`});
      }
    });
  });
  server.listen(args.port, '127.0.0.1', () => console.log(`listening on 127.0.0.1:${server.address().port}`));

  const stop = () => {
    console.error('ort_serve.js: stopped');
    process.exit(0);  // ends the worker and every connection with it
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  setTimeout(stop, args.lifetime * 1000).unref();
}

if (isMainThread) {
  main().catch((error) => {
    console.error(`ort_serve.js: ${error.message}`);
    process.exit(1);
  });
} else {
  sessionWorker(workerData).catch((error) => {
    console.error(`ort_serve.js (session): ${error.message}`);
    process.exit(1);
  });
}
