"""`python -m medresilience.cli`: the same as `medres`."""

from ..launch import main

main()
