/**
 * Benchmark 4: deadline precision. Requests with a 50 ms deadline against a provider that never answers:
 * p50 / p99 / max of lateness = (return time − start) − deadline, read from `process.hrtime`. Two shapes:
 *
 * - burst: 1,000 requests started at once (`Effect.forEach`, unbounded concurrency), 1,000 simultaneous
 *   expiries;
 * - spread: 1,000 requests started one per millisecond (≈ 50 in flight at a time).
 *
 * Floors in the same run, the same shapes: plain `setTimeout` timers; forked `Effect.sleep`; a lean bound
 * (one fork and one `setTimeout` per call, the caller resumed by the forked fiber's observer once it was
 * interrupted: the least a bound that waits for the call's teardown can do). `Effect.timeout` is a peer, not
 * a floor (it forks a fiber for its timer and races two fibers). Then Rein against a provider that ignores
 * interruption, measured against deadline + teardown grace (no goal: it shows the grace is kept). Real
 * clock: this is a benchmark.
 */
import { Contract, Journal, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import type { Context } from "effect"
import { Effect, FiberRefs, Layer, Runtime } from "effect"
import { execFileSync } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { JournalWork } from "./fixtures.js"
import {
  contextOf,
  journaledLean,
  leanBound,
  LeanTimeout,
  memoryJournal,
  reinVariants,
  request,
  response
} from "./fixtures.js"
import type { Benchmark, Goal, RunOptions, Section } from "./harness.js"
import { collect, fmtMs, fmtRatio, loadNow, loadRange, median, nowMillis, quantile, table } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))

const CONCURRENCY = 1_000
const DEADLINE_MILLIS = 50
const GRACE_MILLIS = 250
/** How long the stubborn provider ignores interruption: far beyond deadline + grace. */
const STUBBORN_MILLIS = 2_000

const contract = Contract.make({
  deadline: DEADLINE_MILLIS,
  teardownGrace: GRACE_MILLIS,
  candidates: ["mem/a"],
  retry: { perEndpoint: 0 }
})

const never: Provider.Provider = { internalMaxAttempts: 1, call: () => Effect.never }

/** Ignores interruption for `STUBBORN_MILLIS`; counts the calls whose fiber has ended. */
const stubborn = () => {
  const state = { started: 0, ended: 0 }
  const provider: Provider.Provider = {
    internalMaxAttempts: 1,
    call: () =>
      Effect.suspend(() => {
        state.started++
        return Effect.as(Effect.uninterruptible(Effect.sleep(STUBBORN_MILLIS)), response)
      }).pipe(Effect.ensuring(Effect.sync(() => state.ended++)))
  }
  return { provider, state }
}

/**
 * Runs `one` CONCURRENCY times at once; returns each request's (return time − expected return time), in ms.
 * The expected return time depends on the result (see `expectedReturn`).
 */
const overshoots = async <E, R>(
  runtime: Runtime.Runtime<R>,
  one: Effect.Effect<unknown, E, R>,
  expected: (result: unknown) => number,
  check: (result: unknown) => boolean
): Promise<Array<number>> => {
  const out: Array<number> = []
  let wrong = 0
  const timed = Effect.suspend(() => {
    const t0 = nowMillis()
    return Effect.map(Effect.either(one), (result) => {
      out.push(nowMillis() - t0 - expected(result))
      if (!check(result)) wrong++
    })
  })
  collect()
  await Runtime.runPromise(runtime)(Effect.forEach(Array.from({ length: CONCURRENCY }), () => timed, {
    concurrency: "unbounded",
    discard: true
  }))
  if (wrong > 0) throw new Error(`${wrong} of ${CONCURRENCY} requests ended with an unexpected result`)
  return out
}

const isDeadlineExceeded = (r: unknown) => {
  const e = r as { readonly _tag: string; readonly left?: { readonly _tag?: string } }
  return e._tag === "Left" && e.left?._tag === "DeadlineExceeded"
}
const isTimeout = (r: unknown) => {
  const e = r as { readonly _tag: string; readonly left?: { readonly _tag?: string } }
  return e._tag === "Left" && e.left?._tag === "TimeoutException"
}

const atDeadline = () => DEADLINE_MILLIS

/**
 * When a request should return: at the deadline; after the teardown grace as well when an attempt was in
 * flight and did not confirm its teardown (the stubborn provider). A request whose attempt never started
 * (the deadline expired before admission, when the process is saturated) is due at the deadline.
 */
