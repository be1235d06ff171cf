#!/usr/bin/python3
"""PyTorch's side of the cross-check: builds the model torch_reference wrote (GPT as nanoGPT,
BERT as Hugging Face's BertForMaskedLM, ViT as timm, Llama as Hugging Face's LlamaForCausalLM),
loads its safetensors weights with a
reader written here on numpy (the format read by a second, independent implementation), runs
the same batch and compares with what dlf computed.

    torch_crosscheck.py DIR [DIR_F64]

DIR holds torch_reference's files for one dtype. Given DIR_F64 (the same model in f64), the
weights after AdamW are also checked against PyTorch's f64 ones: dlf's f64 weights equal, its
f32 weights within F32_ADAMW_BOUND of them (PyTorch's own f32 run is printed beside, and
judged by nothing: how close it comes depends on the BLAS it runs on).

Exits 0 when everything agrees, 1 with one line per mismatch, 77 (skipped) without torch."""
import json
import math
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:
    print(f"skipped: {e.name} is not installed for {sys.executable} "
          "(apt-get install python3-torch python3-numpy)")
    sys.exit(77)

DTYPES = {"F64": np.float64, "F32": np.float32, "I64": np.int64, "I32": np.int32, "BOOL": np.bool_}
TOLERANCE = {"f32": 1e-5, "f64": 1e-10}
# How far dlf's f32 weights after AdamW may be from the f64 result (relative, over the elements
# of non-zero gradient), per family: three times the most measured with oneDNN on AVX2, AVX-512
# and AVX-512-BF16 (gpt-nano 2.2e-7, bert-tiny 1.7e-7, vit-tiny 1.0e-6, llama-nano 4.6e-7). A bound of dlf's own,
# so that the verdict is the same whichever BLAS PyTorch runs on: its own f32 run ended 2.3e-6
# to 1.4e-5 from the f64 result by the OpenBLAS kernel (Haswell, SkylakeX, Cooperlake) or
# Debian's reference BLAS when AdamW's eps was 1e-8 (see torch_reference.cpp), and 9.3e-7 to
# 1.1e-6 (vit-tiny) with eps 1e-6.
F32_ADAMW_BOUND = {"gpt": 6e-7, "bert": 5e-7, "vit": 3e-6, "llama": 1.4e-6}


