// A TCP proxy on loopback in front of the test server, to model a network that stops answering: while frozen,
// connections stay open and nothing passes either way (what a partition or a stalled server looks like to a
// client), until thawed. `deafen` models one connection going deaf: the connections open now stop passing
// anything, for good (still open), while new ones pass.
import { Deferred, Effect } from "effect"
import type { Scope } from "effect"
import { createConnection, createServer, type Socket } from "node:net"

export interface Proxy {
  readonly port: number
  readonly freeze: Effect.Effect<void>
  readonly thaw: Effect.Effect<void>
  /** Completes once a client has sent bytes that the frozen proxy held back (a query is in flight). */
  readonly held: Effect.Effect<void>
  /** The connections open now pass nothing from now on (they stay open); later ones pass. */
  readonly deafen: Effect.Effect<void>
  /** Connections accepted so far, and open now. */
  readonly accepted: () => number
  readonly open: () => number
}

export const start = (upstreamPort: number): Effect.Effect<Proxy, never, Scope.Scope> =>
  Effect.gen(function*() {
    let frozen = false
    let heldSignal = yield* Deferred.make<void>()
    const pending: Array<() => void> = []
    const sockets = new Set<Socket>()
    const open = new Set<{ deaf: boolean }>()
    let accepted = 0
    const forward = (from: Socket, to: Socket, fromClient: boolean, pair: { deaf: boolean }) =>
      from.on("data", (chunk: Buffer) => {
        if (pair.deaf) return
        if (!frozen) return void to.write(chunk)
        pending.push(() => void to.write(chunk))
        if (fromClient) Deferred.unsafeDone(heldSignal, Effect.void)
      })
    const server = createServer((client) => {
      accepted++
      const pair = { deaf: false }
      open.add(pair)
      const upstream = createConnection({ host: "127.0.0.1", port: upstreamPort })
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on("error", () => {})
        s.on("close", () => {
          open.delete(pair)
          client.destroy()
          upstream.destroy()
        })
      }
      forward(client, upstream, true, pair)
      forward(upstream, client, false, pair)
    })
    const port = yield* Effect.acquireRelease(
      Effect.async<number>((resume) => {
        server.listen(0, "127.0.0.1", () => {
          const address = server.address()
          resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
        })
      }),
      () =>
        Effect.sync(() => {
          for (const s of sockets) s.destroy()
          server.close()
        })
    )
    return {
      port,
      freeze: Effect.sync(() => {
        frozen = true
      }),
      thaw: Effect.gen(function*() {
        frozen = false
        for (const send of pending.splice(0)) send()
        heldSignal = yield* Deferred.make<void>()
      }),
      held: Effect.suspend(() => Deferred.await(heldSignal)),
      deafen: Effect.sync(() => {
        for (const pair of open) pair.deaf = true
      }),
      accepted: () => accepted,
      open: () => open.size
    }
  })
