/**
 * The words and the live bar of `rein batch`'s progress: the bar fits any width, shows only figures it
 * knows, and an item's line says where it answered after which failures.
 */
import { NodeFileSystem } from "@effect/platform-node"
import * as FileSystem from "@effect/platform/FileSystem"
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc, Layer, Stream } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BatchCommand from "../src/BatchCommand.js"
import { table } from "../src/internal/format.js"
import * as Interrupt from "../src/internal/interrupt.js"
import { barLine } from "../src/internal/progress.js"
import * as Story from "../src/internal/story.js"

const progress = fc.record({
  accepted: fc.nat(100_000),
  done: fc.nat(100_000),
  succeeded: fc.nat(100_000),
  failed: fc.nat(100_000),
  reused: fc.nat(100_000),
  inFlight: fc.nat(1_000),
  tokens: fc.nat(10_000_000_000),
  cost: fc.double({ min: 0, max: 1e6, noNaN: true })
})

describe("the live bar", () => {
  it("never takes more columns than it is given", () => {
    fc.assert(
      fc.property(
        progress,
        fc.integer({ min: 1, max: 100_000 }),
        fc.integer({ min: 20, max: 300 }),
        (p, total, w) => [...barLine(p, total, w)].length <= w
      )
    )
  })

  it("before any attempt reported usage, shows no tokens and no cost", () => {
    const line = barLine(
      { accepted: 4, done: 0, succeeded: 0, failed: 0, reused: 0, inFlight: 4, tokens: 0, cost: 0 },
      48,
      79
    )
    expect(line).toMatch(/\] 0\/48 +ok 0 +failed 0 +in flight 4$/)
    expect(line).not.toMatch(/tokens|cost/)
  })

  it("at 70 columns keeps the counts and drops what does not fit", () => {
    const line = barLine(
      { accepted: 48, done: 30, succeeded: 30, failed: 0, reused: 0, inFlight: 4, tokens: 9666, cost: 0.0531816 },
      48,
      69
    )
    expect([...line].length).toBeLessThanOrEqual(69)
    expect(line).toMatch(/30\/48 +ok 30 +failed 0 +in flight 4/)
  })
})

describe("an item's line", () => {
  it("says where it answered, after which failures", () => {
    expect(Story.completed({
      _tag: "ItemCompleted",
      at: 0,
      index: 18,
      itemId: "q19",
      endpoint: "fake/b",
      attempts: [
        { endpoint: "fake/a", role: "first", failure: "overloaded", code: "http_503" },
        { endpoint: "fake/a", role: "retry", failure: "overloaded", code: "http_503" },
        { endpoint: "fake/b", role: "fallback", failure: null, code: null }
      ]
    })).toBe("ok on fake/b after 503 ×2")
    expect(Story.completed({ _tag: "ItemCompleted", at: 0, index: 0, itemId: "q1" })).toBe("ok")
    expect(Story.failed({
      _tag: "ItemFailed",
      at: 0,
      index: 0,
      itemId: "q1",
      category: "timeout",
      attempts: [{ endpoint: "fake/a", role: "first", failure: "timeout", code: null }]
    })).toBe("failed: timeout (timeout)")
    expect(
      Story.failed({
        _tag: "ItemFailed",
        at: 0,
        index: 0,
        itemId: "q1",
        category: "timeout",
        error: "DeadlineExceeded"
      })
    )
      .toBe("failed: timeout, item deadline reached")
    expect(
      Story.failed({ _tag: "ItemFailed", at: 0, index: 0, itemId: "q1", category: "overloaded", error: "SomethingNew" })
    )
      .toBe("failed: overloaded, SomethingNew")
    // A breaker's transition names the item whose attempt made it, when known.
    expect(Story.transition({ endpoint: "fake/a", from: "closed", to: "open", itemId: "q7" })).toBe(
      "breaker of fake/a open (item q7 failed): later items skip it until a probe succeeds " +
        "(with no other candidate they fail)"
    )
    expect(Story.transition({ endpoint: "fake/a", from: "open", to: "half_open", itemId: "q9" })).toBe(
      "breaker of fake/a half-open (item q9 probes it): cooldown over, a probe call tests it"
    )
    expect(Story.transition({ endpoint: "fake/a", from: "half_open", to: "closed" })).toBe(
      "breaker of fake/a closed: the probe succeeded, traffic returns"
    )
    // The breakers that refused it: which endpoint, when it may half-open.
    expect(
      Story.failed({
        _tag: "ItemFailed",
        at: 0,
        index: 0,
        itemId: "q1",
        category: "overloaded",
        error: "PlanExhausted",
        attempts: [{ endpoint: "fake/a", role: "first", failure: "overloaded", code: "http_503" }],
        breakers: [
          { endpoint: "fake/a", state: "open", halfOpensInMillis: 2_999.5 },
          { endpoint: "fake/b", state: "half_open", halfOpensInMillis: 0 }
        ]
      })
    ).toBe(
      "failed: overloaded, no candidate left: breaker of fake/a open, may half-open in 3000 ms; " +
        "breaker of fake/b half-open, every probe slot taken (503)"
    )
  })
})

