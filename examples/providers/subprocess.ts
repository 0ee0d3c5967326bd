/**
 * Rein over a local program: absolute path, no shell, the request as JSON on stdin, an empty
 * environment, and a hard timeout that kills the whole process group.
 *
 * Run: `pnpm build && node examples/dist/providers/subprocess.js`
 */
import { NodeCommandExecutor, NodeFileSystem, NodeRuntime } from "@effect/platform-node"
import { Catalog, Contract, Rein } from "@rein/core"
import { Subprocess } from "@rein/providers"
import { Console, Effect, Layer } from "effect"

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

// Run as a script (the platform layer is the caller's choice; here Node's command executor).
if (process.argv[1]?.endsWith("subprocess.js")) {
  program.pipe(
    Effect.provide(NodeCommandExecutor.layer.pipe(Layer.provide(NodeFileSystem.layer))),
    NodeRuntime.runMain
  )
}
