/**
 * The advisory lock of a JSONL artifact: one `rein batch` run writes one `--out` at a time. The lock is a file
 * next to the artifact, under the artifact's real path (`<out>.lock`, symbolic links and `..` resolved, so two
 * names of one file share one lock; an artifact with hard links, or a link to nothing, is refused), created exclusively (`O_EXCL`), holding the holder's pid, its start time
 * and its PID namespace (from `/proc`, where there is one). A second run on the same artifact fails at once,
 * naming the file and the holder. A holder in another PID namespace or on another machine cannot be checked
 * from here: its lock counts as held until it is released or removed by hand. A lock path that is no regular
 * file (a symbolic link, a FIFO) is refused, and no more than a few KiB of a lock file are ever read. The lock is removed when the run ends or is interrupted (the scope's finalizer); a lock whose
 * holder is gone (killed with `kill -9`, or its pid now another process's) is stale, and the next run takes it
 * over.
 *
 * Taking a stale lock over is itself guarded: one run at a time, under a takeover claim created exclusively,
 * removes the lock only if it still is the one judged stale (see `breakStale`); the others wait for it.
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type { Scope } from "effect"
import { Duration, Effect, Option } from "effect"
import * as nodePath from "node:path"
import { InputError } from "../InputError.js"

/** What a lock file holds. */
interface Holder {
  readonly pid: number
  /** The process's start time (`/proc/<pid>/stat`, clock ticks since boot), when known. */
  readonly start: string | null
  /**
   * Where the pid means something: the machine's boot id and the PID namespace (`/proc/self/ns/pid`), when
   * known. Absent in locks written before it was recorded.
   */
  readonly ns?: string | null
}

/** A lock file unreadable (cut short as it was being written) counts as held for this long after it was written. */
const FRESH_MILLIS = 10_000

/** The lock file of an artifact, by the artifact's real path (see `realOut`). @internal */
export const lockPath = (out: string): string => `${out}.lock`

/** A lock file is a pid, a start time and a namespace: anything longer is not one (read no further). */
const MAX_LOCK_BYTES = 4096

/**
 * The artifact's real path: symbolic links (a dangling one too, though `acquire` refuses one) and `.`/`..`
 * resolved, so `--out link.jsonl` and `--out run.jsonl` (or a relative and an absolute name) share one lock.
 * Hard links are other names of the same file that no path resolves to: `acquire` refuses a file that has any.
 * A name that cannot be resolved (a directory not readable) is taken absolute as given.
 */
const realOut = (fs: FileSystem.FileSystem, out: string): Effect.Effect<string> =>
  Effect.gen(function*() {
    let name = nodePath.resolve(out)
    // As the kernel does (ELOOP past 40), follow at most 40 links of a file that does not exist yet.
    for (let hop = 0; hop < 40; hop++) {
      const real = yield* Effect.option(fs.realPath(name))
      if (Option.isSome(real)) return real.value
      const target = yield* Effect.option(fs.readLink(name))
      if (Option.isNone(target)) break
      name = nodePath.resolve(nodePath.dirname(name), target.value)
    }
    const dir = yield* Effect.option(fs.realPath(nodePath.dirname(name)))
    return Option.isSome(dir) ? nodePath.join(dir.value, nodePath.basename(name)) : name
  })

/**
 * Refuses an artifact path that is a symbolic link to nothing: a new artifact is never created through a link
 * (it is opened exclusively, which a link refuses), so the run would otherwise fail later saying the file
 * "already exists", or that its lock's directory does not.
 */
const refuseDangling = (fs: FileSystem.FileSystem, out: string): Effect.Effect<void, InputError> =>
  Effect.flatMap(Effect.option(fs.readLink(out)), (target) =>
    Option.isNone(target) ? Effect.void : Effect.fail(
      new InputError({
        message: `${out} is a symbolic link to ${target.value}, which does not exist: a new artifact is not ` +
          `created through a link; pass ${
            nodePath.resolve(nodePath.dirname(out), target.value)
          } as --out, or remove the link`
      })
    ))

/** Where this process's pids mean something: the boot id and the PID namespace, when `/proc` tells. */
const namespaceOf = (fs: FileSystem.FileSystem): Effect.Effect<string | null> =>
  Effect.all([
    Effect.map(fs.readFileString("/proc/sys/kernel/random/boot_id"), (id) => id.trim()),
    fs.readLink("/proc/self/ns/pid")
  ]).pipe(Effect.map(([boot, ns]) => `${boot} ${ns}`), Effect.orElseSucceed(() => null))

