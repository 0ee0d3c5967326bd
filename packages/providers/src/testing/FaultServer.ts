/**
 * A real HTTP server on loopback that speaks each vendor's wire format — OpenAI chat completions and
 * Responses, Anthropic Messages, Google Gemini, Azure OpenAI deployments, OpenRouter (one module per
 * dialect under `./dialects`, chosen by the request's path) — with faults scripted per request: statuses
 * with provider error codes and Retry-After, hangs before headers and mid-body, slow drips, malformed
 * JSON, connection resets, SSE streams cut before their terminator, errors inside SSE streams and huge or
 * endless bodies generated lazily. It records what it saw — every request, and whether the client closed the
 * connection before the response finished — so a test can prove that interruption reached the socket.
 *
 * It is a `Scope`d resource: `FaultServer.make` listens on `127.0.0.1` at a random port and closes the
 * server (and every open connection) when the scope closes. Handlers run as fibers on the live clock, so
 * the server behaves the same under `TestClock`; tests that talk to it need real time (`it.live`).
 *
 * Which fault a request gets: the script of its model (`scripts`), else the shared queue (`enqueue`), else
 * the `x-rein-fault` header (a fault name such as `overloaded`), else a normal answer.
 *
 * @since 0.1.0
 */
import { Clock, Data, Duration, Effect, FiberSet, Schedule } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Dialect from "./dialects/Dialect.js"
import { dialectOf } from "./dialects/index.js"

/**
 * One scripted response.
 *
 * @example
 * ```ts
 * import type { FaultServer } from "@rein/providers/testing"
 *
 * const hang: FaultServer.Fault = { _tag: "HangBeforeHeaders" }
 * ```
 * @category models
 * @since 0.1.0
 */
export type Fault =
  | {
    readonly _tag: "Ok"
    readonly deltas: ReadonlyArray<string>
    readonly usage: { readonly inputTokens: number; readonly outputTokens: number } | null
    /** Milliseconds between pieces of the body (a slow drip); 0 sends at once. */
    readonly dripMillis: number
    /** Why the answer ends (`length` is the vendor's output-limit finish); default `stop`, or `tool_calls`. */
    readonly finish?: Dialect.Finish | undefined
    readonly toolCalls?: ReadonlyArray<Dialect.ToolCall> | undefined
  }
  | {
    readonly _tag: "Status"
    readonly status: number
    readonly code: string | null
    readonly type: string | null
    readonly message: string
    readonly headers: Readonly<Record<string, string>>
    /** Typed error details (Google's `google.rpc.*`), written by dialects that have them. */
    readonly details?: ReadonlyArray<unknown> | undefined
  }
  | { readonly _tag: "HangBeforeHeaders" }
  | { readonly _tag: "HangMidBody"; readonly deltas: ReadonlyArray<string> }
  | { readonly _tag: "Malformed" }
  | { readonly _tag: "Reset" }
  | { readonly _tag: "CutStream"; readonly deltas: ReadonlyArray<string>; readonly clean: boolean }
  | {
    /**
     * A body of `bytes` bytes (`Infinity`: endless), generated lazily as the client reads it: an error body
     * for a non-2xx `status`, else an answer whose text is the padding (a single SSE event when streamed).
     */
    readonly _tag: "HugeBody"
    readonly status: number
    readonly bytes: number
    readonly headers: Readonly<Record<string, string>>
  }
  | { readonly _tag: "RawSse"; readonly chunks: ReadonlyArray<string> }
  | {
    /**
     * HTTP 200 and an SSE stream: the head, `deltas`, then an error event and the end of the body. The
     * event is the dialect's own in-stream error (Anthropic `event: error`, an OpenAI `error` event or
     * chunk, OpenRouter's numeric code) carrying `status`, `code`, `type` and `message`; or, when `event`
     * is set, `data: <event>` verbatim (vLLM's and llama.cpp's shapes).
     */
    readonly _tag: "StreamError"
    readonly deltas: ReadonlyArray<string>
    readonly status: number
    readonly code: string | null
    readonly type: string | null
    readonly message: string
    readonly event?: unknown
  }

/**
 * What the server saw of one request.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { FaultServer } from "@rein/providers/testing"
 *
 * declare const server: FaultServer.FaultServer
 * const closed = Effect.map(server.requests, (rs) => rs.filter((r) => r.clientClosed).length)
 * ```
 * @category models
 * @since 0.1.0
 */
