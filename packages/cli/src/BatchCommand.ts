/**
 * stub
 *
 * @since 0.1.0
 */
import { Command } from "@effect/cli"

/**
 * @since 0.1.0
 */
export const command = Command.make("batch")
