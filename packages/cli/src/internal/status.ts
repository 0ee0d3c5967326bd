/**
 * The exit status a command sets (a command's handler returns nothing: `@effect/cli` handlers are
 * `Effect<void>`), read once at the end by the binary.
 *
 * @internal
 */
import { Context, Effect, Ref } from "effect"
import type { ExitCode } from "../ExitCode.js"

/** @internal */
export class ExitStatus extends Context.Tag("@rein/cli/ExitStatus")<ExitStatus, Ref.Ref<ExitCode>>() {}

/** Sets the exit code the process will end with. @internal */
export const exitWith = (code: ExitCode): Effect.Effect<void, never, ExitStatus> =>
  Effect.flatMap(ExitStatus, (ref) => Ref.set(ref, code))
