/**
 * The CPU time PostgreSQL spent, for benchmark 12: the postmaster's own and its children's (`/proc`, Linux):
 * `utime + stime + cutime + cstime` of the postmaster (a backend that exited is reaped into its children's
 * time) plus `utime + stime` of every live backend. Bench code, not library code; 0 where `/proc` is absent.
 */
import { readdirSync, readFileSync } from "node:fs"

const TICK_MICROS = 10_000 // USER_HZ is 100 on Linux

const statOf = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The fields after the command name (which may hold spaces), from field 3 (state) on.
    return text.slice(text.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** Microseconds of CPU the server whose data directory this is has used so far (0 without `/proc`). */
export const serverCpuMicros = (dataDir: string): number => {
  let postmaster: number
  try {
    postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, "utf8").split("\n")[0])
  } catch {
    return 0
  }
  const own = statOf(postmaster)
  if (own === undefined) return 0
  // Fields (1-based) 14 utime, 15 stime, 16 cutime, 17 cstime; here offset by the 2 fields cut (pid, comm).
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === postmaster) continue
    const stat = statOf(pid)
    if (stat !== undefined && Number(stat[1]) === postmaster) ticks += Number(stat[11]) + Number(stat[12])
  }
  return ticks * TICK_MICROS
}
