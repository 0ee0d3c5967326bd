/**
 * Listening on a notification channel, shared by every service of a process on one `PgClient`, for as long as
 * one of them lives, whatever happens to the connection.
 *
 * `PgClient.listen` (sql-pg 0.53) shares one connection among every listener of a client, and ending a listener
 * sends `UNLISTEN channel` on it: that deafens every other listener of the channel on the client (a health whose
 * scope closes deafened the others, and one being set up waited for its own ping forever). It never reports a
 * lost connection either; a new listener on a lost connection fails at once, and giving it up (`UNLISTEN` on a
 * dead client) is a defect. So each channel of a client has one subscription, counted by its users and ended
 * when the last one leaves; it fans out to every user; and every end of it (a failure, a defect, or a restart
 * asked for by a user whose own pings go unheard) is logged and followed by a new one, after `retry` unless asked.
 * A restart ends the subscriptions of every channel of the client, and they subscribe again once all have ended:
 * the client drops its listening connection only when no subscription holds it, so a deaf one is left only then.
 *
 * @internal
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { Scope } from "effect"
import { Cause, Deferred, Duration, Effect, Either, Fiber, FiberId, PubSub, Stream } from "effect"

/**
 * Every subscription of one client (all its channels): `PgClient.listen` runs them all on one connection, dropped
 * only when none is left, so a deaf connection is left only by ending all of them together, and subscribing
 * again once every one has ended.
 */
export interface Restart {
  readonly asked: Set<Deferred.Deferred<void>>
  active: number
  draining: Deferred.Deferred<void> | undefined
}

/** Ends every current subscription of the client; each subscribes again at once, once all of them have ended. */
export const restart = (r: Restart): void => {
  if (r.draining !== undefined || r.active === 0) return
  r.draining = Deferred.unsafeMake<void>(FiberId.none)
  for (const asked of r.asked) Deferred.unsafeDone(asked, Effect.void)
}

/** Starts a subscription's turn, or answers what to wait for first (a restart still draining). */
const enter = (r: Restart) =>
  Effect.sync((): Either.Either<Deferred.Deferred<void>, Deferred.Deferred<void>> => {
    if (r.draining !== undefined) return Either.left(r.draining)
    const asked = Deferred.unsafeMake<void>(FiberId.none)
    r.asked.add(asked)
    r.active++
    return Either.right(asked)
  })

const exit = (r: Restart, asked: Deferred.Deferred<void>) =>
  Effect.sync(() => {
    r.asked.delete(asked)
    if (--r.active > 0 || r.draining === undefined) return
    Deferred.unsafeDone(r.draining, Effect.void)
    r.draining = undefined
  })

/** A short account of why something ended, for a log line. */
export const brief = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause)
  if (e instanceof Error) return e.message
  return typeof e === "object" && e !== null && "_tag" in e ? String(e._tag) : String(e)
}

export type Subscribe = (channel: string) => Stream.Stream<string, SqlError>

/**
 * Subscribes to `channel` forever, handing each payload to `onMessage`; never fails, never dies. A failure is
 * logged when it is the first or follows a success: a channel that keeps failing logs once, not every retry.
 */
const listenForever = (
  subscribe: Subscribe,
  channel: string,
  onMessage: (payload: string) => Effect.Effect<unknown>,
  retry: Duration.Duration,
  r: Restart
): Effect.Effect<never> => {
  let failing = false
  return Effect.forever(Effect.gen(function*() {
    const turn = yield* enter(r)
    if (Either.isLeft(turn)) return yield* Deferred.await(turn.left)
    const asked = turn.right
    const ended = yield* subscribe(channel).pipe(
      Stream.interruptWhenDeferred(asked),
      Stream.runForEach((m) => Effect.zipRight(Effect.sync(() => void (failing = false)), onMessage(m))),
      Effect.exit,
      Effect.ensuring(exit(r, asked))
    )
    if (ended._tag === "Failure" && !Cause.isInterruptedOnly(ended.cause)) {
      if (!failing) yield* Effect.logWarning(`@rein/postgres: notifications on ${channel} lost: ${brief(ended.cause)}`)
      failing = true
    } else {
      failing = false
    }
    if (!(yield* Deferred.isDone(asked))) yield* Effect.sleep(retry)
  }))
}

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

const shared = new WeakMap<Subscribe, Client>()
/** Subscriptions start and end one at a time, so that an ending one's `UNLISTEN` never follows a new `LISTEN`. */
const lock = Effect.unsafeMakeSemaphore(1)

const join = (subscribe: Subscribe, channel: string, retry: Duration.Duration) =>
  lock.withPermits(1)(Effect.gen(function*() {
    let client = shared.get(subscribe)
    if (client === undefined) {
      shared.set(
        subscribe,
        client = { channels: new Map(), restart: { asked: new Set(), active: 0, draining: undefined } }
      )
    }
    const byChannel = client.channels
    let s = byChannel.get(channel)
    if (s === undefined) {
      const pubsub = yield* PubSub.unbounded<string>()
      const r = client.restart
      // Forked inside an acquisition (uninterruptible): the subscription itself must stay interruptible.
      const fiber = yield* Effect.forkDaemon(
        Effect.interruptible(listenForever(subscribe, channel, (m) => PubSub.publish(pubsub, m), retry, r))
      )
      s = { users: 0, pubsub, restart: r, fiber }
      byChannel.set(channel, s)
    }
    s.users++
    return s
  }))

const leave = (subscribe: Subscribe, channel: string, s: Shared) =>
  lock.withPermits(1)(Effect.gen(function*() {
    if (--s.users > 0) return
    shared.get(subscribe)?.channels.delete(channel)
    // `UNLISTEN` (bounded: a connection that stopped answering must not hold a scope open).
    yield* Effect.ignore(Effect.timeout(Fiber.interrupt(s.fiber), Duration.seconds(1)))
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
  subscribe: Subscribe,
  channel: string,
  retryAfter: Duration.DurationInput
): Effect.Effect<Channel, never, Scope.Scope> =>
  Effect.gen(function*() {
    const s = yield* Effect.acquireRelease(
      join(subscribe, channel, Duration.decode(retryAfter)),
      (s) => leave(subscribe, channel, s)
    )
    const subscription = yield* PubSub.subscribe(s.pubsub)
    return { messages: Stream.fromQueue(subscription), restart: s.restart }
  })