/** Why a lock path is not a lock file (a symbolic link, a FIFO, a directory …), or none when it is one. */
const notAFile = (fs: FileSystem.FileSystem, path: string): Effect.Effect<string | undefined> =>
  Effect.gen(function*() {
    if (Option.isSome(yield* Effect.option(fs.readLink(path)))) return "a symbolic link"
    const info = yield* Effect.option(fs.stat(path))
    if (Option.isNone(info) || info.value.type === "File") return undefined
    const type = info.value.type
    return type === "FIFO" ? "a FIFO" : `a ${type.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()}`
  })

/**
 * A lock file's text, read no further than `MAX_LOCK_BYTES` (longer: garbage, returned cut); none when it is
 * gone. Never opens what is no regular file (a FIFO would block the open, `/dev/zero` never end).
 */
const readLock = (fs: FileSystem.FileSystem, path: string): Effect.Effect<Option.Option<string>> =>
  Effect.gen(function*() {
    if ((yield* notAFile(fs, path)) !== undefined) return Option.none()
    const file = yield* fs.open(path, { flag: "r" })
    const bytes = yield* file.readAlloc(MAX_LOCK_BYTES + 1)
    return Option.some(Option.match(bytes, { onNone: () => "", onSome: (b) => new TextDecoder().decode(b) }))
  }).pipe(Effect.scoped, Effect.orElseSucceed(() => Option.none()))

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
    const { ns, pid, start } = value as { pid?: unknown; start?: unknown; ns?: unknown }
    return typeof pid === "number" && Number.isSafeInteger(pid) && pid > 0 &&
        (typeof start === "string" || start === null) &&
        (typeof ns === "string" || ns === null || ns === undefined)
      ? { pid, start, ns: ns ?? null }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether the holder still runs: its pid is alive and, where known, is the same process (same start time). A
 * holder in another PID namespace or on another machine (its recorded namespace not ours) cannot be checked
 * from here: alive.
 */
const holderAlive = (fs: FileSystem.FileSystem, holder: Holder, ns: string | null): Effect.Effect<boolean> =>
  elsewhere(holder, ns)
    ? Effect.succeed(true)
    : !pidAlive(holder.pid)
    ? Effect.succeed(false)
    : holder.start === null
    ? Effect.succeed(true)
    : Effect.map(startOf(fs, holder.pid), (start) => start === null || start === holder.start)

/** Whether the holder's pid belongs to another PID namespace or machine than this process's. */
const elsewhere = (holder: Holder, ns: string | null): boolean =>
  holder.ns !== null && holder.ns !== undefined && ns !== null && holder.ns !== ns

type Found =
  | { readonly _tag: "Held"; readonly holder: Holder | undefined }
  | { readonly _tag: "Stale"; readonly text: string }
  | { readonly _tag: "Gone" }

/** Reads the lock in place: held (by whom, when known), stale (with the text judged so), or gone meanwhile. */
const inspect = (fs: FileSystem.FileSystem, path: string, ns: string | null): Effect.Effect<Found> =>
  Effect.gen(function*() {
    const text = yield* readLock(fs, path)
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
    return (yield* holderAlive(fs, holder, ns))
      ? { _tag: "Held", holder } as const
      : { _tag: "Stale", text: text.value }
  })

/** How taking a stale lock away went (see `breakStale`). */
type Takeover =
  | { readonly _tag: "Taken" }
  | { readonly _tag: "Changed" }
  | { readonly _tag: "Busy"; readonly claim: string; readonly claimer: Holder | undefined; readonly alive: boolean }

/** The claim a run holds while it takes a stale lock away (see `breakStale`). @internal */
export const claimPath = (lock: string): string => `${lock}.takeover`

/**
 * Takes a stale lock away, one run at a time: only the run that creates the takeover claim (`<lock>.takeover`,
 * exclusively) may remove a lock, and only after reading it again under the claim and finding the very text
 * judged stale (no other run can remove or replace it meanwhile: its holder is gone, and the others wait for
 * the claim). The claim goes when the takeover ends. No run ever moves another's lock aside: with three runs
 * racing, one moving a fresh lock aside while a third took the free name let two runs write.
 *
 * A claim whose run is gone (killed in the few milliseconds of a takeover) is not removed here: two runs could
 * both judge it so, and one remove the other's claim. It is reported (`Busy`, not alive) for a person to remove.
 */
