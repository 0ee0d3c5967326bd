// A/B helper (not part of the bench): `streamText` through ReinLanguageModel against the same in-memory model
// called directly, for answers of 10, 100 and 1,000 text deltas (one part per chunk, as a network stream
// delivers them): CPU µs and KB allocated per call, per build, each build in its own process, the processes
// interleaved (order rotated every round); medians with min–max over rounds, and the load.
// Copy the old builds aside first: packages/core/dist → dist-base, packages/providers/dist → dist-base with its
// `@rein/core` imports pointed at ../../core/dist-base (see bench/ab/README.md).
// Usage: node bench/ab/ab-lm-stream.mjs [rounds] [builds: dist,dist-base]
//        node --expose-gc bench/ab/ab-lm-stream.mjs --child <providers dist dir>   (one process, one JSON line)
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
const here = path.dirname(fileURLToPath(import.meta.url))
const SIZES = [10, 100, 1000]
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]

const child = async (dir) => {
  const { LanguageModel } = await import("@effect/ai")
  const { Effect, Layer, Stream } = await import("effect")
  const { allocated, collect } = await import("../dist/harness.js")
  const { Catalog, Contract } = await import("@rein/core")
  const { layer } = await import(path.join(dir, "ReinLanguageModel.js"))
  const usage = { inputTokens: 10, outputTokens: 2, totalTokens: 12 }
  const partsOf = (k) => [{ type: "text-start", id: "t" },
    ...Array.from({ length: k }, (_, i) => ({ type: "text-delta", id: "t", delta: `w${i % 10} ` })),
    { type: "text-end", id: "t" }, { type: "finish", reason: "stop", usage }]
  const model = (k) => Layer.effect(LanguageModel.LanguageModel, LanguageModel.make({
    generateText: () => Effect.succeed([]),
    streamText: () => Stream.rechunk(Stream.fromIterable(partsOf(k)), 1)
  }))
  const ep = (id) => ({ id, provider: "memory", model: id, capabilities: { contextWindow: 8000, maxOutputTokens: 1000, streaming: true },
    prices: { inputTokens: 1e-6, outputTokens: 2e-6 } })
  const catalog = Catalog.make({ endpoints: [ep("a"), ep("b")] })
  const contract = Contract.make({ deadline: "30 seconds", candidates: ["a", "b"] })
  const build = (l) => Effect.runPromise(Effect.scoped(Layer.build(l)))
  const out = {}
  for (const k of SIZES) {
    const direct = await build(model(k))
    const rein = await build(layer({ contract, catalog, models: { a: model(k), b: model(k) }, inputTokens: () => 10 }))
    const n = Math.max(20, Math.round(10000 / k))
    for (const [name, context] of [["direct", direct], ["rein", rein]]) {
      const f = () => Effect.runPromise(Effect.provide(Stream.runDrain(LanguageModel.streamText({ prompt: "hi" })), context))
      for (let i = 0; i < n / 4; i++) await f()
      collect()
      const c0 = process.cpuUsage()
      const { bytes } = await allocated(async () => { for (let i = 0; i < n; i++) await f() })
      const c = process.cpuUsage(c0)
      out[`${name}-${k}`] = { us: (c.user + c.system) / n, kb: bytes / n / 1024 }
    }
  }
  console.log(JSON.stringify(out))
}

const parent = (rounds, builds) => {
  const dirs = builds.map((b) => path.resolve(here, "../../packages/providers", b))
  const runs = dirs.map(() => [])
  const loads = []
  for (let r = 0; r < rounds; r++) {
    loads.push(load())
    for (let j = 0; j < dirs.length; j++) {
      const i = (j + r) % dirs.length
      const line = execFileSync(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", dirs[i]])
      runs[i].push(JSON.parse(String(line).trim().split("\n").at(-1)))
    }
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  const fmt = (xs, d) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
  for (let i = 0; i < dirs.length; i++) {
    for (const k of SIZES) {
      for (const name of ["direct", "rein"]) {
        const rows = runs[i].map((x) => x[`${name}-${k}`])
        console.log(`${builds[i]} ${name} ${k} deltas`.padEnd(30), "µs/call", fmt(rows.map((x) => x.us), 0).padEnd(22),
          "KB/call", fmt(rows.map((x) => x.kb), 1))
      }
      const extra = runs[i].map((x) => ({ us: x[`rein-${k}`].us - x[`direct-${k}`].us, kb: x[`rein-${k}`].kb - x[`direct-${k}`].kb }))
      console.log(`${builds[i]} rein − direct ${k}`.padEnd(30), "µs/call", fmt(extra.map((x) => x.us), 0).padEnd(22),
        "KB/call", fmt(extra.map((x) => x.kb), 1))
    }
    const [lo, hi] = [SIZES[0], SIZES.at(-1)]
    const per = (name) => runs[i].map((x) => ({ us: (x[`${name}-${hi}`].us - x[`${name}-${lo}`].us) / (hi - lo),
      kb: (x[`${name}-${hi}`].kb - x[`${name}-${lo}`].kb) / (hi - lo) }))
    for (const name of ["direct", "rein"]) {
      const rows = per(name)
      console.log(`${builds[i]} ${name} per delta`.padEnd(30), "µs", fmt(rows.map((x) => x.us), 2).padEnd(25),
        "bytes", fmt(rows.map((x) => x.kb * 1024), 0))
    }
  }
  console.log("load", loads.join(" "), "→", load())
}

if (process.argv[2] === "--child") await child(path.resolve(process.argv[3]))
else parent(Number(process.argv[2] ?? 5), (process.argv[3] ?? "dist,dist-base").split(","))