const expectedReturn = (r: unknown) => {
  const e = r as { readonly left?: { readonly teardownUnconfirmed?: boolean } }
  return e.left?.teardownUnconfirmed === true ? DEADLINE_MILLIS + GRACE_MILLIS : DEADLINE_MILLIS
}

const waitUntil = async (done: () => boolean, maxMillis: number) => {
  const t0 = nowMillis()
  while (!done() && nowMillis() - t0 < maxMillis) await new Promise((resolve) => setTimeout(resolve, 10))
}

/** Starts `CONCURRENCY` runs of `one` one per millisecond (a real 1 ms timer between starts) and awaits them all. */
const spread = async (one: () => Promise<void>): Promise<void> => {
  const all: Array<Promise<void>> = []
  for (let i = 0; i < CONCURRENCY; i++) {
    all.push(one())
    await new Promise((resolve) => setTimeout(resolve, 1))
  }
  await Promise.all(all)
}

type Shape = "burst" | "spread"

/** Lateness of `CONCURRENCY` Effect runs of `one` (each checked by `check`), in the given shape. */
const effectLateness = async <E, R>(
  runtime: Runtime.Runtime<R>,
  shape: Shape,
  one: Effect.Effect<unknown, E, R>,
  expected: (result: unknown) => number,
  check: (result: unknown) => boolean
): Promise<Array<number>> => {
  if (shape === "burst") return overshoots(runtime, one, expected, check)
  const out: Array<number> = []
  let wrong = 0
  collect()
  await spread(() => {
    const t0 = nowMillis()
    return Runtime.runPromise(runtime)(Effect.either(one)).then((result) => {
      out.push(nowMillis() - t0 - expected(result))
      if (!check(result)) wrong++
    })
  })
  if (wrong > 0) throw new Error(`${wrong} of ${CONCURRENCY} requests ended with an unexpected result`)
  return out
}

/** Floor: plain `setTimeout(50 ms)` timers, lateness from each one's own start. */
const timerLateness = async (shape: Shape): Promise<Array<number>> => {
  const out: Array<number> = []
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = nowMillis()
      setTimeout(() => {
        out.push(nowMillis() - t0 - DEADLINE_MILLIS)
        resolve()
      }, DEADLINE_MILLIS)
    })
  collect()
  if (shape === "burst") await Promise.all(Array.from({ length: CONCURRENCY }, one))
  else await spread(one)
  return out
}

const isLeanTimeout = (r: unknown) => {
  const e = r as { readonly _tag: string; readonly left?: unknown }
  return e._tag === "Left" && e.left instanceof LeanTimeout
}
const isRight = (r: unknown) => (r as { readonly _tag: string })._tag === "Right"

type Kind = "floor" | "peer" | "rein" | "stubborn"

/** One row of the section: what it measures, its samples so far, and how to take one more. */
export interface Row {
  readonly name: string
  readonly kind: Kind
  readonly shape: Shape
  readonly against: string
  readonly samples: Array<number>
  readonly measure: () => Promise<Array<number>>
  /**
   * Waits until the last `measure` has left nothing running (the stubborn provider's calls): the child runs it
   * between its untimed and its timed run, not after the timed one (the process exits then).
   */
  readonly settle?: () => Promise<void>
}

/**
 * The runtime Rein's rows run on: its services built once and carried by the runtime, as a program that
 * provides `Rein.layer` at its top (or runs on a `ManagedRuntime`) has them. Not `Effect.provide` per request:
 * that merges the context and sets a fiber ref around every call, a cost of the harness (25 of a request's 91
 * run-loop steps, 10.5 KB: PROFILE.md, h/expiry), not of Rein, and one the lean bound never paid.
 */
const runtimeOf = (context: Context.Context<Rein.Rein>): Runtime.Runtime<Rein.Rein> =>
  Runtime.make({ context, runtimeFlags: Runtime.defaultRuntimeFlags, fiberRefs: FiberRefs.empty() })

