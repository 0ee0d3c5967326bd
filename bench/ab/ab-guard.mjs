// A/B helper (not part of the bench): bench 2's 5 ms shape with the guardrails one at a time, so that the
// cost of "every guardrail on" splits into its parts; the floor row (Effect.forEach + lean bound) beside them.
// Every row runs in the same process, order rotated every round: wall, CPU (ms per run) and KB allocated per
// item, the load printed. With OLD=<checkout root> (its own core, batch and effect, built), each Rein row also
// runs from that build ("old:" rows), interleaved with this checkout's ("new:" rows).
// node --expose-gc bench/ab/ab-guard.mjs [N,L,C,rounds] [rows]
// rows: comma-separated of floor, plain, all, item, batch, abortOn, caps, rpm, tpm, cooldown (default: all of them)
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { allocated, collect } from "../dist/harness.js"
import { leanBound } from "../dist/fixtures.js"
const here = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const [N, L, C, R] = (process.argv[2] ?? "20000,5,200,5").split(",").map(Number)
const configs = {
  plain: {},
  all: {
    itemDeadline: "30 seconds",
    batchDeadline: "10 minutes",
    abortOn: ["authentication", "insufficient_balance"],
    maxTotalTokens: 1e12,
    maxTotalCost: 1e9,
    requestsPerMinute: 1e9,
    tokensPerMinute: 1e12,
    cooldown: "1 second"
  },
  item: { itemDeadline: "30 seconds" },
  batch: { batchDeadline: "10 minutes" },
  abortOn: { abortOn: ["authentication", "insufficient_balance"] },
  caps: { maxTotalTokens: 1e12, maxTotalCost: 1e9 },
  rpm: { requestsPerMinute: 1e9 },
  tpm: { tokensPerMinute: 1e12 },
  cooldown: { cooldown: "1 second" }
}
const wanted = (process.argv[3] ?? ["floor", ...Object.keys(configs)].join(",")).split(",")
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const call = () => L === 0 ? Promise.resolve(1) : new Promise((r) => setTimeout(() => r(1), L))
const items = Array.from({ length: N }, (_, i) => i)

const setup = async (root) => {
  const at = (p) => import(pathToFileURL(resolve(root, p)).href)
  const { Batch, Guardrails } = await at("packages/batch/dist/index.js")
  const { Catalog, Contract, Rein } = await at("packages/core/dist/index.js")
  const { Effect, Layer, Scope } = await at("packages/core/node_modules/effect/dist/esm/index.js")
  const catalog = Catalog.make({
    endpoints: [{
      id: "mem/a", provider: "mem", model: "a",
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4_096 },
      prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
    }]
  })
  const response = { text: "ok", usage: { inputTokens: 10, outputTokens: 10 } }
  const request = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }
  const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
  const context = Effect.runSync(
    Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s))
  )
  const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
  return (config) => {
    const guardrails = Guardrails.make({ concurrency: C, ...config })
    return async () => {
      const result = await Effect.runPromise(
        Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context))
      )
      if (result.stats.succeeded !== N) throw new Error("not every item succeeded")
    }
  }
}

const runs = {}
// ROOT=<checkout root>: this process's Rein rows from that build (alternate processes for changes whose effect
// leaks between two builds in one process, such as the deoptimizations `gc-deopt.mjs` shows).
const root = process.env.ROOT ? resolve(process.env.ROOT) : here
const builds = process.env.OLD ? { old: await setup(resolve(process.env.OLD)), new: await setup(here) } : { "": await setup(root) }
for (const name of wanted) {
  if (name === "floor") {
    const { Effect } = await import(pathToFileURL(resolve(here, "packages/core/node_modules/effect/dist/esm/index.js")).href)
    runs.floor = () =>
      Effect.runPromise(Effect.forEach(items, () => leanBound(Effect.promise(call), 60_000), { concurrency: C }))
    continue
  }
  for (const [b, make] of Object.entries(builds)) runs[b === "" ? name : `${b}:${name}`] = make(configs[name])
}
const names = Object.keys(runs)
for (const f of Object.values(runs)) await f()
const rows = Object.fromEntries(names.map((n) => [n, []]))
const loads = []
for (let r = 0; r < R; r++) {
  loads.push(load())
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + r) % names.length]
    collect()
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const { bytes } = await allocated(runs[name])
    const wall = performance.now() - t0
    const c = process.cpuUsage(c0)
    rows[name].push({ wall, cpu: (c.user + c.system) / 1000, kb: bytes / N / 1024 })
  }
}
loads.push(load())
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs, d = 0) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
console.log(`${N} items × ${L} ms at ${C}, ${R} rounds, order rotated; median (min–max); load ${loads.join(" → ")}`)
const base = rows.floor ? med(rows.floor.map((x) => x.cpu)) : undefined
for (const [name, xs] of Object.entries(rows)) {
  const cpu = med(xs.map((x) => x.cpu))
  console.log(
    `${name.padEnd(13)} CPU ms ${fmt(xs.map((x) => x.cpu)).padEnd(18)} µs/item ${(cpu * 1000 / N).toFixed(1).padStart(5)}` +
      `${base === undefined ? "" : `  −floor ${((cpu - base) * 1000 / N).toFixed(1).padStart(5)} µs`}` +
      `  wall ms ${fmt(xs.map((x) => x.wall)).padEnd(18)} KB/item ${fmt(xs.map((x) => x.kb), 2)}`
  )
}
if (process.env.OLD) {
  for (const name of wanted.filter((n) => n !== "floor")) {
    const o = rows[`old:${name}`]
    const n = rows[`new:${name}`]
    const ratio = n.map((x, i) => x.cpu / o[i].cpu)
    console.log(`${name}: new ÷ old CPU per round ${fmt(ratio, 3)}`)
  }
}
