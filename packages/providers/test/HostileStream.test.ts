import { LanguageModel } from "@effect/ai"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import type { HttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Contract } from "@rein/core"
import type { Provider } from "@rein/core"
import { ReinLanguageModel } from "@rein/providers"
import * as EffectAiAnthropic from "@rein/providers/EffectAiAnthropic"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { anthropic, FaultServer, openaiResponses } from "@rein/providers/testing"
import { Chunk, Effect, Either, Redacted, Stream } from "effect"
import { attemptContext, catalog as testCatalog, endpoint, request, withHttp, WITHIN } from "./fixtures.js"

// A hostile server on the real wire formats (OpenAI Responses, Anthropic Messages SSE), through
// `ReinLanguageModel.streamText` and the bridges' own `stream`: every case ends typed, in bounded memory,
// with the connection closed.

const MB = 1024 * 1024
/** RSS growth allowed for one case, the server's own copy of the body included (same process). */
const RSS_GROWTH = 160 * MB

const catalog = testCatalog(endpoint("openai/test", "openai", "gpt-test"))

/**
 * The deadline of the cases that bound a hang, not the speed: their one attempt may take all of it (at a load of
 * 20 on 2 cores, 50,000 deltas took longer than a 10 s attempt timeout).
 */
const GENEROUS = "60 seconds"

const underRein = (server: FaultServer.FaultServer, deadline: string, maxResponseBytes?: number) =>
  ReinLanguageModel.layer({
    contract: Contract.make({
      deadline,
      attemptTimeout: deadline === GENEROUS ? GENEROUS : "10 seconds",
      candidates: ["openai/test"],
      retry: { perEndpoint: 0 }
    }),
    catalog,
    models: { "openai/test": OpenAiLanguageModel.model },
    clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl: server.baseUrl }),
    maxResponseBytes
  })

/** `streamText` through Rein, drained: the text, or Rein's terminal outcome; and the RSS it grew by. */
const streamThroughRein = (server: FaultServer.FaultServer, deadline = "10 seconds", maxResponseBytes?: number) =>
  Effect.gen(function*() {
    const before = process.memoryUsage().rss
    let text = 0
    const result = yield* LanguageModel.streamText({ prompt: "hello" }).pipe(
      Stream.runForEach((p) => Effect.sync(() => void (p.type === "text-delta" && (text += p.delta.length)))),
      ReinLanguageModel.withOutcomes,
      Effect.either,
      Effect.provide(underRein(server, deadline, maxResponseBytes))
    )
    return { result, text, rss: process.memoryUsage().rss - before }
  })

/** The outcome's tag and its first attempt's failure kind. */
const outcomeOf = (result: Either.Either<unknown, unknown>) => {
  if (Either.isRight(result)) return ["ok"]
  const left = result.left as {
    readonly _tag: string
    readonly attempts?: ReadonlyArray<{ readonly failure: unknown }>
  }
  return [left._tag, left.attempts?.[0]?.failure ?? null]
}

const closed = (server: FaultServer.FaultServer) =>
  Effect.map(
    server.waitUntil((rs) => rs.length > 0 && rs.every((r) => r.clientClosed || r.finished), WITHIN),
    (rs) => rs.length
  )

const responsesEvents = (deltas: ReadonlyArray<string>) =>
  openaiResponses.dialect.events("gpt-test", { deltas, usage: null, toolCalls: [], finish: "stop" }, false)

describe("a hostile streaming server, through ReinLanguageModel.streamText (OpenAI Responses)", () => {
  it.live(
    "(1) one 50 MB delta fails body_too_large at the default bound, in bounded memory, closed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.hugeBody({ status: 200, bytes: 50 * MB })] })
        const { result, rss, text } = yield* streamThroughRein(server, GENEROUS)
        expect(outcomeOf(result)).toEqual(["PlanExhausted", "malformed_response"])
        expect(text).toBe(0)
        expect(rss).toBeLessThan(RSS_GROWTH)
        expect(yield* closed(server)).toBe(1)
      })).pipe(withHttp),
    120_000
  )

  // 50,000 events in one write: the platform SSE parser fed such reads whole rescans them per line (quadratic:
  // ~25 s of CPU here before `wholeLines`); the deadline is generous, it bounds a hang, not the speed.
  it.live(
    "(2) 50,000 one-byte deltas: complete in bounded memory, or stop at maxResponseBytes",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const events = responsesEvents(Array.from({ length: 50_000 }, () => "x"))
        const body = [...events.head, ...events.deltas, ...events.tail].join("")
        const server = yield* FaultServer.make({ faults: [FaultServer.rawSse(body), FaultServer.rawSse(body)] })
        const whole = yield* streamThroughRein(server, GENEROUS)
        expect(outcomeOf(whole.result)).toEqual(["ok"])
        expect(whole.text).toBe(50_000)
        expect(whole.rss).toBeLessThan(RSS_GROWTH)
        const bounded = yield* streamThroughRein(server, GENEROUS, 10_000)
        // Some deltas were delivered before the bound: Rein fails safe rather than retry.
        expect(outcomeOf(bounded.result)).toEqual(["FailedSafe", "malformed_response"])
        expect(bounded.text).toBeLessThanOrEqual(10_000)
        expect(yield* closed(server)).toBe(2)
      })).pipe(withHttp),
    120_000
  )

  it.live(
    "(2b) 512 KiB of blank lines before the answer cost linear CPU (< 4 s), not the parser's quadratic",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const events = responsesEvents(["hi"])
        const body = "\n".repeat(512 * 1024) + [...events.head, ...events.deltas, ...events.tail].join("")
        const server = yield* FaultServer.make({ faults: [FaultServer.rawSse(body)] })
        const cpu = process.cpuUsage()
        const { result, text } = yield* streamThroughRein(server, GENEROUS)
        const used = process.cpuUsage(cpu)
        expect([outcomeOf(result), text]).toEqual([["ok"], 2])
        expect((used.user + used.system) / 1000).toBeLessThan(4_000)
      })).pipe(withHttp),
    120_000
  )

  // Real time: the server's keep-alives are real socket writes; the deadline is 200 ms.
  it.live("(3) only SSE comments until the deadline: DeadlineExceeded at 200 ms, closed", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [FaultServer.rawSse(...Array.from({ length: 100 }, () => ": keep-alive\n\n"))]
      })
      const { result, rss } = yield* streamThroughRein(server, "200 millis")
      expect(outcomeOf(result)[0]).toBe("DeadlineExceeded")
      expect(rss).toBeLessThan(RSS_GROWTH)
      expect(yield* closed(server)).toBe(1)
    })).pipe(withHttp))

  it.live(
    "(5) a 10 MB event line without a newline fails body_too_large, closed",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({ faults: [FaultServer.rawSse("data: " + "y".repeat(10 * MB))] })
        const { result, rss } = yield* streamThroughRein(server, GENEROUS)
        expect(outcomeOf(result)).toEqual(["PlanExhausted", "malformed_response"])
        expect(rss).toBeLessThan(RSS_GROWTH)
        expect(yield* closed(server)).toBe(1)
      })).pipe(withHttp),
    120_000
  )
})

