/**
 * SHA-256 digests and canonical JSON: the only form in which the ledger keeps anything derived from a
 * request, a response or evidence.
 *
 * @since 0.1.0
 */
export * as Digest from "./Digest.js"

/**
 * The durable state machine of one effectful execution and the receipts its transitions leave.
 *
 * @since 0.1.0
 */
export * as Execution from "./Execution.js"

/**
 * Signed, single-use authorisation of one effectful call, checked before anything is written.
 *
 * @since 0.1.0
 */
export * as Authorisation from "./Authorisation.js"

/**
 * Effectful operations: closed request schemas, allowed HTTPS origins, one-shot dispatchers, reconcilers.
 *
 * @since 0.1.0
 */
export * as Operation from "./Operation.js"

/**
 * The typed outcomes of ledger calls.
 *
 * @since 0.1.0
 */
export * as LedgerError from "./LedgerError.js"

/**
 * The durable store (SQLite by default): transitions, receipts and nonces, one transaction each.
 *
 * @since 0.1.0
 */
export * as LedgerStore from "./LedgerStore.js"

/**
 * Who owns a running dispatch: a lease renewed while the dispatcher runs, taken over by `recover` only once
 * it has expired, and fencing the dispatcher's result after a takeover.
 *
 * @since 0.1.0
 */
export * as Lease from "./Lease.js"

/**
 * The ledger service: authorise, record, dispatch once, reconcile, recover.
 *
 * @since 0.1.0
 */
export * as Ledger from "./Ledger.js"
