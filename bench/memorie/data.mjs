// Data for bench/memorie/backends.mjs: memories (10 tenants x 5 namespaces) in two shapes of text, and two embedders.
// Shapes (`makeMemory(i, shape)`): `topics`, 12 words each with topic-skewed word use (64 topics over 6,000 words);
// `zipf`, bag-of-words memories of 6-18 words drawn independently from a 5,000-word vocabulary whose word of rank r
// has probability proportional to 1/r (Zipf, exponent 1): a few very common words in most memories and a long tail,
// as in natural text without topics. Embedders of text: `hash256`, a bag-of-words hash-trick embedder like Memorie's HashEmbeddingProvider, and
// `minilm384`, 384-d vectors shaped like sentence-transformer (MiniLM) output: a direction every text shares (two
// unrelated texts have cosine ~0.1, as MiniLM's do), topic clusters, and a random component per word.
const TENANTS = 10;
const NAMESPACES = 5;
const TYPES = ["fact", "preference", "event", "skill"];
const TOPICS = 64;
const VOCAB = 6000;
const WORDS = 12;

/** A seeded pseudo-random generator in [0, 1) (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Words made of syllables (letters only, so both tokenizers see one token per word).
const SYL = ["ka", "ro", "mi", "te", "su", "na", "lo", "vi", "pe", "da", "go", "ri", "ba", "ze", "fu", "ch", "st", "el"];
const vocab = Array.from({ length: VOCAB }, (_, i) => {
  let w = "";
  let x = i + 19;
  for (let k = 0; k < 3 || x > 0; k++) {
    w += SYL[x % SYL.length];
    x = Math.floor(x / SYL.length);
  }
  return w;
});
const homeTopic = (w) => w % (TOPICS * 2) < TOPICS ? w % TOPICS : -1; // half the words belong to a topic

/** The memory shapes `makeMemory` knows. */
export const SHAPES = ["topics", "zipf"];

/** Memory number `i` of a shape, always the same for the same i and shape. */
export function makeMemory(i, shape = "topics") {
  if (shape === "zipf") return zipfMemory(i);
  if (shape !== "topics") throw new Error(`unknown data shape ${shape}: use ${SHAPES.join(" or ")}`);
  const r = rng(i * 2654435761 + 1);
  const topic = Math.floor(r() * TOPICS);
  const words = [];
  for (let k = 0; k < WORDS; k++) {
    if (r() < 0.5) {
      words.push(vocab[Math.floor(r() ** 2 * VOCAB)]); // any word, skewed towards frequent ones
    } else {
      const j = Math.floor(r() ** 1.5 * (VOCAB / (TOPICS * 2))); // a word of this memory's topic
      words.push(vocab[j * TOPICS * 2 + topic]);
    }
  }
  return record(i, words, r);
}

// The Zipf shape: cumulative probabilities of the 5,000 ranks (p(r) ~ 1/r), sampled by binary search.
const ZIPF_VOCAB = 5000;
const zipfCdf = (() => {
  const cdf = new Float64Array(ZIPF_VOCAB);
  let sum = 0;
  for (let k = 0; k < ZIPF_VOCAB; k++) cdf[k] = sum += 1 / (k + 1);
  return cdf.map((x) => x / sum);
})();

function zipfWord(u) {
  let lo = 0;
  let hi = ZIPF_VOCAB - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (zipfCdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return vocab[lo];
}

function zipfMemory(i) {
  const r = rng(i * 2246822519 + 3);
  const n = 6 + Math.floor(r() * 13);
  const words = Array.from({ length: n }, () => zipfWord(r()));
  return record(i, words, r);
}

function record(i, words, r) {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 1000);
  return {
    id: `m${i}`, tenantId: `t${i % TENANTS}`, namespace: `ns${Math.floor(i / TENANTS) % NAMESPACES}`,
    subjectId: `s${i % 97}`, type: TYPES[i % TYPES.length], content: words.join(" "), state: "active",
    importance: r(), confidence: r(), metadata: { source: "bench" }, createdAt: at, updatedAt: at,
    accessCount: 0, expiresAt: null, version: 1,
  };
}

/** `n` distinct words of a memory's content, as a query text. */
export function queryWords(m, n, r) {
  const words = [...new Set(m.content.split(" "))];
  const out = [];
  while (out.length < Math.min(n, words.length)) {
    const w = words[Math.floor(r() * words.length)];
    if (!out.includes(w)) out.push(w);
  }
  return out.join(" ");
}

const tokens = (text) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);

function normalise(v) {
  const n = Math.hypot(...v);
  return n === 0 ? v : v.map((x) => x / n);
}

function hash256(text) {
  const v = new Array(256).fill(0);
  for (const token of tokens(text)) {
    let h = 0x811c9dc5;
    for (let i = 0; i < token.length; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193) >>> 0;
    v[h % 256] += (h >>> 16) % 2 === 0 ? 1 : -1;
  }
  return normalise(v);
}

function gaussian(r, dims) {
  const v = new Float64Array(dims);
  for (let i = 0; i < dims; i += 2) {
    const u = Math.max(r(), 1e-12);
    const t = 2 * Math.PI * r();
    const rad = Math.sqrt(-2 * Math.log(u));
    v[i] = rad * Math.cos(t);
    if (i + 1 < dims) v[i + 1] = rad * Math.sin(t);
  }
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function miniLmLike(dims) {
  const r = rng(384_384);
  const shared = gaussian(r, dims);
  const centroids = Array.from({ length: TOPICS }, () => gaussian(r, dims));
  const index = new Map(vocab.map((w, i) => [w, i]));
  const cache = new Map();
  const wordVec = (token) => {
    let v = cache.get(token);
    if (v) return v;
    const i = index.get(token);
    const own = gaussian(rng(i === undefined ? token.length * 7919 + token.charCodeAt(0) : i + 1), dims);
    const t = i === undefined ? -1 : homeTopic(i);
    v = t < 0 ? own : own.map((x, d) => x + 0.9 * centroids[t][d]);
    cache.set(token, v);
    return v;
  };
  return (text) => {
    const sum = new Float64Array(dims);
    for (const token of tokens(text)) {
      const w = wordVec(token);
      for (let d = 0; d < dims; d++) sum[d] += w[d];
    }
    const n = Math.hypot(...sum);
    if (n === 0) return Array.from(shared);
    return normalise(Array.from(sum, (x, d) => x / n + 0.35 * shared[d]));
  };
}

/** The embedder of one set: a function text -> number[] with `.dims`. */
export function embedder(set) {
  if (set === "hash256") return Object.assign(hash256, { dims: 256 });
  if (set === "minilm384") return Object.assign(miniLmLike(384), { dims: 384 });
  throw new Error(`unknown embedding set ${set}: use hash256 or minilm384`);
}

/** A query of `n` words drawn from the Zipf shape's vocabulary on their own (not taken from a stored memory). */
export function zipfQuery(r, n = 6) {
  return Array.from({ length: n }, () => zipfWord(r())).join(" ");
}
