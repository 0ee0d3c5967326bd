/**
 * The in-memory side of one lease: what this process holds of a shared budget and what it has committed
 * against it. Pure arithmetic on integer units (cost in nano-dollars, so the database adds exactly); the
 * service in `PgBudget.ts` owns one `Slice` and is the only code that mutates it.
 *
 * Per resource (`calls`, `cost`, `tokens`):
 * - `leased` (L): taken from the pool by this lease;
 * - `exposed` (K): the ceiling the database has on record for this lease: if the process dies, K is charged
 *   as spent and L − K returns to the pool. Reservations are served in memory while charged + reserved ≤ K;
 * - `charged` (C) and `reserved` (R): settled actual and in-flight worst cases.
 *
 * Invariant kept by every function here: C + R ≤ K ≤ L (except that an actual above its reservation is
 * charged as billed, which can lift C + R past K until the next report records it).
 *
 * @internal
 */
import type { Charged, Reservation } from "./budgetService.js"

export type Resource = "calls" | "cost" | "tokens"

/** In the order shortfalls are reported (as core's budget does). */
export const resources: ReadonlyArray<Resource> = ["calls", "cost", "tokens"]

export type Vec = { -readonly [R in Resource]: number }

export type Caps = { readonly [R in Resource]: number | null }

export const zero = (): Vec => ({ calls: 0, cost: 0, tokens: 0 })

const NANOS = 1e9

/** Dollars to nano-dollars, rounding up (a float just above an integer is that integer). */
export const toNanos = (dollars: number): number => {
  const v = dollars * NANOS
  const r = Math.round(v)
  return Math.abs(v - r) < 1e-3 ? r : Math.ceil(v)
}

export const toDollars = (nanos: number): number => nanos / NANOS

/** Units in the resource's public measure (dollars for cost). */
export const toPublic = (resource: Resource, units: number): number => resource === "cost" ? toDollars(units) : units

/** What a reservation takes: its worst case and one call. */
export const need = (r: Reservation): Vec => ({
  calls: 1,
  cost: r.cost === null ? 0 : toNanos(Math.max(0, r.cost)),
  tokens: r.tokens === null ? 0 : Math.ceil(Math.max(0, r.tokens))
})

const isCharge = (n: number): boolean => Number.isFinite(n) && n >= 0

/** What a settled attempt is charged: its actual cost and tokens, and the call it took. */
export const charged = (c: Charged, held: Vec): Vec => ({
  calls: 1,
  // A charge that is not a count (NaN, ±Infinity, negative) is charged as the hold's whole reservation, as
  // core's budget laws say: fail closed, and never let a NaN into the counters, where every later comparison
  // with the cap would be false.
  cost: isCharge(c.cost) ? toNanos(c.cost) : held.cost,
  tokens: isCharge(c.tokens) ? Math.ceil(c.tokens) : held.tokens
})

export interface Slice {
  /** Bumped when the lease is lost or replaced: a hold of an older epoch is no longer ours to settle. */
  epoch: number
  id: string
  leased: Vec
  exposed: Vec
  charged: Vec
  reserved: Vec
  /** Local clock reading (ms) after which the lease may have expired in the database. */
  validUntil: number
}

export const fresh = (id: string, epoch: number, validUntil: number): Slice => ({
  epoch,
  id,
  leased: zero(),
  exposed: zero(),
  charged: zero(),
  reserved: zero(),
  validUntil
})

export const used = (s: Slice, r: Resource): number => s.charged[r] + s.reserved[r]

/** The first limited resource whose ceiling `n` does not fit under, or `undefined` when it fits. */
export const blocked = (s: Slice, caps: Caps, n: Vec): Resource | undefined =>
  resources.find((r) => caps[r] !== null && used(s, r) + n[r] > s.exposed[r])

/** How much more each limited resource must lease for `n` to fit (0 where it fits). */
export const short = (s: Slice, caps: Caps, n: Vec): Vec => {
  const out = zero()
  for (const r of resources) out[r] = caps[r] === null ? 0 : Math.max(0, used(s, r) + n[r] - s.leased[r])
  return out
}

