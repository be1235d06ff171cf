// The reference side of reference_test.sh, on tiktoken's npm package (Rust compiled to
// WebAssembly) and Hugging Face's (tokenizers: Rust through Node's native API), from the cache
// scripts/reference_tokenizers.sh fills:
//   stress TEXT BYTES                     write the stress files (UTF-8; and with bytes that are not)
//   compare CACHE ENCODING MODE IDS FILE...  tiktoken's ids of each FILE against the lines of IDS
//                                         (dlf tokenizer encode's output); MODE: ordinary or specials
//   rank-file CACHE ENCODING OUT          write the encoding's ranks as a .tiktoken file
//   hf CACHE TOKENIZER_JSON IDS FILE...   Hugging Face tokenizers' ids of each (UTF-8) FILE, which
//                                         always recognises special tokens, against the lines of IDS
//
// tiktoken takes strings, so a file that is not UTF-8 is cut into its UTF-8 runs, each encoded by
// tiktoken, and the runs of bytes that are not, each merged by tiktoken's byte_pair_merge on
// tiktoken's ranks (encode_single_token): what dlf does with such bytes, written independently.
"use strict";
const fs = require("fs");
const path = require("path");

// The length of the well-formed UTF-8 sequence at buf[i] (Unicode's table 3-7), or 0.
function utf8Length(buf, i) {
  const b = buf[i];
  if (b < 0x80) return 1;
  const cont = (k, lo = 0x80, hi = 0xbf) => i + k < buf.length && buf[i + k] >= lo && buf[i + k] <= hi;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    const lo = b === 0xe0 ? 0xa0 : 0x80, hi = b === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    const lo = b === 0xf0 ? 0x90 : 0x80, hi = b === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// tiktoken's byte_pair_merge: the pair of adjacent parts whose bytes together have the lowest
// rank merges first, the leftmost among equals.
function bytePairEncode(enc, bytes) {
  const rank = (a, b) => {
    try {
      return enc.encode_single_token(bytes.subarray(a, b));
    } catch {
      return Infinity;
    }
  };
  const whole = rank(0, bytes.length);
  if (whole !== Infinity) return [whole];
  const starts = [];
  for (let i = 0; i <= bytes.length; i++) starts.push(i);
  const ranks = [];
  for (let i = 0; i + 2 < starts.length; i++) ranks.push(rank(starts[i], starts[i + 2]));
  for (;;) {
    let best = -1;
    for (let i = 0; i < ranks.length; i++) if (ranks[i] !== Infinity && (best < 0 || ranks[i] < ranks[best])) best = i;
    if (best < 0) break;
    starts.splice(best + 1, 1);
    ranks.splice(best, 1);
    if (best + 2 < starts.length) ranks[best] = rank(starts[best], starts[best + 2]);
    if (best > 0) ranks[best - 1] = rank(starts[best - 1], starts[best + 1]);
  }
  const ids = [];
  for (let i = 0; i + 1 < starts.length; i++) ids.push(rank(starts[i], starts[i + 1]));
  return ids;
}

// Ordinary bytes: UTF-8 runs through tiktoken, the other runs through bytePairEncode.
function encodeOrdinaryBytes(enc, buf, out) {
  for (let i = 0; i < buf.length;) {
    const start = i;
    const valid = utf8Length(buf, i) > 0;
    while (i < buf.length && (utf8Length(buf, i) > 0) === valid) i += valid ? utf8Length(buf, i) : 1;
    const run = buf.subarray(start, i);
    const ids = valid ? enc.encode_ordinary(run.toString("utf8")) : bytePairEncode(enc, run);
    for (const id of ids) out.push(id);
  }
}

function reference(enc, specials, buf, withSpecials) {
  let valid = true;
  for (let i = 0; i < buf.length && valid; i += Math.max(1, utf8Length(buf, i))) valid = utf8Length(buf, i) > 0;
  if (valid) {
    const text = buf.toString("utf8");
    return Array.from(withSpecials ? enc.encode(text, "all") : enc.encode_ordinary(text));
  }
  const out = [];
  if (!withSpecials) {
    encodeOrdinaryBytes(enc, buf, out);
    return out;
  }
  for (let pos = 0; ;) {  // the first special token's text, the longest among those at one place
    let at = -1, which = null;
    for (const [text, id] of Object.entries(specials)) {
      const k = buf.indexOf(Buffer.from(text), pos);
      if (k >= 0 && (at < 0 || k < at || (k === at && text.length > which[0].length))) at = k, which = [text, id];
    }
    encodeOrdinaryBytes(enc, buf.subarray(pos, at < 0 ? buf.length : at), out);
    if (at < 0) return out;
    out.push(which[1]);
    pos = at + Buffer.byteLength(which[0]);
  }
}

function tiktoken(cache) {
  return require(path.join(cache, "node_modules", "tiktoken"));
}

function encodingJson(cache, name) {
  return JSON.parse(fs.readFileSync(path.join(cache, "node_modules", "tiktoken", "encoders", name + ".json"), "utf8"));
}

function show(enc, ids) {
  return ids.map((id) => {
    try {
      return id + "=" + JSON.stringify(Buffer.from(enc.decode_single_token_bytes(id)).toString("latin1"));
    } catch {
      return id + "=?";
    }
  }).join(" ");
}

function compare(cache, name, mode, idsFile, files) {
  const enc = tiktoken(cache).get_encoding(name);
  const specials = encodingJson(cache, name).special_tokens;
  const lines = fs.readFileSync(idsFile, "utf8").split("\n");
  let tokens = 0;
  for (let f = 0; f < files.length; f++) {
    const want = reference(enc, specials, fs.readFileSync(files[f]), mode === "specials");
    const got = (lines[f] || "").split(" ").filter((s) => s.length).map(Number);
    const n = Math.min(want.length, got.length);
    let i = 0;
    while (i < n && want[i] === got[i]) i++;
    if (i < n || want.length !== got.length) {
      console.log(`${name} ${mode}: ${files[f]}: token ${i} of ${want.length} differs`);
      console.log(`  tiktoken: ${show(enc, want.slice(Math.max(0, i - 3), i + 6))}`);
      console.log(`  dlf:      ${show(enc, got.slice(Math.max(0, i - 3), i + 6))}`);
      process.exit(1);
    }
    tokens += want.length;
  }
  console.log(`${name} ${mode}: ${tokens} tokens of ${files.length} files equal to tiktoken's`);
}

// The rank file: the npm JSON's lines "! FIRST token token ..." as "token rank" lines.
function rankFile(cache, name, out) {
  const lines = [];
  for (const line of encodingJson(cache, name).bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, first, ...tokens] = line.split(" ");
    tokens.forEach((t, k) => lines.push(`${t} ${Number(first) + k}`));
  }
  fs.writeFileSync(out, lines.join("\n") + "\n");
}

