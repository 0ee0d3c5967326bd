// A canary planted in provider errors through `Fake.fail` reaches Rein (as the failure's cause, the way a
// real adapter's SDK error would) and appears nowhere Rein writes: outcome and attempt records, journal
// lines, logs, batch artifacts.
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Catalog, Contract, Fake, Journal, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import { Cause, Effect, Layer, Logger, LogLevel } from "effect"
import * as path from "node:path"
import { inspect } from "node:util"
import { Checkpoint, Guardrails } from "../src/index.js"
import { nodeStore, tempDir, text } from "./artifact-helpers.js"
import { identity } from "./fixtures/artifact-identity.js"

const CANARY = "CANARY-e7c1-sk_live_do_not_log"

const endpoint = (id: string) => ({
  id,
  provider: "fake",
  model: `model-${id}`,
  capabilities: { contextWindow: 8_000, maxOutputTokens: 1_000 },
  prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
})

const catalog = Catalog.make({ endpoints: [endpoint("a"), endpoint("b")] })

const contract = Contract.make({
  deadline: "1 minute",
  candidates: ["a", "b"],
  allowSimulated: true,
  retry: { perEndpoint: 0 }
})

describe("canary", () => {
  it.scoped("provider text planted through Fake.fail reaches the failure and no record, journal, log or artifact", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const artifact = path.join(dir, "run.jsonl")
      const journal = path.join(dir, "journal.jsonl")
      // a fails every call with the canary and falls back to b; b answers the first item and fails the others
      // for good (`invalid_request`: FailedSafe), with the canary too.
      const fake = Fake.make({
        a: [Fake.fail("overloaded", { rawMessage: `upstream said: ${CANARY}` })],
        b: [Fake.succeed({ text: "fine" }), Fake.fail("invalid_request", { rawMessage: `bad: ${CANARY}` })]
      })
      const seen: Array<unknown> = []
      const provider: Provider.Provider = {
        ...fake.provider,
        call: (request, context) =>
          fake.provider.call(request, context).pipe(Effect.tapError((e) => Effect.sync(() => seen.push(e))))
      }
      const logs: Array<string> = []
      const logger = Logger.make(({ annotations, cause, message }) => {
        logs.push(inspect(message, { depth: 8 }), inspect([...annotations], { depth: 8 }), Cause.pretty(cause))
      })
      const summary = yield* Checkpoint.run(["first item", "second item", "third item"], {
        contract,
        guardrails: Guardrails.make({ concurrency: 1 }),
        checkpoint: { identity, resume: "reuse-successes" }
      }).pipe(
        Effect.provide(Layer.mergeAll(
          Rein.layer({ catalog, providers: { fake: provider } }),
          nodeStore({ path: artifact }),
          Journal.layerJsonl(journal).pipe(Layer.provide(NodeFileSystem.layer))
        )),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
        Logger.withMinimumLogLevel(LogLevel.All)
      )
      // The canary was really in the failures Rein received (as a real provider's error text would be).
      expect(seen.length).toBeGreaterThanOrEqual(3)
      expect(seen.every((e) => inspect(e, { depth: 8 }).includes(CANARY))).toBe(true)
      // The run did what the script says, so every place below was written.
      expect(summary.results.map((r) => r._tag)).toEqual(["Succeeded", "Failed", "Failed"])
      const records = summary.results.flatMap((r) =>
        r._tag === "Succeeded" ? r.completion.attempts : r._tag === "Failed" ? r.error.attempts : []
      )
      expect(records.map((r) => r.failure)).toContain("overloaded")
      expect(records.map((r) => r.failure)).toContain("invalid_request")
      expect(logs.join("\n")).toContain("overloaded")
      expect(text(journal).trim().split("\n")).toHaveLength(3)
      expect(text(artifact).trim().split("\n").length).toBeGreaterThanOrEqual(4)
      // And nowhere does the canary appear.
      expect(inspect(summary, { depth: 12 })).not.toContain(CANARY)
      expect(JSON.stringify(summary.results)).not.toContain(CANARY)
      expect(text(journal)).not.toContain(CANARY)
      expect(text(artifact)).not.toContain(CANARY)
      expect(logs.join("\n")).not.toContain(CANARY)
    }))
})
