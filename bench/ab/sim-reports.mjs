// A/B helper (not part of the bench): every scenario of examples/scenarios and bench/scenarios at seeds 1, 7 and
// 12345, simulated in process by a checkout's built CLI: `--json` and the rendered text, one line each, to compare
// two checkouts byte for byte. node bench/ab/sim-reports.mjs [checkout root] > out.txt (default: this one)
import * as fs from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"
const root = process.argv[2] ?? fileURLToPath(new URL("../../", import.meta.url))
const load = (p) => import(pathToFileURL(`${root}/${p}`).href)
const core = await load("packages/core/dist/index.js")
const cli = await load("packages/cli/dist/index.js")
const { Effect, Either } = await load("node_modules/effect/dist/esm/index.js")
const read = (p) => JSON.parse(fs.readFileSync(`${root}/${p}`, "utf8"))
const catalog = Either.getOrThrow(core.Catalog.decode(read("examples/catalog.json")))
const contract = Either.getOrThrow(core.Contract.decode(read("examples/contract.json")))
for (const dir of ["examples/scenarios", "bench/scenarios"]) {
  for (const file of fs.readdirSync(`${root}/${dir}`).filter((f) => f.endsWith(".json")).sort()) {
    const scenario = Either.getOrThrow(cli.Scenario.decode(read(`${dir}/${file}`)))
    for (const seed of [1, 7, 12345]) {
      const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario, seed))
      console.log(`${dir}/${file} ${seed} ${JSON.stringify(report)}`)
      console.log(`${dir}/${file} ${seed} ${JSON.stringify(cli.Simulate.render(report))}`)
    }
  }
}
