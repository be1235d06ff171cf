// The suite's tiers, the cases a run names, the names its programs parse, and a case's line.
#include <dlf/perf/suite.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "bench/comm_case.h"
#include "bench/generate_case.h"
#include "bench/train_case.h"
#include "test_util.h"

using namespace dlf::perf;

TEST_CASE("tiers: quick within full, peaks first in both") {
  const std::vector<SuiteCase> quick = cases_of(Tier::quick), full = cases_of(Tier::full);
  CHECK(quick.size() < full.size());
  CHECK(quick.front().peak);
  for (const SuiteCase& c : quick) CHECK(c.tier == Tier::quick);
  CHECK(parse_tier("full") == Tier::full);
  dlf::test::check_error([] { parse_tier("medium"); }, {"'medium'", "quick or full"});
}

TEST_CASE("cases by name prefix keep the peaks; a prefix that names nothing is an error") {
  const std::vector<SuiteCase> c = cases_of(Tier::quick, {"group_norm"});
  REQUIRE(c.size() == 4);
  CHECK(c[0].peak);
  CHECK(c[1].peak);
  CHECK(c[2].peak);
  CHECK(c[3].name == "group_norm forward f32 [8,64,32,32] g32");
  CHECK(cases_of(Tier::quick, {"softmax"}).empty() == false);  // a full case, asked for by name
  dlf::test::check_error([] { cases_of(Tier::quick, {"nothing"}); }, {"nothing", "--list"});
}

TEST_CASE("every family trains in fp32, bf16, compiled and recompute, in both tiers") {
  for (const Tier tier : {Tier::quick, Tier::full}) {
    for (const std::string family : {"gpt-", "bert-", "vit-", "unet-"}) {
      std::set<std::string> kinds;  // precision and mode of the family's steps in the tier
      for (const SuiteCase& c : cases_of(tier)) {
        if (c.name.rfind("train " + family, 0) != 0 || (tier == Tier::full && c.tier != tier))
          continue;
        const dlf::bench::TrainCase t = dlf::bench::parse_train_case(c.name);
        kinds.insert(t.precision + " " + t.mode);
        CHECK(t.batch > 0);
      }
      CAPTURE(family);
      CAPTURE(tier_name(tier));
      CHECK(kinds ==
            std::set<std::string>{"fp32 eager", "bf16 eager", "fp32 compiled", "fp32 recompute"});
    }
  }
}

TEST_CASE("the collectives: each one's latency and bus bandwidth in process and over MPI") {
  std::set<std::string> quick, full;
  for (const SuiteCase& c : cases_of(Tier::full)) {
    if (c.program != "suite_comm_bench") continue;
    const dlf::bench::CommCase k = dlf::bench::parse_comm_case(c.name);
    CHECK(c.mpi_ranks == (k.mpi ? k.ranks : 0));
    CHECK(c.threads == 2);
    const std::string what =
        k.collective + (k.latency() ? " latency" : " bandwidth") + (k.mpi ? " mpi" : "");
    (c.tier == Tier::quick ? quick : full).insert(what);
  }
  for (const std::string op : {"allreduce", "allgather", "reduce_scatter"})
    for (const std::string what : {" latency", " bandwidth"}) {
      CHECK(quick.count(op + what) == 1);
      CHECK((quick.count(op + what + " mpi") + full.count(op + what + " mpi")) == 1);
    }
  CHECK(quick.count("allreduce latency mpi") == 1);
}

TEST_CASE("case names are unique and their programs are the suite's") {
  std::set<std::string> names;
  for (const SuiteCase& c : suite_cases()) {
    CHECK(names.insert(c.name).second);
    CHECK((c.program == "suite_bench" || c.program == "suite_train_bench" ||
           c.program == "suite_comm_bench" || c.program == "suite_generate_bench"));
    if (c.program == "suite_train_bench") CHECK_NOTHROW(dlf::bench::parse_train_case(c.name));
    if (c.program == "suite_generate_bench")
      CHECK_NOTHROW(dlf::bench::parse_generate_case(c.name));
  }
}

TEST_CASE("a generation case's name says what it runs; a bad one says the form") {
  const dlf::bench::GenerateCase g =
      dlf::bench::parse_generate_case("generate gpt-mini no-cache batch 8 tokens 64");
  CHECK(g.model == "gpt-mini");
  CHECK_FALSE(g.kv_cache);
  CHECK(g.batch == 8);
  CHECK(g.tokens == 64);
  CHECK(dlf::bench::parse_generate_case("generate gpt-nano kv-cache batch 1 tokens 32").kv_cache);
  for (const char* bad : {"generate gpt-nano cache batch 1 tokens 32",
                          "generate gpt-nano kv-cache batch 0 tokens 32",
                          "generate gpt-nano kv-cache batch 1 tokens 32 extra", "generate"})
    dlf::test::check_error([&] { dlf::bench::parse_generate_case(bad); },
                           {"generate MODEL kv-cache|no-cache batch B tokens N"});
}