export const take = (s: Slice, n: Vec): void => {
  for (const r of resources) s.reserved[r] += n[r]
}

export const settle = (s: Slice, n: Vec, c: Vec): void => {
  for (const r of resources) {
    s.reserved[r] -= n[r]
    s.charged[r] += c[r]
  }
}

export const release = (s: Slice, n: Vec): void => {
  for (const r of resources) s.reserved[r] -= n[r]
}

/**
 * The headroom of the ceiling: `exposure` of what the lease holds unused (at least one unit). Not of all it
 * leased: that counts what it spent, so a process that had spent much kept a large ceiling over a small
 * remainder (all its slice, often), which it could never give back while it reserved, and which a crash
 * charged whole.
 */
const headroom = (s: Slice, r: Resource, exposure: number): number =>
  Math.max(1, Math.ceil(Math.max(0, s.leased[r] - used(s, r)) * exposure))

/**
 * The ceiling to put on record: what is used, plus `n` (the reservation waiting for it), plus `exposure` of
 * what the lease holds unused, never above the lease.
 */
export const ceiling = (s: Slice, caps: Caps, exposure: number, n: Vec = zero()): Vec => {
  const out = zero()
  for (const r of resources) {
    if (caps[r] === null) continue
    // An actual above its reservation was billed: it is on record even past the lease.
    out[r] = Math.max(used(s, r), Math.min(s.leased[r], used(s, r) + n[r] + headroom(s, r, exposure)))
  }
  return out
}

/** The ceiling of a slice at rest (nothing in flight, nothing reserved for a heartbeat): what it used, no more. */
export const usedCeiling = (s: Slice, caps: Caps): Vec => {
  const out = zero()
  for (const r of resources) out[r] = caps[r] === null ? 0 : used(s, r)
  return out
}

/** The limited resources whose ceiling is close (less than half the headroom left): report before it binds. */
export const nearCeiling = (s: Slice, caps: Caps, exposure: number): boolean =>
  resources.some((r) =>
    caps[r] !== null && s.exposed[r] < s.leased[r] &&
    s.exposed[r] - used(s, r) < headroom(s, r, exposure) / 2
  )

/** What the pool has free, per resource (`null`: no cap). */
export type Free = { readonly [R in Resource]: number | null }

/**
 * The slice a top-up would lease now, per resource: `fraction` of what is free, in the pool and unused in the
 * lease (0 where there is no cap).
 */
export const sliceNow = (s: Slice, caps: Caps, free: Free, fraction: number): Vec => {
  const out = zero()
  for (const r of resources) {
    if (caps[r] !== null) out[r] = Math.ceil(fraction * ((free[r] ?? 0) + Math.max(0, s.leased[r] - used(s, r))))
  }
  return out
}

/**
 * The limited resources with less unused than half the slice a top-up would lease now (`sliceNow`): top up
 * before it binds. Not half of all the lease took: that counts what it spent, so a process that had spent much
 * was always low, and topped up at every heartbeat.
 */
export const low = (s: Slice, caps: Caps, free: Free, fraction: number): Vec => {
  const slice = sliceNow(s, caps, free, fraction)
  const out = zero()
  for (const r of resources) {
    out[r] = caps[r] !== null && s.leased[r] - used(s, r) < slice[r] / 2 + 1 ? 1 : 0
  }
  return out
}

/** What the lease holds beyond `keep` free units per resource: given back to the pool. */
export const surplus = (s: Slice, caps: Caps, keep: Vec): Vec => {
  const out = zero()
  for (const r of resources) {
    out[r] = caps[r] === null ? 0 : Math.max(0, s.leased[r] - Math.max(used(s, r), s.exposed[r]) - keep[r])
  }
  return out
}

export const add = (a: Vec, b: Vec): Vec => ({
  calls: a.calls + b.calls,
  cost: a.cost + b.cost,
  tokens: a.tokens + b.tokens
})

export const sub = (a: Vec, b: Vec): Vec => ({
  calls: a.calls - b.calls,
  cost: a.cost - b.cost,
  tokens: a.tokens - b.tokens
})

export const isZero = (v: Vec): boolean => v.calls === 0 && v.cost === 0 && v.tokens === 0
