/**
 * Reading the command's input files: each failure becomes an `InputError` that names the file, and for a
 * schema violation the path of the field (`examples/contract.json: deadline: Expected …`).
 *
 * @internal
 */
import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { Catalog, Contract, Input } from "@rein/core"
import { Console, Effect, Either } from "effect"
import { InputError } from "../InputError.js"
import { describeJsonError } from "./jsonError.js"
import { entryFor } from "./providers.js"

/** Why a file cannot be read, in a person's words. @internal */
export const describeReadError = (e: PlatformError): string => {
  if (e._tag === "SystemError") {
    switch (e.reason) {
      case "NotFound":
        return "no such file"
      case "PermissionDenied":
        return "permission denied"
      default:
        return systemCode(e.description)
    }
  }
  return e.message
}

// What the errno in a system error's description (`EISDIR: illegal operation on a directory, read`) means.
const ERRNO: Readonly<Record<string, string>> = {
  EISDIR: "a directory, not a file",
  ENOTDIR: "a part of the path is not a directory",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the name is too long",
  EACCES: "permission denied",
  ENOSPC: "no space left on the device",
  EDQUOT: "the disk quota is used up",
  EROFS: "a read-only file system",
  // ftruncate on a device (`--out /dev/full --overwrite`), a write with flags the file does not take.
  EINVAL: "not a regular file (the operation is invalid on it)"
}

const systemCode = (description: string | undefined): string => {
  const code = /^E[A-Z]+/.exec(description ?? "")?.[0]
  return code === undefined ? "not a readable file" : ERRNO[code] ?? code
}

// A platform error's message at the end of a text: `Unknown: FileSystem.truncate (18): EINVAL: invalid argument, …`.
const PLATFORM_MESSAGE = /(?:[A-Za-z]+: )?FileSystem\.[A-Za-z]+ \([^)\n]*\): (E[A-Z]+)\b[^\n]*$/

/**
 * A message that ends with a platform error's text (the batch artifact store's `cannot truncate F: Unknown:
 * FileSystem.truncate (18): EINVAL: …`), with that text in a person's words when its errno is one this
 * module knows (`cannot truncate F: not a regular file …`); any other message as it is.
 *
 * @internal
 */
export const plainSystemError = (message: string): string =>
  message.replace(PLATFORM_MESSAGE, (whole, code: string) => ERRNO[code] ?? whole)

/** Prefixes every line of a (possibly multi-line) message with the file it is about. @internal */
export const inFile = (path: string, message: string): string =>
  message.split("\n").map((line) => `${path}: ${line}`).join("\n")

/** The text of a file, or an `InputError` saying what it is and why it cannot be read. @internal */
export const readText = (
  path: string,
  what: string
): Effect.Effect<string, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.readFileString(path).pipe(
      Effect.mapError((e) => new InputError({ message: `cannot read the ${what} ${path}: ${describeReadError(e)}` }))
    ))

/**
 * Parses JSON text; `where` names the file (and line: then `multiline` is false, and a problem is placed by
 * its column only). The message never quotes the text (see `describeJsonError`).
 *
 * @internal
 */
export const parseJson = (text: string, where: string, multiline = true): Either.Either<unknown, InputError> =>
  // Refused unparsed: V8 parses deeply nested arrays at ~50 times their size in memory.
  Input.tooDeep(text)
    ? Either.left(
      new InputError({
        message: `${where}: nested deeper than ${Input.MAX_JSON_DEPTH} levels of arrays and objects (refused unparsed)`
      })
    )
    : Either.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) =>
        new InputError({
          message: `${where}: invalid JSON (${describeJsonError(text, e instanceof Error ? e.message : "", multiline)})`
        })
    })

/** Reads and parses a JSON file. @internal */
export const readJson = (path: string, what: string): Effect.Effect<unknown, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(readText(path, what), (text) => parseJson(text, path))

