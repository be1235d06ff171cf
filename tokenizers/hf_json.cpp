// Hugging Face's tokenizer.json, for byte-level BPE models (GPT-2's, Llama 3's, dlf's trained
// ones): read, and written as Hugging Face tokenizers writes it.
#include <dlf/error.h>

#include "byte_level.h"
#include "encodings.h"
#include "files.h"

namespace dlf::tokenizers::detail {
namespace {

using json::Value;
using Kind = Value::Kind;

std::string type_of(const Value* v) {
  const Value* type = v != nullptr ? v->find("type") : nullptr;
  return type != nullptr && type->kind == Kind::string ? type->text : "";
}

bool flag(const Value& v, std::string_view key, bool otherwise) {
  const Value* f = v.find(key);
  return f != nullptr && f->kind == Kind::boolean ? f->boolean : otherwise;
}

bool is_null(const Value* v) { return v == nullptr || v->kind == Kind::null; }

// The regex of a pre-tokenizer: ByteLevel with its own regex (GPT-2's), or a Split on a regex
// (isolating its matches) followed by ByteLevel without one (Llama 3's).
std::string pattern_of(const Value* pre, const std::string& source) {
  const auto check_byte_level = [&](const Value& byte_level) {
    DLF_CHECK(!flag(byte_level, "add_prefix_space", false), source,
              ": ByteLevel's add_prefix_space is not supported (a space before the text changes "
              "its first token)");
  };
  const std::string type = type_of(pre);
  if (type == "ByteLevel") {
    check_byte_level(*pre);
    DLF_CHECK(flag(*pre, "use_regex", true), source,
              ": a ByteLevel pre-tokenizer without its regex leaves no pieces to merge");
    return std::string(kGpt2Pattern);
  }
  const Value* steps = type == "Sequence" ? pre->find("pretokenizers") : nullptr;
  DLF_CHECK(steps != nullptr && steps->kind == Kind::array && steps->items.size() == 2 &&
                type_of(&steps->items[0]) == "Split" && type_of(&steps->items[1]) == "ByteLevel",
            source, ": the pre-tokenizer ", type.empty() ? "(none)" : type,
            " is not supported: dlf reads ByteLevel, or a Sequence of a Split on a regex and a "
            "ByteLevel (a byte-level BPE)");
  const Value& split = steps->items[0];
  check_byte_level(steps->items[1]);
  DLF_CHECK(!flag(steps->items[1], "use_regex", true), source,
            ": a ByteLevel with its own regex after a Split is not supported");
  const Value* behavior = split.find("behavior");
  const Value* pattern = split.find("pattern");
  const Value* regex = pattern != nullptr ? pattern->find("Regex") : nullptr;
  DLF_CHECK(regex != nullptr && regex->kind == Kind::string && behavior != nullptr &&
                behavior->text == "Isolated" && !flag(split, "invert", false),
            source, ": only a Split on a {\"Regex\": ...} with behavior Isolated is supported");
  return regex->text;
}

}  // namespace

Definition read_tokenizer_json(const Value& root, const fs::path& path) {
  Definition d;
  d.source = path.string();
  const Value* model = root.find("model");
  DLF_CHECK(model != nullptr && model->kind == Kind::object &&
                (type_of(model).empty() || type_of(model) == "BPE"),
            d.source, ": the model is ", type_of(model), ", not BPE");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Value* a = model->find(affix);
    DLF_CHECK(is_null(a) || (a->kind == Kind::string && a->text.empty()), d.source, ": ", affix,
              " is not supported (byte-level BPEs have none)");
  }
  DLF_CHECK(is_null(root.find("normalizer")), d.source, ": the normalizer ",
            type_of(root.find("normalizer")), " is not supported (byte-level BPEs have none)");
  const Value* decoder = root.find("decoder");
  DLF_CHECK(is_null(decoder) || type_of(decoder) == "ByteLevel", d.source, ": the decoder ",
            type_of(decoder), " is not supported (byte-level BPEs decode with ByteLevel)");
  d.pattern = pattern_of(root.find("pre_tokenizer"), d.source);
  d.rule = Definition::Rule::listed;
  d.whole_piece_first = flag(*model, "ignore_merges", false);

