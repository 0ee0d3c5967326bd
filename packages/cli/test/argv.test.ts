/**
 * The command line checked before parsing: every flag a command declares passes, and a typo of one (a
 * character dropped, doubled, changed, or two swapped) is answered with that flag.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Cli from "../src/Cli.js"
import * as Argv from "../src/internal/argv.js"

// The very list the binary checks against.
const commands = Cli.commandFlags

const flagOf = fc.constantFrom(...commands).chain((c) =>
  fc.constantFrom(...c.flags.keys()).map((flag) => ({ command: c, flag }))
)

/** A typo of `flag` past its `--`: one character dropped, doubled, replaced, or swapped with the next. */
const typo = (flag: string) =>
  fc.tuple(fc.integer({ min: 2, max: flag.length - 1 }), fc.constantFrom("drop", "double", "replace", "swap"))
    .map(([i, kind]): string => {
      const at = flag[i]!
      switch (kind) {
        case "drop":
          return flag.slice(0, i) + flag.slice(i + 1)
        case "double":
          return flag.slice(0, i) + at + flag.slice(i)
        case "replace":
          return flag.slice(0, i) + (at === "q" ? "z" : "q") + flag.slice(i + 1)
        default:
          return i + 1 < flag.length ? flag.slice(0, i) + flag[i + 1] + at + flag.slice(i + 2) : flag + "q"
      }
    })

describe("the command line check", () => {
  it("reads each command's flags from its options, whether it takes a value included", () => {
    const batch = commands.find((c) => c.name === "batch")!
    expect(batch.flags.get("--overwrite")).toBe(false)
    expect(batch.flags.get("--concurrency")).toBe(true)
    expect(batch.flags.get("--abort-on")).toBe(true)
    expect(commands.map((c) => c.name)).toEqual([
      "plan",
      "run",
      "replay",
      "explain",
      "simulate",
      "batch",
      "worker",
      "status"
    ])
  })

  it("lets every declared flag through, with or without =value", () => {
    fc.assert(fc.property(flagOf, ({ command, flag }) => {
      const value = command.flags.get(flag) ? ["v"] : []
      return Argv.check([command.name, flag, ...value], commands) === undefined &&
        Argv.check([command.name, `${flag}=v`], commands) === undefined
    }))
  })

  it("answers a typo of a long enough flag with a flag of that command, the intended one when it is the closest", () => {
    fc.assert(fc.property(
      flagOf.filter(({ flag }) => flag.length >= 8).chain((x) => typo(x.flag).map((t) => ({ ...x, typed: t }))),
      ({ command, flag, typed }) => {
        if (command.flags.has(typed)) return true
        const message = Argv.check([command.name, typed], commands)
        expect(message).toMatch(new RegExp(`^rein ${command.name}: unknown flag `))
        const suggested = /did you mean (--[a-z-]+)\?/.exec(message ?? "")?.[1]
        expect(suggested).toBeDefined()
        // Another flag may be as close (--rpm / --tpm); never one further away than the intended.
        expect(Argv.distance(typed, suggested!)).toBeLessThanOrEqual(Argv.distance(typed, flag))
        expect(command.flags.has(suggested!)).toBe(true)
      }
    ))
  })

  it("names the command, suggests the closest and lists them all", () => {
    expect(Argv.check(["pln"], commands)).toBe(
      "rein: unknown command \"pln\"; did you mean plan? (the commands: plan, run, replay, explain, simulate, batch, worker, status)"
    )
    expect(Argv.check(["frobnicate"], commands)).toBe(
      "rein: unknown command \"frobnicate\" (the commands: plan, run, replay, explain, simulate, batch, worker, status)"
    )
  })

  it("skips the value of a flag that takes one, and stops at --", () => {
    expect(Argv.check(["run", "--prompt", "--looks-like-a-flag"], commands)).toBeUndefined()
    expect(Argv.check(["replay", "--", "--file-named-so"], commands)).toBeUndefined()
    expect(Argv.check(["replay", "--jsn"], commands)).toMatch(/did you mean --json\?/)
  })

  it("names the required options a command line left out, read from the command's options", () => {
    expect(commands.find((c) => c.name === "run")!.required).toEqual([["--catalog"], ["--contract"], ["--prompt"]])
    expect(Argv.missing(["plan", "--catalog", "c.json"], commands)).toBe(
      "rein plan: missing required option --contract (see rein plan --help)"
    )
    // Given with =value, by any of its names, or not needed: --help asks for none; an optional flag is never asked.
    expect(Argv.missing(["plan", "--catalog=c.json", "--contract", "k.json"], commands)).toBeUndefined()
    expect(Argv.missing(["run", "--help"], commands)).toBeUndefined()
    expect(Argv.missing(["replay"], commands)).toBeUndefined()
    expect(Argv.missing(["batch", "--input", "i", "--catalog", "c", "--contract", "k"], commands)).toBeUndefined()
  })

  it("is what the binary runs: the root command's subcommands are the ones checked", () => {
    expect(Cli.command).toBeDefined()
    expect(Argv.check(["--help"], commands)).toBeUndefined()
    expect(Argv.check(["--version"], commands)).toBeUndefined()
  })
})
