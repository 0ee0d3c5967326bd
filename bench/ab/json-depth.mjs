// Peak RSS of reading a JSONL artifact (and a journal) whose one line is 10 MB of nested arrays (`[[[[…]]]]`),
// with an old build's packages and this checkout's, each in its own child process (maxRSS is per process).
//   node bench/ab/json-depth.mjs <old packages dir> [rounds]
// e.g. node bench/ab/json-depth.mjs /work/main/packages 3. Prints maxRSS (MB) per reader and build, and what
// each reader answered. RSS does not depend on the machine's load.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = fileURLToPath(import.meta.url)
const [mode, ...rest] = process.argv.slice(2)

if (mode === "child") {
  const [packages, file, reader] = rest
  const load = async (pkg, sub) => {
    const require = createRequire(path.join(packages, pkg, "package.json"))
    return import(pathToFileURL(require.resolve(sub)).href)
  }
  const { Effect, Layer, Stream, Either } = await load("batch", "effect")
  const { NodeFileSystem } = await load("batch", "@effect/platform-node")
  let answer
  if (reader === "artifact") {
    const { ArtifactStore, JsonlStore } = await import(pathToFileURL(path.join(packages, "batch/dist/index.js")).href)
    const read = Effect.flatMap(ArtifactStore.ArtifactStore, (s) => Effect.scoped(Effect.flatMap(s.stream, ({ records }) => Stream.runDrain(records))))
    const exit = await Effect.runPromiseExit(read.pipe(Effect.provide(JsonlStore.layer({ path: file }).pipe(Layer.provide(NodeFileSystem.layer)))))
    answer = exit._tag === "Failure" ? String(exit.cause).split("\n")[0].slice(0, 90) : "read"
  } else {
    const { Journal } = await import(pathToFileURL(path.join(packages, "core/dist/index.js")).href)
    const text = fs.readFileSync(file, "utf8").split("\n")[0]
    const r = Journal.decodeLine(text, 1)
    answer = Either.isLeft(r) ? `${r.left.reason}: ${r.left.message.slice(0, 70)}` : "decoded"
  }
  console.log(JSON.stringify({ maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024), answer }))
} else {
  const old = path.resolve(mode ?? "/work/main/packages")
  const mine = path.resolve(path.dirname(here), "../../packages")
  const rounds = Number(rest[0] ?? 3)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rein-depth-ab-"))
  const deep = 5 * 1024 * 1024
  const line = `${"[".repeat(deep)}${"]".repeat(deep)}\n`
  // A manifest written by this checkout's store, then the deep line.
  const artifact = path.join(dir, "run.jsonl")
  fs.writeFileSync(path.join(dir, "journal.jsonl"), line)
  execFileSync(process.execPath, ["--input-type=module", "-e", `
    import { ArtifactStore, JsonlStore, Identity } from ${JSON.stringify(pathToFileURL(path.join(mine, "batch/dist/index.js")).href)}
    import { Effect, Layer } from ${JSON.stringify(pathToFileURL(createRequire(path.join(mine, "batch/package.json")).resolve("effect")).href)}
    import { NodeFileSystem } from ${JSON.stringify(pathToFileURL(createRequire(path.join(mine, "batch/package.json")).resolve("@effect/platform-node")).href)}
    const identity = Identity.make({ provider: "p", model: "m", promptVersion: "1", parserVersion: "1", applicationVersion: "1" })
    await Effect.runPromise(Effect.scoped(Effect.flatMap(ArtifactStore.ArtifactStore, (s) => Effect.flatMap(ArtifactStore.makeManifest(identity), s.create))).pipe(Effect.provide(JsonlStore.layer({ path: ${JSON.stringify(artifact)} }).pipe(Layer.provide(NodeFileSystem.layer)))))
  `])
  fs.appendFileSync(artifact, line)
  const results = { old: { artifact: [], journal: [] }, new: { artifact: [], journal: [] } }
  const answers = {}
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [["old", old], ["new", mine]] : [["new", mine], ["old", old]]
    for (const [name, packages] of order) {
      for (const reader of ["artifact", "journal"]) {
        const file = reader === "artifact" ? artifact : path.join(dir, "journal.jsonl")
        const out = JSON.parse(execFileSync(process.execPath, [here, "child", packages, file, reader], { encoding: "utf8" }))
        results[name][reader].push(out.maxRssMb)
        answers[`${name} ${reader}`] = out.answer
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  for (const name of ["old", "new"]) {
    for (const reader of ["artifact", "journal"]) {
      const xs = results[name][reader]
      console.log(`${name.padEnd(3)} ${reader.padEnd(8)} maxRSS median ${median(xs)} MB (${Math.min(...xs)}–${Math.max(...xs)}), ${answers[`${name} ${reader}`]}`)
    }
  }
  fs.rmSync(dir, { recursive: true, force: true })
}
