import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, expect, it } from "@effect/vitest"
import { Budget, Fake, Journal, Rein } from "@rein/core"
import type { Failure, Outcome, Planner, Provider } from "@rein/core"
import {
  Cause,
  Context,
  Effect,
  Either,
  Exit,
  FastCheck as fc,
  Fiber,
  Layer,
  Option,
  Random,
  RuntimeFlags,
  RuntimeFlagsPatch,
  Stream,
  Supervisor,
  TestClock
} from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bundle } from "../../../test/support/processes.js"
import { catalog, contract, defaultCatalog, endpoint, failureStep, layer } from "./fixtures.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const request = { prompt: "a prompt that must never be journaled", inputTokens: 100, maxOutputTokens: 100 }

const kinds: ReadonlyArray<Failure.FailureKind> = [
  "timeout",
  "transport",
  "rate_limited",
  "overloaded",
  "server_error",
  "malformed_response",
  "context_length",
  "authentication",
  "unknown"
]

const step: fc.Arbitrary<Fake.Step> = fc.oneof(
  fc.integer({ min: 0, max: 2_000 }).map((latency) => Fake.succeed({ latency })),
  failureStep(kinds, 2_000),
  fc.constant(Fake.hang)
)

const scenario = fc.record({
  a: fc.array(step, { minLength: 1, maxLength: 4 }),
  b: fc.array(step, { minLength: 1, maxLength: 4 }),
  c: fc.array(step, { minLength: 1, maxLength: 4 }),
  deadline: fc.integer({ min: 200, max: 15_000 }),
  cost: fc.option(fc.double({ min: 0, max: 0.002, noNaN: true }), { nil: undefined }),
  calls: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
  consecutiveFailures: fc.integer({ min: 1, max: 3 }),
  seed: fc.integer()
})
type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never

const cat = catalog(
  endpoint("a", { scope: "x" }),
  endpoint("b", { scope: "y", inPrice: 5e-6 }),
  endpoint("c", { scope: "z", contextWindow: 16_000 })
)

/** Runs a scenario (several requests, so breaker state carries over) and returns the journal records. */
const record = (s: Scenario) =>
  Effect.gen(function*() {
    const fake = Fake.make({ a: s.a, b: s.b, c: s.c })
    const c = contract({
      deadline: s.deadline,
      attemptTimeout: Math.max(50, Math.floor(s.deadline / 3)),
      candidates: ["a", "b", "c"],
      budget: {
        ...(s.cost !== undefined ? { cost: s.cost } : {}),
        ...(s.calls !== undefined ? { calls: s.calls } : {})
      },
      retry: { perEndpoint: 2, base: 100, factor: 2, max: 1_000, jitter: 0.5 }
    })
    const layer = Layer.mergeAll(
      Rein.layer({
        catalog: cat,
        providers: { fake: fake.provider },
        health: { consecutiveFailures: s.consecutiveFailures, cooldown: 500 }
      }),
      Journal.layerMemory
    )
    return yield* Effect.gen(function*() {
      for (let i = 0; i < 3; i++) {
        const fiber = yield* Effect.fork(Effect.either(Rein.execute({ ...request, id: `r${i}` }, c)))
        yield* TestClock.adjust(s.deadline + 1_000)
        yield* Fiber.join(fiber)
      }
      return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
    }).pipe(Effect.provide(layer), Effect.withRandom(Random.make(s.seed)))
  })

/** Changes one input of one snapshot. */
const mutate = (snap: Planner.Snapshot, which: number): Planner.Snapshot => {
  switch (which % 6) {
    case 0:
      return { ...snap, remainingMillis: snap.remainingMillis / 3 }
    case 1:
      return { ...snap, budget: { ...snap.budget, cost: 0 } }
    case 2:
      return { ...snap, budget: { ...snap.budget, calls: 0 } }
    case 3:
      return { ...snap, jitter: snap.jitter === null ? 0.9 : 1 - snap.jitter }
    case 4:
      return { ...snap, health: { ...snap.health, a: { state: "open", probesFree: 0, opensInMillis: 60_000 } } }
    default:
      return { ...snap, committed: !snap.committed }
  }
}

