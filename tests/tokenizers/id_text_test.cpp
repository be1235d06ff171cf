#include <dlf/tokenizers/id_text.h>

#include "test_util.h"
#include "tokenizers/tiny_vocab.h"

namespace dlf::tokenizers {

TEST_CASE("id text: ids written with single spaces, read back through any whitespace") {
  std::string line = "ids:";
  append_ids_text({}, line);
  CHECK(line == "ids:");
  append_ids_text({0, 256, 4294967295u}, line);
  CHECK(line == "ids:0 256 4294967295");
  const Tokenizer t = test::make(test::byte_vocab({"ab"}));
  CHECK(decode_ids_text(t, " 104\t105\n256 \r\n", "f") == "hiab");
  CHECK(decode_ids_text(t, "", "f").empty());
  dlf::test::check_error([&] { decode_ids_text(t, "104 1o5 106", "f.txt"); },
                         {"f.txt: \"1o5\" at byte 4 is not a token id"});
  dlf::test::check_error([&] { decode_ids_text(t, "-1", "-"); },
                         {"standard input: \"-1\" at byte 0"});
}

}  // namespace dlf::tokenizers
