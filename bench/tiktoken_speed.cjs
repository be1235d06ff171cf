// tiktoken's npm package (Rust compiled to WebAssembly) encoding the same text as
// tokenizer_bench, on one thread: one JSON line per encoding, as tokenizer_bench prints its own.
//   node bench/tiktoken_speed.cjs CACHE WARMUP REPS ENCODINGS FILE...
// (ENCODINGS: comma-separated; CACHE: the npm prefix scripts/reference_tokenizers.sh fills.)
"use strict";
const fs = require("fs");
const path = require("path");

const [cache, warmup, reps, encodings, ...files] = process.argv.slice(2);
const { get_encoding } = require(path.join(cache, "node_modules", "tiktoken"));
const text = Buffer.concat(files.map((f) => fs.readFileSync(f))).toString("utf8");
const bytes = Buffer.byteLength(text);
const median = (v) => {
  const s = [...v].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const name of encodings.split(",")) {
  const enc = get_encoding(name);
  const wall = [], cpu = [];
  let tokens = 0;
  for (let rep = -Number(warmup); rep < Number(reps); rep++) {
    const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
    tokens = enc.encode_ordinary(text).length;
    const ms = Number(process.hrtime.bigint() - t0) / 1e6, c = process.cpuUsage(c0);
    if (rep >= 0) wall.push(ms), cpu.push((c.user + c.system) / 1e3);
  }
  enc.free();
  const what = `${files.length === 1 ? files[0] : files.length + " files"}, ${bytes} bytes`;
  console.log(JSON.stringify({bench: "tokenizer", case: `${name} encode, ${what}`, impl: "tiktoken-npm",
    threads: 1, metric: "throughput", value: +(bytes / 1e3 / median(wall)).toPrecision(6), unit: "MB/s",
    median_ms: +median(wall).toPrecision(6), min_ms: +Math.min(...wall).toPrecision(6),
    max_ms: +Math.max(...wall).toPrecision(6), cpu_median_ms: +median(cpu).toPrecision(6), tokens, reps: Number(reps)}));
}
