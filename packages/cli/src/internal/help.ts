/**
 * `--help` as a reader sees it. `@effect/cli` renders help with ANSI styles whatever the output is, and pads
 * the command list to its longest usage line (hundreds of columns). This console lays its text out for where
 * it goes: ANSI styles only on a terminal, no trailing padding, and lines wrapped at the terminal's width
 * (80 columns when the output is not a terminal).
 *
 * @internal
 */
import type { Console } from "effect"

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g

/** The visible length of a line (ANSI styles take no columns). */
const visible = (line: string): number => [...line.replace(ANSI, "")].length

/** Wraps one line at spaces to `width` columns; a word longer than a row stays whole. */
const wrap = (line: string, width: number): Array<string> => {
  if (visible(line) <= width) return [line]
  const plain = line.replace(ANSI, "")
  const lead = /^ */.exec(plain)?.[0].length ?? 0
  // A usage line (`$ …`, `- …`) continues indented under its command; prose continues at its own margin.
  const indent = " ".repeat(lead + (/^ *[$-] /.test(plain) ? 4 : 0))
  const rows: Array<string> = []
  let current = ""
  for (const word of line.trimStart().split(" ")) {
    const lead = rows.length === 0 && current === "" ? line.slice(0, line.length - line.trimStart().length) : ""
    const candidate = current === "" ? `${lead}${rows.length === 0 ? "" : indent}${word}` : `${current} ${word}`
    if (current !== "" && visible(candidate) > width) {
      rows.push(current)
      current = `${indent}${word}`
    } else current = candidate
  }
  if (current !== "") rows.push(current)
  return rows
}

/** A column gap (the command list pads each usage to the longest): the rest goes on its own line. */
const unpad = (line: string): Array<string> => {
  const gap = / {4,}(?=\S)/g
  const lead = /^ */.exec(line)?.[0].length ?? 0
  const indent = " ".repeat(lead + 4)
  const parts = line.slice(lead).split(gap)
  return parts.map((part, i) => (i === 0 ? " ".repeat(lead) : indent) + part)
}

// A path option is a text option (see `options.file`): its help says what @effect/cli says of a file option.
// eslint-disable-next-line no-control-regex
const PATH_OPTION = /((?:--[a-z-]+ file|<record>)(?:\x1b\[[0-9;]*m)*\n\n {2})A user-defined piece of text\./g

// A subcommand's usage line as @effect/cli prints it (`$ run --catalog file …`): the command a user types
// begins with `rein`.
// eslint-disable-next-line no-control-regex
const USAGE = /^((?:\x1b\[[0-9;]*m)*\$ )(?!rein\b)/

/** Lays out help text: styles kept only when `ansi`, column padding dropped, lines wrapped. @internal */
export const layout = (text: string, options: { readonly ansi: boolean; readonly width: number }): string =>
  text.replace(PATH_OPTION, "$1A file.").split("\n")
    .map((line) => line.replace(USAGE, "$1rein "))
    .flatMap((line) => unpad((options.ansi ? line : line.replace(ANSI, "")).trimEnd()))
    .flatMap((line) => wrap(line, options.width))
    .join("\n")

/** A console whose `log` lays out its text for stdout as it is now. @internal */
export const console = (inner: Console.Console): Console.Console => {
  const options = {
    ansi: process.stdout.isTTY === true,
    width: process.stdout.isTTY === true ? Math.max(40, (process.stdout.columns ?? 80) - 1) : 80
  }
  return {
    ...inner,
    log: (...args) => inner.log(...args.map((a) => (typeof a === "string" ? layout(a, options) : a)))
  }
}

/** Whether a command line asks for help. @internal */
export const asksHelp = (argv: ReadonlyArray<string>): boolean => argv.some((a) => a === "--help" || a === "-h")
