/**
 * Benchmark 1: per-call overhead. A zero-latency in-memory provider, on the success path and on a
 * two-failures-then-success path; Rein (each configuration of `reinVariants`) against the bare provider
 * Effect, `Effect.retry` + `Effect.timeout`, Effect's `ExecutionPlan` (two steps), cockatiel (retry +
 * circuit breaker + timeout, composed with `wrap`) and p-retry.
 *
 * Two modes: one call per `Effect.runPromise` (or per `await` for promise-based peers), and in-fiber (a
 * loop inside one `Effect.gen`; promise-based peers are bridged with `Effect.promise`, as an Effect program
 * would use them). All contenders of one table are timed side by side, interleaved, and the median of the
 * rounds is reported.
 */
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base"
import { Rein, Telemetry } from "@rein/core"
import type { Provider } from "@rein/core"
import {
  circuitBreaker,
  ConsecutiveBreaker,
  ConstantBackoff,
  handleAll,
  retry as cockatielRetry,
  timeout as cockatielTimeout,
  TimeoutStrategy,
  wrap
} from "cockatiel"
import type { Context } from "effect"
import { Effect, ExecutionPlan, Layer, Runtime, Tracer } from "effect"
import pRetry from "p-retry"
import {
  attemptContext,
  contextOf,
  flaky,
  flakyAsync,
  overheadContract,
  reinVariants,
  request,
  succeeding,
  succeedingAsync
} from "./fixtures.js"
import type { Counted } from "./fixtures.js"
import type { Benchmark, Contender, Goal, RunOptions, Section, Timing } from "./harness.js"
import { fmtNs, fmtRatio, interleave, loadNow, loadRange, median, table, WARM_AFTER_GC } from "./harness.js"

/** Calls per sample of the health off / health on pair (≈ 140 ms a sample on a quiet machine). */
const PAIR_CALLS = 20_000

/** `a[r] ÷ b[r]` for every round `r`: median, min and max. */
const paired = (a: ReadonlyArray<number>, b: ReadonlyArray<number>) => {
  const ratios = a.map((x, r) => x / b[r]!)
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) }
}

const fmtPaired = (p: ReturnType<typeof paired>): string =>
  `${fmtRatio(p.median)} (${fmtRatio(p.min)}–${fmtRatio(p.max)})`

export type Path = "success" | "flaky"
export type Mode = "runPromise" | "fiber"

/** What a contender is made of: an Effect (with the context it needs, if any) or a promise-returning call. */
export type Made =
  | {
    readonly kind: "effect"
    readonly effect: Effect.Effect<unknown, unknown, Rein.Rein>
    readonly context?: Context.Context<Rein.Rein> | undefined
    readonly counted: Counted
  }
  | { readonly kind: "promise"; readonly call: () => Promise<unknown>; readonly counted: Counted }

/** A contender of the tables, made per path. */
export interface Entry {
  readonly name: string
  readonly rein: boolean
  readonly make: (path: Path) => Promise<Made>
}

const providerOf = (path: Path) => path === "success" ? succeeding() : flaky()
const asyncOf = (path: Path) => path === "success" ? succeedingAsync() : flakyAsync()

class Model extends Effect.Tag("bench/Model")<Model, Provider.Provider>() {}

