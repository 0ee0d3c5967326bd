/**
 * Options shared by several commands, with their help text.
 *
 * @internal
 */
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Effect, Option } from "effect"
import { InputError } from "../InputError.js"
import * as Password from "./password.js"

/** `--json`: machine-readable output on stdout. @internal */
export const json = Options.boolean("json").pipe(Options.withDescription("Print machine-readable JSON on stdout"))

/**
 * An option whose value is a path the command reads or writes. Not `Options.file`: its check that the path
 * is a regular file names no flag, and dies (an internal error) on a path it cannot stat (a symlink loop, a
 * name too long). The command reading or writing the path reports each of those as bad input instead.
 *
 * @internal
 */
export const file = (name: string): Options.Options<string> => Options.text(name).pipe(Options.withPseudoName("file"))

/** `--record FILE` (`rein run`, `rein batch`): the journal, appended, for `rein replay` and `rein explain`. @internal */
export const record = file("record").pipe(
  Options.withDescription("Append each request's journal record (its decisions, never the prompt) to this JSONL file"),
  Options.optional
)

/** `--catalog FILE`. @internal */
export const catalog = file("catalog").pipe(
  Options.withDescription("The catalog: endpoints, capabilities, pinned prices (JSON)")
)

/** `--contract FILE`. @internal */
export const contract = file("contract").pipe(
  Options.withDescription("The contract: deadline, attempt timeout, budget, retry policy, candidates (JSON)")
)

/** `--scenario FILE` (optional). @internal */
export const scenario = file("scenario").pipe(
  Options.withDescription("A scenario (JSON) scripting the built-in fake endpoints' behaviour over time"),
  Options.optional
)

/** `--base-url URL` (optional). @internal */
export const baseUrl = Options.text("base-url").pipe(
  Options.withPseudoName("URL"),
  Options.withDescription(
    "Base URL of the endpoints whose provider is \"openai-compatible\" (else REIN_BASE_URL; the key only from REIN_API_KEY)"
  ),
  Options.optional
)

/** `--file-mode MODE` (optional): the permissions of the files the command creates. @internal */
export const fileMode = Options.text("file-mode").pipe(
  Options.withPseudoName("MODE"),
  Options.withDescription(
    "Octal permissions of a file the command creates, e.g. 640: read and write bits, the owner's both " +
      "(default 600; an existing file keeps its own)"
  ),
  Options.optional
)

/**
 * `--file-mode`'s value as a mode: up to four octal digits, holding the owner's read and write and nothing but
 * read and write bits. The files it sets are data the command appends to and a later `--resume`, `replay` or
 * `explain` reads, so a mode without the owner's read or write (`0`, `200`) would make a file its own run cannot
 * resume from, and an execute, setuid, setgid or sticky bit (`7777`) has no meaning on one. @internal
 */
export const decodeFileMode = (value: Option.Option<string>): Effect.Effect<number | undefined, InputError> => {
  if (Option.isNone(value)) return Effect.succeed(undefined)
  const mode = /^[0-7]{1,4}$/.test(value.value) ? Number.parseInt(value.value, 8) : undefined
  return mode !== undefined && (mode & OWNER_READ_WRITE) === OWNER_READ_WRITE && (mode & ~READ_WRITE) === 0
    ? Effect.succeed(mode)
    : Effect.fail(
      new InputError({
        message: `--file-mode: Expected octal permissions like 600 or 640: the owner reads and writes, no execute, ` +
          `setuid, setgid or sticky bit; actual ${JSON.stringify(value.value.slice(0, 40))}`
      })
    )
}

/** The owner's read and write bits, which every `--file-mode` holds. */
const OWNER_READ_WRITE = 0o600
/** Read and write for owner, group and others: the only bits a `--file-mode` may hold. */
const READ_WRITE = 0o666

/**
 * A flag's value as the user typed it, abbreviated: a number as is, anything else quoted, a secret in it
 * (a URL's password, a `key=` parameter: a value given to the wrong flag) masked before it is cut.
 */
const shown = (typed: string): string => {
  const text = Password.maskWord(typed)
  return /^-?\d+(\.\d+)?$/.test(text) ? text : JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)
}

/**
 * The failure of a flag whose value is not what it takes: one line naming the flag, worded as Rein's other
 * input errors (`rein: --file-mode: …`).
 *
 * @internal
 */
export const badValue = (name: string, expected: string, text: string): ValidationError.ValidationError =>
  ValidationError.invalidValue(HelpDoc.p(`rein: --${name}: Expected ${expected}, actual ${shown(text)}`))

/** A number as a person writes one on a command line: decimal, no spaces, no `0x`, `0b` or `Infinity`. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/

const numbers = {
  "a positive integer": (n: number) => Number.isSafeInteger(n) && n > 0,
  "a non-negative integer": (n: number) => Number.isSafeInteger(n) && n >= 0,
  "an integer": (n: number) => Number.isSafeInteger(n),
  "a number": (n: number) => Number.isFinite(n)
} as const

/**
 * A numeric flag (`--concurrency N`) whose bad value names the flag and what it takes
 * (`--concurrency: Expected a positive integer, actual "x"`), instead of `@effect/cli`'s `'x' is not a integer`.
 *
 * @internal
 */
export const number = (name: string, expected: keyof typeof numbers): Options.Options<number> =>
  Options.text(name).pipe(
    Options.withPseudoName("N"),
    Options.mapEffect((text) => {
      const n = DECIMAL.test(text) ? Number(text) : Number.NaN
      return numbers[expected](n) ? Effect.succeed(n) : Effect.fail(badValue(name, expected, text))
    })
  )

/**
 * A flag taking one of a few words (`--order completion|submission`); a bad value names the flag and the words.
 *
 * @internal
 */
export const choice = <const A extends string>(name: string, choices: ReadonlyArray<A>): Options.Options<A> =>
  Options.text(name).pipe(
    Options.withPseudoName(choices.join("|")),
    Options.mapEffect((text) => {
      const found = choices.find((c) => c === text)
      return found === undefined
        ? Effect.fail(badValue(name, `one of ${choices.join(", ")}`, text))
        : Effect.succeed(found)
    })
  )
