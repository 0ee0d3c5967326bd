/**
 * What `rein batch` says when it is interrupted (Ctrl-C): what the artifact holds and the exact command
 * that resumes the run. The count is read from the artifact itself once the run has stopped: records are
 * appended before progress counts them, and items in flight may finish while the run winds down.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import { Input, Journal } from "@rein/core"
import { Chunk, Effect, Stream } from "effect"
import * as path from "node:path"
import * as Password from "./password.js"

/** A shell word, quoted when it needs to be. */
const quote = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`)

/** The note after a command line shown with a secret masked. */
const MASKED_NOTE = " (with the password for ***)"

/**
 * The arguments as shown: every value that may carry a secret (`--store`, `--base-url`, `--otlp`, any word)
 * masked by `Password.maskWord`, then quoted as shell words; and whether any was masked.
 */
const shown = (args: ReadonlyArray<string>): { readonly words: ReadonlyArray<string>; readonly masked: boolean } => {
  const words = args.map(Password.maskWord)
  return { words: words.map(quote), masked: words.some((w, i) => w !== args[i]) }
}

/**
 * The command line that resumes this run: the same arguments without `--overwrite` (which would start
 * again) and with `--resume`, behind the command the user typed (`pnpm rein`, `rein`, or `node <script>`).
 * A secret in a value (a URL's password, a `key=` or `token=` parameter) is shown as `***`, with a note.
 *
 * @internal
 */
export const resumeCommand = (
  argv: ReadonlyArray<string>,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>
): string => {
  const args = argv.slice(2).filter((a) => a !== "--overwrite")
  if (!args.includes("--resume")) args.push("--resume")
  const { masked, words } = shown(args)
  return `${[commandOf(argv, cwd, env), ...words].join(" ")}${masked ? MASKED_NOTE : ""}`
}

/** The command the user typed: `pnpm rein`, `rein`, or `node <script>`. */
const commandOf = (
  argv: ReadonlyArray<string>,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>
): string => {
  const script = argv[1] ?? "rein"
  return env.npm_lifecycle_event === "rein"
    ? "pnpm rein"
    : path.basename(script) === "rein"
    ? "rein"
    : `node ${path.relative(cwd, script) || script}`
}

/**
 * What `rein batch --store` and `rein worker` say when interrupted (Ctrl-C): the run stays in the store, and
 * the same command line joins it again (`start` joins a running run; on one that ended it starts a new
 * session, reusing the successes). A password in `--store` (or any secret in another value) is shown as
 * `***`: the store's string is never echoed whole (it may hold one).
 *
 * @internal
 */
export const rejoinMessage = (
  run: string,
  argv: ReadonlyArray<string>,
  cwd: string,
  env: Readonly<Record<string, string | undefined>>
): string => {
  const { masked, words } = shown(argv.slice(2))
  const command = [commandOf(argv, cwd, env), ...words].join(" ")
  return `interrupted: run ${run} stays in the store; rejoin it with: ${command}${masked ? MASKED_NOTE : ""}`
}

/** A read of 1 MiB at a time (the artifact reader's, packages/batch internal/jsonlRead.ts). */
const CHUNK = 1024 * 1024

/** Adds the item id of a line that is a reusable success; any other line, or a torn one, adds nothing. */
const addReusable = (ids: Set<string>, line: string): void => {
  if (!line.includes("\"reusable\":true") || !line.includes("\"outcome\":\"success\"") || Input.tooDeep(line)) return
  try {
    const record: unknown = JSON.parse(line)
    if (typeof record === "object" && record !== null && "itemId" in record && typeof record.itemId === "string") {
      ids.add(record.itemId)
    }
  } catch {
    // A torn last line (the process was cut mid-write) is not a record.
  }
}

/**
 * The items `--resume` (reusing successes) would reuse: distinct ids of reusable successes. The artifact
 * is streamed a chunk at a time (never read whole: a large one does not fit in a string), so the count
 * holds one chunk, one line (at most `Journal.MAX_LINE_BYTES`: a longer one ends the count) and the ids; it is what was counted before a read failure (none without a file).
 *
 * @internal
 */
export const reusable = (
  fs: FileSystem.FileSystem,
  artifact: string,
  chunkSize: number = CHUNK
): Effect.Effect<number> =>
  Effect.suspend(() => {
    const ids = new Set<string>()
    const bytes = fs.stream(artifact, { chunkSize: FileSystem.Size(chunkSize) })
    // Every artifact line is bounded as a journal line is (batch's reader uses the same bound): an endless
    // or overlong line ends the count there instead of being held whole.
    return Journal.splitLines(bytes, { path: artifact }).pipe(
      Stream.runForEachChunk((lines) => Effect.sync(() => Chunk.forEach(lines, (line) => addReusable(ids, line.text)))),
      Effect.ignore,
      Effect.map(() => ids.size)
    )
  })

/**
 * The environment variables this run read and used (names only: their values are never shown): the resumed run
 * needs them set again. `REIN_BASE_URL` when an `openai-compatible` provider took its URL from it (no
 * `--base-url`), `REIN_API_KEY` when such a provider read a key, `OTEL_EXPORTER_OTLP_ENDPOINT` when telemetry
 * took its collector from it (no `--otlp`). An empty value counts as unset, as the readers count it.
 *
 * @internal
 */
export const environmentRead = (
  run: { readonly providers: ReadonlyArray<string>; readonly baseUrlFlag: boolean; readonly otlpFlag: boolean },
  env: Readonly<Record<string, string | undefined>>
): ReadonlyArray<string> => {
  const set = (name: string) => (env[name] ?? "").trim() !== ""
  const real = run.providers.includes("openai-compatible")
  return [
    ...(real && !run.baseUrlFlag && set("REIN_BASE_URL") ? ["REIN_BASE_URL"] : []),
    ...(real && env.REIN_API_KEY !== undefined ? ["REIN_API_KEY"] : []),
    ...(!run.otlpFlag && set("OTEL_EXPORTER_OTLP_ENDPOINT") ? ["OTEL_EXPORTER_OTLP_ENDPOINT"] : [])
  ]
}

/** The lines printed on an interruption. @internal */
export const message = (
  state: { readonly out: string; readonly saved: number; readonly total: number },
  options: { readonly resumeWith?: string | undefined; readonly environment?: ReadonlyArray<string> | undefined }
): ReadonlyArray<string> => {
  const names = options.environment ?? []
  return [
    `interrupted: ${state.saved} of ${state.total} items are saved in ${state.out} (--resume reuses them)`,
    `resume with: ${options.resumeWith ?? `rein batch … --out ${state.out} --resume`}`,
    ...(names.length === 0 ? [] : [
      `the resumed run reads ${names.join(" and ")} from the environment, as this one did: keep ${
        names.length === 1 ? "it" : "them"
      } set (not shown here)`
    ])
  ]
}
