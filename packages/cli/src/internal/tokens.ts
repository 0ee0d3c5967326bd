/**
 * The CLI's token bound of a request without a tokenizer of its own.
 *
 * @internal
 */
import type { Provider } from "@rein/core"

/** An upper bound of a prompt's tokens: its UTF-8 bytes plus chat framing (a token is at least one byte). @internal */
export const tokenizer = (request: Provider.CompletionRequest): number =>
  Buffer.byteLength(request.prompt, "utf8") + Buffer.byteLength(request.system ?? "", "utf8") + 16