const reinRows = async (): Promise<Array<Row>> => {
  const rows: Array<Row> = []
  for (const variant of reinVariants) {
    const neverRuntime = runtimeOf(await contextOf(variant, { mem: never }))
    const rein = Rein.execute(request, contract)
    for (const shape of ["burst", "spread"] as const) {
      rows.push({
        name: `${variant.name}, provider never answers`,
        kind: "rein",
        shape,
        against: "deadline",
        samples: [],
        measure: () => effectLateness(neverRuntime, shape, rein, atDeadline, isDeadlineExceeded)
      })
    }
    let last = stubborn()
    rows.push({
      name: `${variant.name}, provider ignores interruption`,
      kind: "stubborn",
      shape: "burst",
      against: "deadline + teardown grace",
      samples: [],
      // A fresh context (and health state) for every measurement, as for a fresh process.
      measure: async () => {
        last = stubborn()
        const runtime = runtimeOf(await contextOf(variant, { mem: last.provider }))
        return overshoots(runtime, Rein.execute(request, contract), expectedReturn, isDeadlineExceeded)
      },
      // Every stubborn call ends before the next measurement, so no leftover timers skew it.
      settle: () => waitUntil(() => last.state.ended >= last.state.started, STUBBORN_MILLIS * 3)
    })
  }
  return rows
}

const floorRows = (): Array<Row> =>
  (["burst", "spread"] as const).flatMap((shape): Array<Row> => [
    {
      name: "floor: plain setTimeout(50 ms)",
      kind: "floor",
      shape,
      against: "timer's delay",
      samples: [],
      measure: () => timerLateness(shape)
    },
    {
      name: "floor: forked Effect.sleep(50 ms)",
      kind: "floor",
      shape,
      against: "sleep's duration",
      samples: [],
      measure: () => effectLateness(Runtime.defaultRuntime, shape, Effect.sleep(DEADLINE_MILLIS), atDeadline, isRight)
    },
    {
      name: "floor: lean bound (one fork + one setTimeout, observer resumes)",
      kind: "floor",
      shape,
      against: "deadline",
      samples: [],
      measure: () =>
        effectLateness(
          Runtime.defaultRuntime,
          shape,
          leanBound(Effect.never, DEADLINE_MILLIS),
          atDeadline,
          isLeanTimeout
        )
    },
    {
      name: "peer: Effect.timeout(Effect.never, 50 ms)",
      kind: "peer",
      shape,
      against: "deadline",
      samples: [],
      measure: () =>
        effectLateness(
          Runtime.defaultRuntime,
          shape,
          Effect.timeout(Effect.never, DEADLINE_MILLIS),
          atDeadline,
          isTimeout
        )
    }
  ])

/**
 * What one journaled Rein request of the burst's journal row hands its writer (header, decision, attempt,
 * outcome), read through a journal that passes everything on to a `Journal.make` writer.
 */
export const journalWork = async (): Promise<JournalWork> => {
  const seen: Partial<{ -readonly [K in keyof JournalWork]: JournalWork[K] }> = {}
  const inner = Journal.make(() => Effect.void)
  const watch = (header: Journal.Header): Journal.Writer => {
    for (const key of Object.keys(seen) as Array<keyof JournalWork>) delete seen[key]
    seen.header = header
    const writer = inner.unsafeBegin!(header)
    return {
      decision: (snapshot, decision) => {
        seen.decision = [snapshot, decision]
        writer.decision(snapshot, decision)
      },
      attempt: (record) => {
        seen.attempt = record
        writer.attempt(record)
      },
      end: (outcome) => {
        seen.outcome = outcome
        return writer.end(outcome)
      }
    }
  }
  const watching = Layer.succeed(Journal.Journal, { begin: (header) => Effect.sync(() => watch(header)) })
  const journaled = reinVariants.find((v) => v.name.includes("journal on"))!
  const context = await contextOf(
    { name: journaled.name, layer: (providers) => Layer.merge(journaled.layer(providers), watching) },
    { mem: never }
  )
  // Under load a cold first request can expire before its attempt starts (no attempt to read): try again.
  for (let tries = 0; tries < 20; tries++) {
    const result = await Runtime.runPromise(runtimeOf(context))(Effect.either(Rein.execute(request, contract)))
    const { attempt, decision, header, outcome } = seen
    if (isDeadlineExceeded(result) && header && decision && attempt && outcome) {
      return { header, decision, attempt, outcome }
    }
  }
  throw new Error("deadline: the journal floor could not read a journaled request's work")
}

/** The journal floor's name: the burst goal of the journaled row is read against it too. */
const JOURNAL_FLOOR = "floor: journal (lean bound + Rein's journal writer: begin, decision, attempt, end)"

/**
 * The journal floor (burst only): the lean bound plus the journal work of one request, through the writer and
 * sink of Rein's journal row (`journaledLean`). Last in `allRows` so that the other rows keep their indexes.
 */