describe("Journal", () => {
  it.effect.prop("record → replay always reproduces every decision", [scenario], ([s]) =>
    Effect.gen(function*() {
      const records = yield* record(s)
      expect(records.length).toBe(3)
      for (const r of records) {
        // Through canonical JSON and back, as a file would carry it.
        const decoded = Journal.decodeLine(Journal.encode(r))
        expect(Either.isRight(decoded)).toBe(true)
        if (Either.isRight(decoded)) expect(Journal.replay(decoded.right)).toEqual(Either.right(r.decisions.length))
        expect(Journal.encode(r)).not.toContain("never be journaled")
      }
    }), { fastCheck: { numRuns: 60 } })

  it.effect.prop(
    "changing one recorded input changes the replay at that decision, or proves it did not matter",
    [scenario, fc.nat(), fc.nat()],
    ([s, pickDecision, which]) =>
      Effect.gen(function*() {
        const records = yield* record(s)
        const r = records[pickDecision % records.length]!
        if (r.decisions.length === 0) return
        const i = pickDecision % r.decisions.length
        const changed = {
          ...r,
          decisions: r.decisions.map((d, j) => (j === i ? { ...d, snapshot: mutate(d.snapshot, which) } : d))
        }
        const result = Journal.replay(changed)
        if (Either.isLeft(result)) expect(result.left.decision).toBe(i + 1)
        else {
          // The replay proves the input did not matter to that decision.
          const entry = changed.decisions[i]!
          expect(JSON.stringify(r.decisions[i]!.decision)).toBe(JSON.stringify(entry.decision))
        }
      }),
    { fastCheck: { numRuns: 60 } }
  )

  it("a record of an unknown future version is refused with a clear error", () => {
    const result = Journal.decodeLine(JSON.stringify({ version: 99, requestId: "x" }), 3)
    expect(Either.isLeft(result) && result.left).toMatchObject({ reason: "version", line: 3 })
    expect(Either.isLeft(result) && result.left.message).toContain("journal version 99 is newer")
    const bad = Journal.decodeLine("{not json", 1)
    expect(Either.isLeft(bad) && bad.left.reason).toBe("json")
  })

  it.effect("a record written before attempt records had a call number still decodes and replays", () =>
    Effect.gen(function*() {
      const overloaded = Fake.fail("overloaded", { code: "503", latency: 10 })
      const records = yield* record({
        a: [overloaded, overloaded],
        b: [Fake.succeed({ latency: 10 })],
        c: [Fake.succeed({ latency: 10 })],
        deadline: 10_000,
        cost: undefined,
        calls: undefined,
        consecutiveFailures: 3,
        seed: 1
      })
      const r = records.find((x) => x.attempts.length > 1)!
      // A 0.1.0 line: the same record without `call` in its attempts (its `attempt` numbered every call).
      const json = JSON.parse(Journal.encode(r)) as { attempts: Array<Record<string, unknown>> }
      for (const a of json.attempts) delete a.call
      const decoded = Journal.decodeLine(JSON.stringify(json))
      expect(Either.isRight(decoded)).toBe(true)
      if (Either.isRight(decoded)) {
        expect(decoded.right.attempts.map((a) => a.call)).toEqual(decoded.right.attempts.map((a) => a.attempt))
        expect(Journal.replay(decoded.right)).toEqual(Either.right(r.decisions.length))
      }
    }))

  it.effect("explain on a fallback after a 429 names the Retry-After, the budget left and the skipped candidate", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("rate_limited", { retryAfter: "30 seconds" })], b: [Fake.succeed()] })
      const cat2 = catalog(endpoint("a"), endpoint("b"), endpoint("c", { inPrice: 1, outPrice: 1 }))
      const c = contract({ deadline: "10 seconds", candidates: ["a", "c", "b"], budget: { cost: 0.01 } })
      const records = yield* Rein.execute(request, c).pipe(
        Effect.zipRight(Effect.flatMap(Journal.MemoryJournal, (j) => j.records)),
        Effect.provide(
          Layer.mergeAll(Rein.layer({ catalog: cat2, providers: { fake: fake.provider } }), Journal.layerMemory)
        )
      )
      const { json, text } = Journal.explain(records[0]!)
      expect(text).toContain("Retry-After 30000 ms")
      expect(text).toContain("budget cost 0.01 left")
      expect(text).toMatch(/✗ c \(fallback\): budget: worst-case cost 200 > 0\.0\d+ left/)
      expect(text).toContain("attempt 2 on b (fallback)")
      expect(text).toContain("outcome: success on b")
      expect(json.steps[1]!.rejected.map((r) => r.endpoint)).toEqual(expect.arrayContaining(["a", "c"]))
      expect(text).not.toContain("never be journaled")
    }))

  it.effect("a request refused before it starts is journaled with its refusal and reason, replays and explains", () =>
    Effect.gen(function*() {
      const fake = Fake.make({})
      const nested = Fake.make({}, { internalMaxAttempts: 3 })
      const cases: ReadonlyArray<{
        readonly refusal: Outcome.Refused["refusal"]
        readonly run: Effect.Effect<unknown, Outcome.Terminal, Rein.Rein>
        readonly fake: Fake.Fake
      }> = [
        { refusal: "effectful_mode", run: Rein.execute(request, contract({ mode: "effectful" })), fake },
        {
          refusal: "invalid_request",
          run: Rein.execute({ ...request, id: "bad-input", inputTokens: -1 }, contract()),
          fake
        },
        {
          refusal: "no_input_bound",
          run: Rein.execute({ prompt: request.prompt }, contract({ budget: { cost: 1 } })),
          fake
        },
        { refusal: "nested_retries", run: Rein.execute(request, contract()), fake: nested },
        {
          refusal: "effectful_mode",
          run: Stream.runDrain(Rein.executeStream(request, contract({ mode: "effectful" }))),
          fake
        }
      ]
      for (const c of cases) {
        const [error, records] = yield* Effect.flip(c.run).pipe(
          Effect.zip(Effect.flatMap(Journal.MemoryJournal, (j) => j.records)),
          Effect.provide(
            Layer.merge(
              Rein.layer({ catalog: defaultCatalog, providers: { fake: c.fake.provider } }),
              Journal.layerMemory
            )
          )
        )
        expect(error).toMatchObject({ _tag: "Refused", refusal: c.refusal })
        expect(records).toHaveLength(1)
        const record = records[0]!
        expect(record.outcome).toEqual({ _tag: "Refused", reason: error.reason, detail: c.refusal, cause: null })
        expect(record.decisions).toEqual([])
        expect(record.attempts).toEqual([])
        expect(record.spec.candidates.map((x) => x.id)).toEqual(["a", "b"])
        expect(Journal.replay(record)).toEqual(Either.right(0))
        expect(Journal.explain(record).text).toContain(`outcome: Refused (${c.refusal}): ${error.reason}`)
        // The record survives its own encoding.
        expect(Journal.decodeLine(Journal.encode(record))).toEqual(Either.right(record))
        expect(Journal.encode(record)).not.toContain("never be journaled")
      }
    }))

  it.effect("a defect that is not an interruption is journaled as a Defect (not Interrupted), reads back and explains", () =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.succeed()] })
      // A shared budget with a bug: its reservation dies.
      const broken: Budget.Service = {
        limits: { cost: null, tokens: null, calls: null },
        left: Effect.succeed({ cost: null, tokens: null, calls: null }),
        reserve: () => Effect.die("a bug in a budget"),
        settle: () => Effect.void,
        release: () => Effect.void
      }
      const [exit, records] = yield* Effect.zip(
        Effect.exit(Rein.execute(request, contract({ candidates: ["a"] }))),
        Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
      ).pipe(
        Effect.provide(Layer.merge(layer(fake), Journal.layerMemory)),
        Effect.provideService(Budget.SharedBudget, broken)
      )
      expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
      expect(records.map((r) => r.outcome._tag)).toEqual(["Defect"])
      const back = Either.getOrThrow(Journal.decodeLine(Journal.encode(records[0]!)))
      expect(back.outcome).toEqual({ _tag: "Defect" })
      expect(Journal.explain(back).text).toContain("outcome: a defect")
    }))

  it.live("a journal written by one process is replayed in another", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-journal-"))
      const file = path.join(dir, "rec.jsonl")
      const script = yield* bundle(here, "journal-child")
      const stdout = yield* Effect.async<string, Error>((resume) => {
        execFile(process.execPath, [script, file], (error, out) =>
          resume(error ? Effect.fail(error) : Effect.succeed(out)))
      })
      expect(stdout).toContain("DONE b")
      const records = yield* Journal.readJsonl(file).pipe(Effect.provide(NodeFileSystem.layer))
      expect(records).toHaveLength(1)
      expect(records[0]!.requestId).toBe("child-1")
      expect(Journal.replay(records[0]!)).toEqual(Either.right(2))
      expect(fs.readFileSync(file, "utf8")).not.toContain("secret prompt")
      // A torn final line (a crash mid-write) is ignored by readers.
      fs.appendFileSync(file, "{\"version\":1,\"requ")
      expect(yield* Journal.readJsonl(file).pipe(Effect.provide(NodeFileSystem.layer))).toHaveLength(1)
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.live("a journal file is created 0600 (or with the mode asked for); an existing one keeps its mode", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-journal-"))
      const open = (file: string, options?: { readonly mode: number }) =>
        Effect.scoped(Layer.build(Journal.layerJsonl(file, options).pipe(Layer.provide(NodeFileSystem.layer))))
      const fresh = path.join(dir, "fresh.jsonl")
      yield* open(fresh)
      expect(fs.statSync(fresh).mode & 0o777).toBe(0o600)
      const asked = path.join(dir, "asked.jsonl")
      yield* open(asked, { mode: 0o640 })
      expect(fs.statSync(asked).mode & 0o777).toBe(0o640 & ~process.umask())
      yield* open(fresh, { mode: 0o666 })
      expect(fs.statSync(fresh).mode & 0o777).toBe(0o600)
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})

