/**
 * The durable store of executions, receipts and used nonces, as a service over `@effect/sql`. Every
 * operation is one transaction: a transition, its receipt and any confirmation digest commit together or
 * not at all. Reads are always scoped by organisation.
 *
 * The embedded default is SQLite (`layerSqlite`), whose file is created with mode 0600.
 *
 * @since 0.1.0
 */
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer } from "effect"
import { chmodSync, closeSync, openSync } from "node:fs"
import type { Sha256 } from "./Digest.js"
import { Execution, isLegal, Receipt, type State } from "./Execution.js"
import * as Leases from "./internal/leases.js"
import * as Rows from "./internal/rows.js"
import * as Schema_ from "./internal/schema.js"
import * as Sqlite from "./internal/sqlite.js"
import { immediate } from "./internal/transaction.js"
import type { Guard, Lease } from "./Lease.js"
import {
  ExecutionNotFound,
  IllegalTransition,
  LeaseHeld,
  LeaseLost,
  LedgerConfigError,
  LedgerStoreError,
  type RefusalReason,
  StateConflict
} from "./LedgerError.js"
import { positiveDuration } from "./Operation.js"

/**
 * The identity of a new execution, written as `created → authorised` together with its single-use nonce.
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const key = (b: LedgerStore.Begin) => `${b.organisation}/${b.idempotencyKey}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Begin {
  readonly id: string
  readonly organisation: string
  readonly connection: string
  readonly operation: string
  readonly origin: string
  readonly idempotencyKey: string
  readonly requestDigest: Sha256
  readonly issuer: string
  readonly nonce: string
  readonly authorisationDigest: Sha256
  readonly at: number
}

/**
 * The result of {@link Begin}: a new execution, the existing one for the idempotency key (no nonce is
 * consumed then), or a replayed nonce (nothing is written).
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const isNew = (r: LedgerStore.BeginResult) => r._tag === "Created"
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type BeginResult =
  | { readonly _tag: "Created"; readonly execution: Execution }
  | { readonly _tag: "Existing"; readonly execution: Execution }
  | { readonly _tag: "NonceReplayed" }

/**
 * A refusal to record as `created → refused`. A refused execution claims no idempotency key and no nonce.
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const why = (r: LedgerStore.Refusal) => r.reason
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Refusal {
  readonly id: string
  readonly organisation: string
  readonly connection: string
  readonly operation: string
  readonly origin: string
  readonly requestDigest: Sha256
  readonly reason: RefusalReason
  readonly at: number
}

/**
 * A compare-and-set transition: it applies only if the execution is in `from`, and only if `from → to` is
 * legal. `confirmation` is stored on the execution in the same transaction. `lease` is granted together with
 * `prepared → dispatch_started`; a transition out of `dispatch_started` ends the lease (`leasedTransition`
 * applies one only under a lease condition).
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const show = (t: LedgerStore.Transition) => `${t.from} → ${t.to}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Transition {
  readonly organisation: string
  readonly executionId: string
  readonly from: State
  readonly to: State
  readonly code: string
  readonly source: Receipt["source"]
  readonly digest: Sha256 | null
  readonly refersTo: number | null
  readonly confirmation: Sha256 | null
  readonly at: number
  readonly lease?: Lease | undefined
}

/**
 * A heartbeat's renewal of the lease `token` holds on an execution, to `expiresAt` (epoch milliseconds).
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const show = (r: LedgerStore.Renewal) => `${r.executionId} until ${r.expiresAt}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Renewal {
  readonly organisation: string
  readonly executionId: string
  readonly token: string
  readonly expiresAt: number
}

/**
 * Evidence of a reconciliation attempt that did not resolve an ambiguity. The state stays `ambiguous`.
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const show = (e: LedgerStore.Evidence) => e.code
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Evidence {
  readonly organisation: string
  readonly executionId: string
  readonly code: string
  readonly source: Receipt["source"]
  readonly digest: Sha256 | null
  readonly refersTo: number | null
  readonly at: number
}

/**
 * An execution a previous process left in `dispatch_started` or `ambiguous`.
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const show = (s: LedgerStore.Stranded) => `${s.organisation}/${s.id}`
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Stranded {
  readonly organisation: string
  readonly id: string
  readonly state: State
}

/**
 * What a ledger store does: each member one transaction. The SQL implementation is `layerSql`; another store
 * (a remote database) implements the same members with the same compare-and-set semantics.
 *
 * @example
 * ```ts
 * import type { LedgerStore } from "@rein/ledger"
 *
 * const stranded = (store: LedgerStore.Service) => store.stranded
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export interface Service {
  readonly begin: (begin: Begin) => Effect.Effect<BeginResult, LedgerStoreError>
  readonly refuse: (refusal: Refusal) => Effect.Effect<Execution, LedgerStoreError>
  readonly transition: (
    transition: Transition
  ) => Effect.Effect<Receipt, IllegalTransition | StateConflict | ExecutionNotFound | LedgerStoreError>
  /** A transition out of `dispatch_started` that applies only under a lease condition (see `Lease.Guard`). */
  readonly leasedTransition: (
    transition: Transition,
    guard: Guard
  ) => Effect.Effect<
    Receipt,
    IllegalTransition | StateConflict | ExecutionNotFound | LeaseHeld | LeaseLost | LedgerStoreError
  >
  /** Extends a lease; `false` if `token` no longer holds it (the execution was taken over or moved on). */
  readonly renew: (renewal: Renewal) => Effect.Effect<boolean, LedgerStoreError>
  readonly evidence: (
    evidence: Evidence
  ) => Effect.Effect<Receipt, StateConflict | ExecutionNotFound | LedgerStoreError>
  readonly execution: (
    organisation: string,
    id: string
  ) => Effect.Effect<Execution, ExecutionNotFound | LedgerStoreError>
  readonly receipts: (
    organisation: string,
    id: string
  ) => Effect.Effect<ReadonlyArray<Receipt>, ExecutionNotFound | LedgerStoreError>
  readonly stranded: Effect.Effect<ReadonlyArray<Stranded>, LedgerStoreError>
}

