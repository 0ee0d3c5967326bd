// Resuming a JSONL artifact of N records in memory: `Resume.open` under a policy, from each build, in child
// processes (builds alternated). Prints per child the peak live heap while opening (a full GC, then heapUsed,
// every 5 ms), the live heap once open (a full GC with the session held: what the run keeps), the peak RSS, the
// CPU time of the open (the sampling GCs included: `NOGC=1` for CPU time, peak then with garbage); medians at the end, with the load.
//
//   node bench/ab/resume-heap.mjs <dist>[,<dist>…] [records] [rounds] [policy] [failures %]
//
// A dist is a build of packages/batch (`packages/batch/dist`, or an older one copied beside it: dist-base).
import { spawnSync } from "node:child_process"
import { createWriteStream, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const require = createRequire(resolve("packages/batch/package.json"))
const load = (name) => import(pathToFileURL(require.resolve(name)).href)
const [distsArg, nArg = "200000", roundsArg = "3", policy = "reuse-successes", failArg = "0", child] = process.argv
  .slice(2)
const dists = distsArg.split(",").map((d) => resolve(d))
const identity = {
  provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7", extra: {}
}

if (child !== undefined) {
  const { Effect } = await load("effect")
  const { NodeFileSystem } = await load("@effect/platform-node")
  const { JsonlStore, Resume } = await import(pathToFileURL(`${dists[0]}/index.js`).href)
  let peak = 0
  const sample = () => {
    if (process.env.NOGC === undefined) globalThis.gc()
    peak = Math.max(peak, process.memoryUsage().heapUsed)
  }
  const timer = process.env.NOGC === undefined ? setInterval(sample, 5) : undefined
  const cpu = process.cpuUsage()
  let used
  let held = 0
  const size = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const session = yield* Resume.open({ identity, policy })
    used = process.cpuUsage(cpu)
    clearInterval(timer)
    sample()
    globalThis.gc()
    held = process.memoryUsage().heapUsed
    return session.index.size
  })).pipe(Effect.provide(JsonlStore.layer({ path: child })), Effect.provide(NodeFileSystem.layer)))
  process.stdout.write(JSON.stringify({
    size,
    peakMB: peak / 2 ** 20,
    heldMB: held / 2 ** 20,
    rssMB: process.resourceUsage().maxRSS / 1024,
    cpuS: (used.user + used.system) / 1e6
  }))
  process.exit(0)
}

const { Fingerprint } = await import(pathToFileURL(`${dists[0]}/index.js`).href)
const n = Number(nArg)
const failures = Number(failArg) / 100
const file = join(tmpdir(), `resume-heap-${process.pid}.jsonl`)
const out = createWriteStream(file)
const fp = Fingerprint.identity(identity)
out.write(JSON.stringify({
  kind: "manifest", schemaVersion: 1, identity, identityFingerprint: fp, createdAt: new Date(0).toISOString(),
  packageVersion: "0.1.0"
}) + "\n")
const hex = (i, salt) => `sha256:${(salt + i).toString(16).padStart(64, "0")}`
for (let i = 0; i < n; i++) {
  const failed = (i % 100) < failures * 100
  const line = JSON.stringify({
    kind: "item", itemId: `item-${i}`, index: i, promptFingerprint: hex(i, 1e9), inputFingerprint: hex(i, 2e9),
    identityFingerprint: fp, outcome: failed ? "failure" : "success", category: failed ? "rate_limited" : "ok",
    reusable: true, usage: { inputTokens: 900, outputTokens: 120 }, cost: 0.00055, attempts: 1,
    endpoint: "openai/mini", durationMillis: 840,
    ...(failed ? { error: { _tag: "RateLimited", attempts: [] } } : { result: `{"total": ${i}.5, "ok": true}` })
  }) + "\n"
  if (!out.write(line)) await new Promise((r) => out.once("drain", r))
}
await new Promise((r) => out.end(r))

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rows = dists.map(() => [])
console.log(`records ${n}, policy ${policy}, failures ${failArg}%, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (let round = 0; round < Number(roundsArg); round++) {
  dists.forEach((dist, i) => {
    const r = spawnSync(process.execPath, [
      "--expose-gc", "--max-old-space-size=8192", process.argv[1], dist, nArg, roundsArg, policy, failArg, file
    ], { encoding: "utf8", env: process.env })
    if (r.status !== 0) throw new Error(r.stderr)
    const m = JSON.parse(r.stdout)
    rows[i].push(m)
    console.log(`round ${round} ${dist}: ${JSON.stringify(m)} load ${loadavg()[0].toFixed(2)}`)
  })
}
if (process.env.KEEP === undefined) rmSync(file)
else console.log(`kept ${file}`)
dists.forEach((dist, i) => {
  const med = (k) => median(rows[i].map((m) => m[k])).toFixed(k === "cpuS" ? 2 : 1)
  console.log(`${dist}: peak ${med("peakMB")} MB, held ${med("heldMB")} MB, rss ${med("rssMB")} MB, cpu ${med("cpuS")} s`)
})