const breakStale = (fs: FileSystem.FileSystem, path: string, stale: string, mine: string): Effect.Effect<Takeover> => {
  const claim = claimPath(path)
  const underClaim = Effect.gen(function*() {
    const now = yield* readLock(fs, path)
    if (Option.isNone(now) || now.value !== stale) return { _tag: "Changed" } as const
    return Option.isSome(yield* Effect.option(fs.remove(path)))
      ? { _tag: "Taken" } as const
      : { _tag: "Changed" } as const
  })
  return Effect.gen(function*() {
    const claimed = yield* Effect.either(fs.writeFileString(claim, mine, { flag: "wx", mode: 0o600 }))
    if (claimed._tag === "Right") return yield* Effect.ensuring(underClaim, Effect.ignore(fs.remove(claim)))
    const text = yield* readLock(fs, claim)
    if (Option.isNone(text)) return { _tag: "Changed" } as const
    const claimer = parse(text.value)
    // Unreadable: being written right now.
    const alive = claimer === undefined || (yield* holderAlive(fs, claimer, null))
    return { _tag: "Busy", claim, claimer, alive } as const
  }).pipe(Effect.uninterruptible)
}

/** How many times a run tries to take the lock before it reports it held. */
const ROUNDS = 8

/** How long a run waits for another's takeover of a stale lock (a few file operations) before it looks again. */
const TAKEOVER_WAIT_MILLIS = 50

const abandoned = (out: string, claim: string, claimer: Holder | undefined) =>
  new InputError({
    message: `cannot lock ${out}: a takeover of its stale lock was left unfinished by a run that is gone (${
      claimer === undefined ? "unknown pid" : `pid ${claimer.pid}`
    }): if no rein batch run is using ${out}, remove ${claim}`
  })

const heldError = (out: string, path: string, holder: Holder | undefined, ns: string | null) =>
  new InputError({
    message: holder !== undefined && elsewhere(holder, ns)
      ? `${out}: another rein batch run holds it (pid ${holder.pid} in another PID namespace or on another ` +
        `machine, which this run cannot check; lock ${path}): wait for that run to end, or pass another --out; ` +
        `if that run is gone, remove ${path}`
      : `${out}: another rein batch run holds it (${
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
    if (Option.isNone(info)) yield* refuseDangling(fs, out)
    // Two runs given two of its names would take two locks: the lock is by name (see `realOut`).
    const names = Option.flatMap(info, (i) => i.nlink)
    if (Option.isSome(names) && names.value > 1) {
      return yield* new InputError({
        message: `${out} has ${names.value} names (hard links): a run given another of them would not see this ` +
          `run's lock, and both would write it; give the artifact one name (copy it, or remove the other links)`
      })
    }
    const path = lockPath(yield* realOut(fs, out))
    const ns = yield* namespaceOf(fs)
    const mine = JSON.stringify({ pid: process.pid, start: yield* startOf(fs, process.pid), ns } satisfies Holder)
    const release = Effect.ignore(Effect.flatMap(
      readLock(fs, path),
      (text) => Option.isSome(text) && text.value === mine ? fs.remove(path) : Effect.void
    ))
    // A few rounds at most: each lost one means another run took or dropped the lock in between, or is taking a
    // stale one over (then this run waits a little for it: it will hold the lock, or have dropped it).
    for (let round = 0; round < ROUNDS; round++) {
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
      const foreign = yield* notAFile(fs, path)
      if (foreign !== undefined) {
        return yield* new InputError({
          message: `cannot lock ${out}: ${path} is ${foreign}, not a lock file: remove it (no rein batch run makes one)`
        })
      }
      const found = yield* inspect(fs, path, ns)
      if (found._tag === "Held") return yield* heldError(out, path, found.holder, ns)
      if (found._tag !== "Stale") continue
      const takeover = yield* breakStale(fs, path, found.text, mine)
      if (takeover._tag !== "Busy") continue
      if (!takeover.alive) return yield* abandoned(out, takeover.claim, takeover.claimer)
      yield* Effect.sleep(Duration.millis(TAKEOVER_WAIT_MILLIS))
    }
    return yield* heldError(out, path, undefined, ns)
  })
