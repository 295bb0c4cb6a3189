// strata under mpirun: ranks as devices give the single-process text, refuse a rank that sees
// another model file, and report a rank that dies or stops answering. Every run stays on this
// machine (shared memory, or TCP over loopback); without mpirun the tests are skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace strata::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kGreedy = " -p 'Once upon a time' -n 24 --temp 0";

bool have_mpirun() {
  return run_script("command -v mpirun >/dev/null 2>&1").exit_code == 0;
}

// mpirun as root needs --allow-run-as-root; more ranks than cores need --oversubscribe.
std::string mpirun(int ranks, const std::string& transport = "--mca btl self,vader") {
  return "timeout 120 mpirun --allow-run-as-root --oversubscribe " + transport + " -np " +
         std::to_string(ranks) + " ";
}

const std::string kLoopbackTcp = "--mca btl self,tcp --mca btl_tcp_if_include lo";

std::string text_of(const std::string& prefix, const std::string& args) {
  return run_script(prefix + std::string(STRATA_BIN) + " " + args + " 2>/dev/null").out;
}

class MpiCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_mpirun()) GTEST_SKIP() << "mpirun not installed";
    if (!have_stories()) GTEST_SKIP() << "no stories260K";
  }
};

TEST_F(MpiCli, DevicesListsEveryRank) {
  const Outcome o = run_script(mpirun(3) + STRATA_BIN + " devices 2>&1");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpi:0"));
  EXPECT_THAT(o.out, HasSubstr("mpi:1"));
  EXPECT_THAT(o.out, HasSubstr("mpi:2"));
  EXPECT_THAT(o.out, HasSubstr("rank 2 on "));
}

TEST_F(MpiCli, SplitsGiveThePlainText) {
  const std::string plain = text_of("", "run -m " + kStories + kGreedy);
  ASSERT_THAT(plain, HasSubstr("Once upon a time"));
  struct Case {
    int ranks;
    std::string layout;
  };
  for (const Case& c : std::vector<Case>{
           {2, " --devices mpi:0,mpi:1 -sm tensor -ngl 99"},
           {3, " --devices mpi:0,mpi:1,mpi:2 -sm tensor -ngl 99 -ts 2,1,1"},
           {2, " --devices mpi:0,mpi:1 -sm tensor -ngl 3"},
           {3, " --devices mpi:0,mpi:1,mpi:2 -sm tensor -ngl 99 --no-kv-offload"},
           {2, " --devices mpi:0,mpi:1 -sm layer -ngl 99"},
           {3, " --devices mpi:0,mpi:1,mpi:2 -sm layer -ngl 99"},
           {3, " --devices mpi:1,mpi:2 -sm layer -ngl 3"},
           {2, " --devices mpi:0,mpi:1 -sm layer -ngl 99 --no-kv-offload"},
           {2, " --devices mpi:1 -ngl 2"},
           // partitions of the ranks' cores: mpi:R/part:K
           {2, " --devices mpi:1/part:0,mpi:1/part:1 -sm layer -ngl 99"},
           {2, " --devices mpi:0/part:0,mpi:1/part:0,mpi:1/part:1 -sm tensor -ngl 99"},
           {3, " --devices mpi:0,mpi:1/part:1,mpi:2/part:0 -sm tensor -ngl 99"},
       }) {
    EXPECT_EQ(text_of(mpirun(c.ranks), "run -m " + kStories + kGreedy + c.layout), plain)
        << c.ranks << " ranks:" << c.layout;
  }
}

