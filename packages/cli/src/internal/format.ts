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

/**
 * `text` in lines of at most `width` columns, broken after a comma when it can (a list item stays whole),
 * else at a space; a word longer than a line stays whole on its own line.
 *
 * @internal
 */
export const wrapWords = (text: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let current = ""
  const start = (item: string) => {
    // An item too long for a line is broken at its spaces.
    for (const word of item.split(" ")) {
      if (current !== "" && current.length + 1 + word.length > width) {
        lines.push(current)
        current = word
      } else current = current === "" ? word : `${current} ${word}`
    }
  }
  for (const item of text.split(", ").map((part, i, all) => (i < all.length - 1 ? `${part},` : part))) {
    if (current !== "" && current.length + 1 + item.length <= width) current = `${current} ${item}`
    else {
      if (current !== "") lines.push(current)
      current = ""
      start(item)
    }
  }
  lines.push(current)
  return lines
}

/**
 * Left-aligned columns separated by two spaces. With `width`, the last column wraps at spaces so that each
 * line fits in `width` columns, its continuation lines aligned under it.
 *
 * @internal
 */
export const table = (rows: ReadonlyArray<ReadonlyArray<string>>, indent = "", width?: number): string => {
  const widths: Array<number> = []
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, [...cell].length)
  }
  return rows.map((row) => {
    const lead = indent + row.slice(0, -1).map((cell, i) => cell.padEnd(widths[i] ?? 0) + "  ").join("")
    const last = row[row.length - 1] ?? ""
    const room = width === undefined ? Infinity : Math.max(20, width - [...lead].length)
    return wrapWords(last, room).map((line, i) => (i === 0 ? lead : " ".repeat([...lead].length)) + line).join("\n")
  }).join("\n")
}

/** Pretty JSON for `--json`. @internal */
export const json = (value: unknown): string => JSON.stringify(value, null, 2)
