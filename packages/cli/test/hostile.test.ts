/**
 * Hostile input at the edge of the `rein` binary: a file that is a directory, a symlink loop, a name too long,
 * text that is not JSON (binary garbage, terminal escape sequences, a secret, a prompt cut short), an absurd
 * `--concurrency`. Each is bad input (exit 2) named by its file and place, never an internal error, a crash
 * or a quote of the file's text.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll } from "vitest"
import * as Binary from "../../../test/support/binary.js"
import { describeJsonError, lineColumn, showChar } from "../src/internal/jsonError.js"

const { rein } = Binary
const catalog = "examples/catalog.json"
const contract = "examples/contract.json"
let tmp = ""

// `rein batch` over `input` with the example catalog and contract, then `more`.
const batch = (input: string, ...more: ReadonlyArray<string>) =>
  rein(["batch", "--input", input, "--catalog", catalog, "--contract", contract, ...more])

const file = (name: string, content: string | Uint8Array): string => {
  const p = path.join(tmp, name)
  fs.writeFileSync(p, content)
  return p
}

const expectBadInput = (r: Binary.Result, message: RegExp) => {
  expect(r.code).toBe(2)
  expect(r.stderr).toMatch(message)
  expect(r.stderr).not.toMatch(/internal error|\n\s+at |Expected path/)
  expect(r.stderr.split("\n").length).toBeLessThan(4)
}

beforeAll(async () => {
  tmp = await Binary.prepare("rein-hostile-")
}, 600_000)

afterAll(() => Binary.cleanUp(tmp))

describe("why a text is not JSON (describeJsonError)", () => {
  const reason = (text: string, multiline = true) => {
    try {
      JSON.parse(text)
    } catch (e) {
      return describeJsonError(text, (e as Error).message, multiline)
    }
    throw new Error("valid JSON")
  }

  it("names the line and column, and never quotes the text", () => {
    expect(reason("a: b")).toBe("unexpected character 'a' at line 1, column 1")
    expect(reason("{\"a\":1,\n \"b\": [1,2,]\n}")).toBe("unexpected character ']' at line 2, column 12")
    expect(reason("{\"key\": \"sk-live-secret\", \"cost\": Infinity}")).toBe(
      "unexpected character 'I' at line 1, column 35"
    )
    expect(reason("{bad")).toBe("Expected property name or '}' at line 1, column 2")
    expect(reason("{\"a\":1} x")).toBe("Unexpected non-whitespace character after JSON at line 1, column 9")
    expect(reason("{\"a\":")).toBe("the text ends before the JSON value does")
    expect(reason("{\"prompt\": \"my secret prompt", false)).toBe("Unterminated string at column 29")
  })

  it("shows a character only when it is printable ASCII", () => {
    expect(reason("\u001b]0;PWNED\u0007")).toBe("unexpected character U+001B at line 1, column 1")
    expect(showChar("\u{1F600}")).toBe("U+1F600")
    expect(showChar("'")).toBe("'''")
    expect(lineColumn("ab\ncd\nef", 7)).toEqual({ line: 3, column: 2 })
  })
})

describe("rein on hostile input", () => {
  it("invalid JSON: the file, the line and column, never the text (escapes, secrets, prompts)", async () => {
    const escapes = file("escapes.json", "\u001b]0;PWNED\u0007\u001b[31m{}")
    const r1 = await rein(["plan", "--catalog", escapes, "--contract", contract])
    expectBadInput(r1, /escapes\.json: invalid JSON \(unexpected character U\+001B at line 1, column 1\)/)
    expect(r1.stderr).not.toContain("\u001b")
    expect(r1.stderr).not.toContain("PWNED")

    const secret = file("secret.json", "OPENAI_API_KEY=sk-live-0123456789\n")
    const r2 = await rein(["plan", "--catalog", catalog, "--contract", secret])
    expectBadInput(r2, /secret\.json: invalid JSON \(unexpected character 'O' at line 1, column 1\)/)
    expect(r2.stderr).not.toContain("sk-live")

    const garbage = file("garbage.json", Uint8Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))
    const r3 = await rein(["plan", "--catalog", garbage, "--contract", contract])
    expectBadInput(r3, /garbage\.json: invalid JSON/)
    // eslint-disable-next-line no-control-regex
    expect(r3.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]/)

    const prompts = file("cut.jsonl", "{\"id\": \"q1\", \"prompt\": \"MY PRIVATE PROMPT text\n")
    const r4 = await batch(prompts, "--out", path.join(tmp, "cut-out.jsonl"))
    expectBadInput(r4, /cut\.jsonl:1: invalid JSON \(Unterminated string at column \d+\)/)
    expect(r4.stderr).not.toContain("PRIVATE")
  }, 120_000)

  it("a path that is a directory, a symlink loop or a name too long: bad input naming what it is", async () => {
    const loop = path.join(tmp, "loop")
    fs.symlinkSync("loop", loop)
    expectBadInput(
      await rein(["plan", "--catalog", tmp, "--contract", contract]),
      /cannot read the catalog .*: a directory, not a file/
    )
    expectBadInput(
      await rein(["plan", "--catalog", catalog, "--contract", loop]),
      /cannot read the contract .*loop: too many symbolic links/
    )
    expectBadInput(
      await rein(["plan", "--catalog", "a".repeat(5000), "--contract", contract]),
      /cannot read the catalog a+: the name is too long/
    )
    expectBadInput(await rein(["replay", tmp]), /cannot read the record .*: a directory, not a file/)
    expectBadInput(
      await batch(tmp, "--out", loop),
      /cannot read the input .*: a directory, not a file/
    )
    expectBadInput(
      await batch("examples/prompts.jsonl", "--out", tmp),
      /^rein: --out .*: a directory, not a file\n$/
    )
    expectBadInput(
      await batch("examples/prompts.jsonl", "--out", loop),
      /^rein: --out .*loop: too many symbolic links\n$/
    )
    expectBadInput(
      await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "p", "--record", tmp]),
      /^rein: cannot open the record file .*: a directory, not a file\n$/
    )
  }, 120_000)

  it(
    "a journal line over 16 MiB (a file with no newline, a binary): replay and explain refuse it by its number",
    async () => {
      const huge = Buffer.alloc(16 * 1024 * 1024 + 1, 0x78)
      const endless = file("endless.jsonl", Buffer.concat([Buffer.from("\n"), huge]))
      const long = file("long.jsonl", Buffer.concat([Buffer.from("\n\n"), huge, Buffer.from("\n")]))
      for (const command of ["replay", "explain"]) {
        expectBadInput(
          await rein([command, endless]),
          /^rein: .*endless\.jsonl:2: not a readable record: the line is longer than 16777216 bytes \(is this a journal/
        )
        expectBadInput(await rein([command, long]), /long\.jsonl:3: not a readable record: the line is longer than/)
      }
    },
    120_000
  )

  it(
    "an artifact whose last line goes on past 16 MiB: --resume refuses it by its line and truncates nothing",
    async () => {
      const out = path.join(tmp, "overlong.jsonl")
      expect((await batch("examples/prompts.jsonl", "--out", out)).code).toBe(0)
      const lines = fs.readFileSync(out, "utf8").split("\n").length - 1
      // Not a torn write (no record is that long): resuming would have truncated 16 MiB of it.
      fs.appendFileSync(out, Buffer.alloc(16 * 1024 * 1024 + 1, 0x78))
      const size = fs.statSync(out).size
      const r = await batch("examples/prompts.jsonl", "--out", out, "--resume")
      expectBadInput(
        r,
        new RegExp(`overlong\\.jsonl:${lines + 1}: longer than 16777216 bytes \\(no record is that long`)
      )
      expect(fs.statSync(out).size).toBe(size)
    },
    120_000
  )

  it("explain prints each record as it reads it: a bad line ends it with exit 2, after the ones before", async () => {
    const record = path.join(tmp, "explained.jsonl")
    expect(
      (await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "p", "--record", record])).code
    )
      .toBe(0)
    const good = fs.readFileSync(record, "utf8")
    const whole = await rein(["explain", record])
    fs.appendFileSync(record, "not json\n")
    const r = await rein(["explain", record])
    expectBadInput(r, /explained\.jsonl:2: not a readable record \(json\)/)
    expect(good.split("\n")).toHaveLength(2)
    expect(r.stdout).toBe(whole.stdout)
  }, 120_000)

  it("explain --json on a bad journal: stdout is still one JSON array (the records before the bad line)", async () => {
    const record = path.join(tmp, "explainedJson.jsonl")
    for (let i = 0; i < 3; i++) {
      const r = await rein(["run", "--catalog", catalog, "--contract", contract, "--prompt", "p", "--record", record])
      expect(r.code).toBe(0)
    }
    const [one, two, three] = fs.readFileSync(record, "utf8").split("\n")
    const whole: ReadonlyArray<unknown> = JSON.parse((await rein(["explain", record, "--json"])).stdout)
    expect(whole).toHaveLength(3)
    // A malformed line in the middle; a last line cut short and then ended by a newline; a bad first line.
    const cases: ReadonlyArray<[string, string, RegExp, number]> = [
      ["middle.jsonl", `${one}\n${two}\nnot json\n${three}\n`, /middle\.jsonl:3: not a readable record \(json\)/, 2],
      ["torn.jsonl", `${one}\n${two}\n${three!.slice(0, 40)}\n`, /torn\.jsonl:3: not a readable record \(json\)/, 2],
      ["first.jsonl", `{"version":1\n${one}\n`, /first\.jsonl:1: not a readable record \(json\)/, 0]
    ]
    for (const [name, text, error, before] of cases) {
      const r = await rein(["explain", file(name, text), "--json"])
      expectBadInput(r, error)
      if (before === 0) expect(r.stdout).toBe("")
      else expect(JSON.parse(r.stdout)).toEqual(whole.slice(0, before))
    }
  }, 120_000)

  it(
    "--store of another scheme is refused before any connection, without echoing it (it may hold a password)",
    async () => {
      const store = ["--store", "mysql://user:hunter2@db.example/x", "--run", "r1"]
      for (const r of [await rein(["status", ...store]), await batch("examples/prompts.jsonl", ...store)]) {
        expectBadInput(r, /^rein: --store: Expected a postgres:\/\/ or postgresql:\/\/ connection string\n$/)
        expect(r.stderr).not.toContain("hunter2")
      }
    },
    120_000
  )

  it(
    "simulate: traffic that would take hours of CPU is refused before it starts, naming rate and duration",
    async () => {
      const huge = file("huge.json", JSON.stringify({ duration: "1000000 days", rate: 1_000_000 }))
      expectBadInput(
        await rein(["simulate", "--catalog", catalog, "--contract", contract, "--scenario", huge]),
        /huge\.json: rate, duration: 1000000 requests a second for 1000000d is about 8\.64e\+16 requests; a simulation runs at most 1000000/
      )
      const key = "k".repeat(100_000)
      const unknown = file("unknown.json", JSON.stringify({ duration: "1 second", endpoints: { [key]: [] } }))
      const r = await rein(["simulate", "--catalog", catalog, "--contract", contract, "--scenario", unknown])
      expectBadInput(r, /unknown\.json: endpoints: "k+"… \(100000 characters\) is not in the catalog/)
      expect(r.stderr.length).toBeLessThan(300)
    },
    120_000
  )

  it("a vendor's provider name (openai) runs on the fake: the refusal comes with a note saying so", async () => {
    const openai = file(
      "openai.json",
      JSON.stringify({
        endpoints: [{
          id: "openai/mini",
          provider: "openai",
          model: "gpt-4.1-mini",
          capabilities: { contextWindow: 32_000, maxOutputTokens: 4_096 },
          prices: { inputTokens: 1e-6, outputTokens: 1e-6 }
        }]
      })
    )
    const strict = file("strict.json", JSON.stringify({ deadline: "5 seconds", candidates: ["openai/mini"] }))
    const r = await rein(["run", "--catalog", openai, "--contract", strict, "--prompt", "hi"])
    expect(r.code).toBe(1)
    expect(r.stdout).toContain("simulation: simulated endpoint; the contract does not allow simulation")
    expect(r.stderr).toBe(
      "rein: note: provider \"openai\" (\"openai/mini\") runs on the built-in fake provider, which the contract does " +
        "not allow (allowSimulated): rein calls a real server only for provider \"openai-compatible\" (with --base-url " +
        "or REIN_BASE_URL)\n"
    )
    const examples = await rein(["plan", "--catalog", catalog, "--contract", contract])
    expect([examples.code, examples.stderr]).toEqual([0, ""])
  }, 120_000)

  it("help calls each path a file, as before paths were read as text", async () => {
    for (const command of ["plan", "run", "replay", "explain", "simulate", "batch"]) {
      const help = await rein([command, "--help"])
      expect(help.stdout).not.toMatch(/(--[a-z-]+ file|<record>)\n\n {2}A user-defined piece of text/)
      expect(help.stdout).toMatch(/(--catalog file|<record>)\n\n {2}A file\./)
    }
  }, 120_000)

  it("--concurrency far above the number of items runs them, in bounded memory", async () => {
    const wide = ["--out", path.join(tmp, "wide.jsonl"), "--concurrency", "1000000000", "--dry-run", "--json"]
    const r = await batch("examples/prompts.jsonl", ...wide)
    expect(r.code).toBe(0)
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: true, stats: { accepted: 48 } })
  }, 120_000)
})