def read_safetensors(path):
    """The tensors (as torch tensors) and metadata of a .safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert (8 + n) % 8 == 0, f"{path}: the header is not padded to 8 bytes"
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        array = np.frombuffer(body[begin:end], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors, metadata


class Block(nn.Module):
    """Pre-LayerNorm transformer block, in nanoGPT's names or timm's."""

    def __init__(self, dim, heads, causal, gelu, eps, timm):
        super().__init__()
        self.heads, self.causal, self.gelu, self.timm = heads, causal, gelu, timm
        n = ("norm1", "norm2", "qkv", "proj", "fc1", "fc2") if timm else \
            ("ln_1", "ln_2", "c_attn", "c_proj", "c_fc", "c_proj")
        setattr(self, n[0], nn.LayerNorm(dim, eps=eps))
        self.attn = nn.Module()
        setattr(self.attn, n[2], nn.Linear(dim, 3 * dim))
        setattr(self.attn, n[3], nn.Linear(dim, dim))
        setattr(self, n[1], nn.LayerNorm(dim, eps=eps))
        self.mlp = nn.Module()
        setattr(self.mlp, n[4], nn.Linear(dim, 4 * dim))
        setattr(self.mlp, n[5], nn.Linear(4 * dim, dim))
        self.n = n

    def forward(self, x):
        n = self.n
        B, T, C = x.shape
        h = getattr(self, n[0])(x)
        qkv = getattr(self.attn, n[2])(h).view(B, T, 3, self.heads, C // self.heads)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        y = attention(q, k, v, self.causal).transpose(1, 2).reshape(B, T, C)
        x = x + getattr(self.attn, n[3])(y)
        h = getattr(self, n[1])(x)
        return x + getattr(self.mlp, n[5])(F.gelu(getattr(self.mlp, n[4])(h), approximate=self.gelu))


def attention(q, k, v, causal):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        T = q.shape[-2]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


class GPT(nn.Module):
    def __init__(self, s):
        super().__init__()
        dim = s["dim"]
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(s["vocab"], dim)
        self.transformer.wpe = nn.Embedding(s["context"], dim)
        self.transformer.h = nn.ModuleList(
            Block(dim, s["heads"], True, "tanh", 1e-5, False) for _ in range(s["layers"]))
        self.transformer.ln_f = nn.LayerNorm(dim, eps=1e-5)
        self.lm_head = nn.Linear(dim, s["vocab"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, batch):
        idx = batch["idx"]
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))

    def loss(self, batch):
        logits = self(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten())


class Bert(nn.Module):
    """BertForMaskedLM (Hugging Face's names), without dropout."""

    def __init__(self, s):
        super().__init__()
        dim, eps = s["dim"], 1e-12
        self.heads = s["heads"]
        self.bert = nn.Module()
        e = self.bert.embeddings = nn.Module()
        e.word_embeddings = nn.Embedding(s["vocab"], dim)
        e.position_embeddings = nn.Embedding(s["max_positions"], dim)
        e.token_type_embeddings = nn.Embedding(s["type_vocab"], dim)
        e.LayerNorm = nn.LayerNorm(dim, eps=eps)
        self.bert.encoder = nn.Module()
        self.bert.encoder.layer = nn.ModuleList()
        for _ in range(s["layers"]):
            layer = nn.Module()
            layer.attention = nn.Module()
            layer.attention.self = nn.Module()
            for proj in ("query", "key", "value"):
                setattr(layer.attention.self, proj, nn.Linear(dim, dim))
            layer.attention.output = nn.Module()
            layer.attention.output.dense = nn.Linear(dim, dim)
            layer.attention.output.LayerNorm = nn.LayerNorm(dim, eps=eps)
            layer.intermediate = nn.Module()
            layer.intermediate.dense = nn.Linear(dim, s["ffn"])
            layer.output = nn.Module()
            layer.output.dense = nn.Linear(s["ffn"], dim)
            layer.output.LayerNorm = nn.LayerNorm(dim, eps=eps)
            self.bert.encoder.layer.append(layer)
        self.cls = nn.Module()
        p = self.cls.predictions = nn.Module()
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(dim, dim)
        p.transform.LayerNorm = nn.LayerNorm(dim, eps=eps)
        p.bias = nn.Parameter(torch.zeros(s["vocab"]))
        p.decoder = nn.Linear(dim, s["vocab"])
        p.decoder.weight = e.word_embeddings.weight
        p.decoder.bias = p.bias

    def forward(self, batch):
        ids = batch["ids"]
        B, T = ids.shape
        e = self.bert.embeddings
        x = e.LayerNorm(e.word_embeddings(ids) + e.position_embeddings(torch.arange(T)) +
                        e.token_type_embeddings(torch.zeros(T, dtype=torch.long)))
        for layer in self.bert.encoder.layer:
            a = layer.attention.self
            q, k, v = (getattr(a, n)(x).view(B, T, self.heads, -1).transpose(1, 2)
                       for n in ("query", "key", "value"))
            y = attention(q, k, v, False).transpose(1, 2).reshape(B, T, -1)
            o = layer.attention.output
            x = o.LayerNorm(o.dense(y) + x)
            h = F.gelu(layer.intermediate.dense(x))
            x = layer.output.LayerNorm(layer.output.dense(h) + x)
        p = self.cls.predictions
        return p.decoder(p.transform.LayerNorm(F.gelu(p.transform.dense(x))))

    def loss(self, batch):
        logits = self(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=-100)


class ViT(nn.Module):
    """timm's VisionTransformer (class token, no dropout)."""

    def __init__(self, s):
        super().__init__()
        dim, patch = s["dim"], s["patch"]
        side = s["image"] // patch
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, side * side + 1, dim))
        self.patch_embed = nn.Module()
        self.patch_embed.proj = nn.Conv2d(s["channels"], dim, patch, stride=patch)
        assert s["mlp_ratio"] == 4
        self.blocks = nn.ModuleList(
            Block(dim, s["heads"], False, "none", 1e-6, True) for _ in range(s["depth"]))
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, s["classes"])

    def forward(self, batch):
        images = batch["images"]
        x = self.patch_embed.proj(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])

    def loss(self, batch):
        return F.cross_entropy(self(batch), batch["labels"])


