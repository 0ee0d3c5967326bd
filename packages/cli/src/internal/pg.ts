/**
 * The PostgreSQL side of the CLI (`@rein/postgres`, `@effect/sql-pg` and `pg`), imported only when a command
 * uses a `postgres://` store (`rein batch --store`, `rein worker`, `rein status`) or a `--budget-*` flag:
 * every other command starts without loading it (≈ 60 modules, ≈ 0.2 s of CPU). Nothing else in the CLI
 * imports these packages but for types.
 *
 * @internal
 */
import { Effect } from "effect"
import { InputError } from "../InputError.js"

/**
 * The modules, imported on first use (in the bundle: their code runs then). One that cannot load (a partial
 * install) is a clear `InputError`, one line with no stack trace, as a bad store is.
 *
 * @internal
 */
export const load = Effect.tryPromise({
  try: async () => {
    const [sqlPg, postgres] = await Promise.all([import("@effect/sql-pg"), import("@rein/postgres")])
    return {
      PgClient: sqlPg.PgClient,
      Migrations: postgres.Migrations,
      PgBatchRun: postgres.PgBatchRun,
      PgWorker: postgres.PgWorker
    }
  },
  catch: (e) =>
    new InputError({
      message: `--store: PostgreSQL support could not be loaded (${e instanceof Error ? e.message : String(e)})`
    })
})