const journalFloorRow = (): Row => {
  // Read in the child that measures the row, at its first (untimed) run: no other row's child runs a Rein
  // request for it.
  let floor: Effect.Effect<never, LeanTimeout> | undefined
  return {
    name: JOURNAL_FLOOR,
    kind: "floor",
    shape: "burst",
    against: "deadline",
    samples: [],
    measure: async () => {
      floor ??= journaledLean(
        Effect.never,
        Effect.runSync(Effect.provide(Journal.Journal, memoryJournal)),
        await journalWork(),
        DEADLINE_MILLIS
      )
      return effectLateness(Runtime.defaultRuntime, "burst", floor, atDeadline, isLeanTimeout)
    }
  }
}

/** Every row of the section, in a fixed order (a child process is handed a row's index in it). */
export const allRows = async (): Promise<Array<Row>> => [
  ...floorRows(),
  ...(await reinRows()),
  journalFloorRow()
]

/**
 * One sample of row `index`, taken in a fresh child process (`deadline-child.js`) after an untimed run of the
 * same row there: every sample starts from the same process state, whatever row ran before it.
 */
const sampleInChild = (index: number): Array<number> => {
  const out = execFileSync(process.execPath, ["--expose-gc", join(here, "deadline-child.js"), String(index)], {
    encoding: "utf8",
    maxBuffer: 1 << 22
  })
  return JSON.parse(out.trim().split("\n").at(-1)!) as Array<number>
}

const p99 = (samples: ReadonlyArray<number>) => quantile([...samples].sort((a, b) => a - b), 0.99)

/** Rounds of the burst goal's rows side by side (`PAIRED_ROUNDS`) and of every other row (`OTHER_ROUNDS`). */
const PAIRED_ROUNDS = 15
const OTHER_ROUNDS = 5

/** Median, min and max of a list of per-round ratios. */
const spreadOf = (ratios: ReadonlyArray<number>) => ({
  median: median(ratios),
  min: Math.min(...ratios),
  max: Math.max(...ratios),
  count: ratios.length
})
const fmtSpread = (r: ReturnType<typeof spreadOf>) => `${fmtRatio(r.median)} (${fmtRatio(r.min)}–${fmtRatio(r.max)})`

/**
 * The burst goal's rows, one child each per round: the lean bound, every Rein configuration, and the lean
 * bound a second time (the control: what a ratio of equals reads). Each round's p99 is kept per row, so the goal
 * reads Rein ÷ lean bound round by round: the two children of a round run seconds apart, in about the same
 * machine state, which two pooled p99s over the whole run do not.
 */
interface Paired {
  readonly lean: Row
  /** The journal floor: read beside the lean bound for the journaled row. */
  readonly floor: Row
  readonly rein: ReadonlyArray<Row>
  /** p99 per round, per row name; the control under `CONTROL`. */
  readonly p99s: Map<string, Array<number>>
  /** The control's samples, pooled. */
  readonly control: Array<number>
}

const CONTROL = "control: lean bound, a second child"

const pairedRound = (rows: ReadonlyArray<Row>, paired: Paired, r: number) => {
  const members = [paired.lean, paired.floor, ...paired.rein, undefined]
  // Rotated every round, and reversed every other round: each member follows every other one.
  const rotated = members.map((_, k) => members[(k + r) % members.length])
  for (const member of r % 2 === 1 ? rotated.reverse() : rotated) {
    const row = member ?? paired.lean
    const samples = sampleInChild(rows.indexOf(row))
    const into = member === undefined ? paired.control : row.samples
    into.push(...samples)
    const key = member === undefined ? CONTROL : row.name
    paired.p99s.set(key, [...(paired.p99s.get(key) ?? []), p99(samples)])
  }
}

/** Paired rounds, with the other rows' rounds spread among them (the rows rotated every round). */
const measureAll = (
  rows: ReadonlyArray<Row>,
  paired: Paired,
  pairedRounds: number,
  otherRounds: number,
  log: (line: string) => void
) => {
  const others = rows.filter((row) => row !== paired.lean && row !== paired.floor && !paired.rein.includes(row))
  let done = 0
  for (let r = 0; r < pairedRounds; r++) {
    log(`  paired round ${r + 1}/${pairedRounds}`)
    pairedRound(rows, paired, r)
    if (Math.floor(((r + 1) * otherRounds) / pairedRounds) <= done) continue
    log(`  other rows, round ${done + 1}/${otherRounds}`)
    for (let k = 0; k < others.length; k++) {
      // Each sample in its own process: in one shared process the first Rein row after the floor rows ran
      // with V8's old-generation limit set low by their slow allocation and took an incremental mark-compact
      // that no other Rein row took (bench/PROFILE.md, #22).
      const row = others[(k + done) % others.length]!
      row.samples.push(...sampleInChild(rows.indexOf(row)))
    }
    done++
  }
}

