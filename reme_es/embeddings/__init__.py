"""The offline encoders (all-MiniLM-L6-v2, multilingual-e5-small) and the CLI's embedders, and their defaults
(written here once: the encoders and ReMe's `as_embedding` backends take them)."""

BATCH_SIZE = 64  # texts encoded per batch
MAX_LENGTH = 256  # tokens of a text the MiniLM encoder reads
THREADS = 2  # threads of the e5 encoder