/**
 * The store service.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { LedgerStore } from "@rein/ledger"
 *
 * const states = Effect.flatMap(LedgerStore.LedgerStore, (store) => store.receipts("acme", "exec-1"))
 * ```
 *
 * @category tags
 * @since 0.1.0
 */
export class LedgerStore extends Context.Tag("@rein/ledger/LedgerStore")<LedgerStore, Service>() {}

// `created → authorised` under the idempotency key, consuming the nonce; the existing execution for the key
// (consuming nothing), or nothing at all for a replayed nonce.
const begin = (
  sql: SqlClient.SqlClient,
  rows: Rows.Rows,
  move: (t: Transition) => Effect.Effect<Receipt, unknown>
) =>
(b: Begin) =>
  Effect.gen(function*() {
    const existing = yield* sql<Rows.ExecutionRow>`SELECT * FROM ledger_executions
      WHERE organisation = ${b.organisation} AND idempotency_key = ${b.idempotencyKey}`
    if (existing[0] !== undefined) {
      return { _tag: "Existing", execution: yield* Rows.toExecution(existing[0]) } as const
    }
    const used = yield* sql`SELECT 1 FROM ledger_nonces WHERE issuer = ${b.issuer} AND nonce = ${b.nonce}`
    if (used.length > 0) return { _tag: "NonceReplayed" } as const
    yield* sql`INSERT INTO ledger_nonces (issuer, nonce, execution_id, used_at)
      VALUES (${b.issuer}, ${b.nonce}, ${b.id}, ${b.at})`
    yield* rows.insertCreated(b)
    yield* move({
      organisation: b.organisation,
      executionId: b.id,
      from: "created",
      to: "authorised",
      code: "authorised",
      source: "authorisation",
      digest: b.authorisationDigest,
      refersTo: null,
      confirmation: null,
      at: b.at
    })
    return { _tag: "Created", execution: yield* rows.selectExecution(b.organisation, b.id) } as const
  })

