/**
 * The `rein` command: its subcommands, and the translation of every way it can end into an exit code.
 * Bad input is a message on stderr and exit 2 (never a stack trace); an unknown flag or a required option left
 * out is named before `@effect/cli` parses (with the command's `--help`), other usage errors `@effect/cli`
 * prints itself; a defect is one line and exit 4.
 *
 * @since 0.1.0
 */
import { Command, HelpDoc, ValidationError } from "@effect/cli"
import type { CliApp } from "@effect/cli"
import { Cause, Console, Effect, FiberRef, HashSet, Logger, Option } from "effect"
import * as BatchCommand from "./BatchCommand.js"
import * as Distributed from "./Distributed.js"
import * as ExitCode from "./ExitCode.js"
import * as Explain from "./Explain.js"
import * as Argv from "./internal/argv.js"
import * as Help from "./internal/help.js"
import * as Password from "./internal/password.js"
import * as Status from "./internal/status.js"
import { version as internalVersion } from "./internal/version.js"
import * as Plan from "./Plan.js"
import * as Replay from "./Replay.js"
import * as Run from "./Run.js"
import * as Simulate from "./Simulate.js"

/**
 * The version `rein --version` prints.
 *
 * @example
 * ```ts
 * import { Cli } from "@rein/cli"
 *
 * Cli.version // "0.1.0"
 * ```
 * @since 0.1.0
 * @category running
 */
export const version: string = internalVersion

const root = Command.make("rein", {}, () =>
  Effect.zipRight(
    Console.error(
      "rein: choose a command: plan, run, replay, explain, simulate, batch, worker, status (see rein --help)"
    ),
    Status.exitWith(ExitCode.usage)
  )).pipe(
    Command.withDescription(
      "Keep every LLM call inside one deadline, one budget and one attempt policy — plan, run, replay, explain, " +
        "simulate, batch, worker, status"
    )
  )

/**
 * The root command with its subcommands.
 *
 * @example
 * ```ts
 * import { Cli } from "@rein/cli"
 *
 * Cli.command // rein plan | run | replay | explain | simulate | batch
 * ```
 * @since 0.1.0
 * @category commands
 */
export const command = root.pipe(
  Command.withSubcommands([
    Plan.command,
    Run.command,
    Replay.command,
    Explain.command,
    Simulate.command,
    BatchCommand.command,
    Distributed.workerCommand,
    Distributed.statusCommand
  ])
)

/** Every command's flags, as the command line is checked against them before parsing. @internal */
export const commandFlags: ReadonlyArray<Argv.Flags> = [
  Argv.flagsOf(Plan.command),
  Argv.flagsOf(Run.command),
  Argv.flagsOf(Replay.command),
  Argv.flagsOf(Explain.command),
  Argv.flagsOf(Simulate.command),
  Argv.flagsOf(BatchCommand.command),
  Argv.flagsOf(Distributed.workerCommand),
  Argv.flagsOf(Distributed.statusCommand)
]

const cli = Command.run(command, {
  name: "rein",
  version,
  footer: HelpDoc.p(ExitCode.help)
})

// Effect's console loggers (the default one, and the pretty one NodeRuntime.runMain puts in its place) write to
// stdout; the command's logs (a library's warning, --log-level debug) go to stderr in the same format.
const toStderr = Logger.prettyLogger({ stderr: true })
const stderrLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.locallyWith(
    effect,
    FiberRef.currentLoggers,
    (loggers) =>
      HashSet.has(loggers, Logger.defaultLogger) || HashSet.has(loggers, Logger.prettyLoggerDefault)
        ? HashSet.add(
          HashSet.remove(HashSet.remove(loggers, Logger.defaultLogger), Logger.prettyLoggerDefault),
          toStderr
        )
        : loggers
  )

/**
 * A console whose `error` drops the blank line `@effect/cli` ends a command-line error with (it prints the
 * error as a help paragraph): a bad flag value is one line, as Rein's own input errors are. A secret on the
 * command line (`Password.maskerOf`) is masked in what it prints: `@effect/cli` echoes a stray word whole
 * (`Received unknown argument: 'postgres://u:…@h/db'`).
 */
const oneLineErrors = (inner: Console.Console, mask: (text: string) => string): Console.Console => ({
  ...inner,
  error: (...args) => inner.error(...args.map((a) => (typeof a === "string" ? mask(a.replace(/\n+$/, "")) : a)))
})

const firstLine = (u: unknown): string => {
  const text = u instanceof Error ? u.message : typeof u === "string" ? u : "unexpected failure"
  return text.split("\n")[0] ?? "unexpected failure"
}

/**
 * Runs the command line (`process.argv`: runtime, script, arguments) and gives the exit code. Never
 * fails: every failure has been printed by the time the code is returned.
 *
 * @example
 * ```ts
 * import { NodeContext } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Cli } from "@rein/cli"
 *
 * const code = Cli.main(["node", "rein", "plan", "--catalog", "c.json", "--contract", "k.json"]).pipe(
 *   Effect.provide(NodeContext.layer)
 * )
 * ```
 * @since 0.1.0
 * @category running
 */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<ExitCode.ExitCode, never, CliApp.CliApp.Environment> =>
  Effect.gen(function*() {
    const status = yield* Status.make(ExitCode.ok)
    const mask = Password.maskerOf(argv.slice(2))
    const typo = Argv.check(argv.slice(2), commandFlags) ?? Argv.missing(argv.slice(2), commandFlags)
    if (typo !== undefined) return yield* Effect.as(Console.error(mask(typo)), ExitCode.usage)
    const run = Effect.flatMap(
      Effect.console,
      (c) => Effect.withConsole(cli(argv), oneLineErrors(Help.asksHelp(argv) ? Help.console(c) : c, mask))
    )
    return yield* run.pipe(
      // Logs go to stderr: stdout is the command's output, JSON with --json.
      stderrLogs,
      Effect.provideService(Status.ExitStatus, status),
      Effect.zipRight(status.get),
      Effect.catchAllCause((cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(ExitCode.interrupted)
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          const e = failure.value
          // @effect/cli has already printed what was wrong with the command line.
          if (ValidationError.isValidationError(e)) return Effect.succeed(ExitCode.usage)
          return Effect.as(Console.error(mask(`rein: ${e.message}`)), ExitCode.usage)
        }
        const defect = Cause.squash(cause)
        return Effect.as(Console.error(mask(`rein: internal error: ${firstLine(defect)}`)), ExitCode.internal)
      })
    )
  })
