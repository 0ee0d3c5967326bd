/**
 * The advisory lock of a JSONL artifact: one `rein batch` run writes one `--out` at a time. The lock is a file
 * next to the artifact (`<out>.lock`), created exclusively (`O_EXCL`), holding the holder's pid and its start
 * time (from `/proc`, where there is one). A second run on the same artifact fails at once, naming the file and
 * the holder. The lock is removed when the run ends or is interrupted (the scope's finalizer); a lock whose
 * holder is gone (killed with `kill -9`, or its pid now another process's) is stale, and the next run takes it
 * over.
 *
 * Taking a stale lock over is itself guarded: the stale file is first renamed aside (atomic) and checked to be
 * the one judged stale; were it another run's fresh lock (taken in between), it is put back.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type { Scope } from "effect"
import { Effect, Option } from "effect"
import { InputError } from "../InputError.js"

/** What a lock file holds. */
interface Holder {
  readonly pid: number
  /** The process's start time (`/proc/<pid>/stat`, clock ticks since boot), when known. */
  readonly start: string | null
}

/** A lock file unreadable (cut short as it was being written) counts as held for this long after it was written. */
const FRESH_MILLIS = 10_000

/** The lock file of an artifact. @internal */
export const lockPath = (out: string): string => `${out}.lock`

/** The start time of a process (field 22 of `/proc/<pid>/stat`; its name may hold spaces and parentheses). */
const startOf = (fs: FileSystem.FileSystem, pid: number): Effect.Effect<string | null> =>
  fs.readFileString(`/proc/${pid}/stat`).pipe(
    Effect.map((stat) => stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null),
    Effect.orElseSucceed(() => null)
  )

/** Whether a process with this pid exists (one we may not signal exists too). */
const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const parse = (text: string): Holder | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== "object" || value === null) return undefined
    const { pid, start } = value as { pid?: unknown; start?: unknown }
    return typeof pid === "number" && Number.isSafeInteger(pid) && pid > 0 &&
        (typeof start === "string" || start === null)
      ? { pid, start }
      : undefined
  } catch {
    return undefined
  }
}

/** Whether the holder still runs: its pid is alive and, where known, is the same process (same start time). */
const holderAlive = (fs: FileSystem.FileSystem, holder: Holder): Effect.Effect<boolean> =>
  !pidAlive(holder.pid)
    ? Effect.succeed(false)
    : holder.start === null
    ? Effect.succeed(true)
    : Effect.map(startOf(fs, holder.pid), (start) => start === null || start === holder.start)

type Found =
  | { readonly _tag: "Held"; readonly holder: Holder | undefined }
  | { readonly _tag: "Stale"; readonly text: string }
  | { readonly _tag: "Gone" }

/** Reads the lock in place: held (by whom, when known), stale (with the text judged so), or gone meanwhile. */
const inspect = (fs: FileSystem.FileSystem, path: string): Effect.Effect<Found> =>
  Effect.gen(function*() {
    const text = yield* Effect.option(fs.readFileString(path))
    if (Option.isNone(text)) return { _tag: "Gone" } as const
    const holder = parse(text.value)
    if (holder === undefined) {
      // Unreadable: being written right now, or cut short by a crash; stale once it is old.
      const info = yield* Effect.option(fs.stat(path))
      const written = Option.flatMap(info, (i) => i.mtime)
      const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
      return Option.isSome(written) && now - written.value.getTime() > FRESH_MILLIS
        ? { _tag: "Stale", text: text.value } as const
        : { _tag: "Held", holder: undefined } as const
    }
    return (yield* holderAlive(fs, holder)) ? { _tag: "Held", holder } as const : { _tag: "Stale", text: text.value }
  })

/**
 * Takes a stale lock away: renamed aside, then checked to be the file judged stale; were it another run's lock
 * taken in between, it is linked back (never over a lock taken since). Succeeds with whether it was taken away.
 */
const breakStale = (fs: FileSystem.FileSystem, path: string, stale: string): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const aside = `${path}.stale-${process.pid}`
    if (Option.isNone(yield* Effect.option(fs.rename(path, aside)))) return false
    const moved = yield* Effect.option(fs.readFileString(aside))
    const same = Option.isSome(moved) && moved.value === stale
    if (!same) yield* Effect.ignore(fs.link(aside, path))
    yield* Effect.ignore(fs.remove(aside))
    return same
  })

const heldError = (out: string, path: string, holder: Holder | undefined) =>
  new InputError({
    message: `${out}: another rein batch run holds it (${
      holder === undefined ? "its lock is being written" : `pid ${holder.pid}`
    }; lock ${path}): wait for that run to end, or pass another --out`
  })

/**
 * Takes the lock of the artifact `out` for the scope: fails at once with an `InputError` naming the file and the
 * holder when another live run holds it; takes over a stale one. Released when the scope closes (only if it is
 * still this run's lock). An `out` that exists and is no regular file (a device, a pipe) is not locked.
 *
 * @internal
 */
export const acquire = (out: string): Effect.Effect<void, InputError, FileSystem.FileSystem | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    // A device or a pipe (`/dev/full`, a FIFO) is no artifact two runs could share: nothing to lock.
    const info = yield* Effect.option(fs.stat(out))
    if (Option.isSome(info) && info.value.type !== "File") return
    const path = lockPath(out)
    const mine = JSON.stringify({ pid: process.pid, start: yield* startOf(fs, process.pid) } satisfies Holder)
    const release = Effect.ignore(Effect.flatMap(
      fs.readFileString(path),
      (text) => text === mine ? fs.remove(path) : Effect.void
    ))
    // A few rounds at most: each lost one means another run took or dropped the lock in between.
    for (let round = 0; round < 4; round++) {
      const created = yield* Effect.either(
        Effect.uninterruptible(Effect.zipRight(
          fs.writeFileString(path, mine, { flag: "wx", mode: 0o600 }),
          Effect.addFinalizer(() => release)
        ))
      )
      if (created._tag === "Right") return
      const error = created.left
      if (error._tag !== "SystemError" || error.reason !== "AlreadyExists") {
        return yield* new InputError({ message: `cannot lock ${out} (${path}): ${error.message}` })
      }
      const found = yield* inspect(fs, path)
      if (found._tag === "Held") return yield* heldError(out, path, found.holder)
      if (found._tag === "Stale") yield* breakStale(fs, path, found.text)
    }
    return yield* heldError(out, path, undefined)
  })
