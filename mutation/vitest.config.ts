import * as path from "node:path"
import type { TestSpecification } from "vitest/node"
import { BaseSequencer } from "vitest/node"
import shared from "../vitest.config.js"

// Only the test files of the module under mutation (set by scripts/mutation.mjs, one module at a time),
// run in the order listed: the module's own fast tests first, so a mutant they kill costs milliseconds
// (Stryker stops at the first failing test) instead of the slower end-to-end files vitest would start with.
const files = (process.env.REIN_MUTATION_TESTS ?? "").split(",").filter((file) => file.length > 0)
const order = files.map((file) => path.resolve(file))
const rank = (spec: TestSpecification) => {
  const index = order.indexOf(path.resolve(spec.moduleId))
  return index === -1 ? order.length : index
}

class Listed extends BaseSequencer {
  override sort(specs: Array<TestSpecification>) {
    return Promise.resolve([...specs].sort((a, b) => rank(a) - rank(b)))
  }
}

// A test over the 1 MiB windows (ResumeStreaming's "in any order") ran past the suite's 30 s in Stryker's dry run
// (coverage instrumentation, load 13-18), which then refuses to start. Stryker times mutants out on its own.
export default {
  ...shared,
  test: {
    ...shared.test,
    include: files,
    testTimeout: 120_000,
    sequence: { ...shared.test?.sequence, sequencer: Listed }
  }
}
