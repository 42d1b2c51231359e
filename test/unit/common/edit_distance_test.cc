#include "common/edit_distance.h"

#include <gtest/gtest.h>

namespace hvd {
namespace {

TEST(EditDistanceTest, CountsInsertsDeletesReplacesAndSwaps) {
  EXPECT_EQ(EditDistance("hostfile", "hostfile", 2), 0u);
  EXPECT_EQ(EditDistance("hostfle", "hostfile", 2), 1u);    // a letter left out
  EXPECT_EQ(EditDistance("hostfiles", "hostfile", 2), 1u);  // one too many
  EXPECT_EQ(EditDistance("hostfule", "hostfile", 2), 1u);   // one wrong
  EXPECT_EQ(EditDistance("hsotfile", "hostfile", 2), 1u);   // two swapped
  EXPECT_EQ(EditDistance("fusion-treshold", "fusion-threshold", 2), 1u);
  EXPECT_EQ(EditDistance("", "ab", 2), 2u);
}

TEST(EditDistanceTest, StopsCountingPastTheLimit) {
  EXPECT_EQ(EditDistance("bogus", "verbose", 1), 2u);  // limit + 1, however far
  EXPECT_EQ(EditDistance("a", "abcdefgh", 2), 3u);     // the lengths alone say so
  EXPECT_EQ(EditDistance("abc", "xyz", 0), 1u);
}

TEST(EditDistanceTest, GuessesAreNamedAsDidYouMeanSaysThem) {
  EXPECT_EQ(GuessList({"--hostfile"}), "--hostfile");
  EXPECT_EQ(GuessList({"--min-np", "--min-num-proc"}), "one of --min-np, --min-num-proc");
}

}  // namespace
}  // namespace hvd
