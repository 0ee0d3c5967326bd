/**
 * Progress of `rein batch` on stderr: a live bar redrawn in place on a terminal (at most every 80 ms, and
 * once more at the end), plain lines — one per finished item — otherwise, nothing with `--json`.
 *
 * @internal
 */
import type { Events } from "@rein/batch"
import type { Scope } from "effect"
import { Clock, Console, Effect, Ref, Stream, SubscriptionRef } from "effect"
import { num } from "./format.js"

/** @internal */
export type Mode = "tty" | "plain" | "off"

/** @internal */
export interface Display {
  readonly progress: SubscriptionRef.SubscriptionRef<Events.Progress>
  readonly onEvent: (event: Events.Event) => Effect.Effect<void>
  /** Draws the final state and ends the bar's line. */
  readonly finish: Effect.Effect<void>
}

const INITIAL: Events.Progress = {
  accepted: 0,
  done: 0,
  succeeded: 0,
  failed: 0,
  reused: 0,
  inFlight: 0,
  tokens: 0,
  cost: 0
}

const WIDTH = 28

const bar = (p: Events.Progress, total: number): string => {
  const filled = total === 0 ? WIDTH : Math.min(WIDTH, Math.round((p.done / total) * WIDTH))
  return `[${"█".repeat(filled)}${
    "░".repeat(WIDTH - filled)
  }] ${p.done}/${total}  ok ${p.succeeded}  failed ${p.failed}` +
    `  reused ${p.reused}  in flight ${p.inFlight}  tokens ${p.tokens}  cost ${num(p.cost)}`
}

const write = (text: string) =>
  Effect.sync(() => {
    process.stderr.write(text)
  })

/** @internal */
export const make = (total: number, mode: Mode): Effect.Effect<Display, never, Scope.Scope> =>
  Effect.gen(function*() {
    const progress = yield* SubscriptionRef.make(INITIAL)
    const finished = yield* Ref.make(0)
    const pad = String(total).length
    if (mode === "tty") {
      const last = yield* Ref.make(Number.NEGATIVE_INFINITY)
      const draw = (p: Events.Progress) => write(`\r\x1b[2K${bar(p, total)}`)
      yield* Effect.forkScoped(
        Stream.runForEach(progress.changes, (p) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.flatMap(Ref.get(last), (before) =>
              now - before < 80 ? Effect.void : Effect.zipRight(Ref.set(last, now), draw(p)))))
      )
      return {
        progress,
        onEvent: () =>
          Effect.void,
        finish: Effect.flatMap(SubscriptionRef.get(progress), (p) =>
          Effect.zipRight(draw(p), write("\n")))
      }
    }
    const line = (itemId: string, what: string) =>
      Effect.flatMap(
        Ref.updateAndGet(finished, (n) => n + 1),
        (n) => Console.error(`[${String(n).padStart(pad)}/${total}] ${itemId} ${what}`)
      )
    return {
      progress,
      onEvent: (event) => {
        if (mode === "off") return Effect.void
        switch (event._tag) {
          case "ItemCompleted":
            return line(event.itemId, "ok")
          case "ItemFailed":
            return line(event.itemId, `failed: ${event.category}`)
          case "ItemReused":
            return line(event.itemId, "reused from the artifact")
          case "CooldownStarted":
            return Console.error(`cooldown of ${event.endpoint} until +${num(Math.round(event.untilMillis))} ms`)
          default:
            return Effect.void
        }
      },
      finish: Effect.void
    }
  })
