// A/B helper (not part of the bench): HostileStream case (2)'s body, an OpenAI Responses SSE stream of N one-byte
// text deltas, served in one write from a loopback HTTP server in a child process (its CPU is not counted), and
// drained through `LanguageModel.streamText` of (a) bare `@effect/ai-openai` (no Rein) and (b) Rein's
// `ReinLanguageModel` over the same model, per providers build; the variants interleaved in ONE process, their
// order rotated every round. Prints CPU µs and bytes allocated per delta (bytes do not depend on the load):
// medians with min–max over rounds, and the load.
// Old build: copy packages/providers/dist to packages/providers/dist-base before changing the source.
// Usage: node bench/ab/stream-deltas.mjs [rounds=5] [deltas=50000] [builds=dist] [variants=bare,lines,rein]
//        node --cpu-prof bench/ab/stream-deltas.mjs 3 50000 dist rein   (profile of (b) alone)
import { fork } from "node:child_process"
import { readFileSync, realpathSync } from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as v8 from "node:v8"

const here = path.dirname(fileURLToPath(import.meta.url))
const providers = path.resolve(here, "../../packages/providers")
const esm = (name) => path.join(realpathSync(path.join(providers, "node_modules", name)), "dist/esm/index.js")
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")

if (process.argv[2] === "--serve") {
  // The server: answers every request with the body in one write.
  const body = readFileSync(process.argv[3])
  process.on("disconnect", () => process.exit(0))
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "content-length": body.length })
      res.end(body)
    })
  })
  server.listen(0, "127.0.0.1", () => process.send(server.address().port))
} else {
  const [rounds, deltas] = [Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 50_000)]
  const builds = (process.argv[4] ?? "dist").split(",")
  const variants = (process.argv[5] ?? "bare,rein").split(",")
  const { Effect, Layer, Redacted, Stream } = await import(esm("effect"))
  const { LanguageModel } = await import(esm("@effect/ai"))
  const { OpenAiClient, OpenAiLanguageModel } = await import(esm("@effect/ai-openai"))
  const { NodeHttpClient } = await import(esm("@effect/platform-node"))
  const { Catalog, Contract } = await import(path.join(providers, "node_modules/@rein/core/dist/index.js"))
  const { openaiResponses } = await import(path.join(providers, "dist/testing.js"))

  const events = openaiResponses.dialect.events("gpt-test",
    { deltas: Array.from({ length: deltas }, () => "x"), usage: null, toolCalls: [], finish: "stop" }, false)
  const file = path.join(process.env.TMPDIR ?? "/tmp", `stream-deltas-${process.pid}.sse`)
  const { writeFileSync, unlinkSync } = await import("node:fs")
  writeFileSync(file, [...events.head, ...events.deltas, ...events.tail].join(""))
  const server = fork(fileURLToPath(import.meta.url), ["--serve", file])
  const port = await new Promise((resolve) => server.once("message", resolve))
  const apiUrl = `http://127.0.0.1:${port}`

  const clients = OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl })
  const bare = Layer.provide(OpenAiLanguageModel.model("gpt-test"), clients)
  const catalog = Catalog.make({ endpoints: [{ id: "openai/test", provider: "openai", model: "gpt-test",
    capabilities: { contextWindow: 128_000, maxOutputTokens: 4096, streaming: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: "60 seconds", attemptTimeout: process.env.ATT ?? "60 seconds", candidates: ["openai/test"],
    retry: { perEndpoint: 0 } })
  const layers = {}
  for (const b of builds) {
    const { ReinLanguageModel } = await import(path.join(providers, b, "index.js"))
    layers[`rein@${b}`] = ReinLanguageModel.layer({ contract, catalog, models: { "openai/test": OpenAiLanguageModel.model },
      clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl }) })
  }
  if (variants.includes("bare")) layers.bare = bare
  if (variants.includes("lines")) {
    // (a') bare, its response body re-cut into whole lines by Rein's `wholeLines` (the platform SSE parser is
    // quadratic in a read of many lines): the bare cost without that parser's quadratic term.
    const { HttpClient } = await import(esm("@effect/platform"))
    const { wholeLines } = await import(path.join(providers, "dist/internal/http.js"))
    const transformClient = HttpClient.transformResponse((effect) => Effect.map(effect, (res) => new Proxy(res, {
      get: (t, p) => p === "stream" ? wholeLines(t.stream) : Reflect.get(t, p, t)
    })))
    layers.lines = Layer.provide(OpenAiLanguageModel.model("gpt-test"),
      OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl, transformClient }))
  }
  const names = Object.keys(layers).filter((n) => variants.some((v) => n.startsWith(v)))

  const drain = (name) => {
    let text = 0
    return Effect.runPromise(LanguageModel.streamText({ prompt: "hello" }).pipe(
      Stream.runForEach((p) => Effect.sync(() => void (p.type === "text-delta" && (text += p.delta.length)))),
      Effect.provide(layers[name]),
      Effect.provide(NodeHttpClient.layer)
    )).then(() => {
      if (text !== deltas) throw new Error(`${name}: ${text} of ${deltas} deltas`)
    })
  }
  const measure = async (name) => {
    const profiler = new v8.GCProfiler()
    profiler.start()
    const before = v8.getHeapStatistics().used_heap_size
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await drain(name)
    const ms = performance.now() - t0
    const c = process.cpuUsage(c0)
    const after = v8.getHeapStatistics().used_heap_size
    let freed = 0
    for (const s of profiler.stop()?.statistics ?? []) {
      freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
    }
    return { us: (c.user + c.system) / deltas, bytes: (after - before + freed) / deltas, ms }
  }

  for (const n of names) await drain(n) // warm-up
  const runs = Object.fromEntries(names.map((n) => [n, []]))
  const loads = [load()]
  for (let r = 0; r < rounds; r++) {
    for (let j = 0; j < names.length; j++) {
      const n = names[(j + r) % names.length]
      runs[n].push(await measure(n))
    }
    loads.push(load())
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  const fmt = (xs, d) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
  console.log(`${deltas} one-byte deltas, ${rounds} rounds; per delta:`)
  for (const n of names) {
    const rs = runs[n]
    console.log(n.padEnd(16), "CPU µs", fmt(rs.map((x) => x.us), 2).padEnd(24), "bytes", fmt(rs.map((x) => x.bytes), 0).padEnd(24),
      "wall ms/run", fmt(rs.map((x) => x.ms), 0))
  }
  console.log("load", loads.join(" | "))
  server.kill()
  unlinkSync(file)
}
