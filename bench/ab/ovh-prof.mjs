// Bench 1's success path, one call per runPromise, one Rein configuration, to profile:
// node --cpu-prof --cpu-prof-dir=/tmp/prof bench/ab/ovh-prof.mjs [off|on|journal] [N]
import { Rein } from "@rein/core"
import { Runtime } from "effect"
import { contextOf, overheadContract, reinVariants, request, succeeding } from "../dist/fixtures.js"
const which = { off: 0, on: 1, journal: 2 }[process.argv[2] ?? "journal"]
const N = Number(process.argv[3] ?? 200000)
const ctx = await contextOf(reinVariants[which], { mem: succeeding() })
const rt = Runtime.make({ context: ctx, fiberRefs: Runtime.defaultRuntime.fiberRefs, runtimeFlags: Runtime.defaultRuntime.runtimeFlags })
const rp = Runtime.runPromise(rt); const eff = Rein.execute(request, overheadContract)
for (let i = 0; i < N; i++) await rp(eff)
