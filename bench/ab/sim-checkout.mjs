// Shared by sim-reports.mjs and sim-ops.mjs: a checkout's built core, CLI and `effect`, imported by path, and bench 6's
// catalog and contract decoded by that checkout (default: this one).
import * as fs from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"
export const checkout = async (root = fileURLToPath(new URL("../../", import.meta.url))) => {
  const load = (p) => import(pathToFileURL(`${root}/${p}`).href)
  const core = await load("packages/core/dist/index.js")
  const cli = await load("packages/cli/dist/index.js")
  const { Effect, Either } = await load("node_modules/effect/dist/esm/index.js")
  const read = (p) => JSON.parse(fs.readFileSync(`${root}/${p}`, "utf8"))
  const catalog = Either.getOrThrow(core.Catalog.decode(read("examples/catalog.json")))
  const contract = Either.getOrThrow(core.Contract.decode(read("examples/contract.json")))
  const scenario = (path) => Either.getOrThrow(cli.Scenario.decode(read(path)))
  return { root, cli, Effect, catalog, contract, scenario }
}
