/**
 * Small text formatting helpers: numbers as people read them, aligned tables, durations.
 *
 * @internal
 */
import { number as num } from "@rein/core/Format"

/** A number with at most six significant digits (integers as they are): core's `Format.number`. @internal */
export { num }

/** Milliseconds as `850 ms`, `12.5 s` or `3 min 20 s`. @internal */
export const millis = (ms: number): string => {
  if (ms < 1_000) return `${num(Math.round(ms * 10) / 10)} ms`
  if (ms < 60_000) return `${num(Math.round(ms / 100) / 10)} s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms - minutes * 60_000) / 1_000)
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`
}

/** Left-aligned columns separated by two spaces. @internal */
export const table = (rows: ReadonlyArray<ReadonlyArray<string>>, indent = ""): string => {
  const widths: Array<number> = []
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length)
  }
  return rows
    .map((row) => indent + row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  "))
    .join("\n")
}

/** Pretty JSON for `--json`. @internal */
export const json = (value: unknown): string => JSON.stringify(value, null, 2)
