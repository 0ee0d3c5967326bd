/**
 * Listening on a notification channel, shared by every service of a process on one `PgClient`, for as long as
 * one of them lives, whatever happens to the connection.
 *
 * Subscriptions are made on a listening connection of our own (`listenConnection.ts`), one per client, which a
 * restart drops at once. `PgClient.listen` (sql-pg 0.53) shares one connection among every listener of a client,
 * and ending a listener sends `UNLISTEN channel` on it: that deafens every other listener of the channel on the
 * client (a health whose scope closes deafened the others, and one being set up waited for its own ping
 * forever). It never reports a lost connection either; a new listener on a lost connection fails at once, and
 * giving it up (`UNLISTEN` on a dead client) is a defect. So each channel of a client has one subscription,
 * counted by its users and ended when the last one leaves; it fans out to every user; and every end of it (a
 * failure, a defect, or a restart asked for by a user whose own pings go unheard) is followed by a new one,
 * after `retry` unless asked. A restart drops the client's listening connection (its sockets destroyed, so an
 * `UNLISTEN` on a connection that stopped answering fails at once instead of never returning) and ends the
 * subscriptions of every channel of the client, each of which subscribes again at once, on a new connection.
 *
 * The subscriptions run in daemon fibers started by their first user, in a neutral context: no log annotation,
 * log span or parent span of that user (they outlive it, and serve every user alike).
 *
 * @internal
 */
import type { Scope } from "effect"
import {
  Cause,
  Chunk,
  Context,
  Deferred,
  Duration,
  Effect,
  Fiber,
  FiberId,
  FiberRef,
  HashMap,
  List,
  Option,
  PubSub,
  Stream
} from "effect"
import type { Connection } from "./listenConnection.js"

/**
 * Every subscription of one client (all its channels), and its listening connection: a restart drops the
 * connection and ends every subscription on it.
 */
export interface Restart {
  readonly asked: Set<Deferred.Deferred<void>>
  readonly connection: Connection
}

/** Drops the client's listening connection and ends every current subscription; each subscribes again at once. */
export const restart = (r: Restart): void => {
  r.connection.discard()
  for (const asked of r.asked) Deferred.unsafeDone(asked, Effect.void)
}

const enter = (r: Restart) =>
  Effect.sync(() => {
    const asked = Deferred.unsafeMake<void>(FiberId.none)
    r.asked.add(asked)
    return asked
  })

const exit = (r: Restart, asked: Deferred.Deferred<void>) => Effect.sync(() => void r.asked.delete(asked))

/** A short account of why something ended, for a log line. */
export const brief = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  if (e instanceof Error) return e.message
  return typeof e === "object" && e !== null && "_tag" in e ? String(e._tag) : String(e)
}

/**
 * Subscribes to `channel` forever, handing each payload to `onMessage`; never fails, never dies. A failure is
 * logged when it is the first or follows a success: a channel that keeps failing logs once, not every retry.
 */
const listenForever = (
  channel: string,
  onMessage: (payload: string) => Effect.Effect<unknown>,
  retry: Duration.Duration,
  r: Restart
): Effect.Effect<never> => {
  let failing = false
  return Effect.forever(Effect.gen(function*() {
    const asked = yield* enter(r)
    const ended = yield* r.connection.subscribe(channel).pipe(
      Stream.interruptWhenDeferred(asked),
      Stream.runForEach((m) => Effect.zipRight(Effect.sync(() => void (failing = false)), onMessage(m))),
      Effect.exit,
      Effect.ensuring(exit(r, asked))
    )
    // A restart's end (its `UNLISTEN` fails on the dropped connection) was logged by whoever asked for it.
    if (yield* Deferred.isDone(asked)) return
    if (ended._tag === "Failure" && !Cause.isInterruptedOnly(ended.cause)) {
      if (!failing) yield* Effect.logWarning(`@rein/postgres: notifications on ${channel} lost: ${brief(ended.cause)}`)
      failing = true
    } else {
      failing = false
    }
    yield* Effect.sleep(retry)
  }))
}

