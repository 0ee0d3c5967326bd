/**
 * The `rein` command as a library: each command's logic (plan, run, replay, explain, simulate, batch) and
 * its `@effect/cli` definition.
 *
 * @since 0.1.0
 */

/**
 * The root command and `main` (argv → exit code).
 *
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

/**
 * The exit codes.
 *
 * @since 0.1.0
 */
export * as ExitCode from "./ExitCode.js"

/**
 * Bad input at the command's edge.
 *
 * @since 0.1.0
 */
export * as InputError from "./InputError.js"

/**
 * `rein plan`: legality verdicts with numbers and the order of trial.
 *
 * @since 0.1.0
 */
export * as Plan from "./Plan.js"

/**
 * `rein run`: one request, its outcome and attempts, optionally recorded.
 *
 * @since 0.1.0
 */
export * as Run from "./Run.js"

/**
 * `rein replay`: every recorded decision reproduced byte for byte, or the first difference.
 *
 * @since 0.1.0
 */
export * as Replay from "./Replay.js"

/**
 * `rein explain`: the readable timeline of a recorded request.
 *
 * @since 0.1.0
 */
export * as Explain from "./Explain.js"

/**
 * Scenario files: endpoint behaviour over time, traffic, price changes.
 *
 * @since 0.1.0
 */
export * as Scenario from "./Scenario.js"

/**
 * `rein simulate`: traffic through scripted endpoints in virtual time.
 *
 * @since 0.1.0
 */
export * as Simulate from "./Simulate.js"

/**
 * `rein batch`: a checkpointed batch run with progress and a summary.
 *
 * @since 0.1.0
 */
export * as BatchCommand from "./BatchCommand.js"

/**
 * Batch runs shared by many workers through PostgreSQL: `rein batch --store`, `rein worker`, `rein status`.
 *
 * @since 0.1.0
 */
export * as Distributed from "./Distributed.js"
