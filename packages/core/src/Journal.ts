/**
 * The journal: every decision, with the exact inputs the planner consumed, so that afterwards a person can
 * say why each attempt was made — and prove it by replaying the decisions byte for byte.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { Endpoint } from "./Catalog.js"
import type { Contract } from "./Contract.js"
import type { AttemptRecord, Completion, Terminal } from "./Outcome.js"
import type { Decision, Snapshot, Spec } from "./Planner.js"

/**
 * What a journal learns when a request starts.
 *
 * @since 0.1.0
 */
export interface Header {
  readonly requestId: string
  readonly contract: Contract
  /** The catalog entries consulted, with their prices pinned as used. */
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly spec: Spec
}

/**
 * Receives one request's decisions as they are made. `decision` and `attempt` are synchronous appends;
 * encoding happens once, at `end`.
 *
 * @since 0.1.0
 */
export interface Writer {
  readonly decision: (snapshot: Snapshot, decision: Decision) => void
  readonly attempt: (record: AttemptRecord) => void
  readonly end: (outcome: Completion | Terminal | { readonly _tag: "Interrupted" }) => Effect.Effect<void>
}

/**
 * The journal service.
 *
 * @since 0.1.0
 */
export class Journal extends Context.Tag("@rein/core/Journal")<Journal, {
  readonly begin: (header: Header) => Effect.Effect<Writer>
}>() {}
