// The blas backend's thread team (corgy/backends/blas/thread_team.h): its work queue hands out every item exactly
// once however members race for them, and each member's own contiguous share first, so that the layers of a
// network split their tensors alike.
#include "corgy/backends/blas/thread_team.h"

#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "corgy/error.h"

namespace corgy::testing {
namespace {

TEST(WorkQueue, EveryItemOnceAmongRacingMembers) {
  for (const int members : {1, 2, 3, 4}) {
    blas::ThreadTeam team(members, /*pin_workers=*/false);
    for (const std::size_t count : {0, 1, 2, 7, 64, 1001}) {
      for (int round = 0; round < 20; ++round) {
        blas::WorkQueue queue(count, members);
        std::vector<int> taken(count, 0);
        std::mutex lock;
        team.run(members, [&](const blas::TeamMember& member) {
          std::vector<std::size_t> mine;
          std::size_t item = 0;
          while (queue.next(member, item)) mine.push_back(item);
          const std::lock_guard<std::mutex> guard(lock);
          for (const std::size_t i : mine) {
            ASSERT_LT(i, count);
            ++taken[i];
          }
        });
        for (std::size_t i = 0; i < count; ++i) {
          ASSERT_EQ(taken[i], 1) << "item " << i << " of " << count << ", " << members << " members";
        }
      }
    }
  }
}

TEST(WorkQueue, OwnShareInOrderThenTheOthersFromTheirEnds) {
  // Member 1 of 3 alone: its share [4, 8) of 10 items in order, then the last item of whichever member has the most
  // left, until none has any.
  blas::WorkQueue queue(10, 3);
  const blas::TeamMember member(1, 3, nullptr);
  std::vector<std::size_t> order;
  std::size_t item = 0;
  while (queue.next(member, item)) order.push_back(item);
  EXPECT_EQ(order, (std::vector<std::size_t>{4, 5, 6, 7, 3, 2, 1, 9, 0, 8}));
}

TEST(WorkQueue, TwoMembersInTurnKeepToTheirHalves) {
  blas::WorkQueue queue(8, 2);
  const blas::TeamMember first(0, 2, nullptr);
  const blas::TeamMember second(1, 2, nullptr);
  std::vector<std::size_t> taken_by_first, taken_by_second;
  std::size_t item = 0;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(queue.next(first, item));
    taken_by_first.push_back(item);
    ASSERT_TRUE(queue.next(second, item));
    taken_by_second.push_back(item);
  }
  EXPECT_FALSE(queue.next(first, item));
  EXPECT_FALSE(queue.next(second, item));
  EXPECT_EQ(taken_by_first, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(taken_by_second, (std::vector<std::size_t>{4, 5, 6, 7}));
}

TEST(WorkQueue, MoreItemsThan32BitsAreRefused) { EXPECT_THROW(blas::WorkQueue(std::size_t{1} << 32, 2), Error); }

}  // namespace
}  // namespace corgy::testing