describe("Journal: the record's two copies of the contract", () => {
  /** One request that retries a 503 and falls back, recorded; `c` is its contract. */
  const recorded = (
    c: ReturnType<typeof contract>,
    run: (c: ReturnType<typeof contract>) => Effect.Effect<unknown, unknown, Rein.Rein> = (c) =>
      Rein.execute(request, c)
  ) =>
    Effect.gen(function*() {
      const fake = Fake.make({ a: [Fake.fail("overloaded", { latency: 5 })], b: [Fake.succeed({ latency: 5 })] })
      const fiber = yield* Effect.fork(
        run(c).pipe(
          Effect.zipRight(Effect.flatMap(Journal.MemoryJournal, (j) => j.records)),
          Effect.provide(Layer.mergeAll(
            Rein.layer({ catalog: catalog(endpoint("a"), endpoint("b")), providers: { fake: fake.provider } }),
            Journal.layerMemory
          ))
        )
      )
      yield* TestClock.adjust("1 minute")
      const line = JSON.parse(Journal.encode((yield* Fiber.join(fiber))[0]!))
      expect(Journal.replay(Either.getOrThrow(Journal.decodeLine(JSON.stringify(line)))).pipe(Either.isRight)).toBe(
        true
      )
      return line as { contract: Record<string, unknown> }
    })
  const replayEdited = (line: { contract: Record<string, unknown> }, edit: (c: Record<string, unknown>) => void) => {
    const copy = JSON.parse(JSON.stringify(line)) as { contract: Record<string, unknown> }
    edit(copy.contract)
    const decoded = Journal.decodeLine(JSON.stringify(copy))
    expect(Either.isRight(decoded)).toBe(true)
    return Journal.replay(Either.getOrThrow(decoded))
  }

  it.effect("an edited contract.retry fails replay naming the field, before any decision", () =>
    Effect.gen(function*() {
      const line = yield* recorded(contract({ budget: { cost: 1, calls: 5 } }))
      const edits: ReadonlyArray<readonly [string, (c: Record<string, unknown>) => void]> = [
        ["contract.retry.max", (c) => void (c.retry = { ...(c.retry as object), max: 9_000 })],
        ["contract.retry.perEndpoint", (c) => void (c.retry = { ...(c.retry as object), perEndpoint: 5 })],
        ["contract.retry.base", (c) => void (c.retry = { ...(c.retry as object), base: "1 second" })],
        ["contract.candidates", (c) => void (c.candidates = ["b", "a"])],
        ["contract.failures", (c) => void (c.failures = { noFallback: ["overloaded"] })]
      ]
      for (const [field, edit] of edits) {
        const result = replayEdited(line, edit)
        expect(Either.isLeft(result) && result.left).toMatchObject({ decision: 0 })
        expect(Either.isLeft(result) && result.left.field).toMatch(new RegExp(`^${field.replace(/\./g, "\\.")}\\b`))
      }
    }))

  it.effect("an edited contract.deadline fails replay naming the field, with or without an attempt timeout", () =>
    Effect.gen(function*() {
      // Without an attempt timeout, the deadline is the spec's attempt timeout.
      const bare = yield* recorded(contract({ deadline: "30 seconds" }))
      const longer = replayEdited(bare, (c) => void (c.deadline = "60 seconds"))
      expect(Either.isLeft(longer) && longer.left).toMatchObject({
        decision: 0,
        field: "contract.deadline (spec.attemptTimeoutMillis)"
      })
      // With one, the snapshots say how much time the request had: more than the edited deadline.
      const timed = yield* recorded(contract({ deadline: "30 seconds", attemptTimeout: "5 seconds" }))
      const shorter = replayEdited(timed, (c) => void (c.deadline = "10 seconds"))
      expect(Either.isLeft(shorter) && shorter.left).toMatchObject({
        decision: 0,
        field: "contract.deadline (spec.contract.deadlineMillis)"
      })
    }))

  it.effect("a longer contract.deadline under an attempt timeout fails replay naming the field", () =>
    Effect.gen(function*() {
      const timed = yield* recorded(contract({ deadline: "30 seconds", attemptTimeout: "5 seconds" }))
      const longer = replayEdited(timed, (c) => void (c.deadline = "60 seconds"))
      expect(Either.isLeft(longer) && longer.left).toMatchObject({
        decision: 0,
        field: "contract.deadline (spec.contract.deadlineMillis)",
        recorded: "30000",
        replayed: "60000"
      })
    }))

  it.effect("an edited contract.teardownGrace fails replay naming the field", () =>
    Effect.gen(function*() {
      const line = yield* recorded(contract({ teardownGrace: "250 millis" }))
      const edited = replayEdited(line, (c) => void (c.teardownGrace = "5 seconds"))
      expect(Either.isLeft(edited) && edited.left).toMatchObject({
        decision: 0,
        field: "contract.teardownGrace (spec.contract.teardownGraceMillis)"
      })
    }))

  it.effect("an edited contract.truncation or a longer contract.retry.maxRetryAfter fails replay naming the field", () =>
    Effect.gen(function*() {
      const line = yield* recorded(contract({ retry: { maxRetryAfter: "30 seconds" } }))
      const truncation = replayEdited(line, (c) => void (c.truncation = "accept"))
      expect(Either.isLeft(truncation) && truncation.left).toMatchObject({
        decision: 0,
        field: "contract.truncation (spec.contract.truncation)",
        recorded: JSON.stringify("fail"),
        replayed: JSON.stringify("accept")
      })
      const longer = replayEdited(line, (c) => void (c.retry = { ...(c.retry as object), maxRetryAfter: "20 minutes" }))
      expect(Either.isLeft(longer) && longer.left).toMatchObject({
        decision: 0,
        field: "contract.retry.maxRetryAfter (spec.contract.maxRetryAfterMillis)",
        recorded: "30000",
        replayed: "1200000"
      })
    }))

  it.effect("an edited contract.requires fails replay naming the field, even when the request uses the same", () =>
    Effect.gen(function*() {
      const uses: ReadonlyArray<
        readonly [string, (c: ReturnType<typeof contract>) => Effect.Effect<unknown, unknown, Rein.Rein>]
      > = [
        ["tools", (c) => Rein.execute({ ...request, tools: [{ name: "lookup" }] }, c)],
        ["structuredOutput", (c) => Rein.execute({ ...request, responseFormat: "json" }, c)],
        ["streaming", (c) => Stream.runDrain(Rein.executeStream(request, c))]
      ]
      for (const [field, run] of uses) {
        const line = yield* recorded(contract(), run)
        const edited = replayEdited(line, (c) => void (c.requires = { [field]: true }))
        expect(Either.isLeft(edited) && edited.left).toMatchObject({
          decision: 0,
          field: `contract.requires.${field} (spec.contract.requires.${field})`
        })
      }
    }))

  it("a record of version 2 (no copy of the unplanned contract fields) still replays", () => {
    const line = JSON.parse(fs.readFileSync(path.join(here, "fixtures", "journal-v2.json"), "utf8")) as {
      spec: Record<string, unknown>
    }
    expect(line.spec.contract).toBeUndefined()
    const decoded = Journal.decodeLine(JSON.stringify(line))
    expect(Either.isRight(decoded)).toBe(true)
    expect(Journal.replay(Either.getOrThrow(decoded))).toEqual(Either.right(4))
  })

  it.effect("an edited contract.budget that the snapshots exceed fails replay naming the field", () =>
    Effect.gen(function*() {
      const line = yield* recorded(contract({ budget: { cost: 1, calls: 5 } }))
      const result = replayEdited(line, (c) => void (c.budget = { cost: 1, calls: 2 }))
      expect(Either.isLeft(result) && result.left).toMatchObject({ decision: 1, field: "contract.budget.calls" })
    }))
})

