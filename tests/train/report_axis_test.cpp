#include "test_util.h"

#include <dlf/train/report_axis.h>

using dlf::train::axis_ticks;
using dlf::train::AxisTicks;
using dlf::test::check_error;
using Labels = std::vector<std::string>;

TEST_CASE("report axis: round ticks of 1, 2 or 5 x 10^k that bound the data") {
  // (5.56 - 0.013) / 5 = 1.11: a step of 1, from 0 below the data to 6 above it
  AxisTicks t = axis_ticks(0.013, 5.56);
  CHECK(t.values == std::vector<double>{0, 1, 2, 3, 4, 5, 6});
  CHECK(t.labels == Labels{"0", "1", "2", "3", "4", "5", "6"});
  // 1.05 / 5 = 0.21: 0.2, labelled with one decimal, each value i x 2 / 10
  t = axis_ticks(0, 1.05);
  CHECK(t.labels == Labels{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"});
  CHECK(t.values[3] == 0.6);
  CHECK(t.values[6] == 1.2);
  // across zero: 0.178 -> 0.2
  CHECK(axis_ticks(-0.37, 0.52).labels == Labels{"-0.4", "-0.2", "0.0", "0.2", "0.4", "0.6"});
  // 84 is nearer 100 than 50 on a log scale (past sqrt(50) = 7.07)
  CHECK(axis_ticks(3810, 4230).labels == Labels{"3800", "3900", "4000", "4100", "4200", "4300"});
  // 0.0007 is below 7.07 x 10^-4: 0.0005
  CHECK(axis_ticks(0.0012, 0.0047).labels == Labels{"0.0010", "0.0015", "0.0020", "0.0025",
                                                    "0.0030", "0.0035", "0.0040", "0.0045",
                                                    "0.0050"});
  CHECK(axis_ticks(0, 2.5e6).labels ==
        Labels{"0", "500000", "1000000", "1500000", "2000000", "2500000"});
  // ends on multiples of the step (0.3 / 0.1 is 2.9999999999999996) add no tick beyond them
  CHECK(axis_ticks(0.3, 0.9).labels == Labels{"0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"});
  // a count of 10: 0.555 -> 0.5
  CHECK(axis_ticks(0.013, 5.56, 10).values ==
        std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6});
}

TEST_CASE("report axis: an axis of whole numbers has no step below 1") {
  CHECK(axis_ticks(1, 4).labels == Labels{"1.0", "1.5", "2.0", "2.5", "3.0", "3.5", "4.0"});
  CHECK(axis_ticks(1, 4, 5, true).labels == Labels{"1", "2", "3", "4"});
  CHECK(axis_ticks(0, 1234, 5, true).labels ==
        Labels{"0", "200", "400", "600", "800", "1000", "1200", "1400"});
  check_error([] { axis_ticks(2, 2); }, {"axis_ticks", "lo < hi", "[2, 2]"});
  check_error([] { axis_ticks(0, std::nan("")); }, {"axis_ticks", "finite"});
}
