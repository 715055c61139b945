// Reading .npy files for the Node.js scripts: tools/onnx_reference.mjs (the ONNX fixtures' reference outputs) and
// benchmarks/onnxruntime_benchmark.js and onnxruntime_profile.js.
'use strict';

const fs = require('fs');

// A little-endian float32, C-order .npy file (format 1.0 or 2.0) as {shape, data}.
function readNpy(file) {
  const bytes = fs.readFileSync(file);
  if (bytes.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = bytes.toString('latin1', start, start + headerLength);
  if (!header.includes("'descr': '<f4'") || header.includes("'fortran_order': True")) {
    throw new Error(`${file}: expected little-endian float32 in C order, header ${header}`);
  }
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  const offset = start + headerLength;
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + bytes.length));
  return {shape, data};
}

module.exports = {readNpy};