/** The peers of the tables (exported for bench/ab scripts). */
export const peers: ReadonlyArray<Entry> = [
  {
    name: "bare provider Effect",
    rein: false,
    make: async (path) => {
      const p = providerOf(path)
      const call = p.call(request, attemptContext)
      // On the flaky path the floor is a hand-written three tries, with nothing else.
      const effect = path === "success" ? call : Effect.orElse(call, () => Effect.orElse(call, () => call))
      return { kind: "effect", effect, counted: p }
    }
  },
  {
    name: "Effect.retry + Effect.timeout",
    rein: false,
    make: async (path) => {
      const p = providerOf(path)
      const effect = Effect.retry(Effect.timeout(p.call(request, attemptContext), "30 seconds"), { times: 2 })
      return { kind: "effect", effect, counted: p }
    }
  },
  {
    name: "Effect ExecutionPlan (2 steps)",
    rein: false,
    make: async (path) => {
      const p = providerOf(path)
      const plan = ExecutionPlan.make(
        { provide: Layer.succeed(Model, p), attempts: 2 },
        { provide: Layer.succeed(Model, p) }
      )
      const effect = Effect.withExecutionPlan(Effect.flatMap(Model, (m) => m.call(request, attemptContext)), plan)
      return { kind: "effect", effect, counted: p }
    }
  },
  {
    name: "cockatiel retry + breaker + timeout",
    rein: false,
    make: async (path) => {
      const f = asyncOf(path)
      const policy = wrap(
        cockatielRetry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) }),
        circuitBreaker(handleAll, { halfOpenAfter: 10_000, breaker: new ConsecutiveBreaker(5) }),
        cockatielTimeout(30_000, TimeoutStrategy.Aggressive)
      )
      return { kind: "promise", call: () => policy.execute(() => f()), counted: f }
    }
  },
  {
    name: "p-retry",
    rein: false,
    make: async (path) => {
      const f = asyncOf(path)
      const options = { retries: 2, minTimeout: 0, factor: 1, randomize: false }
      return { kind: "promise", call: () => pRetry(() => f(), options), counted: f }
    }
  }
]

/** Rein's configurations as table entries (exported for bench/ab scripts). */
export const reinEntries: ReadonlyArray<Entry> = reinVariants.map((variant) => ({
  name: variant.name,
  rein: true,
  make: async (path) => {
    const p = providerOf(path)
    const context = await contextOf(variant, { mem: p })
    return { kind: "effect", effect: Rein.execute(request, overheadContract), context, counted: p }
  }
}))

/**
 * An OpenTelemetry SDK tracer, as a program exporting to a collector would run it (a `BatchSpanProcessor`),
 * whose exporter drops the batches: the figure is what Rein's spans and metrics cost, not the network.
 */
const sdkTracer = (): Tracer.Tracer => {
  const dropping: SpanExporter = {
    export: (_spans: Array<ReadableSpan>, done: Parameters<SpanExporter["export"]>[1]) => done({ code: 0 }),
    shutdown: () => Promise.resolve()
  }
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] })
  return Effect.runSync(Effect.provideService(OtelTracer.make, OtelTracer.OtelTracer, provider.getTracer("bench")))
}

/** Rein with telemetry on: `Telemetry.layer` and an SDK tracer (not part of the goals: its row says the cost). */
export const tracedEntry: Entry = {
  name: "Rein (health on, tracing on)",
  rein: true,
  make: async (path) => {
    const p = providerOf(path)
    const [base] = reinVariants.filter((v) => v.name === "Rein (journal off, health on)")
    const context = await contextOf(
      { name: "traced", layer: (providers) => Layer.merge(base!.layer(providers), Telemetry.layer) },
      { mem: p }
    )
    const effect = Effect.withTracer(Rein.execute(request, overheadContract), sdkTracer())
    return { kind: "effect", effect, context, counted: p }
  }
}

/** A table's contender from an entry (exported for bench/ab scripts). */
export const toContender = (entry: Entry, made: Made, mode: Mode, path: Path): Contender => {
  const perCall = path === "success" ? 1 : 3
  let run: (n: number) => Promise<void>
  let once: () => Promise<unknown>
  if (made.kind === "effect") {
    const { context, effect } = made
    // Rein's services live in the runtime, as with a `ManagedRuntime`: nothing is provided per call.
    const runtime = context === undefined
      ? Runtime.defaultRuntime
      : Runtime.make({
        context: context as Context.Context<never>,
        fiberRefs: Runtime.defaultRuntime.fiberRefs,
        runtimeFlags: Runtime.defaultRuntime.runtimeFlags
      })
    const single = effect as Effect.Effect<unknown, unknown>
    const runPromise = Runtime.runPromise(runtime)
    once = () => runPromise(single)
    if (mode === "runPromise") {
      run = async (n) => {
        for (let i = 0; i < n; i++) await runPromise(single)
      }
    } else {
      run = (n) => {
        const loop = Effect.gen(function*() {
          for (let i = 0; i < n; i++) yield* effect
        })
        return Effect.runPromise(
          (context === undefined ? loop : Effect.provide(loop, context)) as Effect.Effect<void, unknown>
        )
      }
    }
  } else {
    const { call } = made
    once = call
    if (mode === "runPromise") {
      run = async (n) => {
        for (let i = 0; i < n; i++) await call()
      }
    } else {
      const bridged = Effect.promise(call)
      run = (n) =>
        Effect.runPromise(Effect.gen(function*() {
          for (let i = 0; i < n; i++) yield* bridged
        }))
    }
  }
  return {
    name: mode === "fiber" && made.kind === "promise" ? `${entry.name} (via Effect.promise)` : entry.name,
    run,
    verify: async () => {
      const before = made.counted.calls
      const result = await once()
      const calls = made.counted.calls - before
      const text = (result as { readonly text?: unknown }).text
      if (calls !== perCall || text !== "ok") {
        throw new Error(
          `${entry.name} on the ${path} path: ${calls} provider calls (expected ${perCall}), text ${String(text)}`
        )
      }
      if (entry.rein) {
        const attempts = (result as { readonly attempts: ReadonlyArray<unknown> }).attempts
        if (attempts.length !== perCall) throw new Error(`${entry.name}: ${attempts.length} attempt records`)
      }
    }
  }
}