TEST_CASE("a training case's name says what it runs; a bad one says the form") {
  const dlf::bench::TrainCase g = dlf::bench::parse_train_case("train gpt-nano bf16 batch 8x64");
  CHECK(g.model == "gpt-nano");
  CHECK(g.precision == "bf16");
  CHECK(g.mode == "eager");
  CHECK(g.batch == 8);
  CHECK(g.seq == 64);
  const dlf::bench::TrainCase u =
      dlf::bench::parse_train_case("train unet-tiny fp32 compiled batch 2");
  CHECK(u.mode == "compiled");
  CHECK(u.batch == 2);
  CHECK(u.seq == 0);
  CHECK(dlf::bench::parse_train_case("train vit-tiny fp32 recompute batch 4").mode == "recompute");
  for (const std::string bad : {"train gpt-nano fp16 batch 8", "train gpt-nano fp32 batch 8x",
                                "train gpt-nano fp32 batch x8", "train gpt-nano fp32 batch 0",
                                "train gpt-nano fp32 fused batch 8",
                                "train gpt-nano fp32 batch 8 extra", "matmul f32 M512 K512 N512"})
    dlf::test::check_error([&] { dlf::bench::parse_train_case(bad); }, {bad, "the form"});
}

TEST_CASE("a collective case's name says what it runs and how many bytes a rank sends") {
  const dlf::bench::CommCase a = dlf::bench::parse_comm_case("allreduce f32 16 MiB 2 ranks mpi");
  CHECK(a.mpi);
  CHECK(a.ranks == 2);
  CHECK(a.bytes == 16 << 20);
  CHECK_FALSE(a.latency());
  CHECK(a.bus_bytes() == 16 << 20);  // 2 (n - 1) / n of the buffer, n = 2
  const dlf::bench::CommCase g =
      dlf::bench::parse_comm_case("allgather f32 64 KiB 4 ranks in-process");
  CHECK_FALSE(g.mpi);
  CHECK(g.latency());
  CHECK(g.bus_bytes() == 48 << 10);  // (n - 1) / n of the gathered output
  for (const std::string bad :
       {"broadcast f32 4 KiB 2 ranks mpi", "allreduce f32 4 KiB 1 ranks mpi",
        "allreduce f32 4 GiB 2 ranks mpi", "allreduce f32 4 KiB 2 ranks nccl",
        "allreduce f32 4x KiB 2 ranks mpi", "reduce_scatter f32 6 KiB 4096 ranks mpi"})
    dlf::test::check_error([&] { dlf::bench::parse_comm_case(bad); }, {bad, "the form"});
}

TEST_CASE("a case's line: the headline, every repetition, and the rate its peak normalises") {
  const SuiteCase step{.name = "train gpt-nano fp32 batch 8x64"};
  const CaseResults t = parse_case_line(
      step, R"({"bench":"train","impl":"dlf","value":50000,"unit":"tok/s","gflops":42.5,)"
            R"("reps_ms":[3,1,2],"reps_cpu_ms":[1,1.5,1.25]})"
            "\nnot read\n");
  CHECK(t.time.bench == "train");
  CHECK(t.time.headline == 50000);
  CHECK(t.time.headline_unit == "tok/s");
  CHECK(t.time.value == 2);  // the median of the repetitions
  CHECK(t.cpu_time.value == 1.25);
  CHECK(t.cpu_time.metric == "cpu_time");
  CHECK(t.rate == 42.5);
  CHECK(t.rate_unit == "GFLOP/s");
  const CaseResults bw = parse_case_line(
      {.name = "allreduce f32 16 MiB 2 ranks in-process"},
      R"({"bench":"collective","value":3.5,"unit":"GB/s","reps_ms":[1],"reps_cpu_ms":[1]})");
  CHECK(bw.rate == 3.5);
  CHECK(bw.rate_unit == "GB/s");
  const CaseResults us = parse_case_line(
      {.name = "allreduce f32 4 KiB 2 ranks in-process"},
      R"({"bench":"collective","value":40,"unit":"us","reps_ms":[0.04],"reps_cpu_ms":[0.02]})");
  CHECK(std::isnan(us.rate));
  dlf::test::check_error(
      [&] { parse_case_line(step, R"({"bench":"train","value":1,"unit":"tok/s"})"); }, {"reps_ms"});
}

TEST_CASE("a case that cannot run here says why: its program missing, or no mpirun") {
  const std::filesystem::path build =
      std::filesystem::temp_directory_path() / ("dlf_suite_" + std::to_string(getpid()));
  std::filesystem::create_directories(build / "bench");
  std::ofstream(build / "bench" / "suite_comm_bench") << "";
  const SuiteCase mpi{
      .name = "allreduce f32 4 KiB 2 ranks mpi", .program = "suite_comm_bench", .mpi_ranks = 2};
  CHECK(cannot_run(build, mpi, {.mpirun = "sh"}).empty());
  const std::string why = cannot_run(build, mpi, {.mpirun = "no-such-mpirun"});
  CHECK(why.find("skipped: no no-such-mpirun") != std::string::npos);
  const std::string missing = cannot_run(
      build, {.name = "train gpt-nano bf16 batch 8x64", .program = "suite_train_bench"}, {});
  CHECK(missing.find("suite_train_bench") != std::string::npos);
  std::filesystem::remove_all(build);
}