/** Each round's p99 of `name` ÷ the same round's p99 of `against` (the lean bound unless said). */
const ratios = (paired: Paired, name: string, against: Row = paired.lean) => {
  const lean = paired.p99s.get(against.name)!
  return spreadOf(paired.p99s.get(name)!.map((x, r) => x / lean[r]!))
}

const isJournaled = (row: Row) => row.name.includes("journal on")

/**
 * The journaled row also against the journal floor: the same target (1.5×) read against the lean bound plus
 * the journal's own work. The verdict stays the lean bound's; this says how much of it is the journal's.
 */
const againstFloor = (row: Row, paired: Paired) => {
  const r = ratios(paired, row.name, paired.floor)
  const pooled = p99(row.samples)
  const floor = p99(paired.floor.samples)
  return `; against the journal floor (${paired.floor.name}): p99 ÷ floor per round ${fmtSpread(r)}, pooled ` +
    `${fmtMs(pooled)} vs ${fmtMs(floor)} ms (${fmtRatio(pooled / floor)}), ${
      r.median <= 1.5 ? "PASS" : "FAIL"
    } by that floor; the floor ÷ lean bound per round ${fmtSpread(ratios(paired, paired.floor.name))}; ` +
    "verdict: the lean bound's"
}

const burstGoal = (row: Row, paired: Paired, load: string): Goal => {
  const r = ratios(paired, row.name)
  const pooled = p99(row.samples)
  const lean = p99(paired.lean.samples)
  return {
    benchmark: "4. deadline precision",
    goal: `${row.name}, ${CONCURRENCY.toLocaleString("en-US")} simultaneous expiries: lateness p99 ≤ 1.5× the ` +
      "lean bound's p99, the two side by side (p99 ÷ lean bound's p99 round by round, median)",
    measured: `p99 ÷ lean bound per round ${fmtSpread(r)} over ${r.count} rounds; pooled p99 ${fmtMs(pooled)} ms ` +
      `vs lean bound ${fmtMs(lean)} ms (${fmtRatio(pooled / lean)}); control (lean ÷ lean) ` +
      `${fmtSpread(ratios(paired, CONTROL))}${isJournaled(row) ? againstFloor(row, paired) : ""}; ${load}`,
    status: r.median <= 1.5 ? "PASS" : "FAIL"
  }
}

const spreadGoal = (row: Row, sleep: Row, load: string): Goal => {
  const mine = p99(row.samples)
  const floor = p99(sleep.samples)
  return {
    benchmark: "4. deadline precision",
    goal: `${row.name}, spread arrivals (one a millisecond): lateness p99 ≤ forked Effect.sleep's p99 + 5 ms`,
    measured: `p99 ${fmtMs(mine)} ms vs Effect.sleep ${fmtMs(floor)} ms (+${fmtMs(mine - floor)} ms); ${load}`,
    status: mine <= floor + 5 ? "PASS" : "FAIL"
  }
}

const rowsTable = (rows: ReadonlyArray<Row>) => {
  const header = ["shape", "requests", "lateness measured against", "samples", "p50 ms", "p99 ms", "max ms", "min ms"]
  const body = [...rows].sort((a, b) => (a.shape === b.shape ? 0 : a.shape === "burst" ? -1 : 1)).map((row) => {
    const s = [...row.samples].sort((a, b) => a - b)
    return [
      row.shape,
      row.name,
      row.against,
      String(s.length),
      fmtMs(quantile(s, 0.5)),
      fmtMs(quantile(s, 0.99)),
      fmtMs(s[s.length - 1]!),
      fmtMs(s[0]!)
    ]
  })
  return table(header, body)
}

const pairedTable = (paired: Paired) => {
  const header = [
    "burst, side by side",
    "p99 ÷ lean bound's p99 (or as said), per round: median",
    "min–max",
    "pooled p99 ms"
  ]
  const line = (name: string, samples: ReadonlyArray<number>, against: Row) => {
    const r = ratios(paired, name, against)
    const pooled = p99(samples)
    const floor = p99(against.samples)
    return [
      name,
      fmtRatio(r.median),
      `${fmtRatio(r.min)}–${fmtRatio(r.max)}`,
      `${fmtMs(pooled)} vs ${fmtMs(floor)} (${fmtRatio(pooled / floor)})`
    ]
  }
  const body = [
    line(paired.floor.name, paired.floor.samples, paired.lean),
    ...paired.rein.map((row) => line(row.name, row.samples, paired.lean)),
    line(CONTROL, paired.control, paired.lean),
    ...paired.rein.filter(isJournaled).map((row) => {
      const [name, ...rest] = line(row.name, row.samples, paired.floor)
      return [`${name} ÷ the journal floor (not the goal's bound)`, ...rest]
    })
  ]
  return table(header, body)
}

