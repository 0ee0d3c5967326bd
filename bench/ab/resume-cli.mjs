// `rein batch --resume` over a JSONL artifact of N records (the examples' 48 items' records, then N synthetic
// ones, one in ten under another identity, so the drift warning is said): each binary's CPU time (user + sys)
// and peak RSS as /usr/bin/time reports them, in child processes (binaries alternated, the artifact copied
// afresh each time); medians at the end, with the load.
//
//   node bench/ab/resume-cli.mjs <root>[,<root>…] [records] [rounds]
//
// A root is a built checkout (its packages/cli/dist/bin.js runs; a copy of one at another commit for A/B).
import { execFileSync, spawnSync } from "node:child_process"
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"

const [rootsArg, nArg = "200000", roundsArg = "5"] = process.argv.slice(2)
const roots = rootsArg.split(",").map((r) => resolve(r))
const dir = mkdtempSync(join(tmpdir(), "resume-cli-"))
const args = (root, out) => [join(root, "packages/cli/dist/bin.js"), "batch", "--input", "examples/prompts.jsonl",
  "--catalog", "examples/catalog.json", "--contract", "examples/contract.json", "--out", out, "--json"]
const seed = join(dir, "seed.jsonl")
execFileSync(process.execPath, args(roots[0], seed), { cwd: roots[0] })
const lines = readFileSync(seed, "utf8").split("\n").filter((l) => l !== "")
const fp = JSON.parse(lines[0]).identityFingerprint
const other = `sha256:${"ab".repeat(32)}`
const body = []
for (let i = 0; i < Number(nArg); i++) {
  const line = lines[1 + (i % 48)].replace(/"itemId":"[^"]*"/, `"itemId":"old-${i}"`)
  body.push(i % 10 === 0 ? line.replace(fp, other) : line)
}
writeFileSync(seed, [...lines, ...body].join("\n") + "\n")

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rows = roots.map(() => [])
console.log(`records ${nArg}, load ${loadavg().map((l) => l.toFixed(2)).join(" ")}`)
for (let round = 0; round < Number(roundsArg); round++) {
  roots.forEach((root, i) => {
    const out = join(dir, "run.jsonl")
    copyFileSync(seed, out)
    const r = spawnSync("/usr/bin/time", ["-f", "%U %S %M", process.execPath, ...args(root, out), "--resume"], {
      cwd: root,
      encoding: "utf8"
    })
    if (r.status !== 0) throw new Error(r.stderr)
    const [user, sys, kb] = r.stderr.trim().split("\n").at(-1).split(" ").map(Number)
    const m = { cpuS: user + sys, rssMB: kb / 1024, reused: JSON.parse(r.stdout).stats.reused, warned: /another/.test(r.stderr) }
    rows[i].push(m)
    console.log(`round ${round} ${root}: ${JSON.stringify(m)} load ${loadavg()[0].toFixed(2)}`)
  })
}
rmSync(dir, { recursive: true, force: true })
roots.forEach((root, i) => {
  const med = (k) => median(rows[i].map((m) => m[k])).toFixed(k === "cpuS" ? 2 : 1)
  console.log(`${root}: cpu ${med("cpuS")} s, rss ${med("rssMB")} MB (medians of ${rows[i].length})`)
})