  const Value* vocab = model->find("vocab");
  const Value* merges = model->find("merges");
  DLF_CHECK(vocab != nullptr && merges != nullptr && merges->kind == Kind::array, d.source,
            ": the BPE model needs a vocab object and a merges array");
  StringMap<uint32_t> spelled(vocab->members.size());
  read_byte_level_vocab(*vocab, false, d, spelled);
  d.merges.reserve(merges->items.size());
  for (size_t i = 0; i < merges->items.size(); ++i) {
    const Value& m = merges->items[i];
    const std::string where = d.source + " merge " + std::to_string(i);
    if (m.kind == Kind::string) {  // "Ġ t"
      const size_t space = m.text.find(' ');
      DLF_CHECK(space != std::string::npos && m.text.find(' ', space + 1) == std::string::npos,
                where, ": a merge is two tokens and one space, not \"", m.text, "\"");
      d.merges.push_back(merge_of(std::string_view(m.text).substr(0, space),
                                  std::string_view(m.text).substr(space + 1), spelled, where));
    } else {  // ["Ġ", "t"]
      DLF_CHECK(m.kind == Kind::array && m.items.size() == 2 && m.items[0].kind == Kind::string &&
                    m.items[1].kind == Kind::string,
                where, ": a merge is \"left right\" or [\"left\", \"right\"]");
      d.merges.push_back(merge_of(m.items[0].text, m.items[1].text, spelled, where));
    }
  }

  if (const Value* added = root.find("added_tokens"); !is_null(added)) {
    DLF_CHECK(added->kind == Kind::array, d.source, ": added_tokens is not an array");
    for (const Value& a : added->items) {
      const Value* id = a.find("id");
      const Value* content = a.find("content");
      const std::optional<uint64_t> value = id != nullptr ? id->as_uint64() : std::nullopt;
      DLF_CHECK(value && *value < (uint64_t(1) << 31) && content != nullptr &&
                    content->kind == Kind::string,
                d.source, ": an added token needs an id and a content");
      d.specials.push_back({content->text, uint32_t(*value)});
    }
  }
  return d;
}

std::string to_tokenizer_json(const Definition& d) {
  using json::quote;
  DLF_CHECK(d.rule == Definition::Rule::listed, "tokenizer ", d.source,
            " merges by rank (tiktoken's): tokenizer.json lists merges, and a list cannot say "
            "what ranks do when two pairs make one token; keep its rank file");
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
  out += "  \"added_tokens\": [";
  for (size_t i = 0; i < d.specials.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    out += "{\"id\": " + std::to_string(d.specials[i].id) +
           ", \"content\": " + quote(d.specials[i].text) +
           ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
           "\"normalized\": false, \"special\": true}";
  }
  out += d.specials.empty() ? "],\n" : "\n  ],\n";
  out += "  \"normalizer\": null,\n";
  out +=
      "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
      "\"pattern\": {\"Regex\": " +
      quote(d.pattern) +
      "}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "
      "\"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},\n";
  out += "  \"post_processor\": null,\n";
  out +=
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, \"trim_offsets\": "
      "true, \"use_regex\": true},\n";
  out +=
      "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, "
      "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": "
      "false, \"byte_fallback\": false, \"ignore_merges\": ";
  out += d.whole_piece_first ? "true" : "false";
  out += ",\n    \"vocab\": {";
  bool first = true;
  for (uint32_t id = 0; id < d.tokens.size(); ++id) {
    if (d.tokens[id].empty()) continue;
    out += first ? "\n      " : ",\n      ";
    first = false;
    out += quote(to_byte_level(d.tokens[id])) + ": " + std::to_string(id);
  }
  out += "\n    },\n    \"merges\": [";
  for (size_t i = 0; i < d.merges.size(); ++i) {
    out += i ? ",\n      " : "\n      ";
    // "left right", as every version of Hugging Face tokenizers reads (a byte-level spelling has
    // no space)
    out += quote(to_byte_level(d.tokens[d.merges[i].first]) + " " +
                 to_byte_level(d.tokens[d.merges[i].second]));
  }
  out += d.merges.empty() ? "]\n  }\n}\n" : "\n    ]\n  }\n}\n";
  return out;
}

}  // namespace dlf::tokenizers::detail
