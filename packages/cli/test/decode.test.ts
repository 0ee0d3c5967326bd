import { describe, expect, it } from "@effect/vitest"
import { Hostile } from "@rein/core/testing"
import { Either, FastCheck as fc } from "effect"
import { decodeLine } from "../src/internal/prompts.js"
import { RequestFile } from "../src/internal/request.js"
import { decodeWith } from "../src/internal/schema.js"
import * as Scenario from "../src/Scenario.js"

const failureKinds = ["rate_limited", "overloaded", "server_error", "timeout", "transport"]

const validScenario = {
  description: "an outage of fake/a",
  duration: "1 hour",
  rate: 2,
  arrivals: "steady",
  request: { inputTokens: 500, maxOutputTokens: 200 },
  endpoints: JSON.parse(
    JSON.stringify({
      "fake/a": [
        {
          from: "10 minutes",
          until: "20 minutes",
          behaviour: { kind: "fail", failure: "overloaded", probability: 0.5 }
        },
        { behaviour: { kind: "ok", latency: "200 millis", outputTokens: 100 } }
      ]
    }).replace("\"fake/a\"", "\"__proto__\"")
  ) as unknown,
  default: { kind: "flap", up: "1 minute", down: 30_000, failure: "server_error", latency: 100 },
  prices: [{ at: "30 minutes", endpoint: "fake/a", inputTokens: 1e-6, outputTokens: 2e-6, request: 0 }],
  health: {
    consecutiveFailures: 3,
    cooldown: "5 seconds",
    maxCooldown: 60_000,
    probes: 1,
    capacity: 10,
    depositRatio: 0.1
  }
}

const phase = (i: number, rest: Hostile.Path) => ["endpoints", "__proto__", i, ...rest]

const scenarioFields: ReadonlyArray<Hostile.Field> = [
  { path: ["description"], accepts: Hostile.accepts.string },
  { path: ["duration"], accepts: Hostile.accepts.duration },
  { path: ["rate"], accepts: Hostile.accepts.positiveNumber },
  { path: ["arrivals"], accepts: Hostile.accepts.oneOf("poisson", "steady") },
  { path: ["request"], accepts: Hostile.accepts.emptyObject },
  { path: ["request", "inputTokens"], accepts: Hostile.accepts.positiveInt },
  { path: ["request", "maxOutputTokens"], accepts: Hostile.accepts.positiveInt },
  { path: ["endpoints"], accepts: Hostile.accepts.recordOf(Hostile.accepts.arrayOf(() => false)) },
  { path: ["endpoints", "__proto__"], accepts: Hostile.accepts.arrayOf(() => false) },
  { path: phase(0, []), accepts: () => false },
  { path: phase(0, ["from"]), accepts: Hostile.accepts.offset },
  { path: phase(0, ["until"]), accepts: Hostile.accepts.offset },
  { path: phase(0, ["behaviour", "failure"]), accepts: Hostile.accepts.oneOf(...failureKinds) },
  { path: phase(0, ["behaviour", "probability"]), accepts: Hostile.accepts.fraction },
  { path: phase(1, ["behaviour", "latency"]), accepts: Hostile.accepts.offset },
  { path: phase(1, ["behaviour", "outputTokens"]), accepts: Hostile.accepts.nonNegativeInt },
  { path: ["default", "up"], accepts: Hostile.accepts.duration },
  { path: ["default", "down"], accepts: Hostile.accepts.duration },
  { path: ["default", "latency"], accepts: Hostile.accepts.offset },
  { path: ["prices", 0, "at"], accepts: Hostile.accepts.offset },
  { path: ["prices", 0, "endpoint"], accepts: Hostile.accepts.string },
  { path: ["prices", 0, "inputTokens"], accepts: Hostile.accepts.nonNegativeNumber },
  { path: ["prices", 0, "request"], accepts: Hostile.accepts.nonNegativeNumber },
  { path: ["health"], accepts: Hostile.accepts.emptyObject },
  { path: ["health", "consecutiveFailures"], accepts: Hostile.accepts.positiveInt },
  { path: ["health", "cooldown"], accepts: Hostile.accepts.duration },
  { path: ["health", "maxCooldown"], accepts: Hostile.accepts.duration },
  { path: ["health", "probes"], accepts: Hostile.accepts.positiveInt },
  { path: ["health", "capacity"], accepts: Hostile.accepts.nonNegativeNumber },
  { path: ["health", "depositRatio"], accepts: Hostile.accepts.fraction }
]

