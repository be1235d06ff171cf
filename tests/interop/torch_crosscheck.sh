#!/usr/bin/env bash
# The cross-check against PyTorch: gpt-nano, bert-tiny, vit-tiny and llama-nano, each in f32 and f64, run by
# dlf (torch_reference) and by PyTorch on the same weights and batch (torch_crosscheck.py); then a
# GPT that PyTorch writes in Hugging Face GPT-2's layout, generated from by dlf
# (gpt2_layout_check.py) and llama-nano's weights in Hugging Face's shards both ways
# (hf_llama_check.py), left out when no dlf is given. Exits 77 (skipped) when Debian's
# python3-torch is not installed. Prints the instruction set oneDNN runs on, which
# ONEDNN_MAX_CPU_ISA caps (tests/CMakeLists.txt runs this under AVX2 and AVX-512 too).
#
#   torch_crosscheck.sh PATH/TO/torch_reference [PATH/TO/dlf]
set -euo pipefail
reference=$1 dlf=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=/usr/bin/python3  # Debian's, which python3-torch installs into
[ -x "$python" ] || { echo "skipped: no $python (apt-get install python3-torch python3-numpy)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/isa"
ONEDNN_VERBOSE=1 "$reference" gpt-nano f32 "$tmp/isa" >"$tmp/isa/verbose"
echo "oneDNN (ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-}): $(grep -m1 -o 'isa:.*' "$tmp/isa/verbose")"
for model in gpt-nano bert-tiny vit-tiny llama-nano; do
  for dtype in f32 f64; do
    mkdir -p "$tmp/$model-$dtype"
    "$reference" "$model" "$dtype" "$tmp/$model-$dtype"
  done
  "$python" "$here/torch_crosscheck.py" "$tmp/$model-f32" "$tmp/$model-f64"
done
[ -z "$dlf" ] || "$python" "$here/gpt2_layout_check.py" "$dlf" "$tmp/gpt-nano-f32/weights.safetensors" gpt-nano
[ -z "$dlf" ] || "$python" "$here/hf_llama_check.py" "$dlf" "$reference" "$tmp/llama-nano-f32"
