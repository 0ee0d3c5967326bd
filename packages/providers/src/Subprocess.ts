/**
 * A one-shot Rein provider that runs a local program per call, on `@effect/platform`'s `Command`. The
 * executable must be an absolute path; it runs without a shell, with an empty environment unless one is
 * given, receives the request as one JSON document on stdin, and must print one JSON document on stdout
 * (`{ "text": …, "usage"?: { "inputTokens", "outputTokens" } }`, or `{ "error": { "code"?, "status"? } }`),
 * decoded by `Schema`; anything else is `malformed_response`. An error's `code` and `status` decide its
 * kind (`Failure.classify`); the code is recorded only when it is a documented vendor code, else as
 * `other` (a program may pass a provider's free text through).
 *
 * Termination is hard and whole: the program leads its own process group, and when the call ends for any
 * reason (success, failure, its own timeout, or Rein interrupting the attempt) the group is sent SIGTERM,
 * given `killGrace` to exit, then sent SIGKILL — grandchildren included. A program that cannot be started
 * is a `transport` failure that was never dispatched.
 *
 * @since 0.1.0
 */
import type { CommandExecutor } from "@effect/platform"
import * as Command from "@effect/platform/Command"
import type { PlatformError } from "@effect/platform/Error"
import { Failure } from "@rein/core"
import type { Provider } from "@rein/core"
import { MAX_TIMER_MILLIS, NonNegativeInt, sleepMillis } from "@rein/core/Input"
import { Chunk, Duration, Effect, Either, Option, Schema, Stream } from "effect"
import * as NodePath from "node:path"
import * as NodeProcess from "node:process"
import { configError } from "./internal/config.js"
import { recordedCode } from "./internal/vendors.js"
import { ProviderConfigError } from "./Transport.js"

/**
 * What the program receives on stdin.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Subprocess } from "@rein/providers"
 *
 * const line = Schema.encodeSync(Schema.parseJson(Subprocess.Input))({
 *   prompt: "hi", model: "m", endpoint: "local/m", attempt: 1, maxOutputTokens: 100
 * })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Input = Schema.Struct({
  prompt: Schema.String,
  system: Schema.optional(Schema.String),
  model: Schema.String,
  endpoint: Schema.String,
  attempt: Schema.Number,
  maxOutputTokens: Schema.Number
})

/**
 * @category models
 * @since 0.1.0
 */
export type Input = typeof Input.Type

/**
 * What the program must print on stdout: an answer, or a structured error.
 *
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Subprocess } from "@rein/providers"
 *
 * Schema.decodeUnknownSync(Subprocess.Output)({ text: "hello", usage: { inputTokens: 3, outputTokens: 1 } })
 * Schema.decodeUnknownSync(Subprocess.Output)({ error: { code: "context_length_exceeded", status: 400 } })
 * ```
 * @category schemas
 * @since 0.1.0
 */
export const Output = Schema.Union(
  Schema.Struct({
    text: Schema.String,
    usage: Schema.optional(Schema.Struct({ inputTokens: NonNegativeInt, outputTokens: NonNegativeInt }))
  }),
  Schema.Struct({
    error: Schema.Struct({
      code: Schema.optional(Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/))),
      status: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(100, 599)))
    })
  })
)

/**
 * @category models
 * @since 0.1.0
 */
export type Output = typeof Output.Type

const decodeOutput = Schema.decodeUnknownEither(Schema.parseJson(Output))

/**
 * Options of the subprocess provider.
 *
 * @example
 * ```ts
 * import type { Subprocess } from "@rein/providers"
 *
 * const options: Subprocess.Options = { executable: "/usr/local/bin/model", env: { MODEL_DIR: "/models" } }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Absolute path of the program. Relative paths are refused (no PATH lookup, no shell). */
  readonly executable: string
  readonly args?: ReadonlyArray<string> | undefined
  /** The program's whole environment. Default: empty — the parent's environment is never passed. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Absolute working directory. Default: the parent's. */
  readonly cwd?: string | undefined
  /** A hard bound on one run, on top of Rein's attempt timeout. Default: none (Rein's bound applies). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Time between SIGTERM and SIGKILL to the process group. Default 100 ms. */
  readonly killGrace?: Duration.DurationInput | undefined
  /** Largest stdout accepted, in bytes; more is `malformed_response`. Default 8 MiB. */
  readonly maxOutputBytes?: number | undefined
}

const PositiveMillis = Schema.Number.pipe(Schema.finite(), Schema.positive())

