/**
 * What `rein batch` says when it is interrupted (Ctrl-C): what the artifact holds and the exact command
 * that resumes the run. Every finished item's record was appended and flushed before it counted, so the
 * items done are the items saved.
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

/** The lines printed on an interruption. @internal */
export const message = (
  state: { readonly out: string; readonly done: number; readonly total: number },
  options: { readonly resumeWith?: string | undefined }
): ReadonlyArray<string> => [
  `interrupted: ${state.done} of ${state.total} items are done and saved in ${state.out}`,
  `resume with: ${options.resumeWith ?? `rein batch … --out ${state.out} --resume`}`
]
