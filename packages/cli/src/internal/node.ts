/**
 * Runs `Cli.main` on Node and ends the process with its exit code. Loaded by the binary only for a command
 * (not for `--version`).
 *
 * @internal
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import type { Teardown } from "@effect/platform/Runtime"
import { Cause, Effect, Exit, Layer } from "effect"
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

// What `Cli.main` needs (`CliApp.Environment`): a file system, paths and the terminal. Not `NodeContext.layer`,
// which adds a command executor and a worker manager that no command uses: their modules and Node's
// `child_process` (with `net` and `dgram`) were loaded and built at every start.
const environment = Layer.mergeAll(NodePath.layer, NodeTerminal.layer).pipe(Layer.provideMerge(NodeFileSystem.layer))

/** Runs the command line `argv` (runtime, script, arguments) as the process. @internal */
export const start = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(Cli.main(argv).pipe(Effect.provide(environment)), {
    disableErrorReporting: true,
    teardown
  })
