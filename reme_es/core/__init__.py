"""The bottom layer: models, errors, the options model, shared engine settings, paths."""
