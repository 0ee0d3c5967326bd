import { describe, expect, it } from "@effect/vitest"
import { OpenAiCompatible, Transport } from "@rein/providers"
import * as EffectAiOpenAi from "@rein/providers/EffectAiOpenAi"
import { Effect, Either, Redacted } from "effect"
import { withHttp } from "./fixtures.js"

const key = Redacted.make("sk-secret-never-printed")

describe("credentials go over https:// except to loopback", () => {
  it.effect("an http:// non-loopback base URL with a key is refused at construction, naming the field", () =>
    Effect.gen(function*() {
      // Construction only: no request is made to any address.
      const compat = yield* Effect.flip(OpenAiCompatible.make({ baseUrl: "http://10.1.2.3:8000/v1", apiKey: key }))
      expect(compat._tag).toBe("ProviderConfigError")
      expect(compat.field).toBe("baseUrl")
      expect(compat.message).toContain("https://")
      expect(compat.message).toContain("allowInsecureHttp")
      expect(compat.message).not.toContain("sk-secret")
      const ai = yield* Effect.flip(EffectAiOpenAi.make({ apiUrl: "http://models.example.com/v1", apiKey: key }))
      expect([ai._tag, ai.field]).toEqual(["ProviderConfigError", "apiUrl"])
    }).pipe(withHttp))

  it.effect("loopback hosts, https://, no key, or an explicit override are accepted", () =>
    Effect.gen(function*() {
      for (const baseUrl of ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1"]) {
        yield* OpenAiCompatible.make({ baseUrl, apiKey: key })
      }
      yield* OpenAiCompatible.make({ baseUrl: "https://api.example.com/v1", apiKey: key })
      yield* OpenAiCompatible.make({ baseUrl: "http://10.1.2.3:8000/v1" })
      yield* OpenAiCompatible.make({ baseUrl: "http://10.1.2.3:8000/v1", apiKey: key, allowInsecureHttp: true })
    }).pipe(withHttp))

  it.effect("URLs with embedded credentials or other protocols are refused", () =>
    Effect.gen(function*() {
      const userinfo = yield* Effect.flip(OpenAiCompatible.make({ baseUrl: "https://user:pw@api.example.com/v1" }))
      expect(userinfo.message).toContain("credentials in the URL")
      expect(userinfo.message).not.toContain("pw@")
      const ftp = yield* Effect.flip(OpenAiCompatible.make({ baseUrl: "ftp://127.0.0.1/v1" }))
      expect(ftp.message).toContain("protocol ftp:")
      const junk = yield* Effect.flip(OpenAiCompatible.make({ baseUrl: "not a url" }))
      expect(junk.field).toBe("baseUrl")
    }).pipe(withHttp))

  it("recognises loopback hosts", () => {
    expect(["127.0.0.1", "127.255.0.9", "localhost", "api.localhost", "[::1]", "::1"].map(Transport.isLoopbackHost))
      .toEqual([true, true, true, true, true, true])
    expect(
      ["128.0.0.1", "127.0.0.256", "10.0.0.1", "example.com", "localhost.example.com"].map(Transport.isLoopbackHost)
    )
      .toEqual([false, false, false, false, false])
    expect(Either.isLeft(Transport.checkBaseUrl("http://8.8.8.8", {
      field: "x",
      credentialed: true,
      allowInsecureHttp: false
    }))).toBe(true)
  })

  it("a Redacted key never shows in the provider's inspection", () => {
    expect(String(key)).not.toContain("sk-secret")
    expect(JSON.stringify({ key })).not.toContain("sk-secret")
  })
})

describe("an adapter's options that do not decode", () => {
  it.effect("are one line per bad field, naming it, as every other config error (not the schema's type dump)", () =>
    Effect.gen(function*() {
      const base = { baseUrl: "http://127.0.0.1:8080/v1" }
      for (
        const [options, field, message] of [
          [{ ...base, maxResponseBytes: -1 }, "maxResponseBytes", /^OpenAiCompatible: maxResponseBytes: Expected /],
          [{ ...base, maxResponseBytes: Number.NaN }, "maxResponseBytes", /^OpenAiCompatible: maxResponseBytes: /],
          [{ ...base, maxTokensField: "tokens" }, "maxTokensField", /^OpenAiCompatible: maxTokensField: Expected /],
          [{ ...base, apiKeyHeader: "x key" }, "apiKeyHeader", /^OpenAiCompatible: apiKeyHeader: /],
          [{ ...base, headers: { "x-a": 1 } }, "headers.x-a", /^OpenAiCompatible: headers\.x-a: Expected /],
          // Refused at construction, not sent: undici refused them on every call, as `unknown` and charged.
          [
            { ...base, headers: { "x-a": "b\r\nInjected: 1" } },
            "headers.x-a",
            /^OpenAiCompatible: headers\.x-a: Expected a header value without CR, LF or NUL/
          ],
          [
            { ...base, apiKey: Redacted.make("sk-secret-never-printed\n") },
            "apiKey",
            /^OpenAiCompatible: apiKey: Expected a key without CR, LF or NUL \(not shown\)$/
          ],
          [
            { ...base, headers: { "bad header": "x" } },
            "headers.bad header",
            /^OpenAiCompatible: headers."bad header": Expected a header name/
          ]
        ] as const
      ) {
        const error = yield* Effect.flip(OpenAiCompatible.make(options as unknown as OpenAiCompatible.Options))
        expect(error._tag).toBe("ProviderConfigError")
        expect(error.field).toBe(field)
        expect(error.message).toMatch(message)
        expect(error.message).not.toMatch(/readonly|└─|\n|sk-secret/)
      }
    }).pipe(withHttp))
})