/** Reads, parses and decodes a JSON file, naming the file and field of every problem. @internal */
export const readDecoded = <A>(
  path: string,
  what: string,
  decode: (input: unknown) => Either.Either<A, string>
): Effect.Effect<A, InputError, FileSystem.FileSystem> =>
  Effect.flatMap(
    readJson(path, what),
    (json) => Either.mapLeft(decode(json), (message) => new InputError({ message: inFile(path, message) }))
  )

/** Loads a catalog file. @internal */
export const loadCatalog = (path: string): Effect.Effect<Catalog.Catalog, InputError, FileSystem.FileSystem> =>
  readDecoded(path, "catalog", (json) => Either.mapLeft(Catalog.decode(json), (e) => e.message))

/** Loads a contract file. @internal */
export const loadContract = (path: string): Effect.Effect<Contract.Contract, InputError, FileSystem.FileSystem> =>
  readDecoded(path, "contract", (json) => Either.mapLeft(Contract.decode(json), (e) => e.message))

/** Fails when a contract names a candidate the catalog does not know (a likely typo, caught before any call). */
const checkCandidates = (
  contract: Contract.Contract,
  catalog: Catalog.Catalog,
  contractPath: string
): Effect.Effect<void, InputError> => {
  const unknown = contract.candidates.flatMap((id, i) => catalog.byId.has(id) ? [] : [[i, id] as const])
  return unknown.length === 0 ? Effect.void : Effect.fail(
    new InputError({
      message: inFile(
        contractPath,
        unknown.map(([i, id]) => `candidates.${i}: ${Input.describe(id)} is not in the catalog`).join("\n")
      )
    })
  )
}

/**
 * A note for a contract that forbids simulation while some of its candidates' providers (`openai`,
 * `anthropic`, …) are not ones the command calls for real, so they run on the built-in fake: without it
 * the only word is the planner's refusal, "simulated endpoint; the contract does not allow simulation".
 *
 * @internal
 */
export const fakeNote = (catalog: Catalog.Catalog, contract: Contract.Contract): string | undefined => {
  if (contract.allowSimulated) return undefined
  const faked = contract.candidates.flatMap((id) => {
    const endpoint = catalog.byId.get(id)
    return endpoint !== undefined && endpoint.provider !== "fake" && entryFor(endpoint.provider).simulated
      ? [`${Input.describe(endpoint.provider)} (${Input.describe(id)})`]
      : []
  })
  return faked.length === 0 ?
    undefined :
    `rein: note: provider ${
      faked.join(", ")
    } runs on the built-in fake provider, which the contract does not allow (allowSimulated): rein calls a real server only for provider "openai-compatible" (with --base-url or REIN_BASE_URL)`
}

/**
 * Loads the catalog and the contract every command reads together, and checks that each candidate is in the
 * catalog: a typo fails here, as bad input (exit 2), not at run time.
 *
 * @internal
 */
export const loadCatalogAndContract = (
  catalogPath: string,
  contractPath: string
): Effect.Effect<
  { readonly catalog: Catalog.Catalog; readonly contract: Contract.Contract },
  InputError,
  FileSystem.FileSystem
> =>
  Effect.gen(function*() {
    const catalog = yield* loadCatalog(catalogPath)
    const contract = yield* loadContract(contractPath)
    yield* checkCandidates(contract, catalog, contractPath)
    const note = fakeNote(catalog, contract)
    if (note !== undefined) yield* Console.error(note)
    return { catalog, contract }
  })

/** Creates the directory a file the command writes will live in (`.tmp/run.jsonl` → `.tmp`), if it has one. @internal */
export const ensureParent = (path: string): Effect.Effect<void, InputError, FileSystem.FileSystem> => {
  const parent = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : ""
  if (parent === "") return Effect.void
  return Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.makeDirectory(parent, { recursive: true }).pipe(
      Effect.mapError((e) => new InputError({ message: `cannot create the directory ${parent}: ${e.message}` }))
    ))
}
