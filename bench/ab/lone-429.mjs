// A/B helper (not part of the bench): `rein batch`, one candidate, against a loopback OpenAI-compatible server
// (started here) answering every 7th request with a 429 and `Retry-After: 1`, the others after 50 ms: 60 items,
// concurrency 4, a 30 s deadline. This checkout's binary against an older checkout's (`git worktree add --detach
// /tmp/old <commit>`, `pnpm install --offline && pnpm build` there), interleaved; counts by category, breaker
// transitions and rate-limited attempts per run (counts, not times: the load does not move them).
// node bench/ab/lone-429.mjs /tmp/old [rounds]

import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))
const base = process.argv[2]
const rounds = Number(process.argv[3] ?? 3)
if (base === undefined) throw new Error("usage: node bench/ab/lone-429.mjs <older checkout> [rounds]")
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "lone-429-"))
const write = (name, text) => (fs.writeFileSync(path.join(tmp, name), text), path.join(tmp, name))
const catalog = write("catalog.json", JSON.stringify({
  endpoints: [{
    id: "loop/only",
    provider: "openai-compatible",
    model: "only-model",
    capabilities: { contextWindow: 8000, maxOutputTokens: 200 },
    prices: { inputTokens: 0.000001, outputTokens: 0.000002 }
  }]
}))
const contract = write("contract.json", JSON.stringify({
  deadline: "30 seconds",
  attemptTimeout: "10 seconds",
  candidates: ["loop/only"],
  retry: { perEndpoint: 2, base: "200 millis", factor: 2, max: "2 seconds", jitter: 0.2 }
}))
const input = write(
  "prompts.jsonl",
  Array.from({ length: 60 }, (_, i) => JSON.stringify({ id: `q${i + 1}`, prompt: `question ${i + 1}` })).join("\n")
)

/** A server counting its requests from 1: every 7th a 429 with Retry-After 1 s. */
const serve = () =>
  new Promise((resolve) => {
    let n = 0
    const server = http.createServer((req, res) => {
      req.resume()
      req.on("end", () => {
        n++
        if (n % 7 === 0) {
          res.writeHead(429, { "content-type": "application/json", "retry-after": "1" })
          res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit_error" } }))
          return
        }
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({
            id: `c${n}`,
            object: "chat.completion",
            created: 0,
            model: "only-model",
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }
          }))
        }, 50)
      })
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

const run = async (checkout, name) => {
  const server = await serve()
  const out = path.join(tmp, `${name}.jsonl`)
  const args = [
    path.join(checkout, "packages/cli/dist/bin.js"),
    "batch",
    "--input", input,
    "--catalog", catalog,
    "--contract", contract,
    "--base-url", `http://127.0.0.1:${server.address().port}/v1`,
    "--concurrency", "4",
    "--out", out,
    "--overwrite",
    "--json"
  ]
  await new Promise((resolve) =>
    execFile(process.execPath, args, { env: { ...process.env, REIN_API_KEY: "sk-loopback" }, maxBuffer: 2 ** 26 }, () =>
      resolve()
    )
  )
  server.close()
  const records = fs.readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l)).filter((r) =>
    r.kind !== "manifest"
  )
  const byCategory = {}
  for (const r of records) byCategory[r.category] = (byCategory[r.category] ?? 0) + 1
  return byCategory
}

const load0 = os.loadavg()[0]
const results = { base: [], current: [] }
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? [["base", base], ["current", root]] : [["current", root], ["base", base]]
  for (const [name, checkout] of order) results[name].push(await run(checkout, name))
}
fs.rmSync(tmp, { recursive: true, force: true })
console.log(JSON.stringify({ load: `${load0.toFixed(1)}–${os.loadavg()[0].toFixed(1)}`, byCategory: results }))
