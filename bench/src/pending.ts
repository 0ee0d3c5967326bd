/**
 * Benchmarks 5 and 6 need packages that do not exist yet (`@rein/batch`, the CLI's `simulate`). Each
 * is its own entry here so that writing one means replacing its `run` in a module of its own; until the
 * package it needs can be imported, the runner skips it and says why in RESULTS.md.
 */
import type { Benchmark, Section } from "./harness.js"

const notWritten = (goal: string, benchmark: string) => async (): Promise<Section> => ({
  markdown: "not written yet: the package it needs now exists, so this benchmark is next.",
  goals: [{ benchmark, goal, measured: "not measured", status: "pending" }]
})

export const abort: Benchmark = {
  id: 5,
  title: "Abort latency",
  requires: { module: "@rein/batch", skipped: "skipped: @rein/batch not built yet" },
  goals: ["`cancel-active` with 1,000 calls in flight: trigger → last terminal result ≤ 20 ms"],
  run: notWritten("`cancel-active` with 1,000 calls in flight: trigger → last terminal result ≤ 20 ms", "5. abort")
}

export const simulation: Benchmark = {
  id: 6,
  title: "Simulation speed",
  requires: { module: "@rein/cli", skipped: "skipped: the CLI's simulate (@rein/cli) not built yet" },
  goals: ["a one-hour virtual outage, 10,000 requests: < 5 s real time"],
  run: notWritten("a one-hour virtual outage, 10,000 requests: < 5 s real time", "6. simulation")
}