export interface SeenRequest {
  readonly index: number
  readonly method: string
  readonly path: string
  /** The query string's parameters (a `key` credential is replaced by `<redacted>`). */
  readonly query: Readonly<Record<string, string>>
  /** The dialect that answered (`openai-chat`, `openai-responses`, `anthropic`, `gemini`, `azure`, `openrouter`). */
  readonly dialect: string | null
  /** Header names in lower case; credential values are replaced by `<redacted>`. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
  readonly model: string | null
  readonly stream: boolean
  readonly fault: Fault["_tag"]
  /** The client closed the connection before the response finished. */
  readonly clientClosed: boolean
  /** The response was written completely. */
  readonly finished: boolean
  /** Body bytes the server handed to the socket (counted for `HugeBody`, else 0). */
  readonly bodyBytes: number
}

/**
 * A running fault server.
 *
 * @example
 * ```ts
 * import type { FaultServer } from "@rein/providers/testing"
 *
 * declare const server: FaultServer.FaultServer
 * const sawClose = server.waitUntil((rs) => rs[0]?.clientClosed === true, "2 seconds")
 * ```
 * @category models
 * @since 0.1.0
 */
export interface FaultServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** `http://127.0.0.1:<port>/v1`: the base URL OpenAI-style clients expect. */
  readonly baseUrl: string
  readonly port: number
  /** Queues faults for the next requests (any model without its own script). */
  readonly enqueue: (...faults: ReadonlyArray<Fault>) => Effect.Effect<void>
  /** Queues faults for the next requests naming `model`. */
  readonly script: (model: string, ...faults: ReadonlyArray<Fault>) => Effect.Effect<void>
  /** Every request seen so far, in arrival order. */
  readonly requests: Effect.Effect<ReadonlyArray<SeenRequest>>
  /**
   * Polls (every 5 ms, on the live clock) until `predicate` holds of the requests seen, for at most
   * `within`; fails with `FaultServerTimeout` otherwise. For asserting on asynchronous socket events
   * without sleeping.
   */
  readonly waitUntil: (
    predicate: (requests: ReadonlyArray<SeenRequest>) => boolean,
    within?: Duration.DurationInput
  ) => Effect.Effect<ReadonlyArray<SeenRequest>, FaultServerTimeout>
}

/**
 * `waitUntil` gave up.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { FaultServer } from "@rein/providers/testing"
 *
 * declare const server: FaultServer.FaultServer
 * const waited = server.waitUntil((rs) => rs.length > 0).pipe(
 *   Effect.catchTag("FaultServerTimeout", (e) => Effect.succeed(e.waitedMillis))
 * )
 * ```
 * @category errors
 * @since 0.1.0
 */
export class FaultServerTimeout extends Data.TaggedError("FaultServerTimeout")<{ readonly waitedMillis: number }> {}

// --- fault constructors --------------------------------------------------------------------------------

