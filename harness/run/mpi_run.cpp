#include "harness/run/mpi_run.h"

#include <cstdlib>

#include "engine/backend/backend.h"
#include "engine/ir/error.h"

#ifdef FUSEBENCH_WITH_MPI
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <deque>
#include <iostream>
#include <map>
#include <thread>

#include "harness/cases/case_json.h"
#include "harness/measure/cpu_pinning.h"
#include "harness/measure/environment.h"
#include "harness/run/runner.h"
#endif

namespace fb {

std::optional<int> launched_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return std::nullopt;
}

std::string device_for_local_rank(const std::string& device, int local_rank, int gpus) {
  if (device != "cuda" || local_rank < 0 || gpus < 2) return device;
  return "cuda:" + std::to_string(local_rank % gpus);
}

std::string device_for_this_rank(const std::string& device) {
  if (device != "cuda" || !launched_world_size()) return device;
  int local_rank = -1;
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"})
    if (const char* v = std::getenv(var)) {
      local_rank = std::atoi(v);
      break;
    }
  return device_for_local_rank(device, local_rank, cuda_device_count());
}

#ifndef FUSEBENCH_WITH_MPI

bool built_with_mpi() { return false; }

int run_distributed(const RunRequest&, const DistributedOptions&, const std::function<int(RunSession&)>&) {
  throw Error("this fusebench was built without MPI, but was started by an MPI launcher as one of " +
              std::to_string(launched_world_size().value_or(0)) +
              " ranks; install OpenMPI (libopenmpi-dev) and rebuild, or run it without mpirun");
}

#else

bool built_with_mpi() { return true; }

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Message tags. Every message is one JSON document.
enum Tag : int {
  kHello = 1,   // worker -> 0: {host, cpu_model, cpu_flags, cores, pid}
  kCase = 2,    // 0 -> worker: {index, spec, isolation, pin_cpus}
  kStop = 3,    // 0 -> worker: no more cases
  kResult = 4,  // worker -> 0: {index, result}
  kAlive = 5,   // 0 -> idle worker, every kAliveEvery: rank 0 is still there
};

// An idle worker hears from rank 0 at least this often...
constexpr auto kAliveEvery = std::chrono::seconds(5);
// ...and takes a silence this long (rank 0 writes the report after the last case without
// sending anything) to mean that rank 0 died: under --enable-recovery nothing else would
// tell it, and it would wait for ever.
constexpr auto kCoordinatorSilence = std::chrono::seconds(60);

struct Traffic {
  size_t messages = 0, bytes = 0;
};

[[noreturn]] void coordinator_gone(const std::string& what) {
  throw Error("rank 0 " + what + " for " + std::to_string(kCoordinatorSilence.count()) +
              " s: it is gone (every case it stored is in the database; `fusebench run --resume` goes on)");
}