const PATHS: ReadonlyArray<[Path, string]> = [
  ["success", "success path"],
  ["flaky", "two failures, then success"]
]
const MODES: ReadonlyArray<[Mode, string]> = [
  ["runPromise", "one call per `Effect.runPromise` (promise peers: per `await`)"],
  ["fiber", "in-fiber: a loop of calls inside one `Effect.gen`"]
]

const run = async (options: RunOptions): Promise<Section> => {
  const rounds = options.quick ? 3 : 15
  const sampleMillis = options.quick ? 30 : 120
  const entries = [...reinEntries, tracedEntry, ...peers]
  const parts: Array<string> = []
  const results = new Map<string, ReadonlyArray<Timing>>()
  // A process warm-up, discarded: the first table of a fresh process measured the JIT's tier-up of all the
  // shared code, and its background compilation threads, in whichever contender ran first. In the quiet run
  // of 781830a, health off (the first contender) read 1.31× health on in that first table (CPU max 58 µs,
  // 4× its min) and 0.61–0.88× in the three tables after it.
  options.log("  process warm-up (not recorded)")
  const warm: Array<Contender> = []
  for (const entry of entries) warm.push(toContender(entry, await entry.make("success"), "runPromise", "success"))
  await interleave(warm, { rounds: rounds === 15 ? 5 : 1, sampleMillis })
  for (const [path, pathTitle] of PATHS) {
    for (const [mode, modeTitle] of MODES) {
      options.log(`  ${pathTitle}, ${mode}`)
      const contenders: Array<Contender> = []
      for (const entry of entries) contenders.push(toContender(entry, await entry.make(path), mode, path))
      const load0 = loadNow()
      const timings = await interleave(contenders, { rounds, sampleMillis, log: options.log })
      const load = loadRange(load0, loadNow())
      results.set(`${path}/${mode}`, timings)
      const reinTimings = timings.slice(0, reinEntries.length)
      const header = [
        "contender",
        "ns per call (median)",
        "min–max",
        "CPU ns per call (median)",
        "CPU min–max",
        ...reinTimings.map((r) => `${r.name} ÷ contender`)
      ]
      const rows = timings.map((t) => [
        t.name,
        fmtNs(t.median),
        `${fmtNs(t.min)}–${fmtNs(t.max)}`,
        fmtNs(t.cpu.median),
        `${fmtNs(t.cpu.min)}–${fmtNs(t.cpu.max)}`,
        ...reinTimings.map((r) => (r === t ? "1.00×" : fmtRatio(r.median / t.median)))
      ])
      const untraced = timings.find((t) => t.name === "Rein (journal off, health on)")!
      const traced = timings.find((t) => t.name === tracedEntry.name)!
      const added = `Tracing on adds ${fmtNs(traced.median - untraced.median)} ns per request to Rein ` +
        `(journal off, health on) (${fmtRatio(traced.median / untraced.median)}). Measured at ${load}.`
      parts.push(`### ${pathTitle}; ${modeTitle} (${load})\n\n${table(header, rows)}\n\n${added}`)
    }
  }
  // Health off against health on, the two alone: in the nine-contender table each sample's time depends on
  // the sample before it (the code the last `gc()` left to recompile), and the rotation keeps every contender's
  // neighbours, so health on always followed health off and health off mostly followed p-retry. Listed with
  // health on first, health off read 0.83–0.90× health on; in the bench's order 0.95–1.55× (bench/PROFILE.md,
  // #22). With two contenders the rotation alternates the order every round: each follows the other as often
  // as itself.
  options.log("  health off vs health on, the two alone")
  const pairLoad0 = loadNow()
  const pair = await interleave(
    await Promise.all(
      reinEntries.slice(0, 2).map(async (entry) =>
        toContender(entry, await entry.make("success"), "runPromise", "success")
      )
    ),
    // One fixed sample size for both: calibrated sizes differ up to 7× under load, and the smaller sample spends
    // more of itself in the slow stretch after each `gc()` (18–57 µs a call for the first ~3,000 calls, 4–6 µs
    // warm), so the ratio tracked the size ratio (0.35–2.79×; bench/PROFILE.md, branch h/hoff2).
    { rounds: rounds === 15 ? 21 : 3, sampleMillis, calls: PAIR_CALLS, log: options.log }
  )
  const pairLoad = loadRange(pairLoad0, loadNow())
  const pairOff = pair.find((t) => t.name === "Rein (journal off, health off)")!
  const pairOn = pair.find((t) => t.name === "Rein (journal off, health on)")!
  const wallRatio = paired(pairOff.samples, pairOn.samples)
  const cpuRatio = paired(pairOff.cpu.samples, pairOn.cpu.samples)
  parts.push(
    `### Health off against health on, the two alone; success path, one call per runPromise (${pairLoad})\n\n` +
      table(
        ["contender", "ns per call (median)", "min–max", "CPU ns per call (median)", "CPU min–max"],
        pair.map((t) => [
          t.name,
          fmtNs(t.median),
          `${fmtNs(t.min)}–${fmtNs(t.max)}`,
          fmtNs(t.cpu.median),
          `${fmtNs(t.cpu.min)}–${fmtNs(t.cpu.max)}`
        ])
      ) +
      `\n\nThe order alternates every round (${rounds === 15 ? 21 : 3} rounds): each follows the other as often as ` +
      `itself, and every sample is the same ${PAIR_CALLS.toLocaleString("en-US")} calls (not calibrated to a time: ` +
      "the two then time the same stretch after each `gc()`). Health off ÷ health on, round by round (each " +
      `round's two samples side by side): time ${fmtPaired(wallRatio)}, CPU ${fmtPaired(cpuRatio)}. The goal ` +
      "\"health off never slower than health on\" is read from the time ratio's median over the rounds: the two " +
      "samples of a round share the machine's state, which two medians over the whole run do not (spreads of " +
      "±30 % under load against a difference of 5–9 % per call measured alone; bench/PROFILE.md, h/hoff2)."
  )
  const goals: Array<Goal> = []
  const success = results.get("success/runPromise")!
  const fiber = results.get("success/fiber")!
  const find = (ts: ReadonlyArray<Timing>, prefix: string) => ts.find((t) => t.name.startsWith(prefix))!
  const versus = (r: Timing, p: Timing) =>
    `${fmtNs(r.median)} ns vs ${fmtNs(p.median)} ns (${fmtRatio(r.median / p.median)}); CPU ` +
    `${fmtNs(r.cpu.median)} vs ${fmtNs(p.cpu.median)} ns (${fmtRatio(r.cpu.median / p.cpu.median)})`
  const cockatiel = find(success, "cockatiel")
  for (const r of success.slice(0, reinEntries.length)) {
    goals.push({
      benchmark: "1. overhead",
      goal: `${r.name} ≤ 1.0× ${cockatiel.name}, success path, one call per runPromise (time per call)`,
      measured: versus(r, cockatiel),
      status: r.median <= cockatiel.median ? "PASS" : "FAIL"
    })
  }
  goals.push({
    benchmark: "1. overhead",
    goal: "health off never slower than health on, success path, one call per runPromise, the two alone, " +
      "order alternated every round (time per call, off ÷ on round by round, median)",
    measured: `off ÷ on per round: time ${fmtPaired(wallRatio)}, CPU ${fmtPaired(cpuRatio)}; medians over the run ` +
      versus(pairOff, pairOn),
    status: wallRatio.median <= 1 ? "PASS" : "FAIL"
  })
  for (const r of success.slice(0, reinEntries.length)) {
    const p = find(success, "Effect ExecutionPlan")
    goals.push({
      benchmark: "1. overhead",
      goal: `${r.name} below ${p.name}, success path, one call per runPromise (time per call)`,
      measured: versus(r, p),
      status: r.median < p.median ? "PASS" : "FAIL"
    })
  }
  for (const r of fiber.slice(0, reinEntries.length)) {
    const p = find(fiber, "Effect.retry + Effect.timeout")
    goals.push({
      benchmark: "1. overhead",
      goal: `${r.name} in-fiber, success path, at most one timer per request: below Effect.retry + Effect.timeout ` +
        "(time per call)",
      measured: versus(r, p),
      status: r.median < p.median ? "PASS" : "FAIL"
    })
  }
  const notes = [
    "Before the first table, the success path's contenders run once as in a table, untimed (a process warm-up:",
    "timed in a fresh process, the first contender of the first table paid the JIT's first tier-up of the shared",
    "code; it is how \"health off\", listed first, once read slower than \"health on\" in that table only).",
    "Each table's contenders ran in the same process, interleaved: after a warm-up and a calibration, every",
    `round runs one sample of about ${sampleMillis} ms of each contender, in an order rotated every round;`,
    `${rounds} rounds; the median, min and max are over the rounds' ns-per-call figures. A \`gc()\` runs before`,
    `every sample, followed by up to ${
      WARM_AFTER_GC.toLocaleString("en-US")
    } untimed calls of the contender (the calls right after a full`,
    "collection run up to ~20× slower while V8 recovers; timing them made the fastest configuration look the",
    "slowest). Two figures per sample: wall time (`process.hrtime`), which the goals and ratios use, and CPU time",
    "of the process (`process.cpuUsage`, user + system, every thread). On the loaded machine of #22 the CPU figure",
    "of a sample sometimes exceeded its wall time several-fold (not possible for one thread on 2 cores; cause not",
    "found), so it is printed, not judged. Every contender is checked once to make exactly 1 (success) or 3",
    "(flaky) provider calls and to return the provider's answer.",
    "",
    "- Rein: `Rein.execute` with a 30 s deadline, candidates `mem/a` then `mem/b`, 2 retries per endpoint and",
    "  a backoff that rounds to 0 ms (no timer), no budget limit; the layer is built once, and each call runs",
    "  on a runtime holding its services (as with a `ManagedRuntime`; in-fiber: provided once per loop).",
    "- Rein (health on, tracing on): the same with `Telemetry.layer` and an OpenTelemetry SDK tracer",
    "  (`@effect/opentelemetry`, a `BatchSpanProcessor` whose exporter drops the batches), set per call with",
    "  `Effect.withTracer`: a request span, an attempt span per attempt, events, metrics. Not part of the goals.",
    "- bare provider Effect: the provider's `call` Effect itself; on the flaky path three hand-chained tries",
    "  (`Effect.orElse`).",
    "- `Effect.retry({ times: 2 })` around `Effect.timeout(\"30 seconds\")` per attempt.",
    "- `ExecutionPlan.make({ provide: primary, attempts: 2 }, { provide: fallback })` with",
    "  `Effect.withExecutionPlan` (it builds the step's layer on every execution).",
    "- cockatiel: `wrap(retry(handleAll, { maxAttempts: 2, backoff: ConstantBackoff(0) }), circuitBreaker(…,",
    "  ConsecutiveBreaker(5)), timeout(30 s, Aggressive))`. cockatiel always awaits `setTimeout(0)` between",
    "  tries, even for a zero backoff, so on the flaky path it pays two timer turns (≈ 1 ms each).",
    "- p-retry: `{ retries: 2, minTimeout: 0, factor: 1, randomize: false }` (a 0 ms delay starts no timer)."
  ].join("\n")
  return { markdown: `${notes}\n\n${parts.join("\n\n")}`, goals }
}

export const overhead: Benchmark = {
  id: 1,
  title: "Per-call overhead",
  run
}