/**
 * A normal answer. `usage: null` omits usage from the response; `finish: "length"` ends it at the output
 * limit (each dialect spells it: `length`, `max_output_tokens`, `max_tokens`, `MAX_TOKENS`); `toolCalls`
 * are written in the dialect's tool-call shape.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.ok({ deltas: ["Hel", "lo"], usage: { inputTokens: 12, outputTokens: 2 } })
 * FaultServer.ok({ text: "cut at the lim", finish: "length" })
 * FaultServer.ok({ text: "", toolCalls: [{ id: "call_1", name: "weather", arguments: "{\"city\":\"Oslo\"}" }] })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const ok = (options: {
  readonly text?: string
  readonly deltas?: ReadonlyArray<string>
  readonly usage?: { readonly inputTokens: number; readonly outputTokens: number } | null
  readonly finish?: Dialect.Finish
  readonly toolCalls?: ReadonlyArray<Dialect.ToolCall>
} = {}): Fault => ({
  _tag: "Ok",
  deltas: options.deltas ?? [options.text ?? "hello from the fault server"],
  usage: options.usage === undefined ? { inputTokens: 12, outputTokens: 5 } : options.usage,
  dripMillis: 0,
  ...(options.finish !== undefined ? { finish: options.finish } : {}),
  ...(options.toolCalls !== undefined ? { toolCalls: options.toolCalls } : {})
})

/**
 * A complete answer whose body arrives piece by piece, `every` apart.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.slowDrip({ deltas: ["a", "b", "c"], every: "20 millis" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const slowDrip = (options: {
  readonly deltas: ReadonlyArray<string>
  readonly every: Duration.DurationInput
}): Fault => ({
  _tag: "Ok",
  deltas: options.deltas,
  usage: { inputTokens: 12, outputTokens: options.deltas.length },
  dripMillis: Duration.toMillis(options.every)
})

/**
 * An error status with an error body in the provider's shape. `message` is free prose, the kind of text
 * that must never reach Rein's records.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.status(400, { code: "context_length_exceeded", type: "invalid_request_error" })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const status = (status: number, options: {
  readonly code?: string | null
  readonly type?: string | null
  readonly message?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly details?: ReadonlyArray<unknown>
} = {}): Fault => ({
  _tag: "Status",
  status,
  code: options.code ?? null,
  type: options.type ?? null,
  message: options.message ?? `status ${status} from the fault server`,
  headers: options.headers ?? {},
  ...(options.details !== undefined ? { details: options.details } : {})
})

/**
 * 429 with a wait hint: `retry-after` in seconds, `retry-after-ms`, or `retry-after` as an HTTP date.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.rateLimited({ retryAfterSeconds: 1 })
 * FaultServer.rateLimited({ retryAfterMillis: 300 })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const rateLimited = (options: {
  readonly retryAfterSeconds?: number
  readonly retryAfterMillis?: number
  readonly retryAfterDate?: string
  readonly message?: string
} = {}): Fault =>
  status(429, {
    code: "rate_limit_exceeded",
    type: "rate_limit_error",
    ...(options.message !== undefined ? { message: options.message } : {}),
    headers: {
      ...(options.retryAfterSeconds !== undefined ? { "retry-after": String(options.retryAfterSeconds) } : {}),
      ...(options.retryAfterMillis !== undefined ? { "retry-after-ms": String(options.retryAfterMillis) } : {}),
      ...(options.retryAfterDate !== undefined ? { "retry-after": options.retryAfterDate } : {})
    }
  })

/**
 * A body of `bytes` bytes (default 100 MB; `Infinity` never ends), written lazily as the client reads, so
 * neither side holds it whole: `SeenRequest.bodyBytes` tells how much the client made the server write.
 * With a non-2xx `status` it is an error body; with 2xx an answer whose text is the padding (streamed: one
 * SSE event, a single line that never ends before `bytes`).
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.hugeBody({ status: 500 })              // a 100 MB error body
 * FaultServer.hugeBody({ status: 200, bytes: Infinity }) // an endless answer
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const hugeBody = (options: {
  readonly status: number
  readonly bytes?: number
  readonly headers?: Readonly<Record<string, string>>
}): Fault => ({
  _tag: "HugeBody",
  status: options.status,
  bytes: options.bytes ?? 100 * 1024 * 1024,
  headers: options.headers ?? {}
})

/**
 * HTTP 200, some `deltas`, then an error inside the SSE stream, as a server reports a failure after the
 * headers went out. Either the dialect's own in-stream error event carrying a vendor error (`status`,
 * `code`, `type`, `message`: Anthropic `event: error` with `overloaded_error`, an OpenAI `error` event or
 * chunk, OpenRouter's numeric code), or a raw event as vLLM- and llama.cpp-style servers send it:
 * `data: {"error": <error>}`, or `event` as the whole event (vLLM's top-level `{ object: "error", … }`, a
 * Responses `error` event).
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.streamError({ deltas: ["par"], status: 529, type: "overloaded_error" })
 * FaultServer.streamError({ error: { message: "busy", type: "server_error", code: 503 } })
 * FaultServer.streamError({ event: { object: "error", type: "BadRequestError", code: 400 } })
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const streamError = (options: StreamErrorOptions): Fault => {
  const deltas = options.deltas ?? []
  if ("status" in options) {
    return {
      _tag: "StreamError",
      deltas,
      status: options.status,
      code: options.code ?? null,
      type: options.type ?? null,
      message: options.message ?? `in-stream error ${options.status} from the fault server`
    }
  }
  // A raw event carries its own status, if any: the dialect fields are not written.
  const event = "event" in options ? options.event : { error: options.error }
  return { _tag: "StreamError", deltas, status: 200, code: null, type: null, message: "", event }
}

/**
 * What `streamError` takes: a vendor error the dialect writes in its own in-stream shape, or a raw
 * `error` object (sent as `data: {"error": <error>}`), or a raw `event`.
 *
 * @example
 * ```ts
 * import type { FaultServer } from "@rein/providers/testing"
 *
 * const overloaded: FaultServer.StreamErrorOptions = { status: 529, type: "overloaded_error" }
 * const vllm: FaultServer.StreamErrorOptions = { error: { code: 503, type: "server_error" } }
 * ```
 * @category models
 * @since 0.1.0
 */
