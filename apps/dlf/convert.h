// `dlf convert`: weights from one file format (and naming) to another.
#pragma once
#include <cstdint>
#include <string>

namespace dlf::app {

struct ConvertOptions {
  std::string in, out;
  std::string names = "dlf";  ///< names in OUT: dlf's (nanogpt, a synonym) or hf (Hugging Face's)
  uint64_t max_shard_bytes = 0;  ///< > 0: OUT is a directory of shards of at most these bytes
  std::string model;             ///< the model IN holds, when IN does not say
  bool overwrite = false;        ///< replace weights already at OUT
};
/// Refuses an OUT that holds weights unless `overwrite`; reads IN (read_weights), checks it is
/// the whole of its model, writes OUT (write_weights) and
/// prints one line saying what was written.
void run_convert(const ConvertOptions& options);

}  // namespace dlf::app
