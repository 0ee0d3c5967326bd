/**
 * The PostgreSQL side of the CLI (`@rein/postgres`, `@effect/sql-pg` and `pg`), imported only when a command
 * uses a `postgres://` store (`rein batch --store`, `rein worker`, `rein status`) or a `--budget-*` flag:
 * every other command starts without loading it (≈ 60 modules, ≈ 0.2 s of CPU). Nothing else in the CLI
 * imports these packages but for types.
 *
 * @internal
 */
import { Effect } from "effect"

/**
 * The modules, imported on first use. A module that cannot load is a defect, as a failed static import
 * would have been.
 *
 * @internal
 */
export const load = Effect.promise(async () => {
  const [sqlPg, postgres] = await Promise.all([import("@effect/sql-pg"), import("@rein/postgres")])
  return {
    PgClient: sqlPg.PgClient,
    Migrations: postgres.Migrations,
    PgBatchRun: postgres.PgBatchRun,
    PgWorker: postgres.PgWorker
  }
})