export type StreamErrorOptions =
  | {
    readonly deltas?: ReadonlyArray<string>
    readonly status: number
    readonly code?: string | null
    readonly type?: string | null
    readonly message?: string
  }
  | { readonly deltas?: ReadonlyArray<string>; readonly error: unknown }
  | { readonly deltas?: ReadonlyArray<string>; readonly event: unknown }

/**
 * HTTP 200 and `chunks` verbatim as an SSE stream, 20 ms apart, for fields no other fault sends (`retry:`,
 * comments, …).
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.rawSse("retry: 3600000\n\n", "data: [DONE]\n\n")
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const rawSse = (...chunks: ReadonlyArray<string>): Fault => ({ _tag: "RawSse", chunks })

/**
 * The named faults of the issue, ready to script.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.faults.overloaded // 529 overloaded_error
 * ```
 * @category constants
 * @since 0.1.0
 */
export const faults = {
  serverError: status(500, { type: "server_error" }),
  unavailable: status(503, { type: "server_error" }),
  overloaded: status(529, { type: "overloaded_error" }),
  unauthorized: status(401, { code: "invalid_api_key", type: "invalid_request_error" }),
  paymentRequired: status(402, { type: "billing_error" }),
  forbidden: status(403, { type: "permission_error" }),
  contextLength: status(400, { code: "context_length_exceeded", type: "invalid_request_error" }),
  insufficientQuota: status(429, { code: "insufficient_quota", type: "insufficient_quota" }),
  badRequest: status(400, { type: "invalid_request_error" }),
  hangBeforeHeaders: { _tag: "HangBeforeHeaders" } as Fault,
  hangMidBody: { _tag: "HangMidBody", deltas: ["partial "] } as Fault,
  malformedJson: { _tag: "Malformed" } as Fault,
  reset: { _tag: "Reset" } as Fault,
  /** SSE: some deltas, then the connection is destroyed before the terminator. */
  cutStream: { _tag: "CutStream", deltas: ["partial ", "answer "], clean: false } as Fault,
  /** SSE: some deltas, then the response ends cleanly but without the terminator. */
  endStreamEarly: { _tag: "CutStream", deltas: ["partial ", "answer "], clean: true } as Fault
} as const

/**
 * A fault by name (the `x-rein-fault` header): a key of `faults`, `rateLimited`, or `ok`.
 *
 * @example
 * ```ts
 * import { FaultServer } from "@rein/providers/testing"
 *
 * FaultServer.byName("overloaded") // the 529 fault
 * ```
 * @category getters
 * @since 0.1.0
 */
export const byName = (name: string): Fault | undefined =>
  name === "ok" ? ok() : name === "rateLimited" ?
    rateLimited({ retryAfterSeconds: 1 }) :
    Object.prototype.hasOwnProperty.call(faults, name)
    ? faults[name as keyof typeof faults]
    : undefined

// --- wire shapes ---------------------------------------------------------------------------------------

// Each vendor's wire format lives in its own module under ./dialects; these delegate to the one that claims
// the request's path.
type Shape = Dialect.Dialect

const shapeOf = dialectOf

const errorBody = (shape: Shape, fault: Extract<Fault, { _tag: "Status" }>): string => shape.errorBody(fault)

type Usage = Dialect.Usage

/** How an answer ends beyond its text: the finish the vendor reports and the tool calls it makes. */
interface Ending {
  readonly finish?: Dialect.Finish | undefined
  readonly toolCalls?: ReadonlyArray<Dialect.ToolCall> | undefined
}

