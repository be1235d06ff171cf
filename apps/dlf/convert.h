// `dlf convert`: weights from one file format (and naming) to another.
#pragma once
#include <string>

namespace dlf::app {

struct ConvertOptions {
  std::string in, out;
  std::string names = "nanogpt";  ///< GPT's names in OUT: nanogpt (dlf's) or hf (GPT-2's)
  std::string model;              ///< the model IN holds, when IN does not say
  bool overwrite = false;         ///< replace weights already at OUT
};
/// Refuses an OUT that holds weights unless `overwrite`; reads IN (read_weights), checks it is
/// the whole of its model, writes OUT (write_weights) and
/// prints one line saying what was written.
void run_convert(const ConvertOptions& options);

}  // namespace dlf::app
