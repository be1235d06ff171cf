# The reference values of tests/core/llm_ops_test.cpp's rotary case: Hugging Face Llama's
# rotate-half apply_rotary_pos_emb with Llama 3's frequency scaling (_compute_llama3_parameters),
# and Meta's interleaved (complex) form, in PyTorch f64. Run: /usr/bin/python3 rope_reference.py
import torch, math
torch.set_default_dtype(torch.float64)
def llama3_inv_freq(d, theta, factor, low, high, ctx):
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    lw, hw = ctx / low, ctx / high
    wl = 2 * math.pi / inv
    out = torch.where(wl > lw, inv / factor, inv)
    smooth = (ctx / wl - low) / (high - low)
    sm = (1 - smooth) * out / factor + smooth * out
    med = ~(wl < hw) & ~(wl > lw)
    return torch.where(med, sm, out)
def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]; x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)
B,H,T,D=1,2,3,8
n=B*H*T*D
x=torch.tensor([0.1*(i+1)*(-1)**i for i in range(n)]).reshape(B,H,T,D)
inv=llama3_inv_freq(D,100.0,8.0,1.0,4.0,32)
pos=torch.arange(T,dtype=torch.float64)+7
freqs=torch.outer(pos,inv)
emb=torch.cat((freqs,freqs),-1)
y=x*emb.cos()+rotate_half(x)*emb.sin()
print(inv.tolist())
print(",".join("%.17g"%v for v in y.flatten().tolist()))
# Meta interleaved: view as complex pairs
xc=torch.view_as_complex(x.reshape(B,H,T,D//2,2).contiguous())
yc=xc*torch.polar(torch.ones_like(freqs),freqs)
yi=torch.view_as_real(yc).reshape(B,H,T,D)
print(",".join("%.17g"%v for v in yi.flatten().tolist()))
