"""The offline encoders (all-MiniLM-L6-v2, multilingual-e5-small) and the CLI's embedders."""