const validItem = { id: "item-1", prompt: "Summarise …", system: "Be brief", inputTokens: 900, maxOutputTokens: 400 }
const itemFields: ReadonlyArray<Hostile.Field> = [
  { path: ["id"], accepts: Hostile.accepts.nonEmptyTrimmed },
  { path: ["prompt"], accepts: Hostile.accepts.string, required: true },
  { path: ["system"], accepts: Hostile.accepts.string },
  { path: ["inputTokens"], accepts: Hostile.accepts.positiveInt },
  { path: ["maxOutputTokens"], accepts: Hostile.accepts.positiveInt }
]

const expectRejected = (decode: (u: unknown) => Either.Either<unknown, string>, mutation: Hostile.Mutation) => {
  const result = decode(mutation.doc)
  expect(Either.isLeft(result), `${mutation.what} at ${mutation.path} was accepted`).toBe(true)
  const message = Either.isLeft(result) ? result.left : ""
  expect(message).toContain(mutation.path)
  expect(message.length).toBeLessThan(10_000)
}

describe("scenario files at the edge", () => {
  it("an endpoint named \"__proto__\" or \"constructor\" is an endpoint like any other", () => {
    const decoded = Scenario.decode(validScenario)
    expect(Either.isRight(decoded)).toBe(true)
    if (Either.isLeft(decoded)) return
    expect(Scenario.behaviourAt(decoded.right, "__proto__", 15 * 60_000)).toMatchObject({ kind: "fail" })
    // No own entry: the default, not Object.prototype's `constructor`.
    expect(Scenario.behaviourAt(decoded.right, "constructor", 0)).toMatchObject({ kind: "flap" })
  })

  it("durations below the clock's resolution are refused", () => {
    const decoded = Scenario.decode({ health: { cooldown: "0.4 ns" } })
    expect(Either.isLeft(decoded) && decoded.left).toMatch(/^health\.cooldown: Expected a duration of at least 1/)
  })

  it("10,000 hostile documents: zero throws, zero bad values accepted", () => {
    fc.assert(
      fc.property(
        Hostile.mutations(validScenario, scenarioFields, {
          structs: [[], ["request"], ["health"], ["prices", 0], phase(0, [])],
          document: Hostile.accepts.emptyObject
        }),
        (mutation) => expectRejected(Scenario.decode, mutation)
      ),
      { numRuns: 10_000, seed: 15 }
    )
  })
})

describe("prompt lines at the edge", () => {
  it("a line is a prompt string or an item object", () => {
    expect(decodeLine("just a prompt")).toEqual(Either.right("just a prompt"))
    expect(Either.isRight(decodeLine(validItem))).toBe(true)
    expect(decodeLine(Object.create(null))).toEqual(Either.left("prompt: is missing"))
  })

  it("10,000 hostile lines: zero throws, zero bad values accepted", () => {
    fc.assert(
      fc.property(
        Hostile.mutations(validItem, itemFields, { structs: [[]], document: Hostile.accepts.string }),
        (mutation) => expectRejected(decodeLine, mutation)
      ),
      { numRuns: 10_000, seed: 15 }
    )
  })
})

describe("request files at the edge", () => {
  const decodeRequest = decodeWith(RequestFile)
  const validRequest = { prompt: "Summarise …", system: "Be brief", inputTokens: 900, maxOutputTokens: 400 }

  it("10,000 hostile request files: zero throws, zero bad values accepted", () => {
    expect(Either.isRight(decodeRequest(validRequest))).toBe(true)
    fc.assert(
      fc.property(
        Hostile.mutations(
          validRequest,
          itemFields.filter((f) => f.path[0] !== "id").map((f) => ({ ...f, required: false })),
          {
            structs: [[]],
            document: Hostile.accepts.emptyObject
          }
        ),
        (mutation) => expectRejected(decodeRequest, mutation)
      ),
      { numRuns: 10_000, seed: 15 }
    )
  })
})