describe("Journal: what a request pays for its record (#22)", () => {
  /** Runs three requests (one without an id) under `service` and returns the headers it was opened with. */
  const opened = (service: (headers: Array<Journal.Header>) => Journal.Service) =>
    Effect.gen(function*() {
      const headers: Array<Journal.Header> = []
      const fake = Fake.make({ a: [Fake.succeed(), Fake.succeed(), Fake.succeed()] })
      const c = contract()
      yield* Effect.forEach(
        [{ ...request, id: "r1" }, { ...request, id: "r2" }, request],
        (r) => Rein.execute(r, c),
        { discard: true }
      ).pipe(
        Effect.provide(Layer.merge(layer(fake), Layer.succeed(Journal.Journal, service(headers)))),
        Effect.withRandom(Random.make(7))
      )
      return headers
    })

  it.effect("Journal.make's writer opens in the step that resolves the request: its begin effect is not run", () =>
    Effect.gen(function*() {
      const records: Array<Journal.JournalRecord> = []
      const made = Journal.make((record) => Effect.sync(() => void records.push(record)))
      const headers = yield* opened((headers) => ({
        // A begin effect that would fail the test: the executor opens through `unsafeBegin`.
        begin: () => Effect.dieMessage("begin run: the writer was not opened synchronously"),
        unsafeBegin: (header) => {
          headers.push(header)
          return made.unsafeBegin!(header)
        }
      }))
      expect(headers.map((h) => h.requestId).slice(0, 2)).toEqual(["r1", "r2"])
      expect(headers[2]!.requestId).toMatch(/^req-[0-9a-z]+$/)
      expect(records.map((r) => r.outcome._tag)).toEqual(["Completion", "Completion", "Completion"])
      for (const r of records) expect(Journal.replay(r)).toEqual(Either.right(r.decisions.length))
    }))

  it.effect("a journal with only begin is opened through it, with the same record", () =>
    Effect.gen(function*() {
      const records: Array<Journal.JournalRecord> = []
      const made = Journal.make((record) => Effect.sync(() => void records.push(record)))
      const headers = yield* opened((headers) => ({
        begin: (header) => Effect.flatMap(Effect.sync(() => headers.push(header)), () => made.begin(header))
      }))
      expect(headers).toHaveLength(3)
      expect(records.map((r) => r.requestId).slice(0, 2)).toEqual(["r1", "r2"])
      for (const r of records) expect(Journal.replay(r)).toEqual(Either.right(r.decisions.length))
    }))

  it.effect("the request id drawn for a request without one is the same draw with either opening", () =>
    Effect.gen(function*() {
      const viaBegin = yield* opened((headers) => ({
        begin: (header) =>
          Effect.sync(() => (headers.push(header), Journal.make(() => Effect.void).unsafeBegin!(header)))
      }))
      const viaUnsafe = yield* opened((headers) => ({
        begin: () => Effect.dieMessage("not used"),
        unsafeBegin: (header) => (headers.push(header), Journal.make(() => Effect.void).unsafeBegin!(header))
      }))
      expect(viaUnsafe.map((h) => h.requestId)).toEqual(viaBegin.map((h) => h.requestId))
    }))

  it.effect("requests of one contract and shape share the consulted entries and their encoding, resolved once", () =>
    Effect.gen(function*() {
      const records: Array<Journal.JournalRecord> = []
      const made = Journal.make((record) => Effect.sync(() => void records.push(record)))
      const headers = yield* opened((headers) => ({
        begin: (header) => (headers.push(header), made.begin(header))
      }))
      expect(headers[0]!.endpoints.map((e) => e.id)).toEqual(["a", "b"])
      expect(headers[1]!.endpoints).toBe(headers[0]!.endpoints)
      expect(headers[2]!.endpoints).toBe(headers[0]!.endpoints)
      expect(records[1]!.endpoints).toBe(records[0]!.endpoints)
      // The shared encoding is the one a record encoded on its own has.
      expect(Journal.decodeLine(Journal.encode(records[1]!))).toEqual(Either.right(records[1]!))
    }))
})