class Llama(nn.Module):
    """LlamaForCausalLM as Hugging Face's modeling_llama.py computes it (its names; rotary in
    the rotate-half convention; grouped-query attention by repeating the key/value heads; RMSNorm
    in the weights' dtype; no dropout, no biases)."""

    def __init__(self, s):
        super().__init__()
        dim, self.heads, self.kv_heads = s["dim"], s["heads"], s["kv_heads"]
        self.theta, self.eps = s["theta"], s["norm_eps"]
        head_dim = dim // self.heads
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(s["vocab"], dim)
        self.model.layers = nn.ModuleList()
        for _ in range(s["layers"]):
            layer = nn.Module()
            layer.input_layernorm = RMSNorm(dim, self.eps)
            layer.self_attn = nn.Module()
            for proj, out in (("q_proj", self.heads), ("k_proj", self.kv_heads),
                              ("v_proj", self.kv_heads)):
                setattr(layer.self_attn, proj, nn.Linear(dim, out * head_dim, bias=False))
            layer.self_attn.o_proj = nn.Linear(dim, dim, bias=False)
            layer.post_attention_layernorm = RMSNorm(dim, self.eps)
            layer.mlp = nn.Module()
            layer.mlp.gate_proj = nn.Linear(dim, s["ffn"], bias=False)
            layer.mlp.up_proj = nn.Linear(dim, s["ffn"], bias=False)
            layer.mlp.down_proj = nn.Linear(s["ffn"], dim, bias=False)
            self.model.layers.append(layer)
        self.model.norm = RMSNorm(dim, self.eps)
        self.lm_head = nn.Linear(dim, s["vocab"], bias=False)

    def rotary(self, T, head_dim, dtype):
        """cos and sin [T, head_dim] of HF's LlamaRotaryEmbedding (no scaling)."""
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        return emb.cos().to(dtype), emb.sin().to(dtype)

    def forward(self, batch):
        idx = batch["idx"]
        B, T = idx.shape
        x = self.model.embed_tokens(idx)
        head_dim = x.shape[-1] // self.heads
        cos, sin = self.rotary(T, head_dim, x.dtype)

        def rotate_half(t):
            half = t.shape[-1] // 2
            return torch.cat([-t[..., half:], t[..., :half]], -1)

        for layer in self.model.layers:
            a = layer.self_attn
            h = layer.input_layernorm(x)
            q = a.q_proj(h).view(B, T, self.heads, head_dim).transpose(1, 2)
            k = a.k_proj(h).view(B, T, self.kv_heads, head_dim).transpose(1, 2)
            v = a.v_proj(h).view(B, T, self.kv_heads, head_dim).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            groups = self.heads // self.kv_heads
            k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
            y = attention(q, k, v, True).transpose(1, 2).reshape(B, T, -1)
            x = x + a.o_proj(y)
            m = layer.mlp
            h = layer.post_attention_layernorm(x)
            x = x + m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))
        return self.lm_head(self.model.norm(x))

    def loss(self, batch):
        logits = self(batch)
        return F.cross_entropy(logits.flatten(0, 1), batch["targets"].flatten())


