/**
 * What the command prints for people from text it did not write (a provider's answer, an item id from the
 * input, a request id from a journal) cannot drive the terminal: no escape sequence, bell, carriage return or
 * bidirectional override reaches it raw, and a line of rein's own cannot be forged.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, FastCheck as fc } from "effect"
import * as Distributed from "../src/Distributed.js"
import { printable } from "../src/internal/printable.js"
import * as Story from "../src/internal/story.js"
import * as Replay from "../src/Replay.js"
import * as Run from "../src/Run.js"

/** Characters a terminal acts on: C0 controls, DEL, C1 controls, line and paragraph separators, bidi controls. */
// eslint-disable-next-line no-control-regex
const ACTS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/
// eslint-disable-next-line no-control-regex
const ACTS_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

const hostile = "\u001b[2J\u001b]0;pwned\u0007fake line\nrein: all good\r\u001b[31mred\u202eevil\u009b"

const report = (text: string): Run.RunReport => ({
  ok: true,
  outcome: "Completion",
  endpoint: "oc/a",
  text,
  usage: { inputTokens: 10, outputTokens: 5 },
  cost: 0.00002,
  simulated: false,
  reason: null,
  attempts: [],
  record: null,
  requestId: null
})

describe("text shown to people", () => {
  it("a provider's answer keeps its lines and tabs, every other control written as its escape", () => {
    const shown = Run.render(report(hostile))
    expect(shown).not.toMatch(ACTS_BUT_LINES)
    expect(shown).toContain(
      "answer: \\u001b[2J\\u001b]0;pwned\\u0007fake line\nrein: all good\\u000d\\u001b[31mred\\u202eevil\\u009b"
    )
  })

  it("an item id in a progress line is one line with no control at all", () => {
    expect(Story.itemLine(3, 48, "q\u001b[31mRED\nq02 ok on fake/a", "ok on fake/a")).toBe(
      "[ 3/48] q\\u001b[31mRED\\u000aq02 ok on fake/a ok on fake/a"
    )
  })

  it("a replay mismatch shows a journal's request id and values with every control escaped", () => {
    const shown = Replay.render({
      ok: false,
      requests: 1,
      record: 1,
      requestId: "q\u001b]0;pwned\u0007",
      decision: 2,
      field: "endpoint",
      recorded: "\"a\u001b[2J\"",
      replayed: "\"b\""
    })
    expect(shown).not.toMatch(ACTS_BUT_LINES)
    expect(shown).toContain("(request q\\u001b]0;pwned\\u0007), decision 2")
    expect(shown).toContain("  recorded: \"a\\u001b[2J\"")
  })

  it("rein status shows a run id and a stop's reason with every control escaped", () => {
    const shown = Distributed.renderStatus({
      runId: "r\u001b[2J\nrun ok",
      status: "stopped",
      identityFingerprint: "f",
      createdAt: "2026-12-05T00:00:00Z",
      startedAt: "2026-12-05T00:00:00Z",
      elapsedMillis: 10,
      deadlineMillis: null,
      stop: {
        _tag: "FailFast",
        kind: "fail_fast",
        reason: "item \u001b]0;pwned\u0007 failed",
        itemId: "i\u001b",
        category: "authentication"
      },
      stopItemId: null,
      stoppedAt: null,
      items: { total: 1, pending: 0, leased: 0, done: 1 },
      byCategory: {},
      cost: 0,
      unknownCost: 0,
      fencedOut: 0,
      settings: {}
    })
    expect(shown).not.toMatch(ACTS_BUT_LINES)
    expect(shown.split("\n")[0]).toBe("run r\\u001b[2J\\u000arun ok")
    expect(shown).toContain("item \\u001b]0;pwned\\u0007 failed")
  })

  it.effect.prop(
    "leaves no character a terminal acts on (lines kept only when asked) and changes text without one not at all",
    [fc.string({ unit: "binary" }), fc.boolean()],
    ([text, keepLines]) =>
      Effect.sync(() => {
        const shown = printable(text, keepLines)
        expect(shown).not.toMatch(keepLines ? ACTS_BUT_LINES : ACTS)
        if (!(keepLines ? ACTS_BUT_LINES : ACTS).test(text)) expect(shown).toBe(text)
      })
  )
})
