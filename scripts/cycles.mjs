// `pnpm cycles`: prints every import cycle among the TypeScript sources of packages/*/src and exits 1 if there
// is one. Type-only and dynamic imports count (a cycle of types is still a cycle to read), and so do imports
// across packages (`@rein/core`, `@rein/core/Canonical` resolve to that package's sources).
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const importPattern = /(?:(?:import|export)\s[^'"]*?from\s+|import\(\s*)["']((?:\.{1,2}\/|@rein\/)[^"']+)["']/g

/** The code without its comments, so that an `@example`'s imports are not read as the module's. */
const code = (source) => source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:\\])\/\/.*$/gm, "$1")

const sourcesOf = (dir) =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name)
    return e.isDirectory() ? sourcesOf(p) : /\.ts$/.test(e.name) && !/\.d\.ts$/.test(e.name) ? [p] : []
  })

const resolve = (root, from, specifier) => {
  const rein = /^@rein\/([^/]+)(?:\/(.+))?$/.exec(specifier)
  const base = rein === null
    ? path.join(path.dirname(from), specifier).replace(/\.js$/, "")
    : path.join(root, "packages", rein[1], "src", rein[2] ?? "index")
  for (const candidate of [base.endsWith(".ts") ? base : `${base}.ts`, path.join(base, "index.ts")]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return path.relative(root, candidate)
  }
  return undefined
}

/** A cycle read from its smallest file, so the same cycle is always written the same way. */
const normalise = (cycle) => {
  const start = cycle.indexOf([...cycle].sort()[0])
  const rotated = [...cycle.slice(start), ...cycle.slice(0, start)]
  return [...rotated, rotated[0]].join(" -> ")
}

/** Every import cycle under `root`'s packages, each as `a.ts -> b.ts -> a.ts`, sorted. */
export const importCycles = (root) => {
  const packages = path.join(root, "packages")
  const files = fs.readdirSync(packages)
    .map((pkg) => path.join(packages, pkg, "src"))
    .filter((src) => fs.existsSync(src))
    .flatMap(sourcesOf)
    .map((f) => path.relative(root, f))
  const edges = new Map(files.map((f) => {
    const source = code(fs.readFileSync(path.join(root, f), "utf8"))
    const targets = [...source.matchAll(importPattern)].map((m) => resolve(root, path.join(root, f), m[1]))
    return [f, [...new Set(targets.filter((t) => t !== undefined))]]
  }))
  const cycles = new Set()
  const state = new Map()
  const stack = []
  // Iterative depth-first search: a back edge to a file on the stack closes a cycle.
  for (const start of files) {
    if (state.has(start)) continue
    const work = [[start, 0]]
    state.set(start, "open")
    stack.push(start)
    while (work.length > 0) {
      const top = work[work.length - 1]
      const next = (edges.get(top[0]) ?? [])[top[1]++]
      if (next === undefined) {
        work.pop()
        stack.pop()
        state.set(top[0], "done")
      } else if (state.get(next) === "open") {
        cycles.add(normalise(stack.slice(stack.indexOf(next))))
      } else if (!state.has(next)) {
        state.set(next, "open")
        stack.push(next)
        work.push([next, 0])
      }
    }
  }
  return [...cycles].sort()
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
  const cycles = importCycles(root)
  for (const c of cycles) console.log(c)
  console.log(`${cycles.length} import cycles`)
  process.exit(cycles.length > 0 ? 1 : 0)
}
