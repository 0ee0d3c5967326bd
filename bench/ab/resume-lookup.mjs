// The CPU time of a resumed run's lookups: `Resume.open` over an artifact (one resume-heap.mjs keeps with KEEP=1),
// then every item looked up in file order, from each build, in child processes (builds alternated); medians, load.
//
//   node bench/ab/resume-lookup.mjs <dist>[,<dist>…] <artifact> [rounds]
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const require = createRequire(resolve("packages/batch/package.json"))
const load = (name) => import(pathToFileURL(require.resolve(name)).href)
const [distsArg, file, roundsArg = "3", child] = process.argv.slice(2)
const dists = distsArg.split(",").map((d) => resolve(d))
const identity = {
  provider: "openai", model: "gpt-4.1-mini", promptVersion: "p4", parserVersion: "j2", applicationVersion: "a7", extra: {}
}
if (child !== undefined) {
  const { Effect, Option } = await load("effect")
  const { NodeFileSystem } = await load("@effect/platform-node")
  const { JsonlStore, Resume } = await import(pathToFileURL(`${dists[0]}/index.js`).href)
  const hex = (i, salt) => `sha256:${(salt + i).toString(16).padStart(64, "0")}`
  const r = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const session = yield* Resume.open({ identity, policy: "reuse-successes" })
    const cpu = process.cpuUsage()
    let found = 0
    for (let i = 0; i < session.index.size; i++) {
      const got = session.lookup(`item-${i}`, hex(i, 2e9))
      if (Option.isSome(Option.isOption(got) ? got : yield* got)) found++
    }
    const used = process.cpuUsage(cpu)
    return { found, cpuS: (used.user + used.system) / 1e6 }
  })).pipe(Effect.provide(JsonlStore.layer({ path: file })), Effect.provide(NodeFileSystem.layer)))
  process.stdout.write(JSON.stringify(r))
  process.exit(0)
}
const rows = dists.map(() => [])
console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (let round = 0; round < Number(roundsArg); round++) {
  dists.forEach((dist, i) => {
    const r = spawnSync(process.execPath, [process.argv[1], dist, file, roundsArg, "child"], { encoding: "utf8" })
    if (r.status !== 0) throw new Error(r.stderr)
    rows[i].push(JSON.parse(r.stdout))
    console.log(`round ${round} ${dist}: ${r.stdout} load ${loadavg()[0].toFixed(2)}`)
  })
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
dists.forEach((dist, i) => console.log(`${dist}: lookups cpu ${median(rows[i].map((m) => m.cpuS)).toFixed(2)} s`))
