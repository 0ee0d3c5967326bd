/**
 * Handler-less toolkits: the tools are sent to the model, their calls are reported, never resolved here
 * (the caller resolves them, above Rein).
 *
 * @internal
 */
import type { Tool, Toolkit } from "@effect/ai"
import { Effect } from "effect"

/** A toolkit whose calls are reported, never resolved. @internal */
export type HandlerlessToolkit = Toolkit.WithHandler<Record<string, Tool.Any>>

/** The tools without handlers: an inner call that resolved one would be a bug, so it dies. @internal */
export const handlerless = (tools: Iterable<Tool.Any>): HandlerlessToolkit => {
  const byName: Record<string, Tool.Any> = {}
  for (const tool of tools) byName[tool.name] = tool
  return {
    tools: byName,
    handle: (name: PropertyKey) => Effect.dieMessage(`tool ${String(name)} is resolved above Rein, not here`)
  }
}