const notes = (pairedRounds: number, otherRounds: number, load: string) =>
  [
    `Each row: ${
      CONCURRENCY.toLocaleString("en-US")
    } requests with a ${DEADLINE_MILLIS} ms deadline (teardown grace ${GRACE_MILLIS} ms, no`,
    "retry, one candidate) against a provider that never answers. burst: all started at once (`Effect.forEach`,",
    "unbounded concurrency; the timers: 1,000 `setTimeout` at once). spread: one started per millisecond (a real",
    `1 ms timer between starts, ≈ ${DEADLINE_MILLIS} in flight). Each sample in a fresh child process right after an`,
    "untimed run of the same row there. The burst goal's rows (the lean bound and the three Rein configurations,",
    `provider never answers) run side by side: ${pairedRounds} rounds, one child each per round, the order rotated`,
    "every round and reversed every other round, plus a second lean bound child per round as a control. The goal",
    "is read from each round's Rein p99 ÷ the same round's lean bound p99 (the median over the rounds): a burst's",
    "p99 is its 10th-latest request, set by the machine's state during that one burst, and pooled p99s moved",
    "±30 % between runs, the lean bound's included (bench/PROFILE.md, #22). The control (lean bound ÷ lean",
    "bound) shows what equals read. The journal floor runs side by side too: the lean bound plus the journal",
    "work of one request through the writer and sink of Rein's journal row (opened with the request's header and",
    "one decision at the start, one attempt appended and the record assembled and handed to the sink before the",
    "caller is resumed; the values are those one journaled Rein request made, the id from a counter). The",
    "journaled row's goal is also read against it, for information: its verdict is the lean bound's.",
    `Every other row: ${otherRounds} rounds spread among the paired ones, the row order`,
    "rotated every round, all samples pooled.",
    "Lateness = (time the request returned − time it started) − deadline, from `process.hrtime`. Every request is checked to end as expected (`DeadlineExceeded`, `TimeoutException`,",
    "the lean bound's timeout, the sleep's success). The lean bound is one fork and one `setTimeout` per call,",
    "resumed by the forked fiber's observer after the interruption: the floor for a bound that waits for the",
    "call's teardown (as Rein does). The stubborn provider runs",
    `\`Effect.uninterruptible(Effect.sleep(${STUBBORN_MILLIS} ms))\`; its row is due at deadline + grace when its teardown went`,
    "unconfirmed, at the deadline when its attempt never started; the child waits for every call of its untimed run",
    "to end before the timed one. Rein's services are built once per child and carried by the runtime the requests",
    "run on (as a program that provides `Rein.layer` at its top has them), not provided per request.",
    `Measured at ${load} (1-minute load average).`
  ].join("\n")

const run = async (options: RunOptions): Promise<Section> => {
  const pairedRounds = options.quick ? 3 : PAIRED_ROUNDS
  const otherRounds = options.quick ? 1 : OTHER_ROUNDS
  const rows = await allRows()
  const paired: Paired = {
    lean: rows.find((x) => x.shape === "burst" && x.name.startsWith("floor: lean bound"))!,
    floor: rows.find((x) => x.name === JOURNAL_FLOOR)!,
    rein: rows.filter((x) => x.shape === "burst" && x.kind === "rein"),
    p99s: new Map(),
    control: []
  }
  const load0 = loadNow()
  measureAll(rows, paired, pairedRounds, otherRounds, options.log)
  const load = loadRange(load0, loadNow())
  const sleep = rows.find((x) => x.shape === "spread" && x.name.startsWith("floor: forked Effect.sleep"))!
  const goals = rows.filter((row) => row.kind === "rein").map((row) =>
    row.shape === "burst" ? burstGoal(row, paired, load) : spreadGoal(row, sleep, load)
  )
  return {
    markdown: `${notes(pairedRounds, otherRounds, load)}\n\n${rowsTable(rows)}\n\n${pairedTable(paired)}`,
    goals
  }
}

export const deadline: Benchmark = {
  id: 4,
  title: "Deadline precision",
  run
}
