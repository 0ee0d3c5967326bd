/** Runs the CLI in process: what `Cli.main(argv)` prints (stdout and stderr, in order) and its exit code. */
import { NodeContext } from "@effect/platform-node"
import { Effect } from "effect"
import { Cli } from "../../src/index.js"

/** What `Cli.main(["node", "rein", ...args])` prints on stderr and stdout, and its exit code. */
export const runCli = (args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = (...parts: ReadonlyArray<unknown>) => Effect.sync(() => lines.push(parts.map(String).join(" ")))
    const console = yield* Effect.console
    const code = yield* Effect.withConsole(
      Cli.main(["node", "rein", ...args]),
      { ...console, error: capture, log: capture, info: capture, warn: capture, unsafe: console.unsafe }
    )
    return { code, out: lines.join("\n") }
  }).pipe(Effect.provide(NodeContext.layer))
