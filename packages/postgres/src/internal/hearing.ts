/**
 * Whether a listener still hears its channel. PostgreSQL's listener does not report a connection that stopped
 * passing notifications while it stays open (a partition, a stalled server, a proxy that drops them), so each
 * listener sends itself a numbered ping on its channel (`pg_notify` in a statement) at each beat of its own
 * (`PgHealth`'s heartbeat, `PgRunLimits`'s poll): a ping sent at one beat and not heard back by the next means
 * the listening connection is deaf, and the channel's subscription is made again on a new connection
 * (`listener.restart`). The caller's poll covers meanwhile, so nothing is more than its poll behind.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import { Deferred, Effect, Option, Schema } from "effect"
import * as L from "./listener.js"

export interface Hearing {
  /** This listener's pings carry it (unique to the instance: a label and a random suffix). */
  readonly id: string
  readonly channel: L.Channel
  /** The notification channel's name, for `pg_notify`. */
  readonly name: string
  /** What listens, for a log line ("health", "run limits"). */
  readonly what: string
  /** Done when this listener has heard its own ping: it is listening. */
  readonly heard: Deferred.Deferred<void>
  /** The last ping sent (at a beat) and the last one heard back. */
  readonly pings: { sent: number; heard: number }
}

export const make = (id: string, name: string, channel: L.Channel, what: string): Effect.Effect<Hearing> =>
  Effect.map(Deferred.make<void>(), (heard) => ({ id, channel, name, what, heard, pings: { sent: 0, heard: 0 } }))

const decodePing = Schema.decodeUnknownOption(
  Schema.parseJson(Schema.Struct({ ping: Schema.String, n: Schema.optional(Schema.Number) }))
)

/**
 * Sends ping `n`. Through `pg_notify` in a statement: `PgClient.notify` (sql-pg 0.53) sends `NOTIFY channel, $1`,
 * which PostgreSQL refuses (no parameters there).
 */
export const ping = (sql: SqlClient.SqlClient, h: Hearing, n: number) =>
  Effect.asVoid(sql`SELECT pg_notify(${h.name}, ${JSON.stringify({ ping: h.id, n })})`)

/** Notes a payload heard on the channel: whether it was a ping (this listener's or another's: not a message). */
export const note = (h: Hearing, raw: string): boolean => {
  const pinged = decodePing(raw)
  if (Option.isNone(pinged)) return false
  if (pinged.value.ping === h.id) {
    Deferred.unsafeDone(h.heard, Effect.void)
    h.pings.heard = Math.max(h.pings.heard, pinged.value.n ?? 0)
  }
  return true
}

/**
 * One beat: a ping sent at the previous beat and not heard back since means the listening connection is gone
 * (the subscription is made again, and pings go on from the next beat); otherwise sends the next ping.
 */
export const beat = (sql: SqlClient.SqlClient, h: Hearing) =>
  Effect.suspend(() => {
    if (h.pings.sent > h.pings.heard) {
      h.pings.heard = h.pings.sent
      L.restart(h.channel.restart)
      return Effect.logWarning(`@rein/postgres: ${h.what} notifications not heard for a beat; listening again`)
    }
    const n = h.pings.sent + 1
    return Effect.tap(ping(sql, h, n), () => Effect.sync(() => void (h.pings.sent = n)))
  })
