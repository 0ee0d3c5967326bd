// The cost of PgRunLimits's poll, this checkout's build against another's (its ping on the channel at each poll):
// CPU of this process per poll while one instance sits idle, polling every 20 ms for 3 s, in separate processes,
// interleaved, one PostgreSQL (started once, from the first root's TestServer). Medians, the listening
// connections made again (a ping not heard back within a poll), and the load beside.
//
//   node bench/ab/ab-runlimits-poll.mjs <other root> [rounds]
import { spawnSync } from "node:child_process"
import { loadavg } from "node:os"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [otherArg, roundsArg = "5", child] = process.argv.slice(2)
const POLL = 20
const WINDOW = 3_000

if (child !== undefined) {
  // Child: `child` is the database url; measure one idle instance of `otherArg`'s build.
  const at = (p) => import(pathToFileURL(join(otherArg, p)).href)
  const { PgRunLimits } = await at("packages/postgres/dist/index.js")
  const { PgClient } = await at("packages/postgres/node_modules/@effect/sql-pg/dist/esm/index.js")
  const { Effect, Redacted } = await at("packages/postgres/node_modules/effect/dist/esm/index.js")
  const program = Effect.scoped(Effect.gen(function*() {
    yield* PgRunLimits.make({ concurrency: 1 }, { name: `poll-${process.pid}`, pollMillis: POLL })
    yield* Effect.sleep(500)
    const before = process.cpuUsage()
    yield* Effect.sleep(WINDOW)
    const used = process.cpuUsage(before)
    return (used.user + used.system) / (WINDOW / POLL)
  })).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(child), maxConnections: 2 })))
  process.stdout.write(`RESULT ${await Effect.runPromise(program)}\n`)
  process.exit(0)
}

const roots = [resolve("."), resolve(otherArg)]
const here = (p) => import(pathToFileURL(join(roots[0], p)).href)
const { TestServer } = await here("packages/postgres/dist/testing.js")
const { Effect } = await here("packages/postgres/node_modules/effect/dist/esm/index.js")
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const server = yield* TestServer.start
  const per = roots.map(() => [])
  const restarts = roots.map(() => 0)
  for (let r = 0; r < Number(roundsArg); r++) {
    for (const [i, root] of (r % 2 === 0 ? roots : [...roots].reverse()).entries()) {
      const out = spawnSync(process.execPath, [process.argv[1], root, "1", server.url], { encoding: "utf8" })
      per[roots.indexOf(root)].push(Number(/RESULT (\S+)/.exec(out.stdout)?.[1]))
      restarts[roots.indexOf(root)] += out.stdout.split("listening again").length - 1
      void i
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  for (const [i, root] of roots.entries()) {
    console.log(`${root}: CPU per poll µs median ${median(per[i]).toFixed(1)} (${per[i].map((x) => x.toFixed(0)).join(" ")}), ${restarts[i]} restarts`)
  }
  console.log(`load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
})))