// A seeded generator (xorshift32): the same files every run.
function generator(seed) {
  let s = seed >>> 0;
  return (n) => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

function stress(textFile, bytesFile) {
  const phrases = [
    // whitespace runs, Unicode spaces (U+180E is White_Space in PCRE2's \s, not in Rust's)
    "a  b   c    d", "x   \n", "\t\t tab\t", "\n\n\n", " \n \n", "line\r\nnext\r\n\r\n", "   ",
    "nbsp\u00a0x \u00a0 y", "em\u2003space\u3000ideo", "nel\u0085x", "mvs\u180e! a \u180e", "ls\u2028ps\u2029",
    // contractions, their cases, long s and the Kelvin sign (case-insensitive in cl100k and o200k)
    "I'm you're they've He'll she'd It's DON'T I'M WE'LL x'S y'ſ 'ſ z'K", "'s'", "rock'n'roll", "o'clock's",
    // CJK, Korean, fullwidth
    "日本語のテキストです。", "中文文本，标点符号！", "한국어 텍스트입니다", "１２３ＡＢＣ",
    // emoji: a ZWJ family, flags, skin tones, keycaps
    "🎉 party 👨‍👩‍👧‍👦 family 🇫🇷🇩🇪 flags 👍🏽 1️⃣", "🙂🙃😀",
    // combining marks, scripts with marks
    "e\u0301 a\u0300\u0301\u0302 n\u0303", "नमस्ते दुनिया", "مرحبا بالعالم", "שָׁלוֹם", "สวัสดีครับ", "Ελληνικά Русский",
    // digits
    "1234567890 3.14159 1,000,000 ٣٤٥ Ⅻ ½ ² 2024-01-01", "x1y22z333w4444",
    // case
    "HELLO World camelCase XMLHttpRequest iPhone ÉCOLE",
    // special tokens' texts
    "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>", "<|fim_prefix|>x<|fim_suffix|>", "<|endofprompt|>",
    "<|endoftext", "punctuation!!! ??? ... --- ///", "path/to/file.txt", "{\"json\": [1, 2]}",
  ];
  const runs = [
    "a".repeat(5000), " ".repeat(5000), "\n".repeat(1000), "!".repeat(3000), "7".repeat(2000),
    "日".repeat(2000), "🎉".repeat(500), "ab".repeat(2000), " a".repeat(1000), "\u0301".repeat(500),
  ];
  const ranges = [[0x20, 0x7e], [0xa0, 0x17f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x2000, 0x206f],
                  [0x3040, 0x30ff], [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0x1f600, 0x1f64f]];
  const rand = generator(20240101);
  let text = phrases.join("\n") + "\n" + runs.join("\n") + "\n";
  for (let k = 0; k < 4000; k++) {
    const r = rand(10);
    if (r < 5) text += phrases[rand(phrases.length)];
    else if (r < 8) {
      const [lo, hi] = ranges[rand(ranges.length)];
      for (let n = 1 + rand(8); n > 0; n--) text += String.fromCodePoint(lo + rand(hi - lo + 1));
    } else text += [" ", "  ", "\n", "\t", " \n", "'"][rand(6)];
  }
  fs.writeFileSync(textFile, text);

  const invalid = [
    [0x80], [0xbf], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80], [0xfe], [0xff], [0xc3], [0xe9],
  ];
  const parts = [Buffer.from("caf\xe9 na\xefve ", "latin1"), Buffer.from("ab\x80cd \xff   x \xe2\x82 \xac\n", "latin1"),
                 Buffer.alloc(3000, 0xff), Buffer.from(" "), Buffer.alloc(1000, 0x80)];
  for (let k = 0; k < 3000; k++) {
    const r = rand(10);
    if (r < 4) parts.push(Buffer.from(phrases[rand(phrases.length)]));
    else if (r < 8) parts.push(Buffer.from(invalid[rand(invalid.length)]));
    else {
      const bytes = Buffer.alloc(1 + rand(40));
      for (let i = 0; i < bytes.length; i++) bytes[i] = rand(256);
      parts.push(bytes);
    }
  }
  fs.writeFileSync(bytesFile, Buffer.concat(parts));
}

