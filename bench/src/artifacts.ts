/**
 * Benchmark 7: artifact append throughput. Records per second appended to a real JSONL file by
 * `@rein/batch`'s `JsonlStore`: flushed to the OS (each append returns after its `write`), and fsynced
 * (each append returns after an `fsync`), one appender at a time and 64 concurrent appenders (which share
 * writes and fsyncs: group commit). The file lives on the repository's disk (bench/.tmp), not a tmpfs.
 *
 * A record is a typical one: fingerprints, usage, cost, timing and a 200-character result (≈ 0.7 KB). The
 * floor rows write the same lines with blocking `writeSync` / `fsyncSync` in a loop: no Effect, no thread
 * pool, no validation — what a write costs on this disk.
 */
import { NodeFileSystem } from "@effect/platform-node"
import { ArtifactStore, Fingerprint, Identity, JsonlStore, Resume } from "@rein/batch"
import { Effect, Layer } from "effect"
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Benchmark, RunOptions, Section } from "./harness.js"
import { median, nowMillis, table } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))

const identity = Identity.make({
  provider: "openai",
  model: "gpt-4.1-mini",
  promptVersion: "invoice-v4",
  parserVersion: "invoice-schema-v2",
  applicationVersion: "billing-v7"
})
const identityFingerprint = Fingerprint.identity(identity)

const record = (i: number): ArtifactStore.ItemRecord =>
  Resume.makeRecord({
    itemId: `item-${i}`,
    index: i,
    promptFingerprint: Fingerprint.prompt(`prompt ${i}`),
    inputFingerprint: Fingerprint.sha256(`input ${i}`),
    identityFingerprint,
    outcome: "success",
    category: "ok",
    usage: { inputTokens: 900, outputTokens: 120 },
    cost: 0.000552,
    attempts: 1,
    durationMillis: 840,
    result: "x".repeat(200)
  })

interface Case {
  readonly name: string
  readonly fsync: boolean
  readonly concurrency: number
  readonly records: number
}

/** Appends `records` records to a fresh artifact; resolves with the seconds the appends took. */
const measure = (dir: string, c: Case, round: number): Promise<number> => {
  const path = join(dir, `${c.fsync ? "fsync" : "flush"}-${c.concurrency}-${round}.jsonl`)
  const records = Array.from({ length: c.records }, (_, i) => record(i))
  const program = Effect.scoped(Effect.gen(function*() {
    const store = yield* ArtifactStore.ArtifactStore
    const opened = yield* store.create(yield* ArtifactStore.makeManifest(identity))
    const t0 = nowMillis()
    yield* Effect.forEach(records, opened.append, { concurrency: c.concurrency, discard: true })
    return (nowMillis() - t0) / 1000
  })).pipe(
    Effect.provide(JsonlStore.layer({ path, fsync: c.fsync }).pipe(Layer.provide(NodeFileSystem.layer)))
  )
  return Effect.runPromise(program).finally(() => rmSync(path, { force: true }))
}

/** The floor: the same lines written with blocking `writeSync` (and `fsyncSync`) in a plain loop. */
const floor = (dir: string, c: Case, round: number): number => {
  const path = join(dir, `floor-${c.fsync ? "fsync" : "flush"}-${round}.jsonl`)
  const encoder = new TextEncoder()
  const lines = Array.from({ length: c.records }, (_, i) => encoder.encode(`${JSON.stringify(record(i))}\n`))
  const fd = openSync(path, "a")
  try {
    const t0 = nowMillis()
    for (const line of lines) {
      writeSync(fd, line)
      if (c.fsync) fsyncSync(fd)
    }
    return (nowMillis() - t0) / 1000
  } finally {
    closeSync(fd)
    rmSync(path, { force: true })
  }
}

const fmtRate = (x: number) => Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "—"

const run = async (options: RunOptions): Promise<Section> => {
  const scale = options.quick ? 0.1 : 1
  const cases: ReadonlyArray<Case> = [
    { name: "flush, 1 appender", fsync: false, concurrency: 1, records: Math.round(20_000 * scale) },
    { name: "flush, 64 appenders", fsync: false, concurrency: 64, records: Math.round(50_000 * scale) },
    { name: "fsync, 1 appender", fsync: true, concurrency: 1, records: Math.round(1_000 * scale) },
    { name: "fsync, 64 appenders", fsync: true, concurrency: 64, records: Math.round(10_000 * scale) }
  ]
  const rounds = options.quick ? 1 : 5
  const base = join(here, "..", ".tmp")
  mkdirSync(base, { recursive: true })
  const dir = mkdtempSync(join(base, "artifacts-"))
  const rows: Array<Array<string>> = []
  const rates = new Map<string, number>()
  try {
    for (const c of cases) {
      await measure(dir, { ...c, records: Math.max(10, Math.round(c.records / 10)) }, -1) // warm-up
      const perSecond: Array<number> = []
      for (let r = 0; r < rounds; r++) perSecond.push(c.records / (await measure(dir, c, r)))
      const rate = median(perSecond)
      rates.set(c.name, rate)
      options.log(`    ${c.name}: ${fmtRate(rate)} records/s`)
      rows.push([
        c.name,
        c.records.toLocaleString("en-US"),
        fmtRate(rate),
        (1e6 / rate).toFixed(1),
        `${fmtRate(Math.min(...perSecond))} – ${fmtRate(Math.max(...perSecond))}`
      ])
    }
    for (const c of cases.filter((c) => c.concurrency === 1)) {
      const perSecond: Array<number> = []
      for (let r = 0; r < rounds; r++) perSecond.push(c.records / floor(dir, c, r))
      const rate = median(perSecond)
      const name = `floor: node:fs writeSync${c.fsync ? " + fsyncSync" : ""}, no Effect`
      options.log(`    ${name}: ${fmtRate(rate)} records/s`)
      rows.push([
        name,
        c.records.toLocaleString("en-US"),
        fmtRate(rate),
        (1e6 / rate).toFixed(1),
        `${fmtRate(Math.min(...perSecond))} – ${fmtRate(Math.max(...perSecond))}`
      ])
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const flush = rates.get("flush, 1 appender") ?? Number.NaN
  const fsync = rates.get("fsync, 1 appender") ?? Number.NaN
  const grouped = rates.get("fsync, 64 appenders") ?? Number.NaN
  return {
    markdown: [
      "`JsonlStore` appends to a real file (ext4, bench/.tmp), median of " +
      `${rounds} round${rounds === 1 ? "" : "s"}. "flush": an append returns after its \`write\` (the record survives`,
      "a killed process); \"fsync\": after an `fsync` (it survives a power loss). Concurrent appenders share one",
      "write and one fsync per group (group commit). The floor rows are blocking writes in a bare loop.",
      "",
      table(["case", "records", "records/s (median)", "µs/record", "range over rounds"], rows)
    ].join("\n"),
    goals: [{
      benchmark: "7. artifact appends",
      goal: "append throughput reported: records/s with flush, and with fsync",
      measured: `${fmtRate(flush)} records/s flushed; ${fmtRate(fsync)} fsynced (${
        fmtRate(grouped)
      } with 64 appenders)`,
      status: Number.isFinite(flush) && Number.isFinite(fsync) ? "PASS" : "FAIL"
    }]
  }
}

export const artifacts: Benchmark = {
  id: 7,
  title: "Artifact appends",
  requires: { module: "@rein/batch", skipped: "skipped: @rein/batch not built yet" },
  goals: ["append throughput reported: records/s with flush, and with fsync"],
  run
}