/**
 * Runs `effect` without the caller's services (it needs none), log annotations, log spans, parent span or metric
 * labels; its logger, clock and tracer stay. A shared fiber started by one user must not report as that user.
 */
const neutral = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  effect.pipe(
    Effect.locally(FiberRef.currentContext, Context.empty()),
    Effect.locally(FiberRef.currentLogAnnotations, HashMap.empty()),
    Effect.locally(FiberRef.currentLogSpan, List.empty()),
    Effect.locally(FiberRef.currentTracerSpanAnnotations, HashMap.empty()),
    Effect.locally(FiberRef.currentTracerSpanLinks, Chunk.empty()),
    Effect.locally(FiberRef.currentMetricLabels, [])
  )

interface Shared {
  users: number
  readonly pubsub: PubSub.PubSub<string>
  readonly restart: Restart
  readonly fiber: Fiber.RuntimeFiber<never>
}

interface Client {
  readonly channels: Map<string, Shared>
  readonly restart: Restart
}

const shared = new WeakMap<Connection, Client>()
/** Subscriptions start and end one at a time, so that an ending one's `UNLISTEN` never follows a new `LISTEN`. */
const lock = Effect.unsafeMakeSemaphore(1)

const join = (connection: Connection, channel: string, retry: Duration.Duration) =>
  lock.withPermits(1)(Effect.gen(function*() {
    let client = shared.get(connection)
    if (client === undefined) {
      shared.set(connection, client = { channels: new Map(), restart: { asked: new Set(), connection } })
    }
    const byChannel = client.channels
    let s = byChannel.get(channel)
    if (s === undefined) {
      const pubsub = yield* PubSub.unbounded<string>()
      const r = client.restart
      // Forked inside an acquisition (uninterruptible): the subscription itself must stay interruptible.
      const fiber = yield* Effect.forkDaemon(
        neutral(Effect.interruptible(listenForever(channel, (m) => PubSub.publish(pubsub, m), retry, r)))
      )
      s = { users: 0, pubsub, restart: r, fiber }
      byChannel.set(channel, s)
    }
    s.users++
    return s
  }))

const leave = (connection: Connection, channel: string, s: Shared) =>
  lock.withPermits(1)(Effect.gen(function*() {
    if (--s.users > 0) return
    shared.get(connection)?.channels.delete(channel)
    // `UNLISTEN` (bounded: a connection that stopped answering must not hold a scope open). When it is not
    // answered in time the connection is dropped (the other channels' subscriptions move to a new one), so that
    // the `UNLISTEN` fails and the subscription's fiber ends rather than waiting on it for good. The wait is made
    // interruptible: this runs in a release, where a timeout could not interrupt it and so would never end.
    const ended = yield* Effect.option(
      Effect.timeout(Effect.interruptible(Fiber.interrupt(s.fiber)), Duration.seconds(1))
    )
    if (Option.isNone(ended)) restart(s.restart)
    yield* PubSub.shutdown(s.pubsub)
  }))

/** This user's view of a channel: its payloads, and a way to ask for a new subscription. */
export interface Channel {
  readonly messages: Stream.Stream<string>
  readonly restart: Restart
}

/**
 * Joins the channel's subscription on this client for the current scope (starting it if this is the first
 * user); a failed subscription is tried again after `retry`.
 */
export const open = (
  connection: Connection,
  channel: string,
  retryAfter: Duration.DurationInput
): Effect.Effect<Channel, never, Scope.Scope> =>
  Effect.gen(function*() {
    const s = yield* Effect.acquireRelease(
      join(connection, channel, Duration.decode(retryAfter)),
      (s) => leave(connection, channel, s)
    )
    const subscription = yield* PubSub.subscribe(s.pubsub)
    return { messages: Stream.fromQueue(subscription), restart: s.restart }
  })
