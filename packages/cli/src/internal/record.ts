/**
 * The journal file of `--record` (`rein run`, `rein batch`): opened for appending in the command's scope, one
 * line per request, for `rein replay` and `rein explain`.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Journal } from "@rein/core"
import type { Scope } from "effect"
import { Context, Effect, Layer } from "effect"
import { InputError } from "../InputError.js"
import { describeReadError, ensureParent } from "./files.js"

/**
 * The journal appending to `path` (created with `mode`, default 0600), or nothing without a path. A file that
 * cannot be opened is an `InputError` naming it.
 *
 * @internal
 */
export const open = (
  path: string | undefined,
  mode: number | undefined
): Effect.Effect<Context.Context<Journal.Journal>, InputError, FileSystem.FileSystem | Scope.Scope> =>
  path === undefined ? Effect.succeed(Context.empty() as Context.Context<Journal.Journal>) : Effect.zipRight(
    ensureParent(path),
    Effect.flatMap(
      FileSystem.FileSystem,
      (fs) =>
        Layer.build(Journal.layerJsonl(path, { mode }).pipe(Layer.provide(Layer.succeed(FileSystem.FileSystem, fs))))
          .pipe(
            Effect.mapError((e) =>
              new InputError({ message: `cannot open the record file ${path}: ${describeReadError(e)}` })
            )
          )
    )
  )
