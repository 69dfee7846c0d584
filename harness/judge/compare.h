// Comparing a run against a baseline, case by case, the way a re-run would differ: each
// change is judged against the spread of that case on that machine between independent
// processes (timing.processes) and, where earlier runs exist, between runs — never against
// the thousands of samples of one process, which say nothing about the next process.
//
// What is judged is robust to the machine's bursts, which only ever add time: each
// process contributes its 5th-percentile time (process_floors), a run's figure is the
// median over its processes, and the noise is the robust spread of those per-process
// values, so one process hit by other work moves neither the figure nor its noise.
//
// Three figures are judged per case: the engine time, the reference time (which the
// engine's timing is interleaved with) and the speedup (their ratio, per process). The
// case's verdict rests on the speedup, which cancels most of what the machine does to both
// executors, cross-checked by the times: when the reference (the same code in both runs)
// moved by min_effect or more, or the engine moved with it while the speedup held, the
// verdict is `environment` (the machine changed, not the code). Where the reference held
// still, it is the engine time's control: an engine that moved alone is judged at the
// speedup's noise rather than at its own history's, which mostly measures the machine. Runs on different machines are
// judged on the speedup alone unless asked otherwise.
//
// Cases are matched by case key, so a renamed scenario file or a reordered matrix still
// compares.
#pragma once
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/judge/load_compare.h"
#include "harness/stats/bootstrap.h"
#include "harness/store/result_store.h"

