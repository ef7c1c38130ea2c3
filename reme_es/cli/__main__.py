"""`python -m reme_es.cli`."""

from . import main

main()
