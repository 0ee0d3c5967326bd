// A/B helper (not part of the bench): bench 4 (deadline precision) as `pnpm bench --only=4` runs it, without
// writing RESULTS: prints the section's burst rows, its side-by-side table and goals with the load. node --expose-gc bench/ab/sec4.mjs
import { deadline } from "../dist/deadline.js"
const t0 = Date.now()
const section = await deadline.run({ quick: process.env.QUICK === "1", log: (l) => process.stderr.write(l + "\n") })
for (const line of section.markdown.split("\n")) if (/^\| (burst|Rein|control)|^Measured/.test(line)) console.log(line)
for (const g of section.goals) if (g.goal.includes("simultaneous")) console.log(g.status, g.goal.slice(0, 32), g.measured)
console.log(`${((Date.now() - t0) / 1000).toFixed(0)} s`)
