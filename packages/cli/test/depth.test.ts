/**
 * JSON nested deeper than 256 levels, in any file the CLI reads (a catalog or contract, a prompts file, a
 * journal), is bad input naming the file (and line), refused before it is parsed: V8 parses a 10 MB line of
 * nested arrays at ~550 MB.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runCli } from "./support/runCli.js"

const DEEP = 5 * 1024 * 1024
const deep = `${"[".repeat(DEEP)}${"]".repeat(DEEP)}`

describe("JSON nested too deep", () => {
  it.effect(
    "is bad input naming the file and line, in a config, a prompts file and a journal",
    () =>
      Effect.gen(function*() {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-depth-"))
        const file = (name: string, text: string) => {
          const p = path.join(dir, name)
          fs.writeFileSync(p, text)
          return p
        }
        const catalog = file("catalog.json", deep)
        const config = yield* runCli(["plan", "--catalog", catalog, "--contract", "examples/contract.json"])
        expect(config.code).toBe(2)
        expect(config.out).toContain(`${catalog}: nested deeper than 256 levels of arrays and objects`)

        const prompts = file("prompts.jsonl", `"a prompt"\n${deep}\n`)
        const batch = yield* runCli([
          "batch",
          "--catalog",
          "examples/catalog.json",
          "--contract",
          "examples/contract.json",
          "--input",
          prompts,
          "--out",
          path.join(dir, "out.jsonl"),
          "--dry-run"
        ])
        expect(batch.code).toBe(2)
        expect(batch.out).toContain(`${prompts}:2: nested deeper than 256 levels`)

        const journal = file("journal.jsonl", `${deep}\n`)
        const replay = yield* runCli(["replay", journal])
        expect(replay.code).toBe(2)
        expect(replay.out).toMatch(new RegExp(`${journal}:1: .*nested deeper than 256 levels`))
      }),
    120_000
  )
})
