"""Generated and downloaded data the benches run on: the conversational memory sets, Cranfield, LoCoMo, workloads."""
