/**
 * A secret on the command line is never echoed: the Ctrl-C lines (`rein batch`'s resume command in file
 * mode, `rein worker`'s rejoin line) and every error the CLI prints show each value that may carry one
 * (`--store`, `--base-url`, `--otlp`, a stray word) with its password, key or token as `***`
 * (internal/password.ts, the one masker).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Interrupt from "../src/internal/interrupt.js"
import * as Password from "../src/internal/password.js"
import { runCli } from "./support/runCli.js"

const SECRET = "s3cr3t-canary"

const files = ["--catalog", "examples/catalog.json", "--contract", "examples/contract.json"]

describe("a secret on the command line", () => {
  it("the resume command of an interrupted file-mode batch masks every value that may carry one", () => {
    const argv = [
      "node",
      "/repo/packages/cli/dist/bin.js",
      "batch",
      "--input",
      "in.jsonl",
      "--base-url",
      `https://llm.example/v1?api_key=${SECRET}&x=1`,
      `--otlp=http://collector:${SECRET}@127.0.0.1:4318`,
      "--overwrite"
    ]
    const line = Interrupt.resumeCommand(argv, "/repo", {})
    expect(line).not.toContain(SECRET)
    expect(line).toBe(
      "node packages/cli/dist/bin.js batch --input in.jsonl --base-url 'https://llm.example/v1?api_key=***&x=1' " +
        "'--otlp=http://collector:***@127.0.0.1:4318' --resume (with the password for ***)"
    )
    // Nothing to mask: no note, the line as before.
    expect(Interrupt.resumeCommand(["node", "/r/bin.js", "batch", "--input", "a b"], "/r", {})).toBe(
      "node bin.js batch --input 'a b' --resume"
    )
  })

  it("the Ctrl-C lines name the environment the run read, never its values, and only what it read", () => {
    const env = { REIN_BASE_URL: `https://u:${SECRET}@llm.example/v1`, REIN_API_KEY: SECRET, HOME: "/home/me" }
    const real = { providers: ["fake", "openai-compatible"], baseUrlFlag: false, otlpFlag: false }
    const read = Interrupt.environmentRead(real, env)
    expect(read).toEqual(["REIN_BASE_URL", "REIN_API_KEY"])
    const lines = Interrupt.message({ out: "run.jsonl", saved: 3, total: 10 }, {
      resumeWith: "rein batch --resume",
      environment: read
    })
    expect(lines.join("\n")).not.toContain(SECRET)
    expect(lines.at(-1)).toBe(
      "the resumed run reads REIN_BASE_URL and REIN_API_KEY from the environment, as this one did: keep them set " +
        "(not shown here)"
    )
    // The URL from --base-url: only the key came from the environment.
    expect(Interrupt.environmentRead({ ...real, baseUrlFlag: true }, env)).toEqual(["REIN_API_KEY"])
    // An empty REIN_BASE_URL is unset (as the provider reads it); the collector's variable when no --otlp.
    expect(Interrupt.environmentRead(real, { REIN_BASE_URL: " ", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }))
      .toEqual(["OTEL_EXPORTER_OTLP_ENDPOINT"])
    // Only fake providers and no collector variable: nothing read, no line (the lines as before).
    const fakeOnly = Interrupt.environmentRead({ ...real, providers: ["fake"] }, env)
    expect(fakeOnly).toEqual([])
    expect(Interrupt.message({ out: "run.jsonl", saved: 3, total: 10 }, { environment: fakeOnly })).toHaveLength(2)
  })

  it("the rejoin line masks a secret in any value, not only --store's", () => {
    const line = Interrupt.rejoinMessage(
      "r",
      [
        "node",
        "rein",
        "worker",
        "--store",
        `postgres://u:${SECRET}@h/db`,
        "--base-url",
        `https://h/v1?token=${SECRET}`
      ],
      "/",
      {}
    )
    expect(line).not.toContain(SECRET)
    expect(line).toContain("'https://h/v1?token=***'")
  })

  it("a key or token parameter is masked as a password is; a path or a plain URL is not", () => {
    expect(Password.maskWord(`https://h/v1?key=${SECRET}`)).toBe("https://h/v1?key=***")
    expect(Password.maskWord(`--base-url=https://h/v1?Access_Token=${SECRET}#f`)).toBe(
      "--base-url=https://h/v1?Access_Token=***#f"
    )
    for (const word of ["https://h/v1?monkey=1", "postgres://h/db?sslkey=/k.pem", "--out=run.jsonl", "a@b"]) {
      expect(Password.maskWord(word)).toBe(word)
    }
  })

  it.effect("an error echoing a stray or misplaced value does not show its secret", () =>
    Effect.gen(function*() {
      const store = `postgres://rein:${SECRET}@127.0.0.1:1/db`
      // @effect/cli echoes a stray word whole.
      const stray = yield* runCli(["plan", ...files, store])
      expect(stray.code).toBe(2)
      expect(stray.out).toMatch(/unknown argument/)
      expect(stray.out).not.toContain(SECRET)
      // A flag given a URL by mistake: its value is quoted in the error (cut at 40 characters).
      const misplaced = yield* runCli(["batch", ...files, "--input", "x", "--out", "y", "--order", store])
      expect(misplaced.code).toBe(2)
      expect(misplaced.out).toMatch(/--order: Expected one of/)
      expect(misplaced.out).not.toMatch(/s3cr/)
      const concurrency = yield* runCli(["batch", ...files, "--input", "x", "--out", "y", "--concurrency", store])
      expect(concurrency.out).toMatch(/--concurrency: Expected/)
      expect(concurrency.out).not.toMatch(/s3cr/)
    }), 60_000)
})
