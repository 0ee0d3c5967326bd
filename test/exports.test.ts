import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const packages = fs.readdirSync(path.join(root, "packages")).filter((p) =>
  fs.existsSync(path.join(root, "packages", p, "package.json"))
)

interface Manifest {
  readonly exports: Record<string, { readonly types: string; readonly default: string }>
}

describe("each package's exports (the public surface)", () => {
  it.each(packages)(
    "%s publishes its index and its top-level modules, nothing under internal/ or by wildcard",
    (pkg) => {
      const dir = path.join(root, "packages", pkg)
      const manifest: Manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
      const modules = fs.readdirSync(path.join(dir, "src"))
        .filter((f) => f.endsWith(".ts") && f !== "index.ts" && f !== "bin.ts")
        .map((f) => `./${f.slice(0, -3)}`)
      expect(Object.keys(manifest.exports).sort()).toEqual([".", ...modules].sort())
      for (const [key, target] of Object.entries(manifest.exports)) {
        const name = key === "." ? "index" : key.slice(2)
        expect(target).toEqual({ types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` })
      }
    }
  )
})
