#include <dlf/models/gpt_names.h>

#include <array>
#include <cstring>

namespace dlf::models {
namespace {

constexpr const char* kPrefix = "transformer.";

bool is_conv1d_weight(const std::string& name) {
  static constexpr std::array<const char*, 4> kConv1D = {
      ".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"};
  for (const char* suffix : kConv1D)
    if (name.ends_with(suffix)) return true;
  return false;
}

bool is_mask_buffer(const std::string& name) {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

Tensor transposed(const Tensor& t, const std::string& name) {
  DLF_CHECK(t.dim() == 2, "GPT-2 weight '", name, "' is ", shape_str(t.shape()), ", not a matrix");
  return t.transpose(0, 1).contiguous();
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(kCPU).contiguous(), y = b.to(kCPU).contiguous();
  return x.nbytes() == 0 || std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

const Tensor* find(const nn::NamedTensors& state, const std::string& name) {
  for (const auto& [n, t] : state)
    if (n == name) return &t;
  return nullptr;
}

}  // namespace

nn::NamedTensors gpt_to_hf(const nn::NamedTensors& state) {
  nn::NamedTensors out;
  for (const auto& [name, t] : state) {
    if (name == "lm_head.weight") continue;
    std::string hf = name.starts_with(kPrefix) ? name.substr(std::strlen(kPrefix)) : name;
    out.emplace_back(hf, is_conv1d_weight(hf) ? transposed(t, name) : t);
  }
  return out;
}

nn::NamedTensors gpt_from_hf(const nn::NamedTensors& state) {
  nn::NamedTensors out;
  const Tensor* head = nullptr;
  for (const auto& [name, t] : state) {
    if (name == "lm_head.weight") {
      head = &t;
      continue;
    }
    const std::string plain = name.starts_with(kPrefix) ? name.substr(std::strlen(kPrefix)) : name;
    if (is_mask_buffer(plain)) continue;
    out.emplace_back(kPrefix + plain, is_conv1d_weight(plain) ? transposed(t, name) : t);
  }
  if (head) {
    const Tensor* wte = find(out, "transformer.wte.weight");
    DLF_CHECK(wte && same_values(*wte, *head),
              "GPT-2 weights: lm_head.weight is not wte.weight, and dlf's GPT ties the two");
  }
  return out;
}

bool is_hf_gpt(const nn::NamedTensors& state) {
  for (const auto& [name, t] : state) {
    if (!name.ends_with("h.0.attn.c_attn.weight") || t.dim() != 2) continue;
    return t.size(1) == 3 * t.size(0) && t.size(0) != 3 * t.size(1);
  }
  return false;
}

}  // namespace dlf::models