const OptionsSchema = Schema.Struct({
  executable: Schema.String.pipe(
    Schema.filter((p) => NodePath.isAbsolute(p) || `Expected an absolute path, actual ${JSON.stringify(p)}`)
  ),
  args: Schema.optional(Schema.Array(Schema.String)),
  env: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  cwd: Schema.optional(
    Schema.String.pipe(
      Schema.filter((p) => NodePath.isAbsolute(p) || `Expected an absolute path, actual ${JSON.stringify(p)}`)
    )
  ),
  timeoutMillis: Schema.optional(PositiveMillis),
  killGraceMillis: Schema.optional(PositiveMillis),
  maxOutputBytes: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.positive()))
})

const millisOf = (input: Duration.DurationInput | undefined): number | undefined => {
  if (input === undefined) return undefined
  const d = Duration.decodeUnknown(input)
  return Option.isSome(d) ? Duration.toMillis(d.value) : Number.NaN
}

/**
 * Sends `signal` to the process group led by `pid`. Errors (the group is already gone) are ignored.
 *
 * `@effect/platform`'s Command spawns the program detached, so it leads its own process group, and its
 * `kill` signals the group — but it then awaits the leader's exit without ever escalating, and its scope
 * finalizer leaves the group alone once the leader has exited with 0. A grandchild that ignores SIGTERM
 * or outlives its parent would survive. So termination signals the group directly (`kill(-pid)`), always
 * ending with SIGKILL.
 */
const signalGroup = (pid: number, signal: "SIGTERM" | "SIGKILL"): Effect.Effect<void> =>
  Effect.sync(() => {
    try {
      NodeProcess.kill(-pid, signal)
    } catch {
      // ESRCH: nothing left in the group.
    }
  })

/**
 * `effect`, given up after `millis`: past the longest timer in clamped sleeps (`Input.sleepMillis`), as the live
 * clock never fires a longer timer.
 */
const waitAtMost = (effect: Effect.Effect<void>, millis: number): Effect.Effect<void> =>
  millis <= MAX_TIMER_MILLIS
    ? Effect.asVoid(Effect.timeoutOption(effect, Duration.millis(millis)))
    : Effect.raceFirst(effect, Effect.interruptible(sleepMillis(millis)))

const terminate = (
  process: CommandExecutor.Process,
  graceMillis: number
): Effect.Effect<void> =>
  Effect.gen(function*() {
    yield* signalGroup(process.pid, "SIGTERM")
    // Wait for the leader to go, at most the grace; then SIGKILL whatever is left of the group. Finalizers
    // run uninterruptibly: the wait must be made interruptible or the grace could never cut it short.
    yield* waitAtMost(Effect.interruptible(Effect.ignore(process.exitCode)), graceMillis)
    yield* signalGroup(process.pid, "SIGKILL")
  })

const startFailure = (error: PlatformError): Failure.ProviderFailure =>
  new Failure.ProviderFailure({
    kind: "transport",
    code: `spawn_${error._tag === "SystemError" ? error.reason : "BadArgument"}`,
    dispatched: false
  })

/**
 * The program's structured error. The kind is decided on its code as sent (`Failure.classify`); the code
 * is then recorded only when it is a documented one (the vendor tables, the core classifier's codes),
 * else `other`: the program may pass a provider's free text through (a fragment of the API key, words of
 * the prompt), and the code reaches the journal, the outcome and the spans.
 */
const programFailure = (error: {
  readonly code?: string | undefined
  readonly status?: number | undefined
}): Failure.ProviderFailure => {
  const kind = Failure.classify({ status: error.status, code: error.code })
  return new Failure.ProviderFailure({
    kind,
    code: Failure.normaliseCode({ status: error.status, code: recordedCode(error.code) }, kind),
    dispatched: true,
    ...(error.status !== undefined ? { status: error.status } : {})
  })
}

const TIMEOUT = Failure.fromEvidence({ errno: "ETIMEDOUT", code: "subprocess_timeout" }, { dispatched: true })

