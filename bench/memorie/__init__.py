"""Memorie's benches (the .mjs scripts, run with node after `npm ci` here) and the plot of backends.mjs's results."""