describe("Journal: requests that end at their deadline", () => {
  const never: Provider.Provider = { internalMaxAttempts: 1, simulated: true, call: () => Effect.never }
  const cat = catalog(endpoint("a"))
  const expiring = contract({ deadline: "1 second", candidates: ["a"], retry: { perEndpoint: 0 } })

  it.effect.prop(
    "an id is drawn from the fiber's Random only for a request without one, and every expiry is recorded whole",
    { seed: fc.integer() },
    ({ seed }) =>
      Effect.gen(function*() {
        // The draws a request without an id makes: one each, in the order the requests start.
        const draws = yield* Effect.all([Random.nextIntBetween(0, 0x7fffffff), Random.nextIntBetween(0, 0x7fffffff)])
          .pipe(Effect.withRandom(Random.make(seed)))
        const layers = Layer.merge(
          Rein.layer({ catalog: cat, providers: { fake: never }, health: false }),
          Journal.layerMemory
        )
        const records = yield* Effect.gen(function*() {
          for (const id of [undefined, "given", undefined]) {
            const run = yield* Effect.fork(Effect.either(Rein.execute({ ...request, id }, expiring)))
            yield* TestClock.adjust("1 second")
            const result = yield* Fiber.join(run)
            expect(Either.getLeft(result).pipe(Option.getOrThrow)).toMatchObject({
              _tag: "DeadlineExceeded",
              phase: "attempt",
              teardownUnconfirmed: false
            })
          }
          return yield* Effect.flatMap(Journal.MemoryJournal, (j) => j.records)
        }).pipe(Effect.provide(layers), Effect.withRandom(Random.make(seed)))
        expect(records.map((r) => r.requestId)).toEqual([
          `req-${draws[0].toString(36)}`,
          "given",
          `req-${draws[1].toString(36)}`
        ])
        for (const record of records) {
          expect(record.outcome).toEqual({
            _tag: "DeadlineExceeded",
            reason: "the deadline expired during call 1 on a",
            detail: "attempt",
            cause: { kind: "timeout", code: "deadline_expired", endpoint: "a" }
          })
          expect(record.attempts.map((a) => [a.status, a.code, a.teardownUnconfirmed])).toEqual([
            ["deadline", "deadline_expired", false]
          ])
          expect(record.decisions).toHaveLength(1)
          expect(Journal.replay(record)).toEqual(Either.right(1))
          // The line decodes back to the record and encodes to the same bytes.
          const line = Journal.encode(record)
          expect(Journal.encode(Either.getOrThrow(Journal.decodeLine(line)))).toBe(line)
        }
      }),
    { fastCheck: { numRuns: 20 } }
  )
})

