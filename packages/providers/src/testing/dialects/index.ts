/**
 * The dialects the fault server speaks, in the order it tries them: Azure and OpenRouter claim their own
 * chat-completions paths before OpenAI's generic one.
 *
 * @since 0.1.0
 */
import * as anthropic from "./anthropic.js"
import * as azure from "./azure.js"
import type { Dialect } from "./Dialect.js"
import * as gemini from "./gemini.js"
import * as openaiChat from "./openaiChat.js"
import * as openaiResponses from "./openaiResponses.js"
import * as openRouter from "./openRouter.js"

/**
 * Every dialect, most specific first.
 *
 * @example
 * ```ts
 * import { Dialects } from "@rein/providers/testing"
 *
 * Dialects.dialects.find((d) => d.claims("/v1/messages"))?.name // "anthropic"
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialects: ReadonlyArray<Dialect> = [
  azure.dialect,
  openRouter.dialect,
  openaiChat.dialect,
  openaiResponses.dialect,
  anthropic.dialect,
  gemini.dialect
]

/**
 * The dialect that claims `path`, if any.
 *
 * @example
 * ```ts
 * import { Dialects } from "@rein/providers/testing"
 *
 * Dialects.dialectOf("/v1/chat/completions")?.name // "openai-chat"
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialectOf = (path: string): Dialect | undefined => dialects.find((d) => d.claims(path))
