import { describe, expect, it } from "@effect/vitest"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { importCycles } from "../scripts/cycles.mjs"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

describe("import cycles (pnpm cycles)", () => {
  it("the sources of every package import no cycle", () => {
    expect(importCycles(root)).toEqual([])
  })
})
