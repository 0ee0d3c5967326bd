/**
 * Runs `Cli.main` on Node and ends the process with its exit code. Loaded by the binary only for a command
 * (not for `--version`).
 *
 * @internal
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import type { Teardown } from "@effect/platform/Runtime"
import { Cause, Effect, Exit } from "effect"
import * as Cli from "../Cli.js"
import * as ExitCode from "../ExitCode.js"

// A success carries the exit code; the process then ends on its own, so stdout and stderr drain fully.
const teardown: Teardown = (exit, onExit) => {
  if (Exit.isSuccess(exit)) {
    process.exitCode = typeof exit.value === "number" ? exit.value : ExitCode.ok
    onExit(0)
  } else {
    onExit(Cause.isInterruptedOnly(exit.cause) ? ExitCode.interrupted : ExitCode.internal)
  }
}

/** Runs the command line `argv` (runtime, script, arguments) as the process. @internal */
export const start = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(Cli.main(argv).pipe(Effect.provide(NodeContext.layer)), {
    disableErrorReporting: true,
    teardown
  })
