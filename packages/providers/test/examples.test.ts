import { NodeCommandExecutor, NodeFileSystem, NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { program as agent } from "../../../examples/providers/agent.js"
import { program as effectAi } from "../../../examples/providers/effect-ai.js"
import { program as openAiCompatible } from "../../../examples/providers/openai-compatible.js"
import { program as subprocess } from "../../../examples/providers/subprocess.js"
import { program as twoVendors } from "../../../examples/providers/two-vendors.js"

// The examples run as written, with the Node platform layers a program would give them.
const http = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, NodeHttpClient.layer)
const commands = NodeCommandExecutor.layer.pipe(Layer.provide(NodeFileSystem.layer))

describe("examples/providers", () => {
  it.live("openai-compatible: Rein waits what the server asked, retries, then streams", () =>
    Effect.map(http(openAiCompatible), (c) => {
      expect(c.text).toBe("Paris.")
      expect(c.attempts.map((a) => a.backoffMillis)).toEqual([150, 0])
    }))

  it.live("effect-ai: an overloaded model falls back to the next", () =>
    Effect.map(http(effectAi), (c) => expect([c.endpoint, c.text]).toEqual(["openai/mini", "Bonjour."])))

  it.effect("agent: a tool-using agent answers under one contract, every turn recorded", () =>
    Effect.map(agent, (r) => {
      expect(r.answer).toBe("Paris 21°C, Oslo 4°C")
      expect([r.turns, r.turnsRecorded]).toEqual([3, 3])
    }))

  it.live("two-vendors: an agent and a chat fall back from OpenAI to Anthropic, every call recorded", () =>
    Effect.map(http(twoVendors), (r) => {
      expect([r.answer, r.turns, r.greeting]).toEqual(["Paris 21°C, Oslo 4°C", 3, "Bonjour !"])
      expect(r.chatOutcomes).toEqual(["anthropic/haiku after 2 attempts"])
      expect(r.paths).toEqual([
        "openai/mini overloaded → anthropic/haiku success",
        "openai/mini success",
        "openai/mini success",
        "openai/mini server_error → anthropic/haiku success"
      ])
    }))

  it.live("subprocess: a local program answers", () =>
    Effect.map(Effect.provide(subprocess, commands), (c) => expect(c.text).toBe("echo: ping")))
})
