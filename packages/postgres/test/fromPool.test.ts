// A PgClient made from the user's own `pg` pool whose connections go through a custom stream factory (a tunnel:
// the pool's host and port lead nowhere, only the factory's sockets reach the server): the services' listening
// connection is made by the same factory. Before: it was made from the client's `config`, which
// `PgClient.fromPool` fills with the pool's host and port only, and so it never connected.
import { PgClient } from "@effect/sql-pg"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Fiber, Layer, Stream } from "effect"
import { createRequire } from "node:module"
import { Socket } from "node:net"
import { PgFromPool } from "../src/index.js"
import * as LC from "../src/internal/listenConnection.js"
import { available, PgLive, Server } from "./pg.js"
import * as Proxy from "./proxy.js"

/** `pg`'s `Pool`, from where sql-pg finds it (this package has no `pg` of its own). */
const newPool = (options: object): unknown => {
  const pg: unknown = createRequire(createRequire(import.meta.url).resolve("@effect/sql-pg"))("pg")
  const Pool: unknown = typeof pg === "object" && pg !== null ? Reflect.get(pg, "Pool") : undefined
  if (typeof Pool !== "function") throw new Error("pg.Pool not found")
  return Reflect.construct(Pool, [options])
}

const end = (pool: unknown) =>
  Effect.promise(async () => {
    const f: unknown = typeof pool === "object" && pool !== null ? Reflect.get(pool, "end") : undefined
    if (typeof f === "function") await Reflect.apply(f, pool, [])
  })

/** A client of a pool that reaches the server only through `port` (its own host and port lead nowhere). */
const tunnelled = (
  url: string,
  serverPort: number,
  port: number,
  make: (options: PgClient.PgClientFromPoolOptions) => Layer.Layer<PgClient.PgClient, unknown>
) =>
  Effect.gen(function*() {
    const made = { sockets: 0 }
    const stream = () => {
      made.sockets++
      const socket = new Socket()
      const connect = socket.connect.bind(socket)
      return Object.assign(socket, { connect: () => connect(port, "127.0.0.1") })
    }
    // Port 1 on loopback: nothing listens there; only the factory's sockets reach the server.
    const connectionString = url.replace(`:${serverPort}/`, ":1/")
    const acquire = Effect.acquireRelease(Effect.sync(() => newPool({ connectionString, stream, max: 2 })), end)
    const context = yield* Effect.orDie(Layer.build(make({ acquire })))
    return { pg: Context.get(context, PgClient.PgClient), made }
  })

describe.skipIf(!available)("PgFromPool", () => {
  layer(PgLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("the listening connection is made by the pool's stream factory, and hears", () =>
      Effect.gen(function*() {
        const server = yield* Server
        const proxy = yield* Proxy.start(server.port)
        const { made, pg } = yield* tunnelled(server.url, server.port, proxy.port, PgFromPool.layer)
        expect(yield* pg<{ readonly one: number }>`SELECT 1 AS one`).toEqual([{ one: 1 }])
        const before = made.sockets
        const heard = yield* Effect.fork(Stream.runHead(LC.of(pg).subscribe("rein_from_pool")))
        // Notified until heard (the subscription takes a few round trips to set up), within a bound.
        for (let i = 0; i < 200 && heard.unsafePoll() === null; i++) {
          yield* pg`SELECT pg_notify(${"rein_from_pool"}, ${"hello"})`
          yield* Effect.sleep(Duration.millis(10))
        }
        const exit = yield* Fiber.await(heard)
        expect(exit._tag === "Success" ? exit.value : exit).toEqual(expect.objectContaining({ value: "hello" }))
        expect(made.sockets).toBeGreaterThan(before)
      }))
  })
})
