/**
 * A pseudo-terminal for tests that check what a user sees: a command run under util-linux `script` in a
 * terminal of a given width, its raw output, and the screen that output leaves (carriage returns, erased
 * lines and wrapping at the right edge applied).
 */
import { execFile } from "node:child_process"

/** How a command ended and what it wrote (in a terminal, stdout and stderr are one stream: `stdout`). */
export interface Result {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const quote = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`

/** Runs a shell script in a pseudo-terminal of `columns` columns from `cwd`; its raw output. */
export const shell = (script: string, columns: number, cwd: string, timeoutMillis = 120_000): Promise<Result> =>
  new Promise((resolve) => {
    execFile(
      "script",
      ["-qfec", `stty cols ${columns} rows 50; ${script}`, "/dev/null"],
      { cwd, encoding: "utf8", timeout: timeoutMillis, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null
        resolve({ code, stdout, stderr })
      }
    )
  })

/** Runs a program with its arguments in a pseudo-terminal of `columns` columns. */
export const inTerminal = (argv: ReadonlyArray<string>, columns: number, cwd: string): Promise<Result> =>
  shell(`exec ${argv.map(quote).join(" ")}`, columns, cwd)

/** What a terminal of `columns` columns shows after `output`: \r, \n, erase-line, and wrapping at the edge. */
export const screen = (output: string, columns: number): Array<string> => {
  const rows: Array<Array<string>> = [[]]
  let row = 0
  let col = 0
  const chars = [...output]
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!
    if (ch === "\r") col = 0
    else if (ch === "\n") {
      row++
      col = 0
      rows[row] ??= []
    } else if (ch === "\x1b") {
      // eslint-disable-next-line no-control-regex
      const m = /^\x1b\[(\d*)([A-Za-z])/.exec(chars.slice(i, i + 8).join(""))
      if (m !== null) {
        if (m[2] === "K") rows[row] = []
        i += m[0].length - 1
      }
    } else {
      if (col === columns) {
        row++
        col = 0
        rows[row] ??= []
      }
      rows[row]![col++] = ch
    }
  }
  return rows.map((r) => Array.from(r, (c) => c ?? " ").join("").trimEnd())
}
