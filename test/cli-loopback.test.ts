/**
 * The `rein` binary end to end against a real HTTP server on loopback that the test starts (the providers
 * package's `FaultServer`, speaking the OpenAI chat-completions wire format): catalog endpoints whose
 * provider is `openai-compatible` run over HTTP to `--base-url`, with the key only from `REIN_API_KEY`.
 * Each test runs the built binary as a separate process while the server answers in this one.
 */
import { describe, expect, it } from "@effect/vitest"
import { FaultServer } from "@rein/providers/testing"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "./support/binary.js"

const { bin, root } = Binary
const KEY = "sk-loopback-secret-4f1c"
let tmp = ""

interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the binary without blocking this process's event loop (the server answers on it). */
const rein = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>) =>
  Effect.async<Result>((resume) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, encoding: "utf8", env: { ...process.env, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const write = (name: string, value: unknown): string => {
  const p = path.join(tmp, name)
  fs.writeFileSync(p, typeof value === "string" ? value : JSON.stringify(value))
  return p
}

const endpoint = (id: string, model: string) => ({
  id,
  provider: "openai-compatible",
  model,
  capabilities: { contextWindow: 8000, maxOutputTokens: 200 },
  prices: { inputTokens: 0.000001, outputTokens: 0.000002 }
})

// The tests run the built binary: built fresh before the suite.
beforeAll(async () => {
  tmp = await Binary.prepare("rein-loopback-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

describe("rein against a loopback server", () => {
  it.live(
    "run retries the primary's 503, falls back to the backup over HTTP, records, and the record replays",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          scripts: {
            "primary-model": [
              FaultServer.status(503, { code: "overloaded", message: "busy" }),
              FaultServer.status(503, { code: "overloaded", message: "busy" })
            ],
            "backup-model": [
              FaultServer.ok({ text: "the sea rises as vapour", usage: { inputTokens: 9, outputTokens: 6 } })
            ]
          }
        })
        const catalog = write("catalog.json", {
          endpoints: [endpoint("loop/primary", "primary-model"), endpoint("loop/backup", "backup-model")]
        })
        const contract = write("contract.json", {
          deadline: "20 seconds",
          attemptTimeout: "5 seconds",
          budget: { cost: 1 },
          candidates: ["loop/primary", "loop/backup"],
          retry: { perEndpoint: 1, base: "20 millis", factor: 2, max: "100 millis", jitter: 0 }
        })
        const record = path.join(tmp, "rec.jsonl")
        const prompt = "Explain the water cycle to a child"
        const r = yield* rein(
          [
            "run",
            "--catalog",
            catalog,
            "--contract",
            contract,
            "--prompt",
            prompt,
            "--record",
            record,
            "--base-url",
            server.baseUrl
          ],
          { REIN_API_KEY: KEY }
        )
        expect(r.stderr).toBe("")
        expect(r.code).toBe(0)
        // The failed attempts reported no usage (charged their reservation), so the request's cost is unknown.
        expect(r.stdout).toMatch(/^outcome: success on loop\/backup; 9 in \/ 6 out; cost unknown\n/)
        expect(r.stdout).toMatch(/answer: the sea rises as vapour\n/)
        expect(r.stdout).toMatch(/1 +1 +loop\/primary +first +failure +overloaded /)
        expect(r.stdout).toMatch(/2 +2 +loop\/primary +retry +failure +overloaded /)
        expect(r.stdout).toMatch(/3 +3 +loop\/backup +fallback +success .* cost 0\.000021 \/ 15 tokens\n/)

        // What the server saw: three chat-completion requests, in order, each with the key as a bearer token.
        const seen = yield* server.requests
        expect(seen.map((s) => [s.path, s.model])).toEqual([
          ["/v1/chat/completions", "primary-model"],
          ["/v1/chat/completions", "primary-model"],
          ["/v1/chat/completions", "backup-model"]
        ])
        expect(seen.every((s) => s.headers["authorization"] === "<redacted>")).toBe(true)

        // The key is never printed or recorded; the prompt is never recorded.
        const journal = fs.readFileSync(record, "utf8")
        for (const text of [r.stdout, r.stderr, journal]) expect(text).not.toContain(KEY)
        expect(journal).not.toContain(prompt)
        expect(fs.statSync(record).mode & 0o777).toBe(0o600)

        const replay = yield* rein(["replay", record], {})
        expect(replay.code).toBe(0)
        expect(replay.stdout).toMatch(/replayed 3 decisions of 1 request: every decision reproduces byte for byte/)
        const explain = yield* rein(["explain", record], {})
        expect(explain.code).toBe(0)
        expect(explain.stdout).toMatch(/attempt 3 on loop\/backup \(fallback\)/)
      })),
    120_000
  )

  it.live(
    "batch over HTTP: a 429 with Retry-After waits and the item still answers; the artifact names the endpoint",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FaultServer.make({
          faults: [FaultServer.rateLimited({ retryAfterSeconds: 1 })]
        })
        const catalog = write("catalog-one.json", { endpoints: [endpoint("loop/only", "only-model")] })
        const contract = write("contract-one.json", {
          deadline: "20 seconds",
          attemptTimeout: "5 seconds",
          candidates: ["loop/only"],
          retry: { perEndpoint: 1, base: "20 millis", factor: 2, max: "100 millis", jitter: 0 }
        })
        const input = write(
          "prompts.jsonl",
          ["first", "second", "third"].map((p, i) => JSON.stringify({ id: `p${i + 1}`, prompt: p })).join("\n") + "\n"
        )
        const out = path.join(tmp, "batch.jsonl")
        const r = yield* rein(
          [
            "batch",
            "--input",
            input,
            "--catalog",
            catalog,
            "--contract",
            contract,
            "--out",
            out,
            "--concurrency",
            "1",
            "--base-url",
            server.baseUrl,
            "--json"
          ],
          { REIN_API_KEY: KEY }
        )
        expect(r.code).toBe(0)
        const report = JSON.parse(r.stdout)
        expect(report.stats.succeeded).toBe(3)
        expect(report.stats.rateLimited).toBe(1)
        expect(report.byEndpoint).toEqual({ "loop/only": 3 })
        const seen = yield* server.requests
        expect(seen).toHaveLength(4)
        expect(seen[0]!.fault).toBe("Status")
        const records = fs.readFileSync(out, "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l))
        expect(records.map((rec) => [rec.itemId, rec.endpoint])).toEqual([
          ["p1", "loop/only"],
          ["p2", "loop/only"],
          ["p3", "loop/only"]
        ])
        for (const text of [r.stdout, r.stderr, fs.readFileSync(out, "utf8")]) expect(text).not.toContain(KEY)
      })),
    120_000
  )

  it.live(
    "a base URL nobody listens on is a failed request (exit 1), not a crash",
    () =>
      Effect.scoped(Effect.gen(function*() {
        // A port a server listened on and has closed: nobody answers there.
        const port = yield* Effect.scoped(Effect.map(FaultServer.make(), (s) => s.port))
        const catalog = write("catalog-dead.json", { endpoints: [endpoint("loop/dead", "m")] })
        const contract = write("contract-dead.json", {
          deadline: "3 seconds",
          attemptTimeout: "1 second",
          candidates: ["loop/dead"],
          retry: { perEndpoint: 0 }
        })
        const dead = `http://127.0.0.1:${port}/v1`
        const r = yield* rein([
          "run",
          "--catalog",
          catalog,
          "--contract",
          contract,
          "--prompt",
          "hi",
          "--base-url",
          dead
        ], {})
        expect(r.code).toBe(1)
        expect(r.stdout).toMatch(/^outcome: (PlanExhausted|DeadlineExceeded): /)
        expect(r.stderr).not.toMatch(/\n\s+at /)
      })),
    120_000
  )
})
