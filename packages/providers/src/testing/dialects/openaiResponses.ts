/**
 * The OpenAI Responses API (`POST …/responses`): a response object whose `output` holds `message` and
 * `function_call` items, `status` `completed` or `incomplete` with `incomplete_details.reason`
 * (`max_output_tokens`, `content_filter`), `usage`; SSE events `response.created`,
 * `response.output_item.added` / `.done`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`, then `response.completed` or `response.incomplete`; in-stream
 * failures as an `error` event `{ type: "error", code, message }`. Errors as in chat completions.
 *
 * @since 0.1.0
 */
import type { Answer, Dialect } from "./Dialect.js"
import { sse } from "./Dialect.js"
import { openAiErrorBody } from "./openaiChat.js"

const INCOMPLETE: Partial<Record<Answer["finish"], string>> = {
  length: "max_output_tokens",
  content_filter: "content_filter"
}

const functionCall = (call: Answer["toolCalls"][number], status: string) => ({
  type: "function_call",
  id: `fc_${call.id}`,
  call_id: call.id,
  name: call.name,
  arguments: status === "completed" ? call.arguments : "",
  status
})

const message = (text: string) => ({
  type: "message",
  id: "msg_fault",
  status: "completed",
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [] }]
})

const responseObject = (model: string, answer: Answer | null) => {
  const incomplete = answer === null ? undefined : INCOMPLETE[answer.finish]
  const text = answer?.deltas.join("") ?? ""
  return {
    id: "resp_fault",
    object: "response",
    status: answer === null ? "in_progress" : incomplete !== undefined ? "incomplete" : "completed",
    created_at: 0,
    error: null,
    incomplete_details: incomplete === undefined ? null : { reason: incomplete },
    output: answer === null ? [] : [
      ...(text !== "" || answer.toolCalls.length === 0 ? [message(text)] : []),
      ...answer.toolCalls.map((call) => functionCall(call, "completed"))
    ],
    instructions: null,
    usage: answer === null || answer.usage === null ? null : {
      input_tokens: answer.usage.inputTokens,
      output_tokens: answer.usage.outputTokens,
      total_tokens: answer.usage.inputTokens + answer.usage.outputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 }
    },
    model,
    parallel_tool_calls: true,
    tools: [],
    tool_choice: "auto",
    temperature: 1,
    top_p: 1,
    metadata: {}
  }
}

const events = (model: string, answer: Answer) => {
  let seq = 0
  const event = (type: string, data: object) => sse({ type, sequence_number: seq++, ...data }, type)
  const head = [event("response.created", { response: responseObject(model, null) })]
  const deltas = answer.deltas.map((delta) =>
    event("response.output_text.delta", { output_index: 0, content_index: 0, item_id: "msg_fault", delta })
  )
  const tools = answer.toolCalls.flatMap((call, i) => {
    const outputIndex = i + 1
    return [
      event("response.output_item.added", { output_index: outputIndex, item: functionCall(call, "in_progress") }),
      event("response.function_call_arguments.delta", {
        output_index: outputIndex,
        item_id: `fc_${call.id}`,
        delta: call.arguments
      }),
      event("response.output_item.done", { output_index: outputIndex, item: functionCall(call, "completed") })
    ]
  })
  const final = responseObject(model, answer)
  const last = final.status === "incomplete" ? "response.incomplete" : "response.completed"
  return { head, deltas, tail: [...tools, event(last, { response: final })] }
}

/**
 * The Responses API at `…/responses`.
 *
 * @example
 * ```ts
 * import { openaiResponses } from "@rein/providers/testing"
 *
 * openaiResponses.dialect.claims("/v1/responses") // true
 * ```
 * @category dialects
 * @since 0.1.0
 */
export const dialect: Dialect = {
  name: "openai-responses",
  claims: (path) => path.endsWith("/responses"),
  errorBody: openAiErrorBody,
  complete: (model, answer) => JSON.stringify(responseObject(model, answer)),
  events: (model, answer) => events(model, answer),
  streamError: (error) =>
    sse(
      { type: "error", sequence_number: 0, code: error.code ?? error.type, message: error.message, param: null },
      "error"
    )
}
