/**
 * vitest's global set-up (vitest.config.ts), in the main process before any test file: names this run in
 * REIN_TEST_RUN, which every test worker inherits, so that what is done once per run (the binary's build,
 * binary.ts; the PostgreSQL data directory that @rein/postgres's TestServer copies for each server) is shared by
 * the suites of one run and never by two runs. The teardown removes what was left under that name in the
 * temporary directory.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const DAY = 24 * 3_600_000

export default function setup(): () => void {
  // What a run that was killed (no teardown) left, once a day old: no run of today's is that old.
  const now = new Date().getTime()
  for (const entry of fs.readdirSync(os.tmpdir())) {
    const file = path.join(os.tmpdir(), entry)
    const stat = entry.startsWith("rein-test-run-") ? fs.statSync(file, { throwIfNoEntry: false }) : undefined
    if (stat !== undefined && now - stat.mtimeMs > DAY) fs.rmSync(file, { recursive: true, force: true })
  }
  const name = `${process.pid}-${randomUUID().slice(0, 8)}`
  process.env["REIN_TEST_RUN"] = name
  // @rein/postgres's TestServer: one initdb for the run, copied for each server (see its `start`).
  process.env["REIN_PG_TEMPLATE"] = path.join(os.tmpdir(), `rein-test-run-${name}-pg`)
  return () => {
    const prefix = `rein-test-run-${name}-`
    for (const entry of fs.readdirSync(os.tmpdir())) {
      if (entry.startsWith(prefix)) fs.rmSync(path.join(os.tmpdir(), entry), { recursive: true, force: true })
    }
  }
}
