/**
 * Keeping the hidden classes of the executor's own per-attempt classes alive between runs.
 *
 * V8 gives a class's instances a hidden class ("map") reached from the constructor's initial map through
 * weak transitions: it lives only while an instance does. Between two batches no attempt is in flight, so a
 * full collection frees the maps of `Attempting`, `Waiting`, `CommittedAttempt` and `Calling`, and every
 * optimized function that checked one of them (the whole attempt path, inlined) is deoptimized ("weak
 * objects") and compiled again in the next run. Bench 2 forces a full `gc()` before each run: ≈ 60 functions
 * were marked each time, and a run after one took ≈ 200 ms more CPU (20,000 items) than a run without
 * (`bench/ab/gc-deopt.mjs`; the rest of that is Effect's and Node's own maps). One idle instance of each, made
 * at load with fields of the same kinds (objects, doubles, bigints, strings), keeps its map.
 *
 * @internal
 */

const kept: Array<object> = []

/** Holds `idle` for the life of the process (it keeps its class's map); returns it. @internal */
export const keepMap = <A extends object>(idle: A): A => {
  kept.push(idle)
  return idle
}

/** A field's placeholder in an idle instance: never read (the instance is never used). @internal */
export const IDLE = undefined as never
