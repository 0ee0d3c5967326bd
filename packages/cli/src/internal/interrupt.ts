/**
 * What `rein batch` says when it is interrupted (Ctrl-C): what the artifact holds and the exact command
 * that resumes the run. The count is read from the artifact itself once the run has stopped: records are
 * appended before progress counts them, and items in flight may finish while the run winds down.
 *
 * @internal
 */
import * as path from "node:path"

/** A shell word, quoted when it needs to be. */
const quote = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`)

/**
 * The command line that resumes this run: the same arguments without `--overwrite` (which would start
 * again) and with `--resume`, behind the command the user typed (`pnpm rein`, `rein`, or `node <script>`).
 *
 * @internal
 */
export const resumeCommand = (
  argv: ReadonlyArray<string>,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>
): string => {
  const script = argv[1] ?? "rein"
  const prefix = env.npm_lifecycle_event === "rein"
    ? "pnpm rein"
    : path.basename(script) === "rein"
    ? "rein"
    : `node ${path.relative(cwd, script) || script}`
  const args = argv.slice(2).filter((a) => a !== "--overwrite")
  if (!args.includes("--resume")) args.push("--resume")
  return [prefix, ...args.map(quote)].join(" ")
}

/** The items `--resume` (reusing successes) would reuse: distinct ids of reusable successes. @internal */
export const reusable = (artifact: string): number => {
  const ids = new Set<string>()
  for (const line of artifact.split("\n")) {
    if (!line.includes("\"reusable\":true") || !line.includes("\"outcome\":\"success\"")) continue
    try {
      const record: unknown = JSON.parse(line)
      if (typeof record === "object" && record !== null && "itemId" in record && typeof record.itemId === "string") {
        ids.add(record.itemId)
      }
    } catch {
      // A torn last line (the process was cut mid-write) is not a record.
    }
  }
  return ids.size
}

/** The lines printed on an interruption. @internal */
export const message = (
  state: { readonly out: string; readonly saved: number; readonly total: number },
  options: { readonly resumeWith?: string | undefined }
): ReadonlyArray<string> => [
  `interrupted: ${state.saved} of ${state.total} items are saved in ${state.out} (--resume reuses them)`,
  `resume with: ${options.resumeWith ?? `rein batch … --out ${state.out} --resume`}`
]
