// A/B helper (not part of the bench): bench 4's side-by-side reading for two rows only, as the section takes it
// (each sample a fresh `deadline-child.js`, the order alternated every round): p99 of row A ÷ p99 of row B per
// round, median (min–max), with the pooled p99s. Rows by index in `allRows()` (2: lean bound, burst;
// 8 / 11 / 14: Rein health off / on / journal, burst). node bench/ab/sec4-pair.mjs <A> <B> [rounds=21]
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
const [a, b, R = 21] = process.argv.slice(2).map(Number)
const child = new URL("../dist/deadline-child.js", import.meta.url).pathname
const sample = (i) => JSON.parse(execFileSync(process.execPath, ["--expose-gc", child, String(i)], { encoding: "utf8", maxBuffer: 1 << 22 }).trim().split("\n").at(-1))
const p99 = (xs) => xs.slice().sort((x, y) => x - y)[Math.ceil(0.99 * xs.length) - 1]
const load = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0]
const l0 = load(), pooled = { a: [], b: [] }, ratios = []
for (let r = 0; r < R; r++) {
  const [first, second] = r % 2 ? ["b", "a"] : ["a", "b"]
  const s = { [first]: sample(first === "a" ? a : b) }
  s[second] = sample(second === "a" ? a : b)
  pooled.a.push(...s.a); pooled.b.push(...s.b); ratios.push(p99(s.a) / p99(s.b))
}
const med = ratios.slice().sort((x, y) => x - y)[R >> 1]
console.log(`rows ${a} ÷ ${b}, ${R} rounds, load ${l0} → ${load()}: per round ${med.toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}×); pooled p99 ${p99(pooled.a).toFixed(1)} vs ${p99(pooled.b).toFixed(1)} ms (${(p99(pooled.a) / p99(pooled.b)).toFixed(2)}×)`)
