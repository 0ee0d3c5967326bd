import { describe, expect, it } from "@effect/vitest"
import { Fake, Gate, Journal, Outcome, Rein } from "@rein/core"
import type { Contract, Provider, Streaming } from "@rein/core"
import { Effect, Either, FastCheck as fc, Fiber, Layer, Random, Schema, Stream, TestClock } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

const request: Provider.CompletionRequest = { prompt: "hello", inputTokens: 100, maxOutputTokens: 100 }
const cat = catalog(endpoint("a"), endpoint("b"))

/** How each outcome is reached: a script for the fake, the contract, the request, and a gate when one decides. */
interface Setup {
  readonly script: Parameters<typeof Fake.make>[0]
  readonly contract: Contract.Contract
  readonly request?: Provider.CompletionRequest
  readonly gate?: Gate.Service
}

const closedGate: Gate.Service = {
  admit: () => Effect.fail({ _tag: "GateClosed" as const, reason: "the batch was cancelled" }),
  settle: () => Effect.void,
  closed: Effect.never
}

const setups = {
  Completion: { script: { a: [Fake.succeed()] }, contract: contract({ candidates: ["a"] }) },
  DeadlineExceeded: {
    script: { a: [Fake.fail("server_error", { latency: "9 seconds" })] },
    contract: contract({
      deadline: "10 seconds",
      candidates: ["a"],
      retry: { perEndpoint: 3, base: "2 seconds", factor: 2, max: "8 seconds", jitter: 0 }
    })
  },
  BudgetExhausted: {
    script: { a: [Fake.fail("overloaded")], b: [Fake.succeed()] },
    contract: contract({ budget: { calls: 1 } })
  },
  PlanExhausted: {
    script: { a: [Fake.fail("overloaded")] },
    contract: contract({ candidates: ["a"], retry: { perEndpoint: 0 } })
  },
  FailedSafe: { script: { a: [Fake.fail("invalid_request")] }, contract: contract({ candidates: ["a"] }) },
  // Refused before the clock starts (an invalid bound), and by the planner (no candidate fits the input).
  Refused: {
    script: {},
    contract: contract({ candidates: ["a"] }),
    request: { ...request, maxOutputTokens: 0 }
  },
  RefusedByPlanner: {
    script: {},
    contract: contract({ candidates: ["a"] }),
    request: { ...request, inputTokens: 100_000 }
  },
  Halted: { script: { a: [Fake.succeed()] }, contract: contract({ candidates: ["a"] }), gate: closedGate }
} satisfies Record<string, Setup>

type Kind = keyof typeof setups
const kinds = Object.keys(setups) as ReadonlyArray<Kind>
const tagOf = (kind: Kind) => kind === "RefusedByPlanner" ? "Refused" : kind

/** Runs one request of `kind` (with the caller's id, if any; journaled or not): its outcome and the journal's records. */
const runKind = (kind: Kind, id: string | undefined, journaled: boolean, streaming = false) =>
  Effect.gen(function*() {
    const setup: Setup = setups[kind]
    const fake = Fake.make(setup.script)
    const rein = Rein.layer({ catalog: cat, providers: { fake: fake.provider }, health: false })
    const withGate = setup.gate === undefined ? rein : Layer.merge(rein, Layer.succeed(Gate.Gate, setup.gate))
    const req = { ...(setup.request ?? request), ...(id === undefined ? {} : { id }) }
    const records: Array<Journal.JournalRecord> = []
    const journal = Layer.succeed(Journal.Journal, Journal.make((r) => Effect.sync(() => void records.push(r))))
    const completed = (events: Iterable<Streaming.Event>) => {
      for (const e of events) if (e._tag === "Completed") return Effect.succeed(e.completion)
      return Effect.dieMessage("a stream without its completion")
    }
    const executed = streaming
      ? Effect.flatMap(Stream.runCollect(Rein.executeStream(req, setup.contract)), completed)
      : Rein.execute(req, setup.contract)
    return yield* Effect.gen(function*() {
      const fiber = yield* Effect.fork(Effect.either(executed))
      yield* TestClock.adjust("1 minute")
      const result = yield* Fiber.join(fiber)
      return { result, records }
    }).pipe(Effect.provide(journaled ? Layer.merge(withGate, journal) : withGate))
  })

const tagOfResult = (result: Either.Either<Outcome.Completion, Outcome.Terminal>) =>
  Either.isRight(result) ? "Completion" : result.left._tag

const idOfResult = (result: Either.Either<Outcome.Completion, Outcome.Terminal>) =>
  Either.isRight(result) ? result.right : result.left

