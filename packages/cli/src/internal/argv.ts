/**
 * The command line checked against the commands' own flags before `@effect/cli` parses it, so that a typo
 * gets a suggestion: `@effect/cli` offers "did you mean" only for a missing required option, and says
 * `Received unknown argument` or `Invalid subcommand` otherwise. The flags come from each command's usage
 * (its `Options`), so they cannot drift from what the parser accepts.
 *
 * @internal
 */
import { Command } from "@effect/cli"
import type { Usage } from "@effect/cli"
import { Option } from "effect"

/** A command's flags: name → whether it takes a value; and the flags it cannot run without. @internal */
export interface Flags {
  readonly name: string
  readonly flags: ReadonlyMap<string, boolean>
  /** The required options, each by its names (`--catalog`, or a long name and its alias). */
  readonly required: ReadonlyArray<ReadonlyArray<string>>
}

// The flags `@effect/cli` adds to every command.
const BUILT_IN: ReadonlyMap<string, boolean> = new Map([
  ["--help", false],
  ["-h", false],
  ["--version", false],
  ["--wizard", false],
  ["--completions", true],
  ["--log-level", true]
])

/**
 * Gathers a usage's flags, and (while `required`) the options outside any optional, repeated or alternative
 * part: those the command cannot run without.
 */
const collect = (
  usage: Usage.Usage,
  into: Map<string, boolean>,
  required: Array<ReadonlyArray<string>> | undefined
): void => {
  switch (usage._tag) {
    case "Named": {
      const names = usage.names.filter((name) => name.startsWith("-"))
      for (const name of names) into.set(name, Option.isSome(usage.acceptedValues))
      if (required !== undefined && names.length > 0) required.push(names)
      return
    }
    case "Optional":
    case "Repeated":
      return collect(usage.usage, into, undefined)
    case "Alternation":
      collect(usage.left, into, undefined)
      return collect(usage.right, into, undefined)
    case "Concat":
      collect(usage.left, into, required)
      return collect(usage.right, into, required)
    case "Empty":
    case "Mixed":
      return
  }
}

/** The flags of a command, read from its usage. @internal */
export const flagsOf = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>): Flags => {
  const flags = new Map<string, boolean>()
  const required: Array<ReadonlyArray<string>> = []
  collect(Command.getUsage(command), flags, required)
  return { name: [...Command.getNames(command)][0] ?? "", flags, required }
}

/** Edit distance (insert, delete, substitute, or swap two neighbours). @internal */
export const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => [i])
  for (let j = 1; j <= b.length; j++) d[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1)
      d[i]![j] = best
    }
  }
  return d[a.length]![b.length]!
}

/** The closest of `known` to `typed`, if close enough to be a typo (or `typed` is its prefix). @internal */
export const closest = (typed: string, known: Iterable<string>): string | undefined => {
  let best: { readonly name: string; readonly d: number } | undefined
  for (const name of known) {
    const d = name.startsWith(typed) && typed.length >= 3 ? 0.5 : distance(typed, name)
    if (best === undefined || d < best.d) best = { name, d }
  }
  const limit = Math.max(1, Math.min(3, Math.floor(typed.replace(/^-+/, "").length / 3)))
  return best !== undefined && best.d <= limit ? best.name : undefined
}

const suggestion = (typed: string, known: Iterable<string>): string => {
  const near = closest(typed, known)
  return near === undefined ? "" : `; did you mean ${near}?`
}

/** The flags a command line gives its command (up to `--`), and the first unknown one as a message. */
const scan = (
  args: ReadonlyArray<string>,
  command: Flags
): { readonly given: Set<string>; readonly unknown?: string } => {
  const given = new Set<string>()
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === "--") break
    if (!arg.startsWith("-") || arg === "-" || /^-\d/.test(arg)) continue
    const name = arg.includes("=") ? arg.slice(0, arg.indexOf("=")) : arg
    const takesValue = command.flags.get(name) ?? BUILT_IN.get(name)
    if (takesValue === undefined) {
      const unknown = `rein ${command.name}: unknown flag ${name}${
        suggestion(name, command.flags.keys())
      } (see rein ${command.name} --help)`
      return { given, unknown }
    }
    given.add(name)
    if (takesValue && !arg.includes("=")) i++
  }
  return { given }
}

/**
 * What is wrong with a command line's command or flags (`args` without runtime and script), in one line
 * starting `rein` with a suggestion, or `undefined` when every flag is known (values are then `@effect/cli`'s to check).
 *
 * @internal
 */
export const check = (args: ReadonlyArray<string>, commands: ReadonlyArray<Flags>): string | undefined => {
  const first = args[0]
  if (first === undefined) return undefined
  if (first.startsWith("-")) {
    const name = first.includes("=") ? first.slice(0, first.indexOf("=")) : first
    return BUILT_IN.has(name)
      ? undefined
      : `rein: unknown flag ${name}${suggestion(name, BUILT_IN.keys())} (see rein --help)`
  }
  const command = commands.find((c) => c.name === first)
  if (command === undefined) {
    const names = commands.map((c) => c.name)
    const near = closest(first, names)
    return `rein: unknown command ${JSON.stringify(first)}${
      near === undefined ? "" : `; did you mean ${near}?`
    } (the commands: ${names.join(", ")})`
  }
  return scan(args.slice(1), command).unknown
}

/**
 * The required options a command line (`args` without runtime and script, its flags known: `check`) left
 * out, named in one line with the command's help, or `undefined`. (`@effect/cli` says `Expected to find
 * option: '--catalog'` once per option, without the command or where to look.) A built-in flag (`--help`,
 * `--wizard`, …) asks for no option.
 *
 * @internal
 */
export const missing = (args: ReadonlyArray<string>, commands: ReadonlyArray<Flags>): string | undefined => {
  const command = commands.find((c) => c.name === args[0])
  if (command === undefined) return undefined
  const { given } = scan(args.slice(1), command)
  for (const name of BUILT_IN.keys()) if (given.has(name)) return undefined
  const absent = command.required.filter((names) => !names.some((name) => given.has(name))).map((names) => names[0]!)
  if (absent.length === 0) return undefined
  return `rein ${command.name}: missing required option${absent.length === 1 ? "" : "s"} ${
    absent.join(", ")
  } (see rein ${command.name} --help)`
}