namespace fb {

struct CompareOptions {
  // Two-sided level of the change's interval: a change counts when the interval of
  // log(candidate / baseline) excludes 0.
  double alpha = 0.01;
  // The smallest change the comparison must detect (0.03 = 3%). A smaller change is never a
  // verdict; a case whose noise would hide a change of this size is `noisy`, not `unchanged`.
  double min_effect = 0.03;
  // Judge engine and reference times across different machines too (by default only the
  // speedup is compared when host, CPU or core count differ).
  bool cross_host = false;
  // The runs are the two sides of one paired A/B run (`run --against`): judged on the
  // differences of their adjacent processes (judge_paired_figure), not on their spreads
  // and history. judgement_context says when.
  bool paired = false;
};

enum class Verdict {
  kFaster,       // the engine gained on the reference beyond the noise
  kSlower,       // the engine lost ground beyond the noise
  kUnchanged,    // no change, and the noise would have shown one of min_effect
  kNoisy,        // the noise is larger than the change that had to be detected
  kEnvironment,  // engine and reference moved together: the machine changed, not the code
};
const char* verdict_name(Verdict v);  // "faster", "slower", "unchanged", "noisy", "environment"

// One figure of a case in one run: its value and what is known of its noise.
struct FigureValue {
  // The run's figure (ms, or the speedup): the median of per_process, or with one process
  // the run's median.
  double value = 0;
  std::vector<double> per_process;  // each worker process's own value (empty: one process)
  Interval interval;                // the run's 95% interval, used when there is only one process
};

// How one figure moved between two runs, judged against its noise. All relative figures
// are fractions (0.05 = 5%).
struct FigureChange {
  double baseline = 0, candidate = 0;
  double change = 0;   // candidate / baseline - 1
  Interval change_ci;  // the (1 - alpha) interval of the change at the noise below
  // The standard error of log(candidate / baseline): how far two runs of the same code
  // differ on this machine. From the spread between processes (pooled over both runs), and
  // between earlier runs where history exists (the two pooled by their degrees of freedom);
  // from the samples of one process when neither is known (which understates it: see
  // noise_source).
  double noise = std::numeric_limits<double>::quiet_NaN();
  // The smallest change this noise lets the comparison see at alpha: a change must exceed
  // it to count; above min_effect the figure is noisy.
  double detectable = std::numeric_limits<double>::quiet_NaN();
  // "processes (k+k)", "processes (k+k) and runs (n)", "runs (n)" or "samples (1 process)":
  // where the noise came from.
  std::string noise_source;
  // This figure's own verdict: for times, slower = larger; for the speedup, slower = smaller.
  Verdict verdict = Verdict::kNoisy;
};

// Earlier values of one case on the same machine (one per run, oldest first): what the
// between-run part of the noise is estimated from.
struct CaseHistory {
  std::vector<double> engine, reference, speedup;
};
using HistoryByKey = std::map<std::string, CaseHistory>;

// Adds a result's three judged figures (judged_figures, below) to a history.
void append_to_history(CaseHistory& h, const CaseResult& r);

// The judgement of one case.
struct CaseJudgement {
  FigureChange engine, reference, speedup;
  Verdict verdict = Verdict::kNoisy;  // the case's verdict (see the file comment)
  std::string reason;                 // one line: why that verdict
  bool speedup_only = false;          // different machines: times were not judged
  // A load case (both sides served a load): judged on its claimed percentile and validity
  // (harness/judge/load_compare.h) instead; `engine` then holds its median per query.
  std::optional<LoadJudgement> load;
};

// One case key's comparison. `judgement` is empty when the case is missing on a side or
// errored there; `note` then says which.
struct CaseComparison {
  std::string case_key;
  std::string label;
  std::optional<CaseResult> baseline, candidate;
  std::optional<CaseJudgement> judgement;
  std::string note;
};

// Judges one figure (higher_is_better: the speedup) of two runs, given its earlier values.
FigureChange judge_figure(const FigureValue& baseline, const FigureValue& candidate,
                          const std::vector<double>& history, bool higher_is_better, const CompareOptions& options);

// Judges one figure of a paired A/B run: process p of the candidate against process p of
// the baseline, timed next to each other. The change is the median of the pairs' ratios,
// its noise their robust spread over the square root of their number (t with pairs - 1
// degrees of freedom); noisy with fewer than 3 pairs.
FigureChange judge_paired_figure(const FigureValue& baseline, const FigureValue& candidate, bool higher_is_better,
                                 const CompareOptions& options);

// The three figures of a case result, per process where it has several (see FigureValue).
struct JudgedFigures {
  FigureValue engine, reference, speedup;
};
JudgedFigures judged_figures(const CaseResult& r);

// Judges a case (both results passed or failed, not errored). `history` may be null.
CaseJudgement judge_case(const CaseResult& baseline, const CaseResult& candidate, const CaseHistory* history,
                         bool same_machine, const CompareOptions& options);

// Every case key of either run, in the candidate's order, then baseline-only ones. A key
// stored twice in one run (a scenario listed twice) compares its last result.
// `same_machine`: the runs' fingerprints agree (else speedup only, unless options.cross_host).
std::vector<CaseComparison> compare_runs(const std::vector<StoredCase>& baseline,
                                         const std::vector<StoredCase>& candidate, const CompareOptions& options,
                                         const HistoryByKey* history = nullptr, bool same_machine = true);

// The machine a run was timed on: host, CPU model and core count. Runs whose
// fingerprints differ are not compared on times.
std::string machine_fingerprint(const RunInfo& info);

// The history of each case of run `up_to`: its values in the runs up to and including
// `up_to` (by list_runs order) on the same machine fingerprint, errored results left out,
// oldest first, and only the latest 10 of them (all that judge_figure reads).
HistoryByKey load_history(const ResultStore& store, int64_t up_to);

// What judging a run against a baseline needs besides their cases: the baseline's history on
// its machine and whether the two machines agree. compare, gate and the report take it from
// here, so the three judge a case alike.
struct JudgementContext {
  std::string machine, baseline_machine;  // machine_fingerprint of each run
  bool same_machine = true;
  HistoryByKey history;  // empty when not wanted (compare --no-history)
  // The baseline is the run's other side in a paired A/B run: judge with CompareOptions::paired.
  bool paired = false;
};
JudgementContext judgement_context(const ResultStore& store, int64_t run, const ResultStore& baseline_store,
                                   int64_t baseline_run, bool with_history = true);

// "-4.8% ±1.9%": a figure's change and the smallest change its noise lets through, as
// compare prints it and the report shows it.
std::string change_text(const FigureChange& f);

}  // namespace fb
