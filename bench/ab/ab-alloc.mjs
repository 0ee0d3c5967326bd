// A/B helper (not part of the bench): bench 2's 5 ms shape (Rein Batch.run, N items × L ms at C) from this
// checkout's build and from an older checkout's build (its own core, batch and effect), interleaved in one
// process: wall, CPU and bytes allocated per item, the machine's load printed per round.
// node --expose-gc bench/ab/ab-alloc.mjs <old checkout root> [N,L,C,rounds]
// (the old checkout: `git worktree add /tmp/old <commit> && cd /tmp/old && pnpm install --offline && pnpm build`)
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { allocated, collect } from "../dist/harness.js"
const here = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const [N, L, C, R] = (process.argv[3] ?? "20000,5,200,7").split(",").map(Number)
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
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
  const call = () => new Promise((r) => setTimeout(() => r(1), L))
  const provider = { internalMaxAttempts: 1, call: () => Effect.as(Effect.promise(call), response) }
  const context = Effect.runSync(
    Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(Rein.layer({ catalog, providers: { mem: provider } }), s))
  )
  const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })
  const items = Array.from({ length: N }, (_, i) => i)
  const guardrails = Guardrails.make({ concurrency: C })
  return async () => {
    const result = await Effect.runPromise(
      Batch.run(items, { contract, request: () => request, guardrails }).pipe(Effect.provide(context))
    )
    if (result.stats.succeeded !== N) throw new Error("not every item succeeded")
  }
}
const runs = { old: await setup(resolve(process.argv[2])), new: await setup(here) }
for (const f of Object.values(runs)) await f()
const rows = { old: [], new: [] }
const names = Object.keys(runs)
for (let r = 0; r < R; r++) {
  for (const name of r % 2 === 0 ? names : [...names].reverse()) {
    collect()
    const l0 = load()
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    const { bytes } = await allocated(runs[name])
    const wall = performance.now() - t0
    const c = process.cpuUsage(c0)
    rows[name].push({ wall, cpu: (c.user + c.system) / 1000, kb: bytes / N / 1024, load: `${l0}→${load()}` })
  }
}
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (xs, d = 0) => `${med(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`
console.log(`${N} items × ${L} ms at ${C}, ${R} interleaved rounds; median (min–max)`)
for (const [name, xs] of Object.entries(rows)) {
  console.log(`${name.padEnd(4)} wall ms ${fmt(xs.map((x) => x.wall))}  CPU ms ${fmt(xs.map((x) => x.cpu))}  KB/item ${fmt(xs.map((x) => x.kb), 2)}`)
}
const ratio = rows.new.map((x, i) => x.wall / rows.old[i].wall)
const cpuRatio = rows.new.map((x, i) => x.cpu / rows.old[i].cpu)
console.log(`new ÷ old per round: wall ${fmt(ratio, 3)}, CPU ${fmt(cpuRatio, 3)}`)
console.log(`load per round (1-min, start→end): ${rows.old.map((x, i) => `${x.load} / ${rows.new[i].load}`).join(", ")}`)
