/**
 * Progress of `rein batch` on stderr: a live bar redrawn in place on a terminal (at most every 80 ms, and
 * once more at the end), plain lines — one per finished item — otherwise, nothing with `--json`. Breaker
 * transitions are printed as they happen in both modes (above the bar on a terminal, with the items that
 * retried, fell back or failed), and counted for the summary.
 *
 * The bar fits the terminal: it is cut to one row less than the terminal's width (a row that fills the last
 * column wraps on some terminals, and `\r` then returns to the wrong row, leaving stale lines). Figures that
 * are not known yet are not shown: tokens and cost appear once an attempt reported its usage.
 *
 * @internal
 */
import type { Events } from "@rein/batch"
import type { Scope } from "effect"
import { Clock, Console, Effect, Fiber, Queue, Ref, Stream, SubscriptionRef } from "effect"
import type { Transition } from "./breakers.js"
import { num } from "./format.js"
import * as Story from "./story.js"

/** @internal */
export type Mode = "tty" | "plain" | "off"

/** How many times each endpoint's breaker went to each state. @internal */
export type BreakerCounts = Readonly<Record<string, Readonly<Partial<Record<Transition["to"], number>>>>>

/** @internal */
export interface Display {
  readonly progress: SubscriptionRef.SubscriptionRef<Events.Progress>
  readonly onEvent: (event: Events.Event) => Effect.Effect<void>
  /** Where the run's `Health` offers its breaker transitions. */
  readonly transitions: Queue.Enqueue<Transition>
  /** Draws the final state and ends the bar's line. */
  readonly finish: Effect.Effect<void>
  /** Ends the bar's line (if any) and prints `lines` under it: for an interrupted run. */
  readonly interrupted: (lines: ReadonlyArray<string>) => Effect.Effect<void>
  /** Breaker transitions seen so far, per endpoint and target state. */
  readonly breakers: Effect.Effect<BreakerCounts>
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

const MAX_BAR = 28
const MIN_BAR = 10

/** The figures of the bar, most important first. */
const figures = (p: Events.Progress, total: number): Array<string> => {
  const parts = [`${p.done}/${total}`, `ok ${p.succeeded}`, `failed ${p.failed}`]
  if (p.reused > 0) parts.push(`reused ${p.reused}`)
  parts.push(`in flight ${p.inFlight}`)
  // Tokens and cost are usage reported by finished attempts: none yet is not "0 used so far".
  if (p.tokens > 0) parts.push(`${p.tokens} tokens`, `cost ${num(p.cost)}`)
  return parts
}

/** The bar as one row of at most `width` columns: figures dropped from the end until a bar fits. @internal */
export const barLine = (p: Events.Progress, total: number, width: number): string => {
  let parts = figures(p, total)
  let text = parts.join("  ")
  while (parts.length > 1 && text.length + MIN_BAR + 3 > width) {
    parts = parts.slice(0, -1)
    text = parts.join("  ")
  }
  const size = Math.min(MAX_BAR, width - text.length - 3)
  if (size < MIN_BAR) return Story.fit(text, width)
  const filled = total === 0 ? size : Math.min(size, Math.round((p.done / total) * size))
  return `[${"█".repeat(filled)}${"░".repeat(size - filled)}] ${text}`
}

const write = (text: string) =>
  Effect.sync(() => {
    process.stderr.write(text)
  })

/** One row less than the terminal's width (80 columns when it does not say). */
const width = (): number => Math.max(20, (process.stderr.columns ?? 80) - 1)

/** @internal */
export const make = (total: number, mode: Mode): Effect.Effect<Display, never, Scope.Scope> =>
  Effect.gen(function*() {
    const progress = yield* SubscriptionRef.make(INITIAL)
    const finished = yield* Ref.make(0)
    const transitions = yield* Queue.unbounded<Transition>()
    const counts: Record<string, Partial<Record<Transition["to"], number>>> = {}
    const tty = mode === "tty"

    const draw = (p: Events.Progress) => write(`\r\x1b[2K${barLine(p, total, width())}`)
    /** A line above the bar on a terminal (then the bar again), a plain line otherwise. */
    const say = (text: string): Effect.Effect<void> => {
      if (mode === "off") return Effect.void
      if (!tty) return Console.error(text)
      return Effect.zipRight(
        write(`\r\x1b[2K${Story.fit(text, width())}\n`),
        Effect.flatMap(SubscriptionRef.get(progress), draw)
      )
    }
    const itemLine = (itemId: string, what: string) =>
      Effect.flatMap(
        Ref.updateAndGet(finished, (n) => n + 1),
        (n) => say(Story.itemLine(n, total, itemId, what))
      )
    const onTransition = (t: Transition): Effect.Effect<void> => {
      const endpoint = (counts[t.endpoint] ??= {})
      endpoint[t.to] = (endpoint[t.to] ?? 0) + 1
      return say(Story.transition(t))
    }
    const listener = yield* Effect.forkScoped(Stream.runForEach(Stream.fromQueue(transitions), onTransition))
    const drain = Effect.flatMap(Queue.takeAll(transitions), (ts) => Effect.forEach(ts, onTransition))

    let drawer: Fiber.RuntimeFiber<void> | undefined = undefined
    if (tty) {
      const last = yield* Ref.make(Number.NEGATIVE_INFINITY)
      drawer = yield* Effect.forkScoped(
        Stream.runForEach(progress.changes, (p) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            Effect.flatMap(Ref.get(last), (before) =>
              now - before < 80 ? Effect.void : Effect.zipRight(Ref.set(last, now), draw(p)))))
      )
    }
    const onEvent = (event: Events.Event): Effect.Effect<void> => {
      if (mode === "off") {
        return Effect.void
      }
      // On a terminal the bar counts every item; only those with a story get a line above it.
      if (tty && event._tag !== "CooldownStarted" && !Story.notable(event)) {
        return event._tag === "ItemCompleted" || event._tag === "ItemReused"
          ? Ref.update(finished, (n) =>
            n + 1)
          : Effect.void
      }
      switch (event._tag) {
        case "ItemCompleted":
          return itemLine(event.itemId, Story.completed(event))
        case "ItemFailed":
          return itemLine(event.itemId, Story.failed(event))
        case "ItemReused":
          return itemLine(event.itemId, "reused from the artifact")
        case "CooldownStarted":
          return say(`cooldown of ${event.endpoint} until +${num(Math.round(event.untilMillis))} ms`)
        default:
          return Effect.void
      }
    }
    // The last drawing is ours: no redraw may land after the bar's line has ended.
    const stop = Effect.zipRight(
      Fiber.interrupt(listener),
      drawer === undefined ? Effect.void : Fiber.interrupt(drawer)
    )
    const endBar = Effect.zipRight(
      stop,
      tty
        ? Effect.flatMap(SubscriptionRef.get(progress), (p) =>
          Effect.zipRight(draw(p), write("\n")))
        : Effect.void
    )
    return {
      progress,
      onEvent,
      transitions,
      finish: Effect.zipRight(Effect.zipRight(stop, drain), endBar),
      interrupted: (lines) =>
        Effect.zipRight(
          endBar,
          Effect.forEach(lines, (line) => Console.error(line), { discard: true })
        ),
      breakers: Effect.as(drain, counts)
    }
  })

/** The summary's words for breaker counts: `fake/a opened 1, half-open 1, closed 1`. @internal */
export const breakerSummary = (counts: BreakerCounts): string => {
  const words: Record<Transition["to"], string> = { open: "opened", half_open: "half-open", closed: "closed" }
  const parts = Object.entries(counts).map(([endpoint, c]) =>
    `${endpoint} ${
      (["open", "half_open", "closed"] as const).filter((to) => (c[to] ?? 0) > 0).map((to) => `${words[to]} ${c[to]}`)
        .join(", ")
    }`
  )
  return parts.length === 0 ? "none" : parts.join("; ")
}
