/**
 * What every benchmark shares: the catalog, zero-latency in-memory providers (a success one and a
 * two-failures-then-success one), and the Rein configurations under test.
 *
 * The Rein configurations are a table: adding a row ("journal on", "health on") adds it to every
 * benchmark that runs Rein.
 */
import { Catalog, Contract, Failure, Journal, Rein } from "@rein/core"
import type { Provider } from "@rein/core"
import type { Context } from "effect"
import { Effect, Exit, FiberId, Layer, Scope } from "effect"

export const catalog = Catalog.make({
  endpoints: [
    {
      id: "mem/a",
      provider: "mem",
      model: "a",
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4_096 },
      prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
    },
    {
      id: "mem/b",
      provider: "mem",
      model: "b",
      capabilities: { contextWindow: 128_000, maxOutputTokens: 4_096 },
      prices: { inputTokens: 1e-6, outputTokens: 2e-6 }
    }
  ]
})

export const request: Provider.CompletionRequest = { prompt: "hello", inputTokens: 10, maxOutputTokens: 10 }

export const response: Provider.ProviderResponse = { text: "ok", usage: { inputTokens: 10, outputTokens: 10 } }

/** What a provider is handed when a peer (not Rein) calls it directly. */
export const attemptContext: Provider.AttemptContext = {
  attempt: 1,
  call: 1,
  endpoint: catalog.byId.get("mem/a")!,
  timeoutMillis: 30_000,
  remainingMillis: 30_000,
  reservation: { cost: null, tokens: null },
  maxOutputTokens: 10
}

/** One failure value, reused: the benchmark measures orchestration, not error construction. */
export const failure = new Failure.ProviderFailure({ kind: "server_error", code: "500", dispatched: true })

/** A provider call counter, to check that every contender made exactly the calls it should. */
export interface Counted {
  calls: number
}

/** Zero latency, always succeeds. */
export const succeeding = (): Provider.Provider & Counted => {
  const self: Provider.Provider & Counted = {
    calls: 0,
    internalMaxAttempts: 1,
    call: () =>
      Effect.sync(() => {
        self.calls++
        return response
      })
  }
  return self
}

/** Zero latency, fails twice (a retryable `server_error`), then succeeds; and so on, in a cycle of three. */
export const flaky = (): Provider.Provider & Counted => {
  const self: Provider.Provider & Counted = {
    calls: 0,
    internalMaxAttempts: 1,
    call: () => Effect.suspend(() => self.calls++ % 3 < 2 ? Effect.fail(failure) : Effect.succeed(response))
  }
  return self
}

/** The same two providers, as promise-returning functions for promise-based peers. */
export const succeedingAsync = (): (() => Promise<Provider.ProviderResponse>) & Counted => {
  const f = Object.assign(() => {
    f.calls++
    return Promise.resolve(response)
  }, { calls: 0 })
  return f
}

export const flakyAsync = (): (() => Promise<Provider.ProviderResponse>) & Counted => {
  const f = Object.assign(
    () => f.calls++ % 3 < 2 ? Promise.reject(failure) : Promise.resolve(response),
    { calls: 0 }
  )
  return f
}

/**
 * The contract every overhead run uses: a generous deadline, up to three attempts on the first endpoint
 * (then a fallback), and a backoff that rounds to 0 ms so that retries are immediate, as for every peer.
 */
export const overheadContract = Contract.make({
  deadline: "30 seconds",
  candidates: ["mem/a", "mem/b"],
  retry: { perEndpoint: 2, base: 0.1, factor: 1, max: 0.1, jitter: 0 }
})

/** A Rein configuration under test. */
export interface ReinVariant {
  readonly name: string
  /** The layer Rein runs with, given the providers by name. May provide more than `Rein` (a journal, health). */
  readonly layer: (providers: Readonly<Record<string, Provider.Provider>>) => Layer.Layer<Rein.Rein>
}

/**
 * Core's own journal writer (`Journal.make`): it captures every decision's snapshot and verdicts and
 * assembles the request's record (contract and endpoints encoded) when the request ends; the sink then
 * drops it, so the figure is what journaling costs Rein, not what a disk costs.
 */
export const memoryJournal = Layer.succeed(Journal.Journal, Journal.make(() => Effect.void))

/**
 * Health on, with the defaults except two: on the flaky path two of every three calls fail, which would
 * (rightly) open the breaker at the default ratio of 0.5 and drain the default retry budget (0.2 tokens a
 * request for 2 retries a request). The bench measures the bookkeeping, not the shedding.
 */
const health = { failureRatio: 0.9, depositRatio: 2 }

/**
 * The Rein configurations measured, one line each: every benchmark that runs Rein runs each of them.
 */