describe("Outcome.requestId: the link from an outcome to its journal record", () => {
  it.effect.prop(
    "journaled, every outcome carries its record's id: the caller's, else the one the journal drew",
    {
      kind: fc.constantFrom(...kinds),
      id: fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined }),
      seed: fc.integer()
    },
    ({ id, kind, seed }) =>
      Effect.gen(function*() {
        const { records, result } = yield* runKind(kind, id, true).pipe(Effect.withRandom(Random.make(seed)))
        expect(tagOfResult(result)).toBe(tagOf(kind))
        expect(records).toHaveLength(1)
        const record = records[0]!
        expect(record.outcome._tag).toBe(tagOf(kind))
        expect(idOfResult(result).requestId).toBe(record.requestId)
        if (id !== undefined) expect(record.requestId).toBe(id)
        else {
          // The journal's own draw: one per request, from the fiber's Random (unchanged by the outcome's id).
          const draw = yield* Random.nextIntBetween(0, 0x7fffffff).pipe(Effect.withRandom(Random.make(seed)))
          expect(record.requestId).toBe(`req-${draw.toString(36)}`)
        }
      }),
    { fastCheck: { numRuns: 60 } }
  )

  it.effect.each(kinds)(
    "%s without a journal: the caller's id, else none (the field is absent)",
    (kind) =>
      Effect.gen(function*() {
        const named = yield* runKind(kind, "caller-7", false)
        expect(tagOfResult(named.result)).toBe(tagOf(kind))
        expect(idOfResult(named.result).requestId).toBe("caller-7")
        const unnamed = yield* runKind(kind, undefined, false)
        expect(tagOfResult(unnamed.result)).toBe(tagOf(kind))
        expect("requestId" in idOfResult(unnamed.result)).toBe(false)
      })
  )

  it.effect.each(["Completion", "PlanExhausted", "FailedSafe", "Refused", "Halted"] as const)(
    "a streamed request's %s carries its record's id too",
    (kind) =>
      Effect.gen(function*() {
        const drawn = yield* runKind(kind, undefined, true, true)
        expect(tagOfResult(drawn.result)).toBe(kind)
        expect(idOfResult(drawn.result).requestId).toBe(drawn.records[0]!.requestId)
        expect(drawn.records[0]!.requestId).toMatch(/^req-/)
        const named = yield* runKind(kind, "s-1", false, true)
        expect(idOfResult(named.result).requestId).toBe("s-1")
      })
  )

  it.effect("a request without an id draws it once, first, as before: one draw more than the same request named", () =>
    Effect.gen(function*() {
      const draws = yield* Effect.all(Array.from({ length: 8 }, () => Random.nextIntBetween(0, 0x7fffffff))).pipe(
        Effect.withRandom(Random.make(42))
      )
      /** The index in `draws` of the fiber's next draw after one request (named or not). */
      const nextAfter = (id: string | undefined) =>
        Effect.gen(function*() {
          const { result } = yield* runKind("PlanExhausted", id, true)
          expect(idOfResult(result).requestId).toBe(id ?? `req-${draws[0]!.toString(36)}`)
          return draws.indexOf(yield* Random.nextIntBetween(0, 0x7fffffff))
        }).pipe(Effect.withRandom(Random.make(42)))
      const named = yield* nextAfter("n-1")
      expect(named).toBeGreaterThanOrEqual(0)
      expect(yield* nextAfter(undefined)).toBe(named + 1)
    }))
})

describe("Outcome.requestId through Schema", () => {
  const encodeTerminal = Schema.encodeSync(Outcome.Terminal)
  const decodeTerminal = Schema.decodeUnknownSync(Outcome.Terminal)
  const encodeCompletion = Schema.encodeSync(Outcome.Completion)
  const decodeCompletion = Schema.decodeUnknownSync(Outcome.Completion)

  it.effect.prop(
    "every outcome round-trips through JSON with its id, and without one when it had none",
    { kind: fc.constantFrom(...kinds), id: fc.option(fc.string(), { nil: undefined }) },
    ({ id, kind }) =>
      Effect.gen(function*() {
        const { result } = yield* runKind(kind, id, false)
        if (Either.isRight(result)) {
          const back = decodeCompletion(JSON.parse(JSON.stringify(encodeCompletion(result.right))))
          expect(back).toStrictEqual(result.right)
          expect(back.requestId).toBe(id)
        } else {
          const back = decodeTerminal(JSON.parse(JSON.stringify(encodeTerminal(result.left))))
          expect(back).toStrictEqual(result.left)
          expect(back.requestId).toBe(id)
          expect("requestId" in back).toBe(id !== undefined)
        }
      }),
    { fastCheck: { numRuns: 40 } }
  )

  it("an outcome serialised before the id existed still decodes, without one", () => {
    const old = {
      _tag: "PlanExhausted",
      reason: "every candidate was tried",
      cause: { kind: "overloaded", code: "overloaded", endpoint: "a" },
      attempts: []
    }
    const decoded = decodeTerminal(old)
    expect(decoded).toBeInstanceOf(Outcome.PlanExhausted)
    expect("requestId" in decoded).toBe(false)
    expect(encodeTerminal(decoded)).toStrictEqual(old)
    const completion = {
      text: "hi",
      endpoint: "a",
      provider: "fake",
      model: "m",
      usage: "unknown",
      cost: "unknown",
      simulated: true,
      attempts: []
    }
    expect("requestId" in decodeCompletion(completion)).toBe(false)
  })

  it("the message an outcome prints is unchanged by its id", () => {
    const fields = { reason: "every candidate was tried", lastFailure: null, attempts: [] }
    expect(new Outcome.PlanExhausted({ ...fields, requestId: "req-1" }).message).toBe(
      new Outcome.PlanExhausted(fields).message
    )
  })
})
