"""The ReMe drop-in: file stores and a search step, exported through the `reme.plugins` entry point."""
