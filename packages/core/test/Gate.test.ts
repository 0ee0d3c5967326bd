import { describe, expect, it } from "@effect/vitest"
import { Gate, Rein } from "@rein/core"
import type { Outcome, Provider } from "@rein/core"
import { Effect, Exit, Fiber, FiberId, Layer } from "effect"
import { catalog, contract, endpoint } from "./fixtures.js"

const cat = catalog(endpoint("a"))
const request = { prompt: "p", inputTokens: 10, maxOutputTokens: 10 }

/** A provider that answers at once for `sync`, and otherwise never (counting the interruptions it ran). */
const provider = () => {
  const state = { tornDown: 0 }
  const p: Provider.Provider = {
    internalMaxAttempts: 1,
    simulated: true,
    call: (req) =>
      req.prompt === "sync"
        ? Effect.succeed({ text: "ok", usage: { inputTokens: 1, outputTokens: 1 } })
        : Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void state.tornDown++)))
  }
  return { provider: p, state }
}

/** A gate that admits with a fresh ticket, keeps what `unsafeRunning` hands it, and logs settlements. */
const keeping = () => {
  const running: Array<readonly [unknown, Gate.Running]> = []
  const settled: Array<readonly [unknown, Outcome.AttemptRecord]> = []
  let tickets = 0
  const service = Gate.Gate.of({
    admit: () => Effect.sync(() => `ticket-${++tickets}`),
    settle: (ticket, record) => Effect.sync(() => void settled.push([ticket, record])),
    closed: Effect.never,
    unsafeRunning: (ticket, attempt) => void running.push([ticket, attempt])
  })
  return { running, settled, service }
}

const run = (prompt: string, gate: Gate.Service, p: Provider.Provider) =>
  Rein.execute({ ...request, prompt }, contract({ candidates: ["a"], retry: { perEndpoint: 0 } })).pipe(
    Effect.provide(
      Layer.merge(
        Rein.layer({ catalog: cat, providers: { fake: p }, health: false }),
        Layer.succeed(Gate.Gate, gate)
      )
    )
  )

/** Lets the forked request run until its attempt is running (at most 100 yields). */
const untilRunning = (gate: { readonly running: ReadonlyArray<unknown> }, n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && gate.running.length < n; i++) yield* Effect.yieldNow()
  })

describe("Gate.unsafeRunning", () => {
  it.effect("is handed each suspended attempt with its ticket, and never an attempt that answered at once", () =>
    Effect.gen(function*() {
      const gate = keeping()
      const p = provider()
      yield* run("sync", gate.service, p.provider)
      expect(gate.running).toHaveLength(0)
      const fiber = yield* Effect.fork(run("hang", gate.service, p.provider))
      yield* untilRunning(gate, 1)
      expect(gate.running.map(([ticket]) => ticket)).toEqual(["ticket-2"])
      yield* Fiber.interrupt(fiber)
    }))

  it.effect("the attempt interrupted directly, then its caller: torn down once, recorded interrupted and confirmed, settled with its ticket", () =>
    Effect.gen(function*() {
      const gate = keeping()
      const p = provider()
      const fiber = yield* Effect.fork(run("hang", gate.service, p.provider))
      yield* untilRunning(gate, 1)
      const [[ticket, attempt]] = gate.running as [readonly [unknown, Gate.Running]]
      // The order a cancelling gate uses (see `Gate.Running`), in one synchronous step.
      attempt.unsafeInterruptAsFork(FiberId.none)
      fiber.unsafeInterruptAsFork(FiberId.none)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(p.state.tornDown).toBe(1)
      expect(gate.settled).toHaveLength(1)
      expect(gate.settled[0]![0]).toBe(ticket)
      expect(gate.settled[0]![1]).toMatchObject({ status: "interrupted", failure: null, teardownUnconfirmed: false })
      expect(gate.settled[0]![1].charged).toEqual(gate.settled[0]![1].reservation)
    }))

  it.effect("the attempt interrupted alone ends like a provider defect (the documented misuse)", () =>
    Effect.gen(function*() {
      const gate = keeping()
      const p = provider()
      const fiber = yield* Effect.fork(Effect.either(run("hang", gate.service, p.provider)))
      yield* untilRunning(gate, 1)
      gate.running[0]![1].unsafeInterruptAsFork(FiberId.none)
      yield* Fiber.join(fiber)
      expect(p.state.tornDown).toBe(1)
      expect(gate.settled.map(([, r]) => [r.status, r.failure, r.code])).toEqual([
        ["failure", "unknown", "provider_defect"]
      ])
    }))
})