const ctx = attemptContext(testCatalog(endpoint("a", "compat", "model-a")).byId.get("a")!, 20_000)

/** A whole streamed answer "hi" in a dialect, its usage the placeholder counts 111,111 in and 222,222 out. */
const answerOf = (dialect: typeof anthropic.dialect, model: string): string => {
  const e = dialect.events(
    model,
    { deltas: ["hi"], usage: { inputTokens: 111_111, outputTokens: 222_222 }, toolCalls: [], finish: "stop" },
    true
  )
  return [...e.head, ...e.deltas, ...e.tail].join("")
}

type Bridge = (server: FaultServer.FaultServer) => Effect.Effect<Provider.Provider, unknown, HttpClient.HttpClient>
const bridges: ReadonlyArray<readonly [string, Bridge, (usage: string) => string]> = [
  [
    "OpenAI Responses",
    (server) => EffectAiOpenAi.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-test") }),
    (usage) =>
      answerOf(openaiResponses.dialect, "gpt-test").replace(
        /"input_tokens":111111,"output_tokens":222222,"total_tokens":333333/,
        usage
      )
  ],
  [
    "Anthropic Messages",
    (server) => EffectAiAnthropic.make({ apiUrl: server.baseUrl, apiKey: Redacted.make("sk-test") }),
    (usage) =>
      answerOf(anthropic.dialect, "claude-test")
        .replace(/"input_tokens":111111/g, usage.split(";")[0]!)
        .replace(/"output_tokens":222222/g, usage.split(";")[1]!)
  ]
]

/** Usage fields as each wire format writes them: [Responses triple, Anthropic "input;output"]. */
const hostileUsage: ReadonlyArray<readonly [string, string, string]> = [
  ["missing", `"other":0`, `"other":0;"other_too":0`],
  ["negative", `"input_tokens":-5,"output_tokens":-7,"total_tokens":-12`, `"input_tokens":-5;"output_tokens":-7`],
  [
    "absurd (1e300)",
    `"input_tokens":1e300,"output_tokens":1e300,"total_tokens":1e300`,
    `"input_tokens":1e300;"output_tokens":1e300`
  ],
  [
    "NaN as a string",
    `"input_tokens":"NaN","output_tokens":"NaN","total_tokens":"NaN"`,
    `"input_tokens":"NaN";"output_tokens":"NaN"`
  ]
]

/**
 * What each hostile usage gives on each bridge's stream, as the same answer unstreamed gives it: a usage the
 * vendor's schema takes but that is not a count (negative on Responses) is unknown usage; one its schema
 * rejects is the answer not decoding, `malformed_output` (on Responses, whose client skips the undecodable
 * `response.completed`, it was reported `stream_truncated`).
 */
const expected: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "OpenAI Responses": {
    missing: "malformed_output",
    negative: "unknown usage",
    "absurd (1e300)": "malformed_output",
    "NaN as a string": "malformed_output"
  },
  "Anthropic Messages": {
    missing: "malformed_output",
    negative: "malformed_output",
    "absurd (1e300)": "malformed_output",
    "NaN as a string": "malformed_output"
  }
}

describe("(4) hostile usage on the bridges' own streams: unknown or a typed failure, never charged", () => {
  for (const [name, bridge, body] of bridges) {
    for (const [label, responses, messages] of hostileUsage) {
      it.live(`${name}: ${label} token counts`, () =>
        Effect.scoped(Effect.gen(function*() {
          const server = yield* FaultServer.make({
            faults: [FaultServer.rawSse(body(name === "Anthropic Messages" ? messages : responses))]
          })
          const provider = yield* bridge(server)
          const result = yield* Effect.either(Stream.runCollect(provider.stream!(request, ctx)))
          if (Either.isRight(result)) {
            const last = Chunk.toReadonlyArray(result.right).at(-1)!
            expect([last.done, last.usage]).toEqual([true, "unknown"])
            expect(expected[name]![label]).toBe("unknown usage")
          } else {
            expect([result.left.kind, result.left.code]).toEqual(["malformed_response", expected[name]![label]])
          }
          expect(yield* closed(server)).toBe(1)
        })).pipe(withHttp))
    }
  }
})
