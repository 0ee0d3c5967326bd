/**
 * Laws: property suites that every implementation of a service must pass (the in-memory one today, a
 * database-backed one later). A law is a name and an arbitrary of checks: each generated check is an
 * effect that fails with `LawBroken` when the implementation breaks the law for that input. A test file
 * registers them with its runner, so this module needs no test framework:
 *
 * ```ts
 * import { it } from "@effect/vitest"
 * import { Budget } from "@rein/core"
 * import { BudgetLaws } from "@rein/core/testing"
 *
 * for (const law of BudgetLaws.laws(Budget.make)) it.effect.prop(law.name, [law.cases], ([check]) => check)
 * ```
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import type { FastCheck as fc } from "effect"

/**
 * An implementation broke a law for one generated input.
 *
 * @example
 * ```ts
 * import { Laws } from "@rein/core/testing"
 *
 * const broken = new Laws.LawBroken({ law: "settle keeps the call", message: "calls left 3, expected 2" })
 * ```
 * @category errors
 * @since 0.1.0
 */
export class LawBroken extends Schema.TaggedError<LawBroken>()("LawBroken", {
  law: Schema.String,
  message: Schema.String
}) {}

/**
 * One law: its name, and the checks generated for it.
 *
 * @example
 * ```ts
 * import { Effect, FastCheck as fc } from "effect"
 * import type { Laws } from "@rein/core/testing"
 *
 * const law: Laws.Law = { name: "trivial", cases: fc.constant(Effect.void) }
 * ```
 * @category models
 * @since 0.1.0
 */
export interface Law {
  readonly name: string
  /** Each generated value is the check for one input: it fails with `LawBroken` when the law is broken. */
  readonly cases: fc.Arbitrary<Effect.Effect<void, LawBroken>>
}

/**
 * A check: fails with `LawBroken` (naming `law`) unless `holds`; the message is built only on failure.
 *
 * @example
 * ```ts
 * import { Laws } from "@rein/core/testing"
 *
 * const check = Laws.expect("one is one", 1 === 1, () => "arithmetic broke")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const expect = (law: string, holds: boolean, message: () => string): Effect.Effect<void, LawBroken> =>
  holds ? Effect.void : Effect.fail(new LawBroken({ law, message: message() }))

/**
 * Whether two numbers agree within floating-point noise (budgets add and subtract prices).
 *
 * @example
 * ```ts
 * import { Laws } from "@rein/core/testing"
 *
 * Laws.close(0.1 + 0.2, 0.3) // true
 * ```
 * @category utils
 * @since 0.1.0
 */
export const close = (a: number | null, b: number | null): boolean =>
  a === null || b === null ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))