/** Counts every run-loop step of the fibers it supervises (the request's and its attempt's). */
class Steps extends Supervisor.AbstractSupervisor<number> {
  count = 0
  override get value() {
    return Effect.sync(() => this.count)
  }
  override onEffect() {
    this.count++
  }
}

describe("Journal: what a journaled request costs its fiber", () => {
  const never: Provider.Provider = { internalMaxAttempts: 1, simulated: true, call: () => Effect.never }
  const cat = catalog(endpoint("a"))
  const expiring = contract({ deadline: "1 second", candidates: ["a"], retry: { perEndpoint: 0 } })
  const rein = Rein.layer({ catalog: cat, providers: { fake: never }, health: false })
  const recorded: Array<Journal.JournalRecord> = []
  /** A sink whose effect is run: the end takes its step. */
  const journal = Layer.succeed(Journal.Journal, Journal.make((r) => Effect.sync(() => void recorded.push(r))))
  /** A sink that keeps the record when it is called and returns `Effect.void`: an `Exit`, nothing left to run. */
  const keeping = Layer.succeed(Journal.Journal, Journal.make((r) => (recorded.push(r), Effect.void)))

  /** The run-loop steps of one request without an id that expires, with the journal given or none; its exit. */
  const run = (
    journaled: Layer.Layer<Journal.Journal> | undefined,
    wrap: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  ) =>
    Effect.gen(function*() {
      const steps = new Steps()
      const fiber = yield* Effect.fork(
        Effect.exit(wrap(Rein.execute(request, expiring))).pipe(
          Effect.supervised(steps),
          Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
          Effect.provide(journaled === undefined ? rein : Layer.merge(rein, journaled)),
          Effect.withRandom(Random.make(3))
        )
      )
      yield* TestClock.adjust("1 second")
      const exit = yield* Fiber.join(fiber)
      return { steps: steps.count, exit }
    })

  /** The steps a journal with `sink` adds to that request; its exit is the unjournaled one's, its record whole
   * (`req-` + the seeded draw, `DeadlineExceeded`, one decision, one attempt). */
  const added = (sink: Layer.Layer<Journal.Journal>) =>
    Effect.gen(function*() {
      recorded.length = 0
      const plain = yield* run(undefined, (e) => e)
      const journaled = yield* run(sink, (e) => e)
      const draw = yield* Random.nextIntBetween(0, 0x7fffffff).pipe(Effect.withRandom(Random.make(3)))
      // The same exit, but for the journal's id on the journaled request's outcome.
      expect(Exit.mapError(journaled.exit, (e) => e.requestId)).toEqual(Exit.fail(`req-${draw.toString(36)}`))
      expect(Exit.mapError(plain.exit, (e) => e.requestId)).toEqual(Exit.fail(undefined))
      const withoutId = (exit: typeof plain.exit) => Exit.mapError(exit, (e) => ({ ...e, requestId: undefined }))
      expect(withoutId(journaled.exit)).toEqual(withoutId(plain.exit))
      expect(recorded.map((r) => [r.requestId, r.outcome._tag, r.decisions.length, r.attempts.length])).toEqual([
        [`req-${draw.toString(36)}`, "DeadlineExceeded", 1, 1]
      ])
      return journaled.steps - plain.steps
    })

  it.effect("the journal adds at most 10 steps to a request: its id's draw, its entry's region and its end", () =>
    Effect.gen(function*() {
      // 17 on the code before h/jburst: the id drawn through `Random.nextIntBetween`, mapped, then `flatMap`ped
      // into an environment copied with the writer and `flatMap`ped into the request (7), and `Effect.onExit` (4
      // on entry, 6 at the end); 11 before h/jend (the draw and its continuation, 2; a region entered in one step
      // and the handler's frame, 3; the end's 6: an `Effect.suspend` around the record's assembly among them).
      // Now the record is assembled in the handler's step (`unsafeEnd`): the end is 5, the sink's effect run.
      expect(yield* added(journal)).toBeLessThanOrEqual(10)
    }))

  it.effect("a sink that returns an Exit costs no step of its own: the journal adds at most 8", () =>
    Effect.gen(function*() {
      // 11 before h/jend. Now the draw and its continuation (2), the region and the handler's frame (3), and
      // at the end the failure through the region's two reverts and out of the handler (3): no effect runs.
      expect(yield* added(keeping)).toBeLessThanOrEqual(8)
    }))

  it.effect("the in-memory journal closes an entry without an effect step, and a read is a copy", () =>
    Effect.gen(function*() {
      const memory = yield* Layer.build(Journal.layerMemory)
      const journal = Layer.succeed(Journal.Journal, Context.get(memory, Journal.Journal))
      const records = Context.get(memory, Journal.MemoryJournal).records
      // Its sink returns `Effect.void`: the 8 steps of a sink that is an `Exit` (11 before h/jend, with `Ref.update`).
      const plain = yield* run(undefined, (e) => e)
      const journaled = yield* run(journal, (e) => e)
      expect(journaled.steps - plain.steps).toBeLessThanOrEqual(8)
      const read = yield* records
      expect(read.map((r) => r.outcome._tag)).toEqual(["DeadlineExceeded"])
      yield* run(journal, (e) => e)
      expect(read).toHaveLength(1)
      expect(yield* records).toHaveLength(2)
    }).pipe(Effect.scoped))

  it.effect("a request run uninterruptibly is journaled as one run interruptibly is", () =>
    Effect.gen(function*() {
      for (const sink of [journal, keeping]) {
        recorded.length = 0
        const inside = yield* run(sink, Effect.uninterruptible)
        const outside = yield* run(sink, (e) => e)
        expect(inside.exit).toEqual(outside.exit)
        expect(recorded).toHaveLength(2)
        expect(recorded[0]).toEqual(recorded[1])
      }
    }))

  it.effect("an end that fails or throws is a defect after the request's own failure, the record handed over", () =>
    Effect.gen(function*() {
      // The request's own failure, as a journal whose end succeeds leaves it (with the journal's id on it).
      const plain = yield* run(keeping, (e) => e)
      const ends = [
        (r: Journal.JournalRecord) => Effect.suspend(() => (recorded.push(r), Effect.die("sink run"))),
        (r: Journal.JournalRecord) => (recorded.push(r), Effect.die("sink returned")),
        (r: Journal.JournalRecord): Effect.Effect<void> => {
          recorded.push(r)
          throw "sink threw"
        }
      ]
      for (const [i, sink] of ends.entries()) {
        recorded.length = 0
        const { exit } = yield* run(Layer.succeed(Journal.Journal, Journal.make(sink)), (e) => e)
        assert(Exit.isFailure(exit) && Exit.isFailure(plain.exit))
        // `Effect.onExit`'s composition: the request's failure, then the end's defect.
        expect(exit.cause).toEqual(
          Cause.sequential(plain.exit.cause, Cause.die(["sink run", "sink returned", "sink threw"][i]))
        )
        expect(recorded.map((r) => r.outcome._tag)).toEqual(["DeadlineExceeded"])
      }
    }))
})
