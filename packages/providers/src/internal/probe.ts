/**
 * Hidden retries, found at layer build with no traffic: the model is built once more over a probe
 * `HttpClient` that fails every request with a transport error (what a client-level retry sees), one call
 * is made under a clock whose sleeps end at once (so a backoff costs no time), and the requests are
 * counted. More than one request for one call is a retry inside the client. The probe call is untraced.
 *
 * @internal
 */
import type { LanguageModel } from "@effect/ai"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import { Clock, Effect } from "effect"

/** Past this many requests for one call the probe stops counting (a retry without end). */
const MAX_COUNTED = 16

/** A clock whose sleeps end at once: backoffs inside the probed client cost no time. */
const instant = (clock: Clock.Clock): Clock.Clock => ({
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  currentTimeMillis: clock.currentTimeMillis,
  currentTimeNanos: clock.currentTimeNanos,
  unsafeCurrentTimeMillis: () => clock.unsafeCurrentTimeMillis(),
  unsafeCurrentTimeNanos: () => clock.unsafeCurrentTimeNanos(),
  sleep: () => Effect.void
})

/**
 * How many HTTP requests one call of the model built by `build` makes when every request fails at
 * transport (1 for a one-shot client). Nothing leaves the process.
 *
 * @internal
 */
export const requestsPerCall = <E, R>(
  build: (http: HttpClient.HttpClient) => Effect.Effect<LanguageModel.Service, E, R>
): Effect.Effect<number, E, R> =>
  Effect.gen(function*() {
    let sent = 0
    const probe = HttpClient.make((request) => {
      sent += 1
      return sent > MAX_COUNTED
        ? Effect.dieMessage("probe: the client retries without end")
        : Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", description: "probe" }))
    })
    const model = yield* build(probe)
    const clock = yield* Effect.clock
    // Untraced: the probe's failed call is no call of the program's, and must not show in its traces.
    yield* model.generateText({ prompt: "probe" }).pipe(
      Effect.exit,
      Effect.withClock(instant(clock)),
      Effect.withTracerEnabled(false)
    )
    return Math.min(sent, MAX_COUNTED)
  })
