/**
 * `--otlp`: the binary exports its traces and metrics over OTLP/HTTP to a receiver on loopback that the test
 * starts; the test decodes what arrived (OTLP's JSON encoding) with a Schema.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"

const { bin, root } = Binary
let tmp = ""

// The tests run the built binary: built fresh before the suite.
beforeAll(async () => {
  tmp = await Binary.prepare("rein-otlp-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

// OTLP/JSON, as much of it as the test reads.
const AnyValue = Schema.Struct({
  stringValue: Schema.optional(Schema.String),
  intValue: Schema.optional(Schema.Union(Schema.Number, Schema.String)),
  doubleValue: Schema.optional(Schema.Number),
  boolValue: Schema.optional(Schema.Boolean)
})
const Attributes = Schema.Array(Schema.Struct({ key: Schema.String, value: AnyValue }))
const Span = Schema.Struct({
  traceId: Schema.String,
  spanId: Schema.String,
  parentSpanId: Schema.optional(Schema.String),
  name: Schema.String,
  attributes: Attributes,
  events: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String, attributes: Attributes })))
})
const Traces = Schema.Struct({
  resourceSpans: Schema.Array(Schema.Struct({
    resource: Schema.Struct({ attributes: Attributes }),
    scopeSpans: Schema.Array(Schema.Struct({ spans: Schema.Array(Span) }))
  }))
})
const Metrics = Schema.Struct({
  resourceMetrics: Schema.Array(Schema.Struct({
    scopeMetrics: Schema.Array(Schema.Struct({ metrics: Schema.Array(Schema.Struct({ name: Schema.String })) }))
  }))
})

const valueOf = (v: typeof AnyValue.Type): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue
const attrs = (a: typeof Attributes.Type) => Object.fromEntries(a.map(({ key, value }) => [key, valueOf(value)]))

/** A receiver on loopback: every POST body by path. */
const receiver = async () => {
  const bodies: Array<{ readonly path: string; readonly body: string }> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      bodies.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, bodies, close: () => new Promise((r) => server.close(r)) }
}

const rein = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { cwd: root, encoding: "utf8", env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
    )
  })

const canary = "CANARY-otlp-4be1"

describe("rein --otlp", () => {
  it("rein run exports the request span, its attempt spans and the metrics to the collector", async () => {
    const server = await receiver()
    try {
      const scenario = path.join(tmp, "a-down.json")
      fs.writeFileSync(
        scenario,
        JSON.stringify({
          endpoints: { "fake/a": [{ behaviour: { kind: "fail", failure: "server_error", latency: "10 millis" } }] }
        })
      )
      const r = await rein([
        "run",
        "--catalog",
        "examples/catalog.json",
        "--contract",
        "examples/contract.json",
        "--prompt",
        `Hello ${canary}`,
        "--scenario",
        scenario,
        "--otlp",
        server.url,
        "--json"
      ], { REIN_API_KEY: `sk-${canary}` })
      expect(r.code).toBe(0)
      const traces = server.bodies.filter((b) => b.path === "/v1/traces")
      const metrics = server.bodies.filter((b) => b.path === "/v1/metrics")
      expect(traces.length).toBeGreaterThan(0)
      expect(metrics.length).toBeGreaterThan(0)
      const spans = traces.flatMap((t) =>
        Schema.decodeUnknownSync(Schema.parseJson(Traces))(t.body).resourceSpans.flatMap((rs) => {
          expect(attrs(rs.resource.attributes)["service.name"]).toBe("rein")
          return rs.scopeSpans.flatMap((s) => s.spans)
        })
      )
      const request = spans.find((s) => s.name === "rein.request")!
      expect(attrs(request.attributes)).toMatchObject({ "rein.outcome": "Completion", "rein.endpoint": "fake/b" })
      const children = spans.filter((s) => s.parentSpanId === request.spanId)
      expect(children.map((s) => attrs(s.attributes)["rein.attempt.role"])).toEqual(["first", "retry", "fallback"])
      expect(children.map((s) => attrs(s.attributes)["error.type"])).toEqual([
        "server_error",
        "server_error",
        undefined
      ])
      expect(request.events?.map((e) => e.name)).toContain("rein.wait")
      const names = metrics.flatMap((m) =>
        Schema.decodeUnknownSync(Schema.parseJson(Metrics))(m.body).resourceMetrics.flatMap((rm) =>
          rm.scopeMetrics.flatMap((s) => s.metrics.map((x) => x.name))
        )
      )
      expect(names).toEqual(expect.arrayContaining(["rein.attempts", "gen_ai.client.operation.duration"]))
      for (const b of server.bodies) expect(b.body).not.toContain(canary)
    } finally {
      await server.close()
    }
  }, 120_000)

  it(
    "rein batch takes the collector from OTEL_EXPORTER_OTLP_ENDPOINT and --metrics prints the run's metrics",
    async () => {
      const server = await receiver()
      try {
        const input = path.join(tmp, "prompts.jsonl")
        fs.writeFileSync(
          input,
          ["q1", "q2", "q3"].map((id) => JSON.stringify({ id, prompt: `${id} ${canary}` })).join("\n")
        )
        const r = await rein([
          "batch",
          "--input",
          input,
          "--catalog",
          "examples/catalog.json",
          "--contract",
          "examples/contract.json",
          "--scenario",
          "examples/scenarios/outage.json",
          "--out",
          path.join(tmp, "batch.jsonl"),
          "--overwrite",
          "--metrics",
          "--json"
        ], { OTEL_EXPORTER_OTLP_ENDPOINT: server.url })
        expect(r.code).toBe(0)
        expect(r.stderr).toMatch(/^rein\.batch\.items\.accepted 3$/m)
        expect(r.stderr).toMatch(/^rein\.batch\.items\.done\{rein\.batch\.item\.result=Succeeded\} 3$/m)
        expect(r.stderr).toMatch(/^rein\.attempts\{.*rein\.outcome=success\} 3$/m)
        const spans = server.bodies.filter((b) => b.path === "/v1/traces").flatMap((t) =>
          Schema.decodeUnknownSync(Schema.parseJson(Traces))(t.body).resourceSpans.flatMap((rs) =>
            rs.scopeSpans.flatMap((s) => s.spans)
          )
        )
        const run = spans.find((s) => s.name === "rein.batch.run")!
        const items = spans.filter((s) => s.parentSpanId === run.spanId)
        expect(items.map((s) => s.name)).toEqual(["rein.batch.item", "rein.batch.item", "rein.batch.item"])
        const requests = spans.filter((s) => s.name === "rein.request")
        expect(requests.map((s) => items.some((i) => i.spanId === s.parentSpanId))).toEqual([true, true, true])
        for (const b of server.bodies) expect(b.body).not.toContain(canary)
        expect(r.stderr).not.toContain(canary)
      } finally {
        await server.close()
      }
    },
    120_000
  )

  it("a --otlp that is not an http(s) URL is bad input naming the flag", async () => {
    const r = await rein([
      "run",
      "--catalog",
      "examples/catalog.json",
      "--contract",
      "examples/contract.json",
      "--prompt",
      "Hello",
      "--otlp",
      "localhost:4318"
    ])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/--otlp: Expected an http\(s\) URL/)
  }, 60_000)
})
