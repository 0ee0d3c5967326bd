// The postgres package's fixtures as real child processes, through the workspace's one harness
// (test/support/processes.ts): a fixture under test/fixtures/ is bundled with esbuild (Node 20 cannot run
// TypeScript), `@rein/*` from their sources.
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Processes from "../../../test/support/processes.js"

export type { Child, Exited } from "../../../test/support/processes.js"
export { spawnChild } from "../../../test/support/processes.js"

const here = path.dirname(fileURLToPath(import.meta.url))

/** Bundles `test/fixtures/<name>.ts` to a runnable `.mjs` file under packages/postgres/build/ and returns its path. */
export const bundle = (name: string) => Processes.bundle(here, name)