class RMSNorm(nn.Module):
    """Hugging Face's LlamaRMSNorm: x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


MODELS = {"gpt": GPT, "bert": Bert, "vit": ViT, "llama": Llama}


def build(directory):
    """The model, loaded with dlf's weights, and the batch; the dtype's name; the family."""
    weights, meta = read_safetensors(f"{directory}/weights.safetensors")
    batch, _ = read_safetensors(f"{directory}/batch.safetensors")
    sizes = {k: int(v) if v.lstrip("-").isdigit() else float(v)
             for k, v in meta.items() if k not in ("family", "dtype")}
    dtype = meta["dtype"]
    model = MODELS[meta["family"]](sizes)
    if dtype == "f64":
        model = model.double()
    # Every tensor given, under one of the names of a tied parameter.
    missing, unexpected = model.load_state_dict(weights, strict=False)
    assert not unexpected, f"names PyTorch's model lacks: {unexpected}"
    loaded = {id(p) for n, p in all_named_parameters(model) if n in weights}
    not_loaded = [n for n, p in model.named_parameters() if id(p) not in loaded]
    assert not not_loaded, f"weights.safetensors lacks {not_loaded}"
    return model, batch, dtype, meta["family"]


def relative(a, b, floor=0.0):
    """||a - b|| / max(||b||, floor), in f64 (the plain norm when both are 0)."""
    a, b = a.double(), b.double()
    scale = max(b.norm().item(), floor)
    return (a - b).norm().item() / scale if scale > 0 else (a - b).norm().item()


def all_named_parameters(module, prefix=""):
    """Every (name, parameter), a tied one under each of its names (torch 1.13's
    named_parameters lists it once)."""
    for n, p in module._parameters.items():
        if p is not None:
            yield prefix + n, p
    for n, child in module.named_children():
        yield from all_named_parameters(child, f"{prefix}{n}.")


def names_of(model):
    """Every name of each parameter (tied ones have several)."""
    names = {}
    for n, p in all_named_parameters(model):
        names.setdefault(id(p), []).append(n)
    return names


def run(directory):
    """Compares one dtype's run. Returns the failures; (dlf's, PyTorch's) weights after AdamW by
    name; PyTorch's first gradients by name; the family."""
    model, batch, dtype, family = build(directory)
    dlf, hyper = read_safetensors(f"{directory}/dlf.safetensors")
    tol = TOLERANCE[dtype]
    failures = []

    def check(what, got, expected, floor=0.0):
        err = relative(got, expected, floor)
        if not err <= tol:
            failures.append(f"{directory} ({dtype}): {what} differs by {err:.3g} relative "
                            f"(tolerance {tol:g})")

    with torch.no_grad():
        check("logits", dlf["logits"], model(batch))
    loss = model.loss(batch)
    loss.backward()
    check("loss", dlf["loss"], loss.detach())
    names = names_of(model)
    # A gradient that is zero in exact arithmetic (the key bias's: softmax ignores a constant
    # added to every score) is rounding noise in both frameworks: each gradient is compared
    # relative to its own norm, or to 1e-3 of the whole gradient's where that is larger.
    floor = 1e-3 * torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item()
    gradients = {}
    for p in model.parameters():
        name = next(n for n in names[id(p)] if f"grad.{n}" in dlf)
        check(f"gradient of {name}", dlf[f"grad.{name}"], p.grad, floor)
        gradients[name] = p.grad.clone()

    opt = torch.optim.AdamW(model.parameters(), lr=float(hyper["lr"]),
                            betas=(float(hyper["beta1"]), float(hyper["beta2"])),
                            eps=float(hyper["eps"]), weight_decay=float(hyper["weight_decay"]))
    losses = []
    for _ in range(int(hyper["steps"])):
        opt.zero_grad()
        step_loss = model.loss(batch)
        step_loss.backward()
        losses.append(step_loss.item())
        opt.step()
    check("AdamW losses", dlf["adamw_losses"], torch.tensor(losses, dtype=torch.float64))
    after = {}
    for p in model.parameters():
        name = next(n for n in names[id(p)] if f"adamw.{n}" in dlf)
        after[name] = (dlf[f"adamw.{name}"], p.detach().clone())
    print(f"{directory} ({dtype}): logits, loss, {len(gradients)} gradients and {len(losses)} "
          "AdamW losses checked")
    return failures, after, gradients, family


def main():
    failures, after, _, family = run(sys.argv[1])
    if len(sys.argv) > 2:
        more, reference, gradients, _ = run(sys.argv[2])
        failures += more
        # Where a gradient is zero in exact arithmetic (the key biases'), AdamW turns rounding
        # noise into steps of lr in either framework: those elements are left out below.
        top = max(g.abs().max().item() for g in gradients.values())
        names = sorted(after)
        real = {n: gradients[n].abs() > 1e-12 * top for n in names}
        left_out = sum(int((~real[n]).sum()) for n in names)

        def whole(i, source):
            return torch.cat([source[n][i].double()[real[n]] for n in names])

        exact = whole(1, reference)
        # f64: dlf's weights after AdamW are PyTorch's.
        err64 = relative(whole(0, reference), exact)
        if not err64 <= TOLERANCE["f64"]:
            failures.append(f"f64 weights after AdamW differ by {err64:.3g} relative")
        # f32: dlf's distance to the f64 result within a bound of its own; PyTorch's own f32 run's
        # for information only.
        dlf_err, torch_err = relative(whole(0, after), exact), relative(whole(1, after), exact)
        bound = F32_ADAMW_BOUND[family]
        print(f"AdamW weights vs PyTorch's f64 ({left_out} elements of zero gradient left out): "
              f"dlf f64 {err64:.3g}; f32: dlf {dlf_err:.3g} (bound {bound:g}), PyTorch's own "
              f"f32 run {torch_err:.3g} ({dlf_err / torch_err:.2f}x)")
        if not dlf_err <= bound:
            failures.append(f"dlf's f32 AdamW weights are {dlf_err:.3g} from the f64 result "
                            f"(bound {bound:g}; PyTorch's f32 run {torch_err:.3g})")
    for f in failures:
        print(f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