const answerOf = (deltas: ReadonlyArray<string>, usage: Usage, ending: Ending = {}): Dialect.Answer => ({
  deltas,
  usage,
  toolCalls: ending.toolCalls ?? [],
  finish: ending.finish ?? ((ending.toolCalls ?? []).length > 0 ? "tool_calls" : "stop")
})

const completeBody = (shape: Shape, model: string, text: string, usage: Usage, ending?: Ending): string =>
  shape.complete(model, answerOf([text], usage, ending))

const sse = Dialect.sse

/** SSE events: the head (before any delta), one per delta, and the tail (usage and terminator). */
const streamEvents = (
  shape: Shape,
  model: string,
  deltas: ReadonlyArray<string>,
  usage: Usage,
  wantUsage: boolean,
  ending?: Ending
) => shape.events(model, answerOf(deltas, usage, ending), wantUsage)

// --- the server ----------------------------------------------------------------------------------------

const CREDENTIAL_HEADERS = new Set([
  "authorization",
  "x-api-key",
  "api-key",
  "x-goog-api-key",
  "openai-organization",
  "openai-project"
])

interface Entry {
  index: number
  method: string
  path: string
  query: Record<string, string>
  dialect: string | null
  headers: Record<string, string>
  body: unknown
  model: string | null
  stream: boolean
  fault: Fault["_tag"]
  clientClosed: boolean
  finished: boolean
  bodyBytes: number
}

const readBody = (req: Http.IncomingMessage): Effect.Effect<string, Error> =>
  Effect.async<string, Error>((resume) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    req.on("error", (e) => resume(Effect.fail(e)))
  })

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

const field = Dialect.field

/** What a request says: its path and query, headers (raw for the dialect, redacted for the record), its
 * dialect, the model it names and whether it asks for SSE. */
const describeRequest = (req: Http.IncomingMessage, body: unknown) => {
  const path = (req.url ?? "/").split("?")[0]!
  const query = Object.fromEntries(new URL(req.url ?? "/", "http://loopback").searchParams)
  const rawHeaders: Record<string, string> = {}
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined) continue
    rawHeaders[k] = Array.isArray(v) ? v.join(", ") : v
    headers[k] = CREDENTIAL_HEADERS.has(k) ? "<redacted>" : rawHeaders[k]
  }
  const shape = shapeOf(path)
  const incoming: Dialect.Incoming = { path, query, headers: rawHeaders, body }
  const bodyModel = typeof field(body, "model") === "string" ? field(body, "model") as string : null
  const model = shape?.model?.(incoming) ?? bodyModel
  const stream = shape?.streams?.(incoming) ?? field(body, "stream") === true
  return { headers, incoming, model, path, query, shape, stream }
}

const PADDING = Buffer.alloc(64 * 1024, "x")

/** Writes `bytes` of padding (or forever), waiting for the socket to drain: never more than a chunk queued. */
const writePadding = (res: Http.ServerResponse, entry: Entry, bytes: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    let left = bytes
    while (left > 0 && !res.destroyed) {
      const chunk = left >= PADDING.length ? PADDING : PADDING.subarray(0, left)
      left -= chunk.length
      entry.bodyBytes += chunk.length
      if (!res.write(chunk)) {
        yield* Effect.async<void>((resume) => {
          const done = () => {
            res.off("drain", done)
            res.off("close", done)
            resume(Effect.void)
          }
          res.on("drain", done)
          res.on("close", done)
        })
      }
    }
  })

const writeStreamError = (
  res: Http.ServerResponse,
  fault: Extract<Fault, { _tag: "StreamError" }>,
  shape: Shape,
  model: string
): void => {
  const events = streamEvents(shape, model, fault.deltas, null, false)
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const e of [...events.head, ...events.deltas]) res.write(e)
  res.end(fault.event !== undefined ? sse(fault.event) : shape.streamError(fault))
}