// Paged execution, KV paging and weight streaming with the KV cache and the weights in the
// ranks' memory: the pagers write and read it through the ranks' buffers, and streamed weights
// are read by each rank from its own copy of the file (rank 0 sends less than one layer).
TEST_F(MpiCli, PagingIntoRanksGivesThePlainText) {
  const std::string plain = text_of("", "run -m " + kStories + kGreedy);
  ASSERT_THAT(plain, HasSubstr("Once upon a time"));
  for (const std::string& layout : {
           std::string(" --devices mpi:0,mpi:1 -sm layer -ngl 99 --paged"),
           std::string(" --devices mpi:0,mpi:1 -sm tensor -ngl 99 --paged"),
           std::string(" --devices mpi:0,mpi:1 -sm layer -ngl 99 --kv-resident 50%"),
           std::string(" --devices mpi:0,mpi:1 -sm tensor -ngl 99 --kv-resident 40%"),
           std::string(
               " --devices mpi:0,mpi:1 -sm layer -ngl 3 --stream-slots 2 --kv-resident 40%"),
           std::string(" --devices mpi:0,mpi:1 -sm tensor -ngl 99 --stream-slots 2"),
       }) {
    EXPECT_EQ(text_of(mpirun(2), "run -m " + kStories + kGreedy + layout), plain) << layout;
  }
  const Outcome o =
      run_script("STRATA_MPI_TRAFFIC=1 " + mpirun(2) + STRATA_BIN + " run -m " + kStories +
                 kGreedy + " --devices mpi:0,mpi:1 -sm tensor -ngl 99 --stream-slots 2 -v 2>&1");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("weight streaming: 5 layers")) << o.out;
  const size_t at = o.out.find("mpi: rank 0 sent ");
  ASSERT_NE(at, std::string::npos) << o.out;
  const size_t messages_end = o.out.find(" messages, ", at);
  ASSERT_NE(messages_end, std::string::npos) << o.out;
  const double sent = std::stod(o.out.substr(messages_end + 11));
  // Streaming reads the five layers (888 KiB) again for every token; sending them would be
  // tens of MiB.
  EXPECT_LT(sent, 4.0 * 1024 * 1024) << o.out;
}

TEST_F(MpiCli, LoopbackTcpGivesThePlainText) {
  const std::string plain = text_of("", "run -m " + kStories + kGreedy);
  EXPECT_EQ(text_of(mpirun(2, kLoopbackTcp),
                    "run -m " + kStories + kGreedy + " --devices mpi:0,mpi:1 -ngl 99"),
            plain);
}

TEST_F(MpiCli, DevicesListsEveryRanksPartitions) {
  const Outcome o = run_script(mpirun(2) + STRATA_BIN + " devices --partitions 2 2>&1");
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpi:0/part:1"));
  EXPECT_THAT(o.out, HasSubstr("mpi:1/part:0"));
  EXPECT_THAT(o.out, HasSubstr("mpi:1/part:1"));
}

// A partition of a rank has the budget --device-mem gives it, and says so when it is short.
TEST_F(MpiCli, RankPartitionBudgetIsKept) {
  const Outcome o = run_script(mpirun(2) + STRATA_BIN + " run -m " + kStories +
                               " -p hi -n 2 --devices mpi:1/part:0 -ngl 99 --partitions 2 "
                               "--device-mem 200K 2>&1");
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpi:1/part:0: cannot allocate")) << o.out;
  EXPECT_THAT(o.out, HasSubstr("of its budget of 200 KiB")) << o.out;
}

TEST_F(MpiCli, TensorSplitMustStartWithRankZero) {
  const Outcome o = run_script(mpirun(2) + STRATA_BIN + " run -m " + kStories +
                               " -p hi -n 2 --devices mpi:1,mpi:0 -sm tensor -ngl 99 2>&1");
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("list mpi:0 first"));
}

