// `pnpm rein …` from the repository root: runs the built `rein` binary (packages/cli/dist/bin.js), building
// first when a source file is newer than the build (an up-to-date check is a walk of mtimes, a few ms), and
// bundling it again (scripts/bundle-cli.mjs) when the bundle is not the build's: as `pnpm build` leaves it.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bin = path.join(root, "packages/cli/dist/bin.js")

const newest = (dir) => {
  let latest = 0
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs)
  }
  return latest
}

const stale = () => {
  if (!fs.existsSync(bin)) return true
  const built = fs.statSync(bin).mtimeMs
  const packages = path.join(root, "packages")
  return fs.readdirSync(packages).some((name) => {
    const src = path.join(packages, name, "src")
    return fs.existsSync(src) && newest(src) > built
  })
}

if (stale()) {
  process.stderr.write("rein: building (pnpm build) …\n")
  const tsc = path.join(root, "node_modules/typescript/bin/tsc")
  const build = spawnSync(process.execPath, [tsc, "-b", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
  if (build.status !== 0) process.exit(build.status ?? 1)
  // tsc -b leaves an unchanged output untouched: mark the build as current.
  const now = new Date()
  fs.utimesSync(bin, now, now)
}

// The binary would run the unbundled build rather than a stale bundle (packages/cli/src/internal/entry.ts):
// correct, but slower to start. Make the bundle current.
const { freshBundle } = await import(pathToFileURL(path.join(root, "packages/cli/dist/internal/entry.js")).href)
if (freshBundle(path.join(root, "packages/cli/dist/bundle")) === undefined) {
  const bundle = spawnSync(process.execPath, [path.join(root, "scripts/bundle-cli.mjs")], { cwd: root, stdio: "inherit" })
  if (bundle.status !== 0) process.exit(bundle.status ?? 1)
}

// In this process (no second start-up; Ctrl-C and the exit code are the binary's own), from the user's
// working directory (pnpm runs scripts from the root), so relative paths mean what they typed.
process.chdir(process.env.INIT_CWD ?? process.cwd())
process.argv = [process.argv[0], bin, ...process.argv.slice(2)]
await import(pathToFileURL(bin).href)
