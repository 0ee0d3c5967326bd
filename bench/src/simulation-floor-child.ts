/**
 * Bench 6's cold floor, run as a fresh process by `simulation.ts` (bench code, not library code):
 *
 *   node --no-allocation-site-pretenuring bench/dist/simulation-floor-child.js <root> <catalog> <contract> <health>
 *
 * (the V8 flag the binary sets for itself, `internal/entry.ts`; `<health>` is the scenario's
 * `Scenario.healthConfig` as JSON, its durations in milliseconds). It takes the process's CPU time (user + system,
 * every thread) before it loads anything — node's own start — then loads Rein, Effect and the CLI's virtual
 * scheduler, and runs the bare `Rein.execute` hour of `simulation-floors.ts` once, cold: no code of it has run
 * in this process before, as in the binary. One line on stdout: `{"startMicros":…,"hourMicros":…}`. Their sum
 * is what the binary cannot go below on this machine: it starts the same node and runs at least these requests
 * on the same clock, for the first time in its process (module loading, the inputs and the report excluded).
 */
import type { Health } from "@rein/core"

const startUsage = process.cpuUsage()
const [root, catalogFile, contractFile, health] = process.argv.slice(2) as [string, string, string, string]
const { readFileSync } = await import("node:fs")
const { join } = await import("node:path")
const { Either } = await import("effect")
const { Catalog, Contract } = await import("@rein/core")
const { coldReinHour } = await import("./simulation-floors.js")
const readJson = (file: string): unknown => JSON.parse(readFileSync(join(root, file), "utf8"))
const run = await coldReinHour(root, {
  catalog: Either.getOrThrow(Catalog.decode(readJson(catalogFile))),
  contract: Either.getOrThrow(Contract.decode(readJson(contractFile))),
  health: JSON.parse(health) as Partial<Health.Config>
})
const before = process.cpuUsage()
await run()
const hour = process.cpuUsage(before)
process.stdout.write(
  `${JSON.stringify({ startMicros: startUsage.user + startUsage.system, hourMicros: hour.user + hour.system })}\n`
)
