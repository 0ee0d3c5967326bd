import { RateLimiter } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { PgRateLimiterStore } from "@rein/postgres"
import { Layer, Redacted } from "effect"

export const SharedRateLimiter = RateLimiter.layer.pipe(
  Layer.provide(PgRateLimiterStore.layer()),
  Layer.provide(PgClient.layer({ url: Redacted.make(process.env["DATABASE_URL"]!) }))
)
// limiter.consume({ key: "openai:org-1", limit: 600, window: "1 minute", algorithm: "token-bucket" })
