#!/usr/bin/python3
"""PyTorch eager decoding with its own key/value cache: the baseline of generate_bench's
vs-torch case. GPT-2 (nanoGPT's layout, random weights N(0, 0.02)) prefills a prompt, then
decodes greedily one token per row and step, each layer appending to preallocated key and value
tensors. Prints one JSON line: tokens/s over the decode steps and their per-step median and p99.

  /usr/bin/python3 bench/generate_torch.py --layers 12 --heads 12 --dim 768 --vocab 50257 --batch 8
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(dim)
        self.c_attn = torch.nn.Linear(dim, 3 * dim)
        self.c_proj = torch.nn.Linear(dim, dim)
        self.ln_2 = torch.nn.LayerNorm(dim)
        self.c_fc = torch.nn.Linear(dim, 4 * dim)
        self.mlp_proj = torch.nn.Linear(4 * dim, dim)

    def forward(self, x, cache_k, cache_v, start):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.c_attn(self.ln_1(x)).view(B, T, 3, self.heads, hd).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        cache_k[:, :, start:start + T] = k
        cache_v[:, :, start:start + T] = v
        keys, values = cache_k[:, :, :start + T], cache_v[:, :, :start + T]
        # Causal with the last query aligned to the last key (a decode step sees every key).
        scores = (q @ keys.transpose(-2, -1)) / math.sqrt(hd)
        if T > 1:
            mask = torch.ones(T, start + T, dtype=torch.bool).tril(start)
            scores = scores.masked_fill(~mask, float("-inf"))
        y = (scores.softmax(-1) @ values).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, vocab, context, layers, heads, dim):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, dim)
        self.wpe = torch.nn.Embedding(context, dim)
        self.h = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(dim)
        for p in self.parameters():
            if p.dim() >= 2:
                torch.nn.init.normal_(p, 0, 0.02)

    def forward(self, idx, caches, start):
        pos = torch.arange(start, start + idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for block, (k, v) in zip(self.h, caches):
            x = block(x, k, v, start)
        return F.linear(self.ln_f(x[:, -1]), self.wte.weight)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.vocab, a.context, a.layers, a.heads, a.dim).eval()
    hd = a.dim // a.heads
    with torch.inference_mode():
        caches = [(torch.zeros(a.batch, a.heads, a.context, hd),
                   torch.zeros(a.batch, a.heads, a.context, hd)) for _ in range(a.layers)]
        idx = torch.randint(0, a.vocab, (a.batch, a.prompt))
        for tokens in (8, a.tokens):  # a short warm-up generation, then the timed one
            logits = model(idx, caches, 0)
            step_ms = []
            for step in range(tokens - 1):
                start = time.perf_counter()
                next_token = logits.argmax(-1, keepdim=True)
                logits = model(next_token, caches, a.prompt + step)
                step_ms.append((time.perf_counter() - start) * 1e3)
    step_ms.sort()
    median = step_ms[len(step_ms) // 2]
    p99 = step_ms[min(len(step_ms) - 1, math.ceil(0.99 * len(step_ms)) - 1)]
    print(json.dumps({"impl": "torch", "version": torch.__version__, "batch": a.batch,
                      "tokens_per_s": a.batch * len(step_ms) / (sum(step_ms) / 1e3),
                      "median_ms": median, "p99_ms": p99}))


if __name__ == "__main__":
    main()
