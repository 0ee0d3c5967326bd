import { PgClient } from "@effect/sql-pg"
import { Guardrails, RunLimits } from "@rein/batch"
import { PgBudget, PgHealth, PgRunLimits } from "@rein/postgres"
import { Config, Layer } from "effect"

// One connection string, one pool, for every shared service of this process.
const Database = PgClient.layerConfig({ url: Config.redacted("DATABASE_URL") })
const guardrails = Guardrails.make({ concurrency: 8, requestsPerMinute: 600, maxTotalCost: 25 })

export const SharedLive = Layer.mergeAll(
  PgBudget.layer({ name: "nightly", cost: 10, calls: 2000 }),
  PgHealth.layer({ name: "nightly", consecutiveFailures: 5, probes: 1 }),
  PgRunLimits.layer(RunLimits.configOf(guardrails), { name: "nightly-42", rateKey: "openai:org-1" })
).pipe(Layer.provide(Database))
// Provide SharedLive after Rein.layer({ catalog, providers }): its Health replaces the in-memory one, and
// Batch.run takes its RunLimits from the context.
