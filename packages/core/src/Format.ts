/**
 * Numbers as Rein's messages, explanations and progress lines write them: integers as they are, other
 * numbers to six significant digits without trailing zeros (`0.000123457`, not `0.00012345678`), so a cost
 * or a rate reads the same in a journal explanation, a planner reason, a batch summary and the CLI.
 *
 * @since 0.1.0
 */

/**
 * A number for a person to read: an integer unchanged, anything else to six significant digits.
 *
 * @example
 * ```ts
 * import { Format } from "@rein/core"
 *
 * Format.number(0.1 + 0.2) // "0.3"
 * Format.number(1234567) // "1234567"
 * Format.number(2 / 3) // "0.666667"
 * ```
 *
 * @category formatting
 * @since 0.1.0
 */
export const number = (n: number): string => (Number.isInteger(n) ? String(n) : String(Number(n.toPrecision(6))))
