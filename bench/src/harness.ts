/**
 * Measurement helpers for the benchmarks. Bench code, not library code: it reads the real clock
 * (`process.hrtime.bigint()`), calls `global.gc` between samples when node runs with `--expose-gc`, and
 * formats Markdown tables.
 */
import { execSync } from "node:child_process"
import * as os from "node:os"
import * as v8 from "node:v8"

/** A contender in an interleaved timing: `run(n)` performs `n` calls and resolves when they are done. */
export interface Contender {
  readonly name: string
  readonly run: (n: number) => Promise<void>
  /** Checked once after warm-up: throws when the contender did not do the expected work. */
  readonly verify?: (() => Promise<void>) | undefined
}

/** The result of an interleaved timing: nanoseconds per call, one sample per round. */
export interface Timing {
  readonly name: string
  readonly samples: ReadonlyArray<number>
  readonly median: number
  readonly min: number
  readonly max: number
  readonly calls: number
  /** CPU time of the process (user + system, `process.cpuUsage`) per call, ns, one sample per round. */
  readonly cpu: {
    readonly samples: ReadonlyArray<number>
    readonly median: number
    readonly min: number
    readonly max: number
  }
}

const gc = (globalThis as { gc?: (options?: { type: "major"; execution: "sync" }) => void }).gc

/**
 * Collects garbage when node was started with `--expose-gc`, so one sample does not pay for another's: one full,
 * synchronous mark-compact (`gc({ type: "major", execution: "sync" })`). A bare `gc()` is V8's last-resort
 * collection (`CollectAllAvailableGarbage`: repeated, memory-reducing), which also throws away optimized code that an
 * ordinary full collection keeps, so the row after it paid for recompiling what a running process keeps compiled
 * (h/sim22: 33–37 TurboFan recompilations in the next simulated hour against 2–4, ≈ a third of its CPU). Bench 3's
 * retained heap still takes the bare `gc()` in its child (`memory-child.ts`): there the most a collection frees is
 * the figure.
 */
export const collect = (): void => {
  if (gc !== undefined) gc({ type: "major", execution: "sync" })
}

export const nowNanos = (): bigint => process.hrtime.bigint()

export const nowMillis = (): number => Number(process.hrtime.bigint()) / 1e6

const timeRun = async (c: Contender, n: number): Promise<number> => (await timeAndCpu(c, n)).wall

/** Wall and CPU nanoseconds of `n` calls. */
const timeAndCpu = async (c: Contender, n: number): Promise<{ readonly wall: number; readonly cpu: number }> => {
  const c0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await c.run(n)
  const wall = Number(process.hrtime.bigint() - t0)
  const used = process.cpuUsage(c0)
  return { wall, cpu: (used.user + used.system) * 1000 }
}

/**
 * How many untimed calls follow every `gc()` before a sample is timed. A full collection leaves the next
 * ~1,500 calls of any contender (the bare provider Effect included) up to ~20× slower while V8 recovers
 * (lazy sweeping, inline caches and feedback rebuilt); timing right after it measured that recovery, and
 * whichever contender ran fastest paid most (it is why "health off" once read slower than "health on").
 */
export const WARM_AFTER_GC = 3_000

/** The 1-minute load average now, for printing beside a figure. */
export const loadNow = (): number => os.loadavg()[0]!

/** The load while a table was measured: the 1-minute load average at its start and at its end. */
export const loadRange = (from: number, to: number): string => `load ${from.toFixed(1)} → ${to.toFixed(1)}`

/**
 * How many calls make one sample of about `targetMillis` (doubling from 8 calls until 20 ms and at least 256
 * calls are reached: on a loaded machine one descheduling can make 8 calls take 20 ms, and a sample of a
 * dozen calls is then mostly noise).
 */
const calibrate = async (c: Contender, targetMillis: number): Promise<number> => {
  let n = 8
  while (true) {
    const ns = await timeRun(c, n)
    if ((ns >= 20e6 && n >= 256) || n >= 1 << 24) return Math.max(64, Math.round((n * targetMillis * 1e6) / ns))
    n *= 2
  }
}

export const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[i]!
}

export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  if (s.length === 0) return Number.NaN
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

/**
 * Times contenders side by side: warm-up and calibration for each, then `rounds` rounds in which every
 * contender runs one sample of about `sampleMillis`, in an order rotated each round (so no contender always
 * runs first, right after a GC, or last). Reports the median ns per call over the rounds, wall and CPU.
 * `collect: false` skips the GC between samples: after `gc()` the calls of an allocating contender run
 * 2–4× slower in CPU for more than a thousand calls (bench 8: the bare model's CPU per call in buckets of
 * 100 calls after `gc()` was 700, 970, 740, … µs against 80–300 µs without it, load ~21), so short
 * samples after a GC measure that recovery, and more for the contender that allocates more.
 */
