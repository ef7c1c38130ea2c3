"""The two synthetic workloads of bench/compare/reme_backends.py and bench/perf/concurrency.py: chunk texts, queries,
vectors.

Both: files of 10 chunks of 100 pseudo-words, every file dated (`daily/2026-MM-DD/note-N.md`, 12 months of 28 days),
384-d L2-normalised vectors from a deterministic fake embedding model registered with ReMe, so chunk and query
vectors share one space. Chunk i is the same whatever the batching and the size.

`topics` (the bench's first shape): each chunk mixes 70 Zipf-distributed common words with 30 of its file's topic
(400 topics of ~48 rarer words each); vectors are a weighted bag of word vectors, so they cluster by topic and a
query (2-4 words of one topic) lands near the chunks that hold its words. 100 files (1,000 chunks) per `upsert`.

`hash` (the shape issue 20 measured): 100 Zipf-distributed words with no topic; vectors from a feature-hashing
embedder (each word adds +-idf weight to 8 hashed dimensions of 384), so they do not cluster by topic; queries are
4 mid-frequency words (ranks 100-5,000). 500 files (5,000 chunks) per `upsert`.
"""

from __future__ import annotations

import zlib

import numpy as np

DIMS = 384
PER_FILE = 10
WORDS = 100
TOPIC_WORDS = 30
SHAPES = ("topics", "hash")
FILES_PER_CALL = {"topics": 100, "hash": 500}


class Corpus:
    """Deterministic chunk texts, query texts and the fake embedding model they share, for one workload shape."""

    def __init__(
        self, shape: str = "topics", dims: int = DIMS, vocab_size: int = 20_000, topics: int = 400, seed: int = 7
    ):
        from bench.common import vocabulary

        if shape not in SHAPES:
            raise ValueError(f"workload must be one of {', '.join(SHAPES)}, got {shape!r}")
        rng = np.random.default_rng(seed)
        self.shape, self.seed, self.dims = shape, seed, dims
        self.files_per_call = FILES_PER_CALL[shape]
        self.words = vocabulary(vocab_size, rng)
        self.index = {w: i for i, w in enumerate(self.words)}
        p = 1.0 / np.arange(1, vocab_size + 1) ** 1.1
        self.p = p / p.sum()
        # Each topic owns a slice of the rarer words (ranks 1,000+): a file's chunks mix common words with its topic's.
        self.topics = np.array_split(np.arange(1000, vocab_size), topics)
        self.weight = np.log1p(np.arange(1, vocab_size + 1)).astype(np.float32)  # rarer words weigh more (idf-like)
        if shape == "topics":
            self.table = rng.standard_normal((vocab_size, dims), dtype=np.float32)
        else:
            self.table = self._hashed_table(vocab_size, dims)

    def _hashed_table(self, vocab_size: int, dims: int, hashes: int = 8) -> np.ndarray:
        """Feature hashing: each word sets +-1 at `hashes` dimensions chosen by crc32 of the word and a salt."""
        table = np.zeros((vocab_size, dims), dtype=np.float32)
        for i, word in enumerate(self.words):
            for salt in range(hashes):
                h = zlib.crc32(f"{salt}:{word}".encode())
                table[i, h % dims] += 1.0 if (h >> 16) & 1 else -1.0
        return table

    def embed_ids(self, ids: np.ndarray) -> np.ndarray:
        """One L2-normalised vector per row of word ids."""
        acc = np.zeros((ids.shape[0], self.table.shape[1]), dtype=np.float32)
        for j in range(ids.shape[1]):
            col = ids[:, j]
            acc += self.table[col] * self.weight[col, None]
        acc /= np.maximum(np.linalg.norm(acc, axis=1, keepdims=True), 1e-12)
        return acc

    def embed_text(self, text: str) -> np.ndarray:
        """The vector of one text (unknown words are ignored)."""
        ids = [self.index[w] for w in text.lower().split() if w in self.index]
        if not ids:
            return np.zeros(self.table.shape[1], dtype=np.float32)
        return self.embed_ids(np.asarray([ids]))[0]

    def topic_of(self, file_no: int) -> np.ndarray:
        return self.topics[(file_no * 7919) % len(self.topics)]

    def chunk_batch(self, first: int, n: int) -> tuple[list[str], np.ndarray]:
        """Texts and vectors of chunks first..first+n (the same whatever the batching)."""
        rng = np.random.default_rng([self.seed, first])
        if self.shape == "hash":
            ids = rng.choice(len(self.words), size=(n, WORDS), p=self.p)
        else:
            common = rng.choice(len(self.words), size=(n, WORDS - TOPIC_WORDS), p=self.p)
            topical = np.stack([rng.choice(self.topic_of((first + i) // PER_FILE), TOPIC_WORDS) for i in range(n)])
            ids = np.concatenate([common, topical], axis=1)
            rng.permuted(ids, axis=1, out=ids)
        words = np.asarray(self.words, dtype=object)
        return [" ".join(row) for row in words[ids]], self.embed_ids(ids)

    def queries(self, n: int) -> list[str]:
        """`n` queries: 2-4 words of one topic (`topics`), or 4 mid-frequency words (`hash`)."""
        rng = np.random.default_rng([self.seed, 10**9])
        out = []
        for _ in range(n):
            if self.shape == "hash":
                out.append(" ".join(self.words[int(i)] for i in rng.choice(np.arange(100, 5000), 4, replace=False)))
                continue
            topic = self.topics[int(rng.integers(len(self.topics)))]
            out.append(" ".join(self.words[i] for i in rng.choice(topic, size=int(rng.integers(2, 5)), replace=False)))
        return out


def file_path(i: int) -> str:
    """Daily notes spread over the 336 days of 12 months of 28 days."""
    day = i % 336
    return f"daily/2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}/note-{i:07d}.md"


def chunk_id(i: int) -> str:
    return f"chunk-{i:08d}"


def file_batches(corpus: Corpus, size: int, vectors_out=None):
    """Yield each `upsert` call's files, [(FileNode, [FileChunk])], `corpus.files_per_call` files at a time; the
    vectors go to `vectors_out` (rows by chunk number) when given."""
    from reme.schema import FileChunk, FileNode

    per_call = corpus.files_per_call * PER_FILE
    for first in range(0, size, per_call):
        n = min(per_call, size - first)
        texts, vecs = corpus.chunk_batch(first, n)
        if vectors_out is not None:
            vectors_out[first : first + n] = vecs
        files = []
        for f in range(n // PER_FILE):
            fid = (first // PER_FILE) + f
            path = file_path(fid)
            chunks = [
                FileChunk(
                    id=chunk_id(first + f * PER_FILE + j),
                    path=path,
                    start_line=j * 10 + 1,
                    end_line=j * 10 + 10,
                    text=texts[f * PER_FILE + j],
                    embedding=vecs[f * PER_FILE + j],
                )
                for j in range(PER_FILE)
            ]
            node = FileNode(path=path, st_mtime=1_780_000_000.0 + fid, chunk_ids=[c.id for c in chunks])
            files.append((node, chunks))
        yield files
