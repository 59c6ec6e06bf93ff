#include "core/units.h"

#include <gtest/gtest.h>

namespace meshplan::core {
namespace {

TEST(UnitsTest, ByteSizesDistinguishBinaryAndDecimal) {
  int64_t v = 0;
  ASSERT_TRUE(ParseByteSize("80GiB", &v));
  EXPECT_EQ(v, 80LL * 1024 * 1024 * 1024);  // 85,899,345,920
  ASSERT_TRUE(ParseByteSize("80GB", &v));
  EXPECT_EQ(v, 80'000'000'000LL);
  ASSERT_TRUE(ParseByteSize("1.5 TB", &v));
  EXPECT_EQ(v, 1'500'000'000'000LL);
  ASSERT_TRUE(ParseByteSize("512MiB", &v));
  EXPECT_EQ(v, 512LL << 20);
}

TEST(UnitsTest, BareOrUnknownUnitsAreRejected) {
  int64_t v = 7;
  EXPECT_FALSE(ParseByteSize("80G", &v));  // ambiguous: 7% apart at this size
  EXPECT_FALSE(ParseByteSize("80", &v));
  EXPECT_FALSE(ParseByteSize("GiB", &v));
  EXPECT_FALSE(ParseByteSize("-1GB", &v));
  EXPECT_EQ(v, 7);  // untouched on error
}

TEST(UnitsTest, BandwidthBitsAndBytes) {
  double v = 0;
  ASSERT_TRUE(ParseBandwidth("400Gb/s", &v));
  EXPECT_DOUBLE_EQ(v, 50e9);  // NDR: 400 Gbit/s = 50 GB/s
  ASSERT_TRUE(ParseBandwidth("450 GB/s", &v));
  EXPECT_DOUBLE_EQ(v, 450e9);
  EXPECT_FALSE(ParseBandwidth("400G", &v));
}

TEST(UnitsTest, FormatBytesUsesDecimalUnits) {
  EXPECT_EQ(FormatBytes(141'100'000'000LL), "141.1 GB");
  EXPECT_EQ(FormatBytes(1'129'000'000'000LL), "1.129 TB");
  EXPECT_EQ(FormatBytes(512), "512 B");
}

}  // namespace
}  // namespace meshplan::core