const writeRawSse = (res: Http.ServerResponse, chunks: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.gen(function*() {
    res.writeHead(200, { "content-type": "text/event-stream" })
    for (const chunk of chunks) {
      res.write(chunk)
      yield* Effect.sleep(Duration.millis(20))
    }
    res.end()
  })

const MARK = "@@padding@@"

const writeHuge = (
  res: Http.ServerResponse,
  entry: Entry,
  fault: Extract<Fault, { _tag: "HugeBody" }>,
  shape: Shape,
  model: string,
  stream: boolean
): Effect.Effect<void> => {
  const ok = fault.status >= 200 && fault.status < 300
  const sseBody = ok && stream
  const events = sseBody ? streamEvents(shape, model, [MARK], null, false) : undefined
  // The body in the shape's own framing, the padding where the text (or the error message) goes.
  const framed = !ok
    ? errorBody(shape, {
      _tag: "Status",
      status: fault.status,
      code: null,
      type: "server_error",
      message: MARK,
      headers: {}
    })
    : events !== undefined
    ? [...events.head, ...events.deltas, ...events.tail].join("")
    : completeBody(shape, model, MARK, null)
  const [head, tail] = framed.split(MARK) as [string, string]
  return Effect.gen(function*() {
    res.writeHead(fault.status, {
      "content-type": sseBody ? "text/event-stream" : "application/json",
      ...fault.headers
    })
    res.write(head)
    yield* writePadding(res, entry, fault.bytes)
    res.end(tail)
  })
}

// ---------------------------------------------------------------------------------------------------------
// Answering one request
// ---------------------------------------------------------------------------------------------------------

/** What a server holds: the queued faults, each model's script, and every request seen. */
interface State {
  readonly queue: Array<Fault>
  readonly scripts: Map<string, Array<Fault>>
  readonly entries: Array<Entry>
}

/** The next fault: the model's own script, then the shared queue, then the named header, else `ok()`. */
const choose = (state: State, model: string | null, header: string | undefined): Fault => {
  const own = model === null ? undefined : state.scripts.get(model)
  if (own !== undefined && own.length > 0) return own.shift()!
  if (state.queue.length > 0) return state.queue.shift()!
  const named = header === undefined ? undefined : byName(header)
  return named ?? ok()
}

const entryOf = (
  index: number,
  req: Http.IncomingMessage,
  described: ReturnType<typeof describeRequest>,
  fault: Fault
): Entry => ({
  index,
  method: req.method ?? "GET",
  path: described.path,
  query: Object.fromEntries(
    Object.entries(described.query).map(([k, v]) => [k, k === "key" ? "<redacted>" : v])
  ),
  dialect: described.shape?.name ?? null,
  headers: described.headers,
  body: described.incoming.body,
  model: described.model,
  stream: described.stream,
  fault: fault._tag,
  clientClosed: false,
  finished: false,
  bodyBytes: 0
})

/** One response in flight, and whether the server (not the client) destroyed its socket. */
interface Conn {
  readonly req: Http.IncomingMessage
  readonly res: Http.ServerResponse
  readonly entry: Entry
  destroyedByServer: boolean
}

/** Watches a response so its entry records whether the client closed it and whether it finished. */
const track = (req: Http.IncomingMessage, res: Http.ServerResponse, entry: Entry): Conn => {
  const conn: Conn = { req, res, entry, destroyedByServer: false }
  res.on("close", () => {
    if (!res.writableFinished && !conn.destroyedByServer) entry.clientClosed = true
  })
  res.on("finish", () => {
    entry.finished = true
  })
  return conn
}

const closedOf = (res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (res.destroyed || res.writableFinished) return resume(Effect.void)
    res.once("close", () => resume(Effect.void))
  })

/** A request in a known dialect, about to be answered with a fault. */
interface Reply {
  readonly conn: Conn
  readonly shape: Shape
  readonly name: string
  readonly stream: boolean
  readonly wantUsage: boolean
}

const write = (res: Http.ServerResponse, s: string) => Effect.sync(() => res.write(s))

const pause = (ms: number) => ms > 0 ? Effect.sleep(Duration.millis(ms)) : Effect.void

const writeNotFound = (res: Http.ServerResponse): void => {
  res.writeHead(404, { "content-type": "application/json" })
  res.end(JSON.stringify({ error: { message: "not found", type: "not_found", code: null } }))
}

const writeRefusal = (res: Http.ServerResponse, refusal: Dialect.Refusal): void => {
  res.writeHead(refusal.status, { "content-type": "application/json" })
  res.end(refusal.body)
}