TEST_CASE("a run normalises each rate by its peak and records the cases it left out") {
  const std::filesystem::path build =
      std::filesystem::temp_directory_path() / ("dlf_suite_run_" + std::to_string(getpid()));
  std::filesystem::create_directories(build / "bench");
  // One stand-in for every program: each case's figure by its name ($2), every repetition 1 ms.
  const std::string standin = R"(#!/bin/sh
case "$2" in
  "peak matmul f32"*) v=100 u=GFLOP/s ;;
  "peak matmul bf16"*) v=400 u=GFLOP/s ;;
  "peak bandwidth"*) v=10 u=GB/s ;;
  train*) v=1000 u=tok/s g=',"gflops":50' ;;
  generate*) v=100 u=tok/s ;;
  *) v=4 u=GB/s ;;
esac
echo "{\"bench\":\"x\",\"value\":$v,\"unit\":\"$u\"${g:-},\"reps_ms\":[1],\"reps_cpu_ms\":[1]}"
)";
  for (const std::string program : {"suite_bench", "suite_train_bench", "suite_comm_bench",
                                    "suite_generate_bench"}) {
    std::ofstream(build / "bench" / program) << standin;
    std::filesystem::permissions(build / "bench" / program, std::filesystem::perms::owner_all);
  }
  const std::filesystem::path db = build / "history.db";
  History history(db.string());
  RunInfo info;
  info.commit = "abc", info.commit_date = "2026-11-29T00:00:00+00:00", info.tier = "quick";
  // The peer: 30 ms a step, whatever it is asked; what it was asked in peer.args.
  std::filesystem::create_directories(build / "peer");
  std::ofstream(build / "peer" / "run.sh")
      << "#!/bin/sh\necho \"$PEER_THREADS $*\" >\"$(dirname \"$0\")/args\"\n"
         "echo 'building' && echo '{\"bench\":\"train\",\"median_ms\":30}'\n";
  std::filesystem::permissions(build / "peer" / "run.sh", std::filesystem::perms::owner_all);
  const std::vector<SuiteCase> cases =
      cases_of(Tier::quick, {"train gpt-nano fp32 compiled", "train gpt-nano bf16",
                             "allreduce f32 16 MiB", "train gpt-nano fp32 batch"});
  const SuiteRun run = run_suite(history, info, build, cases,
                                 {.lock = "", .mpirun = "no-mpirun", .peer_dir = build / "peer"});
  std::map<std::string, std::pair<double, std::string>> normalised;
  for (const Result& r : run.results) normalised[r.case_name] = {r.normalised, r.normalised_to};
  using P = std::pair<double, std::string>;
  CHECK(normalised["train gpt-nano fp32 compiled batch 8x64"] == P{0.5, "matmul_f32"});
  CHECK(normalised["train gpt-nano bf16 batch 8x64"] == P{0.125, "matmul_bf16"});
  CHECK(normalised["allreduce f32 16 MiB 2 ranks in-process"] == P{0.4, "bandwidth"});
  std::map<std::string, double> peer;
  for (const Result& r : run.results) peer[r.case_name + " " + r.metric] = r.peer_ratio;
  CHECK(peer["train gpt-nano fp32 batch 8x64 time"] == 30);  // 30 ms against 1
  CHECK(peer["train gpt-nano fp32 batch 8x64 cpu_time"] == 30);
  CHECK(std::isnan(peer["train gpt-nano bf16 batch 8x64 time"]));  // no peer named
  std::ifstream args(build / "peer" / "args");
  std::string asked;
  std::getline(args, asked);
  CHECK(asked == "1 gpt-nano --batch 8 --seq 64 --steps 6 --warmup 2 --json");
  REQUIRE(run.left_out.size() == 1);
  CHECK(run.left_out[0].case_name == "allreduce f32 16 MiB 2 ranks mpi");
  CHECK(run.left_out[0].reason.find("skipped: no no-mpirun") != std::string::npos);
  const std::vector<LeftOut> kept = history.left_out(run.run_id);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].reason == run.left_out[0].reason);
  std::filesystem::remove_all(build);
}

TEST_CASE("a peer that cannot run is named with its last line") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dlf_peer_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const SuiteCase c{.name = "train gpt-nano fp32 batch 8x64", .peer = {"gpt-nano"}};
  dlf::test::check_error([&] { run_peer(c, {.lock = "", .peer_dir = dir}); },
                         {"no peer at", "run.sh"});
  std::ofstream(dir / "run.sh")
      << "#!/bin/sh\necho 'cmake output' >&2\necho 'no libtorch' >&2\nexit 4\n";
  std::filesystem::permissions(dir / "run.sh", std::filesystem::perms::owner_all);
  dlf::test::check_error([&] { run_peer(c, {.lock = "", .peer_dir = dir}); },
                         {"the peer failed (exit 4): no libtorch"});
  std::filesystem::remove_all(dir);
}