/**
 * Builds the provider. Fails with `ProviderConfigError` naming the field when the executable (or cwd) is
 * not an absolute path, or a duration is not finite and positive.
 *
 * @example
 * ```ts
 * import { NodeCommandExecutor, NodeFileSystem } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { Subprocess } from "@rein/providers"
 *
 * const provider = Subprocess.make({
 *   executable: "/usr/local/bin/my-model",
 *   args: ["--json"],
 *   timeout: "20 seconds"
 * }).pipe(Effect.provide(NodeCommandExecutor.layer.pipe(Layer.provide(NodeFileSystem.layer))))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  options: Options
): Effect.Effect<Provider.Provider, ProviderConfigError, CommandExecutor.CommandExecutor> =>
  Effect.gen(function*() {
    const decoded = Schema.decodeUnknownEither(OptionsSchema, { errors: "all" })({
      executable: options.executable,
      args: options.args,
      env: options.env,
      cwd: options.cwd,
      timeoutMillis: millisOf(options.timeout),
      killGraceMillis: millisOf(options.killGrace),
      maxOutputBytes: options.maxOutputBytes
    })
    if (Either.isLeft(decoded)) return yield* configError("Subprocess", decoded.left)
    const config = decoded.right
    const executor = yield* Effect.context<CommandExecutor.CommandExecutor>()
    const graceMillis = config.killGraceMillis ?? 100
    const maxBytes = config.maxOutputBytes ?? 8 * 1024 * 1024

    const command = (input: Input) => {
      const base = Command.make(config.executable, ...(config.args ?? [])).pipe(
        Command.runInShell(false),
        // The environment is exactly what was given: never the parent's.
        Command.env(config.env ?? {}, { extendEnv: false }),
        Command.feed(JSON.stringify(input)),
        Command.stderr("pipe")
      )
      return config.cwd === undefined ? base : Command.workingDirectory(base, config.cwd)
    }

    const run = (input: Input): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> =>
      Effect.scoped(Effect.gen(function*() {
        const process = yield* Effect.mapError(Command.start(command(input)), startFailure)
        // Registered after the start, so it runs before the platform's own finalizer: the whole group
        // is gone by the time the scope is closed, whatever ended the call.
        yield* Effect.addFinalizer(() => terminate(process, graceMillis))
        // stderr is drained (so the program cannot block on a full pipe) and discarded: never recorded.
        yield* Effect.forkScoped(Stream.runDrain(process.stderr))
        const stdout = yield* process.stdout.pipe(
          Stream.runFoldWhile(
            { size: 0, chunks: Chunk.empty<Uint8Array>() },
            (acc) => acc.size <= maxBytes,
            (acc, bytes) => ({ size: acc.size + bytes.length, chunks: Chunk.append(acc.chunks, bytes) })
          ),
          Effect.mapError(() => Failure.fromEvidence({ errno: "EPIPE" }, { dispatched: true }))
        )
        if (stdout.size > maxBytes) {
          return yield* Effect.fail(Failure.fromEvidence({ code: "output_too_large", malformed: true }, {
            dispatched: true
          }))
        }
        const exit = yield* Effect.either(process.exitCode)
        const text = Buffer.concat(Chunk.toReadonlyArray(stdout.chunks)).toString("utf8")
        const output = decodeOutput(text)
        if (Either.isRight(output)) {
          const out = output.right
          if ("error" in out) return yield* Effect.fail(programFailure(out.error))
          if (Either.isRight(exit) && exit.right === 0) {
            return { text: out.text, usage: out.usage ?? "unknown" as const }
          }
        }
        if (Either.isLeft(exit) || exit.right !== 0) {
          // Crashed or killed by a signal without a structured error: the program's fault, retryable.
          const code = Either.isLeft(exit) ? "subprocess_signal" : `subprocess_exit_${exit.right}`
          return yield* Effect.fail(
            new Failure.ProviderFailure({ kind: "server_error", code: code.slice(0, 64), dispatched: true })
          )
        }
        return yield* Effect.fail(Failure.fromEvidence({ code: "malformed_stdout", malformed: true }, {
          dispatched: true
        }))
      })).pipe(Effect.provide(executor))

    const call = (
      request: Provider.CompletionRequest,
      ctx: Provider.AttemptContext
    ): Effect.Effect<Provider.ProviderResponse, Failure.ProviderFailure> => {
      const effect = run({
        prompt: request.prompt,
        ...(request.system !== undefined ? { system: request.system } : {}),
        model: ctx.endpoint.model,
        endpoint: ctx.endpoint.id,
        attempt: ctx.attempt,
        maxOutputTokens: ctx.maxOutputTokens
      })
      const millis = config.timeoutMillis
      return millis === undefined
        ? effect
        : millis <= MAX_TIMER_MILLIS
        ? Effect.timeoutFail(effect, { duration: Duration.millis(millis), onTimeout: () => TIMEOUT })
        : Effect.raceFirst(effect, Effect.interruptible(Effect.zipRight(sleepMillis(millis), Effect.fail(TIMEOUT))))
    }

    return { internalMaxAttempts: 1, call }
  })
