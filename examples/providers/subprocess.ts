/**
 * Rein over a local program: absolute path, no shell, the request as JSON on stdin, an empty
 * environment, and a hard timeout that kills the whole process group.
 */
import { Catalog, Contract, Rein } from "@rein/core"
import { Subprocess } from "@rein/providers"
import { Console, Effect } from "effect"

const catalog = Catalog.make({
  endpoints: [{
    id: "local/echo",
    provider: "echo",
    model: "echo-1",
    capabilities: { contextWindow: 4_096, maxOutputTokens: 256 },
    prices: { inputTokens: 0, outputTokens: 0 }
  }]
})

// Any executable that reads one JSON request on stdin and prints `{ "text": …, "usage"?: … }` works.
const script = `let s = ""; process.stdin.on("data", (d) => s += d).on("end", () =>
  process.stdout.write(JSON.stringify({ text: "echo: " + JSON.parse(s).prompt })))`

export const program = Effect.gen(function*() {
  const echo = yield* Subprocess.make({ executable: process.execPath, args: ["-e", script], timeout: "5 seconds" })
  const completion = yield* Rein.execute(
    { prompt: "ping", inputTokens: 5 },
    Contract.make({ deadline: "10 seconds", candidates: ["local/echo"] })
  ).pipe(Effect.provide(Rein.layer({ catalog, providers: { echo } })))
  yield* Console.log(`${completion.text} (usage ${JSON.stringify(completion.usage)})`)
  return completion
})

// Run it (the platform layer is the caller's choice):
//   import { NodeCommandExecutor, NodeFileSystem, NodeRuntime } from "@effect/platform-node"
//   program.pipe(Effect.provide(NodeCommandExecutor.layer.pipe(Layer.provide(NodeFileSystem.layer))), NodeRuntime.runMain)