const writeStatus = (res: Http.ServerResponse, shape: Shape, fault: Extract<Fault, { _tag: "Status" }>): void => {
  res.writeHead(fault.status, { "content-type": "application/json", ...fault.headers })
  res.end(errorBody(shape, fault))
}

const reset = (conn: Conn): void => {
  conn.destroyedByServer = true
  conn.req.socket.resetAndDestroy()
}

const writeMalformed = (res: Http.ServerResponse, stream: boolean): void => {
  if (stream) {
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.end(sse("{\"choices\": [{\"delta\": {\"content\": "))
  } else {
    res.writeHead(200, { "content-type": "application/json" })
    res.end("{\"id\": \"chatcmpl-fault\", \"choices\": [{\"message\": ")
  }
}

const hangMidBody = (reply: Reply, fault: Extract<Fault, { _tag: "HangMidBody" }>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { res } = reply.conn
    if (reply.stream) {
      const events = streamEvents(reply.shape, reply.name, fault.deltas, null, false)
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
      for (const e of [...events.head, ...events.deltas]) yield* write(res, e)
    } else {
      const full = completeBody(reply.shape, reply.name, fault.deltas.join(""), null)
      res.writeHead(200, { "content-type": "application/json", "content-length": String(full.length) })
      yield* write(res, full.slice(0, Math.floor(full.length / 2)))
    }
    return yield* Effect.never
  })

const cutStream = (reply: Reply, fault: Extract<Fault, { _tag: "CutStream" }>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { conn } = reply
    const events = streamEvents(reply.shape, reply.name, fault.deltas, null, false)
    conn.res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    for (const e of [...events.head, ...events.deltas]) yield* write(conn.res, e)
    if (fault.clean) {
      conn.res.end()
      return
    }
    // Wait until the deltas are flushed to the kernel, then close the socket mid-body (FIN, not RST:
    // an RST could make the client's kernel drop deltas it has received but not yet read).
    yield* Effect.async<void>((resume) => {
      conn.res.write("", () => resume(Effect.void))
    })
    conn.destroyedByServer = true
    conn.req.socket.destroy()
  })

const writeOkStream = (reply: Reply, fault: Extract<Fault, { _tag: "Ok" }>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { res } = reply.conn
    const events = streamEvents(reply.shape, reply.name, fault.deltas, fault.usage, reply.wantUsage, fault)
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    for (const e of events.head) yield* write(res, e)
    for (const e of events.deltas) {
      yield* pause(fault.dripMillis)
      yield* write(res, e)
    }
    for (const e of events.tail) yield* write(res, e)
    res.end()
  })

const writeOkJson = (reply: Reply, fault: Extract<Fault, { _tag: "Ok" }>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { res } = reply.conn
    const full = completeBody(reply.shape, reply.name, fault.deltas.join(""), fault.usage, fault)
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(full))
    })
    if (fault.dripMillis === 0) {
      res.end(full)
      return
    }
    const size = Math.max(1, Math.ceil(full.length / Math.max(1, fault.deltas.length)))
    for (let i = 0; i < full.length; i += size) {
      yield* write(res, full.slice(i, i + size))
      yield* pause(fault.dripMillis)
    }
    res.end()
  })

/** Answers a request with its fault. */
const respond = (reply: Reply, fault: Fault): Effect.Effect<void> =>
  Effect.suspend(() => {
    const { res } = reply.conn
    switch (fault._tag) {
      case "Status":
        return Effect.sync(() => writeStatus(res, reply.shape, fault))
      case "HangBeforeHeaders":
        return Effect.never
      case "Reset":
        return Effect.sync(() => reset(reply.conn))
      case "Malformed":
        return Effect.sync(() => writeMalformed(res, reply.stream))
      case "HangMidBody":
        return hangMidBody(reply, fault)
      case "CutStream":
        return cutStream(reply, fault)
      case "HugeBody":
        return writeHuge(res, reply.conn.entry, fault, reply.shape, reply.name, reply.stream)
      case "RawSse":
        return writeRawSse(res, fault.chunks)
      case "StreamError":
        return Effect.sync(() => writeStreamError(res, fault, reply.shape, reply.name))
      case "Ok":
        return reply.stream ? writeOkStream(reply, fault) : writeOkJson(reply, fault)
    }
  })

