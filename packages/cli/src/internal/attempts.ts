/**
 * Attempt records as a table for people.
 *
 * @internal
 */
import type { Outcome } from "@rein/core"
import { num, table } from "./format.js"

/** @internal */
export const attemptsTable = (attempts: ReadonlyArray<Outcome.AttemptRecord>, indent = "  "): string =>
  table([
    ["call", "attempt", "endpoint", "role", "status", "failure", "start…end ms", "timeout ms", "backoff ms", "charged"],
    ...attempts.map((a) => [
      String(a.call),
      String(a.attempt),
      a.endpoint,
      a.role,
      a.status,
      a.failure === null ?
        "-" :
        `${a.failure}${a.code !== null && a.code !== a.failure ? ` (${a.code})` : ""}${
          a.retryAfterMillis === null ? "" : `, Retry-After ${num(a.retryAfterMillis)} ms`
        }`,
      `${num(Math.round(a.startMillis))}…${num(Math.round(a.endMillis))}`,
      num(Math.round(a.timeoutMillis)),
      num(Math.round(a.backoffMillis)),
      `cost ${num(a.charged.cost)} / ${a.charged.tokens} tokens`
    ])
  ], indent)
