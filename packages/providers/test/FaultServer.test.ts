import { HttpClient, HttpClientRequest } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { FaultServer } from "@rein/providers/testing"
import { Effect } from "effect"
import { withHttp } from "./fixtures.js"

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(
      HttpClientRequest.post(url).pipe(HttpClientRequest.setHeaders(headers), HttpClientRequest.bodyUnsafeJson(body))
    )).pipe(Effect.flatMap((r) => Effect.map(r.text, (text) => ({ status: r.status, headers: r.headers, text }))))

describe("FaultServer", () => {
  it.live("speaks the Anthropic messages shape, streamed and not, with errors in Anthropic's form", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({
        faults: [
          FaultServer.ok({ text: "hi", usage: { inputTokens: 3, outputTokens: 1 } }),
          FaultServer.faults.overloaded
        ]
      })
      const anthropic = { "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" }
      const ok = yield* post(`${server.baseUrl}/messages`, { model: "claude-test", max_tokens: 10 }, anthropic)
      expect(JSON.parse(ok.text)).toMatchObject({
        type: "message",
        content: [{ type: "text", text: "hi" }],
        usage: { input_tokens: 3, output_tokens: 1 }
      })
      const overloaded = yield* post(`${server.baseUrl}/messages`, { model: "claude-test" }, anthropic)
      expect([overloaded.status, JSON.parse(overloaded.text)]).toEqual([529, {
        type: "error",
        error: { type: "overloaded_error", message: "status 529 from the fault server" }
      }])
      const streamed = yield* post(`${server.baseUrl}/messages`, { model: "claude-test", stream: true }, anthropic)
      expect(streamed.text).toContain("event: content_block_delta")
      expect(streamed.text.trim().endsWith("data: {\"type\":\"message_stop\"}")).toBe(true)
    })).pipe(withHttp))

  it.live("chooses faults by model script, then the queue, then the x-rein-fault header", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FaultServer.make({ scripts: { special: [FaultServer.faults.forbidden] } })
      yield* server.enqueue(FaultServer.faults.unavailable)
      const a = yield* post(`${server.baseUrl}/chat/completions`, { model: "special" })
      const b = yield* post(`${server.baseUrl}/chat/completions`, { model: "any" })
      const c = yield* post(`${server.baseUrl}/chat/completions`, { model: "any" }, { "x-rein-fault": "contextLength" })
      const d = yield* post(`${server.baseUrl}/chat/completions`, { model: "any" })
      expect([a.status, b.status, c.status, d.status]).toEqual([403, 503, 400, 200])
      const seen = yield* server.requests
      expect(seen.map((r) => r.fault)).toEqual(["Status", "Status", "Status", "Ok"])
      expect(seen.every((r) => r.finished && !r.clientClosed)).toBe(true)
    })).pipe(withHttp))
})
