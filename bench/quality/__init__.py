"""Retrieval quality: the drop-in against ReMe's stores on the generated sets, Cranfield and LoCoMo."""
