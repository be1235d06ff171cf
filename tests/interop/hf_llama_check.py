#!/usr/bin/python3
"""Hugging Face Llama weights between dlf and PyTorch, in save_pretrained's shards, both ways.

    hf_llama_check.py DLF TORCH_REFERENCE DIR

DIR holds torch_reference's llama-nano f32 files. dlf converts its weights to LlamaForCausalLM's
names in shards (dlf convert --names hf --max-shard-size); the PyTorch Llama of
torch_crosscheck.py loads them through the index and computes dlf's logits (1e-5). The other way,
PyTorch writes a fresh Llama as shards and an index (with the rotary_emb.inv_freq buffers older
transformers saved); torch_reference computes the logits of those weights (1e-5 to PyTorch's),
and dlf generate --weights continues a prompt as PyTorch's greedy decoding does. Exits 77
without torch."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_crosscheck import Llama, TOLERANCE, read_safetensors, relative  # noqa: E402
from gpt2_layout_check import write_safetensors  # noqa: E402

import torch  # noqa: E402

INDEX = "model.safetensors.index.json"


def read_shards(directory):
    """The tensors the index's weight_map names, each from its shard."""
    with open(os.path.join(directory, INDEX)) as f:
        index = json.load(f)
    shards = {file: read_safetensors(os.path.join(directory, file))[0]
              for file in set(index["weight_map"].values())}
    total = sum(t.numel() * t.element_size() for s in shards.values() for t in s.values())
    assert index["metadata"]["total_size"] == total, f"total_size {index['metadata']} != {total}"
    return {name: shards[file][name] for name, file in index["weight_map"].items()}


def write_shards(directory, tensors, count):
    """numpy arrays as `count` shards named as save_pretrained names them, and their index."""
    names = sorted(tensors)
    weight_map, total = {}, 0
    for i in range(count):
        file = f"model-{i + 1:05d}-of-{count:05d}.safetensors"
        part = {n: tensors[n] for n in names[i::count]}
        write_safetensors(os.path.join(directory, file), part)
        weight_map.update({n: file for n in part})
        total += sum(a.nbytes for a in part.values())
    with open(os.path.join(directory, INDEX), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)


def check(failures, what, got, expected):
    err = relative(got, expected)
    print(f"{what}: {err:.3g} relative")
    if not err <= TOLERANCE["f32"]:
        failures.append(f"{what} differ by {err:.3g} relative (tolerance {TOLERANCE['f32']:g})")


def main():
    dlf, reference, directory = sys.argv[1:4]
    _, meta = read_safetensors(f"{directory}/weights.safetensors")
    sizes = {k: int(v) if v.lstrip("-").isdigit() else float(v)
             for k, v in meta.items() if k not in ("family", "dtype")}
    batch, _ = read_safetensors(f"{directory}/batch.safetensors")
    failures = []
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        # dlf's weights in shards, into PyTorch.
        shards = os.path.join(tmp, "from-dlf")
        subprocess.run([dlf, "convert", f"{directory}/weights.safetensors", shards, "--names",
                        "hf", "--max-shard-size", "100KB", "--model", "llama-nano"],
                       check=True, stdout=subprocess.DEVNULL)
        model = Llama(sizes)
        model.load_state_dict(read_shards(shards), strict=True)
        dlf_logits = read_safetensors(f"{directory}/dlf.safetensors")[0]["logits"]
        check(failures, f"{len(os.listdir(shards)) - 1} shards written by dlf: PyTorch's logits "
              "vs dlf's", model(batch), dlf_logits)

        # PyTorch's weights in shards, into dlf.
        torch.manual_seed(0)
        model = Llama(sizes)
        for p in model.parameters():  # wide enough that the argmax is never a near tie
            p.normal_(0, 0.3)
        tensors = {n: p.numpy() for n, p in model.state_dict().items()}
        head_dim = sizes["dim"] // sizes["heads"]
        for i in range(sizes["layers"]):
            inv_freq = 1.0 / (sizes["theta"] ** (torch.arange(0, head_dim, 2) / head_dim))
            tensors[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = inv_freq.float().numpy()
        shards, out = os.path.join(tmp, "from-torch"), os.path.join(tmp, "dlf-run")
        os.makedirs(shards)
        os.makedirs(out)
        write_shards(shards, tensors, 3)
        subprocess.run([reference, "llama-nano", "f32", out, shards], check=True)
        idx = read_safetensors(f"{out}/batch.safetensors")[0]
        check(failures, "3 shards written by PyTorch: dlf's logits vs PyTorch's",
              read_safetensors(f"{out}/dlf.safetensors")[0]["logits"], model(idx))

        prompt, tokens = b"The ", 24
        ids = torch.tensor([list(prompt)])
        for _ in range(tokens):
            logits = model({"idx": ids})[:, -1]  # 28 tokens, within the context
            ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], 1)
        got = subprocess.run([dlf, "generate", "--weights", shards, "--model", "llama-nano",
                              "--temperature", "0", "--prompt", prompt.decode(), "--tokens",
                              str(tokens)], check=True, stdout=subprocess.PIPE).stdout
        expected = bytes(ids[0].tolist()) + b"\n"
        if got != expected:
            failures.append(f"dlf generated {got!r} from PyTorch's shards, PyTorch {expected!r}")
        else:
            print(f"PyTorch's shards: dlf's greedy continuation is PyTorch's ({tokens} tokens)")
    for f in failures:
        print(f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
