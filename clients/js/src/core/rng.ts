/**
 * Seeded randomness, bit-exact with `belay-proto/src/rng.rs`.
 *
 * SplitMix64 on unsigned 64-bit integers (BigInt, wrapping):
 *   state += 0x9E3779B97F4A7C15
 *   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *   z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *   z ^ (z >> 31)
 * and a unit draw is `(u64 >> 11) × 2^-53`, exactly representable and in [0, 1).
 */

/** A source of uniform draws in [0, 1). */
export interface RandomSource {
  nextUnit(): number;
}

const MASK = 0xffffffffffffffffn;

/** SplitMix64: the session's one generator. */
export class SplitMix64 implements RandomSource {
  private _state: bigint;

  constructor(seed: bigint | number) {
    this._state = BigInt(seed) & MASK;
  }

  /** The next raw 64-bit output. */
  _nextU64(): bigint {
    this._state = (this._state + 0x9e3779b97f4a7c15n) & MASK;
    let z = this._state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  }

  nextUnit(): number {
    return Number(this._nextU64() >> 11n) * 2 ** -53;
  }
}

/** Replays recorded draws, then repeats the last one (0 if none). Counts calls. */
export class RecordedDraws implements RandomSource {
  taken = 0;
  constructor(private readonly _draws: readonly number[]) {}

  nextUnit(): number {
    const d = this._draws;
    const value = d.length === 0 ? 0 : d[Math.min(this.taken, d.length - 1)]!;
    this.taken++;
    return clampUnit(value);
  }
}

/** Clamp a draw into [0, 1); NaN becomes 0 (like `rng::clamp_unit`). */
export function clampUnit(value: number): number {
  if (value >= 0 && value < 1) return value;
  if (value >= 1) return 1 - 2 ** -53;
  return 0;
}
