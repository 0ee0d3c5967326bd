/**
 * The records a resume keeps, one per (item id, input fingerprint) key, in typed arrays: no string and no
 * object per key. A key is held as a 64-bit hash of the pair; each key has a slot holding the position of its
 * record in the artifact (or, from a store that gives no positions, the record itself).
 *
 * Two keys with the same 64-bit hash (about one chance in 10^7 for a million keys) share a slot: the newer
 * record replaces the older. Whoever reads a slot checks the record's own item id and input fingerprint, so
 * the older key's item only runs again; nothing wrong is reused.
 *
 * @internal
 */
import type { ItemRecord, Position } from "../ArtifactStore.js"

// A 32-bit finaliser (MurmurHash3's): every bit of the input moves about half of the output's.
const mix = (h: number): number => {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/** Two 32-bit hashes of (item id, input fingerprint), in `hashes[0]` and `hashes[1]`. @internal */
export const hashKey = (itemId: string, input: string, hashes: Int32Array): void => {
  // Two FNV-1a lanes with other primes; the item id's length first, so that the pair is unambiguous.
  let a = Math.imul(0x811c9dc5 ^ itemId.length, 0x01000193)
  let b = Math.imul(0x050c5d1f ^ itemId.length, 0x9e3779b1)
  for (let i = 0; i < itemId.length; i++) {
    const c = itemId.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x9e3779b1)
  }
  for (let i = 0; i < input.length; i++) {
    const c = input.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x9e3779b1)
  }
  hashes[0] = mix(a)
  hashes[1] = mix(b ^ input.length)
}

const grown = <A extends Float64Array | Int32Array | Uint32Array | Uint8Array>(a: A, make: (n: number) => A): A => {
  const b = make(a.length * 2)
  b.set(a)
  return b
}

/** The kept records: `slotOf` finds or makes a key's slot, `put` fills it. @internal */
export const make = () => {
  // The open-addressed table of keys: two hash halves and the slot + 1 (0: empty); at most half full.
  let mask = 1023
  let first = new Int32Array(mask + 1)
  let second = new Int32Array(mask + 1)
  let slots = new Int32Array(mask + 1)
  // The slots: a position (offset, length, digest when `flags` has bit 1, exact when bit 4) or, without one, a
  // record.
  let offsets = new Float64Array(512)
  let lengths = new Uint32Array(512)
  let digests = new Int32Array(512)
  let flags = new Uint8Array(512)
  let records: Array<ItemRecord | undefined> | undefined
  let size = 0
  const hashes = new Int32Array(2)

  // Where key (h1, h2) is, or the empty place where it goes.
  const probe = (h1: number, h2: number): number => {
    let i = h1 & mask
    while (slots[i] !== 0 && (first[i] !== h1 || second[i] !== h2)) i = (i + 1) & mask
    return i
  }
  const rehash = () => {
    const [oldFirst, oldSecond, oldSlots] = [first, second, slots]
    mask = mask * 2 + 1
    first = new Int32Array(mask + 1)
    second = new Int32Array(mask + 1)
    slots = new Int32Array(mask + 1)
    for (let i = 0; i < oldSlots.length; i++) {
      if (oldSlots[i] === 0) continue
      const j = probe(oldFirst[i]!, oldSecond[i]!)
      first[j] = oldFirst[i]!
      second[j] = oldSecond[i]!
      slots[j] = oldSlots[i]!
    }
  }
  const newSlot = (): number => {
    if (size === offsets.length) {
      offsets = grown(offsets, (n) => new Float64Array(n))
      lengths = grown(lengths, (n) => new Uint32Array(n))
      digests = grown(digests, (n) => new Int32Array(n))
      flags = grown(flags, (n) => new Uint8Array(n))
    }
    return size++
  }
  /** The slot of this key: its own, or a new one. */
  const slotOf = (itemId: string, input: string): number => {
    hashKey(itemId, input, hashes)
    let i = probe(hashes[0]!, hashes[1]!)
    if (slots[i] !== 0) return slots[i]! - 1
    if ((size + 1) * 2 > mask + 1) {
      rehash()
      i = probe(hashes[0]!, hashes[1]!)
    }
    const slot = newSlot()
    first[i] = hashes[0]!
    second[i] = hashes[1]!
    slots[i] = slot + 1
    return slot
  }
  /** The slot of this key, or -1. */
  const find = (itemId: string, input: string): number => {
    hashKey(itemId, input, hashes)
    return slots[probe(hashes[0]!, hashes[1]!)]! - 1
  }
  /** Keeps a record in a slot: its position when there is one (its digest read now), else the record. */
  const put = (slot: number, record: ItemRecord, at: Position | undefined): void => {
    if (at === undefined) {
      records ??= []
      records[slot] = record
      flags[slot] = 0
      return
    }
    if (records !== undefined) records[slot] = undefined
    offsets[slot] = at.offset
    lengths[slot] = at.length
    const digest = at.digest
    digests[slot] = digest ?? 0
    flags[slot] = (digest === undefined ? 2 : 3) | (at.exact === true ? 4 : 0)
  }
  /** What a slot holds: a record, or a position. */
  const at = (slot: number): ItemRecord | Position => {
    const flag = flags[slot]!
    return (flag & 2) === 0 ? records![slot]! : {
      offset: offsets[slot]!,
      length: lengths[slot]!,
      digest: (flag & 1) === 1 ? digests[slot]! : undefined,
      exact: (flag & 4) === 4
    }
  }
  return { slotOf, find, put, at, size: () => size }
}
