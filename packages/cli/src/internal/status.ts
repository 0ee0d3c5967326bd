/**
 * The exit status a command sets (a command's handler returns nothing: `@effect/cli` handlers are
 * `Effect<void>`), read once at the end by the binary.
 *
 * @internal
 */
import { Context, Effect, Ref } from "effect"
import type { ExitCode } from "../ExitCode.js"

/** The exit status service: what the process will end with. @internal */
export interface Service {
  /** Sets the code (the last one set wins). */
  readonly set: (code: ExitCode) => Effect.Effect<void>
  /** The code set so far (`ok` when none was). */
  readonly get: Effect.Effect<ExitCode>
}

/** @internal */
export class ExitStatus extends Context.Tag("@rein/cli/ExitStatus")<ExitStatus, Service>() {}

/** An exit status held in a `Ref`, starting at `initial`. @internal */
export const make = (initial: ExitCode): Effect.Effect<Service> =>
  Effect.map(Ref.make(initial), (ref) => ({ set: (code) => Ref.set(ref, code), get: Ref.get(ref) }))

/** Sets the exit code the process will end with. @internal */
export const exitWith = (code: ExitCode): Effect.Effect<void, never, ExitStatus> =>
  Effect.flatMap(ExitStatus, (status) => status.set(code))
