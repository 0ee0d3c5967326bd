// A/B helper (not part of the bench): every scenario of examples/scenarios and bench/scenarios at seeds 1, 7 and
// 12345, simulated in process by a checkout's built CLI: `--json` and the rendered text, one line each, to compare
// two checkouts byte for byte. node bench/ab/sim-reports.mjs [checkout root] > out.txt (default: this one)
import * as fs from "node:fs"
import { checkout } from "./sim-checkout.mjs"
const { root, cli, Effect, catalog, contract, scenario } = await checkout(process.argv[2])
for (const dir of ["examples/scenarios", "bench/scenarios"]) {
  for (const file of fs.readdirSync(`${root}/${dir}`).filter((f) => f.endsWith(".json")).sort()) {
    for (const seed of [1, 7, 12345]) {
      const report = await Effect.runPromise(cli.Simulate.simulate(catalog, contract, scenario(`${dir}/${file}`), seed))
      console.log(`${dir}/${file} ${seed} ${JSON.stringify(report)}`)
      console.log(`${dir}/${file} ${seed} ${JSON.stringify(cli.Simulate.render(report))}`)
    }
  }
}
