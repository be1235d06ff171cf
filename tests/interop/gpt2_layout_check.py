#!/usr/bin/python3
"""A GPT written by PyTorch in Hugging Face GPT-2's layout loads into dlf and generates what
PyTorch generates.

    gpt2_layout_check.py DLF WEIGHTS MODEL

WEIGHTS is torch_reference's weights.safetensors of the GPT MODEL (for its sizes). This script
builds that GPT in PyTorch with fresh weights, writes them as GPT2Model does — no
`transformer.` prefix, Conv1D weights [in, out], the causal-mask buffers attn.bias and
attn.masked_bias, no lm_head — then compares greedy continuations: `DLF generate --weights
FILE --model MODEL --temperature 0` against PyTorch's argmax decoding. Exits 77 without torch."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_crosscheck import GPT, read_safetensors  # noqa: E402 (exits 77 without torch)

import numpy as np  # noqa: E402
import torch  # noqa: E402

NAMES = {np.dtype(np.float32): "F32", np.dtype(np.bool_): "BOOL"}
CONV1D = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")


def write_safetensors(path, tensors):
    """numpy arrays by name, in name order, the header padded to 8 bytes."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        header[name] = {"dtype": NAMES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header).encode()
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def gpt2_layout(model, context):
    out = {}
    for name, p in model.state_dict().items():
        if name == "lm_head.weight":
            continue
        name = name.removeprefix("transformer.")
        a = p.numpy()
        out[name] = a.T if name.endswith(CONV1D) else a
    for i in range(len(model.transformer.h)):
        out[f"h.{i}.attn.bias"] = np.tril(np.ones((context, context), dtype=np.bool_))[None, None]
        out[f"h.{i}.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    return out


def main():
    dlf, weights, model_name = sys.argv[1:4]
    _, meta = read_safetensors(weights)
    sizes = {k: int(v) for k, v in meta.items() if k not in ("family", "dtype")}
    torch.manual_seed(0)
    model = GPT(sizes)
    with torch.no_grad():
        for p in model.parameters():  # wide enough that the argmax is never a near tie
            p.normal_(0, 0.3)
    prompt, tokens = b"The ", 24
    idx = torch.tensor([list(prompt)])
    with torch.no_grad():
        for _ in range(tokens):
            logits = model({"idx": idx[:, -sizes["context"]:]})[:, -1]
            idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], 1)
    ids = idx[0].tolist()
    # dlf prints bytes for a byte-level GPT, token ids past them (it has no BPE tokenizer)
    expected = bytes(ids) if sizes["vocab"] <= 256 else " ".join(map(str, ids)).encode()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gpt2.safetensors")
        write_safetensors(path, gpt2_layout(model, sizes["context"]))
        got = subprocess.run([dlf, "generate", "--weights", path, "--model", model_name,
                              "--temperature", "0", "--prompt", prompt.decode(),
                              "--tokens", str(tokens)],
                             check=True, stdout=subprocess.PIPE).stdout
    if got != expected + b"\n":
        print(f"dlf generated {got!r} from the GPT-2-layout file, PyTorch {expected!r}")
        sys.exit(1)
    print(f"{model_name} in GPT-2's layout: dlf's greedy continuation is PyTorch's ({tokens} tokens)")


if __name__ == "__main__":
    main()