describe("an interrupted run", () => {
  it("resumes with the same arguments, --resume instead of --overwrite, behind the command the user typed", () => {
    const argv = ["node", "/repo/packages/cli/dist/bin.js", "batch", "--input", "my prompts.jsonl", "--overwrite"]
    expect(Interrupt.resumeCommand(argv, "/repo", {})).toBe(
      "node packages/cli/dist/bin.js batch --input 'my prompts.jsonl' --resume"
    )
    expect(Interrupt.resumeCommand(argv, "/repo", { npm_lifecycle_event: "rein" })).toBe(
      "pnpm rein batch --input 'my prompts.jsonl' --resume"
    )
  })

  const ok = (id: string) => JSON.stringify({ kind: "item", itemId: id, outcome: "success", reusable: true })
  const audit = JSON.stringify({ kind: "item", itemId: "c", outcome: "failure", reusable: false })
  const torn = "{\"kind\":\"item\",\"reusable\":true,\"outcome\":\"success\""
  const artifact = (text: string) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rein-interrupt-")), "run.jsonl")
    fs.writeFileSync(file, text)
    return file
  }
  /** Node's file system where reading a whole file fails, as it does for an artifact past Node's limits. */
  const streamedOnly = Layer.effect(
    FileSystem.FileSystem,
    Effect.map(FileSystem.FileSystem, (fs): FileSystem.FileSystem => ({
      ...fs,
      readFile: (p) => Effect.dieMessage(`the whole of ${p} was read at once`),
      readFileString: (p) => Effect.dieMessage(`the whole of ${p} was read at once`)
    }))
  ).pipe(Layer.provide(NodeFileSystem.layer))
  const count = (file: string, chunkSize?: number) =>
    Effect.runPromise(
      Effect.flatMap(FileSystem.FileSystem, (fs) => Interrupt.reusable(fs, file, chunkSize)).pipe(
        Effect.provide(streamedOnly)
      )
    )

  it("counts the successes a resume reuses, once each, and ignores a torn last line", async () => {
    expect(await count(artifact([ok("a"), ok("b"), ok("a"), audit, torn].join("\n")))).toBe(2)
    expect(await count(path.join(os.tmpdir(), "rein-absent", "run.jsonl"))).toBe(0)
  })

  it("streams the artifact (never read whole): read in chunks cut anywhere, even inside a character, it counts the same", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `é-${i}-日本`)
    const lines = ids.flatMap((id, i) => i % 3 === 0 ? [ok(id), audit, ok(id)] : [ok(id)])
    const file = artifact(`${lines.join("\n")}\n${torn}`)
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 200 }), async (chunk) => {
        expect(await count(file, chunk)).toBe(40)
      }),
      { numRuns: 30 }
    )
  })
  it("stops at a line longer than an artifact line can be, after a bounded read (an endless file is not held)", async () => {
    const file = artifact(`${[ok("a"), ok("b")].join("\n")}\n`)
    let pulled = 0
    const MiB = new Uint8Array(1024 * 1024).fill(0x78)
    // The file, then 200 MiB of one line with no newline (as /dev/zero or a damaged artifact would give).
    const endless = Layer.effect(
      FileSystem.FileSystem,
      Effect.map(FileSystem.FileSystem, (fs): FileSystem.FileSystem => ({
        ...fs,
        stream: (p, o) =>
          Stream.concat(
            fs.stream(p, o),
            Stream.repeatEffect(Effect.sync(() => (pulled += 1, MiB))).pipe(Stream.take(200))
          )
      }))
    ).pipe(Layer.provide(NodeFileSystem.layer))
    const counted = await Effect.runPromise(
      Effect.flatMap(FileSystem.FileSystem, (fs) => Interrupt.reusable(fs, file)).pipe(Effect.provide(endless))
    )
    expect(counted).toBe(2)
    // 16 MiB is passed on the 17th MiB: nothing past it is read.
    expect(pulled).toBe(17)
  })
})

describe("the summary table", () => {
  const word = fc.stringMatching(/^[a-z0-9.,/()-]{1,12}$/)
  const cell = fc.array(word, { minLength: 1, maxLength: 20 }).map((ws) => ws.join(" "))

  it("fits its width, keeps every word in order, and aligns wrapped lines under the column", () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(word, cell), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 40, max: 120 }),
      (rows, width) => {
        const lines = table(rows, "  ", width).split("\n")
        for (const line of lines) expect([...line].length).toBeLessThanOrEqual(width)
        expect(lines.join(" ").split(/ +/).filter((w) => w !== "")).toEqual(
          rows.flatMap(([k, v]) => [k, ...v.split(" ")])
        )
        const column = 2 + Math.max(...rows.map(([k]) => k.length)) + 2
        for (const line of lines) {
          if (line.slice(0, column).trim() === "") expect(line[column]).not.toBe(" ")
        }
      }
    ))
  })

  it("renders a batch's summary in 70 columns", () => {
    const text = BatchCommand.render({
      ok: true,
      out: ".tmp/demo-run.jsonl",
      items: 48,
      termination: { _tag: "Completed", kind: "completed", reason: "all 48 accepted items finished" },
      stats: {
        accepted: 48,
        succeeded: 48,
        failed: 0,
        reused: 0,
        planned: 0,
        byCategory: { ok: 48 },
        attempts: 54,
        retries: 2,
        fallbacks: 4,
        rateLimited: 0,
        tokensUsed: 9666,
        costUsed: 0.0307998,
        costComplete: true,
        unknownUsageAttempts: 6,
        admissionWaits: 0,
        admissionWaitMillis: 0
      },
      byEndpoint: { "fake/a": 31, "fake/b": 17 },
      latency: { p50: 255.4, p90: 315, p99: 662.3, max: 662.3 },
      elapsedMillis: 3900,
      breakers: { "fake/a": { open: 1, half_open: 1, closed: 1 } }
    })
    for (const line of text.split("\n")) expect([...line].length).toBeLessThanOrEqual(BatchCommand.SUMMARY_WIDTH)
    expect(text).toMatch(/item latency +p50 255\.4 ms, p90 315 ms, p99 662\.3 ms,\n +max 662\.3 ms/)
  })
})
