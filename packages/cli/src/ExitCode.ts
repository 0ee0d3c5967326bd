/**
 * The exit codes of `rein`, the same for every command.
 *
 * | code | meaning |
 * | --- | --- |
 * | 0 | ok: the request succeeded, the batch completed with no failed item, the record replayed |
 * | 1 | the request or the run failed (a terminal outcome, a failed item, a stopped batch) |
 * | 2 | usage or bad input: unknown flag, missing file, invalid JSON, schema violation, unreadable record |
 * | 3 | replay mismatch: a recorded decision did not reproduce byte for byte |
 * | 4 | internal error (a defect in rein: please report it) |
 * | 130 | interrupted (Ctrl-C) |
 *
 * @since 0.1.0
 */

/**
 * An exit code of the `rein` command.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * const code: ExitCode.ExitCode = ExitCode.ok
 * ```
 * @since 0.1.0
 * @category models
 */
export type ExitCode = 0 | 1 | 2 | 3 | 4 | 130

/**
 * Success.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.ok // 0
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const ok: ExitCode = 0

/**
 * The request or run failed.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.failed // 1
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const failed: ExitCode = 1

/**
 * Usage error or bad input.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.usage // 2
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const usage: ExitCode = 2

/**
 * A replayed decision differed from the recorded one.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.mismatch // 3
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const mismatch: ExitCode = 3

/**
 * A defect in rein itself.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.internal // 4
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const internal: ExitCode = 4

/**
 * Interrupted by a signal.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * ExitCode.interrupted // 130
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const interrupted: ExitCode = 130

/**
 * The table above, as printed at the end of `rein --help`.
 *
 * @example
 * ```ts
 * import { ExitCode } from "@rein/cli"
 *
 * console.log(ExitCode.help)
 * ```
 * @since 0.1.0
 * @category exit codes
 */
export const help = "Exit codes: 0 ok; 1 request or run failed; 2 usage or bad input; 3 replay mismatch; " +
  "4 internal error; 130 interrupted."