export const interleave = async (
  contenders: ReadonlyArray<Contender>,
  options: {
    readonly rounds: number
    readonly sampleMillis: number
    readonly collect?: boolean | undefined
    /** Calls per sample, instead of calibrating to `sampleMillis` (a loaded machine makes that noisy). */
    readonly calls?: number | undefined
    readonly log?: (line: string) => void
  }
): Promise<ReadonlyArray<Timing>> => {
  const sizes: Array<number> = []
  // Every contender is warmed up (JIT) before any is sized: contenders share code (Rein's configurations
  // share the executor), and sizing the first one while the shared code was still cold gave it a sample of
  // ~100–200 calls where the others got thousands, so its post-`gc()` warm-up (capped at the sample size)
  // ended deep in V8's recovery stretch and it read 2–4× slower (#22: "health off slower than health on").
  for (const c of contenders) await calibrate(c, options.sampleMillis)
  for (const c of contenders) {
    const n = options.calls ?? await calibrate(c, options.sampleMillis)
    await timeRun(c, n)
    if (c.verify !== undefined) await c.verify()
    sizes.push(n)
  }
  const samples: Array<Array<number>> = contenders.map(() => [])
  const cpuSamples: Array<Array<number>> = contenders.map(() => [])
  for (let r = 0; r < options.rounds; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + r) % contenders.length
      if (options.collect !== false) {
        collect()
        // Warm up after the collection (see WARM_AFTER_GC), then time.
        await contenders[i]!.run(Math.min(WARM_AFTER_GC, Math.max(sizes[i]!, 64)))
      }
      const { cpu, wall } = await timeAndCpu(contenders[i]!, sizes[i]!)
      samples[i]!.push(wall / sizes[i]!)
      cpuSamples[i]!.push(cpu / sizes[i]!)
    }
  }
  return contenders.map((c, i) => {
    const s = samples[i]!
    const cs = cpuSamples[i]!
    const timing = {
      name: c.name,
      samples: s,
      median: median(s),
      min: Math.min(...s),
      max: Math.max(...s),
      calls: sizes[i]! * options.rounds,
      cpu: { samples: cs, median: median(cs), min: Math.min(...cs), max: Math.max(...cs) }
    }
    options.log?.(
      `    ${c.name}: ${fmtNs(timing.median)} ns/call (min ${fmtNs(timing.min)}, max ${fmtNs(timing.max)}); ` +
        `CPU ${fmtNs(timing.cpu.median)} ns/call (min ${fmtNs(timing.cpu.min)}, max ${fmtNs(timing.cpu.max)})`
    )
    return timing
  })
}

/** Renders a Markdown table; numbers are right-aligned by the caller's formatting. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const line = (cells: ReadonlyArray<string>) => `| ${cells.join(" | ")} |`
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n")
}

export const fmtNs = (ns: number): string => Number.isFinite(ns) ? Math.round(ns).toLocaleString("en-US") : "—"

export const fmtMs = (ms: number, digits = 2): string => Number.isFinite(ms) ? ms.toFixed(digits) : "—"

export const fmtRatio = (x: number): string => Number.isFinite(x) ? `${x.toFixed(2)}×` : "—"

/** One goal of the issue, beside the figure measured for it. */
export interface Goal {
  readonly benchmark: string
  readonly goal: string
  readonly measured: string
  readonly status: "PASS" | "FAIL" | "pending"
}

/** What one benchmark contributes to RESULTS.md. */
export interface Section {
  readonly markdown: string
  readonly goals: ReadonlyArray<Goal>
}

/** A benchmark module. `requires` names the package whose absence skips the whole benchmark. */
export interface Benchmark {
  readonly id: number
  readonly title: string
  readonly requires?: { readonly module: string; readonly skipped: string } | undefined
  readonly goals?: ReadonlyArray<string> | undefined
  readonly run: (options: RunOptions) => Promise<Section>
}

export interface RunOptions {
  /** Fewer rounds and smaller samples: a smoke run, not figures to quote. */
  readonly quick: boolean
  readonly log: (line: string) => void
}

/** Whether a package can be imported from the bench (present in node_modules and built). */
export const canImport = async (specifier: string): Promise<boolean> => {
  try {
    await import(specifier)
    return true
  } catch {
    return false
  }
}

/** The commit measured, and whether packages/core had uncommitted changes. */
const revision = (): string => {
  try {
    const sha = execSync("git rev-parse --short HEAD", { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    const dirty = execSync("git status --porcelain -- packages/core", {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"]
    }).trim()
    return dirty === "" ? sha : `${sha} with uncommitted changes in packages/core`
  } catch {
    return "unknown (not a git checkout)"
  }
}

/** The machine facts printed at the top of RESULTS.md. */
export const machine = (effectVersion: string): ReadonlyArray<[string, string]> => {
  const cpus = os.cpus()
  const load = os.loadavg().map((x) => x.toFixed(2)).join(" / ")
  return [
    ["date", new Date().toISOString()],
    ["cpu", `${cpus[0]?.model ?? "unknown"} × ${cpus.length} (${os.availableParallelism()} usable)`],
    ["memory", `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB (free ${(os.freemem() / 2 ** 30).toFixed(1)} GiB)`],
    ["os", `${os.type()} ${os.release()} ${os.arch()}`],
    ["node", `${process.version} (V8 ${process.versions.v8})`],
    ["effect", effectVersion],
    ["rein commit", revision()],
    ["load average (1/5/15 min) at start", load],
    ["gc between samples", gc === undefined ? "no (run node with --expose-gc)" : "yes (--expose-gc)"]
  ]
}

interface GcStatistic {
  readonly beforeGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
  readonly afterGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
}

/**
 * Bytes allocated on the V8 heap while `f` runs: the growth of the used heap plus what every collection in
 * between freed (read with `v8.GCProfiler`, which reports the used heap before and after each collection).
 * Objects of anything else running meanwhile (timers, other fibers) count too: measure one thing at a time.
 */
export const allocated = async <A>(f: () => Promise<A>): Promise<{ readonly value: A; readonly bytes: number }> => {
  const profiler = new v8.GCProfiler()
  profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  const value = await f()
  const after = v8.getHeapStatistics().used_heap_size
  const stats = (profiler.stop()?.statistics ?? []) as ReadonlyArray<GcStatistic>
  let freed = 0
  for (const s of stats) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
  return { value, bytes: after - before + freed }
}

export const fmtKb = (bytes: number): string => Number.isFinite(bytes) ? `${(bytes / 1024).toFixed(2)} KB` : "—"
