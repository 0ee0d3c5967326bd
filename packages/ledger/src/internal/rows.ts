/**
 * The store's rows: how executions and receipts are read back (decoded, so that a row the schema would not
 * accept is a store failure, not a wrong answer), appended and created, and which failures a store operation
 * passes through typed.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Execution, Receipt, type State } from "../Execution.js"
import {
  ExecutionNotFound,
  IllegalTransition,
  LeaseHeld,
  LeaseLost,
  LedgerStoreError,
  StateConflict
} from "../LedgerError.js"

/** @internal */
export interface ExecutionRow {
  readonly id: string
  readonly organisation: string
  readonly connection: string
  readonly operation: string
  readonly origin: string
  readonly idempotency_key: string | null
  readonly request_digest: string
  readonly state: string
  readonly code: string
  readonly confirmation: string | null
  readonly created_at: number
  readonly updated_at: number
}

/** @internal */
export interface ReceiptRow {
  readonly execution_id: string
  readonly seq: number
  readonly kind: string
  readonly from_state: string | null
  readonly to_state: string
  readonly code: string
  readonly source: string
  readonly digest: string | null
  readonly refers_to: number | null
  readonly at: number
}

const decodeExecution = Schema.decodeUnknown(Execution)
const decodeReceipt = Schema.decodeUnknown(Receipt)

/** @internal */
export const toExecution = (row: ExecutionRow) =>
  decodeExecution({
    id: row.id,
    organisation: row.organisation,
    connection: row.connection,
    operation: row.operation,
    origin: row.origin,
    idempotencyKey: row.idempotency_key,
    requestDigest: row.request_digest,
    state: row.state,
    code: row.code,
    confirmation: row.confirmation,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  })

/** @internal */
export const toReceipt = (row: ReceiptRow) =>
  decodeReceipt({
    executionId: row.execution_id,
    seq: row.seq,
    kind: row.kind,
    from: row.from_state,
    to: row.to_state,
    code: row.code,
    source: row.source,
    digest: row.digest,
    refersTo: row.refers_to,
    at: row.at
  })

type Known = IllegalTransition | StateConflict | ExecutionNotFound | LeaseHeld | LeaseLost | LedgerStoreError
const isKnown = (error: unknown): error is Known =>
  error instanceof IllegalTransition || error instanceof StateConflict || error instanceof ExecutionNotFound ||
  error instanceof LeaseHeld || error instanceof LeaseLost || error instanceof LedgerStoreError

/**
 * Typed ledger errors pass through; anything else (SQL errors, rows that do not decode) becomes a
 * LedgerStoreError naming the operation. Either way the transaction has been rolled back.
 *
 * @internal
 */
export const wrap = <A, E, R>(operation: string, effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(
    effect,
    (error): Extract<E, Known> | LedgerStoreError =>
      isKnown(error) ? error as Extract<E, Known> : new LedgerStoreError({ operation, cause: error })
  )

/** For composite writes whose inner steps cannot legitimately conflict: any failure is a store failure. @internal */
export const wrapAll = <A, E, R>(operation: string, effect: Effect.Effect<A, E, R>) =>
  Effect.mapError(
    effect,
    (error) => error instanceof LedgerStoreError ? error : new LedgerStoreError({ operation, cause: error })
  )

/** The row statements a store operation composes. @internal */
export interface Rows extends ReturnType<typeof make> {}

/** @internal */
export const make = (sql: SqlClient.SqlClient) => {
  const selectExecution = (organisation: string, id: string) =>
    Effect.gen(function*() {
      const rows = yield* sql<ExecutionRow>`SELECT * FROM ledger_executions
      WHERE id = ${id} AND organisation = ${organisation}`
      const row = rows[0]
      if (row === undefined) return yield* new ExecutionNotFound({ executionId: id })
      return yield* toExecution(row)
    })

  const appendReceipt = (receipt: {
    readonly executionId: string
    readonly kind: "transition" | "evidence"
    readonly from: State | null
    readonly to: State
    readonly code: string
    readonly source: Receipt["source"]
    readonly digest: string | null
    readonly refersTo: number | null
    readonly at: number
  }) =>
    Effect.flatMap(
      sql<ReceiptRow>`INSERT INTO ledger_receipts
      (execution_id, seq, kind, from_state, to_state, code, source, digest, refers_to, at)
      VALUES (${receipt.executionId},
        (SELECT COALESCE(MAX(seq), 0) + 1 FROM ledger_receipts WHERE execution_id = ${receipt.executionId}),
        ${receipt.kind}, ${receipt.from}, ${receipt.to}, ${receipt.code}, ${receipt.source}, ${receipt.digest},
        ${receipt.refersTo}, ${receipt.at})
      RETURNING *`,
      (rows) => toReceipt(rows[0]!)
    )

  const insertCreated = (row: {
    readonly id: string
    readonly organisation: string
    readonly connection: string
    readonly operation: string
    readonly origin: string
    readonly idempotencyKey: string | null
    readonly requestDigest: string
    readonly at: number
  }) =>
    Effect.zipRight(
      sql`INSERT INTO ledger_executions
      (id, organisation, connection, operation, origin, idempotency_key, request_digest, state, code,
       confirmation, created_at, updated_at)
      VALUES (${row.id}, ${row.organisation}, ${row.connection}, ${row.operation}, ${row.origin},
        ${row.idempotencyKey}, ${row.requestDigest}, 'created', 'created', NULL, ${row.at}, ${row.at})`,
      appendReceipt({
        executionId: row.id,
        kind: "transition",
        from: null,
        to: "created",
        code: "created",
        source: "ledger",
        digest: row.requestDigest,
        refersTo: null,
        at: row.at
      })
    )

  return { appendReceipt, insertCreated, selectExecution }
}
