/**
 * The child process of benchmark 3: streams N items through `Batch.stream` over a zero-latency provider and
 * prints one JSON line with its peak RSS and heap. A generator feeds the items, so the source itself holds
 * nothing: whatever grows with N is the run's.
 *
 *   node --expose-gc bench/dist/memory-child.js <items>
 */
import { Batch, Guardrails } from "@rein/batch"
import { Contract, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Effect, Stream } from "effect"
import * as v8 from "node:v8"
import { catalog, request, response } from "./fixtures.js"

const items = Number(process.argv[2] ?? 100_000)

function* prompts(n: number) {
  for (let i = 0; i < n; i++) yield i
}

const provider: Provider.Provider = { internalMaxAttempts: 1, call: () => Effect.succeed(response) }
const layer = Rein.layer({ catalog, providers: { mem: provider } })
const contract = Contract.make({ deadline: "1 minute", candidates: ["mem/a"] })

let peakHeap = 0
const sample = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
}, 50)

const gc = (globalThis as { gc?: () => void }).gc

const main = Effect.gen(function*() {
  let done = 0
  let retainedBytes = NaN
  const started = process.hrtime.bigint()
  const profiler = new v8.GCProfiler()
  profiler.start()
  const heapBefore = v8.getHeapStatistics().used_heap_size
  yield* Batch.stream(prompts(items), {
    contract,
    request: () => request,
    guardrails: Guardrails.make({ concurrency: 100, maxTotalTokens: 1e12 })
  }).pipe(Stream.runForEach(() =>
    Effect.sync(() => {
      done++
      // The heap the run retains once every item has been handled, the stream still open: a full collection
      // first, so only what is still reachable counts.
      if (done === items && gc !== undefined) {
        gc()
        retainedBytes = process.memoryUsage().heapUsed
      }
    })
  ))
  const heapAfter = v8.getHeapStatistics().used_heap_size
  const stats = (profiler.stop()?.statistics ?? []) as ReadonlyArray<{
    readonly beforeGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
    readonly afterGC: { readonly heapStatistics: { readonly usedHeapSize: number } }
  }>
  let freed = 0
  for (const g of stats) freed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize
  const allocatedPerItem = (heapAfter - heapBefore + freed) / items
  const millis = Number(process.hrtime.bigint() - started) / 1e6
  clearInterval(sample)
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
  process.stdout.write(
    `${
      JSON.stringify({
        items,
        done,
        millis,
        maxRssKb: process.resourceUsage().maxRSS,
        peakHeapBytes: peakHeap,
        retainedBytes,
        allocatedPerItem
      })
    }\n`
  )
})

Effect.runPromise(Effect.provide(main, layer)).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
