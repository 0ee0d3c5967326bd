#!/usr/bin/env node
/**
 * The `rein` binary. `rein --version` is answered at once, from a module with no imports; every other
 * command line loads the command tree and runs `Cli.main` on Node (`internal/node.ts`), ending the process
 * with its exit code. Start-up is most of a short command's time, so nothing is loaded that the command at
 * hand does not need, and the command tree is loaded from its bundle (`pnpm build`) when that is current
 * (`internal/entry.ts`).
 *
 * Before the command tree is compiled, V8's allocation-site pretenuring is turned off for this process
 * (`internal/entry.ts`: the simulation's CPU is ~13% less without it; the library itself sets no V8 flag,
 * only this process, which is ours).
 *
 * @since 0.1.0
 */
import { version } from "./internal/version.js"

const args = process.argv.slice(2)
if (args.length === 1 && args[0] === "--version") {
  process.stdout.write(`${version}\n`)
} else {
  const { load, tuneV8 } = await import("./internal/entry.js")
  tuneV8()
  const { start } = await load()
  start(process.argv)
}