// The server on rank 0, the model split by tensors over two ranks: a greedy completion is the
// plain run's text.
TEST_F(MpiCli, ServeGivesThePlainText) {
  if (run_script("command -v curl >/dev/null 2>&1").exit_code != 0) GTEST_SKIP() << "no curl";
  std::string expected = text_of("", "run -m " + kStories + kGreedy);
  expected = expected.substr(std::string("Once upon a time").size());
  const std::string log = std::string(STRATA_TEST_TMPDIR) + "/mpi_serve.log";
  const std::string script =
      mpirun(2) + STRATA_BIN + " serve -m " + kStories +
      " --port 0 -c 1031 --devices mpi:0,mpi:1 -sm tensor -ngl 99 > " + log +
      R"( 2>&1 & pid=$!; port=''; for i in $(seq 100); do )" +
      R"(port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' )" + log +
      R"(); [ -n "$port" ] && break; sleep 0.1; done; )" +
      R"(curl -s http://127.0.0.1:$port/v1/completions -H 'Content-Type: application/json' )" +
      R"(-d '{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}'; )" +
      // ^C to rank 0 alone (mpirun would end every rank itself): it stops the other ranks.
      R"(echo; for p in $(pgrep -f -- '-c 1031 --devices'); do tr '\0' '\n' < /proc/$p/environ )" +
      R"sh(| grep -qx OMPI_COMM_WORLD_RANK=0 && [ "$(cat /proc/$p/comm)" = strata ] && )sh" +
      R"(kill -INT $p; done; wait $pid; echo rc=$?)";
  const Outcome o = run_script(script);
  EXPECT_THAT(o.out, HasSubstr("rc=0")) << o.out << run_script("cat " + log).out;
  EXPECT_THAT(run_script("cat " + log).out, HasSubstr("strata serve: stopped")) << o.out;
  // The JSON text field holds the continuation (no quotes or escapes in this one).
  EXPECT_THAT(o.out, HasSubstr(R"("text":")" + expected.substr(0, expected.find('\n')))) << o.out;
}

// perplexity and bench run under mpirun like run: a layer split scores the text as the plain
// run does, a tensor split within its rounding.
TEST_F(MpiCli, PerplexityAndBenchRunAcrossRanks) {
  const std::string text = std::string(STRATA_SHARED_DIR) + "/README.md";
  auto final_ppl = [](const std::string& out) {
    const size_t at = out.rfind("PPL = ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 6));
  };
  const double plain = final_ppl(run("perplexity -m " + kStories + " -f " + text + " -c 64").out);
  ASSERT_GT(plain, 0);
  const Outcome layer = run_script(mpirun(3) + STRATA_BIN + " perplexity -m " + kStories + " -f " +
                                   text + " -c 64 --devices mpi:1,mpi:2 -ngl 99 2>&1");
  EXPECT_EQ(final_ppl(layer.out), plain) << layer.out;
  const Outcome tensor = run_script(mpirun(2) + STRATA_BIN + " perplexity -m " + kStories + " -f " +
                                    text + " -c 64 --devices mpi:0,mpi:1 -sm tensor -ngl 99 2>&1");
  EXPECT_NEAR(final_ppl(tensor.out), plain, 1e-4 * plain) << tensor.out;
  const Outcome bench =
      run_script(mpirun(2) + STRATA_BIN + " bench -m " + kStories +
                 " -p 16 -n 4 -r 1 --devices mpi:0,mpi:1 -sm tensor -ngl 99 2>&1");
  EXPECT_EQ(bench.exit_code, 0) << bench.out;
  EXPECT_THAT(bench.out, HasSubstr("tg4"));
}

TEST_F(MpiCli, MpiDevicesWithoutMpirunAreAnError) {
  const Outcome o = run("run -m " + kStories + " -p hi -n 2 --devices mpi:0,mpi:1");
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpirun"));
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

TEST_F(MpiCli, UnknownRankIsAnError) {
  const Outcome o = run_script(mpirun(2) + STRATA_BIN + " run -m " + kStories +
                               " -p hi -n 2 --devices mpi:0,mpi:5 2>&1");
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpi:5"));
}

// Each rank opens the path rank 0 was given, from its own working directory (mpirun's
// --wdir per rank): a rank that finds another file there is refused before anything runs.
TEST_F(MpiCli, RankWithAnotherModelFileIsRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(STRATA_TEST_TMPDIR) / "mpi_other_file";
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  fs::create_directories(dir / "c");
  fs::create_symlink(kStories, dir / "a" / "model.gguf");
  fs::create_symlink(kStories, dir / "b" / "model.gguf");
  fs::create_symlink(std::string(STRATA_SHARED_DIR) + "/models/stories260K-f16.gguf",
                     dir / "c" / "model.gguf");
  const std::string base =
      "timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl "
      "self,vader ";
  auto rank = [&](const std::string& wdir) {
    return "-np 1 --wdir " + (dir / wdir).string() + " " + STRATA_BIN +
           " run -m model.gguf -p hi -n 2 --devices mpi:0,mpi:1 -ngl 99";
  };
  const Outcome same = run_script(base + rank("a") + " : " + rank("b") + " 2>&1");
  EXPECT_EQ(same.exit_code, 0) << same.out;
  const Outcome other = run_script(base + rank("a") + " : " + rank("c") + " 2>&1");
  EXPECT_NE(other.exit_code, 0) << other.out;
  EXPECT_THAT(other.out, HasSubstr("mpi:1 (rank 1) does not see the same 'model.gguf'"));
  fs::remove(dir / "c" / "model.gguf");
  const Outcome missing = run_script(base + rank("a") + " : " + rank("c") + " 2>&1");
  EXPECT_NE(missing.exit_code, 0) << missing.out;
  EXPECT_THAT(missing.out, HasSubstr("mpi:1 (rank 1)"));
  fs::remove_all(dir);
}

// Rank 1 under a small address-space limit cannot hold the compute buffer it is given (a
// micro-batch's attention scores over 120000 cells, about 2 GiB): rank 0 says so the way it
// does for any device short of memory.
TEST_F(MpiCli, RemoteAllocationFailureIsOutOfMemory) {
  const std::string base =
      "timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl "
      "self,vader ";
  const std::string args = " run -m " + kStories + " -p hi -n 2 -c 120000 --devices mpi:1 -ngl 99";
  const Outcome o =
      run_script(base + "-np 1 " + STRATA_BIN + args +
                 " : -np 1 bash -c 'ulimit -v 1500000; exec " + STRATA_BIN + args + "' 2>&1");
  EXPECT_NE(o.exit_code, 0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("mpi:1: cannot allocate")) << o.out;
  EXPECT_THAT(o.out, Not(HasSubstr("terminate called"))) << o.out;
}

// A generation that runs long enough to be interrupted: rank 1 is stopped (SIGSTOP: it stays
// alive but silent, which mpirun cannot see) or killed, and rank 0 must end with a line that
// names it within ten seconds (the whole run takes about twenty). --enable-recovery keeps
// mpirun from ending the job itself when a rank dies, so what is tested is strata's own
// detection; a stopped rank is ended by mpirun once rank 0 exits with an error.
Outcome interrupt_rank_1(const std::string& signal, const std::string& marker,
                         const std::string& mpirun_flags, double* seconds_after,
                         const std::string& split = "layer") {
  const std::string run_cmd = mpirun(2) + mpirun_flags + " " + STRATA_BIN + " run -m " + kStories +
                              " -p '" + marker +
                              "' -n 8000 -c 8192 --devices mpi:0,mpi:1 -ngl 99 -sm " + split;
  // The rank's process is the strata whose environment says rank 1 and whose command line
  // carries this test's marker.
  const std::string find_rank_1 =
      "for p in $(pgrep -f -- '" + marker +
      "'); do if tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -qx "
      "'OMPI_COMM_WORLD_RANK=1' && [ \"$(cat /proc/$p/comm)\" = strata ]; then echo $p; fi; "
      "done";
  const std::string script =
      "(" + run_cmd + " > /dev/null 2> " + STRATA_TEST_TMPDIR + "/" + marker + ".err; echo $? > " +
      STRATA_TEST_TMPDIR + "/" + marker + ".rc) & sleep 3; victim=$(" + find_rank_1 +
      "); [ -n \"$victim\" ] || echo no-victim; echo T0 $(date +%s.%N); kill -" + signal +
      " $victim; wait; echo T1 $(date +%s.%N); kill -9 $victim "
      "2>/dev/null;" +
      " cat " + STRATA_TEST_TMPDIR + "/" + marker + ".rc " + STRATA_TEST_TMPDIR + "/" + marker +
      ".err";
  Outcome o = run_script(script);
  auto time_after = [&o](const std::string& tag) {
    const size_t at = o.out.find(tag);
    return at == std::string::npos ? 0.0 : std::stod(o.out.substr(at + tag.size()));
  };
  *seconds_after = time_after("T1 ") - time_after("T0 ");
  return o;
}

TEST_F(MpiCli, StoppedRankIsReportedWithinTenSeconds) {
  double seconds = 0;
  const Outcome o = interrupt_rank_1("STOP", "mpi-stop-marker", "", &seconds);
  EXPECT_THAT(o.out, Not(HasSubstr("no-victim")));
  EXPECT_LT(seconds, 10.0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("rank 1 stopped answering")) << o.out;
}

TEST_F(MpiCli, KilledRankIsReportedWithinTenSeconds) {
  double seconds = 0;
  const Outcome o = interrupt_rank_1("KILL", "mpi-kill-marker", "--enable-recovery", &seconds);
  EXPECT_THAT(o.out, Not(HasSubstr("no-victim")));
  EXPECT_LT(seconds, 10.0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("rank 1")) << o.out;
}

// Under a tensor split rank 0's own member waits inside the collective for the killed rank.
TEST_F(MpiCli, KilledRankOfATensorSplitIsReportedWithinTenSeconds) {
  double seconds = 0;
  const Outcome o =
      interrupt_rank_1("KILL", "mpi-kill-tensor-marker", "--enable-recovery", &seconds, "tensor");
  EXPECT_THAT(o.out, Not(HasSubstr("no-victim")));
  EXPECT_LT(seconds, 10.0) << o.out;
  EXPECT_THAT(o.out, HasSubstr("rank 1")) << o.out;
}

}  // namespace
}  // namespace strata::testing
