/**
 * The journal file of `--record` (`rein run`, `rein batch`): opened for appending in the command's scope, one
 * line per request, for `rein replay` and `rein explain`.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Journal } from "@rein/core"
import type { Scope } from "effect"
import { Context, Effect } from "effect"
import { InputError } from "../InputError.js"
import { describeReadError, ensureParent } from "./files.js"

/**
 * An opened `--record`: the journal to provide, and why the records could not all be written (`undefined`:
 * all were, or there is no record file). A failed append does not fail the request it records (the call is
 * made and paid for), but the command must not then say the request was recorded.
 *
 * @internal
 */
export interface Opened {
  readonly context: Context.Context<Journal.Journal>
  /** The first append that failed, in a person's words (`no space left on device …`), with how many did. */
  readonly notWritten: Effect.Effect<string | undefined>
}

const nothing: Opened = {
  context: Context.empty() as Context.Context<Journal.Journal>,
  notWritten: Effect.succeed(undefined)
}

/**
 * The journal appending to `path` (created with `mode`, default 0600), or nothing without a path. A file that
 * cannot be opened is an `InputError` naming it; an append that fails is counted in `notWritten`.
 *
 * @internal
 */
export const open = (
  path: string | undefined,
  mode: number | undefined
): Effect.Effect<Opened, InputError, FileSystem.FileSystem | Scope.Scope> =>
  path === undefined ? Effect.succeed(nothing) : Effect.gen(function*() {
    yield* ensureParent(path)
    const fs = yield* FileSystem.FileSystem
    const file = yield* fs.open(path, { flag: "a", mode: mode ?? 0o600 }).pipe(
      Effect.mapError((e) =>
        new InputError({ message: `cannot open the record file ${path}: ${describeReadError(e)}` })
      )
    )
    const lock = yield* Effect.makeSemaphore(1)
    const encoder = new TextEncoder()
    let failed = 0
    let first: string | undefined
    const journal = Journal.make((record) =>
      lock.withPermits(1)(file.writeAll(encoder.encode(`${Journal.encode(record)}\n`))).pipe(
        Effect.catchAll((e) =>
          Effect.sync(() => {
            failed += 1
            first ??= describeReadError(e)
          })
        )
      )
    )
    return {
      context: Context.make(Journal.Journal, journal),
      notWritten: Effect.sync(() =>
        first === undefined
          ? undefined
          : `${failed === 1 ? "a record" : `${failed} records`} could not be written to ${path}: ${first}`
      )
    }
  })
