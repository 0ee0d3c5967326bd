// A/B helper (not part of the bench): V8's sampling heap profiler (collected objects included) over one drain of
// stream-deltas.mjs's body (N one-byte OpenAI Responses deltas from a loopback server in a child process) through
// Rein's `ReinLanguageModel` of the given providers build: bytes per delta charged to the innermost Rein frame
// (core or providers) on each sample's stack, then by allocating function (self).
// `bare`: `@effect/ai-openai` alone, its body re-cut into whole lines (stream-deltas.mjs's `lines` variant).
// Usage: node bench/ab/stream-sites.mjs [deltas=5000] [build=dist|bare]
//        PARENTS=<regex of allocating functions> [DEPTH=4] [CHAINS=25]: their bytes by chain of callers
import { fork } from "node:child_process"
import { realpathSync, unlinkSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const providers = path.resolve(here, "../../packages/providers")
const esm = (name) => path.join(realpathSync(path.join(providers, "node_modules", name)), "dist/esm/index.js")
const N = Number(process.argv[2] ?? 5000)
const build = process.argv[3] ?? "dist"
const { Effect, Layer, Redacted, Stream } = await import(esm("effect"))
const { LanguageModel } = await import(esm("@effect/ai"))
const { OpenAiClient, OpenAiLanguageModel } = await import(esm("@effect/ai-openai"))
const { NodeHttpClient } = await import(esm("@effect/platform-node"))
const { Catalog, Contract } = await import(path.join(providers, "node_modules/@rein/core/dist/index.js"))
const { openaiResponses } = await import(path.join(providers, "dist/testing.js"))

const events = openaiResponses.dialect.events("gpt-test",
  { deltas: Array.from({ length: N }, () => "x"), usage: null, toolCalls: [], finish: "stop" }, false)
const file = path.join(process.env.TMPDIR ?? "/tmp", `stream-sites-${process.pid}.sse`)
writeFileSync(file, [...events.head, ...events.deltas, ...events.tail].join(""))
const server = fork(path.join(here, "stream-deltas.mjs"), ["--serve", file])
const port = await new Promise((resolve) => server.once("message", resolve))
const apiUrl = `http://127.0.0.1:${port}`
const catalog = Catalog.make({ endpoints: [{ id: "openai/test", provider: "openai", model: "gpt-test",
  capabilities: { contextWindow: 128_000, maxOutputTokens: 4096, streaming: true },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
const contract = Contract.make({ deadline: "60 seconds", attemptTimeout: "60 seconds", candidates: ["openai/test"],
  retry: { perEndpoint: 0 } })
const layer = build === "bare"
  ? OpenAiLanguageModel.model("gpt-test").pipe(
    Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl, transformClient: await wholeLines() })))
  : (await import(path.join(providers, build, "index.js"))).ReinLanguageModel.layer({ contract, catalog, models: { "openai/test": OpenAiLanguageModel.model },
  clients: OpenAiClient.layer({ apiKey: Redacted.make("sk-test"), apiUrl }) })
async function wholeLines() {
  const { HttpClient } = await import(esm("@effect/platform"))
  const { wholeLines } = await import(path.join(providers, "dist/internal/http.js"))
  return HttpClient.transformResponse((effect) => Effect.map(effect, (res) => new Proxy(res, {
    get: (t, p) => p === "stream" ? wholeLines(t.stream) : Reflect.get(t, p, t)
  })))
}
const drain = () => Effect.runPromise(LanguageModel.streamText({ prompt: "hello" }).pipe(
  Stream.runForEach(() => Effect.void), Effect.provide(layer), Effect.provide(NodeHttpClient.layer)))

await drain()
const session = new Session()
session.connect()
await session.post("HeapProfiler.enable")
await session.post("HeapProfiler.startSampling", {
  samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true
})
await drain()
const { profile } = await session.post("HeapProfiler.stopSampling")
server.kill()
unlinkSync(file)
const label = (f) => `${f.functionName || "(anon)"} ${f.url.replace(/.*node_modules\/.pnpm\/[^/]+\/node_modules\//, "").replace(/.*\/packages\//, "")}:${f.lineNumber + 1}`
const self = new Map()
const byRein = new Map()
const walk = (node, owner) => {
  const k = label(node.callFrame)
  const own = /(core|providers)\/dist/.test(k) ? k : owner
  byRein.set(own, (byRein.get(own) ?? 0) + node.selfSize)
  self.set(k, (self.get(k) ?? 0) + node.selfSize)
  for (const c of node.children) walk(c, own)
}
walk(profile.head, "(outside Rein)")
const total = [...self.values()].reduce((a, b) => a + b, 0)
console.log(`total ${(total / N).toFixed(0)} B/delta; by innermost Rein frame:`)
for (const [k, v] of [...byRein].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${(v / N).toFixed(0).padStart(7)} B  ${k}`)
console.log("by allocating function:")
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30))) {
  console.log(`${(v / N).toFixed(0).padStart(7)} B  ${k}`)
}
// PARENTS=<regex>: the bytes of matching allocating functions by their callers' chain (DEPTH frames, default 4).
if (process.env.PARENTS !== undefined) {
  const re = new RegExp(process.env.PARENTS)
  const depth = Number(process.env.DEPTH ?? 4)
  const chains = new Map()
  const visit = (node, stack) => {
    const k = label(node.callFrame)
    const here = [...stack, k]
    if (re.test(k) && node.selfSize > 0) {
      const chain = here.slice(-1 - depth).reverse().join("  <  ")
      chains.set(chain, (chains.get(chain) ?? 0) + node.selfSize)
    }
    for (const c of node.children) visit(c, here)
  }
  visit(profile.head, [])
  console.log(`callers of ${process.env.PARENTS}:`)
  for (const [k, v] of [...chains].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.CHAINS ?? 25))) {
    console.log(`${(v / N).toFixed(0).padStart(7)} B  ${k.replace(/effect\/dist\/esm\/internal\//g, "")}`)
  }
}