// Sends without blocking for longer than `limit`; false when the send did not complete by
// then. A blocking send to a peer that died waits for ever (under --enable-recovery nothing
// ends it): a worker's result to a rank 0 that is gone, or rank 0's next case or heartbeat
// to a worker killed since the last liveness check. A send given up on keeps its buffer
// (MPI may still read it), parked for the rest of the process.
bool send_json_within(int dest, Tag tag, const json& j, Traffic& t, Clock::duration limit) {
  static std::deque<std::string> abandoned;
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  MPI_Request request;
  MPI_Isend(s.data(), static_cast<int>(s.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD, &request);
  const auto give_up = Clock::now() + limit;
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) {
    if (Clock::now() > give_up) {
      abandoned.push_back(std::move(s));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ++t.messages;
  t.bytes += s.size();
  return true;
}

// A worker's send to rank 0 (its results can be too large for OpenMPI to send eagerly).
void send_json_to_coordinator(Tag tag, const json& j, Traffic& t) {
  if (!send_json_within(0, tag, j, t, kCoordinatorSilence)) coordinator_gone("took no result");
}

// How long rank 0 waits for a send to a worker: its messages are small and go out at once
// to a worker that is there.
constexpr auto kWorkerSendLimit = std::chrono::seconds(10);

json receive_json(const MPI_Status& probed, Traffic& t) {
  int n = 0;
  MPI_Get_count(&probed, MPI_CHAR, &n);
  std::string s(static_cast<size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_CHAR, probed.MPI_SOURCE, probed.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ++t.messages;
  t.bytes += s.size();
  return json::parse(s);
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// ---- worker ranks -----------------------------------------------------------------------

int worker_loop() {
  Traffic t;
  const HostFingerprint host = host_fingerprint(capture_environment());
  send_json_to_coordinator(kHello,
                           {{"host", host.host}, {"cpu_model", host.cpu_model}, {"cpu_flags", host.cpu_flags},
                            {"cores", host.cores}, {"pid", static_cast<int64_t>(getpid())}},
                           t);
  CaseRunner runner;
  std::unique_ptr<CpuPinning> pinned;  // --cores-per-worker: this whole process stays on its cores
  auto heard = Clock::now();
  while (true) {
    // Poll and sleep rather than block in MPI_Probe, which spins a core in OpenMPI: an idle
    // worker must not steal time from a case being timed beside it.
    MPI_Status st;
    int flag = 0;
    MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {
      if (Clock::now() - heard > kCoordinatorSilence) coordinator_gone("sent nothing");
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    const json msg = receive_json(st, t);
    heard = Clock::now();
    if (st.MPI_TAG == kAlive) continue;
    if (st.MPI_TAG == kStop) break;
    CaseSpec spec = CaseSpec::from_json(msg.at("spec"));
    const std::vector<int> cpus = msg.at("pin_cpus").get<std::vector<int>>();
    if (!cpus.empty()) {
      if (!pinned) pinned = std::make_unique<CpuPinning>(cpus);
      spec.timing.pin_cpus = cpus;
    }
    CaseResult r = runner.run(spec);
    r.isolation = msg.at("isolation").get<std::string>();
    send_json_to_coordinator(kResult, {{"index", msg.at("index")}, {"result", case_result_to_json(r)}}, t);
  }
  return 0;
}

// ---- rank 0 -----------------------------------------------------------------------------

struct Worker {
  int rank = 0;
  bool said_hello = false;
  bool idle = false;     // no cores left for it on its host: never given work
  bool gone = false;     // died or hung: never given work again
  HostFingerprint host;
  int64_t pid = 0;
  std::vector<int> cpus;  // --cores-per-worker: its cores
  std::optional<size_t> running;  // index into the session's pending cases
  Clock::time_point deadline;
};

class Coordinator {
 public:
  Coordinator(RunSession& session, const DistributedOptions& options, int world_size)
      : session_(session), options_(options) {
    for (int r = 1; r < world_size; ++r) {
      Worker w;
      w.rank = r;
      workers_.push_back(w);
    }
    for (size_t i = 0; i < session_.pending().size(); ++i) queue_.push_back(i);
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    my_host_ = name;
    isolation_ = options_.cores_per_worker > 0 ? "cores-per-worker=" + std::to_string(options_.cores_per_worker)
                                                : "host-exclusive";
  }

  // Hands out every case and stores every result; returns when none is left running.
  void run() {
    const auto started = Clock::now();
    auto last_check = started, last_alive = started;
    while (!queue_.empty() || running() > 0) {
      MPI_Status st;
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
      if (flag) on_message(st);
      dispatch();
      if (Clock::now() - last_check > std::chrono::milliseconds(100)) {
        last_check = Clock::now();
        find_lost_workers();
        if (alive() == 0 && !queue_.empty()) {
          std::cout << "every worker is gone; " << queue_.size()
                    << " case(s) not run: the run stays unfinished (`fusebench run --resume` completes it)\n";
          unfinished_ = true;
          break;
        }
        if (!any_hello_ && Clock::now() - started > std::chrono::seconds(120))
          throw Error("no MPI worker reported in within 120 s");
        if (Clock::now() - last_alive > kAliveEvery) {
          last_alive = Clock::now();
          Traffic heartbeats;  // not counted: the per-case cost is what the summary line reports
          for (Worker& w : workers_)
            if (w.said_hello && !w.gone && !w.running && !send_json_within(w.rank, kAlive, json::object(), heartbeats, kWorkerSendLimit))
              lose_unreachable(w);
        }
      }
      if (!flag) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::cout << "coordinator: " << traffic_.messages << " messages, " << traffic_.bytes << " bytes, " << stored_
              << " cases committed in " << store_seconds_ << " s of SQLite time ("
              << (store_seconds_ > 0 ? stored_ / store_seconds_ : 0) << " commits/s), " << seconds << " s in all\n";
  }

  // Sends every worker still there its stop; called once rank 0 is done (after the report),
  // so that until then an idle worker hears from rank 0 and knows it is alive.
  void stop_all() {
    Traffic t;
    for (Worker& w : workers_)
      if (!w.gone && !send_json_within(w.rank, kStop, json::object(), t, kWorkerSendLimit)) lose_unreachable(w);
  }

  bool unfinished() const { return unfinished_; }
  bool any_lost() const { return any_lost_; }

 private:
  size_t running() const {
    size_t n = 0;
    for (const Worker& w : workers_) n += w.running.has_value();
    return n;
  }
  size_t alive() const {
    size_t n = 0;
    for (const Worker& w : workers_) n += !w.gone;
    return n;
  }
  Worker& worker(int rank) { return workers_.at(static_cast<size_t>(rank - 1)); }


  double timeout_s(const CaseSpec& spec) const {
    return options_.case_timeout_s > 0 ? options_.case_timeout_s : 600 + 4 * spec.timing.max_seconds;
  }

  void on_message(const MPI_Status& st) {
    const json msg = receive_json(st, traffic_);
    Worker& w = worker(st.MPI_SOURCE);
    if (st.MPI_TAG == kHello) {
      any_hello_ = true;
      w.said_hello = true;
      w.host = HostFingerprint{msg.at("host"), msg.at("cpu_model"), msg.at("cpu_flags"), msg.at("cores")};
      w.pid = msg.at("pid").get<int64_t>();
      if (options_.cores_per_worker > 0) assign_cores(w);
      return;
    }
    if (st.MPI_TAG != kResult) throw Error("MPI rank " + std::to_string(w.rank) + " sent a message of unknown kind");
    const size_t index = msg.at("index").get<size_t>();
    if (w.gone || w.running != index) {
      std::cout << "rank " << w.rank << " on " << w.host.host << ": a late result for a case already stored as lost; ignored\n";
      return;
    }
    CaseResult r = case_result_from_json(msg.at("result"));
    w.running.reset();
    --busy_[w.host.host];
    store(index, r);
  }

  void assign_cores(Worker& w) {
    const int k = options_.cores_per_worker;
    const int slot = slots_[w.host.host]++;
    if ((slot + 1) * k > w.host.cores) {
      std::cout << "rank " << w.rank << " on " << w.host.host << ": no " << k << " free cores left (" << w.host.cores
                << " in all); it stays idle\n";
      w.idle = true;
      return;
    }
    for (int c = slot * k; c < (slot + 1) * k; ++c) w.cpus.push_back(c);
  }

  void dispatch() {
    for (Worker& w : workers_) {
      if (queue_.empty()) break;
      if (!w.said_hello || w.gone || w.idle || w.running) continue;
      if (options_.cores_per_worker == 0 && busy_[w.host.host] > 0) continue;  // one case per host at a time
      const size_t index = queue_.front();
      queue_.pop_front();
      const CaseSpec& spec = session_.pending()[index].spec;
      if (!send_json_within(w.rank, kCase,
                            {{"index", index}, {"spec", spec.to_json()}, {"isolation", isolation_}, {"pin_cpus", w.cpus}},
                            traffic_, kWorkerSendLimit)) {
        queue_.push_front(index);  // it never reached the worker: another one runs it
        lose_unreachable(w);
        continue;
      }
      w.running = index;
      w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s(spec)));
      ++busy_[w.host.host];
    }
  }

  // An idle worker that did not take a message within kWorkerSendLimit (killed since the
  // last liveness check, or stuck): never given work again; killed if it is on this host.
  void lose_unreachable(Worker& w) {
    w.gone = true;
    any_lost_ = true;
    std::cout << "MPI rank " << w.rank << " (pid " << w.pid << " on " << w.host.host << ") took no message within "
              << std::chrono::duration_cast<std::chrono::seconds>(kWorkerSendLimit).count() << " s: treated as gone\n";
    if (w.host.host == my_host_ && w.pid > 0) kill(static_cast<pid_t>(w.pid), SIGKILL);
  }

  // A worker on this host whose process is gone died; any worker past its case's deadline
  // hung (or died on another host, where its process cannot be seen from here).
  void find_lost_workers() {
    for (Worker& w : workers_) {
      if (w.gone || !w.said_hello) continue;
      const bool died = w.host.host == my_host_ && w.pid > 0 && kill(static_cast<pid_t>(w.pid), 0) != 0 && errno == ESRCH;
      const bool late = w.running && Clock::now() > w.deadline;
      if (!died && !late) continue;
      const std::string who =
          "MPI rank " + std::to_string(w.rank) + " (pid " + std::to_string(w.pid) + " on " + w.host.host + ")";
      w.gone = true;
      // A hung worker on this host is killed (after its case is stored). A lost rank never
      // reaches MPI_Finalize, which waits for every rank: rank 0 ends the job with MPI_Abort.
      const bool kill_here = !died && w.host.host == my_host_ && w.pid > 0;
      any_lost_ = true;
      if (!w.running) {
        std::cout << who << " died while idle\n";
        continue;
      }
      const size_t index = *w.running;
      w.running.reset();
      --busy_[w.host.host];
      CaseResult r;
      r.spec = session_.pending()[index].spec;
      r.status = CaseStatus::kError;
      r.worker_lost = true;
      r.timed_on = w.host;
      r.isolation = isolation_;
      r.error = died ? who + " died while running this case"
                     : who + " sent no result within " + std::to_string(int(timeout_s(r.spec))) +
                           " s (hung, or died where rank 0 cannot see it)";
      if (kill_here) r.error += "; rank 0 killed it";
      r.error += "; `fusebench run --resume` runs it again";
      store(index, r);
      if (kill_here) kill(static_cast<pid_t>(w.pid), SIGKILL);
    }
  }

  void store(size_t index, const CaseResult& r) {
    const auto t0 = Clock::now();
    session_.store_result(index, r);
    store_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
    ++stored_;
  }

  RunSession& session_;
  DistributedOptions options_;
  std::vector<Worker> workers_;
  std::deque<size_t> queue_;
  std::map<std::string, int> busy_;   // host -> cases running there
  std::map<std::string, int> slots_;  // host -> core slots handed out
  std::string my_host_, isolation_;
  Traffic traffic_;
  size_t stored_ = 0;
  double store_seconds_ = 0;
  bool any_hello_ = false, unfinished_ = false, any_lost_ = false;
};

}  // namespace

int run_distributed(const RunRequest& request, const DistributedOptions& options,
                    const std::function<int(RunSession&)>& finish) {
  MPI_Init(nullptr, nullptr);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (world_rank() != 0) {
    int rc = 0;
    try {
      rc = worker_loop();
    } catch (const std::exception& e) {
      std::cerr << "fusebench run: MPI rank " << world_rank() << ": error: " << e.what() << "\n";
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return rc;
  }

  int rc = 0;
  bool abort = false;
  try {
    if (size < 2) throw Error("an MPI run needs at least 2 ranks: rank 0 hands out cases, the others run them");
    RunRequest checked = request;
    checked.max_threads = options.cores_per_worker;
    RunSession session(checked, std::cout);
    // A load case's every sample stays with the process that served it: not sent between ranks yet.
    for (const PendingCase& p : session.pending())
      if (!p.spec.load.is_default())
        throw Error(p.spec.scenario_file + ": field 'load': a load case ('" + p.spec.label() +
                    "') runs without mpirun for now (its samples are not sent between ranks)");
    session.order_longest_first();
    Coordinator coordinator(session, options, size);
    coordinator.run();
    if (coordinator.unfinished()) {
      rc = 2;
    } else {
      rc = finish(session);
    }
    coordinator.stop_all();
    abort = coordinator.any_lost();
  } catch (const std::exception& e) {
    std::cerr << "fusebench run: error: " << e.what() << "\n";
    // The workers wait for cases that will never come: tell them to stop (under mpirun
    // --enable-recovery, MPI_Abort would leave them waiting).
    Traffic t;
    for (int r = 1; r < size; ++r)
      if (!send_json_within(r, kStop, json::object(), t, kWorkerSendLimit)) abort = true;  // it never reaches MPI_Finalize
    rc = 2;
  }
  if (abort)
    std::cout << "rank 0: every result is stored; ending the MPI job with MPI_Abort, since a lost rank never "
                 "reaches MPI_Finalize (mpirun reports the abort below)\n";
  std::cout << std::flush;
  if (abort) MPI_Abort(MPI_COMM_WORLD, rc);
  MPI_Finalize();
  return rc;
}

#endif

}  // namespace fb
