// The modules under mutation testing (issue #23) and, for each, the test files that exercise it.
// `pnpm mutation <module>` runs one; `pnpm mutation` runs them all, one after the other.
// Test files are listed, not discovered: the decision modules are reached through public APIs
// (`Rein.run`, `Batch.run`), and running every suite per mutant would take hours on a shared machine.

const core = (...names) => names.map((name) => `packages/core/test/${name}.test.ts`)
const batch = (...names) => names.map((name) => `packages/batch/test/${name}.test.ts`)

export const modules = {
  planner: {
    mutate: ["packages/core/src/Planner.ts"],
    tests: core("Planner", "Execute", "Contract", "Timers", "Streaming", "Examples")
  },
  failure: {
    mutate: ["packages/core/src/Failure.ts"],
    tests: core("Failure", "Contract"),
    // The failure table and the code sets are module-level constants: their mutants run every listed test, so
    // the list is the two files that import only Failure (Execute.test would load and collect all of core).
    ignoreStatic: false
  },
  budget: {
    mutate: ["packages/core/src/Budget.ts"],
    tests: core("Budget", "BudgetLaws", "Execute")
  },
  deadline: {
    mutate: ["packages/core/src/Deadline.ts"],
    tests: core("Deadline", "Timers", "Execute")
  },
  health: {
    mutate: ["packages/core/src/Health.ts"],
    // Not `Health.test.ts`: its traffic simulations (an outage, a stall, an impatient caller) take 100 s and more
    // at the machine's usual load, and every surviving mutant would run them all. The score is without them.
    // `HealthConfig` holds the tests of `decodeConfig` (the settings decoded at the edge).
    tests: core("HealthRules", "HealthViewCache", "HealthConfig", "HealthLaws", "Execute")
  },
  "run-limits": {
    mutate: ["packages/batch/src/RunLimits.ts", "packages/batch/src/internal/limiter.ts", "packages/batch/src/internal/totals.ts"],
    tests: batch("RunLimitsMemory", "RunLimits", "RateLimit", "Guardrails")
  },
  "artifact-reader": {
    mutate: ["packages/batch/src/JsonlStore.ts", "packages/batch/src/internal/jsonl.ts", "packages/batch/src/internal/jsonlRead.ts"],
    tests: batch("jsonl", "jsonl-digest", "JsonlStore", "artifact", "Decode", "resume", "hostile-artifacts", "ResumeStreaming")
  },
  // The artifact reader's files one at a time, without ResumeStreaming (its 1 MiB windows run for every mutant they
  // cover: jsonl.ts in the whole module was estimated at 2 h 46 min at concurrency 1). A score is then a lower bound.
  "jsonl-store": {
    mutate: ["packages/batch/src/JsonlStore.ts"],
    tests: batch("JsonlStore", "JsonlStoreStream", "jsonl", "artifact", "hostile-artifacts", "resume")
  },
  jsonl: {
    mutate: ["packages/batch/src/internal/jsonl.ts"],
    tests: batch("jsonl", "jsonl-digest", "Decode", "JsonlStore", "hostile-artifacts", "artifact", "resume")
  },
  // The records a resume keeps (typed arrays under a 64-bit key hash), reached through Resume's index too.
  kept: {
    mutate: ["packages/batch/src/internal/kept.ts"],
    tests: batch("kept", "kept-halves", "kept-collisions", "resume", "ResumeStreaming", "Decode")
  },
  // The attempt's fork site (references forked once, reused while their values hold), reached through execute.
  fork: {
    mutate: ["packages/core/src/internal/fork.ts"],
    tests: core("Fork", "ForkSites", "Execute", "Streaming")
  },
  // The artifact's reading and read-back (`internal/jsonlRead.ts`) alone: its own fast tests first (a counting
  // file system under `make`), then the resume tests that reach it through `JsonlStore` and `Resume`.
  "jsonl-read": {
    mutate: ["packages/batch/src/internal/jsonlRead.ts"],
    tests: batch("jsonlRead", "ResumeStreaming", "resume", "hostile-artifacts", "artifact", "Decode", "jsonl", "JsonlStore")
  },
  // The same, against its own tests only (the read-back called directly): each mutant costs seconds, not the
  // minutes of the resume tests over 1 MiB windows; a lower bound, and the proof of that file's kills.
  "jsonl-read-own": {
    mutate: ["packages/batch/src/internal/jsonlRead.ts"],
    tests: batch("jsonlRead")
  },
  // The clock's one timer (every attempt's bound, every stream's): its own laws first (`TestClock`, properties),
  // then the executor's tests that reach it through `Rein.execute`.
  timers: {
    mutate: ["packages/core/src/internal/timers.ts"],
    tests: core("TimersLaws", "Timers", "Deadline", "Execute")
  },
  // The same file against its own two test files only (the executor's files add minutes per surviving mutant at the
  // machine's usual load): a lower bound, and the proof of those files' kills.
  "timers-own": {
    mutate: ["packages/core/src/internal/timers.ts"],
    tests: core("TimersLaws", "Timers")
  },
  // How a request's planner spec derives from its contract (`internal/spec.ts`: the candidates, the retry policy,
  // the effective failure table, Retry-After's clamp, the field names of replay's messages), reached through
  // `Rein.execute`, `Journal.replay` and `RetrySchedule`; the fast files first. Its first run (2026-12-05, load 20) was
  // estimated at 2 h at concurrency 1 and stopped: run it by ranges when the machine is quiet.
  spec: {
    mutate: ["packages/core/src/internal/spec.ts"],
    tests: core("Refusals", "Journal", "RetrySchedule", "Execute")
  }
}