/** Reads a request, records it, picks its fault and answers it (or stops when the client goes away). */
const handle = (state: State, req: Http.IncomingMessage, res: Http.ServerResponse): Effect.Effect<void> =>
  Effect.gen(function*() {
    const raw = yield* Effect.orElseSucceed(readBody(req), () => "")
    const described = describeRequest(req, parseJson(raw))
    const { incoming, model, shape, stream } = described
    // A dialect refuses a request without its credential header or API version before any fault is used.
    const refusal = shape?.refuse?.(incoming)
    const headerFault = req.headers["x-rein-fault"]
    const fault = refusal !== undefined
      ? status(refusal.status)
      : choose(state, model, typeof headerFault === "string" ? headerFault : undefined)
    const entry = entryOf(state.entries.length, req, described, fault)
    state.entries.push(entry)
    const conn = track(req, res, entry)
    if (shape === undefined) return writeNotFound(res)
    const reply: Reply = {
      conn,
      shape,
      name: model ?? "fault-model",
      stream,
      wantUsage: shape.streamsUsage?.(incoming) ?? true
    }
    const answer = refusal !== undefined ? Effect.sync(() => writeRefusal(res, refusal)) : respond(reply, fault)
    // A handler ends when its response is done or when the client goes away, whichever comes first.
    yield* Effect.raceFirst(answer, closedOf(res))
  })

// ---------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------

/** Listens on `127.0.0.1` at a random port; closing the scope destroys open sockets and closes it. */
const listen = (onRequest: (req: Http.IncomingMessage, res: Http.ServerResponse) => void) => {
  const server = Http.createServer(onRequest)
  const sockets = new Set<Net.Socket>()
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  return Effect.acquireRelease(
    Effect.async<number>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.async<void>((resume) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
}

const serviceOf = (state: State, port: number, live: Clock.Clock): FaultServer => {
  const snapshot = Effect.sync((): ReadonlyArray<SeenRequest> =>
    state.entries.map((e) => ({ ...e, headers: { ...e.headers }, query: { ...e.query } }))
  )
  const url = `http://127.0.0.1:${port}`
  return {
    url,
    baseUrl: `${url}/v1`,
    port,
    enqueue: (...fs) => Effect.sync(() => void state.queue.push(...fs)),
    script: (model, ...fs) =>
      Effect.sync(() => {
        const own = state.scripts.get(model) ?? []
        own.push(...fs)
        state.scripts.set(model, own)
      }),
    requests: snapshot,
    waitUntil: (predicate, within = "2 seconds") => {
      const limit = Duration.toMillis(within)
      return snapshot.pipe(
        Effect.filterOrFail(predicate, () => new FaultServerTimeout({ waitedMillis: limit })),
        Effect.retry(Schedule.spaced("5 millis").pipe(Schedule.upTo(limit))),
        Effect.withClock(live)
      )
    }
  }
}

/**
 * Starts a fault server on `127.0.0.1` at a random port; it stops when the scope closes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { FaultServer } from "@rein/providers/testing"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const server = yield* FaultServer.make()
 *   yield* server.enqueue(FaultServer.rateLimited({ retryAfterSeconds: 1 }), FaultServer.ok())
 *   // point an adapter at server.baseUrl …
 * }))
 * ```
 * @category constructors
 * @since 0.1.0
 */
export const make = (options: {
  readonly faults?: ReadonlyArray<Fault>
  readonly scripts?: Readonly<Record<string, ReadonlyArray<Fault>>>
} = {}) =>
  Effect.gen(function*() {
    const state: State = {
      queue: [...(options.faults ?? [])],
      scripts: new Map<string, Array<Fault>>(
        Object.entries(options.scripts ?? {}).map(([model, fs]) => [model, [...fs]])
      ),
      entries: []
    }
    // Handlers run on the live clock whatever the caller's clock: the server's timing is real.
    const run = yield* FiberSet.makeRuntime<never>()
    const live = Clock.make()
    const port = yield* listen((req, res) => {
      run(
        handle(state, req, res).pipe(
          Effect.withClock(live),
          Effect.catchAllDefect(() => Effect.sync(() => res.destroy()))
        )
      )
    })
    return serviceOf(state, port, live)
  })
