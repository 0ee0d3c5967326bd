#!/usr/bin/env node
/**
 * The `rein` binary. `rein --version` is answered at once, from a module with no imports; every other
 * command line loads the command tree and runs `Cli.main` on Node (`internal/node.ts`), ending the process
 * with its exit code. Start-up is most of a short command's time, so nothing is loaded that the command at
 * hand does not need, and the command tree is loaded from its bundle (`pnpm build`) when that is current
 * (`internal/entry.ts`).
 *
 * Before anything is loaded, V8's allocation-site pretenuring is turned off for this process. It allocates the
 * objects of an object or array literal straight into the old generation once a sample of them outlived a
 * young-generation collection; Effect's fibers then make most of their short-lived state there (fiber
 * references, continuations), and each such object keeps every young object it points to alive until the next
 * full collection. The CPU of a simulated hour was ~13% less without it (bench/PROFILE.md, #22). The
 * library itself sets no V8 flag: only this process, which is ours.
 *
 * @since 0.1.0
 */
import { version } from "./internal/version.js"

const args = process.argv.slice(2)
if (args.length === 1 && args[0] === "--version") {
  process.stdout.write(`${version}\n`)
} else {
  const { setFlagsFromString } = await import("node:v8")
  setFlagsFromString("--no-allocation-site-pretenuring")
  const { entry } = await import("./internal/entry.js")
  const { start }: typeof import("./internal/node.js") = await import(entry())
  start(process.argv)
}