async function huggingFace(cache, tokenizerJson, idsFile, files) {
  const { Tokenizer } = require(path.join(cache, "node_modules", "tokenizers"));
  const tokenizer = Tokenizer.fromFile(tokenizerJson);
  const lines = fs.readFileSync(idsFile, "utf8").split("\n");
  let tokens = 0;
  for (let f = 0; f < files.length; f++) {
    const encoding = await tokenizer.encode(fs.readFileSync(files[f], "utf8"), null, { addSpecialTokens: false });
    const want = encoding.getIds().join(" ");
    if (want !== lines[f]) {
      const w = want.split(" "), g = (lines[f] || "").split(" ");
      let i = 0;
      while (i < w.length && w[i] === g[i]) i++;
      console.log(`${tokenizerJson}: ${files[f]}: token ${i} of ${w.length} differs`);
      console.log(`  Hugging Face: ${w.slice(Math.max(0, i - 3), i + 6).join(" ")}`);
      console.log(`  dlf:          ${g.slice(Math.max(0, i - 3), i + 6).join(" ")}`);
      process.exit(1);
    }
    tokens += encoding.getIds().length;
  }
  console.log(`${path.basename(tokenizerJson)}: ${tokens} tokens of ${files.length} files equal to Hugging Face tokenizers'`);
}

const [command, ...args] = process.argv.slice(2);
if (command === "stress") stress(args[0], args[1]);
else if (command === "compare") compare(args[0], args[1], args[2], args[3], args.slice(4));
else if (command === "rank-file") rankFile(args[0], args[1], args[2]);
else if (command === "hf") huggingFace(args[0], args[1], args[2], args.slice(3)).catch((e) => { console.error(e); process.exit(1); });
else {
  console.error("usage: reference.cjs stress|compare|rank-file|hf ...");
  process.exit(2);
}
