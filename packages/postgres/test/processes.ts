// Worker processes for the multi-process tests: a fixture under test/fixtures/ is bundled with esbuild
// together with this package's src/ (Node 20 cannot run TypeScript); packages stay external and resolve
// from packages/postgres/node_modules, which is why bundles go to packages/postgres/build/. Spawning and
// watching the children is the ledger's harness (one copy of it for the repository).
import { Effect } from "effect"
import { build } from "esbuild"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export { type Child, spawnChild } from "../../ledger/test/processes.js"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Bundles `test/fixtures/<name>.ts` to a runnable `.mjs` file and returns its path. */
export const bundle = (name: string) =>
  Effect.promise(async () => {
    const outfile = path.join(here, "..", "build", "fixtures", `${name}.mjs`)
    await build({
      entryPoints: [path.join(here, "fixtures", `${name}.ts`)],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      packages: "external",
      logLevel: "silent"
    })
    return outfile
  })