export const reinVariants: ReadonlyArray<ReinVariant> = [
  {
    name: "Rein (journal off, health off)",
    layer: (providers) => Rein.layer({ catalog, providers, health: false })
  },
  {
    name: "Rein (journal off, health on)",
    layer: (providers) => Layer.orDie(Rein.layer({ catalog, providers, health }))
  },
  {
    name: "Rein (journal on, health on)",
    layer: (providers) => Layer.merge(Layer.orDie(Rein.layer({ catalog, providers, health })), memoryJournal)
  }
]

/**
 * Builds a variant's services once (in a scope left open for the life of the process): a run pays nothing
 * for them per call, as a program with a `ManagedRuntime` would.
 */
export const contextOf = (
  variant: ReinVariant,
  providers: Readonly<Record<string, Provider.Provider>>
): Promise<Context.Context<Rein.Rein>> =>
  Effect.runPromise(Effect.flatMap(Scope.make(), (scope) => Layer.buildWithScope(variant.layer(providers), scope)))

/** The lean bound's timeout. */
export class LeanTimeout {
  readonly _tag = "LeanTimeout"
}

/**
 * The lean bound: one fork (the call's fiber) and one `setTimeout` per call; when the timer fires it
 * interrupts the fiber, and the fiber's observer resumes the caller once the fiber has ended (the call's
 * teardown is waited for, as Rein waits for it). Nothing else: no planner, no records.
 */
export const leanBound = <A, E>(call: Effect.Effect<A, E>, millis: number): Effect.Effect<A, E | LeanTimeout> =>
  Effect.async<A, E | LeanTimeout>((resume) => {
    const fiber = Effect.runFork(call)
    let expired = false
    const timer = setTimeout(() => {
      expired = true
      fiber.unsafeInterruptAsFork(FiberId.none)
    }, millis)
    fiber.addObserver((exit) => {
      clearTimeout(timer)
      resume(expired ? Effect.fail(new LeanTimeout()) : exit)
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      fiber.unsafeInterruptAsFork(FiberId.none)
    })
  })

/** What one journaled Rein request handed its writer: the floor's journal work replays it (see `journaledLean`). */
export interface JournalWork {
  readonly header: Journal.Header
  readonly decision: Parameters<Journal.Writer["decision"]>
  readonly attempt: Parameters<Journal.Writer["attempt"]>[0]
  readonly outcome: Parameters<Journal.Writer["end"]>[0]
}

/**
 * The lean bound plus the least journal work a journaled request does, through `journal`'s writer (the
 * same `Journal.make` writer and sink as Rein's journal row): the writer opened with the request's header
 * (a fresh request id, from a counter) when the call starts, with the request's one decision; its one
 * attempt appended and the writer closed (`unsafeEnd`: the record assembled and handed to the sink) in the
 * fiber's observer, before the caller is resumed, so that the record exists once the outcome is returned, as
 * Rein's does. The decision, attempt and outcome are the values one real Rein request made (`work`): the
 * floor pays for appending and recording them, not for the planner that made them. No effect steps of its own
 * when the sink's effect is an `Exit` (Rein closes its entry the same way).
 */
export const journaledLean = <A, E>(
  call: Effect.Effect<A, E>,
  journal: Journal.Service,
  work: JournalWork,
  millis: number
): Effect.Effect<A, E | LeanTimeout> => {
  let ids = 0
  const open = journal.unsafeBegin ?? ((header: Journal.Header) => Effect.runSync(journal.begin(header)))
  return Effect.async<A, E | LeanTimeout>((resume) => {
    const writer = open({ ...work.header, requestId: `req-${(ids++).toString(36)}` })
    writer.decision(...work.decision)
    const fiber = Effect.runFork(call)
    let expired = false
    const timer = setTimeout(() => {
      expired = true
      fiber.unsafeInterruptAsFork(FiberId.none)
    }, millis)
    const close = (outcome: JournalWork["outcome"]) =>
      writer.unsafeEnd === undefined ? writer.end(outcome) : writer.unsafeEnd(outcome)
    fiber.addObserver((exit) => {
      clearTimeout(timer)
      writer.attempt(work.attempt)
      // The bench's calls never answer: every end is the deadline's (Rein's outcome for it).
      const end = close(work.outcome)
      // `Effect.fail`, as the lean bound resumes (an `Exit.fail` would save the step that captures the span).
      const result: Effect.Effect<A, E | LeanTimeout> = expired ? Effect.fail(new LeanTimeout()) : exit
      resume(Exit.isExit(end) && Exit.isSuccess(end) ? result : Effect.zipRight(end, result))
    })
    return Effect.suspend(() => {
      clearTimeout(timer)
      fiber.unsafeInterruptAsFork(FiberId.none)
      return close({ _tag: "Interrupted" })
    })
  })
}