/**
 * The store on any `@effect/sql` client that speaks SQLite's dialect (for example `@effect/sql-sqlite-node`'s
 * or `@effect/sql-libsql`'s). Creates the schema on construction.
 *
 * @example
 * ```ts
 * import type { SqlClient } from "@effect/sql"
 * import { Layer } from "effect"
 * import { LedgerStore } from "@rein/ledger"
 *
 * const store = (client: Layer.Layer<SqlClient.SqlClient>) => LedgerStore.layerSql.pipe(Layer.provide(client))
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSql: Layer.Layer<LedgerStore, LedgerStoreError, SqlClient.SqlClient> = Layer.effect(
  LedgerStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // Every write transaction takes the write lock up front, so that processes sharing the file wait for
    // each other (up to the busy timeout) instead of failing with `database is locked`.
    const transaction = immediate(sql)
    const leases = Leases.make(sql)
    yield* Rows.wrapAll("migrate", Schema_.migrate(sql))

    const rows = Rows.make(sql)
    const { appendReceipt, insertCreated, selectExecution } = rows

    const moveWith = <E>(t: Transition, step: (t: Transition) => Effect.Effect<unknown, E>) =>
      Effect.gen(function*() {
        const current = yield* selectExecution(t.organisation, t.executionId)
        if (current.state !== t.from) {
          return yield* new StateConflict({ executionId: t.executionId, expected: t.from, actual: current.state })
        }
        if (!isLegal(t.from, t.to)) {
          return yield* new IllegalTransition({ executionId: t.executionId, from: t.from, to: t.to })
        }
        yield* step(t)
        yield* sql`UPDATE ledger_executions
          SET state = ${t.to}, code = ${t.code}, confirmation = COALESCE(${t.confirmation}, confirmation),
            updated_at = ${t.at}
          WHERE id = ${t.executionId} AND organisation = ${t.organisation} AND state = ${t.from}`
        return yield* appendReceipt({ ...t, kind: "transition" })
      })
    const move = (t: Transition) => moveWith(t, leases.step)

    return LedgerStore.of({
      begin: (b) => Rows.wrapAll("begin", transaction(begin(sql, rows, move)(b))),
      refuse: (r) =>
        Rows.wrapAll(
          "refuse",
          transaction(Effect.gen(function*() {
            yield* insertCreated({ ...r, idempotencyKey: null })
            yield* move({
              organisation: r.organisation,
              executionId: r.id,
              from: "created",
              to: "refused",
              code: r.reason,
              source: "authorisation",
              digest: null,
              refersTo: null,
              confirmation: null,
              at: r.at
            })
            return yield* selectExecution(r.organisation, r.id)
          }))
        ),
      transition: (t) => Rows.wrap("transition", transaction(move(t))),
      leasedTransition: (t, guard) => Rows.wrap("transition", transaction(moveWith(t, leases.guardedStep(guard)))),
      renew: (r) => Rows.wrapAll("renew", leases.renew(r.organisation, r.executionId, r.token, r.expiresAt)),
      evidence: (e) =>
        Rows.wrap(
          "evidence",
          transaction(Effect.gen(function*() {
            const current = yield* selectExecution(e.organisation, e.executionId)
            if (current.state !== "ambiguous") {
              return yield* new StateConflict({
                executionId: e.executionId,
                expected: "ambiguous",
                actual: current.state
              })
            }
            return yield* appendReceipt({
              executionId: e.executionId,
              kind: "evidence",
              from: "ambiguous",
              to: "ambiguous",
              code: e.code,
              source: e.source,
              digest: e.digest,
              refersTo: e.refersTo,
              at: e.at
            })
          }))
        ),
      execution: (organisation, id) => Rows.wrap("execution", selectExecution(organisation, id)),
      receipts: (organisation, id) =>
        Rows.wrap(
          "receipts",
          Effect.gen(function*() {
            yield* selectExecution(organisation, id)
            const found = yield* sql<
              Rows.ReceiptRow
            >`SELECT * FROM ledger_receipts WHERE execution_id = ${id} ORDER BY seq`
            return yield* Effect.forEach(found, Rows.toReceipt)
          })
        ),
      stranded: Rows.wrapAll(
        "stranded",
        Effect.map(
          sql<
            { readonly organisation: string; readonly id: string; readonly state: State }
          >`SELECT organisation, id, state
            FROM ledger_executions WHERE state IN ('dispatch_started', 'ambiguous') ORDER BY created_at, id`,
          (rows) => rows.map((r) => ({ organisation: r.organisation, id: r.id, state: r.state }))
        )
      )
    })
  })
)

/**
 * Creates the database file with mode 0600 if it does not exist, and tightens it to 0600 if it does. SQLite
 * gives its `-wal`, `-shm` and `-journal` files the mode of the database file.
 *
 * @example
 * ```ts
 * import { LedgerStore } from "@rein/ledger"
 *
 * const prepare = LedgerStore.createPrivateFile("/var/lib/app/ledger.db")
 * ```
 *
 * @category files
 * @since 0.1.0
 */
export const createPrivateFile = (filename: string): Effect.Effect<void, LedgerStoreError> =>
  Effect.try({
    try: () => {
      // SQLite's in-memory database has no file to protect (and must not become one named ":memory:").
      if (filename === ":memory:" || filename === "") return
      closeSync(openSync(filename, "a", 0o600))
      chmodSync(filename, 0o600)
    },
    catch: (cause) => new LedgerStoreError({ operation: "create_file", cause })
  })

/**
 * The embedded default: the store on a SQLite file (libsql, WAL mode), created with mode 0600. libsql's npm
 * package ships its native binary for each platform, so nothing is compiled at install.
 * Several processes may share the file: each write transaction waits up to `busyTimeout` (default 5 seconds)
 * for the write lock, and a file being migrated by one process is found current by the others.
 *
 * @example
 * ```ts
 * import { LedgerStore } from "@rein/ledger"
 *
 * const store = LedgerStore.layerSqlite({ filename: "/var/lib/app/ledger.db", busyTimeout: "10 seconds" })
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layerSqlite = (options: {
  readonly filename: string
  readonly busyTimeout?: Duration.DurationInput | undefined
}): Layer.Layer<LedgerStore, LedgerStoreError | LedgerConfigError> =>
  layerSql.pipe(
    Layer.provide(
      Layer.unwrapEffect(Effect.gen(function*() {
        const busyTimeout = yield* positiveDuration("busyTimeout", options.busyTimeout ?? "5 seconds")
        yield* createPrivateFile(options.filename)
        return Sqlite.layer({
          filename: options.filename,
          busyTimeoutMillis: Math.ceil(Duration.toMillis(busyTimeout))
        })
      })).pipe(
        Layer.mapError((cause) =>
          cause instanceof LedgerStoreError || cause instanceof LedgerConfigError
            ? cause
            : new LedgerStoreError({ operation: "open", cause })
        )
      )
    )
  )
