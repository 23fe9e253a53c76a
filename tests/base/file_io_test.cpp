#include "vxperf/file_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace vxperf {
namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "vxperf-file-io-" + name + "-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int entries(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

TEST(FileIo, AFileIsReplacedWholeAndOnlyOnCommit) {
  std::string dir = fresh_dir("commit"), path = dir + "/out.txt";
  ASSERT_EQ(write_file_atomically(path, "old\n"), "");
  {
    AtomicFile file;
    ASSERT_EQ(file.open(path), "");
    ASSERT_EQ(write_all(file.fd(), "new", 3), 0);
    EXPECT_EQ(contents(path), "old\n");  // not yet: the old file stands while the new is written
    EXPECT_EQ(entries(dir), 2);
  }  // never committed: removed, the old file as it was
  EXPECT_EQ(contents(path), "old\n");
  EXPECT_EQ(entries(dir), 1);
  ASSERT_EQ(write_file_atomically(path, "new\n"), "");
  EXPECT_EQ(contents(path), "new\n");
  EXPECT_EQ(entries(dir), 1);
}

TEST(FileIo, AFolderThatIsNotThereIsSaid) {
  EXPECT_EQ(write_file_atomically(fresh_dir("missing") + "/no/such/out.txt", "x"),
            "No such file or directory");
}

TEST(FileIo, WritersOfOnePathInOneProcessNeverShareATemporaryFile) {
  std::string dir = fresh_dir("threads"), path = dir + "/out.txt";
  std::vector<std::thread> writers;
  std::vector<std::string> results(8);
  for (int i = 0; i < 8; ++i) {
    writers.emplace_back([&, i] {
      results[i] = write_file_atomically(path, std::string(1000, char('a' + i)) + "\n");
    });
  }
  for (auto& w : writers) w.join();
  for (const auto& r : results) EXPECT_EQ(r, "");
  std::string got = contents(path);
  ASSERT_EQ(got.size(), 1001u);
  EXPECT_EQ(got.find_first_not_of(got[0]), 1000u);  // one writer's content, whole
  EXPECT_EQ(entries(dir), 1);
}

TEST(FileIo, ALineIsOneWriteWithItsNewline) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_TRUE(write_line(fds[1], "[Perf] one line"));
  ::close(fds[1]);
  char buf[64] = {};
  ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "[Perf] one line\n");
}

TEST(FileIo, AClosedDescriptorIsAFailureWithItsErrno) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  ::close(fds[1]);
  errno = 0;
  EXPECT_FALSE(write_line(fds[1], "lost"));
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(write_all(fds[1], "x", 1), EBADF);
}

}  // namespace
}  // namespace vxperf
