// A/B helper (not part of the bench): CPU per request of bench 4's burst (1,000 50 ms expiries at once), one
// configuration per child process, children interleaved (order rotated and reversed every round).
// node bench/ab/burst-cpu.mjs <rounds> <config>... with config = lean | jfloor | off | on | journal (optionally with
// `-once`: the services provided once around the burst, not around each request as bench 4 does), each optionally
// @<core dist dir> (default: this tree's). Per child: 2 untimed bursts, then 5 after a gc(); the child reports
// its medians of [start, expiry] CPU µs per request (split at the last provider call started), p99 ms, KB/req.
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
const here = fileURLToPath(import.meta.url)
const med = (xs) => { const s = xs.slice().sort((a, b) => a - b); return s[s.length >> 1] }
if (process.argv[2] === "child") {
  const [named, dir] = process.argv[3].split("@")
  // `<config>-once`: the services provided once around the burst (as a ManagedRuntime would), not per request.
  const once = named.endsWith("-once"), config = named.replace(/-once$/, "")
  const { Effect, Layer, Scope } = await import("effect")
  const { default: v8 } = await import("node:v8")
  const { leanBound } = await import("../dist/fixtures.js")
  const core = await import((dir ?? fileURLToPath(new URL("../../packages/core/dist", import.meta.url))) + "/index.js")
  const { Catalog, Contract, Rein, Journal } = core
  const N = 1000
  let mark = null
  const hang = Effect.suspend(() => { mark = process.cpuUsage(); return Effect.never })
  const catalog = Catalog.make({ endpoints: [{ id: "mem/a", provider: "mem", model: "a", capabilities: { contextWindow: 128000, maxOutputTokens: 4096 }, prices: { inputTokens: 1e-6, outputTokens: 2e-6 } }] })
  const contract = Contract.make({ deadline: 50, teardownGrace: 250, candidates: ["mem/a"], retry: { perEndpoint: 0 } })
  const base = Rein.layer({ catalog, providers: { mem: { internalMaxAttempts: 1, call: () => hang } }, health: config === "off" ? false : { failureRatio: 0.9, depositRatio: 2 } })
  const layer = config === "journal" ? Layer.merge(Layer.orDie(base), Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))) : Layer.orDie(base)
  const ctx = config === "lean" || config === "jfloor" ? undefined : await Effect.runPromise(Effect.flatMap(Scope.make(), (s) => Layer.buildWithScope(layer, s)))
  const execute = Rein.execute({ prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }, contract)
  // jfloor: bench 4's journal floor (the lean bound + the journal work of one request through Rein's journal writer).
  const jfloor = config === "jfloor" ? await (async () => {
    const { journaledLean, memoryJournal } = await import("../dist/fixtures.js")
    const { journalWork } = await import("../dist/deadline.js")
    return journaledLean(hang, Effect.runSync(Effect.provide(Journal.Journal, memoryJournal)), await journalWork(), 50)
  })() : undefined
  const one = config === "lean" ? leanBound(hang, 50) : jfloor ? jfloor : once ? execute : Effect.provide(execute, ctx)
  const now = () => Number(process.hrtime.bigint()) / 1e6
  const us = (a, b) => (b.user + b.system - a.user - a.system)
  const burst = async () => {
    globalThis.gc?.()
    const profiler = new v8.GCProfiler(); profiler.start()
    const h0 = v8.getHeapStatistics().used_heap_size
    const out = []; const c0 = process.cpuUsage()
    const all = Effect.forEach(Array.from({ length: N }), () => Effect.suspend(() => { const t0 = now(); return Effect.map(Effect.either(one), () => { out.push(now() - t0 - 50) }) }), { concurrency: "unbounded", discard: true })
    await Effect.runPromise(once ? Effect.provide(all, ctx) : all)
    const c1 = process.cpuUsage()
    let freed = 0
    for (const s of profiler.stop()?.statistics ?? []) freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize
    out.sort((a, b) => a - b)
    return [us(c0, mark) / N, us(mark, c1) / N, out[Math.ceil(0.99 * N) - 1], (v8.getHeapStatistics().used_heap_size - h0 + freed) / N / 1024]
  }
  await burst(); await burst()
  const rs = []; for (let i = 0; i < Number(process.env.BURSTS ?? 5); i++) rs.push(await burst())
  console.log(JSON.stringify([0, 1, 2, 3].map((k) => med(rs.map((r) => r[k])))))
} else {
  const R = Number(process.argv[2]); const names = process.argv.slice(3)
  const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
  const res = Object.fromEntries(names.map((n) => [n, []])); const l0 = load()
  for (let r = 0; r < R; r++) {
    const rot = names.map((_, k) => names[(k + r) % names.length])
    for (const n of r % 2 ? rot.reverse() : rot) res[n].push(JSON.parse(execFileSync(process.execPath, ["--expose-gc", here, "child", n], { encoding: "utf8" }).trim().split("\n").at(-1)))
  }
  const fmt = (xs, d) => `${med(xs).toFixed(d)} [${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}]`
  console.log(`${R} rounds, one child per configuration per round, load ${l0} → ${load()}; medians over children [min–max]`)
  for (const n of names) console.log(`${n.split("@")[0].padEnd(8)} start µs ${fmt(res[n].map((x) => x[0]), 0).padEnd(16)} expiry µs ${fmt(res[n].map((x) => x[1]), 0).padEnd(16)} p99 ms ${fmt(res[n].map((x) => x[2]), 1).padEnd(22)} KB/req ${fmt(res[n].map((x) => x[3]), 2)}`)
}
