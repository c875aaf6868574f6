"""`python -m medresilience.cli`: the same as `medres`."""

from . import app

app()
