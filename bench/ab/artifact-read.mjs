// PgArtifactStore's read in memory: a run of N records on a TestServer, read by child processes (one per
// measurement, builds alternated): `read` from each build, and `stream` (counting the records) from the first.
// Prints per child the peak live heap (a full GC, then heapUsed, every 5 ms: what was reachable, garbage left
// out), the peak RSS and the CPU time (the GCs included: `NOGC=1` for CPU time, heap then with garbage);
// medians at the end.
//
//   node bench/ab/artifact-read.mjs <dist>[,<dist>…] [records] [rounds]
//
// A dist is a build of packages/postgres (`packages/postgres/dist`, or an older one copied beside it).
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import { loadavg } from "node:os"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const require = createRequire(resolve("packages/postgres/package.json"))
const load = (name) => import(pathToFileURL(require.resolve(name)).href)
const [distsArg, nArg = "200000", roundsArg = "3", child] = process.argv.slice(2)
const dists = distsArg.split(",").map((d) => resolve(d))
const { Effect, Redacted, Stream } = await load("effect")
const { PgClient } = await load("@effect/sql-pg")

if (child !== undefined) {
  const [url, runId, mode] = child.split("|")
  const { PgArtifactStore } = await import(pathToFileURL(`${dists[0]}/index.js`).href)
  let peak = 0
  const sample = () => {
    if (process.env.NOGC === undefined) globalThis.gc()
    peak = Math.max(peak, process.memoryUsage().heapUsed)
  }
  const timer = setInterval(sample, 5)
  const cpu = process.cpuUsage()
  const read = Effect.flatMap(PgArtifactStore.make({ runId }), (store) =>
    mode === "stream"
      ? Effect.scoped(Effect.flatMap(store.stream, (s) => Stream.runCount(s.records)))
      : Effect.map(store.read, (c) => c.records.length))
  const n = await Effect.runPromise(
    Effect.scoped(Effect.provide(read, PgClient.layer({ url: Redacted.make(url) })))
  )
  const used = process.cpuUsage(cpu)
  clearInterval(timer)
  sample()
  process.stdout.write(JSON.stringify({
    n, heapMB: peak / 2 ** 20, rssMB: process.resourceUsage().maxRSS / 1024, cpuS: (used.user + used.system) / 1e6
  }))
  process.exit(0)
}

const { Migrations } = await import(pathToFileURL(`${dists[0]}/index.js`).href)
const { TestServer } = await import(pathToFileURL(`${dists[0]}/testing.js`).href)
const n = Number(nArg)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const server = yield* TestServer.start
  const runId = "big"
  yield* Effect.provide(
    Effect.gen(function*() {
      yield* Migrations.run
      const { SqlClient } = yield* Effect.promise(() => load("@effect/sql"))
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO rein_batch_runs (run_id, manifest, identity_fingerprint, settings)
        VALUES (${runId}, ${JSON.stringify({ kind: "manifest", schemaVersion: 1, identityFingerprint: "sha256:id",
          identity: { provider: "p", model: "m", promptVersion: "1", parserVersion: "1", applicationVersion: "1",
            extra: {} }, createdAt: "2026-01-01T00:00:00.000Z", packageVersion: "0.1.0" })}::jsonb, 'sha256:id', '{}')`
      yield* sql`INSERT INTO rein_batch_records (run_id, item_id, record)
        SELECT ${runId}, 'item-' || i, jsonb_build_object('kind', 'item', 'itemId', 'item-' || i, 'index', i,
          'promptFingerprint', 'sha256:' || md5('p' || i), 'inputFingerprint', 'sha256:' || md5('i' || i),
          'identityFingerprint', 'sha256:id', 'outcome', 'success', 'category', 'ok', 'reusable', true,
          'usage', jsonb_build_object('inputTokens', 900, 'outputTokens', 120), 'cost', 0.00055, 'attempts', 1,
          'durationMillis', 840, 'result', jsonb_build_object('total', i, 'label', md5('r' || i)))
        FROM generate_series(0, ${n - 1}) i`
    }),
    PgClient.layer({ url: Redacted.make(server.url) })
  )
  const runs = [...dists.map((d) => [d, "read"]), [dists[0], "stream"]]
  const results = new Map()
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const [dist, mode] of round % 2 === 0 ? runs : [...runs].reverse()) {
      const out = spawnSync(process.execPath, ["--expose-gc", process.argv[1], dist, nArg, "1", `${server.url}|${runId}|${mode}`], {
        encoding: "utf8"
      })
      const r = JSON.parse(out.stdout)
      const key = `${dist} ${mode}`
      results.set(key, [...(results.get(key) ?? []), r])
      process.stdout.write(`round ${round} ${key}: ${JSON.stringify(r)} load ${loadavg()[0].toFixed(2)}\n`)
    }
  }
  for (const [key, rs] of results) {
    process.stdout.write(`median ${key}: heap ${median(rs.map((r) => r.heapMB)).toFixed(1)} MB, rss ${
      median(rs.map((r) => r.rssMB)).toFixed(1)
    } MB, cpu ${median(rs.map((r) => r.cpuS)).toFixed(2)} s (${rs.length} rounds)\n`)
  }
})))
