/**
 * Whether a listener still hears its channel. PostgreSQL's listener does not report a connection that stopped
 * passing notifications while it stays open (a partition, a stalled server, a proxy that drops them), so each
 * listener sends itself a numbered ping on its channel (`pg_notify` in a statement) at a beat of its own
 * (`PgHealth`'s heartbeat, `PgRunLimits`'s poll), at most one per query timeout: a ping not heard back within
 * the timeout (checked at the first beat past it) means the listening connection is deaf, and the channel's
 * subscription is made again on a new connection (`listener.restart`). The timeout, not one beat, is what a ping
 * is given, and what spaces them: beats much shorter than a round trip on a loaded machine would otherwise drop
 * connections that hear, and cost a statement each. The caller's poll covers meanwhile, so nothing is more than
 * its poll behind.
 *
 * @internal
 */
import type { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Clock, Deferred, Effect, Option, Schema } from "effect"
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
  /** How long a ping is given to come back, in milliseconds (the query timeout). */
  readonly timeoutMillis: number
  /**
   * The last ping sent (at a beat, at `sentAt` on the clock), the last one heard back, and whether any was (until
   * then there is no connection known to hear, so none to drop: pings are sent again, and the poll covers).
   */
  readonly pings: { sent: number; heard: number; sentAt: number; ever: boolean }
}

export const make = (
  id: string,
  channel: { readonly name: string; readonly opened: L.Channel },
  what: string,
  timeoutMillis: number
): Effect.Effect<Hearing> =>
  Effect.map(Deferred.make<void>(), (heard) => ({
    id,
    channel: channel.opened,
    name: channel.name,
    what,
    heard,
    timeoutMillis,
    pings: { sent: 0, heard: 0, sentAt: 0, ever: false }
  }))

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
    h.pings.ever = true
    h.pings.heard = Math.max(h.pings.heard, pinged.value.n ?? 0)
  }
  return true
}

/**
 * One beat (`bound` bounds the ping's statement). At most one ping per timeout is sent (a beat much shorter than the timeout pings at the first beat
 * past it), and the one in flight is waited for until then. Past the timeout, a ping not heard back on a channel
 * heard before means the listening connection went deaf: the subscription is made again, and pings go on from
 * the next beat. A channel never heard yet (its subscription not set up yet, or a path that never passes
 * notifications, such as a pooler in transaction mode) is pinged again, not dropped: a new connection would be
 * no better, and making one each timeout would only cost. So a deaf connection is dropped within two timeouts
 * and a beat of going deaf.
 */
export const beat = <E>(
  sql: SqlClient.SqlClient,
  h: Hearing,
  bound: (ping: Effect.Effect<void, SqlError>) => Effect.Effect<void, E>
): Effect.Effect<void, E> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (h.pings.sent > 0 && now - h.pings.sentAt < h.timeoutMillis) return Effect.void
    if (h.pings.sent === h.pings.heard || !h.pings.ever) return send(bound(ping(sql, h, h.pings.sent + 1)), h, now)
    h.pings.heard = h.pings.sent
    L.restart(h.channel.restart)
    return Effect.logWarning(
      `@rein/postgres: ${h.what} notifications: a ping not heard back within ${h.timeoutMillis} ms; listening again`
    )
  })

/** Sends the next ping (`pinging`), at `now`. */
const send = <E>(pinging: Effect.Effect<void, E>, h: Hearing, now: number) => {
  const n = h.pings.sent + 1
  return Effect.tap(pinging, () =>
    Effect.sync(() => {
      h.pings.sent = n
      h.pings.sentAt = now
    }))
}
