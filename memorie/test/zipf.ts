/** Seeded draws for the load and recall tests: a deterministic random source and a Zipf-distributed vocabulary. */

/** A seeded uniform source in [0, 1) (a 32-bit hash of a Weyl sequence): the same seed, the same draws. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x9e3779b9) >>> 0;
    let t = Math.imul(a ^ (a >>> 16), 0x21f0aaad);
    t = Math.imul(t ^ (t >>> 15), 0x735a2d97);
    return ((t ^ (t >>> 15)) >>> 0) / 4294967296;
  };
}

/** The rank (0-based) a uniform draw `u` picks from a vocabulary of `size` words, rank r with probability ~ 1/r. */
export function zipf(size: number): (u: number) => number {
  let sum = 0;
  const cdf = Array.from({ length: size }, (_, r) => (sum += 1 / (r + 1))).map((x) => x / sum);
  return (u) => {
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
