/**
 * The words of `rein batch`'s progress: what happened to a finished item (where it answered, after which
 * failures), what a breaker transition means, and a line cut to the terminal's width.
 *
 * @internal
 */
import type { Events } from "@rein/batch"
import type { Transition } from "./breakers.js"
import { printable } from "./printable.js"

/** `http_503` → `503`; other codes as they are; no code: the failure kind. */
const label = (a: Events.AttemptSummary): string => {
  const code = a.code ?? a.failure ?? "failure"
  return code.startsWith("http_") ? code.slice(5) : code
}

/** The failed attempts as `503 ×2, timeout` (runs of the same label counted). @internal */
export const failures = (attempts: ReadonlyArray<Events.AttemptSummary>): string => {
  const runs: Array<{ label: string; count: number }> = []
  for (const a of attempts) {
    if (a.failure === null && a.code === null) continue
    const l = label(a)
    const last = runs[runs.length - 1]
    if (last !== undefined && last.label === l) last.count++
    else runs.push({ label: l, count: 1 })
  }
  return runs.map((r) => (r.count === 1 ? r.label : `${r.label} ×${r.count}`)).join(", ")
}

/** How a completed item went: `ok on fake/a`, or `ok on fake/b after 503 ×2`. @internal */
export const completed = (event: typeof Events.ItemCompleted.Type): string => {
  if (event.endpoint === undefined) return "ok"
  const before = failures(event.attempts ?? [])
  return `ok on ${event.endpoint}${before === "" ? "" : ` after ${before}`}`
}

// Why an item ended, by the tag of its error (an unknown tag is shown as it is).
const endings: Readonly<Record<string, string>> = {
  PlanExhausted: "no candidate left",
  DeadlineExceeded: "item deadline reached",
  BudgetExhausted: "item budget exhausted",
  FailedSafe: "neither retried nor fallen back: its kind forbids both",
  Refused: "refused before any call",
  Halted: "the run stopped admitting attempts",
  BatchDeadlineExceeded: "batch deadline reached",
  BatchAborted: "batch aborted",
  BatchBudgetExceeded: "batch budget exceeded",
  ArtifactFailed: "its record could not be written"
}

/** The breakers that refused an item's candidates: `breaker of fake/a open, may half-open in 3000 ms`. */
const refusedBy = (breakers: NonNullable<typeof Events.ItemFailed.Type["breakers"]>): string =>
  breakers.map((b) =>
    b.state === "open"
      ? `breaker of ${b.endpoint} open, may half-open in ${Math.ceil(b.halfOpensInMillis)} ms`
      : `breaker of ${b.endpoint} half-open, every probe slot taken`
  ).join("; ")

/**
 * How a failed item went: `failed: overloaded, no candidate left (503 ×2)`, and the breakers that refused it
 * (`failed: overloaded, no candidate left: breaker of fake/a open, may half-open in 3000 ms (503)`). @internal
 */
export const failed = (event: typeof Events.ItemFailed.Type): string => {
  const before = failures(event.attempts ?? [])
  const why = event.error === undefined
    ? ""
    : `, ${Object.hasOwn(endings, event.error) ? endings[event.error] : event.error}`
  const breakers = event.breakers === undefined || event.breakers.length === 0 ? "" : `: ${refusedBy(event.breakers)}`
  return `failed: ${event.category}${why}${breakers}${before === "" ? "" : ` (${before})`}`
}

/** Whether an item's line is worth printing above a live bar: it retried, fell back or failed. @internal */
export const notable = (event: Events.Event): boolean =>
  event._tag === "ItemFailed" || (event._tag === "ItemCompleted" && (event.attempts?.length ?? 0) > 1)

/**
 * A breaker transition in words, naming the item whose attempt made it when known: `breaker of fake/a open
 * (item q7 failed): later items skip it …`. @internal
 */
export const transition = (t: Transition): string => {
  const by = (what: string) => t.itemId === undefined ? "" : ` (item ${t.itemId} ${what})`
  switch (t.to) {
    case "open":
      return t.from === "half_open"
        ? `breaker of ${t.endpoint} open again${by("failed")}: its probe failed, a longer cooldown`
        : `breaker of ${t.endpoint} open${
          by("failed")
        }: later items skip it until a probe succeeds (with no other candidate they fail)`
    case "half_open":
      return `breaker of ${t.endpoint} half-open${by("probes it")}: cooldown over, a probe call tests it`
    case "closed":
      return `breaker of ${t.endpoint} closed${by("succeeded")}: the probe succeeded, traffic returns`
  }
}

/**
 * A finished item's line, `[ 3/48] q03 ok on fake/a`: the item's id (from the input file) on one line with every
 * control escaped, so an id cannot forge a line or drive the terminal. @internal
 */
export const itemLine = (n: number, total: number, itemId: string, what: string): string =>
  `[${String(n).padStart(String(total).length)}/${total}] ${printable(itemId)} ${what}`

/** A line cut to `width` columns (an ellipsis marks the cut). @internal */
export const fit = (line: string, width: number): string => {
  const chars = [...line]
  return chars.length <= width ? line : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`
}
