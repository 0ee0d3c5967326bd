/**
 * Benchmark 3: stream memory. `Batch.stream` over 100,000 and over 1,000,000 items (a generator source, a
 * zero-latency provider, concurrency 100), each in a fresh child process: peak RSS must not grow with the
 * item count (1,000,000 within 1.2× of 100,000). `--quick` streams 10,000 and 100,000 instead.
 */
import { execFileSync } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Benchmark, RunOptions, Section } from "./harness.js"
import { loadNow, table } from "./harness.js"

const here = dirname(fileURLToPath(import.meta.url))

interface Measured {
  readonly items: number
  readonly done: number
  readonly millis: number
  readonly maxRssKb: number
  readonly peakHeapBytes: number
  readonly retainedBytes: number
  readonly allocatedPerItem: number
}

const measure = (items: number): Measured => {
  const out = execFileSync(process.execPath, ["--expose-gc", join(here, "memory-child.js"), String(items)], {
    encoding: "utf8",
    maxBuffer: 1 << 20
  })
  const measured = JSON.parse(out.trim().split("\n").at(-1)!) as Measured
  if (measured.done !== items) throw new Error(`stream memory: ${measured.done} of ${items} results`)
  return measured
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)

const run = async (options: RunOptions): Promise<Section> => {
  const [small, large] = options.quick ? [10_000, 100_000] : [100_000, 1_000_000]
  options.log(`  ${small.toLocaleString("en-US")} items`)
  const a = measure(small)
  options.log(`  ${large.toLocaleString("en-US")} items`)
  const b = measure(large)
  const ratio = b.maxRssKb / a.maxRssKb
  const retained = b.retainedBytes / a.retainedBytes
  const rows = [a, b].map((m) => [
    m.items.toLocaleString("en-US"),
    mb(m.maxRssKb * 1024),
    mb(m.peakHeapBytes),
    mb(m.retainedBytes),
    (m.allocatedPerItem / 1024).toFixed(2),
    (m.millis / 1000).toFixed(1),
    ((m.millis * 1000) / m.items).toFixed(0)
  ])
  const goal = `peak RSS ratio (${large.toLocaleString("en-US")} items ÷ ${
    small.toLocaleString("en-US")
  } items streamed) ≤ 1.2`
  return {
    markdown: [
      `\`Batch.stream\` over a generator of N items, zero-latency provider, concurrency 100, each size in a fresh`,
      `child process (\`process.resourceUsage().maxRSS\`; heap sampled every 50 ms). Retained = the used heap after a`,
      "full `gc()` once the last item was handled (the run still open); allocated = bytes allocated on the V8 heap",
      `per item over the whole run (\`v8.GCProfiler\`). Load ${loadNow().toFixed(1)} (1-minute average) at the end.`,
      "",
      table([
        "items",
        "peak RSS MB",
        "peak heap MB",
        "retained after gc MB",
        "KB allocated per item",
        "time s",
        "µs per item"
      ], rows)
    ].join("\n"),
    goals: [{
      benchmark: "3. memory",
      goal,
      measured: `${mb(b.maxRssKb * 1024)} MB vs ${mb(a.maxRssKb * 1024)} MB (${ratio.toFixed(3)}×)`,
      status: ratio <= 1.2 ? "PASS" : "FAIL"
    }, {
      benchmark: "3. memory",
      goal: `heap retained after a full GC (${large.toLocaleString("en-US")} items ÷ ${
        small.toLocaleString("en-US")
      } items streamed) ≤ 1.1`,
      measured: `${mb(b.retainedBytes)} MB vs ${mb(a.retainedBytes)} MB (${retained.toFixed(3)}×)`,
      status: retained <= 1.1 ? "PASS" : "FAIL"
    }]
  }
}

export const memory: Benchmark = {
  id: 3,
  title: "Stream memory",
  requires: { module: "@rein/batch", skipped: "skipped: @rein/batch not built yet" },
  goals: [
    "peak RSS ratio (1,000,000 items ÷ 100,000 items streamed) ≤ 1.2",
    "heap retained after a full GC (1,000,000 items ÷ 100,000 items streamed) ≤ 1.1"
  ],
  run
}
